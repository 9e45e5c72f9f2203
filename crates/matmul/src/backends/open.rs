//! Which backend to open ([`BackendChoice`]) and opening it ([`open_backend`]).

use std::str::FromStr;

use super::{cpu, cuda, wgpu, Backend};
use crate::core::error::{self, Error, Result};
use crate::registry::BackendKind;

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
