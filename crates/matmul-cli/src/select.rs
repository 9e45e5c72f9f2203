//! Choosing a kernel and the backend it runs on, from `--kernel` and `--backend`.

use matmul::{find, open_backend, Backend, BackendChoice, BackendKind, DType, KernelSpec};

use crate::cli_error::{CliError, CliResult};

pub struct Selection {
    pub kernel: &'static KernelSpec,
    pub backend: Box<dyn Backend>,
}

/// The kernel `auto` picks on a backend for a dtype: the fastest verified one we have.
fn default_kernel(backend: BackendKind, dtype: DType) -> &'static str {
    match (backend, dtype) {
        (BackendKind::Cpu, _) => "cpu",
        (BackendKind::Cuda, DType::F32 | DType::U32) => "tiled",
        (BackendKind::Cuda, _) => "cublas",
    }
}

/// `kernel` is a registry name, a seed alias, or `auto`. A named kernel decides the backend; a
/// `--backend` that contradicts it is an input error. With `auto`, `--backend auto` means CUDA when
/// a device is present and the CPU otherwise (the reason is printed on stderr).
pub fn select(kernel: &str, choice: BackendChoice, dtype: DType) -> CliResult<Selection> {
    if kernel.eq_ignore_ascii_case("auto") {
        let (backend, fallback) = open_backend(choice)?;
        if let Some(reason) = fallback {
            eprintln!("matmul: using the CPU backend ({reason})");
        }
        let kernel = find(default_kernel(backend.kind(), dtype))?;
        return Ok(Selection { kernel, backend });
    }
    let spec = find(kernel)?;
    let wanted = match spec.backend {
        BackendKind::Cpu => BackendChoice::Cpu,
        BackendKind::Cuda => BackendChoice::Cuda,
    };
    if choice != BackendChoice::Auto && choice != wanted {
        return Err(CliError::input(format!(
            "kernel `{}` runs on the {} backend, not the one --backend asks for",
            spec.name, spec.backend
        )));
    }
    let (backend, _) = open_backend(wanted).map_err(|e| {
        CliError::failure(format!("kernel `{}` needs a CUDA device: {e}", spec.name))
    })?;
    Ok(Selection {
        kernel: spec,
        backend,
    })
}
