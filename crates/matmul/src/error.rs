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

    /// A CUDA kernel was named and no CUDA device could be opened.
    #[error("kernel `{kernel}` needs a CUDA device: {reason}")]
    NeedsGpu {
        /// The kernel's registry name.
        kernel: String,
        /// Why the device could not be opened.
        reason: String,
    },

    /// A verified product differs from the CPU reference beyond the tolerance.
    #[error("{kernel} does not match the CPU reference on {problem}: {detail}")]
    Mismatch {
        /// The kernel's registry name.
        kernel: String,
        /// The problem, as `Problem`'s `Display` writes it.
        problem: String,
        /// The comparison's figures.
        detail: String,
    },

    /// A backend returned C in another element type than the problem's.
    #[error("kernel `{kernel}` returned {found} elements for a {expected} C")]
    WrongOutput {
        /// The kernel's registry name.
        kernel: String,
        /// The problem's C type.
        expected: crate::dtype::DType,
        /// The type the backend returned.
        found: crate::dtype::DType,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
