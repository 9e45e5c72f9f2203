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
use crate::view::{AnyMatRef, MatMut, MatRef};

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

/// Where one end of a 2D copy ([`copy_2d`]) is: its memory, the byte column and the row its
/// block starts at, and the bytes from one row to the next.
#[derive(Clone, Copy)]
pub(super) struct Side {
    mem: Mem,
    x_bytes: usize,
    y: usize,
    pitch: usize,
}

#[derive(Clone, Copy)]
enum Mem {
    Host(*mut std::ffi::c_void),
    Device(u64),
}

impl Side {
    /// Host memory from `ptr` (rows `pitch` bytes apart); the copy only reads it when it is
    /// the source.
    pub(super) fn host(ptr: *const std::ffi::c_void, pitch: usize) -> Side {
        Side::at(Mem::Host(ptr as *mut std::ffi::c_void), pitch)
    }

    /// Device memory from `ptr` (rows `pitch` bytes apart).
    pub(super) fn device(ptr: u64, pitch: usize) -> Side {
        Side::at(Mem::Device(ptr), pitch)
    }

    fn at(mem: Mem, pitch: usize) -> Side {
        Side {
            mem,
            x_bytes: 0,
            y: 0,
            pitch,
        }
    }

    /// The block from byte `x_bytes` of row `y` on.
    pub(super) fn offset(self, x_bytes: usize, y: usize) -> Side {
        Side { x_bytes, y, ..self }
    }
}

