//! Comparing a result with the CPU reference: exact for u32, a k-scaled tolerance for floats.

use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::error::Error;
use crate::matrix::AnyMatrix;
use crate::problem::{Op, Problem};

/// The outcome of one comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// Shapes and types agree, `rel_frobenius` ≤ `tolerance`, and no element mismatches.
    pub passed: bool,
    /// ‖C − R‖_F / ‖R‖_F (0 for an exact match; NaN or ∞ if C holds NaN/∞).
    pub rel_frobenius: f64,
    /// Largest |C − R| over all elements, and where.
    pub max_abs_err: f64,
    /// (row, column) of the largest difference; None when C equals the reference or the shapes
    /// differ.
    pub worst: Option<(usize, usize)>,
    /// Elements that differ beyond the tolerance (u32: that differ at all).
    pub mismatches: usize,
    /// The relative Frobenius bound applied (0 for exact).
    pub tolerance: f64,
}

/// How far a result is from the exact product, element by element, in units of a rounding:
/// e_ij = |C_ij − R_ij| / (|A|·|B|)_ij / u, with R the product in f64, (|A|·|B|)_ij =
/// Σ_l |a_il|·|b_lj| (both from [`crate::cpu::reference::products_f64`]) and u the unit roundoff
/// of C's type ([`ErrorStats::unit_log2`]). Dividing by |A|·|B| rather than |R| makes the figure
/// independent of cancellation: a dot product computed in C's type with any summation order errs
/// by at most about k·u·(|A|·|B|)_ij, so e ≤ k; an f32 GEMM shows a few u, TF32 (10-bit inputs)
/// about 2¹³ times more. u32 is exact: its error is 0 or `wrong` elements.
///
/// ```
/// use matmul::{cpu, verify::ErrorStats, AnyMatrix, DType, Init, Problem};
///
/// let p = Problem::square(64, DType::F32);
/// let a = AnyMatrix::generate(DType::F32, 64, 64, Init::Random { seed: 1 })?;
/// let b = AnyMatrix::generate(DType::F32, 64, 64, Init::Random { seed: 2 })?;
/// let (exact, size) = cpu::reference::products_f64(&p, &a, &b, None)?;
/// let c = cpu::reference::matmul(&p, &a, &b)?; // rounded once to f32: at most u/2 of |R|
/// let e = ErrorStats::measure(&p, &c.to_f64_vec(), &exact, &size);
/// assert_eq!((e.unit_log2, e.elements, e.wrong), (Some(-24), 64 * 64, 0));
/// assert!(e.max_u.unwrap() <= 0.5 && e.mean_u.unwrap() < e.max_u.unwrap());
/// # Ok::<(), matmul::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorStats {
    /// log₂ of the unit u: −24 for C in f32 (f32, tf32, and bf16/f16 inputs with f32 C), −8
    /// for C in bf16, −11 for C in f16; None for u32 (exact).
    pub unit_log2: Option<i32>,
    /// The largest e_ij over the measured elements; None when one is not finite (`wrong` > 0).
    /// u32: 0 when every element is exact, else None.
    pub max_u: Option<f64>,
    /// The mean e_ij over the measured elements; None as for `max_u`.
    pub mean_u: Option<f64>,
    /// Elements measured (all of C, or the sampled verification's positions).
    pub elements: usize,
    /// Floats: elements whose error is not finite (NaN or ±∞ in C, or C_ij ≠ 0 where
    /// (|A|·|B|)_ij = 0). u32: elements that differ from the exact result.
    pub wrong: usize,
}

impl ErrorStats {
    /// log₂ of the unit the error of `problem`'s result is counted in: the unit roundoff of C's
    /// type, the precision the result is delivered in (f32: −24, bf16: −8, f16: −11); None for
    /// u32.
    pub fn unit_log2(problem: &Problem) -> Option<i32> {
        match problem.c_dtype() {
            DType::U32 => None,
            DType::Bf16 => Some(-8),
            DType::F16 => Some(-11),
            DType::F32 | DType::Tf32 => Some(-24),
        }
    }

    /// The error of a float result: `c`, `exact` and `size` hold C, R and |A|·|B| at the same
    /// elements (the shortest length counts). For u32 use [`ErrorStats::exact`].
    pub fn measure(problem: &Problem, c: &[f64], exact: &[f64], size: &[f64]) -> ErrorStats {
        let unit_log2 = Self::unit_log2(problem);
        let u = 2f64.powi(unit_log2.unwrap_or(0));
        let (mut max, mut sum, mut elements, mut wrong) = (0.0f64, 0.0f64, 0usize, 0usize);
        for ((&x, &r), &s) in c.iter().zip(exact).zip(size) {
            elements += 1;
            let d = (x - r).abs();
            let e = if d == 0.0 { 0.0 } else { d / s / u };
            if e.is_finite() {
                max = max.max(e);
                sum += e;
            } else {
                wrong += 1;
            }
        }
        let finite = (wrong == 0).then_some(());
        ErrorStats {
            unit_log2,
            max_u: finite.map(|_| max),
            mean_u: finite.map(|_| {
                if elements > 0 {
                    sum / elements as f64
                } else {
                    0.0
                }
            }),
            elements,
            wrong,
        }
    }

