//! How kernels run: the [`Backend`] trait and its implementations, [`cpu`] (always built),
//! [`cuda`] (cargo feature `cuda`) and [`wgpu`] (cargo feature `wgpu`). A backend reads the
//! registry (what a kernel is, what it can run); it never chooses one (that is dispatch's).

pub mod backend;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
#[cfg(not(feature = "cuda"))]
#[path = "cuda/off.rs"]
pub mod cuda;
mod open;
pub mod wgpu;

pub use backend::{
    check_copy, check_destination, check_input_sets, check_inputs, Backend, Batch, DeviceData,
    HostPlan, Inputs, PlanRun, Scale,
};
pub use cpu::CpuBackend;
pub use cuda::CudaBackend;
pub use open::{open_backend, BackendChoice};
pub use wgpu::WgpuBackend;
