//! Matrix multiplication from the seed documents' teaching kernels to Hopper tensor cores, with
//! a CPU backend that needs no GPU and the Judge Girl contract bit for bit.
//!
//! # Multiply two matrices
//!
//! [`gemm()`] runs C = A·B on the best backend ([`CudaBackend`] when a device is present, else
//! [`CpuBackend`]) with the `auto` kernel, the same choice as `matmul run --kernel auto`:
//!
//! ```
//! let a = matmul::Matrix::<f32>::from_vec(2, 3, vec![1., 2., 3., 4., 5., 6.])?;
//! let b = matmul::Matrix::<f32>::from_vec(3, 2, vec![1., 0., 0., 1., 1., 1.])?;
//! let c: matmul::Matrix<f32> = matmul::gemm(&a, &b)?;
//! assert_eq!(c.data, [4., 5., 10., 11.]);
//! assert_eq!((c.get(1, 0), c.get(2, 0)), (Some(10.), None));
//! # Ok::<(), matmul::Error>(())
//! ```
//!
//! C has the inputs' element type. u32 products wrap modulo 2^32, as the judge requires:
//!
//! ```
//! use matmul::{BackendChoice, Gemm, Matrix};
//!
//! let a = Matrix::<u32>::from_vec(1, 2, vec![u32::MAX, 2])?;
//! let b = Matrix::<u32>::from_vec(2, 1, vec![2, 3])?;
//! let c = Gemm::new(&a, &b).backend(BackendChoice::Cpu).run()?;
//! assert_eq!(c.data, [4]); // (2^32 − 1)·2 + 2·3 = 2^33 + 4 ≡ 4
//! # Ok::<(), matmul::Error>(())
//! ```
//!
//! # Choose the kernel, the backend, and verify
//!
//! The [`Gemm`] builder takes a kernel by registry name or seed alias (any case; `matmul list`
//! shows them), a backend to open or one already open ([`Gemm::on`]: opening CUDA creates a
//! context, so open it once for many products), a compute dtype, transposes and a tiling.
//! Nothing is verified unless [`Gemm::verify`] asks; then C is compared with the CPU reference
//! and a difference beyond the tolerance is an [`Error::Mismatch`].
//!
//! ```
//! use matmul::{BackendChoice, CpuBackend, Gemm, Matrix};
//!
//! let a = Matrix::<f32>::from_fn(100, 80, |i, j| ((i + 2 * j) % 5) as f32)?;
//! let b = Matrix::<f32>::from_fn(80, 60, |i, j| ((3 * i + j) % 7) as f32)?;
//! // `reference` is the alias of the `cpu-reference` kernel.
//! let out = Gemm::new(&a, &b)
//!     .kernel("reference")
//!     .backend(BackendChoice::Cpu)
//!     .verify(true)
//!     .run_detailed()?;
//! println!("{} on {}", out.kernel.name, out.backend);
//! assert_eq!(out.kernel.name, "cpu-reference");
//!
//! let cpu = CpuBackend; // or `matmul::open_backend(BackendChoice::Auto)?.0`
//! let c = Gemm::new(&a, &b).kernel("CPU-FAST").on(&cpu).run()?;
//! assert_eq!(c, out.c); // small integers: every kernel is exact
//! # Ok::<(), matmul::Error>(())
//! ```
//!
//! On a GPU, the seed kernels by their seed names, tf32 tensor cores on f32 storage, a tiling:
//!
//! ```no_run
//! use matmul::{open_backend, BackendChoice, DType, Gemm, Matrix};
//!
//! let (gpu, _) = open_backend(BackendChoice::Cuda)?;
//! let a = Matrix::<f32>::filled(4096, 4096, 1.0)?;
//! let tiled = Gemm::new(&a, &a).kernel("TILING").on(gpu.as_ref()).run()?;
//! let tf32 = Gemm::new(&a, &a).dtype(DType::Tf32).on(gpu.as_ref()).run()?;
//! let tuned = Gemm::new(&a, &a)
//!     .kernel("warptile")
//!     .tiling("128x128x16/8x4/w64x32n2/s3".parse()?)
//!     .on(gpu.as_ref())
//!     .verify(true)
//!     .run()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`AnyMatrix`] holds a matrix whose element type is chosen at run time (the CLI's, the
//! backends'): `AnyMatrix::from(m)`, `Matrix::<f32>::try_from(any)?`, `any.as_f32()`.
//! `examples/multiply.rs` is a whole program (`cargo run -p matmul --example multiply`).
//!
//! # Layout
//!
//! Layers, lowest first; each imports only from its own layer or below (`tests/layers.rs`):
//!
//! - [`core`](self::core): the data and its types ([`problem`], [`dtype`], [`matrix`], [`error`]), the
//!   host-memory check, and the library's [`Config`] (it reads no environment variable).
//! - [`registry`]: every kernel (names, aliases, dtypes, the rules of `can_run`, the traffic
//!   model), [`RunOptions`], and how each CUDA kernel family launches ([`family`]); users' own
//!   kernels ([`user`]). `matmul list` prints it.
//! - [`backends`]: the [`Backend`] trait and its implementations, [`cpu`] (the reference every
//!   result is checked against, a fast path, and [`verify`]), [`cuda`] (cargo feature `cuda`:
//!   NVRTC-compiled kernels from `kernels/*.cu`, cuBLAS for comparison) and [`wgpu`] (cargo
//!   feature `wgpu`); [`open_backend`]. Libraries load at run time: no GPU is an error, not a
//!   crash.
//! - `nccl` (cargo feature `nccl`): one product over several GPUs.
//! - [`dispatch`]: which kernel runs (`auto`), with which tiling (the tune tables), and the
//!   tuner's search space.
//! - [`gemm()`] and [`Gemm`]: the one-call API; [`compat`]: the seeds' contracts (the Judge Girl
//!   problem, the Mojo puzzles).

