// ROW (seed 001) in WGSL: one invocation per row of C, the sum in a register. The header
// (wgpu/shaders.rs) defines T, the bindings a, b, c, the uniform p and WG (invocations per
// workgroup). u32 products and sums wrap modulo 2^32, as WGSL's u32 arithmetic does. The K loop
// runs in whole chunks of 16 (a constant trip count the driver unrolls, its loads issued together),
// then the last K mod 16 one by one: llvmpipe (lavapipe) stops any loop after 65535 iterations per
// invocation, counted over all its entries, so a plain K loop would stop at K = 65535 (ROW: N·K);
// see docs/wgpu.md.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= p.m) {
        return;
    }
    for (var j = 0u; j < p.n; j++) {
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
        c[i * p.n + j] = acc;
    }
}
