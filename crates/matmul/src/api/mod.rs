//! The one-call API: [`gemm()`] for the common case and the [`Gemm`] builder for the rest (kernel,
//! backend, compute dtype, transposes, tiling, verification). Both take typed matrices and return
//! a typed C; the kernel choice is [`crate::dispatch`]'s, the same as the CLI's.

pub mod plan;
pub mod views;

use crate::backend::{Backend, RunOptions};
use crate::backends::BackendChoice;
use crate::cpu::reference;
use crate::dispatch;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use crate::matrix::{AnyMatrix, Matrix};
use crate::problem::{COut, Op, Precision, Problem};
use crate::registry::{BackendKind, KernelSpec, Tiling};
use crate::verify::{compare_inputs, Verdict};
use crate::view::{MatMut, MatRef};

/// C = A·B on the best backend (CUDA when a device is present, else the CPU) with the `auto`
/// kernel. C has the inputs' element type: u32 products wrap modulo 2^32; bf16 and f16 products
/// are summed in f32 and rounded once. Nothing is verified; see [`Gemm::verify`].
///
/// Each call opens the backend anew; to multiply many times on a GPU, open it once
/// ([`crate::open_backend`]) and pass it with [`Gemm::on`].
///
/// ```
/// let a = matmul::Matrix::<f32>::from_vec(2, 3, vec![1., 2., 3., 4., 5., 6.])?;
/// let b = matmul::Matrix::<f32>::from_vec(3, 2, vec![1., 0., 0., 1., 1., 1.])?;
/// let c = matmul::gemm(&a, &b)?;
/// assert_eq!(c.data, [4., 5., 10., 11.]);
/// # Ok::<(), matmul::Error>(())
/// ```
pub fn gemm<T: Element>(a: &Matrix<T>, b: &Matrix<T>) -> Result<Matrix<T>> {
    Gemm::new(a, b).run()
}

/// A product to run, configured step by step; [`Gemm::run`] runs it. By default: the `auto`
/// kernel on [`BackendChoice::Auto`], the inputs' own dtype, neither operand transposed, the
/// kernel's tuned or default tiling, no verification.
///
/// ```
/// use matmul::{BackendChoice, DType, Gemm, Matrix};
///
/// let a = Matrix::<f32>::from_fn(64, 32, |i, j| (i + j) as f32)?;
/// let b = Matrix::<f32>::from_fn(48, 32, |i, j| (i * j % 7) as f32)?; // stored n×k
/// let out = Gemm::new(&a, &b)
///     .transpose_b(true) // C = A·Bᵀ
///     .kernel("reference") // a registry name or seed alias, any case
///     .backend(BackendChoice::Cpu)
///     .verify(true)
///     .run_detailed()?;
/// assert_eq!(out.c.shape(), (64, 48));
/// assert_eq!(out.kernel.name, "cpu-reference");
/// assert!(out.verdict.is_some_and(|v| v.passed));
/// # Ok::<(), matmul::Error>(())
/// ```
#[derive(Clone)]
pub struct Gemm<'a, T> {
    a: MatRef<'a, T>,
    b: MatRef<'a, T>,
    kernel: String,
    backend: BackendChoice,
    on: Option<&'a dyn Backend>,
    dtype: Option<DType>,
    op_a: Op,
    op_b: Op,
    tiling: Option<Tiling>,
    tile: Option<u32>,
    verify: bool,
    autotune: bool,
    precision: Precision,
}

/// What [`Gemm::run_detailed`] returns: C and how it was computed.
#[derive(Debug, Clone)]
pub struct GemmOutput<T> {
    /// The product, m×n.
    pub c: Matrix<T>,
    /// The kernel that ran.
    pub kernel: &'static KernelSpec,
    /// The backend it ran on: its kind ...
    pub backend_kind: BackendKind,
    /// ... and its one-line description (device name and what matters about it).
    pub backend: String,
    /// The tiling it ran with, when it was not the kernel's registry default (a tune table's
    /// entry or [`Gemm::tiling`]).
    pub tiling: Option<Tiling>,
    /// The problem that ran.
    pub problem: Problem,
    /// The comparison with the CPU reference, when [`Gemm::verify`] asked for one (it passed:
    /// a failed comparison is an [`Error::Mismatch`]).
    pub verdict: Option<Verdict>,
    /// Things worth telling a user: why `auto` fell back to the CPU, a tune table that was
    /// skipped.
    pub notes: Vec<String>,
}

