//! DLPack in and out: capsules taken from objects with `__dlpack__` (numpy, torch, CuPy, JAX)
//! and made for [`crate::DeviceArray`]'s `__dlpack__`. The C structs are dlpark's (`ffi`,
//! generated from dlpack.h); the capsules are handled here with PyO3's FFI because dlpark's
//! `pyo3` feature needs PyO3 0.28 or later.

use std::ffi::{c_void, CStr};
use std::ptr;

use dlpark::ffi::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned,
    DLPackVersion, DLTensor,
};
use dlpark::DlpackFlags;
use matmul::{AnyMatrix, DType, Element, Matrix};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi as pyffi;
use pyo3::prelude::*;
use pyo3::types::PyDict;

const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";

/// DLPack's device types this module knows.
pub const DEVICE_CPU: i32 = DLDeviceType::CPU.0 as i32;
pub const DEVICE_CUDA: i32 = DLDeviceType::CUDA.0 as i32;
pub const DEVICE_CUDA_MANAGED: i32 = DLDeviceType::CUDAMANAGED.0 as i32;
const DEVICE_CUDA_HOST: i32 = DLDeviceType::CUDAHOST.0 as i32;

/// A tensor taken from a capsule: ours until dropped, when its producer's deleter runs (the
/// DLPack spec has deleters callable from any thread, taking the GIL themselves if they need it).
pub struct Taken {
    legacy: *mut DLManagedTensor,
    versioned: *mut DLManagedTensorVersioned,
}

// SAFETY: a DLPack tensor's deleter may be called from any thread, and nothing else here touches
// the tensor after it is taken but reads of its (immutable) metadata.
unsafe impl Send for Taken {}
unsafe impl Sync for Taken {}

impl Drop for Taken {
    fn drop(&mut self) {
        // SAFETY: the pointer came from a capsule we renamed "used_…": we own it and call its
        // deleter once.
        unsafe {
            if !self.versioned.is_null() {
                if let Some(d) = (*self.versioned).deleter {
                    d(self.versioned);
                }
            } else if !self.legacy.is_null() {
                if let Some(d) = (*self.legacy).deleter {
                    d(self.legacy);
                }
            }
        }
    }
}

impl Taken {
    fn tensor(&self) -> &DLTensor {
        // SAFETY: one of the two is non-null and live until `self` drops.
        unsafe {
            if self.versioned.is_null() {
                &(*self.legacy).dl_tensor
            } else {
                &(*self.versioned).dl_tensor
            }
        }
    }

    /// The producer marked the data read-only (versioned capsules only).
    pub fn read_only(&self) -> bool {
        !self.versioned.is_null()
            && unsafe { (*self.versioned).flags }.contains(DlpackFlags::READ_ONLY)
    }
}

/// `obj.__dlpack_device__()`: (device type, device id).
pub fn device_of(obj: &Bound<'_, PyAny>) -> PyResult<(i32, i32)> {
    obj.call_method0("__dlpack_device__")?.extract()
}

/// Whether `obj` speaks DLPack.
pub fn speaks_dlpack(obj: &Bound<'_, PyAny>) -> bool {
    obj.hasattr("__dlpack__").unwrap_or(false) && obj.hasattr("__dlpack_device__").unwrap_or(false)
}

