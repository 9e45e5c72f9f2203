//! The shape of one product: C (m×n) = op(A) (m×k) · op(B) (k×n), every matrix row-major.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::dtype::{DType, Types};
use crate::error::{quoted, Error};

/// Whether an operand is used as stored (`N`) or transposed (`T`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Op {
    /// As stored.
    #[default]
    N,
    /// Transposed: the stored matrix is read as its transpose.
    T,
}

impl Op {
    /// `T` for `true` (a `--trans-a`/`--trans-b` style flag), else `N`.
    pub fn from_flag(transposed: bool) -> Op {
        if transposed {
            Op::T
        } else {
            Op::N
        }
    }
}

/// How an f32 product may be computed (f32 inputs only; every other dtype ignores it). `auto`
/// follows it; a kernel named explicitly runs as named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// At least SGEMM's accuracy, with its ∞, NaN and signed zeros, by the fastest method: on
    /// Hopper FP32 emulated on the tf32 tensor cores (3xTF32, `wgmma-3xtf32`) where the model
    /// says it wins, else IEEE FMA kernels.
    #[default]
    Accurate,
    /// IEEE f32 fused multiply-adds only (the SIMT kernels, cuBLAS's SGEMM, the CPU): no
    /// emulation, whatever its speed.
    Strict,
}

impl FromStr for Precision {
    type Err = Error;
    /// `accurate` or `strict` (any case); anything else is an [`Error::Invalid`] naming both.
    fn from_str(s: &str) -> Result<Precision, Error> {
        match s.to_ascii_lowercase().as_str() {
            "accurate" => Ok(Precision::Accurate),
            "strict" => Ok(Precision::Strict),
            _ => Err(Error::Invalid(format!(
                "unknown precision {} (expected `accurate`: SGEMM's accuracy by the fastest method, 3xTF32 included, or `strict`: IEEE FMA kernels only)",
                quoted(s)
            ))),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::Accurate => "accurate",
            Precision::Strict => "strict",
        })
    }
}

/// What C is stored as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum COut {
    /// The accumulator type: f32 for every floating input, u32 for u32.
    #[default]
    Accumulator,
    /// The input dtype where it is narrower (bf16 → bf16, f16 → f16), rounded to nearest even
    /// from the f32 sums; the same as `Accumulator` for f32, tf32 and u32.
    Input,
}

impl COut {
    /// The C of `dtype` inputs stored as `c`: the accumulator's type, or the input's own for
    /// bf16 and f16; anything else is an [`Error::Invalid`] naming the choices.
    pub fn for_types(dtype: DType, c: DType) -> Result<COut, Error> {
        let acc = dtype.accumulator();
        if c == acc {
            Ok(COut::Accumulator)
        } else if dtype.is_16_bit() && c == dtype {
            Ok(COut::Input)
        } else if dtype.is_16_bit() {
            Err(Error::Invalid(format!(
                "C of {dtype} inputs is {acc} or {dtype}, not {c}"
            )))
        } else {
            Err(Error::Invalid(format!(
                "C of {dtype} inputs is {acc}, not {c}"
            )))
        }
    }
}

impl FromStr for COut {
    type Err = Error;
    fn from_str(s: &str) -> Result<COut, Error> {
        match s.to_ascii_lowercase().as_str() {
            "accumulator" | "acc" | "f32" => Ok(COut::Accumulator),
            "input" => Ok(COut::Input),
            _ => Err(Error::Invalid(format!(
                "unknown C type {} (expected `f32` (the accumulator: u32 for u32) or `input` (bf16 C for bf16, f16 C for f16))",
                quoted(s)
            ))),
        }
    }
}