#![warn(missing_docs)]

// The layers, each a directory; a lower one never names a higher one (tests/layers.rs checks
// that no two top-level modules outside `core` import each other, directly or around a ring).
mod api;
pub mod backends;
pub mod compat;
pub mod core;
pub mod dispatch;
#[cfg(feature = "nccl")]
pub mod nccl;
pub mod registry;

// The paths users know, each at its layer.
pub use crate::backends::backend;
pub use crate::backends::{cpu, cpu::verify, cuda, wgpu};
pub use crate::core::{config, dtype, error, matrix, problem, view};
pub use crate::registry::{family, user};
pub use compat::judge;

/// The tune tables and the tuner's search space, at their former path: [`dispatch::tune`] and
/// [`dispatch::search`].
pub mod tune {
    pub use crate::dispatch::search::*;
    pub use crate::dispatch::tune::*;
}

pub use crate::core::config::Config;
pub use crate::core::dtype::{DType, Element, Types};
pub use crate::core::error::{Error, Result, Unsupported};
pub use crate::core::host::{available_memory, ensure_host_memory};
pub use crate::core::matrix::{AnyMatrix, Init, Matrix};
pub use crate::core::problem::{COut, Op, Precision, Problem, Shape};
pub use crate::core::view::{AnyMatMut, AnyMatRef, Block, MatMut, MatRef};
pub use api::plan::{DeviceMatrix, Plan, PlanBuilder};
pub use api::views::{DeviceView, DeviceViewMut};
pub use api::{gemm, Gemm, GemmOutput};
pub use backends::{
    open_backend, Backend, BackendChoice, Batch, CpuBackend, CudaBackend, DeviceData, Inputs,
    PlanRun, Scale, WgpuBackend,
};
pub use registry::{find, BackendKind, KernelSpec, RunOptions, Tiling, KERNELS};
pub use verify::Verdict;

/// The README's Rust examples, run as doc-tests so that they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
