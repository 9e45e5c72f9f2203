//! Typed errors. Every variant carries what a user needs to fix the call: the shape, the kernel,
//! the rule that was broken.

use thiserror::Error;

use crate::problem::Problem;

/// The most characters of a token from the user (a name, a value, a word of an input file) that
/// a message repeats.
pub const TOKEN_CHARS: usize = 64;

/// `bytes` in GiB with two decimals.
fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// `token` in backquotes for a message; one longer than [`TOKEN_CHARS`] characters is cut there,
/// with an ellipsis and its length (`` `aaaa…` (2097152 bytes) ``), so that a bad 2 MB token is
/// not echoed whole.
///
/// ```
/// use matmul::error::quoted;
///
/// assert_eq!(quoted("f64"), "`f64`");
/// let long = "9".repeat(100_000);
/// assert_eq!(quoted(&long), format!("`{}…` (100000 bytes)", "9".repeat(64)));
/// ```
pub fn quoted(token: &str) -> String {
    match token.char_indices().nth(TOKEN_CHARS) {
        None => format!("`{token}`"),
        Some((cut, _)) => format!("`{}…` ({} bytes)", &token[..cut], token.len()),
    }
}

/// Why a kernel cannot run a problem (CUTLASS's `can_implement`). Returned before any launch.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("kernel `{kernel}` cannot run {problem}: {rule}")]
pub struct Unsupported {
    /// The kernel's registry name.
    pub kernel: String,
    /// The problem as [`Problem`]'s `Display` writes it ("f32 100x60x80"); only the dtype when
    /// the refusal comes from building the kernel for a dtype.
    pub problem: String,
    /// The rule it breaks, in words ("m, n and k must all be at least 1").
    pub rule: String,
}

impl Unsupported {
    /// Kernel `kernel` refuses `problem` by `rule`, as an [`Error`].
    pub fn error(kernel: &str, problem: &crate::problem::Problem, rule: String) -> Error {
        Unsupported {
            kernel: kernel.to_string(),
            problem: problem.to_string(),
            rule,
        }
        .into()
    }
}

