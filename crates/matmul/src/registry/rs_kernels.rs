//! Kernels written once, in Rust (`#[matmul_macros::kernel]`: the subset its documentation
//! lists), and generated for both GPU backends: each `#[kernel]` function becomes a module of its
//! CUDA C++ (`CUDA`, entry `NAME_rs`) and its WGSL body (`WGSL`), which the
//! registry enters as `NAME@rs` (CUDA) and `wgpu-NAME@rs` (wgpu) beside the hand-written twins
//! (kernels/06_naive.cu and wgsl/naive.wgsl, 08_tiled.cu and wgsl/tiled.wgsl, 04_ele.cu and
//! wgsl/ele.wgsl, 02_row.cu and wgsl/row.wgsl). Sarek's `let%kernel` (seeds 000 and 003), in
//! Rust: the generated code is what tests/data/rs_kernels/ pins, and what a learner reads beside
//! this source.

use matmul_macros::kernel;

// Sarek's naive kernel (seed 000; Mojo p16 --naive): one output per thread, its row of A and
// column of B from global memory. K runs in whole chunks of 16 (a constant inner trip count:
// llvmpipe counts a loop's iterations, docs/wgpu.md, and this way only K/16 count), then the
// last K mod 16 one by one. Unguarded chunks let the compiler issue a chunk's loads together: a
// bounds check per element (the first version) kept CUDA at 0.55× the hand-written kernel.
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

// Sarek's 16×16 tiled kernel (seed 003, TILING of seed 001): TILE×TILE tiles of op(A) and op(B)
// in shared memory, zero-padded at the edges; two supersteps per tile (load, then multiply).
// Every thread reaches every barrier: out-of-range threads load zeros and skip the store.
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

// Judge Girl's ELE (seed 001; the 1-D naive kernel of seeds 000/003): one thread per element of C
// over a 1-D grid; K in chunks of 16 as in naive.
#[kernel(WG, 1)]
fn ele(a: &[T], b: &[T], c: &mut [T]) {
    let idx = global_x();
    if idx < m * n {
        let i = idx / n;
        let j = idx % n;
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
        c[idx] = acc;
    }
}

// Judge Girl's ROW (seed 001): one thread per row of C, every column in turn.
#[kernel(WG, 1)]
fn row(a: &[T], b: &[T], c: &mut [T]) {
    let i = global_x();
    if i < m {
        for j in 0..n {
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
}

/// This file, from which [`source_of`] cuts a kernel's Rust (comments included).
const THIS_FILE: &str = include_str!("rs_kernels.rs");

/// The Rust a registry kernel was generated from (`naive@rs`, `wgpu-naive@rs`, ...): its comment,
/// attribute and function as written in this file; None for a hand-written kernel.
pub fn source_of(kernel: &str) -> Option<&'static str> {
    let name = kernel
        .strip_prefix("wgpu-")
        .unwrap_or(kernel)
        .strip_suffix("@rs")?;
    let fn_at = THIS_FILE.find(&format!("\nfn {name}("))?;
    // Back to the blank line before its comment; on to the function's closing brace.
    let start = THIS_FILE[..fn_at].rfind("\n\n").map_or(0, |i| i + 2);
    let end = fn_at + THIS_FILE[fn_at..].find("\n}\n")? + 3;
    Some(&THIS_FILE[start..end])
}
