//! Device discovery and properties, read from the driver without creating a context.

use serde::Serialize;

use cudarc::driver::result;
use cudarc::driver::sys::{self, CUdevice_attribute as Attr};

use super::compile;
use super::libs::{self, Context};
use crate::error::{Error, Result};

/// What matters about one CUDA device for running and judging kernels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeviceInfo {
    /// The driver's device index (0 for the first GPU).
    pub ordinal: usize,
    /// The marketing name ("NVIDIA H100 80GB HBM3").
    pub name: String,
    /// (major, minor), e.g. (9, 0) for Hopper.
    pub compute_capability: (u32, u32),
    /// The NVRTC target this crate compiles for: `sm_90a` on 9.0, else `sm_XY`.
    pub arch: String,
    /// Streaming multiprocessors (132 on H100 SXM): one wave of a persistent grid.
    pub sm_count: u32,
    /// Most threads one block may have (1024).
    pub max_threads_per_block: u32,
    /// Shared memory a block gets without opting in (48 KiB everywhere since Volta).
    pub shared_per_block: usize,
    /// Largest dynamic shared memory a block may opt in to (227 KiB on H100).
    pub shared_per_block_optin: usize,
    /// Shared memory of one SM, shared by its resident blocks (bytes).
    pub shared_per_sm: usize,
    /// 32-bit registers one block may use (65536).
    pub registers_per_block: u32,
    /// L2 cache size (bytes).
    pub l2_bytes: usize,
    /// Peak SM clock, kHz.
    pub sm_clock_khz: u32,
    /// Peak memory clock, kHz.
    pub memory_clock_khz: u32,
    /// DRAM bus width (bits).
    pub memory_bus_bits: u32,
    /// Device memory (bytes).
    pub total_memory_bytes: usize,
    /// "13.0": the newest CUDA the driver supports.
    pub driver_version: String,
    /// "13.0", or None when libnvrtc is not loadable.
    pub nvrtc_version: Option<String>,
}

impl DeviceInfo {
    /// Who this device is, for the tune tables kept for it: its class (architecture and SM
    /// count), model and driver.
    pub fn identity(&self) -> crate::registry::rules::DeviceIdentity {
        crate::registry::rules::DeviceIdentity {
            class: crate::registry::rules::device_class(self.compute_capability, self.sm_count),
            model: self.name.clone(),
            driver: self.driver_version.clone(),
        }
    }

    /// Theoretical DRAM bandwidth from the clock and bus width (double data rate), GB/s.
    pub fn peak_memory_bandwidth_gbs(&self) -> f64 {
        2.0 * self.memory_clock_khz as f64 * 1e3 * (self.memory_bus_bits as f64 / 8.0) / 1e9
    }

    /// One line: name, arch, SMs, clocks, memory, driver and NVRTC versions.
    pub fn summary(&self) -> String {
        let gib = self.total_memory_bytes as f64 / (1u64 << 30) as f64;
        format!(
            "{} (#{}, {}, {} SMs @ {} MHz, {:.1} GiB @ {:.0} GB/s, L2 {} MiB, smem/block {} KiB opt-in, driver CUDA {}, NVRTC {})",
            self.name,
            self.ordinal,
            self.arch,
            self.sm_count,
            self.sm_clock_khz / 1000,
            gib,
            self.peak_memory_bandwidth_gbs(),
            self.l2_bytes >> 20,
            self.shared_per_block_optin >> 10,
            self.driver_version,
            self.nvrtc_version.as_deref().unwrap_or("not found"),
        )
    }
}

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
