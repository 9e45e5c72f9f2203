//! Verification before timing: the full CPU reference for small products, a sampled f64 check
//! (O(samples · k)) for large ones.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use matmul::matrix::SplitMix64;
use matmul::verify::ErrorStats;
use matmul::{AnyMatrix, Matrix, Problem};

/// A full check measures the error (`Verification::error`) over every element of C up to this
/// many (16 bytes each: the f64 product and |A|·|B|), over the sampled positions beyond (C of
/// 4096 × 4096 and more with k ≤ 8, at the default full-verification limit).
pub const FULL_ERROR_LIMIT: usize = 1 << 24;

/// How a result was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyMethod {
    /// Every element against `matmul::cpu::reference::matmul` with `matmul::verify::compare`.
    Full,
    /// Random entries, the whole last row and last column and the four corners, against an f64
    /// (floats) or exact wrapping (u32) dot product.
    Sampled,
}

/// The outcome of a verification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    /// Every element, or a sample.
    pub method: VerifyMethod,
    /// Whether no checked element mismatched and the relative error is within tolerance.
    pub passed: bool,
    /// ‖C − R‖_F / ‖R‖_F over the checked elements; `None` when infinite or NaN (C held NaN/∞, or
    /// R is zero and C is not).
    pub rel_error: Option<f64>,
    /// Largest |C − R| over the checked elements; `None` when infinite or NaN.
    pub max_abs_error: Option<f64>,
    /// (row, column) of the largest error, when there is one.
    pub worst: Option<(usize, usize)>,
    /// Checked elements beyond the element-wise bound (u32: that differ at all).
    pub mismatches: usize,
    /// Elements compared.
    pub checked: usize,
    /// Relative Frobenius tolerance applied (`matmul::verify::tolerance`; 0 = exact).
    pub tolerance: f64,
    /// The error against the exact product in units of C's rounding, over the checked elements
    /// (for a full check of more than [`FULL_ERROR_LIMIT`] elements, over the sampled
    /// positions): see `matmul::verify::ErrorStats`. None in reports written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorStats>,
}

impl Verification {
    /// A one-line summary: "ok (full, rel 1.2e-7)" or "FAILED (sampled, 3 mismatches, ...)".
    pub fn summary(&self) -> String {
        let rel = self.rel_error.map_or("inf".to_string(), |r| {
            if r == 0.0 {
                "0".to_string()
            } else {
                format!("{r:.1e}")
            }
        });
        let method = match self.method {
            VerifyMethod::Full => "full",
            VerifyMethod::Sampled => "sampled",
        };
        if self.passed {
            format!("ok ({method}, rel {rel})")
        } else {
            format!(
                "FAILED ({method}, rel {rel} > tol {:.1e}, {} of {} elements wrong{})",
                self.tolerance,
                self.mismatches,
                self.checked,
                self.worst
                    .map_or(String::new(), |(i, j)| format!(", worst at ({i}, {j})"))
            )
        }
    }
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// The expected result for one input pair, computed once and compared with every kernel's C.
#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// All of C as `matmul::cpu::reference::matmul` gives it, and for floats the exact product
    /// the error is measured against.
    Full {
        /// The reference C, in C's type.
        c: AnyMatrix,
        /// R and |A|·|B| in f64 (None for u32).
        basis: Option<ErrorBasis>,
    },
    /// C at [`sample_positions`], in f64 (floats) or exact wrapping u32 widened to f64.
    Sampled {
        /// The (row, column) of each checked element.
        positions: Vec<(usize, usize)>,
        /// The reference value at each position.
        values: Vec<f64>,
        /// (|A|·|B|) at each position (floats; empty for u32).
        sizes: Vec<f64>,
    },
}

/// The exact product R and |A|·|B| (`matmul::cpu::reference::products_f64`) at the elements a
/// full check measures the error over.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorBasis {
    /// None: every element of C, row-major; else these (row, column) positions.
    pub positions: Option<Vec<(usize, usize)>>,
    /// R at each element.
    pub exact: Vec<f64>,
    /// (|A|·|B|) at each element.
    pub sizes: Vec<f64>,
}

/// Random positions a full check of more than [`FULL_ERROR_LIMIT`] elements measures the error
/// at (besides the last row, last column and corners).
const ERROR_SAMPLES: usize = 4096;

