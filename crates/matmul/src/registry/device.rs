//! What the registry's rules and the launch geometry know of a CUDA device: its properties, read
//! by the CUDA backend (`cuda::device`) and given to the kernel families, the cost model and the
//! tune tables.

use serde::Serialize;

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
