//! Owned, dense, row-major host matrices: `Matrix<T>` for typed code and `AnyMatrix` where the
//! element type is chosen at run time (CLI, registry, benchmark).

use half::{bf16, f16};

use crate::dtype::{DType, Element};
use crate::error::Error;
use crate::problem::Problem;

#[derive(Debug, Clone, PartialEq)]
pub struct Matrix<T> {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<T>,
}

impl<T: Element> Matrix<T> {
    /// A matrix of `T::default()` (zero), allocated fallibly: a size that cannot be held is an
    /// error, not an abort.
    pub fn zeros(rows: usize, cols: usize) -> Result<Matrix<T>, Error> {
        Self::filled(rows, cols, T::default())
    }

    pub fn filled(rows: usize, cols: usize, value: T) -> Result<Matrix<T>, Error> {
        let len = rows
            .checked_mul(cols)
            .ok_or(Error::Allocation { rows, cols })?;
        let mut data = Vec::new();
        data.try_reserve_exact(len)
            .map_err(|_| Error::Allocation { rows, cols })?;
        data.resize(len, value);
        Ok(Matrix { rows, cols, data })
    }

    pub fn from_vec(rows: usize, cols: usize, data: Vec<T>) -> Result<Matrix<T>, Error> {
        if rows.checked_mul(cols) != Some(data.len()) {
            return Err(Error::ShapeMismatch {
                what: "matrix data",
                expected: format!("{rows}x{cols} = {} elements", rows.saturating_mul(cols)),
                found: format!("{} elements", data.len()),
            });
        }
        Ok(Matrix { rows, cols, data })
    }

    /// Builds element (i, j) from `f(i, j)`.
    pub fn from_fn(
        rows: usize,
        cols: usize,
        mut f: impl FnMut(usize, usize) -> T,
    ) -> Result<Matrix<T>, Error> {
        let mut m = Self::zeros(rows, cols)?;
        for i in 0..rows {
            for j in 0..cols {
                m.data[i * cols + j] = f(i, j);
            }
        }
        Ok(m)
    }

    pub fn get(&self, i: usize, j: usize) -> T {
        self.data[i * self.cols + j]
    }

    /// The same shape with `f` applied to every element.
    pub fn map<U>(&self, f: impl Fn(T) -> U) -> Matrix<U> {
        Matrix {
            rows: self.rows,
            cols: self.cols,
            data: self.data.iter().map(|&v| f(v)).collect(),
        }
    }
}

/// A host matrix whose element type is known only at run time. `Tf32` problems use `F32` storage.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyMatrix {
    F32(Matrix<f32>),
    U32(Matrix<u32>),
    F16(Matrix<f16>),
    Bf16(Matrix<bf16>),
}

/// Applies one generic expression to whichever typed matrix an `AnyMatrix` holds.
#[macro_export]
macro_rules! with_matrix {
    ($any:expr, $m:ident => $body:expr) => {
        match $any {
            $crate::matrix::AnyMatrix::F32($m) => $body,
            $crate::matrix::AnyMatrix::U32($m) => $body,
            $crate::matrix::AnyMatrix::F16($m) => $body,
            $crate::matrix::AnyMatrix::Bf16($m) => $body,
        }
    };
}

/// How to fill an input matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Init {
    /// Seeded pseudo-random values: uniform in [-1, 1) for floats, uniform u32 for u32.
    Random { seed: u64 },
    /// Small random integers in [-4, 4] (floats) or [0, 8] (u32): every product and sum is exact
    /// in f32 for k up to millions, so kernels can be compared bit for bit.
    SmallInt { seed: u64 },
    /// Element e (row-major index) = e · scale, as the Mojo puzzles fill their inputs.
    Arange { scale: u32 },
}

/// splitmix64: tiny, fast, and good enough for test and benchmark inputs.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    pub fn next_signed_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (2.0 / (1u64 << 53) as f64) - 1.0
    }
}

impl AnyMatrix {
    pub fn dtype(&self) -> DType {
        with_matrix!(self, m => element_dtype(m))
    }

    pub fn rows(&self) -> usize {
        with_matrix!(self, m => m.rows)
    }

    pub fn cols(&self) -> usize {
        with_matrix!(self, m => m.cols)
    }

    pub fn len(&self) -> usize {
        self.rows() * self.cols()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element (i, j) widened to f64 (exact for every stored type).
    pub fn get_f64(&self, i: usize, j: usize) -> f64 {
        with_matrix!(self, m => m.get(i, j).to_f64())
    }

    /// Every element widened to f64, row-major.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        with_matrix!(self, m => m.data.iter().map(|v| v.to_f64()).collect())
    }

