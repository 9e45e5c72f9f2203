//! Choosing a kernel and the backend it runs on, from `--kernel` and `--backend`.

use matmul::registry::DeviceLimits;
use matmul::{
    find, open_backend, Backend, BackendChoice, BackendKind, DType, KernelSpec, Problem, Tiling,
};

use crate::cli_error::{CliError, CliResult};

pub struct Selection {
    pub kernel: &'static KernelSpec,
    pub backend: Box<dyn Backend>,
    /// The tuned tiling for the chosen kernel, dtype and shape class, from `auto`'s choice or the
    /// tune table's entry for a named kernel (None: the kernel's registry default).
    pub tiling: Option<Tiling>,
}

/// The kernels `auto` tries, in order, on a backend for a dtype without a tune table: the fastest
/// of our own kernels measured on H100 (docs/kernels.md) first, then the ones that run any shape
/// the faster ones refuse (TMA's 16-byte rows, Hopper only). For tf32 that is `mma-sync-wide`
/// (128×256 tiles: on H100 +9 % at 8192 and +24 % on 4097×4095×4093 over `mma-sync`, 2026-11-24);
/// for 16-bit inputs `mma-sync`: on rows of odd length, the fallback's common case on Hopper, the
/// two ran even on 4097×4095×4093 (62 and 63 TFLOP/s bf16) and `mma-sync` led on 2049×2047×2045
/// (40 against 37).
///
/// For 16-bit inputs a problem with fewer than [`SMALL_TILES`] tiles of 128×256 leaves most of an
/// H100's 132 SMs idle with `wgmma`; `wgmma-n64` has four times the tiles (1024³ bf16, H100,
/// 2026-11-23: 205 against `wgmma-n128`'s 178 and `wgmma`'s 122 TFLOP/s, while at 2048³ `wgmma`
/// leads 588 to 542 and 382; docs/kernels.md). From [`LARGE_TILES`] tiles on, `wgmma-cluster`
/// goes first: in 30-round benches on H100 (2026-11-25) it ran 0.2–1.8 % ahead of `wgmma` at 6144³
/// and 8192³ (bf16 and f16, three runs) and 0.3–4.4 % ahead or 0.8 % behind at 16384³, and level
/// at 512 tiles (4096³, 4096²×14336) and 8192²×2048 (docs/kernels.md 15v).
fn default_kernels(
    backend: BackendKind,
    dtype: DType,
    problem: Option<&Problem>,
) -> &'static [&'static str] {
    let tiles = problem.and_then(wgmma_tiles);
    let small = tiles.is_some_and(|t| t < SMALL_TILES);
    let large = tiles.is_some_and(|t| t >= LARGE_TILES);
    match (backend, dtype) {
        (BackendKind::Cpu, _) => &["cpu"],
        (BackendKind::Cuda, DType::F32 | DType::U32) => &["warptile"],
        (BackendKind::Cuda, DType::Bf16 | DType::F16) if small => {
            &["wgmma-n64", "wgmma-n128", "wgmma", "mma-sync"]
        }
        (BackendKind::Cuda, DType::Bf16 | DType::F16) if large => {
            &["wgmma-cluster", "wgmma", "wgmma-n128", "mma-sync"]
        }
        (BackendKind::Cuda, DType::Bf16 | DType::F16) => &["wgmma", "wgmma-n128", "mma-sync"],
        (BackendKind::Cuda, DType::Tf32) => &["wgmma-tf32", "mma-sync-wide"],
    }
}

/// Below this many tiles of `wgmma`'s 128×256, `auto` prefers the 128×64-tile wgmma kernel.
const SMALL_TILES: usize = 64;

/// From this many tiles of `wgmma`'s 128×256 on (about eight waves of an H100's 132 SMs), `auto`
/// prefers the two-block clusters of `wgmma-cluster`.
const LARGE_TILES: usize = 1024;

/// The first of `specs` that can run `problem` (every one can when there is no problem) on a
/// device with `limits`; the last when none can, which then refuses with a clear error.
fn first_runnable(
    specs: &[&'static KernelSpec],
    problem: Option<&Problem>,
    limits: Option<&DeviceLimits>,
) -> &'static KernelSpec {
    let runs =
        |k: &KernelSpec| problem.is_none_or(|p| k.can_run(p, limits, &Default::default()).is_ok());
    specs
        .iter()
        .copied()
        .find(|k| runs(k))
        .unwrap_or(specs[specs.len() - 1])
}

/// How many tiles of `wgmma`'s block tile (the registry's) `problem` has.
fn wgmma_tiles(problem: &Problem) -> Option<usize> {
    find("wgmma")
        .ok()
        .and_then(|k| k.block_tile(&Default::default()))
        .map(|(bm, bn)| problem.m.div_ceil(bm as usize) * problem.n.div_ceil(bn as usize))
}