/// Takes `obj`'s DLPack capsule: `obj.__dlpack__(stream=stream, max_version=(1, 0))`, or without
/// `max_version` for producers older than DLPack 1.0. `stream` is the consumer's stream per the
/// spec (for CUDA, the handle of the stream that will use the data: the producer orders its
/// pending work before it).
pub fn take(obj: &Bound<'_, PyAny>, stream: Option<usize>) -> PyResult<Taken> {
    let py = obj.py();
    let kwargs = PyDict::new(py);
    kwargs.set_item("stream", stream)?;
    kwargs.set_item("max_version", (1, 0))?;
    let capsule = match obj.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => c,
        Err(e) if e.is_instance_of::<PyTypeError>(py) => {
            let kwargs = PyDict::new(py);
            kwargs.set_item("stream", stream)?;
            obj.call_method("__dlpack__", (), Some(&kwargs))?
        }
        Err(e) => return Err(e),
    };
    let cap = capsule.as_ptr();
    // SAFETY: `cap` is a live object (held by `capsule`); the capsule calls do not keep it.
    unsafe {
        if pyffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) == 1 {
            let p = pyffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr())
                as *mut DLManagedTensorVersioned;
            if p.is_null() {
                return Err(PyErr::fetch(py));
            }
            if pyffi::PyCapsule_SetName(cap, USED_VERSIONED.as_ptr()) != 0 {
                return Err(PyErr::fetch(py));
            }
            let taken = Taken {
                legacy: ptr::null_mut(),
                versioned: p,
            };
            let v = (*p).version;
            if v.major != 1 {
                return Err(PyBufferError::new_err(format!(
                    "DLPack {}.{}: matmul reads DLPack 1.x",
                    v.major, v.minor
                )));
            }
            Ok(taken)
        } else if pyffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) == 1 {
            let p = pyffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr()) as *mut DLManagedTensor;
            if p.is_null() {
                return Err(PyErr::fetch(py));
            }
            if pyffi::PyCapsule_SetName(cap, USED_LEGACY.as_ptr()) != 0 {
                return Err(PyErr::fetch(py));
            }
            Ok(Taken {
                legacy: p,
                versioned: ptr::null_mut(),
            })
        } else {
            Err(PyValueError::new_err(
                "__dlpack__ returned no unused DLPack capsule",
            ))
        }
    }
}

/// What a taken tensor holds, checked: a 2-D matrix of a dtype matmul takes.
pub struct Described {
    pub dtype: DType,
    pub rows: usize,
    pub cols: usize,
    /// Element strides (row, column).
    pub strides: (isize, isize),
    /// The first element's address (data + byte_offset).
    pub address: u64,
    /// (DLPack device type, device id).
    pub device: (i32, i32),
}

impl Described {
    /// Row-major without gaps (strides of size-1 dimensions do not matter).
    pub fn row_major(&self) -> bool {
        (self.cols <= 1 || self.strides.1 == 1)
            && (self.rows <= 1 || self.strides.0 == self.cols as isize)
    }

    /// On a CUDA device (device or managed memory).
    pub fn on_cuda(&self) -> bool {
        self.device.0 == DEVICE_CUDA || self.device.0 == DEVICE_CUDA_MANAGED
    }
}

/// Reads and checks a taken tensor's metadata.
pub fn describe(t: &Taken) -> PyResult<Described> {
    let x = t.tensor();
    let dt = x.dtype;
    let dtype = match (dt.code, dt.bits, dt.lanes) {
        (DLDataTypeCode::FLOAT, 32, 1) => DType::F32,
        (DLDataTypeCode::UINT, 32, 1) => DType::U32,
        (DLDataTypeCode::FLOAT, 16, 1) => DType::F16,
        (DLDataTypeCode::BFLOAT, 16, 1) => DType::Bf16,
        (code, bits, lanes) => {
            return Err(PyValueError::new_err(format!(
                "DLPack dtype (code {}, {bits} bits, {lanes} lanes): matmul takes float32, uint32, \
                 float16 or bfloat16",
                code.0
            )))
        }
    };
    if x.ndim != 2 {
        return Err(PyValueError::new_err(format!(
            "expected a 2-D tensor, not {}-D",
            x.ndim
        )));
    }
    // SAFETY: ndim = 2: shape holds 2 entries, strides 2 or is null (row-major, before DLPack 1.2).
    let (rows, cols, strides) = unsafe {
        let s = std::slice::from_raw_parts(x.shape, 2);
        let strides = if x.strides.is_null() {
            (s[1] as isize, 1)
        } else {
            let st = std::slice::from_raw_parts(x.strides, 2);
            (st[0] as isize, st[1] as isize)
        };
        (s[0], s[1], strides)
    };
    if rows < 0 || cols < 0 {
        return Err(PyValueError::new_err("a tensor of negative shape"));
    }
    let device = (x.device.device_type.0 as i32, x.device.device_id);
    Ok(Described {
        dtype,
        rows: rows as usize,
        cols: cols as usize,
        strides,
        address: (x.data as u64).wrapping_add(x.byte_offset),
        device,
    })
}

