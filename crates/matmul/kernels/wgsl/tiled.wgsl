// TILING (seed 001; Sarek; Mojo p16 --tiled) in WGSL: TILE×TILE tiles of op(A) and op(B) staged
// in workgroup memory (2·TILE²·4 bytes: 2 KiB at 16), zero-padded at the edges so any M, N, K
// run. Every invocation reaches every barrier: out-of-range ones load zeros and skip the store.
var<workgroup> As: array<T, TILE * TILE>;
var<workgroup> Bs: array<T, TILE * TILE>;

@compute @workgroup_size(TILE, TILE)
fn main(@builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(workgroup_id) wid: vec3<u32>) {
    let tx = lid.x;
    let ty = lid.y;
    let i = wid.y * TILE + ty;
    let j = wid.x * TILE + tx;
    var acc = T(0);
    let tiles = (p.k + TILE - 1u) / TILE;
    for (var t = 0u; t < tiles; t++) {
        let la = t * TILE + tx;
        var av = T(0);
        if (i < p.m && la < p.k) {
            av = ld_a(i * p.a_rs + la * p.a_cs);
        }
        As[ty * TILE + tx] = av;
        let lb = t * TILE + ty;
        var bv = T(0);
        if (lb < p.k && j < p.n) {
            bv = ld_b(lb * p.b_rs + j * p.b_cs);
        }
        Bs[ty * TILE + tx] = bv;
        workgroupBarrier();
        for (var l = 0u; l < TILE; l++) {
            acc += As[ty * TILE + l] * Bs[l * TILE + tx];
        }
        workgroupBarrier();
    }
    if (i < p.m && j < p.n) {
        c[i * p.n + j] = acc;
    }
}
