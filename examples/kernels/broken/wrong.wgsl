// A deliberately wrong kernel (it skips the last k): verification fails, exit 1.
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y;
    let j = gid.x;
    if (i >= p.m || j >= p.n) {
        return;
    }
    var acc = T(0);
    for (var l = 1u; l < p.k; l++) {
        acc += a[i * p.a_rs + l * p.a_cs] * b[l * p.b_rs + j * p.b_cs];
    }
    c[i * p.n + j] = acc;
}