/// A host tensor's elements as a row-major matrix (one copy, any strides).
pub fn copy_host(t: &Taken, d: &Described) -> PyResult<AnyMatrix> {
    if d.on_cuda() || !(d.device.0 == DEVICE_CPU || d.device.0 == DEVICE_CUDA_HOST) {
        return Err(PyValueError::new_err(format!(
            "a tensor on DLPack device type {} is not host memory",
            d.device.0
        )));
    }
    fn typed<T: Element>(d: &Described) -> matmul::Result<AnyMatrix> {
        let base = d.address as *const T;
        let mut data = Vec::with_capacity(d.rows * d.cols);
        if d.row_major() {
            // SAFETY: the producer's tensor holds rows·cols contiguous elements at `base`.
            data.extend_from_slice(unsafe { std::slice::from_raw_parts(base, d.rows * d.cols) });
        } else {
            for i in 0..d.rows as isize {
                for j in 0..d.cols as isize {
                    // SAFETY: (i, j) is within the producer's shape; its strides address it.
                    data.push(unsafe { *base.offset(i * d.strides.0 + j * d.strides.1) });
                }
            }
        }
        Ok(AnyMatrix::from(Matrix::from_vec(d.rows, d.cols, data)?))
    }
    let _ = t; // the memory stays alive while `t` does
    match d.dtype {
        DType::U32 => typed::<u32>(d),
        DType::F16 => typed::<half::f16>(d),
        DType::Bf16 => typed::<half::bf16>(d),
        _ => typed::<f32>(d),
    }
    .map_err(crate::py_err)
}

/// What an exported capsule owns: the managed tensor first (its address is the capsule's
/// pointer), its shape and strides, and what keeps the data alive (the DeviceArray, or a copy).
#[repr(C)]
struct Exported<M> {
    managed: M,
    shape: [i64; 2],
    strides: [i64; 2],
    owner: Option<Py<PyAny>>,
    copy: Option<AnyMatrix>,
}

fn dl_dtype(dtype: DType) -> DLDataType {
    let (code, bits) = match dtype {
        DType::U32 => (DLDataTypeCode::UINT, 32),
        DType::F16 => (DLDataTypeCode::FLOAT, 16),
        DType::Bf16 => (DLDataTypeCode::BFLOAT, 16),
        DType::F32 | DType::Tf32 => (DLDataTypeCode::FLOAT, 32),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

/// What to export: a row-major rows×cols matrix at `address` on `device`, kept alive by `owner`
/// (a Python object) or owned (`copy`, whose data is the address).
pub struct Export {
    pub dtype: DType,
    pub rows: usize,
    pub cols: usize,
    pub device: (i32, i32),
    pub owner: Option<Py<PyAny>>,
    pub copy: Option<AnyMatrix>,
    pub address: u64,
}

fn drop_exported<M>(p: *mut Exported<M>) {
    // SAFETY: `p` came from Box::into_raw in `capsule`; the deleter runs once.
    let exported = unsafe { Box::from_raw(p) };
    if exported.owner.is_some() {
        Python::attach(move |_| drop(exported));
    }
}

unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    drop_exported(p as *mut Exported<DLManagedTensor>);
}

unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    drop_exported(p as *mut Exported<DLManagedTensorVersioned>);
}

