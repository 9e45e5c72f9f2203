// naive in Rust (docs/rust-kernels.md): one output per thread, its row of A and column of B read
// from global memory, K in whole chunks of 16 (a constant inner trip count: llvmpipe counts a
// loop's iterations, docs/wgpu.md), then the rest. The registry's naive@rs, as a kernel file:
// matmul generates it into CUDA C++ on a CUDA device (or --backend cuda), into WGSL with --backend
// wgpu.
// Run: matmul run --kernel-file examples/kernels/naive.rs -m 100 -n 120 -k 70 --check-shapes
//      (default launch: the attribute's TILE×TILE block, TILE = 16 unless -D TILE=..., and
//      --grid "cdiv(N,TILE),cdiv(M,TILE)")
#[kernel(TILE, TILE)]
fn naive(a: &[T], b: &[T], c: &mut [T]) {
    let i = block_y() * TILE + thread_y();
    let j = block_x() * TILE + thread_x();
    if i < m && j < n {
        let mut acc = zero();
        for l0 in 0..k / 16 {
            for u in 0..16 {
                let l = l0 * 16 + u;
                acc += a[i * a_rs + l * a_cs] * b[l * b_rs + j * b_cs];
            }
        }
        for l in k / 16 * 16..k {
            acc += a[i * a_rs + l * a_cs] * b[l * b_rs + j * b_cs];
        }
        c[i * n + j] = acc;
    }
}
