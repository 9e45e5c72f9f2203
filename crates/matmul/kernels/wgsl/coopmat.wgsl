// Cooperative-matrix WGSL (wgpu's `wgpu_cooperative_matrix`): f16 A and B, f32 C. A BM×BN tile
// of C per workgroup of 8 subgroups of 32 invocations (subgroups of 32 are required: the host
// checks), each subgroup a 32×64 block of C in eight 16×16 f32 accumulator fragments (named
// variables: an array of fragments indexed in a loop may live in local memory). op(A) and
// op(B) are staged BK deep in workgroup memory as row-major f16 tiles, read through the strides
// as the other kernels read them (so any transpose, any shape: edges are zero-padded), and the
// fragments are loaded from there (coopLoadT: row-major). C goes out through a 16×16 f32 scratch
// per subgroup, bounds-checked element by element. The header (registry/wgsl.rs) enables f16 and
// cooperative matrices and declares T = f16, TC = f32, BM, BN, BK and the bindings.
const WARPS: u32 = (BM / 32u) * (BN / 64u);
const THREADS: u32 = WARPS * 32u;
var<workgroup> As: array<T, BM * BK>;
var<workgroup> Bs: array<T, BK * BN>;
var<workgroup> Cs: array<f32, WARPS * 256u>;

fn a_at(i: u32, l: u32) -> T {
    if (i < p.m && l < p.k) {
        return a[i * p.a_rs + l * p.a_cs];
    }
    return T(0.0);
}

fn b_at(l: u32, j: u32) -> T {
    if (l < p.k && j < p.n) {
        return b[l * p.b_rs + j * p.b_cs];
    }
    return T(0.0);
}

// Writes a 16×16 accumulator fragment to C at (r, q) through subgroup `warp`'s scratch, the
// elements outside C dropped.
fn store_fragment(f: coop_mat16x16<f32, C>, warp: u32, lane: u32, r: u32, q: u32) {
    coopStoreT(f, &Cs[warp * 256u], 16u);
    workgroupBarrier();
    for (var e = lane; e < 256u; e += 32u) {
        let i = r + e / 16u;
        let j = q + e % 16u;
        if (i < p.m && j < p.n) {
            c[i * p.n + j] = Cs[warp * 256u + e];
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let row0 = wg.y * BM;
    let col0 = wg.x * BN;
    let warp = li / 32u;
    let lane = li % 32u;
    let wr = (warp / (BN / 64u)) * 32u;
    let wc = (warp % (BN / 64u)) * 64u;
    var c00: coop_mat16x16<f32, C>;
    var c01: coop_mat16x16<f32, C>;
    var c02: coop_mat16x16<f32, C>;
    var c03: coop_mat16x16<f32, C>;
    var c10: coop_mat16x16<f32, C>;
    var c11: coop_mat16x16<f32, C>;
    var c12: coop_mat16x16<f32, C>;
    var c13: coop_mat16x16<f32, C>;
    for (var l0 = 0u; l0 < p.k; l0 += BK) {
        for (var e = li; e < BM * BK; e += THREADS) {
            As[e] = a_at(row0 + e / BK, l0 + e % BK);
        }
        for (var e = li; e < BK * BN; e += THREADS) {
            Bs[e] = b_at(l0 + e / BN, col0 + e % BN);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk += 16u) {
            let a0 = coopLoadT<coop_mat16x16<T, A>>(&As[wr * BK + kk], BK);
            let a1 = coopLoadT<coop_mat16x16<T, A>>(&As[(wr + 16u) * BK + kk], BK);
            let b0 = coopLoadT<coop_mat16x16<T, B>>(&Bs[kk * BN + wc + 0u], BN);
            c00 = coopMultiplyAdd(a0, b0, c00);
            c10 = coopMultiplyAdd(a1, b0, c10);
            let b1 = coopLoadT<coop_mat16x16<T, B>>(&Bs[kk * BN + wc + 16u], BN);
            c01 = coopMultiplyAdd(a0, b1, c01);
            c11 = coopMultiplyAdd(a1, b1, c11);
            let b2 = coopLoadT<coop_mat16x16<T, B>>(&Bs[kk * BN + wc + 32u], BN);
            c02 = coopMultiplyAdd(a0, b2, c02);
            c12 = coopMultiplyAdd(a1, b2, c12);
            let b3 = coopLoadT<coop_mat16x16<T, B>>(&Bs[kk * BN + wc + 48u], BN);
            c03 = coopMultiplyAdd(a0, b3, c03);
            c13 = coopMultiplyAdd(a1, b3, c13);
        }
        workgroupBarrier();
    }
    store_fragment(c00, warp, lane, row0 + wr + 0u, col0 + wc + 0u);
    store_fragment(c01, warp, lane, row0 + wr + 0u, col0 + wc + 16u);
    store_fragment(c02, warp, lane, row0 + wr + 0u, col0 + wc + 32u);
    store_fragment(c03, warp, lane, row0 + wr + 0u, col0 + wc + 48u);
    store_fragment(c10, warp, lane, row0 + wr + 16u, col0 + wc + 0u);
    store_fragment(c11, warp, lane, row0 + wr + 16u, col0 + wc + 16u);
    store_fragment(c12, warp, lane, row0 + wr + 16u, col0 + wc + 32u);
    store_fragment(c13, warp, lane, row0 + wr + 16u, col0 + wc + 48u);
}
