//! The Judge Girl "CUDA-MATMUL" contract (seed 001, problem 10100), bit for bit.
//!
//! Input: triples `N S1 S2`. A = rand_gen(S1, N), B = rand_gen(S2, N), C = A·B with wrapping u32
//! arithmetic, output: the signature of C. All arithmetic is u32, wrapping.
//!
//! ```
//! use matmul::judge::{case_signature, parse_cases, select, Generator};
//! use matmul::BackendChoice;
//!
//! // What `echo "2 2 5" | matmul signature --backend cpu` prints.
//! let sel = select("auto", BackendChoice::Cpu)?;
//! for case in parse_cases("2 2 5\n") {
//!     let case = case.map_err(|e| matmul::Error::Invalid(e.to_string()))?;
//!     let sig = case_signature(sel.backend.as_ref(), sel.kernel, &case, Generator::Judge)?;
//!     assert_eq!(sig, 573770929);
//! }
//! # Ok::<(), matmul::Error>(())
//! ```

use std::fmt;

use crate::backend::{Backend, RunOptions};
use crate::dispatch::{self, Selection};
use crate::dtype::DType;
use crate::error::{quoted, Error};
use crate::matrix::{AnyMatrix, Matrix};
use crate::problem::Problem;
use crate::registry::KernelSpec;
use crate::BackendChoice;

/// Largest N whose N·N still fits in u32 (the generator reduces modulo N·N).
pub const MAX_N: u32 = 65535;

/// The generator's reduction step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Generator {
    /// `x % (N·N)`: the problem statement's form, and the official outputs' form.
    #[default]
    Judge,
    /// `x & (N·N − 1)`: the seed program's own form; equal to `Judge` only when N is a power of two.
    Mask,
}

/// `rand_gen(c, N)`: x = 2; for i, j: x = ((x·x + c + i + j) mod 2^32) reduced; `A[i][j] = x`.
/// The state x carries from row to row.
pub fn rand_gen(c: u32, n: u32, generator: Generator) -> Result<Matrix<u32>, Error> {
    let nn = n.wrapping_mul(n);
    let mut m = Matrix::<u32>::zeros(n as usize, n as usize)?;
    let mut x: u32 = 2;
    for i in 0..n {
        for j in 0..n {
            let t = x
                .wrapping_mul(x)
                .wrapping_add(c)
                .wrapping_add(i)
                .wrapping_add(j);
            x = match generator {
                Generator::Judge => t % nn,
                Generator::Mask => t & nn.wrapping_sub(1),
            };
            m.data[(i * n + j) as usize] = x;
        }
    }
    Ok(m)
}

/// signature: h = 0; for each v of C row-major: h = (h + v) · 2654435761 mod 2^32.
pub fn signature(c: &[u32]) -> u32 {
    c.iter()
        .fold(0u32, |h, &v| h.wrapping_add(v).wrapping_mul(2_654_435_761))
}

/// One judge case: `N S1 S2`, with the line it started on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Case {
    /// The input line the case starts on (1-based).
    pub line: usize,
    /// The matrices' side.
    pub n: u32,
    /// A's generator seed.
    pub s1: u32,
    /// B's generator seed.
    pub s2: u32,
}

/// A judge input that breaks the rules; names the line, the token and the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseError {
    /// The line (1-based) of the offending token, or of the case's first token.
    pub line: usize,
    /// The offending token, if there is one (none for an incomplete case).
    pub token: Option<String>,
    /// The rule it breaks.
    pub rule: String,
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.token {
            Some(t) => write!(f, "line {}: {}: {}", self.line, quoted(t), self.rule),
            None => write!(f, "line {}: {}", self.line, self.rule),
        }
    }
}

impl std::error::Error for CaseError {}

const FIELDS: [&str; 3] = ["N", "S1", "S2"];

