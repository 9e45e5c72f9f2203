//! The backend interface: one product, or a timed series of them, on the CPU, a CUDA device or a
//! wgpu adapter.

use std::any::Any;

use crate::dtype::{DType, Element};
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

    /// A number no other open backend shares: what [`DeviceData`] records as its holder, so a
    /// matrix is never handed to a backend that does not hold it. 0 for backends whose data is
    /// plain host memory any of them can read (the CPU's and wgpu's).
    fn instance(&self) -> u64 {
        0
    }

    /// Copies `m` into this backend's memory (the device's for CUDA; the host's elsewhere).
    fn upload(&self, m: &AnyMatrix) -> Result<DeviceData> {
        Ok(DeviceData::host(m.clone(), self.instance()))
    }

    /// A `rows`×`cols` matrix of `dtype` elements, zero, in this backend's memory.
    fn alloc_zeroed(&self, dtype: DType, rows: usize, cols: usize) -> Result<DeviceData> {
        let m = match dtype {
            DType::F32 | DType::Tf32 => AnyMatrix::F32(crate::Matrix::zeros(rows, cols)?),
            DType::U32 => AnyMatrix::U32(crate::Matrix::zeros(rows, cols)?),
            DType::F16 => AnyMatrix::F16(crate::Matrix::zeros(rows, cols)?),
            DType::Bf16 => AnyMatrix::Bf16(crate::Matrix::zeros(rows, cols)?),
        };
        Ok(DeviceData::host(m, self.instance()))
    }

    /// Copies `d` back to the host, after the work enqueued before on it.
    fn download(&self, d: &DeviceData) -> Result<AnyMatrix> {
        d.buffer::<AnyMatrix>(self.instance(), "the matrix")
            .cloned()
    }

    /// Waits for the work enqueued on this backend (a no-op where runs are synchronous).
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    /// Plans `kernel` on `problem` with `opts` and α, β: compiled and configured once, run many
    /// times on matrices this backend holds ([`PlanRun::run`]). Backends without plans refuse.
    fn plan(
        &self,
        kernel: &'static KernelSpec,
        problem: &Problem,
        opts: RunOptions,
        scale: Scale,
    ) -> Result<Box<dyn PlanRun + '_>> {
        let _ = (kernel, problem, opts, scale);
        Err(Error::Invalid(format!(
            "the {} backend has no plans",
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

/// α and β of a planned product, C = α·op(A)·op(B) + β·C (BLAS's convention: with β = 0, C's
/// old contents are never read, so a NaN there does not leak into the result). Floating C
/// computes `α·p + β·c` in f32 and rounds once to C's type; u32 C takes α and β as integers and
/// wraps modulo 2^32 like the product.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// The product's factor.
    pub alpha: f64,
    /// C's old contents' factor.
    pub beta: f64,
}

impl Default for Scale {
    fn default() -> Scale {
        Scale::ONE
    }
}

impl Scale {
    /// α = 1, β = 0: C = op(A)·op(B).
    pub const ONE: Scale = Scale {
        alpha: 1.0,
        beta: 0.0,
    };

    /// Whether this is plain C = op(A)·op(B).
    pub fn is_plain(&self) -> bool {
        *self == Scale::ONE
    }

    /// Checks α and β for a C of `dtype`: finite, and whole numbers in u32's range for u32
    /// (taken modulo 2^32 as the product is).
    pub fn check(&self, dtype: DType) -> Result<()> {
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !v.is_finite() {
                return Err(Error::Invalid(format!(
                    "{name} = {v} is not a finite number"
                )));
            }
            if dtype == DType::U32 && (v.fract() != 0.0 || !(0.0..=u32::MAX as f64).contains(&v)) {
                return Err(Error::Invalid(format!(
                    "{name} = {v}: a u32 product takes a whole number from 0 to {}",
                    u32::MAX
                )));
            }
        }
        Ok(())
    }

    /// `c ← α·p + β·c` element by element on the host: `p` the product in the accumulator's
    /// type (f32, or u32), `c` of C's type; each element computed as the CUDA plans do (`α·p`
    /// rounded to f32, then one fused multiply-add with β·c, rounded once to C's type).
    pub fn apply_host(&self, p: &AnyMatrix, c: &mut AnyMatrix) -> Result<()> {
        if (p.rows(), p.cols()) != (c.rows(), c.cols()) {
            return Err(Error::ShapeMismatch {
                what: "C",
                expected: format!("{}x{}", p.rows(), p.cols()),
                found: format!("{}x{}", c.rows(), c.cols()),
            });
        }
        match (p, c) {
            (AnyMatrix::U32(p), AnyMatrix::U32(c)) => {
                let (a, b) = (self.alpha as u32, self.beta as u32);
                for (c, p) in c.data.iter_mut().zip(&p.data) {
                    let old = if b == 0 { 0 } else { c.wrapping_mul(b) };
                    *c = p.wrapping_mul(a).wrapping_add(old);
                }
                Ok(())
            }
            (AnyMatrix::F32(p), c) if c.dtype() != DType::U32 => {
                let (a, b) = (self.alpha as f32, self.beta as f32);
                crate::with_matrix!(c, cm => {
                    for (c, p) in cm.data.iter_mut().zip(&p.data) {
                        let ap = a * p;
                        let v = if b == 0.0 { ap } else { b.mul_add(c.to_f64() as f32, ap) };
                        *c = Element::from_f64(v as f64);
                    }
                });
                Ok(())
            }
            (p, c) => Err(Error::Invalid(format!(
                "no scaling of a {} product into a {} C",
                p.dtype(),
                c.dtype()
            ))),
        }
    }
}

/// A matrix held by a backend, in its memory (the device's for CUDA, the host's for the CPU and
/// wgpu), made by [`Backend::upload`] or [`Backend::alloc_zeroed`]; [`crate::DeviceMatrix`] is
/// its typed face.
pub struct DeviceData {
    dtype: DType,
    rows: usize,
    cols: usize,
    /// The backend instance that holds it ([`Backend::instance`]).
    owner: u64,
    inner: Box<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for DeviceData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceData({}x{} {})", self.rows, self.cols, self.dtype)
    }
}

