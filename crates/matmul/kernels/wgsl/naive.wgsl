// naive (seeds 000/003, Mojo p16 --naive) in WGSL: TILE×TILE workgroups, one invocation per
// output, x along the columns of C and y along its rows, row and column from global memory.
@compute @workgroup_size(TILE, TILE)
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
