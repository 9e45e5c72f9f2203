// ROW (seed 001) in WGSL: one invocation per row of C, the sum in a register. The header
// (wgpu/shaders.rs) defines T, the bindings a, b, c, the uniform p and WG (invocations per
// workgroup). u32 products and sums wrap modulo 2^32, as WGSL's u32 arithmetic does.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.m) {
        return;
    }
    for (var j = 0u; j < p.n; j++) {
        var acc = T(0);
        for (var l = 0u; l < p.k; l++) {
            acc += a[i * p.a_rs + l * p.a_cs] * b[l * p.b_rs + j * p.b_cs];
        }
        c[i * p.n + j] = acc;
    }
}