impl<'a, T: Element> Gemm<'a, T> {
    /// C = A·B with the defaults (see [`Gemm`]). A and B are borrowed: `&Matrix`, or a
    /// [`MatRef`] over any slice (a block of a bigger matrix, rows with gaps).
    pub fn new(a: impl Into<MatRef<'a, T>>, b: impl Into<MatRef<'a, T>>) -> Gemm<'a, T> {
        Gemm {
            a: a.into(),
            b: b.into(),
            kernel: "auto".to_string(),
            backend: BackendChoice::Auto,
            on: None,
            dtype: None,
            op_a: Op::N,
            op_b: Op::N,
            tiling: None,
            tile: None,
            verify: false,
            autotune: false,
            precision: Precision::Accurate,
        }
    }

    /// The kernel: a registry name (`matmul list`), a seed alias (`TILING`, `ELE`, ...; any case)
    /// or `auto` (the default). A named kernel decides the backend when none is given.
    pub fn kernel(mut self, name: &str) -> Self {
        self.kernel = name.to_string();
        self
    }

    /// Which backend to open: `Auto` (the default: CUDA when a device is present, else the CPU),
    /// `Cpu` or `Cuda`. A named kernel of the other backend is an [`Error::Invalid`].
    pub fn backend(mut self, choice: BackendChoice) -> Self {
        self.backend = choice;
        self
    }

    /// Runs on `backend`, already open, instead of opening one per call (opening CUDA creates a
    /// context). Overrides [`Gemm::backend`].
    pub fn on(mut self, backend: &'a dyn Backend) -> Self {
        self.on = Some(backend);
        self
    }

    /// The compute dtype, where the storage allows a choice: `DType::Tf32` runs f32 matrices on
    /// the tensor cores with inputs rounded to tf32 (on CUDA; the CPU computes it exactly).
    /// Default: the storage's own dtype. A dtype of other storage is an [`Error::Invalid`].
    pub fn dtype(mut self, dtype: DType) -> Self {
        self.dtype = Some(dtype);
        self
    }

    /// How `auto` may compute an f32 product: [`Precision::Accurate`] (the default: SGEMM's
    /// accuracy and special values by the fastest method, FP32 emulated on Hopper's tf32
    /// tensor cores included) or [`Precision::Strict`] (IEEE FMA kernels only). A named kernel
    /// runs as named.
    pub fn precision(mut self, precision: Precision) -> Self {
        self.precision = precision;
        self
    }

    /// Uses A transposed: A is stored k×m and C = Aᵀ·B.
    pub fn transpose_a(mut self, transposed: bool) -> Self {
        self.op_a = Op::from_flag(transposed);
        self
    }

    /// Uses B transposed: B is stored n×k and C = A·Bᵀ.
    pub fn transpose_b(mut self, transposed: bool) -> Self {
        self.op_b = Op::from_flag(transposed);
        self
    }

    /// The tiling of a SIMT-ladder kernel (`"128x128x16/8x4/w64x32n2/s3".parse()?`), instead of
    /// its tuned or registry tiling. The kernel refuses one it cannot run.
    pub fn tiling(mut self, tiling: Tiling) -> Self {
        self.tiling = Some(tiling);
        self
    }

    /// The tile / threads per block edge of the seed kernels that take one (`tiled`,
    /// `single-block`, `naive`).
    pub fn tile(mut self, tile: u32) -> Self {
        self.tile = Some(tile);
        self
    }

    /// Compares C with the CPU reference after the run (f64 sums, or exact u32; slow for large
    /// products): exact for u32, a tolerance scaled to the dtype and k for floats. A difference
    /// beyond it is an [`Error::Mismatch`]; inputs or sums beyond the dtype's range, which leave the
    /// reference itself not finite, are an [`Error::OutOfRange`].
    pub fn verify(mut self, verify: bool) -> Self {
        self.verify = verify;
        self
    }

    /// With the `auto` kernel on CUDA: where the device's tune table has no measured choice for
    /// this product's shape bucket, time the cost model's top three candidates on it first
    /// (about 15 ms each once they are compiled) and keep the fastest, in the table of the
    /// device's class, for this and every later call ([`crate::dispatch::autotune`]), as
    /// Triton's autotune and cuBLASLt's algorithm search do. Off by default: without it, `auto`
    /// is deterministic (the model and the tables already on disk). No effect elsewhere.
    pub fn autotune(mut self, autotune: bool) -> Self {
        self.autotune = autotune;
        self
    }

    /// The problem this product is, with C of type `U`: the shapes from A, B and the transposes,
    /// checked against each other.
    fn problem_as<U: Element>(&self) -> Result<Problem> {
        let dtype = self.dtype.unwrap_or(T::STORAGE);
        let storage = dtype.storage();
        if storage != T::STORAGE {
            return Err(Error::Invalid(format!(
                "dtype {dtype} needs {storage} matrices; these hold {} elements",
                T::STORAGE
            )));
        }
        let c = COut::for_types(dtype, U::STORAGE)?;
        let problem =
            Problem::from_stored(dtype, self.a.shape(), self.b.shape(), self.op_a, self.op_b)?
                .with_c(c)
                .with_precision(self.precision);
        let bytes = problem.host_bytes()?;
        crate::ensure_host_memory(&problem, bytes)?;
        Ok(problem)
    }

    /// Runs the product: C, of the inputs' element type (see [`gemm()`]).
    pub fn run(&self) -> Result<Matrix<T>> {
        self.run_detailed().map(|out| out.c)
    }

    /// Runs the product with C of type `U`: the inputs' type, or the accumulator's (f32 for
    /// every floating dtype: bf16 and f16 inputs can give f32 C, unrounded).
    pub fn run_as<U: Element>(&self) -> Result<Matrix<U>> {
        self.run_detailed_as().map(|out| out.c)
    }

    /// Runs the product and says how: the kernel, the backend, the tiling, the verdict.
    pub fn run_detailed(&self) -> Result<GemmOutput<T>> {
        self.run_detailed_as()
    }

    /// [`Gemm::run_detailed`] with C of type `U` (see [`Gemm::run_as`]).
    pub fn run_detailed_as<U: Element>(&self) -> Result<GemmOutput<U>> {
        let setup = self.setup::<U>()?;
        let backend = setup.backend();
        let (problem, opts) = (setup.problem, setup.opts);
        // A backend with device memory (CUDA) runs a plan on A and B copied from the caller's
        // memory; the host backends, and a verified run (its reference needs the matrices),
        // take owned copies.
        let (c, verdict) = if backend.instance() != 0 && !self.verify {
            let dc = self.on_device(&setup)?;
            (backend.download(&dc)?, None)
        } else {
            self.on_host(&setup)?
        };
        let choice = setup.choice.clone();
        self.output(c, choice, backend, opts.tiling, problem, verdict)
    }

    /// Runs the product into `c`, the caller's m×n matrix of type `U` (a `&mut Matrix`, a block
    /// of a bigger one, or page-locked memory: [`crate::cuda::PinnedMatrix`]): no allocation of
    /// C on the host, and on CUDA one copy of C straight into `c`.
    ///
    /// ```
    /// use matmul::{Gemm, MatMut, Matrix};
    ///
    /// let a = Matrix::<f32>::from_vec(2, 2, vec![1., 2., 3., 4.])?;
    /// let mut big = vec![0f32; 2 * 3];
    /// // C into the first two columns of a 2x3 buffer.
    /// Gemm::new(&a, &a).run_into(MatMut::with_stride(&mut big, 2, 2, 3)?)?;
    /// assert_eq!(big, [7., 10., 0., 15., 22., 0.]);
    /// # Ok::<(), matmul::Error>(())
    /// ```
    pub fn run_into<'c, U: Element>(&self, c: impl Into<MatMut<'c, U>>) -> Result<()> {
        let c = c.into();
        let setup = self.setup::<U>()?;
        let p = setup.problem;
        if c.shape() != (p.m, p.n) {
            let (r, k) = c.shape();
            return Err(Error::ShapeMismatch {
                what: "C",
                expected: format!("{}x{}", p.m, p.n),
                found: format!("{r}x{k}"),
            });
        }
        let backend = setup.backend();
        if backend.instance() != 0 && !self.verify {
            let dc = self.on_device(&setup)?;
            return backend.download_into(&dc, c.into());
        }
        let (m, _) = self.on_host(&setup)?;
        crate::view::AnyMatMut::from(c).copy_from(&m)
    }

    /// The problem, the backend (opened here, or the caller's) and the kernel for a run with C
    /// of type `U`.
    fn setup<U: Element>(&self) -> Result<Setup<'a>> {
        let problem = self.problem_as::<U>()?;
        let (held, mut choice) = match self.on {
            Some(backend) => {
                let choice =
                    dispatch::choose(&self.kernel, backend, problem.dtype, Some(&problem))?;
                (Held::On(backend), choice)
            }
            None => {
                let sel =
                    dispatch::select(&self.kernel, self.backend, problem.dtype, Some(&problem))?;
                let choice = dispatch::Choice {
                    kernel: sel.kernel,
                    tiling: sel.tiling,
                    notes: sel.notes,
                };
                (Held::Opened(sel.backend), choice)
            }
        };
        let setup = |choice: dispatch::Choice, held| {
            let opts = RunOptions {
                tile: self.tile,
                tiling: self.tiling.or(choice.tiling),
            };
            Setup {
                held,
                choice,
                opts,
                problem,
            }
        };
        if self.autotune && self.kernel.eq_ignore_ascii_case("auto") {
            let notes = std::mem::take(&mut choice.notes);
            let probe = setup(choice, held);
            let mut tuned = dispatch::autotune(probe.backend(), &problem)?;
            tuned.notes.splice(0..0, notes);
            let mut seen = std::collections::HashSet::new();
            tuned.notes.retain(|n| seen.insert(n.clone()));
            return Ok(setup(tuned, probe.held));
        }
        Ok(setup(choice, held))
    }

    /// A plan of the product on a device backend, run on A and B copied from the caller's
    /// memory: C, on the device.
    fn on_device(&self, setup: &Setup<'_>) -> Result<crate::backends::DeviceData> {
        let backend = setup.backend();
        let problem = &setup.problem;
        let one = crate::backends::Batch::one(problem);
        let plan = backend.plan(
            setup.choice.kernel,
            problem,
            setup.opts,
            crate::backends::Scale::ONE,
            one,
        )?;
        let (da, db) = (
            backend.upload_ref(self.a.into())?,
            backend.upload_ref(self.b.into())?,
        );
        let mut dc = backend.alloc_zeroed(problem.c_dtype(), problem.m, problem.n)?;
        plan.run(&da, &db, &mut dc, one)?;
        Ok(dc)
    }

    /// The product on a host backend, or verified against the reference: C and the verdict.
    fn on_host(&self, setup: &Setup<'_>) -> Result<(AnyMatrix, Option<Verdict>)> {
        let backend = setup.backend();
        let (problem, opts, kernel) = (&setup.problem, setup.opts, setup.choice.kernel);
        if !self.verify {
            // The host backends read the views (the CPU's fast kernel in place for f32).
            let c = backend.run_ref(kernel, problem, self.a.into(), self.b.into(), opts)?;
            return Ok((c, None));
        }
        let a = self.a.to_matrix().into();
        let b = self.b.to_matrix().into();
        let c = backend.run(kernel, problem, &a, &b, opts)?;
        let want = reference::matmul(problem, &a, &b)?;
        crate::verify::check_range(problem, &a, &b, &want)?;
        let v = compare_inputs(problem, &a, &b, &c, &want);
        if !v.passed {
            return Err(Error::Mismatch {
                kernel: kernel.name.to_string(),
                problem: problem.to_string(),
                detail: format!(
                    "rel. Frobenius error {:.3e} (tolerance {:.1e}), max |error| {:.3e}, {} mismatches",
                    v.rel_frobenius, v.tolerance, v.max_abs_err, v.mismatches
                ),
            });
        }
        Ok((c, Some(v)))
    }

    /// C typed as `U`, with how it was computed.
    fn output<U: Element>(
        &self,
        c: AnyMatrix,
        choice: dispatch::Choice,
        backend: &dyn Backend,
        tiling: Option<Tiling>,
        problem: Problem,
        verdict: Option<Verdict>,
    ) -> Result<GemmOutput<U>> {
        let found = c.dtype();
        let c = Matrix::<U>::try_from(c).map_err(|_| Error::WrongOutput {
            kernel: choice.kernel.name.to_string(),
            expected: problem.c_dtype(),
            found,
        })?;
        Ok(GemmOutput {
            c,
            kernel: choice.kernel,
            backend_kind: backend.kind(),
            backend: backend.describe(),
            tiling,
            problem,
            verdict,
            notes: choice.notes,
        })
    }
}

