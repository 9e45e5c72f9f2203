//! What a benchmark runs: the kernels ([`BenchKernel`]) and the kernel × dtype pairs a planned
//! run is limited to ([`PlanEntry`]).

use matmul::{DType, KernelSpec, Problem};

use crate::ceilings::INT8_CEILING;

/// A kernel a benchmark runs: one of the registry, or `auto`, the library's own choice for each
/// problem.
#[derive(Debug, Clone, Copy)]
pub enum BenchKernel {
    /// A registry kernel, run with the options of [`BenchConfig::options_for`](crate::BenchConfig::options_for).
    Named(&'static KernelSpec),
    /// For each problem, the kernel and tiling `matmul::dispatch` chooses for it (the choice of
    /// `matmul run --kernel auto`, made with the run's tune table): recorded as kernel `auto`,
    /// the chosen kernel in `chosen` and its tiling in `tiling`.
    Auto,
    /// [`INT8_CEILING`] (`cublaslt-int8`), u32 problems on CUDA only: cuBLASLt's s8·s8 → s32
    /// GEMM of the same m, n, k, timed as a ceiling for the byte-split kernels. It does not
    /// compute the u32 product and is not verified; its record is marked as the ceiling row.
    Int8Ceiling,
    /// The run's [`ExternalKernel`](crate::runner::ExternalKernel) ([`BenchConfig::external`](crate::BenchConfig::external)): a kernel of the user's own,
    /// verified and timed as ours are, recorded under its own name.
    External,
}

impl BenchKernel {
    /// The registry name, `auto`, or [`INT8_CEILING`]; for [`BenchKernel::External`]
    /// `kernel-file` (its records take [`ExternalKernel::name`](crate::runner::ExternalKernel::name)).
    pub fn name(&self) -> &'static str {
        match self {
            BenchKernel::Named(k) => k.name,
            BenchKernel::Auto => "auto",
            BenchKernel::Int8Ceiling => INT8_CEILING,
            BenchKernel::External => "kernel-file",
        }
    }
}

impl From<&'static KernelSpec> for BenchKernel {
    fn from(k: &'static KernelSpec) -> Self {
        BenchKernel::Named(k)
    }
}

/// One kernel × dtype pair a planned run is limited to ([`BenchConfig::plan`](crate::BenchConfig::plan)), up to a size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanEntry {
    /// The kernel's registry name, or `auto`.
    pub kernel: &'static str,
    /// The dtype it runs.
    pub dtype: DType,
    /// The largest m·n·k it runs (None: any).
    pub max_mnk: Option<u64>,
}

impl PlanEntry {
    /// Whether this entry lets `kernel` run `problem`.
    pub fn admits(&self, kernel: &str, problem: &Problem) -> bool {
        let mnk = problem.m as u128 * problem.n as u128 * problem.k as u128;
        self.kernel == kernel
            && self.dtype == problem.dtype
            && self.max_mnk.is_none_or(|max| mnk <= max as u128)
    }
}