/// `kernel` is a registry name, a seed alias, or `auto`. A named kernel decides the backend; a
/// `--backend` that contradicts it is an input error. With `auto`, `--backend auto` means CUDA when
/// a device is present and the CPU otherwise (the reason is printed on stderr).
///
/// With `auto` on CUDA, `problem` (when given) lets a `matmul tune` table pick the kernel and
/// tiling for its dtype and shape class.
pub fn select(
    kernel: &str,
    choice: BackendChoice,
    dtype: DType,
    problem: Option<&Problem>,
) -> CliResult<Selection> {
    if kernel.eq_ignore_ascii_case("auto") {
        let (backend, fallback) = open_backend(choice)?;
        if let Some(reason) = fallback {
            eprintln!("matmul: using the CPU backend ({reason})");
        }
        if let (BackendKind::Cuda, Some(p)) = (backend.kind(), problem) {
            let tuned = tuned_table().and_then(|t| t.best(p));
            if let Some((kernel, tiling)) = tuned {
                return Ok(Selection {
                    kernel,
                    backend,
                    tiling: Some(tiling),
                });
            }
        }
        let candidates = default_kernels(backend.kind(), dtype, problem);
        let specs = candidates
            .iter()
            .map(|name| find(name))
            .collect::<Result<Vec<_>, _>>()?;
        let kernel = first_runnable(&specs, problem, backend.limits().as_ref());
        return Ok(Selection {
            kernel,
            backend,
            tiling: None,
        });
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
    // A named kernel gets its own tuned tiling for this dtype and shape class, as `matmul bench`
    // gives it, so that `run` and `bench` time the same code.
    let tiling = match (backend.kind(), problem) {
        (BackendKind::Cuda, Some(p)) => {
            tuned_table().and_then(|t| t.runnable(spec, p, backend.limits().as_ref()))
        }
        _ => None,
    };
    Ok(Selection {
        kernel: spec,
        backend,
        tiling,
    })
}

/// Device 0's tune table (the user's, else the built-in one for its name), read without a second
/// context.
fn tuned_table() -> Option<matmul::tune::TuneTable> {
    let info = matmul::cuda::list_devices().ok()?.into_iter().next()?;
    crate::tune_cmd::load_table(&info).map(|(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use matmul::Op;

    fn specs(backend: BackendKind, dtype: DType) -> Vec<&'static KernelSpec> {
        default_kernels(backend, dtype, None)
            .iter()
            .map(|n| find(n).unwrap())
            .collect()
    }

    #[test]
    fn every_default_kernel_exists_and_takes_its_dtype() {
        for backend in [BackendKind::Cpu, BackendKind::Cuda] {
            for dtype in DType::ALL {
                for k in specs(backend, dtype) {
                    assert!(k.supports(dtype), "{} does not take {dtype}", k.name);
                    assert_eq!(k.backend, backend, "{}", k.name);
                }
            }
        }
    }

    /// tf32 on CUDA: wgmma-tf32 where it can run (Hopper, op(A) = N or op(B) = T, 16-byte rows),
    /// mma-sync-wide otherwise.
    #[test]
    fn auto_tf32_prefers_wgmma_tf32_and_falls_back_to_mma_sync_wide() {
        let tf32 = specs(BackendKind::Cuda, DType::Tf32);
        let hopper = DeviceLimits {
            max_shared_per_block: 232_448,
            sm90a: true,
        };
        let ampere = DeviceLimits {
            max_shared_per_block: 166_912,
            sm90a: false,
        };
        let pick = |p: &Problem, l: &DeviceLimits| first_runnable(&tf32, Some(p), Some(l)).name;
        let square = Problem::square(4096, DType::Tf32);
        for ops in [(Op::N, Op::N), (Op::N, Op::T), (Op::T, Op::T)] {
            let p = square.with_ops(ops.0, ops.1);
            assert_eq!(pick(&p, &hopper), "wgmma-tf32", "{p}");
            assert_eq!(pick(&p, &ampere), "mma-sync-wide", "{p}");
        }
        assert_eq!(
            pick(&square.with_ops(Op::T, Op::N), &hopper),
            "mma-sync-wide"
        );
        // A stored row of 4097 floats is not a 16-byte multiple: TMA cannot read it.
        assert_eq!(
            pick(&Problem::new(64, 64, 4097, DType::Tf32), &hopper),
            "mma-sync-wide"
        );
        assert_eq!(
            first_runnable(&tf32, None, Some(&hopper)).name,
            "wgmma-tf32"
        );
    }

    #[test]
    fn auto_picks_the_wgmma_kernel_by_the_problems_tile_count() {
        let first = |m, n| {
            let p = Problem::new(m, n, 1024, DType::Bf16);
            default_kernels(BackendKind::Cuda, DType::Bf16, Some(&p))[0]
        };
        assert_eq!(first(1024, 1024), "wgmma-n64"); // 8 × 4 = 32 tiles of 128×256
        assert_eq!(first(2048, 2048), "wgmma"); // 16 × 8 = 128
        assert_eq!(first(1024, 4096), "wgmma"); // 8 × 16 = 128
        assert_eq!(first(4096, 4096), "wgmma"); // 32 × 16 = 512
        assert_eq!(first(8192, 4096), "wgmma-cluster"); // 64 × 16 = 1024
        assert_eq!(first(16384, 16384), "wgmma-cluster");
        // A large problem whose stored rows TMA cannot read falls through to mma-sync.
        let hopper = DeviceLimits {
            max_shared_per_block: 232_448,
            sm90a: true,
        };
        let pick = |k| {
            let p = Problem::new(8192, 8192, k, DType::Bf16);
            let specs = default_kernels(BackendKind::Cuda, DType::Bf16, Some(&p))
                .iter()
                .map(|n| find(n).unwrap())
                .collect::<Vec<_>>();
            first_runnable(&specs, Some(&p), Some(&hopper)).name
        };
        assert_eq!(pick(1024), "wgmma-cluster");
        assert_eq!(pick(1023), "mma-sync"); // rows of 2,046 bytes
        assert_eq!(
            default_kernels(BackendKind::Cuda, DType::F16, None)[0],
            "wgmma"
        );
    }
}
