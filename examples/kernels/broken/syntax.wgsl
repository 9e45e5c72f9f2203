// A deliberate syntax error (line 6: a missing `;`): `matmul run` shows naga's log and exits 2.
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y;
    let j = gid.x;
    let oops = 1u
    if (i < p.m && j < p.n) {
        c[i * p.n + j] = T(0);
    }
}
