//! Owned, dense, row-major host matrices: `Matrix<T>` for typed code and `AnyMatrix` where the
//! element type is chosen at run time (CLI, registry, benchmark). `AnyMatrix::from(m)` wraps a
//! typed matrix; `Matrix::<T>::try_from(any)` and `any.as_f32()` (and the like) unwrap one.
//!
//! ```
//! use matmul::{AnyMatrix, Matrix};
//!
//! let m = Matrix::<u32>::from_vec(2, 3, vec![1, 2, 3, 4, 5, 6])?;
//! assert_eq!(m.get(1, 2), Some(6));
//! assert_eq!(m.get(2, 0), None);
//! assert_eq!(m[(0, 1)], 2);
//! assert!(Matrix::<u32>::from_vec(2, 3, vec![1, 2]).is_err());
//!
//! let any = AnyMatrix::from(m.clone());
//! assert_eq!(any.as_u32(), Some(&m));
//! assert_eq!(any.as_f32(), None);
//! assert_eq!(Matrix::<u32>::try_from(any)?, m);
//! # Ok::<(), matmul::Error>(())
//! ```

use std::any::Any;
use std::ops::{Index, IndexMut};

use half::{bf16, f16};

use crate::dtype::{DType, Element};
use crate::error::Error;
use crate::problem::Problem;

/// A dense row-major matrix: element (i, j) is `data[i * cols + j]`. The constructors check that
/// `data` holds `rows * cols` elements; code that sets the fields directly must keep that so (the
/// backends check it again before a product).
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix<T> {
    /// Number of rows.
    pub rows: usize,
    /// Number of columns.
    pub cols: usize,
    /// The elements, row-major.
    pub data: Vec<T>,
}

impl<T: Element> Matrix<T> {
    /// A matrix of `T::default()` (zero), allocated fallibly: a size that cannot be held is an
    /// error, not an abort.
    pub fn zeros(rows: usize, cols: usize) -> Result<Matrix<T>, Error> {
        Self::filled(rows, cols, T::default())
    }

    /// A matrix of `value`, allocated fallibly (see [`Matrix::zeros`]).
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

    /// A matrix over `data` (row-major); an [`Error::ShapeMismatch`] unless it holds exactly
    /// `rows * cols` elements.
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

    /// (rows, cols).
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// Element (i, j), or None outside the matrix. `m[(i, j)]` is the same element and panics
    /// outside it.
    pub fn get(&self, i: usize, j: usize) -> Option<T> {
        self.offset(i, j).and_then(|e| self.data.get(e)).copied()
    }

    /// Element (i, j) to modify, or None outside the matrix.
    pub fn get_mut(&mut self, i: usize, j: usize) -> Option<&mut T> {
        self.offset(i, j).and_then(|e| self.data.get_mut(e))
    }

