//! Matrices kept on a backend ([`DeviceMatrix`]) and products planned once and run many times
//! on them ([`Plan`]): what a solver, an inference step or a training loop calls. On CUDA a
//! plan's run only enqueues work on the backend's stream (no allocation, no copy, no
//! synchronization: [`Backend::synchronize`] waits); on the CPU it computes at once; on wgpu each
//! run still copies through the host (its matrices live in host memory).

use std::marker::PhantomData;

use crate::backends::{Backend, Batch, DeviceData, PlanRun, Scale};
use crate::dispatch;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::problem::Problem;
use crate::registry::{KernelSpec, RunOptions, Tiling};
use crate::view::MatRef;

/// A matrix held by a backend (in device memory on CUDA), of `T` elements: an operand or a C
/// for [`Plan::run`]. Made by [`DeviceMatrix::upload`] or [`DeviceMatrix::zeros`], read back by
/// [`DeviceMatrix::download`]; freed when dropped.
#[derive(Debug)]
pub struct DeviceMatrix<T: Element> {
    data: DeviceData,
    _element: PhantomData<T>,
}

impl<T: Element> DeviceMatrix<T> {
    /// Copies `m` to `backend` (on CUDA straight from `m`'s memory, no host copy).
    pub fn upload(backend: &dyn Backend, m: &Matrix<T>) -> Result<DeviceMatrix<T>> {
        DeviceMatrix::upload_ref(backend, MatRef::from(m))
    }

    /// Copies the borrowed `m` (a block of a bigger matrix, rows with gaps) to `backend` as a
    /// dense matrix.
    pub fn upload_ref(backend: &dyn Backend, m: MatRef<'_, T>) -> Result<DeviceMatrix<T>> {
        let data = backend.upload_ref(m.into())?;
        Ok(DeviceMatrix {
            data,
            _element: PhantomData,
        })
    }

    /// A `rows`×`cols` matrix of zeros on `backend`.
    pub fn zeros(backend: &dyn Backend, rows: usize, cols: usize) -> Result<DeviceMatrix<T>> {
        let data = backend.alloc_zeroed(T::STORAGE, rows, cols)?;
        Ok(DeviceMatrix {
            data,
            _element: PhantomData,
        })
    }

    /// Copies the matrix back from `backend` (which must hold it), after the work enqueued on it.
    pub fn download(&self, backend: &dyn Backend) -> Result<Matrix<T>> {
        let m = backend.download(&self.data)?;
        let found = m.dtype();
        Matrix::<T>::try_from(m).map_err(|_| {
            Error::Invalid(format!(
                "the backend returned {found} elements for a {} matrix",
                T::STORAGE
            ))
        })
    }

    /// (rows, cols).
    pub fn shape(&self) -> (usize, usize) {
        self.data.shape()
    }

    /// The backend's untyped handle.
    pub fn data(&self) -> &DeviceData {
        &self.data
    }

    /// The backend's untyped handle, mutable (for [`Plan::run_data`]).
    pub fn data_mut(&mut self) -> &mut DeviceData {
        &mut self.data
    }
}

/// A product planned once on a backend: C = α·op(A)·op(B) + β·C with the kernel chosen (by
/// `auto` or by name), compiled and configured, its workspaces made, then [`Plan::run`] as often
/// as wanted on [`DeviceMatrix`] operands, as cuBLASLt's matmul descriptors and CUTLASS's GEMM
/// objects are.
///
/// ```
/// use matmul::{CpuBackend, DType, DeviceMatrix, Matrix, Plan, Problem};
///
/// let cpu = CpuBackend;
/// let a = DeviceMatrix::upload(&cpu, &Matrix::<f32>::from_vec(2, 3, vec![1., 2., 3., 4., 5., 6.])?)?;
/// let b = DeviceMatrix::upload(&cpu, &Matrix::<f32>::from_vec(3, 2, vec![1., 0., 0., 1., 1., 1.])?)?;
/// let mut c = DeviceMatrix::upload(&cpu, &Matrix::<f32>::from_vec(2, 2, vec![1., 1., 1., 1.])?)?;
/// // C = 2·A·B + 1·C
/// let plan = Plan::builder(&cpu, Problem::new(2, 2, 3, DType::F32)).alpha(2.0).beta(1.0).build()?;
/// for _ in 0..3 {
///     plan.run(&a, &b, &mut c)?;
/// }
/// matmul::Backend::synchronize(&cpu)?;
/// assert_eq!(c.download(&cpu)?.data, [25., 31., 61., 67.]);
/// # Ok::<(), matmul::Error>(())
/// ```
pub struct Plan<'b> {
    backend: &'b dyn Backend,
    inner: Box<dyn PlanRun + 'b>,
    /// The product as asked (for column-major storage: before the swap to row-major terms).
    problem: Problem,
    /// Column-major storage, run as the row-major Cᵀ = op(B)ᵀ·op(A)ᵀ: A and B trade places.
    column_major: bool,
    batch: Batch,
    tiling: Option<Tiling>,
    notes: Vec<String>,
    /// The workspaces of runs on views ([`Plan::run_views`]).
    pub(super) views: super::views::ViewSpace,
}

