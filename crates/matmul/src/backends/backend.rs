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
use crate::view::{AnyMatMut, AnyMatRef, Block};

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
pub trait Backend: Send + Sync {
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

    /// [`Backend::run`] on borrowed views (rows with gaps allowed): the CPU's fast kernel reads
    /// f32 views in place; elsewhere through dense copies.
    fn run_ref(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        a: AnyMatRef<'_>,
        b: AnyMatRef<'_>,
        opts: RunOptions,
    ) -> Result<AnyMatrix> {
        a.check()?;
        b.check()?;
        self.run(kernel, problem, &a.to_matrix(), &b.to_matrix(), opts)
    }

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

    /// Copies the borrowed `m` into this backend's memory as a dense matrix: on CUDA straight
    /// from the caller's memory (no host copy); elsewhere through an owned copy.
    fn upload_ref(&self, m: AnyMatRef<'_>) -> Result<DeviceData> {
        m.check()?;
        self.upload(&m.to_matrix())
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

    /// Copies `d` into the caller's `dst` (of `d`'s shape and element type, rows with gaps
    /// allowed), after the work enqueued before on it: no host allocation (on CUDA one copy
    /// straight into `dst`, at the link's full rate when `dst` is page-locked memory).
    fn download_into(&self, d: &DeviceData, mut dst: AnyMatMut<'_>) -> Result<()> {
        check_destination(d, &dst)?;
        match d.buffer::<AnyMatrix>(self.instance(), "the matrix") {
            Ok(m) => dst.copy_from(m),
            Err(_) => dst.copy_from(&self.download(d)?),
        }
    }

    /// [`Backend::upload`] of a matrix the caller gives up: a backend whose matrices live in
    /// host memory (instance 0) keeps it as it is, without a copy.
    fn upload_owned(&self, m: AnyMatrix) -> Result<DeviceData> {
        if self.instance() == 0 {
            Ok(DeviceData::host(m, 0))
        } else {
            self.upload(&m)
        }
    }

    /// [`Backend::download`] of a matrix the caller gives up: one in host memory is moved out,
    /// without a copy.
    fn download_owned(&self, d: DeviceData) -> Result<AnyMatrix> {
        match d.into_host(self.instance()) {
            Ok(m) => Ok(m),
            Err(d) => self.download(&d),
        }
    }

    /// Copies the `from` block of `src` into `dst` with its first element at `at` (row, col),
    /// in order with the work enqueued on this backend (on CUDA one 2D copy on the stream): how
    /// a plan runs on views of matrices ([`crate::Plan::run_views`]). Both matrices are this
    /// backend's, of one element type; the blocks must lie within them.
    fn copy_block(
        &self,
        src: &DeviceData,
        from: Block,
        dst: &mut DeviceData,
        at: (usize, usize),
    ) -> Result<()> {
        check_copy(src, from, dst, at)?;
        let owner = self.instance();
        let s: &AnyMatrix = src.buffer(owner, "the source")?;
        let d: &mut AnyMatrix = dst.buffer_mut(owner, "the destination")?;
        let (src_cols, dst_cols) = (s.cols(), d.cols());
        crate::with_matrix!(d, dm => {
            let sm = s.as_typed().ok_or_else(|| Error::Invalid("copying between element types".into()))?;
            for i in 0..from.rows {
                let so = (from.row + i) * src_cols + from.col;
                let d0 = (at.0 + i) * dst_cols + at.1;
                dm.data[d0..d0 + from.cols].copy_from_slice(&sm.data[so..so + from.cols]);
            }
            Ok(())
        })
    }

    /// Waits for the work enqueued on this backend (a no-op where runs are synchronous).
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    /// The address of `d`'s first element in this backend's memory (a CUDA device pointer), to
    /// hand the matrix to another library without a copy; it stays valid while `d` lives, and
    /// the backend's queued work on it is done after [`Backend::synchronize`]. Backends whose
    /// matrices are host values a plan may replace refuse ([`Backend::download`] copies).
    fn data_ptr(&self, d: &DeviceData) -> Result<u64> {
        let _ = d;
        Err(Error::Invalid(format!(
            "the {} backend does not lend its matrices' memory (download copies them)",
            self.kind()
        )))
    }

    /// Wraps `shape.0`×`shape.1` row-major elements of `dtype` at `ptr`, memory another
    /// library allocated on this backend's device (a DLPack tensor), as a matrix this backend
    /// holds, without a copy. `keep` keeps the memory alive: it is dropped with the matrix,
    /// after the backend's work on it is done. Backends without device memory refuse.
    ///
    /// # Safety
    /// `ptr` must address that many live elements on this backend's device, usable from its
    /// context, until `keep` is dropped; and no other work may write them while this backend
    /// works on them.
    unsafe fn wrap_external(
        &self,
        ptr: u64,
        dtype: DType,
        shape: (usize, usize),
        keep: Box<dyn Any + Send + Sync>,
    ) -> Result<DeviceData> {
        let _ = (ptr, dtype, shape, keep);
        Err(Error::Invalid(format!(
            "the {} backend holds host matrices; it wraps no device memory",
            self.kind()
        )))
    }

    /// Plans `kernel` on `problem` with `opts` and α, β: compiled and configured once, run many
    /// times on matrices this backend holds ([`PlanRun::run`]), `batch` at a time (a backend may
    /// prepare a one-launch form of it). Backends without plans refuse.
    fn plan(
        &self,
        kernel: &'static KernelSpec,
        problem: &Problem,
        opts: RunOptions,
        scale: Scale,
        batch: Batch,
    ) -> Result<Box<dyn PlanRun + '_>> {
        let _ = (kernel, problem, opts, scale, batch);
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

/// Checks a [`Backend::download_into`]: the destination has the matrix's shape and type.
pub fn check_destination(d: &DeviceData, dst: &AnyMatMut<'_>) -> Result<()> {
    if d.dtype() != dst.dtype() || d.shape() != dst.shape() {
        let (rows, cols) = d.shape();
        let (r, c) = dst.shape();
        return Err(Error::ShapeMismatch {
            what: "the destination",
            expected: format!("{rows}x{cols} {}", d.dtype()),
            found: format!("{r}x{c} {}", dst.dtype()),
        });
    }
    Ok(())
}

/// Checks a [`Backend::copy_block`]: one element type, both blocks within their matrices.
pub fn check_copy(
    src: &DeviceData,
    from: Block,
    dst: &DeviceData,
    at: (usize, usize),
) -> Result<()> {
    if src.dtype() != dst.dtype() {
        return Err(Error::Invalid(format!(
            "copying a block of {} elements into a {} matrix",
            src.dtype(),
            dst.dtype()
        )));
    }
    from.check_within("the source", src.shape())?;
    Block {
        row: at.0,
        col: at.1,
        ..from
    }
    .check_within("the destination", dst.shape())
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
    let storage = problem.dtype.storage();
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

/// A strided batch of products sharing one problem: product i reads A's matrix at element
/// i·`stride_a` of A's buffer, B's at i·`stride_b`, and writes C's at i·`stride_c` (strides in
/// elements; gaps between matrices allowed; a stride of 0 gives every product the same A or B),
/// as cuBLAS's `gemmStridedBatched`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// Products in the batch (at least 1).
    pub count: usize,
    /// Elements from one A to the next.
    pub stride_a: usize,
    /// Elements from one B to the next.
    pub stride_b: usize,
    /// Elements from one C to the next (at least m·n when count > 1: the Cs never overlap).
    pub stride_c: usize,
}

impl Batch {
    /// One product: the matrices are the buffers.
    pub fn one(problem: &Problem) -> Batch {
        Batch::contiguous(1, problem)
    }

    /// `count` products whose matrices follow each other without gaps.
    pub fn contiguous(count: usize, problem: &Problem) -> Batch {
        let size = |(r, c): (usize, usize)| r * c;
        Batch {
            count,
            stride_a: size(problem.a_stored()),
            stride_b: size(problem.b_stored()),
            stride_c: problem.m * problem.n,
        }
    }

    /// Elements a buffer of matrices of `len` elements at `stride` must hold: (count − 1)·stride
    /// + len (None on overflow).
    pub fn need(&self, stride: usize, len: usize) -> Option<usize> {
        self.count
            .saturating_sub(1)
            .checked_mul(stride)
            .and_then(|x| x.checked_add(len))
    }

    /// Checks the batch for `problem`: at least one product, Cs that do not overlap, and every
    /// offset within reach.
    pub fn check(&self, problem: &Problem) -> Result<()> {
        if self.count == 0 {
            return Err(Error::Invalid("a batch holds at least 1 product".into()));
        }
        let c_len = problem.m * problem.n;
        if self.count > 1 && self.stride_c < c_len {
            return Err(Error::Invalid(format!(
                "stride_c = {} is less than one C ({}x{} = {c_len} elements): the products would \
                 overwrite each other",
                self.stride_c, problem.m, problem.n
            )));
        }
        let size = |(r, c): (usize, usize)| r * c;
        for (what, stride, len) in [
            ("A", self.stride_a, size(problem.a_stored())),
            ("B", self.stride_b, size(problem.b_stored())),
            ("C", self.stride_c, c_len),
        ] {
            if self
                .need(stride, len)
                .is_none_or(|n| n > i32::MAX as usize * 64)
            {
                return Err(Error::Invalid(format!(
                    "{what}'s batch of {} at stride {stride} is out of reach",
                    self.count
                )));
            }
        }
        Ok(())
    }

    /// Checks that `a`, `b` and `c` hold the batch of `problem`: their element types, and for
    /// one product their shapes, for more their lengths.
    pub fn check_operands(
        &self,
        problem: &Problem,
        a: &DeviceData,
        b: &DeviceData,
        c: &DeviceData,
    ) -> Result<()> {
        let storage = problem.dtype.storage();
        if *self == Batch::one(problem) {
            a.expect("A", storage, problem.a_stored())?;
            b.expect("B", storage, problem.b_stored())?;
            return c.expect("C", problem.c_dtype(), (problem.m, problem.n));
        }
        let size = |(r, c): (usize, usize)| r * c;
        for (what, d, dtype, stride, len) in [
            ("A", a, storage, self.stride_a, size(problem.a_stored())),
            ("B", b, storage, self.stride_b, size(problem.b_stored())),
            (
                "C",
                c,
                problem.c_dtype(),
                self.stride_c,
                problem.m * problem.n,
            ),
        ] {
            let need = self.need(stride, len).unwrap_or(usize::MAX);
            let (rows, cols) = d.shape();
            if d.dtype() != dtype || rows * cols < need {
                return Err(Error::ShapeMismatch {
                    what,
                    expected: format!(
                        "{need} {dtype} elements ({} matrices of {len} at stride {stride})",
                        self.count
                    ),
                    found: format!("{rows}x{cols} {}", d.dtype()),
                });
            }
        }
        Ok(())
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

    /// The host matrix inside, when it is one held by backend instance `owner`; else `self`.
    pub fn into_host(self, owner: u64) -> std::result::Result<AnyMatrix, DeviceData> {
        if self.owner != owner || !self.inner.is::<AnyMatrix>() {
            return Err(self);
        }
        let DeviceData {
            dtype,
            rows,
            cols,
            owner,
            inner,
        } = self;
        inner
            .downcast::<AnyMatrix>()
            .map(|m| *m)
            .map_err(|inner| DeviceData {
                dtype,
                rows,
                cols,
                owner,
                inner,
            })
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
pub trait PlanRun: Send + Sync {
    /// The kernel it runs.
    fn kernel(&self) -> &'static KernelSpec;
    /// The product it runs.
    fn problem(&self) -> &Problem;
    /// α and β.
    fn scale(&self) -> Scale;
    /// Enqueues C = α·op(A)·op(B) + β·C for each product of `batch` (A and B stored as the
    /// problem says, C m×n of its C type, all held by the plan's backend; [`Batch::one`]: the
    /// matrices are the buffers). On CUDA it returns before the products are done (the backend's
    /// stream orders later work; [`Backend::synchronize`] waits); on the CPU and wgpu they are
    /// done when it returns.
    fn run(&self, a: &DeviceData, b: &DeviceData, c: &mut DeviceData, batch: Batch) -> Result<()>;
    /// Whether a run of the batch the plan was made for is one launch (a kernel's batched
    /// build, or cuBLAS's strided batched GEMM) rather than one per product.
    fn one_launch(&self) -> bool {
        false
    }
    /// Times `iters` runs after `warmup` untimed ones on the same matrices: seconds per run, one
    /// entry per timed run (CUDA: between events on the stream; elsewhere the wall clock).
    fn time(
        &self,
        a: &DeviceData,
        b: &DeviceData,
        c: &mut DeviceData,
        batch: Batch,
        warmup: usize,
        iters: usize,
    ) -> Result<Vec<f64>> {
        for _ in 0..warmup {
            self.run(a, b, c, batch)?;
        }
        (0..iters)
            .map(|_| {
                let start = std::time::Instant::now();
                self.run(a, b, c, batch)?;
                Ok(start.elapsed().as_secs_f64())
            })
            .collect()
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
    fn run(&self, a: &DeviceData, b: &DeviceData, c: &mut DeviceData, batch: Batch) -> Result<()> {
        let p = &self.problem;
        batch.check(p)?;
        batch.check_operands(p, a, b, c)?;
        let ha: &AnyMatrix = a.buffer(self.owner, "A")?;
        let hb: &AnyMatrix = b.buffer(self.owner, "B")?;
        let hc: &mut AnyMatrix = c.buffer_mut(self.owner, "C")?;
        // The product in the accumulator's type when α and β follow (one rounding to C's).
        let wide = p.with_c(crate::problem::COut::Accumulator);
        let run_as = if self.scale.is_plain() { p } else { &wide };
        if batch == Batch::one(p) {
            // One product: the buffers are the matrices (check_operands checked their shapes).
            let product = self.backend.run(self.kernel, run_as, ha, hb, self.opts)?;
            return if self.scale.is_plain() {
                *hc = product;
                Ok(())
            } else {
                self.scale.apply_host(&product, hc)
            };
        }
        for i in 0..batch.count {
            let ai = sub_matrix(ha, i * batch.stride_a, p.a_stored())?;
            let bi = sub_matrix(hb, i * batch.stride_b, p.b_stored())?;
            let product = self.backend.run(self.kernel, run_as, &ai, &bi, self.opts)?;
            let at = i * batch.stride_c;
            if self.scale.is_plain() {
                put_sub_matrix(hc, at, &product)?;
            } else {
                let mut ci = sub_matrix(hc, at, (p.m, p.n))?;
                self.scale.apply_host(&product, &mut ci)?;
                put_sub_matrix(hc, at, &ci)?;
            }
        }
        Ok(())
    }
}

/// The `rows`×`cols` matrix at element `offset` of `m`'s data, copied.
fn sub_matrix(m: &AnyMatrix, offset: usize, (rows, cols): (usize, usize)) -> Result<AnyMatrix> {
    let len = rows * cols;
    crate::with_matrix!(m, x => {
        let data = x.data.get(offset..offset + len).ok_or_else(|| {
            Error::Invalid(format!("a {rows}x{cols} matrix at element {offset} runs past the buffer"))
        })?;
        Ok(AnyMatrix::from(crate::Matrix::from_vec(rows, cols, data.to_vec())?))
    })
}

/// Writes `src`'s elements into `dst`'s data from element `offset` on (same element type).
fn put_sub_matrix(dst: &mut AnyMatrix, offset: usize, src: &AnyMatrix) -> Result<()> {
    let (found, want) = (src.dtype(), dst.dtype());
    crate::with_matrix!(dst, d => {
        let s = src
            .as_typed()
            .ok_or_else(|| Error::Invalid(format!("a {found} product for a {want} C")))?;
        let len = s.data.len();
        d.data
            .get_mut(offset..offset + len)
            .ok_or_else(|| Error::Invalid(format!("C's matrix at element {offset} runs past the buffer")))?
            .copy_from_slice(&s.data);
        Ok(())
    })
}