/// Enqueues one `cuMemcpy2DAsync` on `stream` of `height` rows of `width` bytes from `src` to
/// `dst` (the stream's context bound to this thread by the caller).
///
/// # Safety
/// Both sides must address `height` rows of `width` bytes at their pitch, and stay live (a
/// host source unchanged, a host destination untouched) until the copy is done.
pub(super) unsafe fn copy_2d(
    stream: &CudaStream,
    src: Side,
    dst: Side,
    width: usize,
    height: usize,
) -> std::result::Result<(), cudarc::driver::DriverError> {
    use cu_sys::CUmemorytype::{CU_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_HOST};
    let split = |m: Mem| match m {
        Mem::Host(p) => (CU_MEMORYTYPE_HOST, p, 0),
        Mem::Device(d) => (CU_MEMORYTYPE_DEVICE, std::ptr::null_mut(), d),
    };
    let (src_type, src_host, src_device) = split(src.mem);
    let (dst_type, dst_host, dst_device) = split(dst.mem);
    let copy = cu_sys::CUDA_MEMCPY2D {
        srcXInBytes: src.x_bytes,
        srcY: src.y,
        srcMemoryType: src_type,
        srcHost: src_host,
        srcDevice: src_device,
        srcArray: std::ptr::null_mut(),
        srcPitch: src.pitch,
        dstXInBytes: dst.x_bytes,
        dstY: dst.y,
        dstMemoryType: dst_type,
        dstHost: dst_host,
        dstDevice: dst_device,
        dstArray: std::ptr::null_mut(),
        dstPitch: dst.pitch,
        WidthInBytes: width,
        Height: height,
    };
    // SAFETY: the caller's.
    unsafe { cu_sys::cuMemcpy2DAsync_v2(&copy, stream.cu_stream()) }.result()
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
                // From page-locked memory the copy is asynchronous: wait for it, as `m`'s
                // borrow ends here (from pageable memory it has read `m` when it returns).
                let dst = b.stream.clone_htod(m.data()).ctx(what)?;
                b.stream.synchronize().ctx(what)?;
                return Ok(dst);
            }
            // SAFETY: every element is written by the copy below before anything reads it.
            let dst = unsafe { b.stream.alloc::<T>(rows * cols) }.ctx(what)?;
            let elem = std::mem::size_of::<T>();
            b.ctx.bind_to_thread().ctx(what)?;
            let from = Side::host(m.data().as_ptr().cast(), m.stride() * elem);
            let to = Side::device(dst.device_ptr(&b.stream).0, cols * elem);
            // SAFETY: the source spans (rows − 1)·stride + cols elements of `m`'s slice (MatRef
            // checks it), the destination rows·cols; the stream is synchronized below, before
            // `m`'s borrow ends (from page-locked memory the copy is asynchronous).
            unsafe { copy_2d(&b.stream, from, to, cols * elem, rows) }.ctx(what)?;
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

    /// Copies the `from` block of `src` to `at` in `dst`, one 2D copy on the stream
    /// ([`crate::Backend::copy_block`]).
    pub(super) fn copy_block_data(
        &self,
        src: &crate::backends::DeviceData,
        from: crate::view::Block,
        dst: &mut crate::backends::DeviceData,
        at: (usize, usize),
    ) -> Result<()> {
        self.check_alive()?;
        crate::backends::check_copy(src, from, dst, at)?;
        let elem = src.dtype().input_bytes();
        let (src_cols, dst_cols) = (src.shape().1, dst.shape().1);
        let s = &self.stream;
        let from_ptr = src.buffer::<DeviceBuf>(self.instance, "the source")?.ptr(s);
        let to_ptr = dst
            .buffer::<DeviceBuf>(self.instance, "the destination")?
            .ptr(s);
        if from.rows == 0 || from.cols == 0 {
            return Ok(());
        }
        let what = || format!("copying a {}x{} block on the device", from.rows, from.cols);
        self.ctx.bind_to_thread().ctx(what)?;
        let src_side = Side::device(from_ptr, src_cols * elem).offset(from.col * elem, from.row);
        let dst_side = Side::device(to_ptr, dst_cols * elem).offset(at.1 * elem, at.0);
        // SAFETY: both are live device allocations of their matrices' shapes, and check_copy
        // keeps both blocks within them.
        unsafe { copy_2d(s, src_side, dst_side, from.cols * elem, from.rows) }.ctx(what)
    }

    /// Copies `d` into `dst` after the stream's work: one (2D where `dst`'s rows have gaps)
    /// copy straight into the caller's memory ([`crate::Backend::download_into`]).
    pub(super) fn download_into_data(
        &self,
        d: &crate::backends::DeviceData,
        dst: crate::view::AnyMatMut<'_>,
    ) -> Result<()> {
        use crate::view::AnyMatMut;
        self.check_alive()?;
        crate::backends::check_destination(d, &dst)?;
        let buf: &DeviceBuf = d.buffer(self.instance, "the matrix")?;
        if let DeviceBuf::External(_) = buf {
            let mut dst = dst;
            return dst.copy_from(&self.download_data(d)?);
        }
        fn fetch<T: Element>(b: &CudaBackend, src: u64, mut dst: MatMut<'_, T>) -> Result<()> {
            let (rows, cols) = dst.shape();
            if rows == 0 || cols == 0 {
                return Ok(());
            }
            let what = || format!("copying a {rows}x{cols} matrix to the host");
            let elem = std::mem::size_of::<T>();
            let pitch = dst.stride() * elem;
            let host = dst.data_mut().as_mut_ptr();
            b.ctx.bind_to_thread().ctx(what)?;
            let from = Side::device(src, cols * elem);
            let to = Side::host(host.cast_const().cast(), pitch);
            // SAFETY: the source is the rows×cols matrix (check_destination); the destination
            // spans (rows − 1)·stride + cols elements of `dst` (MatMut checks it), borrowed
            // mutably until the stream is synchronized below.
            unsafe { copy_2d(&b.stream, from, to, cols * elem, rows) }.ctx(what)?;
            b.sync(what)
        }
        let src = buf.ptr(&self.stream);
        match dst {
            AnyMatMut::F32(m) => fetch(self, src, m),
            AnyMatMut::U32(m) => fetch(self, src, m),
            AnyMatMut::F16(m) => fetch(self, src, m),
            AnyMatMut::Bf16(m) => fetch(self, src, m),
        }
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
