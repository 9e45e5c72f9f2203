//! Borrowed host matrices: [`MatRef`] is `rows`×`cols` elements of a slice, row i starting at
//! element i·`stride` (the leading dimension: a whole [`Matrix`], or a block of a bigger one,
//! without a copy); [`AnyMatRef`] is the same with the element type chosen at run time, what the
//! backends take ([`crate::Backend::upload_ref`]).
//!
//! ```
//! use matmul::{MatRef, Matrix};
//!
//! let big = Matrix::<f32>::from_fn(4, 5, |i, j| (10 * i + j) as f32)?;
//! let block = MatRef::from(&big).block(1, 2, 2, 3)?; // rows 1..3, columns 2..5
//! assert_eq!(block.shape(), (2, 3));
//! assert_eq!(block.stride(), 5);
//! assert_eq!(block.get(1, 0), Some(22.0));
//! assert_eq!(block.to_matrix().data, [12.0, 13.0, 14.0, 22.0, 23.0, 24.0]);
//! assert!(MatRef::with_stride(&big.data, 4, 5, 4).is_err()); // rows would overlap
//! # Ok::<(), matmul::Error>(())
//! ```

use half::{bf16, f16};

use crate::dtype::{DType, Element};
use crate::error::Error;
use crate::matrix::{AnyMatrix, Matrix};

/// A borrowed `rows`×`cols` row-major matrix: element (i, j) is `data[i * stride + j]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatRef<'a, T> {
    data: &'a [T],
    rows: usize,
    cols: usize,
    stride: usize,
}

impl<'a, T: Element> MatRef<'a, T> {
    /// The dense matrix in `data` (`rows · cols` elements).
    pub fn new(data: &'a [T], rows: usize, cols: usize) -> Result<MatRef<'a, T>, Error> {
        MatRef::with_stride(data, rows, cols, cols)
    }

    /// Rows `stride` elements apart (`stride` ≥ `cols`; the last row needs only `cols`).
    pub fn with_stride(
        data: &'a [T],
        rows: usize,
        cols: usize,
        stride: usize,
    ) -> Result<MatRef<'a, T>, Error> {
        if stride < cols {
            return Err(Error::Invalid(format!(
                "a row stride of {stride} is less than the {cols} columns: the rows would overlap"
            )));
        }
        let need = match rows {
            0 => Some(0),
            _ => (rows - 1)
                .checked_mul(stride)
                .and_then(|x| x.checked_add(cols)),
        };
        match need {
            Some(n) if n <= data.len() => Ok(MatRef {
                data,
                rows,
                cols,
                stride,
            }),
            _ => Err(Error::Invalid(format!(
                "a {rows}x{cols} matrix with rows {stride} apart needs more than the {} elements given",
                data.len()
            ))),
        }
    }

    /// Checks that the slice holds the shape (a `MatRef` made from a [`Matrix`] whose fields
    /// were set by hand may not): every use of the elements checks it first.
    pub fn check(&self) -> Result<(), Error> {
        MatRef::with_stride(self.data, self.rows, self.cols, self.stride).map(|_| ())
    }

    /// The `rows`×`cols` block whose first element is (`row`, `col`), sharing this one's data.
    pub fn block(
        &self,
        row: usize,
        col: usize,
        rows: usize,
        cols: usize,
    ) -> Result<MatRef<'a, T>, Error> {
        let fits =
            |start: usize, len: usize, all: usize| start.checked_add(len).is_some_and(|e| e <= all);
        if !fits(row, rows, self.rows) || !fits(col, cols, self.cols) {
            return Err(Error::Invalid(format!(
                "the {rows}x{cols} block at ({row}, {col}) does not fit in a {}x{} matrix",
                self.rows, self.cols
            )));
        }
        let start = (row * self.stride + col).min(self.data.len());
        MatRef::with_stride(&self.data[start..], rows, cols, self.stride)
    }

    /// (rows, cols).
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// Elements from one row's start to the next (the leading dimension).
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Whether the rows follow each other without gaps (`stride == cols`, or one row).
    pub fn is_dense(&self) -> bool {
        self.stride == self.cols || self.rows <= 1
    }

    /// The elements from the first to the last (rows · stride, less the last row's gap; at
    /// most the slice, for one that fails [`MatRef::check`]).
    pub fn data(&self) -> &'a [T] {
        let len = match self.rows {
            0 => 0,
            r => (r - 1) * self.stride + self.cols,
        };
        &self.data[..len.min(self.data.len())]
    }

    /// Element (i, j), or None outside the matrix.
    pub fn get(&self, i: usize, j: usize) -> Option<T> {
        (i < self.rows && j < self.cols).then(|| self.data[i * self.stride + j])
    }

    /// An owned dense copy (of the rows the slice holds, for one that fails [`MatRef::check`]:
    /// the Matrix then has fewer elements than its shape, which every product refuses).
    pub fn to_matrix(&self) -> Matrix<T> {
        let mut data = Vec::with_capacity(self.rows * self.cols);
        for i in 0..self.rows {
            match self.data.get(i * self.stride..i * self.stride + self.cols) {
                Some(row) => data.extend_from_slice(row),
                None => break,
            }
        }
        Matrix {
            rows: self.rows,
            cols: self.cols,
            data,
        }
    }
}

