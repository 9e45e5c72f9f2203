// Register-tiled WGSL: a 128×128 tile of C per workgroup of 16×16 invocations, each accumulating
// an 8×8 tile of outputs in sixteen vec4 registers. op(A) and op(B) are staged BK = 8 deep in
// workgroup memory as vec4s ((BM + 4 + BN)·BK·4 bytes: 8.3 KiB, within WebGPU's 16 KiB minimum),
// A stored transposed (As[l][i]). Per k-step an invocation reads two vec4s of A and two of B
// (16 bytes of workgroup memory per 4 FMAs, a quarter of a 4×4 tile's traffic) and does 64 FMAs.
// An invocation's rows are ty·4 + {0..3} and 64 + ty·4 + {0..3}, its columns tx·4 + {0..3} and
// 64 + tx·4 + {0..3}: the vec4 reads of a group of 8 invocations cover 128 contiguous bytes (no
// bank conflicts), and A's transposed stores land on distinct banks thanks to the 4-element pad.
// The next k-block's A and B are loaded into registers before the current one is multiplied, so
// the global loads overlap the FMAs (one workgroup buffer, two barriers per k-block).
// The accumulators are named vec4s, not an array: an array indexed in a loop can land in local
// memory where the driver does not unroll the loop (NVIDIA's Vulkan driver ran the array form of
// the older 4×4 kernel 7.5× slower). No subgroup operations: any subgroup size runs it. Every
// inner loop has a constant trip count, so that only the K loop counts against llvmpipe's 65535
// iterations per loop (docs/wgpu.md).
const AS4: u32 = (BM + 4u) / 4u;  // As's row stride in vec4s (4 elements of padding)
const BS4: u32 = BN / 4u;
var<workgroup> As: array<vec4<T>, BK * AS4>;
var<workgroup> Bs: array<vec4<T>, BK * BS4>;

const TX: u32 = BN / TN;
const TY: u32 = BM / TM;
const THREADS: u32 = TX * TY;
// Each invocation stages one vec4 of A (four rows at one k) and one of B (four columns at one k)
// per k-block: BM·BK/4 = BK·BN/4 = THREADS.
const HALF_A4: u32 = BM / 8u;  // the second row half's first vec4 in As (element BM/2)
const HALF_B4: u32 = BN / 8u;  // the second column half's first vec4 in Bs

fn a_at(i: u32, l: u32) -> T {
    if (i < p.m && l < p.k) {
        return ld_a(i * p.a_rs + l * p.a_cs);
    }
    return T(0);
}

fn b_at(l: u32, j: u32) -> T {
    if (l < p.k && j < p.n) {
        return ld_b(l * p.b_rs + j * p.b_cs);
    }
    return T(0);
}

// Invocation e's vec4 of A's k-block at k0: rows row0 + 4·(e / BK) + 0..3 at k0 + e % BK
// (consecutive invocations along K: contiguous for op(A) = N).
fn load_a4(row0: u32, k0: u32, e: u32) -> vec4<T> {
    let i = row0 + (e / BK) * 4u;
    let l = k0 + e % BK;
    return vec4<T>(a_at(i, l), a_at(i + 1u, l), a_at(i + 2u, l), a_at(i + 3u, l));
}

// Invocation e's vec4 of B's k-block at k0: columns col0 + 4·(e % BS4) + 0..3 at k0 + e / BS4
// (consecutive invocations along N: contiguous for op(B) = N).
fn load_b4(col0: u32, k0: u32, e: u32) -> vec4<T> {
    let l = k0 + e / BS4;
    let j = col0 + (e % BS4) * 4u;
    return vec4<T>(b_at(l, j), b_at(l, j + 1u), b_at(l, j + 2u), b_at(l, j + 3u));
}

@compute @workgroup_size(TX, TY)
fn main(@builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let tid = ty * TX + tx;
    let row0 = wid.y * BM;
    let col0 = wid.x * BN;
    // acc<r><h>: output row r of the invocation (0..3: ty·4 + r; 4..7: 64 + ty·4 + r − 4),
    // columns of half h (0: tx·4 + 0..3; 1: 64 + tx·4 + 0..3).
    var acc00 = vec4<T>(T(0)); var acc01 = vec4<T>(T(0));
    var acc10 = vec4<T>(T(0)); var acc11 = vec4<T>(T(0));
    var acc20 = vec4<T>(T(0)); var acc21 = vec4<T>(T(0));
    var acc30 = vec4<T>(T(0)); var acc31 = vec4<T>(T(0));
    var acc40 = vec4<T>(T(0)); var acc41 = vec4<T>(T(0));
    var acc50 = vec4<T>(T(0)); var acc51 = vec4<T>(T(0));
    var acc60 = vec4<T>(T(0)); var acc61 = vec4<T>(T(0));
    var acc70 = vec4<T>(T(0)); var acc71 = vec4<T>(T(0));
    // The next k-block's vec4s, in registers while the current one is multiplied.
    var na = load_a4(row0, 0u, tid);
    var nb = load_b4(col0, 0u, tid);
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        As[(tid % BK) * AS4 + tid / BK] = na;
        Bs[tid] = nb;
        workgroupBarrier();
        let k1 = k0 + BK;
        if (k1 < p.k) {
            na = load_a4(row0, k1, tid);
            nb = load_b4(col0, k1, tid);
        }
        for (var l = 0u; l < BK; l++) {
            let a0 = As[l * AS4 + ty];
            let a1 = As[l * AS4 + HALF_A4 + ty];
            let b0 = Bs[l * BS4 + tx];
            let b1 = Bs[l * BS4 + HALF_B4 + tx];
            acc00 += a0.x * b0; acc01 += a0.x * b1;
            acc10 += a0.y * b0; acc11 += a0.y * b1;
            acc20 += a0.z * b0; acc21 += a0.z * b1;
            acc30 += a0.w * b0; acc31 += a0.w * b1;
            acc40 += a1.x * b0; acc41 += a1.x * b1;
            acc50 += a1.y * b0; acc51 += a1.y * b1;
            acc60 += a1.z * b0; acc61 += a1.z * b1;
            acc70 += a1.w * b0; acc71 += a1.w * b1;
        }
        workgroupBarrier();
    }
    let i0 = row0 + ty * 4u;
    let i1 = row0 + BM / 2u + ty * 4u;
    let j0 = col0 + tx * 4u;
    let j1 = col0 + BN / 2u + tx * 4u;
    store4(i0, j0, acc00); store4(i0, j1, acc01);
    store4(i0 + 1u, j0, acc10); store4(i0 + 1u, j1, acc11);
    store4(i0 + 2u, j0, acc20); store4(i0 + 2u, j1, acc21);
    store4(i0 + 3u, j0, acc30); store4(i0 + 3u, j1, acc31);
    store4(i1, j0, acc40); store4(i1, j1, acc41);
    store4(i1 + 1u, j0, acc50); store4(i1 + 1u, j1, acc51);
    store4(i1 + 2u, j0, acc60); store4(i1 + 2u, j1, acc61);
    store4(i1 + 3u, j0, acc70); store4(i1 + 3u, j1, acc71);
}

// Four outputs of row i, columns j..j+3, those within C.
fn store4(i: u32, j: u32, v: vec4<T>) {
    if (i >= p.m) {
        return;
    }
    let o = i * p.n;
    if (j < p.n) {
        c[o + j] = v.x;
    }
    if (j + 1u < p.n) {
        c[o + j + 1u] = v.y;
    }
    if (j + 2u < p.n) {
        c[o + j + 2u] = v.z;
    }
    if (j + 3u < p.n) {
        c[o + j + 3u] = v.w;
    }
}
