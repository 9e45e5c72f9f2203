//! What a benchmark runs when not told otherwise: the kernels, dtypes and sizes of each backend
//! (a full run and a `quick` one), and kernel lists given by name.

use matmul::{BackendKind, DType, KernelSpec, KERNELS};

use crate::plan::{BenchKernel, PlanEntry};

/// The largest size the seed kernels run at in a quick run on CUDA.
pub const QUICK_SEED_SIZE: u64 = 1024;

/// Kernels a quick run on wgpu leaves out: the slowest seeds, which take seconds per shape.
pub const SLOW_IN_QUICK: [&str; 2] = ["wgpu-row", "wgpu-single-block"];

/// Seconds of timed launches per case in a quick run (a full run: 0.25).
pub const QUICK_MIN_TIME: f64 = 0.1;

/// A quick run on CUDA, by kernel: the dtypes it runs and the largest size (m = n = k) it runs
/// at. Per dtype a handful of representative kernels: the seeds' naive and tiled kernels (the
/// Judge Girl TILING) at the small size only, the fastest SIMT kernel (`multistage-raster`, at its
/// tuned tilings), the fastest tensor-core kernel (`wgmma`, `wgmma-tf32`) and cuBLAS.
const QUICK_CUDA: &[(&str, &[DType], Option<u64>)] = &[
    ("naive", &[DType::F32, DType::U32], Some(QUICK_SEED_SIZE)),
    ("tiled", &[DType::F32, DType::U32], Some(QUICK_SEED_SIZE)),
    ("multistage-raster", &[DType::F32, DType::U32], None),
    ("wgmma", &[DType::Bf16, DType::F16], None),
    ("wgmma-tf32", &[DType::Tf32], None),
    (
        "cublas",
        &[DType::F32, DType::Tf32, DType::Bf16, DType::F16],
        None,
    ),
];

/// The plan of a quick run of every kernel (`bench --quick` with `--kernels all`): on CUDA, the
/// kernel × dtype pairs of a handful of representative kernels per dtype, the seeds at
/// [`QUICK_SEED_SIZE`] at most; None on the CPU (its two kernels all run).
pub fn quick_plan(kind: BackendKind) -> Option<Vec<PlanEntry>> {
    (kind == BackendKind::Cuda).then(|| {
        QUICK_CUDA
            .iter()
            .flat_map(|&(kernel, dtypes, size)| {
                dtypes.iter().map(move |&dtype| PlanEntry {
                    kernel,
                    dtype,
                    max_mnk: size.map(|n| n * n * n),
                })
            })
            .collect()
    })
}

/// Every kernel of `kind`, in registry order; a quick run on CUDA only the kernels of
/// [`quick_plan`].
pub fn kernels(kind: BackendKind, quick: bool) -> Vec<&'static KernelSpec> {
    let plan = quick_plan(kind).filter(|_| quick);
    KERNELS
        .iter()
        .filter(|k| k.backend == kind && !(quick && SLOW_IN_QUICK.contains(&k.name)))
        .filter(|k| {
            plan.as_ref()
                .is_none_or(|p| p.iter().any(|e| e.kernel == k.name))
        })
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

/// Square sizes: 1024, 2048, 4096 on CUDA (quick: 1024, 2048, the seeds at 1024 only); 256, 512,
/// 1024 on the CPU (quick: 128, 256, 512); 512, 1024, 2048 on wgpu (quick: 256, 512, for software
/// adapters).
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
/// comma-separated registry names or aliases, `auto` (the library's choice per problem) or
/// `cublaslt-int8` (the int8 ceiling row for u32, CUDA only; never part of `all`), each once, in
/// the order given. A name that is not in the registry is an error.
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
        if name.eq_ignore_ascii_case(crate::ceilings::INT8_CEILING) {
            if !out.iter().any(|o| matches!(o, BenchKernel::Int8Ceiling)) {
                out.push(BenchKernel::Int8Ceiling);
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

/// The kernels `list` names on a backend of `kind`: `all` for [`kernels`] (with `quick`, set
/// [`quick_plan`] as the run's plan too), else [`named_kernels`]. A name that is not in the registry, or a kernel of another backend than
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
        let backend = match k {
            BenchKernel::Named(k) => k.backend,
            BenchKernel::Int8Ceiling => BackendKind::Cuda,
            BenchKernel::Auto | BenchKernel::External => kind,
        };
        if backend != kind {
            return Err(matmul::Error::Invalid(format!(
                "kernel `{}` runs on the {backend} backend, but this bench runs on {kind}",
                k.name()
            )));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_the_backends_kernels_and_quick_a_handful_per_dtype() {
        let cpu = select_kernels("ALL", BackendKind::Cpu, false).unwrap();
        let is_cpu =
            |k: &BenchKernel| matches!(k, BenchKernel::Named(k) if k.backend == BackendKind::Cpu);
        assert!(!cpu.is_empty() && cpu.iter().all(is_cpu));
        let names = |q: bool| -> Vec<&str> {
            kernels(BackendKind::Cpu, q)
                .iter()
                .map(|k| k.name)
                .collect()
        };
        assert_eq!(names(true), names(false));
        assert_eq!(quick_plan(BackendKind::Cpu), None);
        let full = kernels(BackendKind::Cuda, false);
        let quick: Vec<&str> = kernels(BackendKind::Cuda, true)
            .iter()
            .map(|k| k.name)
            .collect();
        assert!(full.iter().any(|k| k.name == "row"));
        // Registry (ladder) order.
        assert_eq!(
            quick,
            [
                "naive",
                "tiled",
                "multistage-raster",
                "wgmma",
                "wgmma-tf32",
                "cublas"
            ]
        );
        // Every pair of the plan applies: the kernel supports the dtype.
        let plan = quick_plan(BackendKind::Cuda).unwrap();
        for e in &plan {
            assert!(matmul::find(e.kernel).unwrap().supports(e.dtype), "{e:?}");
        }
        // Per dtype: cuBLAS (not for u32) and one or two of ours, the seeds only at 1024.
        for dtype in DType::ALL {
            let ours = plan
                .iter()
                .filter(|e| e.dtype == dtype && e.kernel != "cublas")
                .count();
            assert!((1..=3).contains(&ours), "{dtype}: {ours}");
        }
        let seeds = |n: usize| {
            let p = matmul::Problem::square(n, DType::F32);
            plan.iter().filter(|e| e.admits("naive", &p)).count()
        };
        assert_eq!((seeds(1024), seeds(2048)), (1, 0));
        // wgpu: a quick run leaves out its slowest seeds.
        let slow = SLOW_IN_QUICK.len();
        assert_eq!(
            kernels(BackendKind::Wgpu, false).len(),
            kernels(BackendKind::Wgpu, true).len() + slow
        );
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
