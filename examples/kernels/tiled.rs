// tiled in Rust (docs/rust-kernels.md): TILE×TILE tiles of op(A) and op(B) in shared memory,
// zero-padded at the edges so any M, N, K runs; two supersteps (barriers) per tile, load then
// multiply, reached by every thread. The registry's tiled@rs, as a kernel file: matmul generates
// it into CUDA C++ on a CUDA device (or --backend cuda), into WGSL with --backend wgpu.
// Run: matmul run --kernel-file examples/kernels/tiled.rs -D TILE=16 -m 500 -n 300 -k 200 --check-shapes
//      (default launch: the attribute's TILE×TILE block, TILE = 16 unless -D gives it, and
//      --grid "cdiv(N,TILE),cdiv(M,TILE)"; the shared arrays are static, no --shared)
#[kernel(TILE, TILE)]
fn tiled(a: &[T], b: &[T], c: &mut [T]) {
    let tile_a = shared::<T>(TILE * TILE);
    let tile_b = shared::<T>(TILE * TILE);
    let tx = thread_x();
    let ty = thread_y();
    let i = block_y() * TILE + ty;
    let j = block_x() * TILE + tx;
    let mut acc = zero();
    for t in 0..(k + TILE - 1) / TILE {
        let la = t * TILE + tx;
        let lb = t * TILE + ty;
        let mut av = zero();
        if i < m && la < k {
            av = a[i * a_rs + la * a_cs];
        }
        let mut bv = zero();
        if lb < k && j < n {
            bv = b[lb * b_rs + j * b_cs];
        }
        tile_a[ty * TILE + tx] = av;
        tile_b[ty * TILE + tx] = bv;
        superstep();
        for q in 0..TILE {
            acc += tile_a[ty * TILE + q] * tile_b[q * TILE + tx];
        }
        superstep();
    }
    if i < m && j < n {
        c[i * n + j] = acc;
    }
}
