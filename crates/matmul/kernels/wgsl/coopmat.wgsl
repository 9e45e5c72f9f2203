// Cooperative-matrix WGSL (wgpu's `wgpu_cooperative_matrix`): f16 A and B, f32 C. A BM×BN tile
// of C per workgroup of 8 subgroups of 32 invocations (subgroups of 32 are required: the host
// checks), each subgroup a 32×64 block of C in eight 16×16 f32 accumulator fragments (named
// variables: an array of fragments indexed in a loop may live in local memory).
//
// A and B are bound as arrays of vec4<u32> (eight halves each; the host pads the buffers to whole
// 16 bytes). Where an operand's tile is contiguous in runs of eight (op N with K, or op T with M,
// a multiple of 8 for A; op N with N, or op T with K, for B; the host compiles one pipeline per
// staging, A_STAGING and B_STAGING), each invocation moves it as 16-byte
// loads into registers one k-block ahead, and stores them to workgroup memory as the block
// before is multiplied: two stages, one barrier per k-block. The staged tile keeps the operand's
// own orientation (A row-major As[i][l] for op N, column-major As[l][i] for op T; likewise B) and
// the fragments are loaded as row- (coopLoadT) or column-major (coopLoad) to match, so no
// operand is transposed in the copy. Otherwise (an odd size) the tile is staged element by
// element through the strides, bounds-checked, row-major. Rows of the staged tiles are padded by
// 8 halves (16 bytes) against bank conflicts.
//
// Workgroups walk C in groups of GM tile-rows (the same column panel of B is reused from L2 by
// the group). A whole tile of C is stored straight from the fragments; a tile on C's edge goes
// through a 16×16 f32 scratch per subgroup, element by element with bounds checks. The
// header (registry/wgsl.rs) enables f16 and cooperative matrices and declares T = f16, BM, BN,
// BK and the bindings.
const WARPS: u32 = (BM / 32u) * (BN / 64u);
const THREADS: u32 = WARPS * 32u;
const GM: u32 = 8u;
const PAD: u32 = 8u;
// Row strides (halves) of the staged tiles in each orientation.
const A_ROW: u32 = BK + PAD;  // As[i][l]
const A_COL: u32 = BM + PAD;  // As[l][i]
const B_ROW: u32 = BN + PAD;  // Bs[l][j]
const B_COL: u32 = BK + PAD;  // Bs[j][l]
const A_STAGE: u32 = max(BM * A_ROW, BK * A_COL);
const B_STAGE: u32 = max(BK * B_ROW, BN * B_COL);
// 16-byte runs per operand tile, per invocation.
const RUNS: u32 = BM * BK / 8u / THREADS;
alias FragA = coop_mat16x16<T, A>;
alias FragB = coop_mat16x16<T, B>;
var<workgroup> As: array<vec4<f16>, 2u * A_STAGE / 4u>;
var<workgroup> Bs: array<vec4<f16>, 2u * B_STAGE / 4u>;
var<workgroup> Cs: array<f32, WARPS * 256u>;

// Element e (in halves) of A or B.
fn half_a(e: u32) -> T {
    let v = a[e >> 3u];
    return T(unpack2x16float(v[(e >> 1u) & 3u])[e & 1u]);
}

fn half_b(e: u32) -> T {
    let v = b[e >> 3u];
    return T(unpack2x16float(v[(e >> 1u) & 3u])[e & 1u]);
}

fn to_halves(v: vec4<u32>) -> array<vec4<f16>, 2> {
    return array<vec4<f16>, 2>(
        vec4<f16>(vec2<f16>(unpack2x16float(v.x)), vec2<f16>(unpack2x16float(v.y))),
        vec4<f16>(vec2<f16>(unpack2x16float(v.z)), vec2<f16>(unpack2x16float(v.w))),
    );
}

