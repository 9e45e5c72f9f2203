// Register-tiled WGSL: a BM×BN tile of C per workgroup of (BN/TN)×(BM/TM) invocations, each
// accumulating a 4×4 tile of outputs (TM = TN = 4) in four vec4 registers; op(A) and op(B)
// staged BK deep in workgroup memory ((BM+1+BN)·BK·4 bytes: 8.1 KiB at 64×64×16, within WebGPU's
// 16 KiB minimum), A stored transposed (As[l][i], rows padded by one element so that the
// invocations storing consecutive l hit distinct banks). An invocation's rows are consecutive,
// its columns strided by the workgroup's width (consecutive invocations store consecutive
// columns). The accumulators are named vec4s, not an array: an array indexed in a loop can land
// in local memory where the driver does not unroll the loop (NVIDIA's Vulkan driver ran the
// array form 7.5× slower than wgpu-tiled). No subgroup operations: any subgroup size runs it.
// Every inner loop has a constant trip count (BM·BK and BK·BN are multiples of the workgroup's
// invocations), so that only the K loop counts against llvmpipe's 65535 iterations per loop
// (docs/wgpu.md).
const AS: u32 = BM + 1u;  // As's row stride
var<workgroup> As: array<T, BK * AS>;
var<workgroup> Bs: array<T, BK * BN>;

const TX: u32 = BN / TN;
const TY: u32 = BM / TM;
const THREADS: u32 = TX * TY;

@compute @workgroup_size(TX, TY)
fn main(@builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let tid = ty * TX + tx;
    let row0 = wid.y * BM;
    let col0 = wid.x * BN;
    var acc0 = vec4<T>(T(0));
    var acc1 = vec4<T>(T(0));
    var acc2 = vec4<T>(T(0));
    var acc3 = vec4<T>(T(0));
    for (var k0 = 0u; k0 < p.k; k0 += BK) {
        // A's tile: BM×BK elements, consecutive invocations along K (contiguous for op(A) = N).
        for (var r = 0u; r < BM * BK / THREADS; r++) {
            let e = tid + r * THREADS;
            let ai = e / BK;
            let al = e % BK;
            let gi = row0 + ai;
            let gl = k0 + al;
            var v = T(0);
            if (gi < p.m && gl < p.k) {
                v = a[gi * p.a_rs + gl * p.a_cs];
            }
            As[al * AS + ai] = v;
        }
        // B's tile: BK×BN elements, consecutive invocations along N (contiguous for op(B) = N).
        for (var r = 0u; r < BK * BN / THREADS; r++) {
            let e = tid + r * THREADS;
            let bl = e / BN;
            let bj = e % BN;
            let gl = k0 + bl;
            let gj = col0 + bj;
            var v = T(0);
            if (gl < p.k && gj < p.n) {
                v = b[gl * p.b_rs + gj * p.b_cs];
            }
            Bs[bl * BN + bj] = v;
        }
        workgroupBarrier();
        for (var l = 0u; l < BK; l++) {
            let ia = l * AS + ty * 4u;
            let a4 = vec4<T>(As[ia], As[ia + 1u], As[ia + 2u], As[ia + 3u]);
            let ib = l * BN + tx;
            let b4 = vec4<T>(Bs[ib], Bs[ib + TX], Bs[ib + 2u * TX], Bs[ib + 3u * TX]);
            acc0 += a4.x * b4;
            acc1 += a4.y * b4;
            acc2 += a4.z * b4;
            acc3 += a4.w * b4;
        }
        workgroupBarrier();
    }
    let i0 = row0 + ty * 4u;
    store_row(i0, col0 + tx, acc0);
    store_row(i0 + 1u, col0 + tx, acc1);
    store_row(i0 + 2u, col0 + tx, acc2);
    store_row(i0 + 3u, col0 + tx, acc3);
}

// Row i of the invocation's outputs: columns j, j + TX, j + 2·TX, j + 3·TX, within C.
fn store_row(i: u32, j: u32, v: vec4<T>) {
    if (i >= p.m) {
        return;
    }
    if (j < p.n) {
        c[i * p.n + j] = v.x;
    }
    if (j + TX < p.n) {
        c[i * p.n + j + TX] = v.y;
    }
    if (j + 2u * TX < p.n) {
        c[i * p.n + j + 2u * TX] = v.z;
    }
    if (j + 3u * TX < p.n) {
        c[i * p.n + j + 3u * TX] = v.w;
    }
}
