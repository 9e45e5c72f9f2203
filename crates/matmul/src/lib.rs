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
//! - [`registry`]: every kernel (names, aliases, dtypes, the rules of `can_run`, the traffic
//!   model); `matmul list` prints it.
//! - [`dispatch`]: which kernel runs (`auto`), with which tiling (the tune tables), and the
//!   tuner's search space.
//! - [`Backend`] and its two implementations: [`cpu`] (the reference every result is checked
//!   against, and a fast path) and [`cuda`] (NVRTC-compiled kernels from `kernels/*.cu`,
//!   cuBLAS for comparison). CUDA libraries load at run time: no GPU is an error, not a crash.
//! - [`matrix`], [`problem`], [`dtype`], [`error`]: the data and its types; [`verify`]: the
//!   comparison with the reference.
//! - [`compat`]: the seeds' contracts (the Judge Girl problem, the Mojo puzzles).
//! - [`family`]: how each CUDA kernel family launches (grid, block, shared memory, extra
//!   arguments, tensor maps), one module per family behind one trait.

#![warn(missing_docs)]

mod api;
pub mod backend;
pub mod compat;
pub mod cpu;
pub mod cuda;
pub mod dispatch;
pub mod dtype;
pub mod error;
pub mod family;
pub mod matrix;
pub mod problem;
pub mod registry;
pub mod user;
pub mod verify;
pub mod wgpu;

pub use compat::judge;

/// The tune tables and the tuner's search space, at their former path: [`dispatch::tune`] and
/// [`dispatch::search`].
pub mod tune {
    pub use crate::dispatch::search::*;
    pub use crate::dispatch::tune::*;
}

use std::str::FromStr;

pub use api::{gemm, Gemm, GemmOutput};
pub use backend::{Backend, Inputs, RunOptions};
pub use cpu::CpuBackend;
pub use cuda::CudaBackend;
pub use dtype::{DType, Element, Types};
pub use error::{Error, Result, Unsupported};
pub use matrix::{AnyMatrix, Init, Matrix};
pub use problem::{COut, Op, Problem, Shape};
pub use registry::{find, BackendKind, KernelSpec, Tiling, KERNELS};
pub use verify::Verdict;
pub use wgpu::WgpuBackend;

/// Which backend to open (`--backend auto|cpu|cuda|wgpu`; "gpu" also means CUDA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// CUDA when a device is present, else wgpu on a hardware adapter, else the CPU.
    #[default]
    Auto,
    /// The CPU, always available.
    Cpu,
    /// CUDA device 0; an error when there is none.
    Cuda,
    /// wgpu's adapter ([`WgpuBackend`]: software ones such as lavapipe included); an error when
    /// there is none.
    Wgpu,
}

impl BackendChoice {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BackendChoice::Auto => "auto",
            BackendChoice::Cpu => "cpu",
            BackendChoice::Cuda => "cuda",
            BackendChoice::Wgpu => "wgpu",
        }
    }

    /// The backend that runs a kernel of `kind`.
    pub fn of(kind: BackendKind) -> BackendChoice {
        match kind {
            BackendKind::Cpu => BackendChoice::Cpu,
            BackendKind::Cuda => BackendChoice::Cuda,
            BackendKind::Wgpu => BackendChoice::Wgpu,
        }
    }
}

impl FromStr for BackendChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Cpu),
            "cuda" | "gpu" => Ok(BackendChoice::Cuda),
            "wgpu" => Ok(BackendChoice::Wgpu),
            _ => Err(Error::Invalid(format!(
                "unknown backend {} (expected auto, cpu, cuda or wgpu)",
                error::quoted(s)
            ))),
        }
    }
}

/// Opens the chosen backend (CUDA: device 0). `Auto` tries CUDA, then wgpu on a hardware adapter
/// (a software one such as lavapipe is slower than the CPU backend: name `Wgpu` to use it), then
/// the CPU, and returns why it did not take CUDA alongside, so callers can say what they chose.
///
/// ```
/// use matmul::{open_backend, BackendChoice, BackendKind};
///
/// let (cpu, _) = open_backend(BackendChoice::Cpu)?;
/// assert_eq!(cpu.kind(), BackendKind::Cpu);
/// let (any, why_not_cuda) = open_backend(BackendChoice::Auto)?;
/// assert_eq!(any.kind() == BackendKind::Cuda, why_not_cuda.is_none());
/// # Ok::<(), matmul::Error>(())
/// ```
pub fn open_backend(choice: BackendChoice) -> Result<(Box<dyn Backend>, Option<String>)> {
    match choice {
        BackendChoice::Cpu => Ok((Box::new(cpu::CpuBackend), None)),
        BackendChoice::Cuda => Ok((Box::new(cuda::CudaBackend::new(0)?), None)),
        BackendChoice::Wgpu => Ok((Box::new(wgpu::WgpuBackend::new()?), None)),
        BackendChoice::Auto => match cuda::CudaBackend::new(0) {
            Ok(b) => Ok((Box::new(b), None)),
            Err(e) => match wgpu::WgpuBackend::new() {
                Ok(w) if !w.is_software() => Ok((Box::new(w), Some(e.to_string()))),
                Ok(w) => Ok((
                    Box::new(cpu::CpuBackend),
                    Some(format!(
                        "{e}; wgpu has only a software adapter, {}: --backend wgpu runs it",
                        w.adapter_name()
                    )),
                )),
                Err(w) => Ok((Box::new(cpu::CpuBackend), Some(format!("{e}; {w}")))),
            },
        },
    }
}

/// Refuses, before allocating, a host allocation larger than the memory the OS reports available
/// (Linux `MemAvailable`), or than `MATMUL_MAX_HOST_BYTES` when that is set; elsewhere only the
/// checked size arithmetic applies.
pub fn ensure_host_memory(problem: &Problem, bytes: usize) -> Result<()> {
    if let Some(avail) = available_memory() {
        if bytes as u64 > avail {
            return Err(Error::Invalid(format!(
                "{problem} needs {bytes} bytes of host memory; only {avail} are available"
            )));
        }
    }
    Ok(())
}

/// The host memory available for allocations, bytes: `MATMUL_MAX_HOST_BYTES` when set, else Linux
/// `MemAvailable`; `None` when neither is known.
pub fn available_memory() -> Option<u64> {
    if let Some(limit) = std::env::var("MATMUL_MAX_HOST_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return Some(limit);
    }
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The README's Rust examples, run as doc-tests so that they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