impl DeviceData {
    /// Wraps a backend's own buffer (`inner`) of a rows×cols matrix of `dtype` elements held
    /// by the backend instance `owner`.
    pub fn new(
        dtype: DType,
        rows: usize,
        cols: usize,
        owner: u64,
        inner: Box<dyn Any + Send + Sync>,
    ) -> DeviceData {
        DeviceData {
            dtype,
            rows,
            cols,
            owner,
            inner,
        }
    }

    /// A matrix in host memory (the CPU's and wgpu's plans).
    pub fn host(m: AnyMatrix, owner: u64) -> DeviceData {
        DeviceData::new(m.dtype(), m.rows(), m.cols(), owner, Box::new(m))
    }

    /// The stored element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// (rows, cols).
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The backend's buffer, if it is of type `B` and held by backend instance `owner`;
    /// `what` names the matrix in the error.
    pub fn buffer<B: 'static>(&self, owner: u64, what: &'static str) -> Result<&B> {
        if self.owner != owner {
            return Err(Error::Invalid(format!(
                "{what} is held by another backend (upload it to this one)"
            )));
        }
        self.inner
            .downcast_ref()
            .ok_or_else(|| Error::Invalid(format!("{what} is not this backend's kind of buffer")))
    }

    /// [`DeviceData::buffer`], mutable.
    pub fn buffer_mut<B: 'static>(&mut self, owner: u64, what: &'static str) -> Result<&mut B> {
        if self.owner != owner {
            return Err(Error::Invalid(format!(
                "{what} is held by another backend (upload it to this one)"
            )));
        }
        self.inner
            .downcast_mut()
            .ok_or_else(|| Error::Invalid(format!("{what} is not this backend's kind of buffer")))
    }

    /// Checks that this is a `rows`×`cols` matrix of `dtype` elements.
    pub fn expect(
        &self,
        what: &'static str,
        dtype: DType,
        (rows, cols): (usize, usize),
    ) -> Result<()> {
        if self.dtype != dtype || (self.rows, self.cols) != (rows, cols) {
            return Err(Error::ShapeMismatch {
                what,
                expected: format!("{rows}x{cols} {dtype}"),
                found: format!("{}x{} {}", self.rows, self.cols, self.dtype),
            });
        }
        Ok(())
    }
}

