//! Views of matrices a backend holds: a block of a [`DeviceMatrix`] (its rows the whole
//! matrix's row apart: BLAS's leading dimension), as operands and C of [`Plan::run_views`].
//!
//! The kernels read dense operands. A view that is a whole matrix is used in place; a block is
//! copied by the backend into a dense workspace the plan keeps (on CUDA one 2D copy on the
//! stream, in order with the product: no host work, no synchronization), and a C block is
//! copied back after the product (and in before it when β ≠ 0).
//!
//! ```
//! use matmul::{CpuBackend, DType, DeviceMatrix, Matrix, Plan, Problem};
//!
//! let cpu = CpuBackend;
//! // A 4x6 matrix holding A in its left 4x3 block and B in its right 3x3 block's top rows.
//! let big = Matrix::<f32>::from_fn(4, 6, |i, j| (i * 6 + j) as f32)?;
//! let big = DeviceMatrix::upload(&cpu, &big)?;
//! let mut c = DeviceMatrix::<f32>::zeros(&cpu, 5, 5)?;
//! let plan = Plan::builder(&cpu, Problem::new(2, 3, 3, DType::F32)).build()?;
//! // C[1..3, 2..5] = big[0..2, 0..3] · big[1..4, 3..6]
//! plan.run_views(big.view(0..2, 0..3)?, big.view(1..4, 3..6)?, c.view_mut(1..3, 2..5)?)?;
//! let c = c.download(&cpu)?;
//! assert_eq!(c.data[5 + 2], 0. * 9. + 1. * 15. + 2. * 21.);
//! assert_eq!(c.data[0], 0.); // outside the block: untouched
//! # Ok::<(), matmul::Error>(())
//! ```

use std::ops::Range;
use std::sync::Mutex;

use super::plan::{DeviceMatrix, Plan};
use crate::backends::{Backend, Batch, DeviceData};
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::view::Block;

/// A block of a [`DeviceMatrix`], read by [`Plan::run_views`].
#[derive(Debug, Clone, Copy)]
pub struct DeviceView<'a, T: Element> {
    matrix: &'a DeviceMatrix<T>,
    block: Block,
}

/// A block of a [`DeviceMatrix`] written by [`Plan::run_views`] (C).
#[derive(Debug)]
pub struct DeviceViewMut<'a, T: Element> {
    matrix: &'a mut DeviceMatrix<T>,
    block: Block,
}

fn block_of(shape: (usize, usize), rows: Range<usize>, cols: Range<usize>) -> Result<Block> {
    if rows.start > rows.end || cols.start > cols.end {
        return Err(Error::Invalid(format!(
            "the view rows {rows:?}, columns {cols:?} is an empty range backwards"
        )));
    }
    let block = Block {
        row: rows.start,
        col: cols.start,
        rows: rows.end - rows.start,
        cols: cols.end - cols.start,
    };
    block.check_within("the matrix", shape)?;
    Ok(block)
}

impl<T: Element> DeviceMatrix<T> {
    /// The block of rows `rows` and columns `cols` (its leading dimension: this matrix's
    /// columns).
    pub fn view(&self, rows: Range<usize>, cols: Range<usize>) -> Result<DeviceView<'_, T>> {
        Ok(DeviceView {
            block: block_of(self.shape(), rows, cols)?,
            matrix: self,
        })
    }

    /// [`DeviceMatrix::view`], to be written.
    pub fn view_mut(
        &mut self,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Result<DeviceViewMut<'_, T>> {
        Ok(DeviceViewMut {
            block: block_of(self.shape(), rows, cols)?,
            matrix: self,
        })
    }
}

impl<'a, T: Element> From<&'a DeviceMatrix<T>> for DeviceView<'a, T> {
    fn from(m: &'a DeviceMatrix<T>) -> Self {
        DeviceView {
            block: Block::whole(m.shape()),
            matrix: m,
        }
    }
}

