//! Device discovery and properties, read from the driver without creating a context.

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};

use super::compile;
use super::libs::{self, Context};
use crate::error::{Error, Result};

pub use crate::registry::DeviceInfo;

/// Initializes the driver and returns the number of devices (0 when the driver has none).
pub(crate) fn init_and_count() -> Result<usize> {
    libs::driver()?;
    match result::init() {
        Ok(()) => {}
        Err(e) if e.0 == sys::CUresult::CUDA_ERROR_NO_DEVICE => return Ok(0),
        Err(e) => return Err(Error::NoGpu(format!("cuInit failed: {e:?}"))),
    }
    let n = result::device::get_count().ctx(|| "cuDeviceGetCount".into())?;
    Ok(n.max(0) as usize)
}

/// Every CUDA device the driver reports (empty when it reports none). A missing driver library
/// or a failing `cuInit` is `Error::NoGpu`.
pub fn list_devices() -> Result<Vec<DeviceInfo>> {
    let count = init_and_count()?;
    (0..count).map(query).collect()
}

/// Properties of device `ordinal` (the driver must be initialized).
pub(crate) fn query(ordinal: usize) -> Result<DeviceInfo> {
    let dev = result::device::get(ordinal as i32).ctx(|| format!("cuDeviceGet({ordinal})"))?;
    // SAFETY: `dev` came from cuDeviceGet.
    let attr = |a: Attr| -> u32 {
        unsafe { result::device::get_attribute(dev, a) }
            .map(|v| v.max(0) as u32)
            .unwrap_or(0)
    };
    let name = result::device::get_name(dev).ctx(|| "cuDeviceGetName".into())?;
    // SAFETY: as above.
    let total = unsafe { result::device::total_mem(dev) }.ctx(|| "cuDeviceTotalMem".into())?;
    let cc = (
        attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
        attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
    );
    let mut driver = 0i32;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut driver) }
        .result()
        .ctx(|| "cuDriverGetVersion".into())?;
    Ok(DeviceInfo {
        ordinal,
        name,
        compute_capability: cc,
        arch: compile::arch_for(cc),
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
        max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
        shared_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK) as usize,
        shared_per_block_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            as usize,
        shared_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
            as usize,
        registers_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
        l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE) as usize,
        sm_clock_khz: attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
        memory_clock_khz: attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        memory_bus_bits: attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        total_memory_bytes: total,
        driver_version: format!("{}.{}", driver / 1000, driver % 1000 / 10),
        nvrtc_version: compile::nvrtc_version()
            .ok()
            .map(|(a, b)| format!("{a}.{b}")),
    })
}