/// How to make a [`Plan`]: [`Plan::builder`], the options, then [`PlanBuilder::build`].
#[derive(Clone)]
pub struct PlanBuilder<'b> {
    backend: &'b dyn Backend,
    problem: Problem,
    kernel: String,
    tiling: Option<Tiling>,
    tile: Option<u32>,
    scale: Scale,
    batch: Option<Batch>,
    column_major: bool,
}

impl<'b> Plan<'b> {
    /// A plan of `problem` (shapes, dtype, ops, C's type) on `backend`; by default the `auto`
    /// kernel, α = 1 and β = 0.
    pub fn builder(backend: &'b dyn Backend, problem: Problem) -> PlanBuilder<'b> {
        PlanBuilder {
            backend,
            problem,
            kernel: "auto".into(),
            tiling: None,
            tile: None,
            scale: Scale::ONE,
            batch: None,
            column_major: false,
        }
    }

    /// Enqueues C = α·op(A)·op(B) + β·C: A and B stored as the problem says
    /// ([`Problem::a_stored`], [`Problem::b_stored`]), C m×n of the problem's C type, all held
    /// by the plan's backend. Wrong shapes, types or holders are errors before any work.
    pub fn run<T: Element, U: Element>(
        &self,
        a: &DeviceMatrix<T>,
        b: &DeviceMatrix<T>,
        c: &mut DeviceMatrix<U>,
    ) -> Result<()> {
        self.run_data(&a.data, &b.data, &mut c.data)
    }

    /// Times `iters` runs after `warmup` untimed ones on the same matrices, as `matmul bench`
    /// times a kernel: seconds per run (the whole batch), one entry per timed run (on CUDA
    /// between events on the backend's stream).
    pub fn time(
        &self,
        a: &DeviceData,
        b: &DeviceData,
        c: &mut DeviceData,
        warmup: usize,
        iters: usize,
    ) -> Result<Vec<f64>> {
        let (a, b) = if self.column_major { (b, a) } else { (a, b) };
        self.inner.time(a, b, c, self.batch, warmup, iters)
    }

    /// [`Plan::run`] on untyped matrices ([`Backend::upload`]'s), for callers that hold
    /// [`crate::AnyMatrix`] data.
    pub fn run_data(&self, a: &DeviceData, b: &DeviceData, c: &mut DeviceData) -> Result<()> {
        let (a, b) = if self.column_major { (b, a) } else { (a, b) };
        self.inner.run(a, b, c, self.batch)
    }

    /// The kernel the plan runs.
    pub fn kernel(&self) -> &'static KernelSpec {
        self.inner.kernel()
    }

    /// The product it runs, as asked.
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// Whether its matrices are stored column-major ([`PlanBuilder::column_major`]).
    pub fn column_major(&self) -> bool {
        self.column_major
    }

    /// α and β.
    pub fn scale(&self) -> Scale {
        self.inner.scale()
    }

    /// The batch each run computes ([`Batch::one`] unless [`PlanBuilder::batch`] set one).
    pub fn batch(&self) -> Batch {
        self.batch
    }

    /// Whether each run is one launch for the whole batch ([`PlanBuilder::batch`] says when)
    /// rather than one per product.
    pub fn one_launch(&self) -> bool {
        self.inner.one_launch()
    }

    /// The tiling it runs with, when not the kernel's registry default.
    pub fn tiling(&self) -> Option<Tiling> {
        self.tiling
    }

