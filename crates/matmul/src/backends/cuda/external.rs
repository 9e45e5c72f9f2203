//! Device memory the backend did not allocate: another library's buffer (a DLPack tensor of
//! torch or CuPy) wrapped as a matrix this backend holds, without a copy, and the address of a
//! matrix the backend holds, for handing it to another library.

use std::any::Any;
use std::sync::Arc;

use cudarc::driver::sys as cu_sys;
use cudarc::driver::CudaStream;

use super::buffers::DeviceBuf;
use super::libs::Context;
use super::CudaBackend;
use crate::backends::DeviceData;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::matrix::{AnyMatrix, Matrix, POISON_BF16, POISON_F16, POISON_F32, POISON_U32};

/// `len` elements of `dtype` at `ptr` in device memory another library allocated, kept alive
/// by `keep`. Dropping it waits for the backend's stream first, so the owner never frees (or
/// reuses) memory a launch still reads or writes.
pub(super) struct ExternalBuf {
    pub(super) ptr: u64,
    pub(super) len: usize,
    pub(super) dtype: DType,
    stream: Arc<CudaStream>,
    keep: Option<Box<dyn Any + Send + Sync>>,
}

impl ExternalBuf {
    /// Bytes per element (2 or 4).
    pub(super) fn width(&self) -> usize {
        self.dtype.input_bytes()
    }

    /// The poison pattern of the element type (NaN, or 0xDEADBEEF for u32), as memset bits.
    pub(super) fn poison_bits(&self) -> u32 {
        match self.dtype {
            DType::U32 => POISON_U32,
            DType::Bf16 => POISON_BF16.to_bits() as u32,
            DType::F16 => POISON_F16.to_bits() as u32,
            DType::F32 | DType::Tf32 => POISON_F32.to_bits(),
        }
    }
}

impl Drop for ExternalBuf {
    fn drop(&mut self) {
        // The owner may free the memory as soon as `keep` goes: not while work on it is queued.
        let _ = self.stream.synchronize();
        drop(self.keep.take());
    }
}

impl CudaBackend {
    /// [`crate::Backend::wrap_external`]: `ptr` checked to be device (or managed) memory of
    /// this backend's device.
    ///
    /// # Safety
    /// As the trait method's.
    pub(super) unsafe fn wrap_external_data(
        &self,
        ptr: u64,
        dtype: DType,
        (rows, cols): (usize, usize),
        keep: Box<dyn Any + Send + Sync>,
    ) -> Result<DeviceData> {
        self.check_alive()?;
        let dtype = dtype.storage();
        let len = rows
            .checked_mul(cols)
            .ok_or_else(|| Error::Invalid(format!("a {rows}x{cols} matrix is too large")))?;
        if len > 0 {
            self.check_device_pointer(ptr)?;
        }
        let buf = ExternalBuf {
            ptr,
            len,
            dtype,
            stream: self.stream.clone(),
            keep: Some(keep),
        };
        Ok(DeviceData::new(
            dtype,
            rows,
            cols,
            self.instance,
            Box::new(DeviceBuf::External(buf)),
        ))
    }

    /// Checks that `ptr` is device or managed memory on this backend's device.
    fn check_device_pointer(&self, ptr: u64) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .ctx(|| "binding the context".into())?;
        let mut kind: u32 = 0;
        let mut ordinal: i32 = -1;
        // SAFETY: each attribute is written as the 32-bit integer it is.
        unsafe {
            cu_sys::cuPointerGetAttribute(
                (&mut kind as *mut u32).cast(),
                cu_sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                ptr,
            )
            .result()
            .map_err(|e| {
                Error::Invalid(format!(
                    "address {ptr:#x} is not CUDA memory this context can use ({e:?})"
                ))
            })?;
            cu_sys::cuPointerGetAttribute(
                (&mut ordinal as *mut i32).cast(),
                cu_sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                ptr,
            )
            .result()
            .ctx(|| format!("reading the device of address {ptr:#x}"))?;
        }
        let device = cu_sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32;
        let unified = cu_sys::CUmemorytype::CU_MEMORYTYPE_UNIFIED as u32;
        if kind != device && kind != unified {
            return Err(Error::Invalid(format!(
                "address {ptr:#x} is not device memory (memory type {kind})"
            )));
        }
        if ordinal != self.info.ordinal as i32 {
            return Err(Error::Invalid(format!(
                "address {ptr:#x} is on CUDA device {ordinal}; this backend is device {}",
                self.info.ordinal
            )));
        }
        Ok(())
    }

    /// [`crate::Backend::data_ptr`]: the device address of the matrix's first element.
    pub(super) fn data_ptr_of(&self, d: &DeviceData) -> Result<u64> {
        self.check_alive()?;
        let buf: &DeviceBuf = d.buffer(self.instance, "the matrix")?;
        Ok(buf.ptr(&self.stream))
    }

    /// Copies the `m`×`n` matrix of `e` to the host, ordered on the stream (the caller
    /// synchronizes).
    pub(super) fn download_external(
        &self,
        e: &ExternalBuf,
        m: usize,
        n: usize,
    ) -> Result<AnyMatrix> {
        let what = || format!("copying a {m}x{n} matrix to the host");
        if m * n != e.len {
            return Err(Error::Invalid(format!(
                "a {m}x{n} matrix from a buffer of {} elements",
                e.len
            )));
        }
        let mut out = match e.dtype {
            DType::U32 => AnyMatrix::U32(Matrix::zeros(m, n)?),
            DType::Bf16 => AnyMatrix::Bf16(Matrix::zeros(m, n)?),
            DType::F16 => AnyMatrix::F16(Matrix::zeros(m, n)?),
            DType::F32 | DType::Tf32 => AnyMatrix::F32(Matrix::zeros(m, n)?),
        };
        let dst: *mut std::ffi::c_void =
            crate::with_matrix!(&mut out, x => x.data.as_mut_ptr().cast());
        if e.len == 0 {
            return Ok(out);
        }
        self.ctx
            .bind_to_thread()
            .ctx(|| "binding the context".into())?;
        // SAFETY: `dst` holds len elements of the buffer's type; `e.ptr` addresses as many live
        // ones (the wrapper's contract). The copy is done before the caller's synchronize
        // returns, and `out` is not touched before then.
        unsafe {
            cu_sys::cuMemcpyDtoHAsync_v2(dst, e.ptr, e.len * e.width(), self.stream.cu_stream())
        }
        .result()
        .ctx(what)?;
        Ok(out)
    }
}