/// What a [`Gemm`] run is set up with: the backend it opened (or the caller's), the kernel and
/// its options, the problem.
struct Setup<'x> {
    held: Held<'x>,
    choice: dispatch::Choice,
    opts: RunOptions,
    problem: Problem,
}

/// A backend a run opened, or the caller's.
enum Held<'x> {
    Opened(Box<dyn Backend>),
    On(&'x dyn Backend),
}

impl Setup<'_> {
    fn backend(&self) -> &dyn Backend {
        match &self.held {
            Held::Opened(b) => b.as_ref(),
            Held::On(b) => *b,
        }
    }
}

impl<T: Element> std::fmt::Debug for Gemm<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gemm")
            .field("a", &self.a.shape())
            .field("b", &self.b.shape())
            .field("kernel", &self.kernel)
            .field("backend", &self.on.map(|b| b.describe()))
            .field("choice", &self.backend)
            .field("dtype", &self.dtype)
            .field("ops", &(self.op_a, self.op_b))
            .field("tiling", &self.tiling)
            .field("tile", &self.tile)
            .field("verify", &self.verify)
            .field("autotune", &self.autotune)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::CpuBackend;
    use half::bf16;

    fn f32s(rows: usize, cols: usize, v: &[f32]) -> Matrix<f32> {
        Matrix::from_vec(rows, cols, v.to_vec()).unwrap()
    }

    /// `run_into` writes C into a block of the caller's buffer (gaps untouched), verified or
    /// not, and refuses a C of the wrong shape.
    #[test]
    fn run_into_writes_the_callers_block() {
        let cpu = CpuBackend;
        let a = f32s(3, 4, &[1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., 12.]);
        let b = f32s(4, 2, &[1., 0., 0., 1., 1., 1., 2., -1.]);
        let want = Gemm::new(&a, &b).on(&cpu).run().unwrap();
        for verify in [false, true] {
            let mut big = vec![7f32; 3 * 5];
            Gemm::new(&a, &b)
                .on(&cpu)
                .verify(verify)
                .run_into(MatMut::with_stride(&mut big, 3, 2, 5).unwrap())
                .unwrap();
            for i in 0..3 {
                assert_eq!(big[i * 5..i * 5 + 2], want.data[i * 2..i * 2 + 2]);
                assert_eq!(big[i * 5 + 2..i * 5 + 5], [7.; 3]);
            }
        }
        let mut c = Matrix::<f32>::zeros(3, 2).unwrap();
        Gemm::new(&a, &b).on(&cpu).run_into(&mut c).unwrap();
        assert_eq!(c, want);
        let mut wrong = Matrix::<f32>::zeros(2, 3).unwrap();
        let e = Gemm::new(&a, &b).on(&cpu).run_into(&mut wrong).unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { what: "C", .. }), "{e}");
    }

    #[test]
    fn every_dtype_and_layout_matches_the_reference() {
        let cpu = CpuBackend;
        for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
            let (m, n, k) = (17, 33, 65);
            let a = Matrix::from_fn(if ta { k } else { m }, if ta { m } else { k }, |i, j| {
                ((i * 7 + j * 3) % 11) as f32 - 5.0
            })
            .unwrap();
            let b = Matrix::from_fn(if tb { n } else { k }, if tb { k } else { n }, |i, j| {
                ((i * 5 + j) % 9) as f32 - 4.0
            })
            .unwrap();
            fn g<'a, T: Element>(
                a: &'a Matrix<T>,
                b: &'a Matrix<T>,
                ops: (bool, bool),
                cpu: &'a CpuBackend,
            ) -> Gemm<'a, T> {
                Gemm::new(a, b)
                    .transpose_a(ops.0)
                    .transpose_b(ops.1)
                    .on(cpu)
            }
            let ops = (ta, tb);
            let c = g(&a, &b, ops, &cpu).verify(true).run().unwrap();
            assert_eq!(c.shape(), (m, n));
            let tf32 = g(&a, &b, ops, &cpu)
                .dtype(DType::Tf32)
                .verify(true)
                .run()
                .unwrap();
            assert_eq!(tf32, c, "small integers are exact in tf32");
            let (ua, ub) = (a.map(|v| v as i32 as u32), b.map(|v| v as i32 as u32));
            let cu = g(&ua, &ub, ops, &cpu).verify(true).run().unwrap();
            assert_eq!(cu, c.map(|v| v as i64 as u32), "u32 wraps");
            let (ha, hb) = (a.map(bf16::from_f32), b.map(bf16::from_f32));
            let out = g(&ha, &hb, ops, &cpu)
                .verify(true)
                .run_detailed_as::<f32>()
                .unwrap();
            assert_eq!(out.c, c);
            assert_eq!(out.problem.c_dtype(), DType::F32);
            let narrow = g(&ha, &hb, ops, &cpu).run().unwrap();
            assert_eq!(narrow, c.map(bf16::from_f32));
        }
    }

    /// Blocks of bigger matrices (rows with gaps) multiply as their dense copies do, without
    /// being copied by the caller; a view that does not fit is an error.
    #[test]
    fn borrowed_blocks_multiply_as_their_copies() {
        let cpu = CpuBackend;
        let big = Matrix::from_fn(40, 50, |i, j| ((i * 13 + j * 7) % 17) as f32 - 8.0).unwrap();
        let view = MatRef::from(&big);
        let a = view.block(3, 5, 9, 21).unwrap();
        let b = view.block(10, 20, 21, 13).unwrap();
        // In place (the fast kernel on the views), and through the verified path's copies.
        let got = Gemm::new(a, b).on(&cpu).run().unwrap();
        let checked = Gemm::new(a, b).on(&cpu).verify(true).run().unwrap();
        let want = Gemm::new(&a.to_matrix(), &b.to_matrix())
            .on(&cpu)
            .run()
            .unwrap();
        assert_eq!(got, want);
        assert_eq!(checked, want);
        // Transposed views: op(A) = Aᵀ of a 21×9 block.
        let at = view.block(0, 0, 21, 9).unwrap();
        let got = Gemm::new(at, b).transpose_a(true).on(&cpu).run().unwrap();
        let want = Gemm::new(&at.to_matrix(), &b.to_matrix())
            .transpose_a(true)
            .on(&cpu)
            .verify(true)
            .run()
            .unwrap();
        assert_eq!(got, want);
        assert_eq!(got.shape(), (9, 13));
        assert!(view.block(35, 0, 6, 1).is_err());
        assert!(MatRef::new(&big.data[..10], 3, 4).is_err());
    }

    #[test]
    fn bad_calls_are_errors() {
        let a = f32s(2, 3, &[1., 2., 3., 4., 5., 6.]);
        let e = Gemm::new(&a, &a)
            .backend(BackendChoice::Cpu)
            .run()
            .unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { .. }), "{e}");
        let b = f32s(3, 2, &[1., 0., 0., 1., 1., 1.]);
        let cpu = || Gemm::new(&a, &b).backend(BackendChoice::Cpu);
        assert!(matches!(
            cpu().dtype(DType::U32).run(),
            Err(Error::Invalid(_))
        ));
        assert!(matches!(cpu().run_as::<u32>(), Err(Error::Invalid(_))));
        assert!(matches!(cpu().run_as::<bf16>(), Err(Error::Invalid(_))));
        assert!(matches!(
            cpu().kernel("tiled").run(),
            Err(Error::Invalid(_))
        ));
        assert!(matches!(
            cpu().kernel("no-such").run(),
            Err(Error::UnknownKernel(_))
        ));
        assert!(matches!(
            Gemm::new(&a, &b).on(&CpuBackend).kernel("TILING").run(),
            Err(Error::WrongBackend { .. })
        ));
        // Fields set by hand to disagree with the data: refused, not a panic.
        let bad = Matrix {
            rows: 3,
            cols: 2,
            data: vec![1.0f32; 5],
        };
        assert!(Gemm::new(&a, &bad).on(&CpuBackend).run().is_err());
    }

    #[test]
    fn empty_and_one_element_products() {
        let cpu = CpuBackend;
        let a = Matrix::<f32>::zeros(0, 4).unwrap();
        let b = Matrix::<f32>::zeros(4, 3).unwrap();
        // Every kernel's rule: m, n and k at least 1.
        let r = Gemm::new(&a, &b).on(&cpu).verify(true).run();
        assert!(matches!(r, Err(Error::Unsupported(_))), "{r:?}");
        let one = f32s(1, 1, &[3.0]);
        assert_eq!(Gemm::new(&one, &one).on(&cpu).run().unwrap().data, [9.0]);
        let out = Gemm::new(&one, &one).on(&cpu).run_detailed().unwrap();
        assert_eq!(
            (out.kernel.name, out.backend_kind, out.tiling),
            ("cpu", BackendKind::Cpu, None)
        );
    }
}
