//! Which CUDA libraries can be loaded. cudarc loads every library at run time and *panics* when one
//! is missing, so each entry point here is checked once before the first call into that library
//! and a missing one becomes a typed error that says what to install.

use std::sync::OnceLock;

use crate::error::{Error, Result};

/// The library sets cudarc searches (`libcuda.so`, `libnvrtc.so.13`, ...), each probed once.
fn probe(cell: &'static OnceLock<bool>, present: unsafe fn() -> bool) -> bool {
    // SAFETY: the probes only try `dlopen` on the candidate names and close them again.
    *cell.get_or_init(|| unsafe { present() })
}

/// The CUDA driver (`libcuda.so`, installed with the NVIDIA driver).
pub fn driver() -> Result<()> {
    static CELL: OnceLock<bool> = OnceLock::new();
    if probe(&CELL, cudarc::driver::sys::is_culib_present) {
        Ok(())
    } else {
        Err(Error::NoGpu(
            "the CUDA driver library (libcuda.so) is not installed or not on the loader path \
             (no NVIDIA driver on this machine?)"
                .into(),
        ))
    }
}

/// NVRTC, the run-time CUDA C++ compiler (`libnvrtc.so.13`); needed to compile kernels, not to
/// run cuBLAS.
pub fn nvrtc() -> Result<()> {
    static CELL: OnceLock<bool> = OnceLock::new();
    if probe(&CELL, cudarc::nvrtc::sys::is_culib_present) {
        Ok(())
    } else {
        Err(Error::Cuda {
            context: "loading NVRTC".into(),
            message: "libnvrtc.so (CUDA 13) was not found: install the CUDA toolkit or the PyPI \
                      wheel nvidia-cuda-nvrtc==13.0.* and put its lib directory on LD_LIBRARY_PATH"
                .into(),
        })
    }
}

/// cuBLAS (`libcublas.so.13`, which itself needs `libcublasLt.so.13`).
pub fn cublas() -> Result<()> {
    static CELL: OnceLock<bool> = OnceLock::new();
    static LT: OnceLock<bool> = OnceLock::new();
    if probe(&CELL, cudarc::cublas::sys::is_culib_present)
        && probe(&LT, cudarc::cublaslt::sys::is_culib_present)
    {
        Ok(())
    } else {
        Err(Error::Cuda {
            context: "loading cuBLAS".into(),
            message: "libcublas.so / libcublasLt.so (CUDA 13) were not found on the loader path"
                .into(),
        })
    }
}

/// Wraps any CUDA library error with what was being done.
pub(crate) trait Context<T> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T>;
}

impl<T, E: std::fmt::Debug> Context<T> for std::result::Result<T, E> {
    fn ctx(self, what: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| Error::Cuda {
            context: what(),
            message: format!("{e:?}"),
        })
    }
}