    /// The error of an exact (u32) result of which `wrong` of `elements` differ.
    pub fn exact(wrong: usize, elements: usize) -> ErrorStats {
        let ok = (wrong == 0).then_some(0.0);
        ErrorStats {
            unit_log2: None,
            max_u: ok,
            mean_u: ok,
            elements,
            wrong,
        }
    }
}

/// The two parts of the float tolerance, both relative: rounding the inputs to the kernel's
/// input type (2u: each product a·b gains at most two roundings), and accumulating in f32 (a few
/// ε growing like √k for random-sign data) plus, for C in bf16/f16, rounding each element to C's
/// type (2u of C's type: the kernel's f32 sum and the reference's may round to neighbours).
fn tolerance_parts(problem: &Problem) -> (f64, f64) {
    if problem.dtype == DType::U32 {
        return (0.0, 0.0);
    }
    let u = problem.dtype.unit_roundoff().max(f32::EPSILON as f64 / 2.0);
    let input_rounding = match problem.dtype {
        DType::F32 => 0.0,
        _ => 2.0 * u,
    };
    let accumulation = 4.0 * (f32::EPSILON as f64) * (problem.k as f64).sqrt().max(1.0);
    let output_rounding = if problem.types().narrow_c() {
        2.0 * problem.c_dtype().unit_roundoff()
    } else {
        0.0
    };
    (input_rounding, accumulation + output_rounding)
}

/// Relative Frobenius tolerance for a float product of depth k: a few unit roundoffs of the
/// input type, growing like √k for random-sign data (and never below 1e-6 for f32 accumulation).
pub fn tolerance(problem: &Problem) -> f64 {
    let (input, accumulation) = tolerance_parts(problem);
    input + accumulation
}

/// √(Σ_ijp (op(A)_ip · op(B)_pj)²) = √(Σ_p ‖column p of op(A)‖² · ‖row p of op(B)‖²), in
/// O(k·(m + n)): the size of the products that C sums. Rounding the inputs (tf32 rounds f32
/// operands to 10 mantissa bits inside the kernel) errs by about u times this, however much the
/// products cancel in C — for a 1×1 C of a long K, ‖C‖ can be far smaller.
pub fn product_norm(problem: &Problem, a: &AnyMatrix, b: &AnyMatrix) -> f64 {
    let mut col_a = vec![0.0f64; problem.k];
    let mut row_b = vec![0.0f64; problem.k];
    // Stored A is m×k (op N: p is the column) or k×m (op T: p is the row); B is k×n or n×k.
    let a_p_is_col = problem.op_a == Op::N;
    let b_p_is_col = problem.op_b == Op::T;
    for (m, sums, p_is_col) in [(a, &mut col_a, a_p_is_col), (b, &mut row_b, b_p_is_col)] {
        let cols = m.cols();
        for (idx, v) in m.to_f64_vec().into_iter().enumerate() {
            let p = if p_is_col { idx % cols } else { idx / cols };
            if let Some(s) = sums.get_mut(p) {
                *s += v * v;
            }
        }
    }
    col_a
        .iter()
        .zip(&row_b)
        .map(|(x, y)| x * y)
        .sum::<f64>()
        .sqrt()
}

/// Compares `c` with `reference`; NaN anywhere (e.g. an unwritten poisoned element) fails.
/// Without the inputs the input-rounding part of the tolerance is relative to ‖reference‖_F;
/// [`compare_inputs`] measures it against the products' size instead.
///
/// ```
/// use matmul::{cpu, verify, AnyMatrix, DType, Matrix, Problem};
///
/// let problem = Problem::new(2, 2, 3, DType::F32);
/// let a = AnyMatrix::from(Matrix::<f32>::from_fn(2, 3, |i, j| (i + j) as f32)?);
/// let b = AnyMatrix::from(Matrix::<f32>::from_fn(3, 2, |i, j| (i * j) as f32)?);
/// let reference = cpu::reference::matmul(&problem, &a, &b)?;
///
/// let ok = verify::compare(&problem, &reference, &reference);
/// assert!(ok.passed && ok.rel_frobenius == 0.0 && ok.worst.is_none());
///
/// let mut off = Matrix::<f32>::try_from(reference.clone())?;
/// off.data[3] += 1.0; // C[1][1] wrong
/// let bad = verify::compare(&problem, &AnyMatrix::from(off), &reference);
/// assert!(!bad.passed);
/// assert_eq!((bad.worst, bad.mismatches, bad.max_abs_err), (Some((1, 1)), 1, 1.0));
/// # Ok::<(), matmul::Error>(())
/// ```
pub fn compare(problem: &Problem, c: &AnyMatrix, reference: &AnyMatrix) -> Verdict {
    compare_scaled(problem, c, reference, None)
}