/// A product planned once on a backend ([`Backend::plan`]): the kernel compiled, its launch
/// configuration and workspaces made, run many times on matrices the backend holds.
pub trait PlanRun {
    /// The kernel it runs.
    fn kernel(&self) -> &'static KernelSpec;
    /// The product it runs.
    fn problem(&self) -> &Problem;
    /// α and β.
    fn scale(&self) -> Scale;
    /// Enqueues C = α·op(A)·op(B) + β·C (A and B stored as the problem says, C m×n of its C
    /// type, all held by the plan's backend). On CUDA it returns before the product is done
    /// (the backend's stream orders later work; [`Backend::synchronize`] waits); on the CPU
    /// and wgpu the product is done when it returns.
    fn run(&self, a: &DeviceData, b: &DeviceData, c: &mut DeviceData) -> Result<()>;
}

/// The storage type of `problem`'s inputs (f32 for tf32).
pub fn input_storage(problem: &Problem) -> DType {
    match problem.dtype {
        DType::Tf32 => DType::F32,
        d => d,
    }
}

/// The plan of a backend that works on host memory (the CPU; wgpu, which copies to its device
/// on every run): each run is the backend's [`Backend::run`], then α and β on the host.
pub struct HostPlan<'a> {
    backend: &'a dyn Backend,
    kernel: &'static KernelSpec,
    problem: Problem,
    opts: RunOptions,
    scale: Scale,
    owner: u64,
}

impl<'a> HostPlan<'a> {
    /// Plans `kernel` on `problem` for `backend` (checked now, so that `run` fails only on its
    /// operands).
    pub fn new(
        backend: &'a dyn Backend,
        kernel: &'static KernelSpec,
        problem: &Problem,
        opts: RunOptions,
        scale: Scale,
    ) -> Result<HostPlan<'a>> {
        backend.check(kernel, problem, opts)?;
        scale.check(problem.c_dtype())?;
        if !scale.is_plain() {
            let wide = problem.with_c(crate::problem::COut::Accumulator);
            backend.check(kernel, &wide, opts)?;
        }
        Ok(HostPlan {
            backend,
            kernel,
            problem: *problem,
            opts,
            scale,
            owner: backend.instance(),
        })
    }
}

impl PlanRun for HostPlan<'_> {
    fn kernel(&self) -> &'static KernelSpec {
        self.kernel
    }
    fn problem(&self) -> &Problem {
        &self.problem
    }
    fn scale(&self) -> Scale {
        self.scale
    }
    fn run(&self, a: &DeviceData, b: &DeviceData, c: &mut DeviceData) -> Result<()> {
        let p = &self.problem;
        let storage = input_storage(p);
        a.expect("A", storage, p.a_stored())?;
        b.expect("B", storage, p.b_stored())?;
        c.expect("C", p.c_dtype(), (p.m, p.n))?;
        let ha: &AnyMatrix = a.buffer(self.owner, "A")?;
        let hb: &AnyMatrix = b.buffer(self.owner, "B")?;
        if self.scale.is_plain() {
            let product = self.backend.run(self.kernel, p, ha, hb, self.opts)?;
            *c.buffer_mut::<AnyMatrix>(self.owner, "C")? = product;
            return Ok(());
        }
        // The product in the accumulator's type, then α and β with one rounding to C's.
        let wide = p.with_c(crate::problem::COut::Accumulator);
        let product = self.backend.run(self.kernel, &wide, ha, hb, self.opts)?;
        self.scale
            .apply_host(&product, c.buffer_mut(self.owner, "C")?)
    }
}
