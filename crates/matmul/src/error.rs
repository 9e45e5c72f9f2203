//! Typed errors. Every variant carries what a user needs to fix the call: the shape, the kernel,
//! the rule that was broken.

use thiserror::Error;

use crate::problem::Problem;

/// Why a kernel cannot run a problem (CUTLASS's `can_implement`). Returned before any launch.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("kernel `{kernel}` cannot run {problem}: {rule}")]
pub struct Unsupported {
    pub kernel: String,
    pub problem: String,
    pub rule: String,
}

#[derive(Debug, Error)]
pub enum Error {
    #[error(transparent)]
    Unsupported(#[from] Unsupported),

    #[error("unknown kernel `{0}` (see `matmul list`)")]
    UnknownKernel(String),

    #[error("unknown dtype `{0}` (expected one of f32, u32, tf32, bf16, f16)")]
    UnknownDType(String),

    #[error("bad shape `{0}` (expected MxNxK or N, positive integers)")]
    BadShape(String),

    #[error("{what}: expected {expected}, found {found}")]
    ShapeMismatch {
        what: &'static str,
        expected: String,
        found: String,
    },

    #[error("cannot allocate a {rows}x{cols} matrix on the host")]
    Allocation { rows: usize, cols: usize },

    #[error("{problem} is too large: {}", match .bytes { Some(b) => format!("needs {b} bytes"), None => "its size overflows".to_string() })]
    TooLarge {
        problem: Problem,
        bytes: Option<u128>,
    },

    #[error("no CUDA device: {0}")]
    NoGpu(String),

    #[error("CUDA {context}: {message}")]
    Cuda { context: String, message: String },

    #[error("NVRTC failed to compile `{kernel}` ({options}):\n{log}")]
    Compile {
        kernel: String,
        options: String,
        log: String,
    },

    #[error("kernel `{kernel}` is not available on the {backend} backend")]
    WrongBackend { kernel: String, backend: String },

    #[error("{0}")]
    Invalid(String),

    #[error("I/O error on {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