impl ErrorBasis {
    /// The error of `c` at these elements.
    fn measure(&self, problem: &Problem, c: &AnyMatrix) -> ErrorStats {
        let got: Vec<f64> = match &self.positions {
            None if (c.rows(), c.cols()) == (problem.m, problem.n) => c.to_f64_vec(),
            None => vec![f64::NAN; self.exact.len()],
            Some(pos) => read_at(c, pos),
        };
        ErrorStats::measure(problem, &got, &self.exact, &self.sizes)
    }
}

/// C at `pos`; NaN outside C (which the error counts as wrong rather than panicking).
fn read_at(c: &AnyMatrix, pos: &[(usize, usize)]) -> Vec<f64> {
    pos.iter()
        .map(|&(i, j)| c.get(i, j).unwrap_or(f64::NAN))
        .collect()
}

impl Reference {
    /// The full reference when m·n·k ≤ `full_limit`, else the sampled one.
    pub fn compute(
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
        full_limit: u128,
        samples: usize,
        seed: u64,
    ) -> matmul::Result<Reference> {
        let work = problem.m as u128 * problem.n as u128 * problem.k as u128;
        if work <= full_limit {
            Reference::full(problem, a, b)
        } else {
            Reference::sampled(problem, a, b, samples, seed)
        }
    }

    /// All of C from the CPU reference: for floats its f64 sums (and |A|·|B|) computed once,
    /// C being those sums rounded as `matmul::cpu::reference::matmul` rounds them.
    pub fn full(problem: &Problem, a: &AnyMatrix, b: &AnyMatrix) -> matmul::Result<Reference> {
        use matmul::cpu::reference;
        if problem.dtype.is_integer() {
            let c = reference::matmul(problem, a, b)?;
            return Ok(Reference::Full { c, basis: None });
        }
        let (m, n) = (problem.m, problem.n);
        if m * n <= FULL_ERROR_LIMIT {
            let (exact, sizes) = reference::products_f64(problem, a, b, None)?;
            let rounded = exact.iter().map(|&v| v as f32).collect();
            let c = AnyMatrix::F32(Matrix::from_vec(m, n, rounded)?).into_c_dtype(problem);
            let basis = ErrorBasis {
                positions: None,
                exact,
                sizes,
            };
            return Ok(Reference::Full {
                c,
                basis: Some(basis),
            });
        }
        let c = reference::matmul(problem, a, b)?;
        let positions = sample_positions(m, n, ERROR_SAMPLES, 0);
        let (exact, sizes) = reference::products_f64(problem, a, b, Some(&positions))?;
        let basis = ErrorBasis {
            positions: Some(positions),
            exact,
            sizes,
        };
        Ok(Reference::Full {
            c,
            basis: Some(basis),
        })
    }

    /// Dot products at [`sample_positions`]; costs O((samples + m + n) · k).
    pub fn sampled(
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
        samples: usize,
        seed: u64,
    ) -> matmul::Result<Reference> {
        matmul::backend::check_inputs(problem, a, b)?;
        let positions = sample_positions(problem.m, problem.n, samples, seed);
        let (values, sizes) = match (a, b) {
            (AnyMatrix::U32(a), AnyMatrix::U32(b)) => {
                (dots_u32(problem, a, b, &positions), Vec::new())
            }
            _ => matmul::cpu::reference::products_f64(problem, a, b, Some(&positions))?,
        };
        Ok(Reference::Sampled {
            positions,
            values,
            sizes,
        })
    }

    /// Compares `c` with this reference: `matmul::verify::compare` for the full one; for the
    /// sampled one the same tolerance, relative Frobenius over the sampled elements and the same
    /// element-wise bound (with the sample's RMS standing in for the matrix's). Either way the
    /// error in units of C's rounding comes with it (`Verification::error`).
    pub fn check(&self, problem: &Problem, c: &AnyMatrix) -> Verification {
        match self {
            Reference::Full {
                c: reference,
                basis,
            } => {
                let v = matmul::verify::compare(problem, c, reference);
                let error = match basis {
                    Some(basis) => basis.measure(problem, c),
                    None => ErrorStats::exact(v.mismatches, reference.len()),
                };
                Verification {
                    method: VerifyMethod::Full,
                    passed: v.passed,
                    rel_error: finite(v.rel_frobenius),
                    max_abs_error: finite(v.max_abs_err),
                    worst: v.worst,
                    mismatches: v.mismatches,
                    checked: c.len(),
                    tolerance: v.tolerance,
                    error: Some(error),
                }
            }
            Reference::Sampled {
                positions,
                values,
                sizes,
            } => {
                let mut v = compare_sampled(problem, c, positions, values);
                if v.checked > 0 {
                    v.error = Some(if problem.dtype.is_integer() {
                        ErrorStats::exact(v.mismatches, v.checked)
                    } else {
                        ErrorStats::measure(problem, &read_at(c, positions), values, sizes)
                    });
                }
                v
            }
        }
    }
}