// The r-th 16-byte run of op(A)'s tile at (row0, l0) in the contiguous orientation (`col`: op T,
// runs along i), zeros past the edges; its place in the staged tile (halves, from the stage).
fn run_a(row0: u32, l0: u32, li: u32, r: u32, col: bool) -> vec4<u32> {
    let e = li + r * THREADS;
    var v = vec4<u32>(0u);
    if (col) {
        let l = e / (BM / 8u);
        let i = (e % (BM / 8u)) * 8u;
        if (row0 + i < p.m && l0 + l < p.k) {
            v = a[((row0 + i) * p.a_rs + (l0 + l) * p.a_cs) >> 3u];
        }
    } else {
        let i = e / (BK / 8u);
        let l = (e % (BK / 8u)) * 8u;
        if (row0 + i < p.m && l0 + l < p.k) {
            v = a[((row0 + i) * p.a_rs + (l0 + l) * p.a_cs) >> 3u];
        }
    }
    return v;
}

fn place_a(li: u32, r: u32, col: bool) -> u32 {
    let e = li + r * THREADS;
    return select((e / (BK / 8u)) * A_ROW + (e % (BK / 8u)) * 8u,
                  (e / (BM / 8u)) * A_COL + (e % (BM / 8u)) * 8u, col);
}

fn run_b(col0: u32, l0: u32, li: u32, r: u32, col: bool) -> vec4<u32> {
    let e = li + r * THREADS;
    var v = vec4<u32>(0u);
    if (col) {
        let j = e / (BK / 8u);
        let l = (e % (BK / 8u)) * 8u;
        if (l0 + l < p.k && col0 + j < p.n) {
            v = b[((l0 + l) * p.b_rs + (col0 + j) * p.b_cs) >> 3u];
        }
    } else {
        let l = e / (BN / 8u);
        let j = (e % (BN / 8u)) * 8u;
        if (l0 + l < p.k && col0 + j < p.n) {
            v = b[((l0 + l) * p.b_rs + (col0 + j) * p.b_cs) >> 3u];
        }
    }
    return v;
}

fn place_b(li: u32, r: u32, col: bool) -> u32 {
    let e = li + r * THREADS;
    return select((e / (BN / 8u)) * B_ROW + (e % (BN / 8u)) * 8u,
                  (e / (BK / 8u)) * B_COL + (e % (BK / 8u)) * 8u, col);
}

// Stages op(A)'s and op(B)'s tiles at k-block l0 element by element, row-major (the odd sizes).
fn stage_scalar_a(s: u32, row0: u32, l0: u32, li: u32) {
    for (var e = li; e < BM * BK; e += THREADS) {
        let i = e / BK;
        let l = e % BK;
        var v = T(0.0);
        if (row0 + i < p.m && l0 + l < p.k) {
            v = half_a((row0 + i) * p.a_rs + (l0 + l) * p.a_cs);
        }
        let h = s + i * A_ROW + l;
        As[h >> 2u][h & 3u] = v;
    }
}

fn stage_scalar_b(s: u32, col0: u32, l0: u32, li: u32) {
    for (var e = li; e < BK * BN; e += THREADS) {
        let l = e / BN;
        let j = e % BN;
        var v = T(0.0);
        if (l0 + l < p.k && col0 + j < p.n) {
            v = half_b((l0 + l) * p.b_rs + (col0 + j) * p.b_cs);
        }
        let h = s + l * B_ROW + j;
        Bs[h >> 2u][h & 3u] = v;
    }
}

