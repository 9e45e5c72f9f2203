//! The wgpu backend when the crate is built without the `wgpu` feature: opening it says so.

use crate::backend::{Backend, Inputs, RunOptions};
use crate::error::{Error, Result};
use crate::matrix::AnyMatrix;
use crate::problem::Problem;
use crate::registry::{BackendKind, DeviceLimits, KernelSpec};

/// An adapter (none without the feature); the fields of the real one.
#[derive(Debug, Clone)]
pub struct AdapterDesc {
    /// The driver's name for it.
    pub name: String,
    /// Vulkan, Metal, Dx12, ...
    pub api: String,
    /// DiscreteGpu, IntegratedGpu, Cpu, ...
    pub device_type: String,
    /// Driver name and version.
    pub driver: String,
    /// The subgroup sizes (min, max) where the adapter offers subgroup operations.
    pub subgroups: Option<(u32, u32)>,
    /// The cooperative-matrix configurations where the adapter offers them.
    pub cooperative_matrices: Option<Vec<String>>,
}

impl std::fmt::Display for AdapterDesc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.name)
    }
}

/// No adapters without the feature.
pub fn adapters() -> Vec<AdapterDesc> {
    Vec::new()
}

/// The wgpu backend; this build has none (cargo feature `wgpu` off).
pub struct WgpuBackend(std::convert::Infallible);

impl WgpuBackend {
    /// Always an error in this build.
    pub fn new() -> Result<WgpuBackend> {
        Err(Error::NotBuilt {
            backend: "wgpu",
            feature: "wgpu",
        })
    }

    /// Never called.
    pub fn adapter_name(&self) -> &str {
        match self.0 {}
    }

    /// Never called.
    pub fn adapter(&self) -> &AdapterDesc {
        match self.0 {}
    }

    /// Never called.
    pub fn is_software(&self) -> bool {
        match self.0 {}
    }

    /// Never called.
    pub fn timestamps(&self) -> bool {
        match self.0 {}
    }

    /// Never called.
    pub fn user_compile(&self, _: &crate::user::UserKernel) -> Result<()> {
        match self.0 {}
    }

    /// Never called.
    pub fn user_run(
        &self,
        _: &crate::user::UserKernel,
        _: &Problem,
        _: &AnyMatrix,
        _: &AnyMatrix,
    ) -> Result<AnyMatrix> {
        match self.0 {}
    }

    /// Never called.
    pub fn user_time(
        &self,
        _: &crate::user::UserKernel,
        _: &Problem,
        _: &[Inputs],
        _: usize,
        _: usize,
    ) -> Result<Vec<f64>> {
        match self.0 {}
    }
}

impl Backend for WgpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Wgpu
    }
    fn describe(&self) -> String {
        match self.0 {}
    }
    fn limits(&self) -> Option<DeviceLimits> {
        match self.0 {}
    }
    fn run(
        &self,
        _: &KernelSpec,
        _: &Problem,
        _: &AnyMatrix,
        _: &AnyMatrix,
        _: RunOptions,
    ) -> Result<AnyMatrix> {
        match self.0 {}
    }
    fn time(
        &self,
        _: &KernelSpec,
        _: &Problem,
        _: &[Inputs],
        _: usize,
        _: usize,
        _: RunOptions,
    ) -> Result<Vec<f64>> {
        match self.0 {}
    }
}