impl<'a, T: Element> From<&'a mut DeviceMatrix<T>> for DeviceViewMut<'a, T> {
    fn from(m: &'a mut DeviceMatrix<T>) -> Self {
        DeviceViewMut {
            block: Block::whole(m.shape()),
            matrix: m,
        }
    }
}

impl<T: Element> DeviceView<'_, T> {
    /// The block: where it starts and its shape.
    pub fn block(&self) -> Block {
        self.block
    }

    /// Whether it is its whole matrix (used in place, without a copy).
    pub fn is_whole(&self) -> bool {
        self.block == Block::whole(self.matrix.shape())
    }
}

impl<T: Element> DeviceViewMut<'_, T> {
    /// The block: where it starts and its shape.
    pub fn block(&self) -> Block {
        self.block
    }
}

/// The dense workspaces of a plan's runs on views: A, B and C, made at the first run that
/// needs each, kept while their shapes stay.
#[derive(Default)]
pub(super) struct ViewSpace {
    slots: Mutex<[Option<DeviceData>; 3]>,
}

/// `slot`, a dense matrix of `block`'s shape and `src`'s element type, made or remade.
fn workspace<'s>(
    backend: &dyn Backend,
    slot: &'s mut Option<DeviceData>,
    src: &DeviceData,
    block: Block,
) -> Result<&'s mut DeviceData> {
    let fits = slot
        .as_ref()
        .is_some_and(|d| d.shape() == block.shape() && d.dtype() == src.dtype());
    if !fits {
        *slot = Some(backend.alloc_zeroed(src.dtype(), block.rows, block.cols)?);
    }
    Ok(slot.as_mut().expect("made just above"))
}