impl<'a, T: Element> From<&'a Matrix<T>> for MatRef<'a, T> {
    fn from(m: &'a Matrix<T>) -> MatRef<'a, T> {
        MatRef {
            data: &m.data,
            rows: m.rows,
            cols: m.cols,
            stride: m.cols,
        }
    }
}

/// A borrowed `rows`×`cols` row-major matrix to write: element (i, j) is `data[i * stride + j]`
/// (where a product's C goes: [`crate::Gemm::run_into`], [`crate::Backend::download_into`]).
#[derive(Debug, PartialEq)]
pub struct MatMut<'a, T> {
    data: &'a mut [T],
    rows: usize,
    cols: usize,
    stride: usize,
}

impl<'a, T: Element> MatMut<'a, T> {
    /// The dense matrix in `data` (`rows · cols` elements).
    pub fn new(data: &'a mut [T], rows: usize, cols: usize) -> Result<MatMut<'a, T>, Error> {
        MatMut::with_stride(data, rows, cols, cols)
    }

    /// Rows `stride` elements apart (`stride` ≥ `cols`; the last row needs only `cols`).
    pub fn with_stride(
        data: &'a mut [T],
        rows: usize,
        cols: usize,
        stride: usize,
    ) -> Result<MatMut<'a, T>, Error> {
        MatRef::with_stride(&*data, rows, cols, stride)?;
        Ok(MatMut {
            data,
            rows,
            cols,
            stride,
        })
    }

    /// The same elements, read only.
    pub fn as_ref(&self) -> MatRef<'_, T> {
        MatRef {
            data: self.data,
            rows: self.rows,
            cols: self.cols,
            stride: self.stride,
        }
    }

    /// (rows, cols).
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// Elements from one row's start to the next (the leading dimension).
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The elements from the first to the last ([`MatRef::data`]), to write.
    pub fn data_mut(&mut self) -> &mut [T] {
        let len = match self.rows {
            0 => 0,
            r => (r - 1) * self.stride + self.cols,
        };
        let len = len.min(self.data.len());
        &mut self.data[..len]
    }

    /// Writes `m` (of this shape) into these elements.
    pub fn copy_from(&mut self, m: MatRef<'_, T>) -> Result<(), Error> {
        m.check()?;
        if m.shape() != self.shape() {
            return Err(Error::ShapeMismatch {
                what: "C",
                expected: format!("{}x{}", self.rows, self.cols),
                found: format!("{}x{}", m.rows, m.cols),
            });
        }
        for i in 0..self.rows {
            let to = i * self.stride;
            let from = i * m.stride;
            self.data[to..to + self.cols].copy_from_slice(&m.data[from..from + self.cols]);
        }
        Ok(())
    }
}

impl<'a, T: Element> From<&'a mut Matrix<T>> for MatMut<'a, T> {
    fn from(m: &'a mut Matrix<T>) -> MatMut<'a, T> {
        MatMut {
            rows: m.rows,
            cols: m.cols,
            stride: m.cols,
            data: &mut m.data,
        }
    }
}

