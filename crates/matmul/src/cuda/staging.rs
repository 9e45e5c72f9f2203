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

use cudarc::driver::sys as cu_sys;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

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

/// A copy of a `rows`×`cols` operand into a padded workspace, enqueued before each launch.
pub(super) struct Staged {
    workspace: CudaSlice<u8>,
    src: u64,
    /// Bytes of one stored row of the operand (its columns times the element size).
    row_bytes: usize,
    pitch_bytes: usize,
    rows: usize,
    elem: usize,
}

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
        // SAFETY: every byte a kernel reads is written by `enqueue` first (the padding is never
        // read: the tensor map spans the columns only).
        let workspace = unsafe { stream.alloc::<u8>((rows * pitch_bytes).max(1)) }.ctx(|| {
            format!("allocating a {rows}x{cols} staging workspace with {pitch_bytes}-byte rows")
        })?;
        Ok(Staged {
            workspace,
            src,
            row_bytes,
            pitch_bytes,
            rows,
            elem,
        })
    }

    /// The workspace as the tensor map reads it.
    pub(super) fn pitched(&self, stream: &CudaStream) -> Pitched {
        Pitched {
            ptr: self.workspace.device_ptr(stream).0,
            pitch: self.pitch_bytes / self.elem,
        }
    }

    /// Enqueues the copy of the operand into the workspace on `stream`.
    pub(super) fn enqueue(&self, stream: &CudaStream) -> Result<()> {
        let device = cu_sys::CUmemorytype::CU_MEMORYTYPE_DEVICE;
        let copy = cu_sys::CUDA_MEMCPY2D {
            srcXInBytes: 0,
            srcY: 0,
            srcMemoryType: device,
            srcHost: std::ptr::null(),
            srcDevice: self.src,
            srcArray: std::ptr::null_mut(),
            srcPitch: self.row_bytes,
            dstXInBytes: 0,
            dstY: 0,
            dstMemoryType: device,
            dstHost: std::ptr::null_mut(),
            dstDevice: self.workspace.device_ptr(stream).0,
            dstArray: std::ptr::null_mut(),
            dstPitch: self.pitch_bytes,
            WidthInBytes: self.row_bytes,
            Height: self.rows,
        };
        // SAFETY: both regions are live device allocations of at least rows × pitch bytes (the
        // source is the operand, rows × row_bytes, which the caller sized for the problem).
        unsafe { cu_sys::cuMemcpy2DAsync_v2(&copy, stream.cu_stream()) }
            .result()
            .ctx(|| {
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
