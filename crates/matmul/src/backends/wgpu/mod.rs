//! The wgpu backend: WGSL kernels (`kernels/wgsl/`) through wgpu on Vulkan, Metal or DX12, found at
//! run time (no GPU, driver or SDK is needed to build). In CI it runs on lavapipe, Mesa's software
//! Vulkan driver. Built with the cargo feature `wgpu` (on by default); without it,
//! [`WgpuBackend::new`] says so.
//!
//! - Adapter choice: a discrete GPU first, then integrated, virtual, CPU; `WGPU_ADAPTER_NAME`
//!   picks the first adapter whose name contains it (case-insensitive), `WGPU_BACKEND` narrows
//!   the APIs (vulkan, metal, dx12), and on Linux `VK_DRIVER_FILES` the Vulkan drivers.
//! - Every dispatch runs inside wgpu's validation and out-of-memory error scopes: a WGSL error
//!   names the kernel, a lost device or a failed wait is an [`Error::Wgpu`](crate::Error::Wgpu).
//! - Timing: GPU timestamp queries around the compute pass where the adapter has them, else the
//!   wall clock around submit and wait ([`Backend::describe`](crate::Backend::describe) says which).

pub use crate::registry::wgsl as shaders;

#[cfg(feature = "wgpu")]
mod imp;
#[cfg(feature = "wgpu")]
pub use imp::{adapters, AdapterDesc, WgpuBackend};

#[cfg(not(feature = "wgpu"))]
mod stub;
#[cfg(not(feature = "wgpu"))]
pub use stub::{adapters, AdapterDesc, WgpuBackend};
