//! Comparing a result with the CPU reference: exact for u32, a k-scaled tolerance for floats.

use serde::Serialize;

use crate::dtype::DType;
use crate::matrix::AnyMatrix;
use crate::problem::Problem;

/// The outcome of one comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub passed: bool,
    /// ‖C − R‖_F / ‖R‖_F (0 for an exact match; NaN or ∞ if C holds NaN/∞).
    pub rel_frobenius: f64,
    /// Largest |C − R| over all elements, and where.
    pub max_abs_err: f64,
    pub worst: Option<(usize, usize)>,
    /// Elements that differ beyond the tolerance (u32: that differ at all).
    pub mismatches: usize,
    /// The relative Frobenius bound applied (0 for exact).
    pub tolerance: f64,
}

/// Relative Frobenius tolerance for a float product of depth k: a few unit roundoffs of the
/// input type, growing like √k for random-sign data (and never below 1e-6 for f32 accumulation).
pub fn tolerance(problem: &Problem) -> f64 {
    if problem.dtype == DType::U32 {
        return 0.0;
    }
    let u = problem.dtype.unit_roundoff().max(f32::EPSILON as f64 / 2.0);
    let input_rounding = match problem.dtype {
        DType::F32 => 0.0,
        _ => 2.0 * u,
    };
    input_rounding + 4.0 * (f32::EPSILON as f64) * (problem.k as f64).sqrt().max(1.0)
}

/// Compares `c` with `reference`; NaN anywhere (e.g. an unwritten poisoned element) fails.
pub fn compare(problem: &Problem, c: &AnyMatrix, reference: &AnyMatrix) -> Verdict {
    let tol = tolerance(problem);
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

/// |x − r| > bound, with NaN counted as exceeding (a poisoned element must never pass).
fn exceeds(x: f64, r: f64, bound: f64) -> bool {
    let d = (x - r).abs();
    d.is_nan() || d > bound
}
