// naive in WGSL: one invocation per element of C, 16×16 per workgroup.
// matmul appends T, a, b, c and p (docs/own-kernels.md); element (i, l) of A is
// a[i * p.a_rs + l * p.a_cs], (l, j) of B is b[l * p.b_rs + j * p.b_cs], C dense.
// Run: matmul run --kernel-file examples/kernels/naive.wgsl -m 100 -n 120 -k 70 --check-shapes
//      (default launch: --grid "cdiv(N,16),cdiv(M,16)" workgroups)
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y;
    let j = gid.x;
    if (i >= p.m || j >= p.n) {
        return;
    }
    var acc = T(0);
    for (var l = 0u; l < p.k; l++) {
        acc += a[i * p.a_rs + l * p.a_cs] * b[l * p.b_rs + j * p.b_cs];
    }
    c[i * p.n + j] = acc;
}
