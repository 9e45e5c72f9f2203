//! The CUDA backend when the crate is built without the `cuda` feature: no cudarc, no CUDA code;
//! opening it is [`Error::NotBuilt`].

use crate::backend::{Backend, Inputs, RunOptions};
use crate::error::{Error, Result};
use crate::matrix::AnyMatrix;
use crate::problem::Problem;
pub use crate::registry::DeviceInfo;
use crate::registry::{BackendKind, DeviceLimits, KernelSpec};

fn not_built() -> Error {
    Error::NotBuilt {
        backend: "cuda",
        feature: "cuda",
    }
}

/// Every CUDA device the driver reports; this build has none.
pub fn list_devices() -> Result<Vec<DeviceInfo>> {
    Err(not_built())
}

/// The CUDA backend; this build has none (cargo feature `cuda` off).
pub struct CudaBackend(std::convert::Infallible);

impl CudaBackend {
    /// Always [`Error::NotBuilt`] in this build.
    pub fn new(ordinal: usize) -> Result<CudaBackend> {
        let _ = ordinal;
        Err(not_built())
    }

    /// Never called.
    pub fn info(&self) -> &DeviceInfo {
        match self.0 {}
    }

    /// Never called.
    pub fn pinned<T: crate::dtype::Element>(
        &self,
        rows: usize,
        cols: usize,
    ) -> Result<PinnedMatrix<T>> {
        let _ = (rows, cols);
        match self.0 {}
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
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

/// A page-locked host matrix; this build has none (cargo feature `cuda` off).
pub struct PinnedMatrix<T>(std::convert::Infallible, std::marker::PhantomData<T>);

impl<T: crate::dtype::Element> PinnedMatrix<T> {
    /// Never called.
    pub fn shape(&self) -> (usize, usize) {
        match self.0 {}
    }

    /// Never called.
    pub fn as_slice(&self) -> &[T] {
        match self.0 {}
    }

    /// Never called.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        match self.0 {}
    }

    /// Never called.
    pub fn as_ref(&self) -> crate::view::MatRef<'_, T> {
        match self.0 {}
    }

    /// Never called.
    pub fn as_mut(&mut self) -> crate::view::MatMut<'_, T> {
        match self.0 {}
    }
}