/// A capsule's destructor: the tensor is deleted unless a consumer took it (renamed it).
unsafe extern "C" fn capsule_legacy(cap: *mut pyffi::PyObject) {
    unsafe {
        if pyffi::PyCapsule_IsValid(cap, LEGACY.as_ptr()) == 1 {
            let p = pyffi::PyCapsule_GetPointer(cap, LEGACY.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = (*p).deleter {
                d(p);
            }
        }
    }
}

unsafe extern "C" fn capsule_versioned(cap: *mut pyffi::PyObject) {
    unsafe {
        if pyffi::PyCapsule_IsValid(cap, VERSIONED.as_ptr()) == 1 {
            let p = pyffi::PyCapsule_GetPointer(cap, VERSIONED.as_ptr())
                as *mut DLManagedTensorVersioned;
            if let Some(d) = (*p).deleter {
                d(p);
            }
        }
    }
}

/// The DLPack capsule of `e`: versioned ("dltensor_versioned", DLPack 1.0) when the consumer
/// asked with `max_version` of at least 1, else legacy ("dltensor").
pub fn capsule(py: Python<'_>, e: Export, versioned: bool) -> PyResult<Bound<'_, PyAny>> {
    let tensor = DLTensor {
        data: e.address as *mut c_void,
        device: DLDevice {
            device_type: DLDeviceType(e.device.0 as u32),
            device_id: e.device.1,
        },
        ndim: 2,
        dtype: dl_dtype(e.dtype),
        shape: ptr::null_mut(),
        strides: ptr::null_mut(),
        byte_offset: 0,
    };
    let shape = [e.rows as i64, e.cols as i64];
    let strides = [e.cols as i64, 1];
    let copied = e.copy.is_some();
    let (ptr, name, destructor): (*mut c_void, &CStr, Option<pyffi::PyCapsule_Destructor>) =
        if versioned {
            let mut flags = DlpackFlags::empty();
            if copied {
                flags |= DlpackFlags::IS_COPIED;
            }
            let b = Box::into_raw(Box::new(Exported {
                managed: DLManagedTensorVersioned {
                    version: DLPackVersion { major: 1, minor: 0 },
                    manager_ctx: ptr::null_mut(),
                    deleter: Some(delete_versioned),
                    flags,
                    dl_tensor: tensor,
                },
                shape,
                strides,
                owner: e.owner,
                copy: e.copy,
            }));
            // SAFETY: `b` is a live box; shape and strides point into it, which never moves.
            unsafe {
                (*b).managed.manager_ctx = b.cast();
                (*b).managed.dl_tensor.shape = (*b).shape.as_mut_ptr();
                (*b).managed.dl_tensor.strides = (*b).strides.as_mut_ptr();
            }
            (b.cast(), VERSIONED, Some(capsule_versioned))
        } else {
            let b = Box::into_raw(Box::new(Exported {
                managed: DLManagedTensor {
                    dl_tensor: tensor,
                    manager_ctx: ptr::null_mut(),
                    deleter: Some(delete_legacy),
                },
                shape,
                strides,
                owner: e.owner,
                copy: e.copy,
            }));
            // SAFETY: as above.
            unsafe {
                (*b).managed.manager_ctx = b.cast();
                (*b).managed.dl_tensor.shape = (*b).shape.as_mut_ptr();
                (*b).managed.dl_tensor.strides = (*b).strides.as_mut_ptr();
            }
            (b.cast(), LEGACY, Some(capsule_legacy))
        };
    // SAFETY: `ptr` is the managed tensor; the destructor deletes it unless a consumer took it.
    let cap = unsafe { pyffi::PyCapsule_New(ptr, name.as_ptr(), destructor) };
    if cap.is_null() {
        // The capsule was not made: delete the tensor ourselves.
        unsafe {
            if versioned {
                delete_versioned(ptr.cast());
            } else {
                delete_legacy(ptr.cast());
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, cap) })
}
