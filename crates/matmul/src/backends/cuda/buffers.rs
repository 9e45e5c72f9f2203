//! Device buffers: the operands' upload, C's allocation, poisoning or zeroing, and download.

use cudarc::driver::sys as cu_sys;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use half::{bf16, f16};

use super::external::ExternalBuf;
use super::libs::Context;
use super::CudaBackend;
use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::matrix::{AnyMatrix, Matrix, POISON_BF16, POISON_F16, POISON_F32, POISON_U32};
use crate::problem::Problem;
use crate::view::{AnyMatRef, MatRef};

/// A matrix on the device: the backend's own allocation, or another library's memory wrapped
/// without a copy (`external.rs`).
pub(super) enum DeviceBuf {
    F32(CudaSlice<f32>),
    U32(CudaSlice<u32>),
    F16(CudaSlice<f16>),
    Bf16(CudaSlice<bf16>),
    External(ExternalBuf),
}

impl DeviceBuf {
    pub(super) fn ptr(&self, stream: &CudaStream) -> u64 {
        match self {
            DeviceBuf::F32(s) => s.device_ptr(stream).0,
            DeviceBuf::U32(s) => s.device_ptr(stream).0,
            DeviceBuf::F16(s) => s.device_ptr(stream).0,
            DeviceBuf::Bf16(s) => s.device_ptr(stream).0,
            DeviceBuf::External(e) => e.ptr,
        }
    }
}

impl CudaBackend {
    pub(super) fn upload(&self, m: &AnyMatrix) -> Result<DeviceBuf> {
        let what = || {
            format!(
                "copying a {}x{} {} matrix to the device",
                m.rows(),
                m.cols(),
                m.dtype()
            )
        };
        Ok(match m {
            AnyMatrix::F32(x) => DeviceBuf::F32(self.stream.clone_htod(&x.data).ctx(what)?),
            AnyMatrix::U32(x) => DeviceBuf::U32(self.stream.clone_htod(&x.data).ctx(what)?),
            AnyMatrix::F16(x) => DeviceBuf::F16(self.stream.clone_htod(&x.data).ctx(what)?),
            AnyMatrix::Bf16(x) => DeviceBuf::Bf16(self.stream.clone_htod(&x.data).ctx(what)?),
        })
    }

    /// Copies the borrowed `m` into a dense device matrix: from the caller's memory, no host
    /// copy (rows with gaps: one 2D copy that drops them).
    pub(super) fn upload_ref(&self, m: AnyMatRef<'_>) -> Result<DeviceBuf> {
        m.check()?;
        fn dense<T: cudarc::driver::DeviceRepr + Element>(
            b: &CudaBackend,
            m: MatRef<'_, T>,
        ) -> Result<CudaSlice<T>> {
            let (rows, cols) = m.shape();
            let what = || {
                format!(
                    "copying a {rows}x{cols} {} matrix to the device",
                    T::STORAGE
                )
            };
            if m.is_dense() {
                return b.stream.clone_htod(m.data()).ctx(what);
            }
            // SAFETY: every element is written by the copy below before anything reads it.
            let dst = unsafe { b.stream.alloc::<T>(rows * cols) }.ctx(what)?;
            let elem = std::mem::size_of::<T>();
            let copy = cu_sys::CUDA_MEMCPY2D {
                srcXInBytes: 0,
                srcY: 0,
                srcMemoryType: cu_sys::CUmemorytype::CU_MEMORYTYPE_HOST,
                srcHost: m.data().as_ptr() as *const std::ffi::c_void,
                srcDevice: 0,
                srcArray: std::ptr::null_mut(),
                srcPitch: m.stride() * elem,
                dstXInBytes: 0,
                dstY: 0,
                dstMemoryType: cu_sys::CUmemorytype::CU_MEMORYTYPE_DEVICE,
                dstHost: std::ptr::null_mut(),
                dstDevice: dst.device_ptr(&b.stream).0,
                dstArray: std::ptr::null_mut(),
                dstPitch: cols * elem,
                WidthInBytes: cols * elem,
                Height: rows,
            };
            b.ctx.bind_to_thread().ctx(what)?;
            // SAFETY: the source spans (rows − 1)·stride + cols elements of `m`'s slice (MatRef
            // checks it), the destination rows·cols; the copy from pageable memory has read the
            // source when it returns (synchronous with the host), so `m` may go after it.
            unsafe { cu_sys::cuMemcpy2DAsync_v2(&copy, b.stream.cu_stream()) }
                .result()
                .ctx(what)?;
            b.stream.synchronize().ctx(what)?;
            Ok(dst)
        }
        Ok(match m {
            AnyMatRef::F32(x) => DeviceBuf::F32(dense(self, x)?),
            AnyMatRef::U32(x) => DeviceBuf::U32(dense(self, x)?),
            AnyMatRef::F16(x) => DeviceBuf::F16(dense(self, x)?),
            AnyMatRef::Bf16(x) => DeviceBuf::Bf16(dense(self, x)?),
        })
    }

    /// An uninitialized m×n output of C's type (u32, f32, or bf16/f16 when the problem asks for
    /// C in the input dtype).
    pub(super) fn alloc_output(&self, problem: &Problem) -> Result<DeviceBuf> {
        let len = problem.m * problem.n;
        let what = || format!("allocating C for {problem}");
        // SAFETY: the buffer is filled (poison or zeros) before anything reads it.
        Ok(unsafe {
            match problem.c_dtype() {
                DType::U32 => DeviceBuf::U32(self.stream.alloc::<u32>(len).ctx(what)?),
                DType::Bf16 => DeviceBuf::Bf16(self.stream.alloc::<bf16>(len).ctx(what)?),
                DType::F16 => DeviceBuf::F16(self.stream.alloc::<f16>(len).ctx(what)?),
                DType::F32 | DType::Tf32 => {
                    DeviceBuf::F32(self.stream.alloc::<f32>(len).ctx(what)?)
                }
            }
        })
    }