/// [`compare`] with the input-rounding part of the tolerance relative to [`product_norm`]: the
/// sound bound when a kernel rounds its inputs (tf32) and C cancels heavily (few, long dot
/// products), where a bound relative to ‖C‖ fails a correct kernel at random.
pub fn compare_inputs(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    c: &AnyMatrix,
    reference: &AnyMatrix,
) -> Verdict {
    compare_scaled(problem, c, reference, Some(product_norm(problem, a, b)))
}

fn compare_scaled(
    problem: &Problem,
    c: &AnyMatrix,
    reference: &AnyMatrix,
    products: Option<f64>,
) -> Verdict {
    let mut tol = tolerance(problem);
    let (mut diff2, mut ref2, mut max_abs, mut worst, mut mismatches) =
        (0.0f64, 0.0f64, 0.0f64, None, 0usize);
    let shapes_match = c.rows() == reference.rows()
        && c.cols() == reference.cols()
        && c.dtype() == reference.dtype();
    if !shapes_match {
        return Verdict {
            passed: false,
            rel_frobenius: f64::INFINITY,
            max_abs_err: f64::INFINITY,
            worst: None,
            mismatches: c.len().max(reference.len()),
            tolerance: tol,
        };
    }
    let cols = c.cols();
    let exact = problem.dtype == DType::U32;
    let (cv, rv) = (c.to_f64_vec(), reference.to_f64_vec());
    for (idx, (&x, &r)) in cv.iter().zip(&rv).enumerate() {
        let d = (x - r).abs();
        let d = if d.is_nan() { f64::INFINITY } else { d };
        if d > max_abs || worst.is_none() && d > 0.0 {
            max_abs = d;
            worst = Some((idx / cols.max(1), idx % cols.max(1)));
        }
        if exact && d != 0.0 {
            mismatches += 1;
        }
        diff2 += d * d;
        ref2 += r * r;
    }
    let rel = if ref2 > 0.0 {
        (diff2 / ref2).sqrt()
    } else if diff2 > 0.0 {
        f64::INFINITY
    } else {
        0.0
    };
    if let (Some(products), true) = (products, ref2 > 0.0) {
        // The same absolute budget, expressed relative to ‖reference‖_F.
        let (input, accumulation) = tolerance_parts(problem);
        tol = input * products.max(ref2.sqrt()) / ref2.sqrt() + accumulation;
    }
    if !exact {
        // Element-wise: an error far above the Frobenius budget at one element is a bug even
        // when the norm hides it (a single unwritten tile).
        let scale = (ref2 / (rv.len().max(1) as f64)).sqrt();
        mismatches = cv
            .iter()
            .zip(&rv)
            .filter(|(x, r)| exceeds(**x, **r, 16.0 * tol * scale.max(r.abs())))
            .count();
    }
    Verdict {
        passed: rel.is_finite() && rel <= tol && mismatches == 0,
        rel_frobenius: rel,
        max_abs_err: max_abs,
        worst,
        mismatches,
        tolerance: tol,
    }
}

/// Whether the reference can judge a kernel on these inputs: A, B and the reference C all
/// finite. Values beyond a dtype's range round to ±inf (f16's is 65504: `--init arange` at
/// 300×300 fills A up to 89999), and sums beyond C's type round to ±inf in the reference; then
/// every kernel would "differ from the reference" by ∞ and the fault is the input's. The error,
/// [`Error::OutOfRange`], names the operand, the dtype and its largest finite value. u32 wraps:
/// always in range.
///
/// ```
/// use matmul::{cpu, verify, AnyMatrix, DType, Init, Problem};
///
/// let problem = Problem::square(300, DType::F16);
/// let a = AnyMatrix::generate(DType::F16, 300, 300, Init::Arange { scale: 1 })?;
/// let b = AnyMatrix::generate(DType::F16, 300, 300, Init::Random { seed: 1 })?;
/// let reference = cpu::reference::matmul(&problem, &a, &b)?;
/// let e = verify::check_range(&problem, &a, &b, &reference).unwrap_err();
/// assert!(e.to_string().starts_with("the inputs are out of f16's range: A holds"));
/// # Ok::<(), matmul::Error>(())
/// ```
pub fn check_range(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    reference: &AnyMatrix,
) -> Result<(), Error> {
    if problem.dtype == DType::U32 {
        return Ok(());
    }
    let finite = |m: &AnyMatrix| m.to_f64_vec().iter().all(|v| v.is_finite());
    for (operand, m, dtype) in [
        ("A", a, problem.dtype),
        ("B", b, problem.dtype),
        ("C", reference, problem.c_dtype()),
    ] {
        if !finite(m) {
            return Err(Error::OutOfRange { operand, dtype });
        }
    }
    Ok(())
}

