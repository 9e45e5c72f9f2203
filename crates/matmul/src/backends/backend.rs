//! The backend interface: one product, or a timed series of them, on the CPU, a CUDA device or a
//! wgpu adapter.

use crate::error::{Error, Result};
use crate::matrix::AnyMatrix;
use crate::problem::Problem;
use crate::registry::rules::DeviceIdentity;
pub use crate::registry::RunOptions;
use crate::registry::{BackendKind, DeviceLimits, KernelSpec};

/// One input pair for a timed run, stored as the problem says ([`Problem::a_stored`],
/// [`Problem::b_stored`]).
pub struct Inputs {
    /// A, stored m×k (op N) or k×m (op T).
    pub a: AnyMatrix,
    /// B, stored k×n (op N) or n×k (op T).
    pub b: AnyMatrix,
}

/// Where products run: [`CpuBackend`](crate::CpuBackend) or
/// [`CudaBackend`](crate::CudaBackend); [`open_backend`](crate::open_backend) picks one. A
/// backend runs only its own kernels ([`KernelSpec::backend`]) and checks inputs and rules before
/// any work, so a bad call is an [`Error`], never a panic.
pub trait Backend {
    /// Which kernels this backend runs (those whose [`KernelSpec::backend`] is this).
    fn kind(&self) -> BackendKind;

    /// A one-line description: device name and what matters about it.
    fn describe(&self) -> String;

    /// What `can_run` needs to know (None for the CPU).
    fn limits(&self) -> Option<DeviceLimits>;

    /// Who the device is, for the tune table and measured choices kept for it (None: nothing
    /// is kept for this backend).
    fn identity(&self) -> Option<DeviceIdentity> {
        None
    }

    /// Runs `kernel` on one input pair and returns C. The output is poisoned before the launch
    /// (NaN / 0xDEADBEEF) unless the kernel accumulates into a zeroed C, so an element the kernel
    /// did not write cannot pass verification.
    fn run(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
        opts: RunOptions,
    ) -> Result<AnyMatrix>;

    /// Times `iters` launches after `warmup` untimed ones, rotating among `inputs` (so the caller
    /// can defeat the cache by passing sets larger than it). Returns seconds per launch, one entry
    /// per timed launch.
    fn time(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        inputs: &[Inputs],
        warmup: usize,
        iters: usize,
        opts: RunOptions,
    ) -> Result<Vec<f64>>;

    /// Times the int8 ceiling the bench sets beside the byte-split u32 kernels: cuBLASLt's
    /// s8·s8 → s32 GEMM of m×n×k (CUDA only: [`crate::CudaBackend::time_cublaslt_int8`], whose
    /// docs give the layout), `warmup` untimed and `iters` timed calls rotating among `sets`
    /// input pairs. Not a u32 product. Seconds per call; other backends refuse.
    fn time_int8_ceiling(
        &self,
        mnk: (usize, usize, usize),
        sets: usize,
        warmup: usize,
        iters: usize,
    ) -> Result<Vec<f64>> {
        let _ = (mnk, sets, warmup, iters);
        Err(Error::Invalid(format!(
            "the {} backend has no int8 ceiling (cuBLASLt's int8 GEMM is CUDA's)",
            self.kind()
        )))
    }

    /// Checks that this backend can run `kernel` on `problem` at all (backend, dtype, shape rules).
    fn check(&self, kernel: &KernelSpec, problem: &Problem, opts: RunOptions) -> Result<()> {
        if kernel.backend != self.kind() {
            return Err(Error::WrongBackend {
                kernel: kernel.name.to_string(),
                backend: self.kind().to_string(),
            });
        }
        kernel.can_run(problem, self.limits().as_ref(), &opts)?;
        Ok(())
    }
}

/// [`check_inputs`] for every set a [`Backend::time`] rotates among; none at all is an error.
pub fn check_input_sets(problem: &Problem, inputs: &[Inputs]) -> Result<()> {
    if inputs.is_empty() {
        return Err(Error::Invalid("timing needs at least one input set".into()));
    }
    inputs
        .iter()
        .try_for_each(|set| check_inputs(problem, &set.a, &set.b))
}

/// Checks that `a` and `b` have the stored shapes and storage type that `problem` says.
pub fn check_inputs(problem: &Problem, a: &AnyMatrix, b: &AnyMatrix) -> Result<()> {
    let storage = match problem.dtype {
        crate::DType::Tf32 => crate::DType::F32,
        d => d,
    };
    for (what, m, (r, c)) in [("A", a, problem.a_stored()), ("B", b, problem.b_stored())] {
        if m.dtype() != storage {
            return Err(Error::ShapeMismatch {
                what,
                expected: format!("{storage} elements"),
                found: format!("{} elements", m.dtype()),
            });
        }
        if m.rows().checked_mul(m.cols()) != Some(crate::with_matrix!(m, x => x.data.len())) {
            return Err(Error::ShapeMismatch {
                what,
                expected: format!("{}x{} elements of data", m.rows(), m.cols()),
                found: format!("{}", crate::with_matrix!(m, x => x.data.len())),
            });
        }
        if (m.rows(), m.cols()) != (r, c) {
            return Err(Error::ShapeMismatch {
                what,
                expected: format!("{r}x{c}"),
                found: format!("{}x{}", m.rows(), m.cols()),
            });
        }
    }
    Ok(())
}