/// A [`MatMut`] of any element type.
#[derive(Debug, PartialEq)]
pub enum AnyMatMut<'a> {
    /// f32 (and tf32's storage).
    F32(MatMut<'a, f32>),
    /// u32.
    U32(MatMut<'a, u32>),
    /// IEEE half.
    F16(MatMut<'a, f16>),
    /// bfloat16.
    Bf16(MatMut<'a, bf16>),
}

impl AnyMatMut<'_> {
    /// The stored element type.
    pub fn dtype(&self) -> DType {
        match self {
            AnyMatMut::F32(_) => DType::F32,
            AnyMatMut::U32(_) => DType::U32,
            AnyMatMut::F16(_) => DType::F16,
            AnyMatMut::Bf16(_) => DType::Bf16,
        }
    }

    /// (rows, cols).
    pub fn shape(&self) -> (usize, usize) {
        match self {
            AnyMatMut::F32(m) => m.shape(),
            AnyMatMut::U32(m) => m.shape(),
            AnyMatMut::F16(m) => m.shape(),
            AnyMatMut::Bf16(m) => m.shape(),
        }
    }

    /// Writes `m` (of this shape and element type) into these elements.
    pub fn copy_from(&mut self, m: &AnyMatrix) -> Result<(), Error> {
        let msg = format!(
            "a {} matrix written into {} elements",
            m.dtype(),
            self.dtype()
        );
        match (self, m) {
            (AnyMatMut::F32(d), AnyMatrix::F32(s)) => d.copy_from(s.into()),
            (AnyMatMut::U32(d), AnyMatrix::U32(s)) => d.copy_from(s.into()),
            (AnyMatMut::F16(d), AnyMatrix::F16(s)) => d.copy_from(s.into()),
            (AnyMatMut::Bf16(d), AnyMatrix::Bf16(s)) => d.copy_from(s.into()),
            _ => Err(Error::Invalid(msg)),
        }
    }
}

impl<'a, T: Element> From<MatMut<'a, T>> for AnyMatMut<'a> {
    fn from(m: MatMut<'a, T>) -> AnyMatMut<'a> {
        T::any_mut(m)
    }
}

/// A [`MatRef`] of any element type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AnyMatRef<'a> {
    /// f32 (and tf32's storage).
    F32(MatRef<'a, f32>),
    /// u32.
    U32(MatRef<'a, u32>),
    /// IEEE half.
    F16(MatRef<'a, f16>),
    /// bfloat16.
    Bf16(MatRef<'a, bf16>),
}

impl<'a> AnyMatRef<'a> {
    /// The stored element type.
    pub fn dtype(&self) -> DType {
        match self {
            AnyMatRef::F32(_) => DType::F32,
            AnyMatRef::U32(_) => DType::U32,
            AnyMatRef::F16(_) => DType::F16,
            AnyMatRef::Bf16(_) => DType::Bf16,
        }
    }

    /// (rows, cols).
    pub fn shape(&self) -> (usize, usize) {
        match self {
            AnyMatRef::F32(m) => m.shape(),
            AnyMatRef::U32(m) => m.shape(),
            AnyMatRef::F16(m) => m.shape(),
            AnyMatRef::Bf16(m) => m.shape(),
        }
    }

    /// [`MatRef::check`].
    pub fn check(&self) -> Result<(), Error> {
        match self {
            AnyMatRef::F32(m) => m.check(),
            AnyMatRef::U32(m) => m.check(),
            AnyMatRef::F16(m) => m.check(),
            AnyMatRef::Bf16(m) => m.check(),
        }
    }

    /// An owned dense copy.
    pub fn to_matrix(&self) -> AnyMatrix {
        match self {
            AnyMatRef::F32(m) => m.to_matrix().into(),
            AnyMatRef::U32(m) => m.to_matrix().into(),
            AnyMatRef::F16(m) => m.to_matrix().into(),
            AnyMatRef::Bf16(m) => m.to_matrix().into(),
        }
    }
}

impl<'a> From<&'a AnyMatrix> for AnyMatRef<'a> {
    fn from(m: &'a AnyMatrix) -> AnyMatRef<'a> {
        match m {
            AnyMatrix::F32(x) => AnyMatRef::F32(x.into()),
            AnyMatrix::U32(x) => AnyMatRef::U32(x.into()),
            AnyMatrix::F16(x) => AnyMatRef::F16(x.into()),
            AnyMatrix::Bf16(x) => AnyMatRef::Bf16(x.into()),
        }
    }
}

impl<'a, T: Element> From<MatRef<'a, T>> for AnyMatRef<'a> {
    fn from(m: MatRef<'a, T>) -> AnyMatRef<'a> {
        T::any_ref(m)
    }
}

/// A block of a row-major matrix: `rows`×`cols` elements from (`row`, `col`) on, read with the
/// whole matrix's row length as its leading dimension. What a view of a matrix a backend holds
/// names ([`crate::Backend::copy_block`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The first row.
    pub row: usize,
    /// The first column.
    pub col: usize,
    /// Rows in the block.
    pub rows: usize,
    /// Columns in the block.
    pub cols: usize,
}

impl Block {
    /// The whole `rows`×`cols` matrix.
    pub fn whole((rows, cols): (usize, usize)) -> Block {
        Block {
            row: 0,
            col: 0,
            rows,
            cols,
        }
    }

    /// (rows, cols).
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// Checks that the block lies within a matrix of `shape`; `what` names the matrix.
    pub fn check_within(&self, what: &str, (rows, cols): (usize, usize)) -> Result<(), Error> {
        let fits =
            |start: usize, len: usize, all: usize| start.checked_add(len).is_some_and(|e| e <= all);
        if fits(self.row, self.rows, rows) && fits(self.col, self.cols, cols) {
            Ok(())
        } else {
            Err(Error::Invalid(format!(
                "the {}x{} block of {what} at ({}, {}) does not fit in its {rows}x{cols} matrix",
                self.rows, self.cols, self.row, self.col
            )))
        }
    }
}
