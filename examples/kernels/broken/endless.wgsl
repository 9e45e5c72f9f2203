// A deliberately endless kernel: every invocation loops forever; the watchdog (--timeout) kills
// the process running it, exit 1. On lavapipe, llvmpipe ends any loop after 65535 iterations
// per invocation (its guard against endless shaders), so there run it over a large grid, e.g.
// --grid 4096,4096 (2^32 invocations × 65535 iterations: hours of CPU).
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.y;
    let j = gid.x;
    var acc = T(0);
    var l = 0u;
    loop {
        acc += a[(l * p.a_cs) % arrayLength(&a)];
        l = (l + 1u) % max(p.k, 1u);
        if (acc == T(-1)) {
            break;
        }
    }
    if (i < p.m && j < p.n) {
        c[i * p.n + j] = acc;
    }
}
