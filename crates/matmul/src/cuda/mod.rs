//! The CUDA backend (cudarc, every library loaded at run time). Placeholder: reports no device
//! until the backend lands.

use crate::backend::{Backend, Inputs, RunOptions};
use crate::error::{Error, Result};
use crate::matrix::AnyMatrix;
use crate::problem::Problem;
use crate::registry::{BackendKind, DeviceLimits, KernelSpec};

pub struct CudaBackend {
    _private: (),
}

impl CudaBackend {
    /// Opens CUDA device `ordinal`; a missing driver library or device is an error, never a panic.
    pub fn new(_ordinal: usize) -> Result<CudaBackend> {
        Err(Error::NoGpu("the CUDA backend is not built yet".into()))
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }
    fn describe(&self) -> String {
        "CUDA".into()
    }
    fn limits(&self) -> Option<DeviceLimits> {
        None
    }
    fn run(
        &self,
        _: &KernelSpec,
        _: &Problem,
        _: &AnyMatrix,
        _: &AnyMatrix,
        _: RunOptions,
    ) -> Result<AnyMatrix> {
        Err(Error::NoGpu("the CUDA backend is not built yet".into()))
    }
    fn time(
        &self,
        _: &KernelSpec,
        _: &Problem,
        _: &[Inputs],
        _: usize,
        _: usize,
    ) -> Result<Vec<f64>> {
        Err(Error::NoGpu("the CUDA backend is not built yet".into()))
    }
}