/// One matrix product. `A` is stored m×k when `op_a` is `N` and k×m when it is `T`; `B` is stored
/// k×n for `N` and n×k for `T`; `C` is always m×n, of type [`Problem::c_dtype`]. All three are
/// dense and row-major.
///
/// ```
/// use matmul::{COut, DType, Op, Problem};
///
/// // C (2×3) = Aᵀ · B with A stored 4×2 (k×m) and B stored 4×3 (k×n).
/// let p = Problem::new(2, 3, 4, DType::F32).with_ops(Op::T, Op::N);
/// assert_eq!((p.a_stored(), p.b_stored()), ((4, 2), (4, 3)));
/// assert_eq!(p.flops(), 48.0); // 2·m·n·k
/// assert_eq!(p.min_bytes(), (8 + 12 + 6) as f64 * 4.0); // A, B read once, C written once
/// assert_eq!(p.to_string(), "f32 2x3x4 (TN)");
///
/// // bf16 inputs accumulate in f32; C is f32 unless asked in the input type.
/// let bf = Problem::square(64, DType::Bf16);
/// assert_eq!(bf.c_dtype(), DType::F32);
/// assert_eq!(bf.with_c(COut::Input).c_dtype(), DType::Bf16);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Problem {
    /// Rows of op(A) and of C.
    pub m: usize,
    /// Columns of op(B) and of C.
    pub n: usize,
    /// The inner dimension: columns of op(A), rows of op(B).
    pub k: usize,
    /// Whether A is stored transposed (k×m).
    pub op_a: Op,
    /// Whether B is stored transposed (n×k).
    pub op_b: Op,
    /// The inputs' element type (tf32: f32 storage, tensor-core compute).
    pub dtype: DType,
    /// C's type (absent in JSON written before it existed: the accumulator).
    #[serde(default)]
    pub c: COut,
    /// How `auto` may compute an f32 product (absent in older JSON: accurate).
    #[serde(default)]
    pub precision: Precision,
}

/// Row and column strides (in elements) of a logical matrix view over row-major storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strides {
    /// Elements between consecutive rows of the logical view.
    pub row: usize,
    /// Elements between consecutive columns of the logical view.
    pub col: usize,
}

impl Problem {
    /// The product of A stored `a` (rows, cols) and B stored `b` under `op_a` and `op_b`: m
    /// and k from op(A), n from op(B), whose rows must be op(A)'s columns (else an
    /// [`Error::ShapeMismatch`] naming both).
    pub fn from_stored(
        dtype: DType,
        a: (usize, usize),
        b: (usize, usize),
        op_a: Op,
        op_b: Op,
    ) -> Result<Problem, Error> {
        let (m, k) = match op_a {
            Op::N => a,
            Op::T => (a.1, a.0),
        };
        let (kb, n) = match op_b {
            Op::N => b,
            Op::T => (b.1, b.0),
        };
        if kb != k {
            return Err(Error::ShapeMismatch {
                what: "op(B)",
                expected: format!("{k} rows, as op(A) ({m}x{k}) has columns"),
                found: format!("{kb}x{n}"),
            });
        }
        Ok(Problem::new(m, n, k, dtype).with_ops(op_a, op_b))
    }

    /// An m×n×k product of `dtype`, neither operand transposed, C in the accumulator type.
    /// Nothing is checked here: zero sizes are refused by
    /// [`KernelSpec::can_run`](crate::KernelSpec::can_run), huge ones by [`Problem::host_bytes`].
    pub fn new(m: usize, n: usize, k: usize, dtype: DType) -> Problem {
        Problem {
            m,
            n,
            k,
            op_a: Op::N,
            op_b: Op::N,
            dtype,
            c: COut::Accumulator,
            precision: Precision::Accurate,
        }
    }

    /// [`Problem::new`]`(n, n, n, dtype)`.
    pub fn square(n: usize, dtype: DType) -> Problem {
        Problem::new(n, n, n, dtype)
    }

    /// The same problem with A and B read through `op_a` and `op_b`.
    pub fn with_ops(mut self, op_a: Op, op_b: Op) -> Problem {
        self.op_a = op_a;
        self.op_b = op_b;
        self
    }

    /// The same problem under `precision` (f32 only: whether `auto` may emulate it).
    pub fn with_precision(mut self, precision: Precision) -> Problem {
        self.precision = precision;
        self
    }

    /// The same problem with C stored as `c` (see [`Problem::c_dtype`]).
    pub fn with_c(mut self, c: COut) -> Problem {
        self.c = c;
        self
    }

    /// C's element type: bf16 or f16 when C is asked in a 16-bit input dtype, else the
    /// accumulator (f32, or u32 for u32).
    pub fn c_dtype(&self) -> DType {
        match self.c {
            COut::Input if self.dtype.is_16_bit() => self.dtype,
            _ => self.dtype.accumulator(),
        }
    }