    /// Fills C with zeros (for kernels that accumulate into it) or the poison pattern of its
    /// type (NaN, or 0xDEADBEEF for u32).
    pub(super) fn fill_output(&self, c: &mut DeviceBuf, zero: bool) -> Result<()> {
        let stream = self.stream.cu_stream();
        // (address, elements, bytes per element, the poison pattern's bits)
        let (ptr, len, width, poison) = match c {
            DeviceBuf::F32(s) => (
                s.device_ptr(&self.stream).0,
                s.len(),
                4,
                POISON_F32.to_bits(),
            ),
            DeviceBuf::U32(s) => (s.device_ptr(&self.stream).0, s.len(), 4, POISON_U32),
            DeviceBuf::Bf16(s) => {
                let bits = POISON_BF16.to_bits() as u32;
                (s.device_ptr(&self.stream).0, s.len(), 2, bits)
            }
            DeviceBuf::F16(s) => {
                let bits = POISON_F16.to_bits() as u32;
                (s.device_ptr(&self.stream).0, s.len(), 2, bits)
            }
            DeviceBuf::External(e) => (e.ptr, e.len, e.width(), e.poison_bits()),
        };
        let value = if zero { 0 } else { poison };
        self.ctx
            .bind_to_thread()
            .ctx(|| "binding the context".into())?;
        // SAFETY: `ptr` is a live allocation of `len` elements of `width` bytes; a 2-byte
        // pattern fits its u16.
        let done = if width == 2 {
            unsafe { cu_sys::cuMemsetD16Async(ptr, value as u16, len, stream) }
        } else {
            unsafe { cu_sys::cuMemsetD32Async(ptr, value, len, stream) }
        };
        done.result()
            .ctx(|| format!("cuMemsetD{}Async on C", width * 8))
    }

    /// Sets `len` elements of `width` bytes (2 or 4) at `ptr` to zero, on the stream.
    pub(super) fn zero_at(&self, ptr: u64, len: usize, width: usize) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .ctx(|| "binding the context".into())?;
        let stream = self.stream.cu_stream();
        // SAFETY: the caller passes a live allocation of `len` elements of `width` bytes.
        let done = if width == 2 {
            unsafe { cu_sys::cuMemsetD16Async(ptr, 0, len, stream) }
        } else {
            unsafe { cu_sys::cuMemsetD32Async(ptr, 0, len, stream) }
        };
        done.result().ctx(|| format!("cuMemsetD{}Async", width * 8))
    }

    pub(super) fn download(&self, c: &DeviceBuf, problem: &Problem) -> Result<AnyMatrix> {
        self.download_matrix(c, problem.m, problem.n)
            .map_err(|e| match e {
                crate::Error::Cuda { context, message } => crate::Error::Cuda {
                    context: format!("{context} (C of {problem})"),
                    message,
                },
                e => e,
            })
    }

    /// Copies the `m`×`n` matrix in `c` to the host, after the stream's work.
    pub(super) fn download_matrix(&self, c: &DeviceBuf, m: usize, n: usize) -> Result<AnyMatrix> {
        let what = || format!("copying a {m}x{n} matrix to the host");
        // A large C goes into host pages touched beforehand, by every core: a copy into fresh
        // pages faults them in one by one under the driver (64 MiB on the H200's host: 57 ms,
        // 1.2 GB/s; touched first, 14 ms). Below 8 MiB the threads cost more than they save.
        fn fetch<T: cudarc::driver::DeviceRepr + Element>(
            b: &CudaBackend,
            s: &CudaSlice<T>,
        ) -> std::result::Result<Vec<T>, cudarc::driver::DriverError> {
            use rayon::prelude::*;
            if s.len() * std::mem::size_of::<T>() < 8 << 20 {
                return b.stream.clone_dtoh(s);
            }
            let mut host: Vec<T> = Vec::with_capacity(s.len());
            host.spare_capacity_mut()
                .par_chunks_mut(1 << 16)
                .for_each(|c| {
                    for x in c {
                        x.write(T::default());
                    }
                });
            // SAFETY: every element was written just above.
            unsafe { host.set_len(s.len()) };
            b.stream.memcpy_dtoh(s, &mut host)?;
            Ok(host)
        }
        let out = match c {
            DeviceBuf::F32(s) => AnyMatrix::F32(Matrix::from_vec(m, n, fetch(self, s).ctx(what)?)?),
            DeviceBuf::U32(s) => AnyMatrix::U32(Matrix::from_vec(m, n, fetch(self, s).ctx(what)?)?),
            DeviceBuf::Bf16(s) => {
                AnyMatrix::Bf16(Matrix::from_vec(m, n, fetch(self, s).ctx(what)?)?)
            }
            DeviceBuf::F16(s) => AnyMatrix::F16(Matrix::from_vec(m, n, fetch(self, s).ctx(what)?)?),
            DeviceBuf::External(e) => self.download_external(e, m, n)?,
        };
        self.sync(|| format!("after copying a {m}x{n} matrix to the host"))?;
        Ok(out)
    }
}