/// Checks `c` against the full CPU reference (`cpu::reference::matmul` + `verify::compare`).
pub fn full_check(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    c: &AnyMatrix,
) -> matmul::Result<Verification> {
    Ok(Reference::full(problem, a, b)?.check(problem, c))
}

/// Checks `c` at [`sample_positions`] against dot products computed here: f64 accumulation for
/// floats (tolerance as in `matmul::verify`), exact wrapping arithmetic for u32.
/// Costs O((samples + m + n) · k).
pub fn sampled_check(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    c: &AnyMatrix,
    samples: usize,
    seed: u64,
) -> matmul::Result<Verification> {
    Ok(Reference::sampled(problem, a, b, samples, seed)?.check(problem, c))
}

/// Verifies `c` fully when m·n·k ≤ `full_limit`, else by sampling.
pub fn verify(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    c: &AnyMatrix,
    full_limit: u128,
    samples: usize,
    seed: u64,
) -> matmul::Result<Verification> {
    Ok(Reference::compute(problem, a, b, full_limit, samples, seed)?.check(problem, c))
}

/// The positions a sampled check reads: `samples` random (i, j), the whole last row and last
/// column (where edge tiles go wrong) and the four corners; sorted, without duplicates.
pub fn sample_positions(m: usize, n: usize, samples: usize, seed: u64) -> Vec<(usize, usize)> {
    if m == 0 || n == 0 {
        return Vec::new();
    }
    let mut rng = SplitMix64::new(seed);
    let mut pos: Vec<(usize, usize)> = (0..samples)
        .map(|_| {
            (
                (rng.next_u64() % m as u64) as usize,
                (rng.next_u64() % n as u64) as usize,
            )
        })
        .collect();
    pos.extend((0..n).map(|j| (m - 1, j)));
    pos.extend((0..m).map(|i| (i, n - 1)));
    pos.extend([(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)]);
    pos.sort_unstable();
    pos.dedup();
    pos
}

