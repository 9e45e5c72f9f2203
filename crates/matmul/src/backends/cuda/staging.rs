//! Staged operands for the TMA kernels and the SIMT kernels that read 16-byte groups
//! (13_multistage.cu). TMA reads a matrix whose stored rows are a multiple of 16 bytes (and
//! `cp.async` 16 bytes at a time); an operand stored otherwise (a bf16 row of odd length, an f32 row of 4093 elements) is
//! copied, on the stream and inside the timed region, into a workspace whose rows are padded to
//! [`PITCH_BYTES`], and the kernel's tensor map reads the workspace. The map still spans the
//! logical columns only, so TMA zero-fills the padding like any other out-of-bounds element and
//! the kernel is the same code for every shape.
//!
//! The copy is one `cuMemcpy2DAsync` per staged operand: it reads and writes the operand once,
//! about 2·(m·k + k·n)·elem bytes against the kernel's 2·m·n·k FLOPs (bf16 4097³ on an H100: some
//! 70 MB, tens of µs against a few hundred µs of tensor-core time).

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg};

use super::buffers::{copy_2d, Side};
use super::libs::Context;
use crate::error::Result;

/// The workspace's row pitch: a multiple of 16 bytes (TMA's rule), rounded up to 128 bytes (one
/// swizzle span) so that every box row starts on a sector boundary.
pub(super) const PITCH_BYTES: usize = 128;

/// Whether TMA can read a matrix stored with rows of `cols` elements of `elem` bytes as it is.
pub(crate) fn tma_reads_rows(cols: usize, elem: usize) -> bool {
    (cols * elem).is_multiple_of(16)
}

/// Bytes of the workspace a `rows`×`cols` operand of `elem`-byte elements is staged into, or 0
/// when TMA reads its rows as they are.
pub(super) fn staged_bytes((rows, cols): (usize, usize), elem: usize) -> usize {
    if tma_reads_rows(cols, elem) {
        0
    } else {
        rows * (cols * elem).next_multiple_of(PITCH_BYTES)
    }
}

/// One operand as a tensor map reads it: its device address and the elements from one stored row
/// to the next (its columns, or the workspace's padded pitch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pitched {
    pub(crate) ptr: u64,
    pub(crate) pitch: usize,
}

/// A `rows`×`cols` operand at `ptr` as a kernel that reads 16-byte rows takes it: as stored where
/// its rows are 16-byte multiples, else a padded copy, pushed onto `staged` (enqueued before each
/// launch). The TMA kernels and the SIMT kernels' staging both come through here.
pub(super) fn padded(
    stream: &Arc<CudaStream>,
    ptr: u64,
    (rows, cols): (usize, usize),
    elem: usize,
    staged: &mut Vec<Staged>,
) -> Result<Pitched> {
    if tma_reads_rows(cols, elem) {
        return Ok(Pitched { ptr, pitch: cols });
    }
    let copy = Staged::new(stream, ptr, (rows, cols), elem)?;
    let at = copy.pitched(stream);
    staged.push(copy);
    Ok(at)
}

/// A copy of a `rows`×`cols` operand into a padded workspace, enqueued before each launch: the
/// same rows, or with `transpose` (a kernel: src, dst, rows, cols, pitch) the operand's transpose.
pub(super) struct Staged {
    workspace: CudaSlice<u8>,
    src: u64,
    /// Bytes of one stored row of the operand (its columns times the element size).
    row_bytes: usize,
    pitch_bytes: usize,
    rows: usize,
    elem: usize,
    transpose: Option<CudaFunction>,
}

/// The rows a transposing copy takes: its grid has a block per 32 of them in y.
const TRANSPOSE_MAX_ROWS: usize = 32 * 65535;