/// Every error of this crate. Nothing here panics on bad input: a shape, a name, a size or a
/// missing GPU comes back as one of these, with its `Display` saying what to change.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The kernel's rules refuse the problem (dtype, shape, device); nothing was launched.
    #[error(transparent)]
    Unsupported(#[from] Unsupported),

    /// No registry name or alias matches (case-insensitively) the name given.
    #[error("unknown kernel {} (see `matmul list`)", quoted(.0))]
    UnknownKernel(String),

    /// A dtype name other than f32, u32, tf32, bf16, f16.
    #[error("unknown dtype {} (expected one of f32, u32, tf32, bf16, f16)", quoted(.0))]
    UnknownDType(String),

    /// A shape string that is not `MxNxK` or `N` (see [`Shape`](crate::Shape)).
    #[error("bad shape {} (expected MxNxK or N, positive integers)", quoted(.0))]
    BadShape(String),

    #[error("{what}: expected {expected}, found {found}")]
    /// An operand does not have the shape, element type or data length the problem says.
    ShapeMismatch {
        /// Which operand or value: "A", "B", "C", ...
        what: &'static str,
        /// What the problem requires.
        expected: String,
        /// What was passed.
        found: String,
    },

    #[error("cannot allocate a {rows}x{cols} matrix on the host")]
    /// A rows×cols host buffer whose size overflows or that the allocator refused.
    Allocation {
        /// Rows asked for.
        rows: usize,
        /// Columns asked for.
        cols: usize,
    },

    #[error("{problem} is too large: {}", match .bytes { Some(b) => format!("needs {b} bytes"), None => "its size overflows".to_string() })]
    /// The problem's buffers cannot be sized or held ([`Problem::host_bytes`]).
    TooLarge {
        /// The problem refused.
        problem: Problem,
        /// The bytes it needs, or None when the count overflows `usize`.
        bytes: Option<u128>,
    },

    #[error("{problem} needs {} of device memory for {what}; the device has {} free", gib(*.needed), gib(*.free))]
    /// The device has too little free memory for the problem's buffers: refused before any
    /// allocation.
    DeviceMemory {
        /// The problem refused.
        problem: Problem,
        /// What the memory is for ("A, B and C", "16 input sets of A and B and one C", ...).
        what: String,
        /// Bytes needed.
        needed: u64,
        /// Bytes free on the device when asked.
        free: u64,
    },

    /// The CUDA driver library is missing, reports no device, or not the ordinal asked for.
    #[error("no CUDA device: {0}")]
    NoGpu(String),

    #[error("CUDA {context}: {message}")]
    /// A CUDA driver, NVRTC or cuBLAS call failed, or one of their libraries is missing.
    Cuda {
        /// What was being done ("launching multistage", "loading libnvrtc", ...).
        context: String,
        /// The library's own error text.
        message: String,
    },

    #[error("the CUDA context is lost: {fault} (a kernel faulted; nothing more runs on this device in this process)")]
    /// A kernel faulted (an illegal address or instruction: a CUDA sticky error), which leaves
    /// the context unusable until the process ends; every later call on the backend fails with
    /// this, at once, rather than with a stream of unrelated CUDA errors.
    ContextLost {
        /// What was running and CUDA's error.
        fault: String,
    },

    #[error("wgpu {context}: {message}")]
    /// A wgpu call failed: no adapter, a WGSL kernel that does not compile (the context names
    /// it), a validation or out-of-memory error, a lost device.
    Wgpu {
        /// What was being done ("compiling kernel `wgpu-tiled` ...", "opening an adapter").
        context: String,
        /// wgpu's own error text.
        message: String,
    },

    #[error("NVRTC failed to compile `{kernel}` ({options}):\n{log}")]
    /// NVRTC rejected a kernel source.
    Compile {
        /// The registry name (or source name) compiled.
        kernel: String,
        /// The NVRTC options, space-separated.
        options: String,
        /// NVRTC's log: the compiler's errors.
        log: String,
    },

    #[error("kernel `{kernel}` is not available on the {backend} backend")]
    /// The kernel belongs to the other backend (a CUDA kernel given to the CPU, or the reverse).
    WrongBackend {
        /// The kernel's registry name.
        kernel: String,
        /// The backend it was given to ("cpu" or "cuda").
        backend: String,
    },

    /// Any other invalid argument or state; the message says which and why.
    #[error("{0}")]
    Invalid(String),

    #[error("this build has no {backend} backend (cargo feature `{feature}` is off)")]
    /// The backend asked for was left out of this build by its cargo feature.
    NotBuilt {
        /// The backend ("cuda", "wgpu").
        backend: &'static str,
        /// The cargo feature of the `matmul` crate that builds it.
        feature: &'static str,
    },

    #[error("I/O error on {path}: {source}")]
    /// Reading or writing a file failed.
    Io {
        /// The file.
        path: String,
        /// The operating system's error.
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

    /// The inputs, or the exact sums they make, do not fit their element type: A or B holds
    /// ±inf or NaN (values beyond the dtype's range round to ±inf), or the reference C does
    /// (its sums beyond C's type). No kernel can be judged against such a reference.
    #[error("{}", out_of_range(.operand, *.dtype))]
    OutOfRange {
        /// "A", "B" or "C".
        operand: &'static str,
        /// The operand's element type (C's type for "C").
        dtype: crate::dtype::DType,
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

impl Error {
    /// Whether this is bad input (a name, a shape, a value, an option that does not apply, a
    /// backend left out of the build), found before any device work: the CLI's exit status 2,
    /// Python's `ValueError`. Everything else is a runtime failure (status 1, `RuntimeError`).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Error::Unsupported(_)
                | Error::UnknownKernel(_)
                | Error::UnknownDType(_)
                | Error::BadShape(_)
                | Error::TooLarge { .. }
                | Error::Invalid(_)
                | Error::ShapeMismatch { .. }
                | Error::WrongBackend { .. }
                | Error::OutOfRange { .. }
                | Error::NotBuilt { .. }
        )
    }
}

/// [`Error::OutOfRange`]'s message: the operand, the dtype and its largest finite value.
fn out_of_range(operand: &str, dtype: crate::dtype::DType) -> String {
    let max = dtype.max_finite();
    let max = if max < 1e6 {
        format!("{max}")
    } else {
        format!("{max:.7e}")
    };
    let what = match operand {
        "C" => format!("the inputs are too large for C in {dtype}: the exact sums of the reference round to ±inf or NaN in {dtype}"),
        _ => format!("the inputs are out of {dtype}'s range: {operand} holds values that round to ±inf or NaN in {dtype}"),
    };
    format!("{what} (the largest finite {dtype} is {max}); the reference is not finite, so the check cannot judge the kernel")
}

/// `std::result::Result` with this crate's [`Error`](enum@Error) by default.
pub type Result<T, E = Error> = std::result::Result<T, E>;