// Copies a subgroup's 16×16 scratch at s to C at (r, q), the elements outside C dropped.
fn copy_out(s: u32, lane: u32, r: u32, q: u32) {
    for (var e = lane; e < 256u; e += 32u) {
        let i = r + e / 16u;
        let j = q + e % 16u;
        if (i < p.m && j < p.n) {
            c[i * p.n + j] = Cs[s + e];
        }
    }
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    // Grouped raster: GM tile-rows at a time, column by column.
    let nx = (p.n + BN - 1u) / BN;
    let ny = (p.m + BM - 1u) / BM;
    let id = wg.y * nx + wg.x;
    let group = GM * nx;
    let first = (id / group) * GM;
    let rows = min(ny - first, GM);
    let tm = first + (id % group) % rows;
    let tn = (id % group) / rows;
    let row0 = tm * BM;
    let col0 = tn * BN;
    let warp = li / 32u;
    let lane = li % 32u;
    let wr = (warp / (BN / 64u)) * 32u;
    let wc = (warp % (BN / 64u)) * 64u;
    // How each operand is staged (A_STAGING, B_STAGING from the header, registry/wgsl.rs
    // `Staging`: 0 runs along its rows, 1 along its columns, 2 element by element).
    let a_col = A_STAGING == 1u;
    let a_vec = A_STAGING != 2u;
    let b_col = B_STAGING == 1u;
    let b_vec = B_STAGING != 2u;
    var c00: coop_mat16x16<f32, C>;
    var c01: coop_mat16x16<f32, C>;
    var c02: coop_mat16x16<f32, C>;
    var c03: coop_mat16x16<f32, C>;
    var c10: coop_mat16x16<f32, C>;
    var c11: coop_mat16x16<f32, C>;
    var c12: coop_mat16x16<f32, C>;
    var c13: coop_mat16x16<f32, C>;
    var ga: array<vec4<u32>, RUNS>;
    var gb: array<vec4<u32>, RUNS>;
    // Stage 0.
    if (a_vec) {
        for (var r = 0u; r < RUNS; r++) {
            let h = to_halves(run_a(row0, 0u, li, r, a_col));
            let at = place_a(li, r, a_col) >> 2u;
            As[at] = h[0];
            As[at + 1u] = h[1];
        }
    } else {
        stage_scalar_a(0u, row0, 0u, li);
    }
    if (b_vec) {
        for (var r = 0u; r < RUNS; r++) {
            let h = to_halves(run_b(col0, 0u, li, r, b_col));
            let at = place_b(li, r, b_col) >> 2u;
            Bs[at] = h[0];
            Bs[at + 1u] = h[1];
        }
    } else {
        stage_scalar_b(0u, col0, 0u, li);
    }
    workgroupBarrier();
    let blocks = (p.k + BK - 1u) / BK;
    for (var kb = 0u; kb < blocks; kb++) {
        let cur = kb & 1u;
        let more = kb + 1u < blocks;
        let l1 = (kb + 1u) * BK;
        // The next k-block's runs, into registers.
        if (more && a_vec) {
            for (var r = 0u; r < RUNS; r++) {
                ga[r] = run_a(row0, l1, li, r, a_col);
            }
        }
        if (more && b_vec) {
            for (var r = 0u; r < RUNS; r++) {
                gb[r] = run_b(col0, l1, li, r, b_col);
            }
        }
        let sa = cur * A_STAGE;
        let sb = cur * B_STAGE;
        for (var kk = 0u; kk < BK; kk += 16u) {
            // Fragments in the staged orientation (coop operations need uniform control flow:
            // a_col and b_col are the same for the whole dispatch).
            var a0: FragA;
            var a1: FragA;
            if (a_col) {
                a0 = coopLoad<FragA>(&As[(sa + kk * A_COL + wr) >> 2u], A_COL / 4u);
                a1 = coopLoad<FragA>(&As[(sa + kk * A_COL + wr + 16u) >> 2u], A_COL / 4u);
            } else {
                a0 = coopLoadT<FragA>(&As[(sa + (wr) * A_ROW + kk) >> 2u], A_ROW / 4u);
                a1 = coopLoadT<FragA>(&As[(sa + (wr + 16u) * A_ROW + kk) >> 2u], A_ROW / 4u);
            }
            var b0: FragB;
            var b1: FragB;
            var b2: FragB;
            var b3: FragB;
            if (b_col) {
                b0 = coopLoad<FragB>(&Bs[(sb + (wc) * B_COL + kk) >> 2u], B_COL / 4u);
                b1 = coopLoad<FragB>(&Bs[(sb + (wc + 16u) * B_COL + kk) >> 2u], B_COL / 4u);
                b2 = coopLoad<FragB>(&Bs[(sb + (wc + 32u) * B_COL + kk) >> 2u], B_COL / 4u);
                b3 = coopLoad<FragB>(&Bs[(sb + (wc + 48u) * B_COL + kk) >> 2u], B_COL / 4u);
            } else {
                b0 = coopLoadT<FragB>(&Bs[(sb + kk * B_ROW + wc) >> 2u], B_ROW / 4u);
                b1 = coopLoadT<FragB>(&Bs[(sb + kk * B_ROW + wc + 16u) >> 2u], B_ROW / 4u);
                b2 = coopLoadT<FragB>(&Bs[(sb + kk * B_ROW + wc + 32u) >> 2u], B_ROW / 4u);
                b3 = coopLoadT<FragB>(&Bs[(sb + kk * B_ROW + wc + 48u) >> 2u], B_ROW / 4u);
            }
            c00 = coopMultiplyAdd(a0, b0, c00);
            c10 = coopMultiplyAdd(a1, b0, c10);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c11 = coopMultiplyAdd(a1, b1, c11);
            c02 = coopMultiplyAdd(a0, b2, c02);
            c12 = coopMultiplyAdd(a1, b2, c12);
            c03 = coopMultiplyAdd(a0, b3, c03);
            c13 = coopMultiplyAdd(a1, b3, c13);
        }
        // The next k-block into the other stage (free since the last barrier).
        if (more) {
            let na = (1u - cur) * A_STAGE;
            let nb = (1u - cur) * B_STAGE;
            if (a_vec) {
                for (var r = 0u; r < RUNS; r++) {
                    let h = to_halves(ga[r]);
                    let at = (na + place_a(li, r, a_col)) >> 2u;
                    As[at] = h[0];
                    As[at + 1u] = h[1];
                }
            } else {
                stage_scalar_a(na, row0, l1, li);
            }
            if (b_vec) {
                for (var r = 0u; r < RUNS; r++) {
                    let h = to_halves(gb[r]);
                    let at = (nb + place_b(li, r, b_col)) >> 2u;
                    Bs[at] = h[0];
                    Bs[at + 1u] = h[1];
                }
            } else {
                stage_scalar_b(nb, col0, l1, li);
            }
        }
        workgroupBarrier();
    }
    // C: whole tiles straight from the fragments; edge tiles (uniform) through each subgroup's
    // 16×16 scratch, element by element with bounds checks.
    let edge = (row0 + BM > p.m) | (col0 + BN > p.n);
    let r0 = row0 + wr;
    let q0 = col0 + wc;
    let cn = p.n;
    if (edge) {
        let s = warp * 256u;
        coopStoreT(c00, &Cs[s], 16u);
        workgroupBarrier();
        copy_out(s, lane, r0 + 0u, q0);
        workgroupBarrier();
        coopStoreT(c01, &Cs[s], 16u);
        workgroupBarrier();
        copy_out(s, lane, r0 + 0u, q0 + 16u);
        workgroupBarrier();
        coopStoreT(c02, &Cs[s], 16u);
        workgroupBarrier();
        copy_out(s, lane, r0 + 0u, q0 + 32u);
        workgroupBarrier();
        coopStoreT(c03, &Cs[s], 16u);
        workgroupBarrier();
        copy_out(s, lane, r0 + 0u, q0 + 48u);
        workgroupBarrier();
        coopStoreT(c10, &Cs[s], 16u);
        workgroupBarrier();
        copy_out(s, lane, r0 + 16u, q0);
        workgroupBarrier();
        coopStoreT(c11, &Cs[s], 16u);
        workgroupBarrier();
        copy_out(s, lane, r0 + 16u, q0 + 16u);
        workgroupBarrier();
        coopStoreT(c12, &Cs[s], 16u);
        workgroupBarrier();
        copy_out(s, lane, r0 + 16u, q0 + 32u);
        workgroupBarrier();
        coopStoreT(c13, &Cs[s], 16u);
        workgroupBarrier();
        copy_out(s, lane, r0 + 16u, q0 + 48u);
        workgroupBarrier();
    } else {
        let at00 = (r0) * cn + q0 + 0u;
        coopStoreT(c00, &c[at00], cn);
        let at01 = (r0) * cn + q0 + 16u;
        coopStoreT(c01, &c[at01], cn);
        let at02 = (r0) * cn + q0 + 32u;
        coopStoreT(c02, &c[at02], cn);
        let at03 = (r0) * cn + q0 + 48u;
        coopStoreT(c03, &c[at03], cn);
        let at10 = (r0 + 16u) * cn + q0 + 0u;
        coopStoreT(c10, &c[at10], cn);
        let at11 = (r0 + 16u) * cn + q0 + 16u;
        coopStoreT(c11, &c[at11], cn);
        let at12 = (r0 + 16u) * cn + q0 + 32u;
        coopStoreT(c12, &c[at12], cn);
        let at13 = (r0 + 16u) * cn + q0 + 48u;
        coopStoreT(c13, &c[at13], cn);
    }
}
