// ELE / naive-1d (seeds 001, 000/003) in WGSL: one invocation per element of C in a 1-D dispatch;
// past the dispatch limit per dimension the workgroups fold into y, and the linear index is x +
// y·(workgroups along x)·WG. The K loop runs in whole chunks of 16 (a constant trip count the
// driver unrolls, its loads issued together), then the last K mod 16 one by one: llvmpipe
// (lavapipe) stops any loop after 65535 iterations per invocation, counted over all its entries, so
// a plain K loop would stop at K = 65535 (ROW: N·K); see docs/wgpu.md.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let idx = gid.x + gid.y * nwg.x * WG;
    if (idx >= p.m * p.n) {
        return;
    }
    let i = idx / p.n;
    let j = idx % p.n;
    var acc = T(0);
    let whole = p.k / 16u * 16u;
    for (var l0 = 0u; l0 < whole; l0 += 16u) {
        for (var u = 0u; u < 16u; u++) {
            let l = l0 + u;
            acc += ld_a(i * p.a_rs + l * p.a_cs) * ld_b(l * p.b_rs + j * p.b_cs);
        }
    }
    for (var l = whole; l < p.k; l++) {
        acc += ld_a(i * p.a_rs + l * p.a_cs) * ld_b(l * p.b_rs + j * p.b_cs);
    }
    c[idx] = acc;
}