impl Plan<'_> {
    /// [`Plan::run`] on views: C's block = α·op(A's block)·op(B's block) + β·C's block, every
    /// block a [`DeviceMatrix`]'s rows and columns in place (a BLAS leading dimension), of the
    /// shapes [`Plan::run`] takes. Views that are whole matrices are used as they are; the others
    /// are copied into dense workspaces kept by the plan, on the backend's queue (see the
    /// module's page). One product at a time: a batched plan takes strides instead.
    pub fn run_views<T: Element, U: Element>(
        &self,
        a: DeviceView<'_, T>,
        b: DeviceView<'_, T>,
        c: DeviceViewMut<'_, U>,
    ) -> Result<()> {
        if self.batch() != Batch::one(self.inner_problem()) {
            return Err(Error::Invalid(
                "a batched plan runs on whole buffers with strides, not on views".into(),
            ));
        }
        let DeviceViewMut {
            matrix: cm,
            block: cb,
        } = c;
        if a.is_whole() && b.is_whole() && cb == Block::whole(cm.shape()) {
            return self.run(a.matrix, b.matrix, cm);
        }
        let backend = self.backend();
        let mut slots = self.views.slots.lock().unwrap_or_else(|e| e.into_inner());
        let [sa, sb, sc] = &mut *slots;
        // Check the shapes before any copy: those Plan::run checks, on the blocks.
        let (want_a, want_b) = self.stored_operands();
        for (what, got, want) in [
            ("A", a.block.shape(), want_a),
            ("B", b.block.shape(), want_b),
            ("C", cb.shape(), self.c_shape()),
        ] {
            if got != want {
                return Err(Error::ShapeMismatch {
                    what,
                    expected: format!("a {}x{} view", want.0, want.1),
                    found: format!("a {}x{} view", got.0, got.1),
                });
            }
        }
        let dense = |v: DeviceView<'_, T>, slot: &mut Option<DeviceData>| -> Result<()> {
            if !v.is_whole() {
                let w = workspace(backend, slot, v.matrix.data(), v.block)?;
                backend.copy_block(v.matrix.data(), v.block, w, (0, 0))?;
            }
            Ok(())
        };
        dense(a, sa)?;
        dense(b, sb)?;
        fn pick<'x, T: Element>(
            v: DeviceView<'x, T>,
            slot: &'x Option<DeviceData>,
        ) -> &'x DeviceData {
            match slot {
                Some(w) if !v.is_whole() => w,
                _ => v.matrix.data(),
            }
        }
        let (da, db) = (pick(a, sa), pick(b, sb));
        if cb == Block::whole(cm.shape()) {
            return self.run_data(da, db, cm.data_mut());
        }
        let wc = workspace(backend, sc, cm.data(), cb)?;
        if self.scale().beta != 0.0 {
            backend.copy_block(cm.data(), cb, wc, (0, 0))?;
        }
        self.run_data(da, db, wc)?;
        backend.copy_block(
            wc,
            Block::whole(cb.shape()),
            cm.data_mut(),
            (cb.row, cb.col),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::matrix::Matrix;
    use crate::problem::Problem;
    use crate::CpuBackend;

    /// A column-major plan on views: the same as on dense copies of the blocks.
    #[test]
    fn column_major_views_match_dense_copies() {
        let cpu = CpuBackend;
        // Column-major A 3x4 and B 4x2 are the row-major 4x3 and 2x4 blocks.
        let big = Matrix::<f32>::from_fn(6, 7, |i, j| (i * 7 + j) as f32 - 20.0).unwrap();
        let big = DeviceMatrix::upload(&cpu, &big).unwrap();
        let plan = Plan::builder(&cpu, Problem::new(3, 2, 4, DType::F32))
            .column_major(true)
            .build()
            .unwrap();
        let (va, vb) = (big.view(1..5, 2..5).unwrap(), big.view(3..5, 0..4).unwrap());
        let mut c = DeviceMatrix::<f32>::zeros(&cpu, 4, 5).unwrap();
        plan.run_views(va, vb, c.view_mut(1..3, 1..4).unwrap())
            .unwrap();
        let dense = |v: DeviceView<'_, f32>| {
            let b = v.block();
            let m = big.download(&cpu).unwrap();
            let m = crate::view::MatRef::from(&m)
                .block(b.row, b.col, b.rows, b.cols)
                .unwrap()
                .to_matrix();
            DeviceMatrix::upload(&cpu, &m).unwrap()
        };
        let mut want = DeviceMatrix::<f32>::zeros(&cpu, 2, 3).unwrap();
        plan.run(&dense(va), &dense(vb), &mut want).unwrap();
        let (got, want) = (c.download(&cpu).unwrap(), want.download(&cpu).unwrap());
        for i in 0..2 {
            assert_eq!(
                got.data[(1 + i) * 5 + 1..(1 + i) * 5 + 4],
                want.data[i * 3..i * 3 + 3]
            );
        }
        assert_eq!(got.data.iter().filter(|x| **x != 0.0).count(), 6);
    }

    /// Views out of their matrix, of the wrong shape, or given to a batched plan are errors.
    #[test]
    fn bad_views_are_errors() {
        let cpu = CpuBackend;
        let m = DeviceMatrix::<f32>::zeros(&cpu, 4, 4).unwrap();
        assert!(m.view(0..5, 0..1).is_err());
        #[allow(clippy::reversed_empty_ranges)]
        let backwards = m.view(3..1, 0..1);
        assert!(backwards.is_err());
        let mut c = DeviceMatrix::<f32>::zeros(&cpu, 4, 4).unwrap();
        let plan = Plan::builder(&cpu, Problem::new(2, 2, 3, DType::F32))
            .build()
            .unwrap();
        let e = plan
            .run_views(
                m.view(0..2, 0..2).unwrap(),
                m.view(0..3, 0..2).unwrap(),
                c.view_mut(0..2, 0..2).unwrap(),
            )
            .unwrap_err();
        assert!(matches!(e, Error::ShapeMismatch { what: "A", .. }), "{e}");
        let batched = Plan::builder(&cpu, Problem::new(2, 2, 2, DType::F32))
            .batch_count(2)
            .build()
            .unwrap();
        let e = batched
            .run_views(
                m.view(0..2, 0..2).unwrap(),
                m.view(0..2, 0..2).unwrap(),
                c.view_mut(0..2, 0..2).unwrap(),
            )
            .unwrap_err();
        assert!(e.to_string().contains("batched"), "{e}");
    }
}
