//! Page-locked host matrices: [`PinnedMatrix`], host memory the device copies at the link's
//! full rate (from pageable memory the driver stages every copy through its own page-locked
//! buffers, at a fraction of it). Pass one as a [`MatRef`] to [`crate::Gemm::new`] or
//! [`crate::DeviceMatrix::upload_ref`], and as a [`MatMut`] to [`crate::Gemm::run_into`] or
//! [`crate::Backend::download_into`].

use std::ptr::NonNull;
use std::sync::Arc;

use cudarc::driver::{result, CudaContext};

use super::libs::Context;
use super::CudaBackend;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::view::{MatMut, MatRef};

/// A `rows`×`cols` row-major host matrix in page-locked memory of one CUDA context, made by
/// [`CudaBackend::pinned`]; freed when dropped.
pub struct PinnedMatrix<T: Element> {
    ptr: NonNull<T>,
    rows: usize,
    cols: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: the memory is owned by this value alone (as a Box's would be); T is Send + Sync.
unsafe impl<T: Element> Send for PinnedMatrix<T> {}
// SAFETY: shared access gives only `&[T]`.
unsafe impl<T: Element> Sync for PinnedMatrix<T> {}

impl<T: Element> PinnedMatrix<T> {
    /// (rows, cols).
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// The elements, row after row.
    pub fn as_slice(&self) -> &[T] {
        // SAFETY: `ptr` holds rows·cols initialized elements (zeroed when made) while `self`
        // lives; no copy writes them without a `&mut self` borrow that ends after it is done.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.rows * self.cols) }
    }

    /// The elements, to write.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        // SAFETY: as `as_slice`, with the unique borrow of `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.rows * self.cols) }
    }

    /// The matrix as a borrowed view.
    pub fn as_ref(&self) -> MatRef<'_, T> {
        MatRef::new(self.as_slice(), self.rows, self.cols).expect("rows·cols elements")
    }

    /// The matrix as a borrowed view to write.
    pub fn as_mut(&mut self) -> MatMut<'_, T> {
        let (rows, cols) = (self.rows, self.cols);
        MatMut::new(self.as_mut_slice(), rows, cols).expect("rows·cols elements")
    }
}

impl<T: Element> Drop for PinnedMatrix<T> {
    fn drop(&mut self) {
        // Nothing is left to report an error to; a failed free leaks the pages.
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: `ptr` came from cuMemHostAlloc in this context and is freed once; every
            // copy from or to it was waited for before the borrow that started it ended.
            let _ = unsafe { result::free_host(self.ptr.as_ptr() as *mut std::ffi::c_void) };
        }
    }
}

impl<T: Element> std::fmt::Debug for PinnedMatrix<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PinnedMatrix({}x{} {})",
            self.rows,
            self.cols,
            T::STORAGE
        )
    }
}

impl CudaBackend {
    /// A `rows`×`cols` matrix of zeros in page-locked host memory, copied to and from this
    /// device at the link's full rate. Page-locked memory is scarce: keep such matrices for the
    /// operands that cross often, not for everything.
    pub fn pinned<T: Element>(&self, rows: usize, cols: usize) -> Result<PinnedMatrix<T>> {
        let bytes = rows
            .checked_mul(cols)
            .and_then(|n| n.checked_mul(std::mem::size_of::<T>()))
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| Error::Invalid(format!("a {rows}x{cols} matrix is too large")))?;
        let what = || format!("allocating a {rows}x{cols} page-locked host matrix");
        self.ctx.bind_to_thread().ctx(what)?;
        // At least one byte: cuMemHostAlloc refuses 0.
        // SAFETY: flags 0 ask for plain page-locked memory, which is zeroed just below.
        let raw = unsafe { result::malloc_host(bytes.max(1), 0) }.ctx(what)?;
        let ptr = NonNull::new(raw as *mut T).ok_or_else(|| Error::Cuda {
            context: what(),
            message: "cuMemHostAlloc returned a null pointer".into(),
        })?;
        // SAFETY: `raw` addresses `bytes` writable bytes; zero bits are a valid value of every
        // element type (f32, u32, f16, bf16).
        unsafe { std::ptr::write_bytes(raw as *mut u8, 0, bytes) };
        Ok(PinnedMatrix {
            ptr,
            rows,
            cols,
            ctx: self.ctx.clone(),
        })
    }
}