    /// What the choice of kernel noted (a tune table that was skipped, ...).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The backend it runs on.
    pub fn backend(&self) -> &'b dyn Backend {
        self.backend
    }

    /// The product the backend runs: [`Plan::problem`], or for column-major storage its
    /// row-major transpose.
    pub(super) fn inner_problem(&self) -> &Problem {
        self.inner.problem()
    }

    /// The shapes of A and B as [`Plan::run`] takes them.
    pub(super) fn stored_operands(&self) -> ((usize, usize), (usize, usize)) {
        let p = self.inner.problem();
        if self.column_major {
            (p.b_stored(), p.a_stored())
        } else {
            (p.a_stored(), p.b_stored())
        }
    }

    /// The shape of C as [`Plan::run`] takes it.
    pub(super) fn c_shape(&self) -> (usize, usize) {
        let p = self.inner.problem();
        (p.m, p.n)
    }
}

impl<'b> PlanBuilder<'b> {
    /// The kernel: a registry name, a seed alias or `auto` (the default: the same choice as
    /// [`crate::Gemm`]'s and the CLI's).
    pub fn kernel(mut self, name: &str) -> Self {
        self.kernel = name.to_string();
        self
    }

    /// A SIMT-ladder kernel's tiling instead of its tuned or registry one.
    pub fn tiling(mut self, tiling: Tiling) -> Self {
        self.tiling = Some(tiling);
        self
    }

    /// The tile of the seed kernels that take one.
    pub fn tile(mut self, tile: u32) -> Self {
        self.tile = Some(tile);
        self
    }