    /// The row-major offset of (i, j), if it is inside the matrix.
    fn offset(&self, i: usize, j: usize) -> Option<usize> {
        if i < self.rows && j < self.cols {
            i.checked_mul(self.cols)?.checked_add(j)
        } else {
            None
        }
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

impl<T: Element> Index<(usize, usize)> for Matrix<T> {
    type Output = T;

    /// Element (i, j).
    ///
    /// # Panics
    /// Outside the matrix; [`Matrix::get`] returns None instead.
    fn index(&self, (i, j): (usize, usize)) -> &T {
        match self.offset(i, j).and_then(|e| self.data.get(e)) {
            Some(v) => v,
            None => panic!(
                "element ({i}, {j}) is outside a {}x{} matrix",
                self.rows, self.cols
            ),
        }
    }
}

impl<T: Element> IndexMut<(usize, usize)> for Matrix<T> {
    /// Element (i, j), to modify.
    ///
    /// # Panics
    /// Outside the matrix; [`Matrix::get_mut`] returns None instead.
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut T {
        let (rows, cols) = (self.rows, self.cols);
        match self.offset(i, j).and_then(|e| self.data.get_mut(e)) {
            Some(v) => v,
            None => panic!("element ({i}, {j}) is outside a {rows}x{cols} matrix"),
        }
    }
}

/// A host matrix whose element type is known only at run time. `Tf32` problems use `F32` storage.
#[derive(Debug, Clone, PartialEq)]
pub enum AnyMatrix {
    /// f32 elements (the f32 and tf32 inputs, and every floating C in the accumulator type).
    F32(Matrix<f32>),
    /// u32 elements, multiplied with wrapping arithmetic.
    U32(Matrix<u32>),
    /// IEEE half-precision elements.
    F16(Matrix<f16>),
    /// bfloat16 elements.
    Bf16(Matrix<bf16>),
}

/// `m` as a `Matrix<U>` when `T` is `U`.
fn cast<T: 'static, U: 'static>(m: Matrix<T>) -> Result<Matrix<U>, Matrix<T>> {
    let mut slot = Some(m);
    if let Some(u) = (&mut slot as &mut dyn Any).downcast_mut::<Option<Matrix<U>>>() {
        if let Some(u) = u.take() {
            return Ok(u);
        }
    }
    match slot {
        Some(m) => Err(m),
        None => unreachable!("the slot is emptied only when T is U"),
    }
}

impl<T: Element> From<Matrix<T>> for AnyMatrix {
    /// Wraps a typed matrix without copying it. (An `Element` type of another crate is converted
    /// element by element into the storage type it names.)
    fn from(m: Matrix<T>) -> AnyMatrix {
        let m = match cast::<T, f32>(m) {
            Ok(m) => return AnyMatrix::F32(m),
            Err(m) => m,
        };
        let m = match cast::<T, u32>(m) {
            Ok(m) => return AnyMatrix::U32(m),
            Err(m) => m,
        };
        let m = match cast::<T, f16>(m) {
            Ok(m) => return AnyMatrix::F16(m),
            Err(m) => m,
        };
        let m = match cast::<T, bf16>(m) {
            Ok(m) => return AnyMatrix::Bf16(m),
            Err(m) => m,
        };
        let via = |v: T| v.to_f64();
        match T::STORAGE {
            DType::F32 | DType::Tf32 => AnyMatrix::F32(m.map(|v| f32::from_f64(via(v)))),
            DType::U32 => AnyMatrix::U32(m.map(|v| u32::from_f64(via(v)))),
            DType::F16 => AnyMatrix::F16(m.map(|v| f16::from_f64(via(v)))),
            DType::Bf16 => AnyMatrix::Bf16(m.map(|v| bf16::from_f64(via(v)))),
        }
    }
}

impl<T: Element> TryFrom<AnyMatrix> for Matrix<T> {
    type Error = Error;

    /// The typed matrix, if `any` holds `T` elements; else an [`Error::ShapeMismatch`] naming
    /// both types.
    fn try_from(any: AnyMatrix) -> Result<Matrix<T>, Error> {
        let found = any.dtype();
        let typed = crate::with_matrix!(any, m => cast::<_, T>(m).ok());
        typed.ok_or_else(|| Error::ShapeMismatch {
            what: "matrix",
            expected: format!("{} elements", T::STORAGE),
            found: format!("{found} elements"),
        })
    }
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
    Random {
        /// The generator's seed.
        seed: u64,
    },
    /// Small random integers in [-4, 4] (floats) or [0, 8] (u32): every product and sum is exact
    /// in f32 for k up to millions, so kernels can be compared bit for bit.
    SmallInt {
        /// The generator's seed.
        seed: u64,
    },
    /// Element e (row-major index) = e · scale, as the Mojo puzzles fill their inputs.
    Arange {
        /// The step between neighbouring elements.
        scale: u32,
    },
}

/// splitmix64: tiny, fast, and good enough for test and benchmark inputs.
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }
    /// The next 64 random bits.
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
    /// The stored element type (`F32` for tf32 inputs).
    pub fn dtype(&self) -> DType {
        with_matrix!(self, m => element_dtype(m))
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        with_matrix!(self, m => m.rows)
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        with_matrix!(self, m => m.cols)
    }

    /// Number of elements, rows × cols.
    pub fn len(&self) -> usize {
        self.rows().saturating_mul(self.cols())
    }

