//! `matmul`: matrix multiplication from the seed documents' teaching kernels to Hopper tensor
//! cores, with a CPU backend that works with no GPU and the Judge Girl contract bit for bit.
//!
//! Layers (data flows down): registry (the table of kernels; a CUDA entry's family says how it
//! launches) → backends (cpu, cuda) → kernels/*.cu.

pub mod backend;
pub mod cpu;
pub mod cuda;
pub mod dtype;
pub mod error;
pub mod family;
pub mod judge;
pub mod matrix;
pub mod problem;
pub mod registry;
pub mod tune;
pub mod verify;

use std::str::FromStr;

pub use backend::{Backend, Inputs, RunOptions};
pub use dtype::{DType, Element, Types};
pub use error::{Error, Result, Unsupported};
pub use matrix::{AnyMatrix, Init, Matrix};
pub use problem::{COut, Op, Problem, Shape};
pub use registry::{find, BackendKind, KernelSpec, Tiling, KERNELS};

/// Which backend the user asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BackendChoice {
    /// CUDA when a device is present, else the CPU.
    #[default]
    Auto,
    Cpu,
    Cuda,
}

impl FromStr for BackendChoice {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(BackendChoice::Auto),
            "cpu" => Ok(BackendChoice::Cpu),
            "cuda" | "gpu" => Ok(BackendChoice::Cuda),
            _ => Err(Error::Invalid(format!(
                "unknown backend `{s}` (expected auto, cpu or cuda)"
            ))),
        }
    }
}

/// Opens the chosen backend. `Auto` falls back to the CPU when CUDA is unavailable and returns
/// the reason alongside, so callers can say why.
pub fn open_backend(choice: BackendChoice) -> Result<(Box<dyn Backend>, Option<String>)> {
    match choice {
        BackendChoice::Cpu => Ok((Box::new(cpu::CpuBackend), None)),
        BackendChoice::Cuda => Ok((Box::new(cuda::CudaBackend::new(0)?), None)),
        BackendChoice::Auto => match cuda::CudaBackend::new(0) {
            Ok(b) => Ok((Box::new(b), None)),
            Err(e) => Ok((Box::new(cpu::CpuBackend), Some(e.to_string()))),
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

fn available_memory() -> Option<u64> {
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