    /// An input matrix for `dtype` (Tf32 → f32 storage) filled as `init` says.
    pub fn generate(
        dtype: DType,
        rows: usize,
        cols: usize,
        init: Init,
    ) -> Result<AnyMatrix, Error> {
        fn fill<T: Element>(
            rows: usize,
            cols: usize,
            init: Init,
            random: impl Fn(&mut SplitMix64) -> T,
        ) -> Result<Matrix<T>, Error> {
            let mut m = Matrix::<T>::zeros(rows, cols)?;
            match init {
                Init::Random { seed } => {
                    let mut rng = SplitMix64::new(seed);
                    m.data.iter_mut().for_each(|v| *v = random(&mut rng));
                }
                Init::SmallInt { seed } => {
                    let mut rng = SplitMix64::new(seed);
                    let signed = T::STORAGE != DType::U32;
                    m.data.iter_mut().for_each(|v| {
                        let r = (rng.next_u64() % 9) as f64;
                        *v = T::from_f64(if signed { r - 4.0 } else { r });
                    });
                }
                Init::Arange { scale } => {
                    m.data
                        .iter_mut()
                        .enumerate()
                        .for_each(|(e, v)| *v = T::from_f64(e as f64 * scale as f64));
                }
            }
            Ok(m)
        }
        Ok(match dtype {
            DType::F32 | DType::Tf32 => {
                AnyMatrix::F32(fill(rows, cols, init, |r| r.next_signed_unit() as f32)?)
            }
            DType::U32 => AnyMatrix::U32(fill(rows, cols, init, |r| r.next_u64() as u32)?),
            DType::F16 => AnyMatrix::F16(fill(rows, cols, init, |r| {
                f16::from_f64(r.next_signed_unit())
            })?),
            DType::Bf16 => AnyMatrix::Bf16(fill(rows, cols, init, |r| {
                bf16::from_f64(r.next_signed_unit())
            })?),
        })
    }

    /// An output matrix for `dtype` (f32 for every floating type, u32 for u32), zero-filled.
    pub fn output(dtype: DType, rows: usize, cols: usize) -> Result<AnyMatrix, Error> {
        Ok(if dtype.is_integer() {
            AnyMatrix::U32(Matrix::zeros(rows, cols)?)
        } else {
            AnyMatrix::F32(Matrix::zeros(rows, cols)?)
        })
    }

    /// This accumulator-typed C as `problem`'s C type: f32 rounded to nearest even into bf16 or
    /// f16 when the problem asks for C in a 16-bit input dtype, else unchanged.
    pub fn into_c_dtype(self, problem: &Problem) -> AnyMatrix {
        match (self, problem.c_dtype()) {
            (AnyMatrix::F32(m), DType::Bf16) => AnyMatrix::Bf16(m.map(bf16::from_f32)),
            (AnyMatrix::F32(m), DType::F16) => AnyMatrix::F16(m.map(f16::from_f32)),
            (c, _) => c,
        }
    }
}

fn element_dtype<T: Element>(_: &Matrix<T>) -> DType {
    T::STORAGE
}

/// Poison patterns written into outputs before a kernel runs, so an unwritten element cannot pass.
pub const POISON_F32: f32 = f32::NAN;
pub const POISON_U32: u32 = 0xDEAD_BEEF;
pub const POISON_BF16: bf16 = bf16::NAN;
pub const POISON_F16: f16 = f16::NAN;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generate_is_seeded_and_typed() {
        let a = AnyMatrix::generate(DType::F32, 3, 4, Init::Random { seed: 7 }).unwrap();
        let b = AnyMatrix::generate(DType::F32, 3, 4, Init::Random { seed: 7 }).unwrap();
        let c = AnyMatrix::generate(DType::F32, 3, 4, Init::Random { seed: 8 }).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.dtype(), DType::F32);
        assert_eq!(
            AnyMatrix::generate(DType::Tf32, 1, 1, Init::Arange { scale: 1 })
                .unwrap()
                .dtype(),
            DType::F32
        );
        let r = AnyMatrix::generate(DType::Bf16, 2, 2, Init::Arange { scale: 2 }).unwrap();
        assert_eq!(r.to_f64_vec(), vec![0.0, 2.0, 4.0, 6.0]);
    }

    #[test]
    fn from_vec_checks_length() {
        assert!(Matrix::from_vec(2, 2, vec![1u32; 3]).is_err());
    }
}