    /// The element types a kernel for this problem is built for.
    pub fn types(&self) -> Types {
        Types {
            input: self.dtype,
            c: self.c_dtype(),
        }
    }

    /// (rows, cols) of A as stored.
    pub fn a_stored(&self) -> (usize, usize) {
        match self.op_a {
            Op::N => (self.m, self.k),
            Op::T => (self.k, self.m),
        }
    }

    /// (rows, cols) of B as stored.
    pub fn b_stored(&self) -> (usize, usize) {
        match self.op_b {
            Op::N => (self.k, self.n),
            Op::T => (self.n, self.k),
        }
    }

    /// Strides that read `op(A)[i][l]` as `a[i * row + l * col]`.
    pub fn a_strides(&self) -> Strides {
        match self.op_a {
            Op::N => Strides {
                row: self.k,
                col: 1,
            },
            Op::T => Strides {
                row: 1,
                col: self.m,
            },
        }
    }

    /// Strides that read `op(B)[l][j]` as `b[l * row + j * col]`.
    pub fn b_strides(&self) -> Strides {
        match self.op_b {
            Op::N => Strides {
                row: self.n,
                col: 1,
            },
            Op::T => Strides {
                row: 1,
                col: self.k,
            },
        }
    }

    /// Floating-point (or integer) operations: one multiply and one add per term, 2·m·n·k.
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// The fewest bytes any kernel must move: read A and B once, write C once.
    pub fn min_bytes(&self) -> f64 {
        // In f64: the sizes of an absurd problem (refused later) must not overflow here.
        let (m, n, k) = (self.m as f64, self.n as f64, self.k as f64);
        let inputs = (m * k + k * n) * self.dtype.input_bytes() as f64;
        inputs + m * n * self.c_dtype().input_bytes() as f64
    }

    /// Host bytes needed to hold A, B and C (checked, so absurd sizes become an error, not an abort).
    pub fn host_bytes(&self) -> Result<usize, Error> {
        let elems = |r: usize, c: usize| r.checked_mul(c);
        let (ar, ac) = self.a_stored();
        let (br, bc) = self.b_stored();
        let a = elems(ar, ac).and_then(|e| e.checked_mul(self.dtype.input_bytes()));
        let b = elems(br, bc).and_then(|e| e.checked_mul(self.dtype.input_bytes()));
        let c = elems(self.m, self.n).and_then(|e| e.checked_mul(self.c_dtype().input_bytes()));
        a.zip(b)
            .and_then(|(a, b)| a.checked_add(b))
            .zip(c)
            .and_then(|(ab, c)| ab.checked_add(c))
            .ok_or(Error::TooLarge {
                problem: *self,
                bytes: None,
            })
    }

    /// "m×n×k" followed by the ops when they are not N·N, and C's type when it is not the
    /// accumulator.
    pub fn shape_label(&self) -> String {
        let mut s = format!("{}x{}x{}", self.m, self.n, self.k);
        if self.op_a == Op::T || self.op_b == Op::T {
            s.push_str(&format!(" ({:?}{:?})", self.op_a, self.op_b));
        }
        if self.types().narrow_c() {
            s.push_str(&format!(" C={}", self.c_dtype()));
        }
        s
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.dtype, self.shape_label())
    }
}

/// A shape written "MxNxK" (or a single "N" for a square product), each side at least 1; `x`,
/// `X` and `*` all separate, spaces around numbers are allowed. Anything else is
/// [`Error::BadShape`].
///
/// ```
/// use matmul::Shape;
///
/// let s: Shape = "17x33x65".parse()?;
/// assert_eq!((s.m, s.n, s.k), (17, 33, 65));
/// assert_eq!("64".parse::<Shape>()?, Shape { m: 64, n: 64, k: 64 });
/// assert!("1x2".parse::<Shape>().is_err());
/// assert!("0x4x4".parse::<Shape>().is_err());
/// # Ok::<(), matmul::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Rows of C.
    pub m: usize,
    /// Columns of C.
    pub n: usize,
    /// The inner dimension.
    pub k: usize,
}