/// Parses judge input: any number of `N S1 S2` triples separated by any whitespace (a UTF-8
/// byte-order mark at the start is skipped, as editors on Windows write one). Yields each case
/// in order and stops after the first error, so the valid cases before it still run.
pub fn parse_cases(text: &str) -> impl Iterator<Item = Result<Case, CaseError>> + '_ {
    let mut tokens = text
        .strip_prefix('\u{feff}')
        .unwrap_or(text)
        .lines()
        .enumerate()
        .flat_map(|(i, l)| l.split_whitespace().map(move |t| (i + 1, t)));
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed {
            return None;
        }
        let mut values = [0u32; 3];
        let mut first_line = 0;
        for (field, value) in values.iter_mut().enumerate() {
            let Some((line, token)) = tokens.next() else {
                if field == 0 {
                    return None;
                }
                failed = true;
                return Some(Err(CaseError {
                    line: first_line,
                    token: None,
                    rule: format!(
                        "incomplete case: expected {} after `{}`, found the end of the input",
                        FIELDS[field],
                        values[..field]
                            .iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                }));
            };
            if field == 0 {
                first_line = line;
            }
            match parse_field(token, FIELDS[field]) {
                Ok(v) => *value = v,
                Err(rule) => {
                    failed = true;
                    return Some(Err(CaseError {
                        line,
                        token: Some(token.to_string()),
                        rule,
                    }));
                }
            }
        }
        let [n, s1, s2] = values;
        let err = |rule: String| CaseError {
            line: first_line,
            token: Some(n.to_string()),
            rule,
        };
        if n == 0 {
            failed = true;
            return Some(Err(err("N must be at least 1".into())));
        }
        if n > MAX_N {
            failed = true;
            return Some(Err(err(format!(
                "N must be at most {MAX_N} (N·N must fit in 32 bits)"
            ))));
        }
        Some(Ok(Case {
            line: first_line,
            n,
            s1,
            s2,
        }))
    })
}

fn parse_field(token: &str, name: &str) -> Result<u32, String> {
    let digits = token.strip_prefix('+').unwrap_or(token);
    if let Some(rest) = token.strip_prefix('-') {
        if !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("{name} must not be negative"));
        }
    }
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{name} is not a non-negative integer"));
    }
    digits.parse::<u32>().map_err(|_| {
        format!(
            "{name} must be at most {} (it is a 32-bit unsigned value)",
            u32::MAX
        )
    })
}

/// The judge's A and B for a case.
pub fn inputs(case: &Case, generator: Generator) -> Result<(Matrix<u32>, Matrix<u32>), Error> {
    Ok((
        rand_gen(case.s1, case.n, generator)?,
        rand_gen(case.s2, case.n, generator)?,
    ))
}

/// Opens a backend and chooses the kernel for judge cases ([`dispatch::select`] for u32): a
/// kernel without a u32 version is an [`Error::Invalid`], since the judge's arithmetic is u32.
pub fn select(kernel: &str, backend: BackendChoice) -> Result<Selection, Error> {
    let sel = dispatch::select(kernel, backend, DType::U32, None)?;
    if !sel.kernel.supports(DType::U32) {
        return Err(Error::Invalid(format!(
            "kernel `{}` has no u32 version; the judge's arithmetic is u32",
            sel.kernel.name
        )));
    }
    Ok(sel)
}

