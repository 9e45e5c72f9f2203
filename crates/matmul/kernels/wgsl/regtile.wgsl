// Register-tiled WGSL: a BM×BN tile of C per workgroup of (BN/TN)×(BM/TM) invocations, each
// accumulating TM×TN outputs in registers; op(A) and op(B) staged BK deep in workgroup memory
// ((BM+BN)·BK·4 bytes: 8 KiB at 64×64×16, within WebGPU's 16 KiB minimum), A stored transposed
// (As[l][i]) so that the inner loop reads TM consecutive rows. An invocation's rows are
// consecutive, its columns strided by the workgroup's width (consecutive invocations store
// consecutive columns). No subgroup operations: any subgroup size runs it. Every inner loop has a
// constant trip count (BM·BK and BK·BN are multiples of the workgroup's invocations), so that
// only the K loop counts against llvmpipe's 65535 iterations per loop (docs/wgpu.md).
var<workgroup> As: array<T, BK * BM>;
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
    var acc: array<T, TM * TN>;
    for (var e = 0u; e < TM * TN; e++) {
        acc[e] = T(0);
    }
    var ar: array<T, TM>;
    var br: array<T, TN>;
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
            As[al * BM + ai] = v;
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
            for (var r = 0u; r < TM; r++) {
                ar[r] = As[l * BM + ty * TM + r];
            }
            for (var q = 0u; q < TN; q++) {
                br[q] = Bs[l * BN + tx + q * TX];
            }
            for (var r = 0u; r < TM; r++) {
                for (var q = 0u; q < TN; q++) {
                    acc[r * TN + q] += ar[r] * br[q];
                }
            }
        }
        workgroupBarrier();
    }
    for (var r = 0u; r < TM; r++) {
        let i = row0 + ty * TM + r;
        if (i < p.m) {
            for (var q = 0u; q < TN; q++) {
                let j = col0 + tx + q * TX;
                if (j < p.n) {
                    c[i * p.n + j] = acc[r * TN + q];
                }
            }
        }
    }
}