impl FromStr for Shape {
    type Err = Error;
    fn from_str(s: &str) -> Result<Shape, Error> {
        let bad = || Error::BadShape(s.to_string());
        let parts: Vec<usize> = s
            .split(['x', 'X', '*'])
            .map(|p| {
                p.trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|&v| v > 0)
                    .ok_or_else(bad)
            })
            .collect::<Result<_, _>>()?;
        match parts[..] {
            [n] => Ok(Shape { m: n, n, k: n }),
            [m, n, k] => Ok(Shape { m, n, k }),
            _ => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_strides() {
        let p = Problem::new(2, 3, 4, DType::F32).with_ops(Op::T, Op::T);
        assert_eq!(p.flops(), 48.0);
        assert_eq!(p.min_bytes(), ((8 + 12) * 4 + 6 * 4) as f64);
        assert_eq!(p.a_stored(), (4, 2));
        assert_eq!(p.b_stored(), (3, 4));
        assert_eq!(p.a_strides(), Strides { row: 1, col: 2 });
        assert_eq!(p.b_strides(), Strides { row: 1, col: 4 });
    }

    #[test]
    fn c_in_the_input_dtype() {
        let p = Problem::new(2, 3, 4, DType::Bf16).with_c(COut::Input);
        assert_eq!(p.c_dtype(), DType::Bf16);
        assert_eq!(p.min_bytes(), ((8 + 12) * 2 + 6 * 2) as f64);
        assert_eq!(p.shape_label(), "2x3x4 C=bf16");
        assert!(p.types().narrow_c());
        // f32, tf32 and u32 have no narrower C: the request changes nothing.
        for d in [DType::F32, DType::Tf32, DType::U32] {
            let p = Problem::new(2, 3, 4, d).with_c(COut::Input);
            assert_eq!(p.c_dtype(), d.accumulator());
            assert_eq!(p.shape_label(), "2x3x4");
        }
        assert_eq!("input".parse::<COut>().unwrap(), COut::Input);
        assert_eq!("F32".parse::<COut>().unwrap(), COut::Accumulator);
        assert!("bf17"
            .parse::<COut>()
            .unwrap_err()
            .to_string()
            .contains("bf17"));
    }

    /// Precision: accurate by default (older JSON without the field too), parsed in any case,
    /// anything else refused by name.
    #[test]
    fn precision_defaults_to_accurate_and_parses() {
        let p = Problem::new(2, 3, 4, DType::F32);
        assert_eq!(p.precision, Precision::Accurate);
        assert_eq!(
            p.with_precision(Precision::Strict).precision,
            Precision::Strict
        );
        assert_eq!("STRICT".parse::<Precision>().unwrap(), Precision::Strict);
        assert_eq!(
            "accurate".parse::<Precision>().unwrap(),
            Precision::Accurate
        );
        let e = "exact".parse::<Precision>().unwrap_err().to_string();
        assert!(e.contains("exact") && e.contains("strict"), "{e}");
        let old = r#"{"m":2,"n":3,"k":4,"op_a":"N","op_b":"N","dtype":"f32"}"#;
        let p: Problem = serde_json::from_str(old).unwrap();
        assert_eq!(p.precision, Precision::Accurate);
    }

    #[test]
    fn shapes_parse() {
        assert_eq!(
            "17x33x65".parse::<Shape>().unwrap(),
            Shape {
                m: 17,
                n: 33,
                k: 65
            }
        );
        assert_eq!(
            "64".parse::<Shape>().unwrap(),
            Shape {
                m: 64,
                n: 64,
                k: 64
            }
        );
        assert!("1x2".parse::<Shape>().is_err());
        assert!("axbxc".parse::<Shape>().is_err());
        for zero in ["0", "0x4x4", "4x0x4", "4x4x0"] {
            let e = zero.parse::<Shape>().unwrap_err().to_string();
            assert_eq!(
                e,
                format!("bad shape `{zero}` (expected MxNxK or N, positive integers)")
            );
        }
    }

    #[test]
    fn huge_sizes_are_an_error_not_an_overflow() {
        let p = Problem::square(usize::MAX / 2, DType::U32);
        assert!(p.host_bytes().is_err());
    }
}