/// The signature of C = A·B for one case, computed by `kernel` on `backend`. The host memory the
/// case needs is checked before anything is allocated.
pub fn case_signature(
    backend: &dyn Backend,
    kernel: &KernelSpec,
    case: &Case,
    generator: Generator,
) -> Result<u32, Error> {
    let problem = Problem::square(case.n as usize, DType::U32);
    let bytes = problem.host_bytes()?;
    crate::ensure_host_memory(&problem, bytes)?;
    let (a, b) = inputs(case, generator)?;
    let c = backend.run(
        kernel,
        &problem,
        &AnyMatrix::U32(a),
        &AnyMatrix::U32(b),
        RunOptions::default(),
    )?;
    match c {
        AnyMatrix::U32(c) => Ok(signature(&c.data)),
        other => Err(Error::WrongOutput {
            kernel: kernel.name.to_string(),
            expected: DType::U32,
            found: other.dtype(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_generator_values() {
        // N = 2, c = 0: x = (4+0)%4 = 0, (0+1)%4 = 1, (1+1)%4 = 2, (4+2)%4 = 2.
        assert_eq!(
            rand_gen(0, 2, Generator::Judge).unwrap().data,
            vec![0, 1, 2, 2]
        );
        // Powers of two: the two forms agree; otherwise they differ.
        assert_eq!(
            rand_gen(5, 8, Generator::Judge).unwrap(),
            rand_gen(5, 8, Generator::Mask).unwrap()
        );
        assert_ne!(
            rand_gen(5, 6, Generator::Judge).unwrap(),
            rand_gen(5, 6, Generator::Mask).unwrap()
        );
    }

    #[test]
    fn signature_folds_in_order() {
        assert_eq!(signature(&[]), 0);
        assert_eq!(signature(&[1]), 2_654_435_761);
        assert_ne!(signature(&[1, 2]), signature(&[2, 1]));
    }

    #[test]
    fn parses_any_whitespace_and_reports_errors() {
        let cases: Vec<_> = parse_cases("2 2 5\n\n 3\t13721\n15710").collect();
        assert_eq!(cases.len(), 2);
        assert_eq!(
            cases[1].as_ref().unwrap(),
            &Case {
                line: 3,
                n: 3,
                s1: 13721,
                s2: 15710
            }
        );

        let bad = |s: &str| parse_cases(s).find_map(Result::err).unwrap().to_string();
        assert_eq!(
            bad("2 2 5\n2 x 5"),
            "line 2: `x`: S1 is not a non-negative integer"
        );
        assert_eq!(bad("2 -1 5"), "line 1: `-1`: S1 must not be negative");
        assert_eq!(bad("0 1 1"), "line 1: `0`: N must be at least 1");
        assert!(bad("65536 1 1").contains("at most 65535"));
        assert!(bad("4 1").contains("incomplete case: expected S2 after `4 1`"));
        assert!(bad("4 1 99999999999").contains("at most 4294967295"));
        // Valid cases before an error are still yielded.
        assert!(parse_cases("2 2 5\nfoo").next().unwrap().is_ok());
        // A long bad token is cut in the message; a byte-order mark at the start is skipped.
        let long = format!("2 2 5\n{} 1 1", "7".repeat(1 << 21));
        assert_eq!(
            bad(&long),
            format!(
                "line 2: `{}…` (2097152 bytes): N must be at most 4294967295 (it is a 32-bit unsigned value)",
                "7".repeat(64)
            )
        );
        let bom: Vec<_> = parse_cases("\u{feff}2 2 5\n").collect();
        assert_eq!(
            bom,
            [Ok(Case {
                line: 1,
                n: 2,
                s1: 2,
                s2: 5
            })]
        );
    }

    /// The fast CPU kernel and the reference sign a case alike; a kernel without u32 is refused
    /// (or, with no GPU here, cannot be opened).
    #[test]
    fn case_signature_on_the_cpu() {
        let sel = select("auto", BackendChoice::Cpu).unwrap();
        let case = parse_cases("64 2 3").next().unwrap().unwrap();
        let sig = case_signature(sel.backend.as_ref(), sel.kernel, &case, Generator::Judge);
        let reference = crate::find("reference").unwrap();
        let want = case_signature(sel.backend.as_ref(), reference, &case, Generator::Judge);
        assert_eq!(sig.unwrap(), want.unwrap());
        let e = select("wgmma", BackendChoice::Auto)
            .map(|_| ())
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Invalid(_) | Error::NeedsGpu { .. } | Error::NotBuilt { .. }
            ),
            "{e}"
        );
    }
}