    /// Whether the matrix has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The typed matrix, if this holds `T` elements.
    pub fn as_typed<T: Element>(&self) -> Option<&Matrix<T>> {
        with_matrix!(self, m => (m as &dyn Any).downcast_ref::<Matrix<T>>())
    }

    /// The f32 matrix, if this holds f32 elements.
    pub fn as_f32(&self) -> Option<&Matrix<f32>> {
        self.as_typed()
    }

    /// The u32 matrix, if this holds u32 elements.
    pub fn as_u32(&self) -> Option<&Matrix<u32>> {
        self.as_typed()
    }

    /// The f16 matrix, if this holds f16 elements.
    pub fn as_f16(&self) -> Option<&Matrix<f16>> {
        self.as_typed()
    }

    /// The bf16 matrix, if this holds bf16 elements.
    pub fn as_bf16(&self) -> Option<&Matrix<bf16>> {
        self.as_typed()
    }

    /// Element (i, j) widened to f64 (exact for every stored type), or None outside the matrix.
    pub fn get(&self, i: usize, j: usize) -> Option<f64> {
        with_matrix!(self, m => m.get(i, j).map(Element::to_f64))
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

/// Poison patterns written into outputs before a kernel runs, so an unwritten element cannot pass:
/// NaN for f32 ...
pub const POISON_F32: f32 = f32::NAN;
/// ... 0xDEADBEEF for u32 (a value a checked product would have to hit exactly) ...
pub const POISON_U32: u32 = 0xDEAD_BEEF;
/// ... and NaN for bf16 ...
pub const POISON_BF16: bf16 = bf16::NAN;
/// ... and f16.
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
        assert!(Matrix::from_vec(usize::MAX, 2, vec![1u32; 3]).is_err());
        assert!(Matrix::<f32>::zeros(usize::MAX, 2).is_err());
        assert!(Matrix::filled(1 << 40, 1 << 40, 0u32).is_err());
        assert_eq!(Matrix::<u32>::zeros(0, 3).unwrap().shape(), (0, 3));
    }

    #[test]
    fn accessors_return_none_outside() {
        let mut m = Matrix::from_fn(2, 3, |i, j| (10 * i + j) as u32).unwrap();
        assert_eq!(m.get(1, 2), Some(12));
        assert_eq!((m.get(2, 0), m.get(0, 3)), (None, None));
        *m.get_mut(0, 1).unwrap() = 7;
        m[(1, 0)] = 8;
        assert_eq!((m[(0, 1)], m[(1, 0)]), (7, 8));
        assert!(m.get_mut(0, 3).is_none());
        let any = AnyMatrix::from(m);
        assert_eq!((any.get(1, 2), any.get(2, 2)), (Some(12.0), None));
        assert_eq!(any.get(0, 1), Some(7.0));
        // Inconsistent fields set by hand: None, not a panic.
        let bad = Matrix {
            rows: 2,
            cols: 2,
            data: vec![1.0f32],
        };
        assert_eq!(bad.get(1, 1), None);
    }

    #[test]
    fn conversions_keep_the_type() {
        let f = Matrix::from_vec(1, 2, vec![1.5f32, 2.5]).unwrap();
        let any: AnyMatrix = f.clone().into();
        assert_eq!(any.dtype(), DType::F32);
        assert_eq!(any.as_f32(), Some(&f));
        assert!(any.as_u32().is_none() && any.as_bf16().is_none() && any.as_f16().is_none());
        assert_eq!(Matrix::<f32>::try_from(any.clone()).unwrap(), f);
        let e = Matrix::<u32>::try_from(any).unwrap_err().to_string();
        assert!(
            e.contains("expected u32 elements, found f32 elements"),
            "{e}"
        );
        let h = Matrix::from_vec(1, 1, vec![bf16::from_f32(3.0)]).unwrap();
        assert_eq!(AnyMatrix::from(h.clone()), AnyMatrix::Bf16(h));
        let g = Matrix::from_vec(1, 1, vec![f16::from_f32(3.0)]).unwrap();
        assert_eq!(AnyMatrix::from(g).as_f16().unwrap().data[0].to_f32(), 3.0);
    }
}