fn compare_sampled(
    problem: &Problem,
    c: &AnyMatrix,
    pos: &[(usize, usize)],
    reference: &[f64],
) -> Verification {
    let tolerance = matmul::verify::tolerance(problem);
    if (c.rows(), c.cols(), c.dtype()) != (problem.m, problem.n, problem.c_dtype()) {
        return Verification {
            method: VerifyMethod::Sampled,
            passed: false,
            rel_error: None,
            max_abs_error: None,
            worst: None,
            mismatches: problem.m * problem.n,
            checked: 0,
            tolerance,
            error: None,
        };
    }
    // A position outside C reads as NaN, which fails the check below rather than panicking.
    let got: Vec<f64> = pos
        .iter()
        .map(|&(i, j)| c.get(i, j).unwrap_or(f64::NAN))
        .collect();
    let exact = problem.dtype.is_integer();
    let (mut diff2, mut ref2, mut max_abs, mut worst) = (0.0f64, 0.0f64, 0.0f64, None);
    for (idx, (&x, &r)) in got.iter().zip(reference).enumerate() {
        let d = (x - r).abs();
        let d = if d.is_nan() { f64::INFINITY } else { d };
        if d > max_abs || (worst.is_none() && d > 0.0) {
            max_abs = d;
            worst = Some(pos[idx]);
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
    let mismatches = if exact {
        got.iter().zip(reference).filter(|(x, r)| x != r).count()
    } else {
        // The element-wise bound of `matmul::verify::compare`, with the RMS of the sampled
        // reference standing in for the RMS of the whole matrix.
        let scale = (ref2 / reference.len().max(1) as f64).sqrt();
        got.iter()
            .zip(reference)
            .filter(|(x, r)| {
                let d = (*x - *r).abs();
                d.is_nan() || d > 16.0 * tolerance * scale.max(r.abs())
            })
            .count()
    };
    Verification {
        method: VerifyMethod::Sampled,
        passed: mismatches == 0 && rel.is_finite() && rel <= tolerance,
        rel_error: finite(rel),
        max_abs_error: finite(max_abs),
        worst,
        mismatches,
        checked: pos.len(),
        tolerance,
        error: None,
    }
}

fn dots_u32(
    problem: &Problem,
    a: &Matrix<u32>,
    b: &Matrix<u32>,
    pos: &[(usize, usize)],
) -> Vec<f64> {
    let (sa, sb) = (problem.a_strides(), problem.b_strides());
    pos.par_iter()
        .map(|&(i, j)| {
            (0..problem.k).fold(0u32, |s, l| {
                s.wrapping_add(
                    a.data[i * sa.row + l * sa.col].wrapping_mul(b.data[l * sb.row + j * sb.col]),
                )
            }) as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use matmul::{COut, DType, Init, Op};

    fn inputs(p: &Problem, seed: u64) -> (AnyMatrix, AnyMatrix) {
        let (ar, ac) = p.a_stored();
        let (br, bc) = p.b_stored();
        (
            AnyMatrix::generate(p.dtype, ar, ac, Init::Random { seed }).unwrap(),
            AnyMatrix::generate(p.dtype, br, bc, Init::Random { seed: seed + 1 }).unwrap(),
        )
    }

    #[test]
    fn sampled_agrees_with_full_and_catches_one_wrong_edge_element() {
        for (dtype, c_out) in [
            (DType::F32, COut::Accumulator),
            (DType::U32, COut::Accumulator),
            (DType::Bf16, COut::Accumulator),
            (DType::Bf16, COut::Input),
        ] {
            let p = Problem::new(37, 29, 41, dtype)
                .with_ops(Op::T, Op::N)
                .with_c(c_out);
            let (a, b) = inputs(&p, 3);
            let c = matmul::cpu::reference::matmul(&p, &a, &b).unwrap();
            let full = full_check(&p, &a, &b, &c).unwrap();
            let sampled = sampled_check(&p, &a, &b, &c, 64, 9).unwrap();
            assert!(
                full.passed && sampled.passed,
                "{dtype}: {full:?} {sampled:?}"
            );
            assert_eq!(sampled.method, VerifyMethod::Sampled);
            assert!(sampled.checked >= 29 + 37 - 1);

            // Corrupt an element of the last row: the sampled check reads the whole row.
            let mut bad = c.clone();
            match &mut bad {
                AnyMatrix::F32(m) => m.data[36 * 29 + 5] += 0.5,
                AnyMatrix::U32(m) => m.data[36 * 29 + 5] ^= 1,
                AnyMatrix::Bf16(m) => {
                    m.data[36 * 29 + 5] = half::bf16::from_f32(m.data[36 * 29 + 5].to_f32() + 4.0)
                }
                _ => unreachable!(),
            }
            let v = sampled_check(&p, &a, &b, &bad, 16, 1).unwrap();
            assert!(!v.passed, "{dtype}");
            assert_eq!(v.worst, Some((36, 5)));
            assert!(!v.summary().is_empty());
        }
    }

    #[test]
    fn nan_fails_and_serializes() {
        let p = Problem::new(4, 4, 4, DType::F32);
        let (a, b) = inputs(&p, 1);
        let mut c = matmul::cpu::reference::matmul(&p, &a, &b).unwrap();
        if let AnyMatrix::F32(m) = &mut c {
            m.data[15] = f32::NAN;
        }
        for v in [
            full_check(&p, &a, &b, &c).unwrap(),
            sampled_check(&p, &a, &b, &c, 4, 1).unwrap(),
        ] {
            assert!(!v.passed);
            assert_eq!(v.rel_error, None);
            let back: Verification =
                serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
            assert_eq!(back, v);
        }
    }

    #[test]
    fn wrong_output_shape_fails() {
        let p = Problem::new(4, 5, 6, DType::U32);
        let (a, b) = inputs(&p, 1);
        let c = AnyMatrix::output(DType::U32, 5, 4).unwrap();
        assert!(!sampled_check(&p, &a, &b, &c, 4, 1).unwrap().passed);
    }

    /// The full reference C is the f64 sums rounded as `cpu::reference::matmul` rounds them,
    /// bit for bit, in every float dtype and C type.
    #[test]
    fn full_reference_rounds_like_the_cpu_reference() {
        for (dtype, c_out) in [
            (DType::F32, COut::Accumulator),
            (DType::Tf32, COut::Accumulator),
            (DType::Bf16, COut::Input),
            (DType::F16, COut::Accumulator),
        ] {
            let p = Problem::new(19, 23, 37, dtype)
                .with_ops(Op::N, Op::T)
                .with_c(c_out);
            let (a, b) = inputs(&p, 5);
            let want = matmul::cpu::reference::matmul(&p, &a, &b).unwrap();
            let Reference::Full { c, basis } = Reference::full(&p, &a, &b).unwrap() else {
                panic!("full")
            };
            assert_eq!(c, want, "{dtype}");
            let basis = basis.unwrap();
            assert!(basis.positions.is_none() && basis.exact.len() == 19 * 23);
            assert!(basis
                .sizes
                .iter()
                .zip(&basis.exact)
                .all(|(s, r)| *s >= r.abs()));
        }
    }

    /// An error put at one element in units of (|A|·|B|)_ij·u is what the error reports, in the
    /// full and the sampled check alike; the exact result reports at most half a unit (its one
    /// rounding to f32); u32 reports 0 or the elements that differ.
    #[test]
    fn error_is_measured_in_units_of_the_products_size() {
        let p = Problem::new(37, 29, 300, DType::F32);
        let (a, b) = inputs(&p, 7);
        let c = matmul::cpu::reference::matmul(&p, &a, &b).unwrap();
        let (exact, sizes) = matmul::cpu::reference::products_f64(&p, &a, &b, None).unwrap();
        for sampled in [false, true] {
            let reference = if sampled {
                Reference::sampled(&p, &a, &b, 64, 3).unwrap()
            } else {
                Reference::full(&p, &a, &b).unwrap()
            };
            let v = reference.check(&p, &c);
            let e = v.error.unwrap();
            assert_eq!(
                (e.unit_log2, e.wrong, e.elements),
                (Some(-24), 0, v.checked)
            );
            let (max, mean) = (e.max_u.unwrap(), e.mean_u.unwrap());
            assert!(max > 0.0 && max <= 0.5 && mean < max, "{e:?}");

            // 100 u of (|A|·|B|) added to an element of the last row (which both checks read).
            let at = 36 * 29 + 4;
            let mut off = c.clone();
            if let AnyMatrix::F32(m) = &mut off {
                m.data[at] = (exact[at] + 100.0 * 2f64.powi(-24) * sizes[at]) as f32;
            }
            let e = reference.check(&p, &off).error.unwrap();
            let max = e.max_u.unwrap();
            assert!((max - 100.0).abs() < 1.0, "{sampled}: {e:?}");

            // NaN is not an error of some size: it is counted, and max/mean are absent.
            if let AnyMatrix::F32(m) = &mut off {
                m.data[at] = f32::NAN;
            }
            let e = reference.check(&p, &off).error.unwrap();
            assert_eq!((e.max_u, e.mean_u, e.wrong), (None, None, 1));
        }

        let p = Problem::new(37, 29, 41, DType::U32);
        let (a, b) = inputs(&p, 7);
        let c = matmul::cpu::reference::matmul(&p, &a, &b).unwrap();
        let e = Reference::full(&p, &a, &b)
            .unwrap()
            .check(&p, &c)
            .error
            .unwrap();
        assert_eq!(e, ErrorStats::exact(0, 37 * 29));
        assert_eq!((e.max_u, e.unit_log2), (Some(0.0), None));
        let mut bad = c.clone();
        if let AnyMatrix::U32(m) = &mut bad {
            m.data[36 * 29 + 1] ^= 1;
            m.data[36 * 29 + 2] ^= 1;
        }
        for reference in [
            Reference::full(&p, &a, &b).unwrap(),
            Reference::sampled(&p, &a, &b, 16, 1).unwrap(),
        ] {
            let e = reference.check(&p, &bad).error.unwrap();
            assert_eq!((e.max_u, e.wrong), (None, 2));
        }
    }
}