    /// α (default 1). For u32 C a whole number in u32's range.
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.scale.alpha = alpha;
        self
    }

    /// β (default 0: C's old contents are not read). For u32 C a whole number in u32's range.
    pub fn beta(mut self, beta: f64) -> Self {
        self.scale.beta = beta;
        self
    }

    /// A strided batch of `count` products (cuBLAS's `gemmStridedBatched`): A, B and C are
    /// buffers of matrices `stride_a`, `stride_b`, `stride_c` elements apart ([`Batch`]; a
    /// `DeviceMatrix` of any shape with enough elements; a stride of 0 shares the operand). On
    /// CUDA the batch is one launch where the kernel has a batched build (multistage,
    /// multistage-raster, the wgmma kernels but wgmma-cluster; `auto` picks among them), the
    /// strides are 16-byte multiples, α = 1 and β = 0, and a TMA kernel needs no staged copy;
    /// otherwise one launch per product, in order on the stream.
    pub fn batch(mut self, batch: Batch) -> Self {
        self.batch = Some(batch);
        self
    }

    /// Column-major storage (BLAS's and Fortran's): A, B and C are column-major, as cuBLAS
    /// takes them. Run as the row-major Cᵀ = op(B)ᵀ·op(A)ᵀ, which is the same bytes: no copy,
    /// no other kernel. A column-major r×c matrix is the row-major c×r [`Matrix`] holding the
    /// same elements (its transpose): upload it as that.
    pub fn column_major(mut self, yes: bool) -> Self {
        self.column_major = yes;
        self
    }

    /// `count` products whose matrices follow each other without gaps ([`Batch::contiguous`]).
    pub fn batch_count(mut self, count: usize) -> Self {
        self.batch = Some(Batch::contiguous(count, &self.problem));
        self
    }

    /// Chooses the kernel, compiles it and makes its workspaces.
    pub fn build(self) -> Result<Plan<'b>> {
        let asked = self.problem;
        let batch = self.batch.unwrap_or(Batch::one(&asked));
        // Column-major C = op(A)·op(B) is row-major Cᵀ = op(B)ᵀ·op(A)ᵀ over the same buffers.
        let (problem, batch) = if self.column_major {
            let p = Problem {
                m: asked.n,
                n: asked.m,
                op_a: asked.op_b,
                op_b: asked.op_a,
                ..asked
            };
            let b = Batch {
                stride_a: batch.stride_b,
                stride_b: batch.stride_a,
                ..batch
            };
            (p, b)
        } else {
            (asked, batch)
        };
        let p = &problem;
        batch.check(p)?;
        let choice = if self.kernel.eq_ignore_ascii_case("auto") {
            dispatch::auto_batched(self.backend, p, batch.count)?
        } else {
            dispatch::choose(&self.kernel, self.backend, p.dtype, Some(p))?
        };
        let tiling = self.tiling.or(choice.tiling);
        let opts = RunOptions {
            tile: self.tile,
            tiling,
        };
        let inner = self
            .backend
            .plan(choice.kernel, p, opts, self.scale, batch)?;
        Ok(Plan {
            backend: self.backend,
            inner,
            problem: asked,
            column_major: self.column_major,
            batch,
            tiling,
            notes: choice.notes,
            views: Default::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::cpu::reference;
    use crate::dtype::DType;
    use crate::matrix::{AnyMatrix, Init};
    use crate::problem::{COut, Op};
    use crate::CpuBackend;
    use half::bf16;

    fn random<T: Element>(rows: usize, cols: usize, seed: u64) -> Matrix<T> {
        let m = AnyMatrix::generate(T::STORAGE, rows, cols, Init::Random { seed }).unwrap();
        Matrix::<T>::try_from(m).ok().unwrap()
    }

    /// α and β against the reference product, on every op pair, for f32, u32 (wrapping,
    /// integer α and β) and bf16 with bf16 C (rounded once); repeated runs accumulate.
    #[test]
    fn alpha_beta_on_the_cpu() {
        let cpu = CpuBackend;
        let (m, n, k) = (5, 7, 9);
        for (op_a, op_b) in [
            (Op::N, Op::N),
            (Op::T, Op::N),
            (Op::N, Op::T),
            (Op::T, Op::T),
        ] {
            let p = Problem::new(m, n, k, DType::F32).with_ops(op_a, op_b);
            let (a, b) = (
                random::<f32>(p.a_stored().0, p.a_stored().1, 1),
                random::<f32>(p.b_stored().0, p.b_stored().1, 2),
            );
            let c0 = random::<f32>(m, n, 3);
            let (da, db) = (
                DeviceMatrix::upload(&cpu, &a).unwrap(),
                DeviceMatrix::upload(&cpu, &b).unwrap(),
            );
            let mut dc = DeviceMatrix::upload(&cpu, &c0).unwrap();
            let plan = Plan::builder(&cpu, p)
                .kernel("reference")
                .alpha(0.5)
                .beta(-2.0)
                .build()
                .unwrap();
            plan.run(&da, &db, &mut dc).unwrap();
            let want = reference::matmul(&p, &AnyMatrix::from(a), &AnyMatrix::from(b)).unwrap();
            let got = dc.download(&cpu).unwrap();
            for ((g, w), c) in got.data.iter().zip(want.to_f64_vec()).zip(&c0.data) {
                let expect = 0.5 * w - 2.0 * *c as f64;
                assert!(
                    (*g as f64 - expect).abs() <= 1e-5 * (1.0 + expect.abs()),
                    "{g} vs {expect}"
                );
            }
        }
        // u32: wrapping, integer α and β.
        let p = Problem::new(4, 3, 6, DType::U32);
        let (a, b, c0) = (
            random::<u32>(4, 6, 4),
            random::<u32>(6, 3, 5),
            random::<u32>(4, 3, 6),
        );
        let mut dc = DeviceMatrix::upload(&cpu, &c0).unwrap();
        let plan = Plan::builder(&cpu, p)
            .alpha(3.0)
            .beta(4_000_000_000.0)
            .build()
            .unwrap();
        plan.run(
            &DeviceMatrix::upload(&cpu, &a).unwrap(),
            &DeviceMatrix::upload(&cpu, &b).unwrap(),
            &mut dc,
        )
        .unwrap();
        let got = dc.download(&cpu).unwrap();
        for i in 0..4 {
            for j in 0..3 {
                let ab = (0..6).fold(0u32, |s, l| {
                    s.wrapping_add(a.data[i * 6 + l].wrapping_mul(b.data[l * 3 + j]))
                });
                let want = ab
                    .wrapping_mul(3)
                    .wrapping_add(c0.data[i * 3 + j].wrapping_mul(4_000_000_000));
                assert_eq!(got.data[i * 3 + j], want);
            }
        }
        // bf16 with bf16 C: α·(f32 product) + β·C rounded once.
        let p = Problem::new(3, 4, 5, DType::Bf16).with_c(COut::Input);
        let (a, b, c0) = (
            random::<bf16>(3, 5, 7),
            random::<bf16>(5, 4, 8),
            random::<bf16>(3, 4, 9),
        );
        let mut dc = DeviceMatrix::upload(&cpu, &c0).unwrap();
        let plan = Plan::builder(&cpu, p).alpha(2.0).beta(1.0).build().unwrap();
        plan.run(
            &DeviceMatrix::upload(&cpu, &a).unwrap(),
            &DeviceMatrix::upload(&cpu, &b).unwrap(),
            &mut dc,
        )
        .unwrap();
        let wide = p.with_c(COut::Accumulator);
        let want = reference::matmul(&wide, &AnyMatrix::from(a), &AnyMatrix::from(b)).unwrap();
        let mut expect = AnyMatrix::from(c0);
        Scale {
            alpha: 2.0,
            beta: 1.0,
        }
        .apply_host(&want, &mut expect)
        .unwrap();
        assert_eq!(AnyMatrix::from(dc.download(&cpu).unwrap()), expect);
    }

    /// Column-major storage: the column-major product of column-major A and B (each held as the
    /// row-major transpose), every op pair, against the reference on the row-major copies.
    #[test]
    fn column_major_plans_on_the_cpu() {
        let cpu = CpuBackend;
        let (m, n, k) = (5, 3, 4);
        for (op_a, op_b) in [
            (Op::N, Op::N),
            (Op::T, Op::N),
            (Op::N, Op::T),
            (Op::T, Op::T),
        ] {
            let p = Problem::new(m, n, k, DType::F32).with_ops(op_a, op_b);
            // Row-major op-stored A and B, and their column-major buffers (the transposes).
            let (a, b) = (
                random::<f32>(p.a_stored().0, p.a_stored().1, 21),
                random::<f32>(p.b_stored().0, p.b_stored().1, 22),
            );
            let t = |x: &Matrix<f32>| {
                Matrix::from_fn(x.cols, x.rows, |i, j| x.data[j * x.cols + i]).unwrap()
            };
            let plan = Plan::builder(&cpu, p).column_major(true).build().unwrap();
            assert!(plan.column_major());
            assert_eq!(plan.problem(), &p);
            let mut c = DeviceMatrix::<f32>::zeros(&cpu, n, m).unwrap();
            plan.run(
                &DeviceMatrix::upload(&cpu, &t(&a)).unwrap(),
                &DeviceMatrix::upload(&cpu, &t(&b)).unwrap(),
                &mut c,
            )
            .unwrap();
            let want = reference::matmul(&p, &AnyMatrix::from(a), &AnyMatrix::from(b)).unwrap();
            let want = t(want.as_f32().unwrap());
            let got = c.download(&cpu).unwrap();
            for (g, w) in got.data.iter().zip(&want.data) {
                assert!(
                    (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                    "{op_a:?}{op_b:?}: {g} vs {w}"
                );
            }
        }
    }

    /// A given-up matrix goes to the CPU backend and back without a copy (the same buffer), and
    /// a matrix of another holder is not taken out as a host matrix.
    #[test]
    fn owned_uploads_move_the_matrix() {
        let cpu = CpuBackend;
        let m = AnyMatrix::from(random::<f32>(3, 4, 31));
        let want = m.clone();
        let ptr = m.as_f32().unwrap().data.as_ptr();
        let d = cpu.upload_owned(m).unwrap();
        let back = cpu.download_owned(d).unwrap();
        assert_eq!(back, want);
        assert_eq!(back.as_f32().unwrap().data.as_ptr(), ptr);
        let d = DeviceData::host(want.clone(), 7);
        assert!(d.into_host(0).is_err());
    }

    /// With β = 0, C's old contents (NaN here) are not read.
    #[test]
    fn beta_zero_ignores_c() {
        let cpu = CpuBackend;
        let p = Problem::new(2, 2, 2, DType::F32);
        let one = DeviceMatrix::upload(&cpu, &Matrix::<f32>::filled(2, 2, 1.0).unwrap()).unwrap();
        let mut c =
            DeviceMatrix::upload(&cpu, &Matrix::<f32>::filled(2, 2, f32::NAN).unwrap()).unwrap();
        let plan = Plan::builder(&cpu, p).alpha(3.0).build().unwrap();
        plan.run(&one, &one, &mut c).unwrap();
        assert_eq!(c.download(&cpu).unwrap().data, [6.0; 4]);
    }

    /// Bad operands and scalars are errors naming what is wrong, before any work.
    #[test]
    fn bad_plans_and_operands_are_errors() {
        let cpu = CpuBackend;
        let p = Problem::new(2, 3, 4, DType::F32);
        let plan = Plan::builder(&cpu, p).build().unwrap();
        let a = DeviceMatrix::<f32>::zeros(&cpu, 2, 4).unwrap();
        let b = DeviceMatrix::<f32>::zeros(&cpu, 4, 3).unwrap();
        let mut wrong = DeviceMatrix::<f32>::zeros(&cpu, 3, 2).unwrap();
        let e = plan.run(&a, &b, &mut wrong).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { what: "C", .. }), "{e}");
        let e = plan
            .run(&b, &a, &mut DeviceMatrix::<f32>::zeros(&cpu, 2, 3).unwrap())
            .unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { what: "A", .. }), "{e}");
        let mut c_u32 = DeviceMatrix::<u32>::zeros(&cpu, 2, 3).unwrap();
        assert!(plan.run(&a, &b, &mut c_u32).is_err());
        let u = Problem::new(2, 3, 4, DType::U32);
        let e = Plan::builder(&cpu, u).alpha(1.5).build().err().unwrap();
        assert!(e.to_string().contains("alpha = 1.5"), "{e}");
        let e = Plan::builder(&cpu, p).beta(f64::NAN).build().err().unwrap();
        assert!(e.to_string().contains("beta"), "{e}");
        assert!(Plan::builder(&cpu, p)
            .kernel("no-such-kernel")
            .build()
            .is_err());
    }

    /// A strided batch with gaps between the matrices and B shared by every product (stride
    /// 0), with α and β, against each product computed alone; and the batch's errors.
    #[test]
    fn strided_batches_on_the_cpu() {
        let cpu = CpuBackend;
        let (m, n, k, count) = (3, 4, 5, 3);
        let p = Problem::new(m, n, k, DType::F32).with_ops(Op::T, Op::N);
        let batch = Batch {
            count,
            stride_a: k * m + 2,
            stride_b: 0,
            stride_c: m * n + 1,
        };
        let a = random::<f32>(1, batch.need(batch.stride_a, k * m).unwrap(), 11);
        let b = random::<f32>(k, n, 12);
        let c0 = random::<f32>(1, batch.need(batch.stride_c, m * n).unwrap(), 13);
        let (da, db) = (
            DeviceMatrix::upload(&cpu, &a).unwrap(),
            DeviceMatrix::upload(&cpu, &b).unwrap(),
        );
        let mut dc = DeviceMatrix::upload(&cpu, &c0).unwrap();
        let plan = Plan::builder(&cpu, p)
            .batch(batch)
            .alpha(2.0)
            .beta(0.5)
            .build()
            .unwrap();
        assert_eq!(plan.batch(), batch);
        plan.run(&da, &db, &mut dc).unwrap();
        let got = dc.download(&cpu).unwrap();
        for i in 0..count {
            let ai =
                Matrix::from_vec(k, m, a.data[i * batch.stride_a..][..k * m].to_vec()).unwrap();
            let want =
                reference::matmul(&p, &AnyMatrix::from(ai), &AnyMatrix::from(b.clone())).unwrap();
            for (j, w) in want.to_f64_vec().into_iter().enumerate() {
                let at = i * batch.stride_c + j;
                let expect = 2.0 * w + 0.5 * c0.data[at] as f64;
                assert!(
                    (got.data[at] as f64 - expect).abs() <= 1e-5 * (1.0 + expect.abs()),
                    "{i} {j}"
                );
            }
            // The gap after each C is untouched.
            if i + 1 < count {
                let gap = i * batch.stride_c + m * n;
                assert_eq!(got.data[gap], c0.data[gap]);
            }
        }
        // Overlapping Cs, too short a buffer, an empty batch.
        let overlap = Batch {
            stride_c: m * n - 1,
            ..batch
        };
        assert!(Plan::builder(&cpu, p)
            .batch(overlap)
            .build()
            .err()
            .unwrap()
            .to_string()
            .contains("stride_c"));
        let mut short = DeviceMatrix::<f32>::zeros(&cpu, 1, m * n).unwrap();
        let e = plan.run(&da, &db, &mut short).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { what: "C", .. }), "{e}");
        assert!(Plan::builder(&cpu, p)
            .batch(Batch { count: 0, ..batch })
            .build()
            .is_err());
        // batch_count: contiguous matrices, each product the one-at-a-time result.
        let p = Problem::new(2, 2, 2, DType::U32);
        let plan = Plan::builder(&cpu, p).batch_count(2).build().unwrap();
        let a = DeviceMatrix::upload(
            &cpu,
            &Matrix::<u32>::from_vec(4, 2, vec![1, 2, 3, 4, 5, 6, 7, 8]).unwrap(),
        )
        .unwrap();
        let b = DeviceMatrix::upload(
            &cpu,
            &Matrix::<u32>::from_vec(4, 2, vec![1, 0, 0, 1, 2, 0, 0, 2]).unwrap(),
        )
        .unwrap();
        let mut c = DeviceMatrix::<u32>::zeros(&cpu, 4, 2).unwrap();
        plan.run(&a, &b, &mut c).unwrap();
        assert_eq!(c.download(&cpu).unwrap().data, [1, 2, 3, 4, 10, 12, 14, 16]);
    }
}
