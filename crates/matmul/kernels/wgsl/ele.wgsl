// ELE / naive-1d (seeds 001, 000/003) in WGSL: one invocation per element of C in a 1-D
// dispatch; past the dispatch limit per dimension the workgroups fold into y, and the linear
// index is x + y·(workgroups along x)·WG.
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
    for (var l = 0u; l < p.k; l++) {
        acc += a[i * p.a_rs + l * p.a_cs] * b[l * p.b_rs + j * p.b_cs];
    }
    c[idx] = acc;
}