/// |x − r| > bound, with NaN counted as exceeding (a poisoned element must never pass).
fn exceeds(x: f64, r: f64, bound: f64) -> bool {
    let d = (x - r).abs();
    d.is_nan() || d > bound
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Matrix;

    fn f32s(rows: usize, cols: usize, v: &[f32]) -> AnyMatrix {
        AnyMatrix::F32(Matrix::from_vec(rows, cols, v.to_vec()).unwrap())
    }

    /// A 1×1 C of two nearly cancelling products: tf32's input rounding moves C by 2 % of itself,
    /// which is correct (within 2u of the products), and only `compare_inputs` can tell.
    #[test]
    fn input_rounding_is_judged_against_the_products() {
        let problem = Problem::new(1, 1, 2, DType::Tf32);
        let (a, b) = (f32s(1, 2, &[1.0, 1.0]), f32s(2, 1, &[1.0, -0.999]));
        let want = f32s(1, 1, &[0.001]);
        let tf32 = f32s(1, 1, &[1.0 - 0.999_023_4]); // B rounded to 10 mantissa bits
        let wrong = f32s(1, 1, &[0.01]);
        assert!((product_norm(&problem, &a, &b) - (1.0f64 + 0.998_001).sqrt()).abs() < 1e-6);
        assert!(!compare(&problem, &tf32, &want).passed);
        assert!(compare_inputs(&problem, &a, &b, &tf32, &want).passed);
        assert!(!compare_inputs(&problem, &a, &b, &wrong, &want).passed);
    }

    /// Inputs beyond f16's range, and sums beyond a 16-bit C, are the input's fault, named as
    /// such; in range, nothing is said.
    #[test]
    fn out_of_range_inputs_and_sums_are_named() {
        use crate::cpu::reference;
        use crate::matrix::Init;
        use crate::problem::COut;
        let gen = |d, n, scale| AnyMatrix::generate(d, n, n, Init::Arange { scale }).unwrap();
        let check = |p: &Problem, a: &AnyMatrix, b: &AnyMatrix| {
            let r = reference::matmul(p, a, b).unwrap();
            check_range(p, a, b, &r).map_err(|e| e.to_string())
        };
        // 300×300: A reaches 89999 and B 179998, beyond 65504.
        let p = Problem::square(300, DType::F16);
        let e = check(&p, &gen(DType::F16, 300, 1), &gen(DType::F16, 300, 2)).unwrap_err();
        assert_eq!(e, "the inputs are out of f16's range: A holds values that round to ±inf or NaN in f16 (the largest finite f16 is 65504); the reference is not finite, so the check cannot judge the kernel");
        // 100×100 fits f16, but its sums (~1e10) do not fit an f16 C; they fit an f32 C.
        let (a, b) = (gen(DType::F16, 100, 1), gen(DType::F16, 100, 2));
        let narrow = Problem::square(100, DType::F16).with_c(COut::Input);
        let e = check(&narrow, &a, &b).unwrap_err();
        assert!(
            e.starts_with("the inputs are too large for C in f16: "),
            "{e}"
        );
        assert!(check(&Problem::square(100, DType::F16), &a, &b).is_ok());
        // f32's range: 3.4028235e38.
        let big = AnyMatrix::F32(Matrix::from_vec(1, 1, vec![f32::MAX]).unwrap());
        let e = check(&Problem::square(1, DType::F32), &big, &big).unwrap_err();
        assert!(
            e.contains("(the largest finite f32 is 3.4028235e38)"),
            "{e}"
        );
        let u = gen(DType::U32, 300, 1);
        assert!(check(&Problem::square(300, DType::U32), &u, &u).is_ok());
    }

    #[test]
    fn product_norm_follows_the_ops() {
        // op(A) = [[1, 2]] stored transposed (2×1), op(B) = [[3], [4]] stored transposed (1×2).
        let problem = Problem::new(1, 1, 2, DType::F32).with_ops(Op::T, Op::T);
        let (a, b) = (f32s(2, 1, &[1.0, 2.0]), f32s(1, 2, &[3.0, 4.0]));
        assert!((product_norm(&problem, &a, &b) - (9.0f64 + 64.0).sqrt()).abs() < 1e-12);
    }
}
