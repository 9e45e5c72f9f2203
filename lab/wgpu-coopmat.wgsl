// A first wgpu-coopmat: f16 A and B, f32 C through WGSL cooperative matrices (wgpu/naga 30,
// `enable wgpu_cooperative_matrix`). 128×128 tiles of C per 256 invocations (8 subgroups of 32,
// each 32×64 of C in eight 16×16 f32 accumulators), op(A) and op(B) staged 32 deep in workgroup
// memory (zero-padded edges, read through the strides as the other kernels do), fragments loaded
// from workgroup memory with coopLoadT (row-major), C written through a 16×16 scratch per subgroup
// with bounds checks. Not in the product: naga 30 parses, validates and writes SPIR-V for it
// (2337 words); never run (no backend f16 path yet). Assumes subgroups of 32 (NVIDIA).
enable f16;
enable wgpu_cooperative_matrix;
struct Params {
    m: u32, n: u32, k: u32, a_rs: u32,
    a_cs: u32, b_rs: u32, b_cs: u32, pad: u32,
}
@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

const BM: u32 = 128u;
const BN: u32 = 128u;
const BK: u32 = 32u;
const WARPS: u32 = 8u;
var<workgroup> As: array<f16, BM * BK>;
var<workgroup> Bs: array<f16, BK * BN>;
var<workgroup> Cs: array<f32, WARPS * 256u>;

fn a_at(i: u32, l: u32) -> f16 {
    if (i < p.m && l < p.k) { return a[i * p.a_rs + l * p.a_cs]; }
    return f16(0.0);
}
fn b_at(l: u32, j: u32) -> f16 {
    if (l < p.k && j < p.n) { return b[l * p.b_rs + j * p.b_cs]; }
    return f16(0.0);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
    let row0 = wg.y * BM;
    let col0 = wg.x * BN;
    let warp = li / 32u;
    let lane = li % 32u;
    let wr = (warp / 2u) * 32u;   // 4 warp rows of 32
    let wc = (warp % 2u) * 64u;   // 2 warp columns of 64
    var acc: array<coop_mat16x16<f32, C>, 8>;
    for (var l0 = 0u; l0 < p.k; l0 += BK) {
        for (var e = li; e < BM * BK; e += 256u) {
            As[e] = a_at(row0 + e / BK, l0 + e % BK);
            Bs[e] = b_at(l0 + e / BN, col0 + e % BN);
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk += 16u) {
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&As[wr * BK + kk], BK);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&As[(wr + 16u) * BK + kk], BK);
            for (var j = 0u; j < 4u; j++) {
                let bj = coopLoadT<coop_mat16x16<f16, B>>(&Bs[kk * BN + wc + j * 16u], BN);
                acc[j] = coopMultiplyAdd(a0, bj, acc[j]);
                acc[4u + j] = coopMultiplyAdd(a1, bj, acc[4u + j]);
            }
        }
        workgroupBarrier();
    }
    for (var f = 0u; f < 8u; f++) {
        coopStoreT(acc[f], &Cs[warp * 256u], 16u);
        workgroupBarrier();
        let fr = row0 + wr + (f / 4u) * 16u;
        let fc = col0 + wc + (f % 4u) * 16u;
        for (var e = lane; e < 256u; e += 32u) {
            let i = fr + e / 16u;
            let j = fc + e % 16u;
            if (i < p.m && j < p.n) { c[i * p.n + j] = Cs[warp * 256u + e]; }
        }
        workgroupBarrier();
    }
}