impl Staged {
    /// A workspace for a `rows`×`cols` operand of `elem`-byte elements at `src`.
    pub(super) fn new(
        stream: &Arc<CudaStream>,
        src: u64,
        (rows, cols): (usize, usize),
        elem: usize,
    ) -> Result<Staged> {
        let row_bytes = cols * elem;
        let pitch_bytes = row_bytes.next_multiple_of(PITCH_BYTES);
        // Zeroed once: the copies write the rows' elements and never the padding, which a TMA
        // map never reads and a SIMT kernel's 16-byte groups read as zeros.
        let workspace = stream
            .alloc_zeros::<u8>((rows * pitch_bytes).max(1))
            .ctx(|| {
                format!("allocating a {rows}x{cols} staging workspace with {pitch_bytes}-byte rows")
            })?;
        Ok(Staged {
            workspace,
            src,
            row_bytes,
            pitch_bytes,
            rows,
            elem,
            transpose: None,
        })
    }

    /// A workspace for the transpose (`cols` rows of `rows`, padded) of a `rows`×`cols` operand
    /// at `src`, written by `transpose` (13_multistage.cu's `multistage_transpose`); None where
    /// its grid would be too tall.
    pub(super) fn transposed(
        stream: &Arc<CudaStream>,
        src: u64,
        (rows, cols): (usize, usize),
        elem: usize,
        transpose: CudaFunction,
    ) -> Result<Option<Staged>> {
        if rows > TRANSPOSE_MAX_ROWS {
            return Ok(None);
        }
        let mut staged = Staged::new(stream, src, (cols, rows), elem)?;
        staged.transpose = Some(transpose);
        Ok(Some(staged))
    }

    /// The workspace as the tensor map reads it.
    pub(super) fn pitched(&self, stream: &CudaStream) -> Pitched {
        Pitched {
            ptr: self.workspace.device_ptr(stream).0,
            pitch: self.pitch_bytes / self.elem,
        }
    }

    /// Enqueues the copy of the operand into the workspace on `stream`.
    pub(super) fn enqueue(&self, stream: &Arc<CudaStream>) -> Result<()> {
        if let Some(func) = &self.transpose {
            // The workspace's rows are the source's columns, and its row the source's column.
            let (src_rows, src_cols) = (self.row_bytes / self.elem, self.rows);
            let dst = self.workspace.device_ptr(stream).0;
            let [r, c, pitch] =
                [src_rows, src_cols, self.pitch_bytes / self.elem].map(|v| v as i32);
            let config = LaunchConfig {
                grid_dim: (
                    src_cols.div_ceil(32) as u32,
                    src_rows.div_ceil(32) as u32,
                    1,
                ),
                block_dim: (32, 8, 1),
                shared_mem_bytes: 0,
            };
            let mut builder = stream.launch_builder(func);
            builder.arg(&self.src).arg(&dst).arg(&r).arg(&c).arg(&pitch);
            // SAFETY: multistage_transpose(const ELEM*, ELEM*, int, int, int): the source holds
            // src_rows × src_cols elements, the workspace src_cols rows of `pitch` elements; both
            // indexed within those bounds (can_run keeps every count below 2^31).
            return unsafe { builder.launch(config) }
                .map(|_| ())
                .ctx(|| format!("staging the transpose of a {src_rows}x{src_cols} operand"));
        }
        let from = Side::device(self.src, self.row_bytes);
        let to = Side::device(self.workspace.device_ptr(stream).0, self.pitch_bytes);
        // SAFETY: both regions are live device allocations of at least rows × pitch bytes (the
        // source is the operand, rows × row_bytes, which the caller sized for the problem).
        unsafe { copy_2d(stream, from, to, self.row_bytes, self.rows) }.ctx(|| {
            format!(
                "staging a {}-row operand ({} bytes a row) into {}-byte rows",
                self.rows, self.row_bytes, self.pitch_bytes
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_tma_can_read() {
        assert!(tma_reads_rows(8, 2)); // 16 bytes
        assert!(!tma_reads_rows(4093, 2));
        assert!(tma_reads_rows(4, 4));
        assert!(!tma_reads_rows(4097, 4));
        assert_eq!(4093usize * 2 % PITCH_BYTES, 122); // padded to 8192
        assert_eq!(staged_bytes((3, 4093), 2), 3 * 8192);
        assert_eq!(staged_bytes((3, 4096), 2), 0);
    }
}
