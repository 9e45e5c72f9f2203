//! What a benchmark runs when not told otherwise: the kernels, dtypes and sizes of each backend
//! (a full run and a `quick` one), and kernel lists given by name.

use matmul::{BackendKind, DType, KernelSpec, KERNELS};

use crate::runner::BenchKernel;

/// Kernels a quick run leaves out of `all`: the seeds' slowest, which take seconds per shape.
pub const SLOW_IN_QUICK: [&str; 6] = [
    "row-global",
    "row",
    "rowpack",
    "single-block",
    "wgpu-row",
    "wgpu-single-block",
];

/// Every kernel of `kind`, in registry order; a quick run leaves out [`SLOW_IN_QUICK`].
pub fn kernels(kind: BackendKind, quick: bool) -> Vec<&'static KernelSpec> {
    KERNELS
        .iter()
        .filter(|k| k.backend == kind && !(quick && SLOW_IN_QUICK.contains(&k.name)))
        .collect()
}

/// Every dtype on CUDA; f32 and u32 on the CPU (it has no tensor cores) and on wgpu (WGSL
/// kernels for f32 and u32).
pub fn dtypes(kind: BackendKind) -> Vec<DType> {
    match kind {
        BackendKind::Cuda => DType::ALL.to_vec(),
        BackendKind::Cpu | BackendKind::Wgpu => vec![DType::F32, DType::U32],
    }
}

/// Square sizes: 1024, 2048, 4096 on CUDA (quick: 1024, 2048); 256, 512, 1024 on the CPU
/// (quick: 128, 256, 512); 512, 1024, 2048 on wgpu (quick: 256, 512, for software adapters).
pub fn sizes(kind: BackendKind, quick: bool) -> Vec<usize> {
    match (kind, quick) {
        (BackendKind::Cuda, false) => vec![1024, 2048, 4096],
        (BackendKind::Cuda, true) => vec![1024, 2048],
        (BackendKind::Cpu, false) => vec![256, 512, 1024],
        (BackendKind::Cpu, true) => vec![128, 256, 512],
        (BackendKind::Wgpu, false) => vec![512, 1024, 2048],
        (BackendKind::Wgpu, true) => vec![256, 512],
    }
}

/// The kernels `list` names, before a backend is chosen: None for `all` (any case), else
/// comma-separated registry names or aliases, or `auto` (the library's choice per problem), each
/// once, in the order given. A name that is not in the registry is an error.
pub fn named_kernels(list: &str) -> matmul::Result<Option<Vec<BenchKernel>>> {
    if list.trim().eq_ignore_ascii_case("all") {
        return Ok(None);
    }
    let mut out: Vec<BenchKernel> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if name.eq_ignore_ascii_case("auto") {
            if !out.iter().any(|o| matches!(o, BenchKernel::Auto)) {
                out.push(BenchKernel::Auto);
            }
            continue;
        }
        let k = matmul::find(name)?;
        if !out.iter().any(|o| o.name() == k.name) {
            out.push(k.into());
        }
    }
    Ok(Some(out))
}

/// The kernels `list` names on a backend of `kind`: `all` for [`kernels`], else
/// [`named_kernels`]. A name that is not in the registry, or a kernel of another backend than
/// `kind`, is an error.
pub fn select_kernels(
    list: &str,
    kind: BackendKind,
    quick: bool,
) -> matmul::Result<Vec<BenchKernel>> {
    let Some(out) = named_kernels(list)? else {
        return Ok(kernels(kind, quick).into_iter().map(Into::into).collect());
    };
    for k in &out {
        if let BenchKernel::Named(k) = k {
            if k.backend != kind {
                return Err(matmul::Error::Invalid(format!(
                    "kernel `{}` runs on the {} backend, but this bench runs on {kind}",
                    k.name, k.backend
                )));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_the_backends_kernels_less_the_slow_ones_when_quick() {
        let cpu = select_kernels("ALL", BackendKind::Cpu, false).unwrap();
        let is_cpu =
            |k: &BenchKernel| matches!(k, BenchKernel::Named(k) if k.backend == BackendKind::Cpu);
        assert!(!cpu.is_empty() && cpu.iter().all(is_cpu));
        let full = kernels(BackendKind::Cuda, false);
        let quick = kernels(BackendKind::Cuda, true);
        assert!(full.iter().any(|k| k.name == "row") && !quick.iter().any(|k| k.name == "row"));
        for kind in [BackendKind::Cuda, BackendKind::Wgpu] {
            let slow = SLOW_IN_QUICK
                .iter()
                .filter(|n| matmul::find(n).unwrap().backend == kind)
                .count();
            assert_eq!(kernels(kind, false).len(), kernels(kind, true).len() + slow);
        }
        assert_eq!(dtypes(BackendKind::Cpu), [DType::F32, DType::U32]);
        assert_eq!(sizes(BackendKind::Cuda, true), [1024, 2048]);
    }

    #[test]
    fn named_kernels_are_checked_and_deduplicated() {
        let k = select_kernels(" cpu ,cpu-reference,,cpu", BackendKind::Cpu, false).unwrap();
        let names: Vec<_> = k.iter().map(|k| k.name()).collect();
        assert_eq!(names, ["cpu", "cpu-reference"]);
        let k = select_kernels("Auto,cpu-reference,auto", BackendKind::Cpu, false).unwrap();
        let names: Vec<_> = k.iter().map(|k| k.name()).collect();
        assert_eq!(names, ["auto", "cpu-reference"]);
        assert!(matches!(k[0], BenchKernel::Auto));
        let e = select_kernels("cpu,naive", BackendKind::Cpu, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            "kernel `naive` runs on the cuda backend, but this bench runs on cpu"
        );
        assert!(matches!(
            select_kernels("no-such-kernel", BackendKind::Cpu, false),
            Err(matmul::Error::UnknownKernel(_))
        ));
    }
}
