//! Kernel choice: which kernel runs a product, on which backend, with which tiling. This is the
//! `auto` policy of the CLI's `--kernel auto` and of [`crate::gemm`], in one place.
//!
//! - [`select`] opens a backend from a [`BackendChoice`] and chooses the kernel: a named kernel
//!   (registry name or seed alias) decides the backend itself; `auto` takes CUDA when a device is
//!   present and the CPU otherwise.
//! - [`choose`] does the same on a backend the caller has already opened.
//! - On CUDA, a tune table ([`tune`]: the user's `matmul tune` results, else the built-in table
//!   for the GPU model) picks `auto`'s kernel and tiling for the problem's dtype and shape class,
//!   and gives a named SIMT-ladder kernel its tuned tiling. Without a table, `auto` takes the
//!   first kernel of a fixed per-dtype list that can run the problem on the device.
//! - [`search`] is the tuner's search space (`matmul tune`).
//!
//! ```
//! use matmul::{dispatch, BackendChoice, DType, Problem};
//!
//! let problem = Problem::new(64, 48, 32, DType::F32);
//! let sel = dispatch::select("auto", BackendChoice::Cpu, DType::F32, Some(&problem))?;
//! assert_eq!(sel.kernel.name, "cpu");
//! # Ok::<(), matmul::Error>(())
//! ```

pub mod search;
pub mod tune;

use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::family::wgmma::Wgmma;
use crate::problem::Problem;
use crate::registry::{find, BackendKind, DeviceLimits, KernelSpec, Tiling};
use crate::{open_backend, BackendChoice};

/// A kernel chosen for a backend that is already open.
#[derive(Debug, Clone)]
pub struct Choice {
    /// The kernel to run.
    pub kernel: &'static KernelSpec,
    /// The tuned tiling for the kernel, dtype and shape class (None: the registry's default).
    pub tiling: Option<Tiling>,
    /// Things worth telling the user (a tune table that was skipped, and why).
    pub notes: Vec<String>,
}

/// A kernel and the backend it runs on, opened.
pub struct Selection {
    /// The kernel to run.
    pub kernel: &'static KernelSpec,
    /// The backend, opened.
    pub backend: Box<dyn Backend>,
    /// The tuned tiling for the chosen kernel, dtype and shape class, from `auto`'s choice or the
    /// tune table's entry for a named kernel (None: the kernel's registry default).
    pub tiling: Option<Tiling>,
    /// Things worth telling the user: why `auto` fell back to the CPU, a tune table that was
    /// skipped. The CLI prints each on stderr.
    pub notes: Vec<String>,
}

impl std::fmt::Debug for Selection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Selection")
            .field("kernel", &self.kernel.name)
            .field("backend", &self.backend.describe())
            .field("tiling", &self.tiling)
            .field("notes", &self.notes)
            .finish()
    }
}

/// Opens a backend and chooses the kernel. `kernel` is a registry name, a seed alias or `auto`
/// (any case). A named kernel decides the backend; a `backend` other than `Auto` that contradicts
/// it is an [`Error::Invalid`], and a CUDA kernel without a device is [`Error::NeedsGpu`]. With
/// `auto`, `BackendChoice::Auto` means CUDA when a device is present and the CPU otherwise (the
/// reason is the first of [`Selection::notes`]).
///
/// `problem` (when given; its dtype is `dtype`) lets `auto` skip kernels that cannot run it and
/// lets a tune table pick the kernel and tiling for its shape class.
pub fn select(
    kernel: &str,
    backend: BackendChoice,
    dtype: DType,
    problem: Option<&Problem>,
) -> Result<Selection> {
    let mut kernel = kernel.to_string();
    let (opened, mut notes) = if kernel.eq_ignore_ascii_case("auto") {
        let (opened, fallback) = open_backend(backend)?;
        let notes = fallback
            .map(|reason| {
                let name = match opened.kind() {
                    BackendKind::Cpu => "CPU",
                    BackendKind::Cuda => "CUDA",
                    BackendKind::Wgpu => "wgpu",
                };
                format!("using the {name} backend ({reason})")
            })
            .into_iter()
            .collect();
        (opened, notes)
    } else {
        let mut spec = find(&kernel)?;
        // `--backend wgpu` with a CUDA kernel's name or seed alias runs its WGSL twin.
        if backend == BackendChoice::Wgpu && spec.backend != BackendKind::Wgpu {
            if let Some(twin) = crate::registry::wgpu_twin(spec) {
                spec = twin;
                kernel = twin.name.to_string();
            }
        }
        let wanted = BackendChoice::of(spec.backend);
        if backend != BackendChoice::Auto && backend != wanted {
            return Err(Error::Invalid(format!(
                "kernel `{}` runs on the {} backend, not on the {} backend asked for",
                spec.name,
                spec.backend,
                backend.name()
            )));
        }
        let (opened, _) = open_backend(wanted).map_err(|e| match e {
            Error::Wgpu { message, .. } => Error::Wgpu {
                context: format!("kernel `{}` needs an adapter", spec.name),
                message,
            },
            e => Error::NeedsGpu {
                kernel: spec.name.to_string(),
                reason: e.to_string(),
            },
        })?;
        (opened, Vec::new())
    };
    let choice = choose(&kernel, opened.as_ref(), dtype, problem)?;
    notes.extend(choice.notes);
    Ok(Selection {
        kernel: choice.kernel,
        backend: opened,
        tiling: choice.tiling,
        notes,
    })
}

/// Chooses the kernel for an open `backend`: [`auto`] for `auto` (any case), else the named
/// kernel (registry name or seed alias), which must run on this backend, with its tuned tiling
/// for `problem` on CUDA.
pub fn choose(
    kernel: &str,
    backend: &dyn Backend,
    dtype: DType,
    problem: Option<&Problem>,
) -> Result<Choice> {
    if kernel.eq_ignore_ascii_case("auto") {
        return auto(backend, dtype, problem);
    }
    let spec = find(kernel)?;
    if spec.backend != backend.kind() {
        return Err(Error::WrongBackend {
            kernel: spec.name.to_string(),
            backend: backend.kind().to_string(),
        });
    }
    // A named kernel gets its own tuned tiling for this dtype and shape class, as `matmul bench`
    // gives it, so that `run` and `bench` time the same code.
    let mut notes = Vec::new();
    let tiling = match (backend.kind(), problem) {
        (BackendKind::Cuda, Some(p)) => {
            let limits = backend.limits();
            tuned_table(&mut notes).and_then(|t| t.runnable(spec, p, limits.as_ref()))
        }
        _ => None,
    };
    Ok(Choice {
        kernel: spec,
        tiling,
        notes,
    })
}

/// `auto` on an open `backend`: on CUDA with a `problem`, the fastest tune-table entry for its
/// dtype and shape class that can run it; otherwise the first kernel of the backend's list for
/// `dtype` that can run `problem` on this device (every one can when there is no problem), the
/// last of the list when none can (which then refuses with a clear error).
///
/// u32 on CUDA takes the int8 tensor-core kernels ([`TENSOR_CORE_U32`]) before any tune-table
/// entry, wherever one can run.
///
/// The lists: the CPU's fast kernel on the CPU; on CUDA `warptile` for f32, `wgmma-u8x4-tma`,
/// `wgmma-u8x4`, `mma-u8x4` then `warptile` for u32,
/// `wgmma-tf32` then `mma-sync-wide` for tf32, and for bf16/f16 the wgmma kernel that suits the
/// problem's tile count, then the others, then `mma-sync` (which runs any shape).
pub fn auto(backend: &dyn Backend, dtype: DType, problem: Option<&Problem>) -> Result<Choice> {
    let mut notes = Vec::new();
    let table = match (backend.kind(), problem) {
        (BackendKind::Cuda, Some(_)) => tuned_table(&mut notes),
        _ => None,
    };
    let mut choice = auto_with_table(backend, dtype, problem, table.as_ref())?;
    choice.notes = notes;
    Ok(choice)
}

/// [`auto`] with the tune table given instead of read from device 0: what `matmul bench` runs
/// for its kernel `auto`, with the table it loaded (None under `--no-tuned`). The table is
/// consulted on CUDA with a `problem` only, as in [`auto`].
pub fn auto_with_table(
    backend: &dyn Backend,
    dtype: DType,
    problem: Option<&Problem>,
    table: Option<&tune::TuneTable>,
) -> Result<Choice> {
    if let (BackendKind::Cuda, Some(p)) = (backend.kind(), problem) {
        let limits = backend.limits();
        // u32 on the int8 tensor cores (the byte split) beats every IMAD kernel a tune table can
        // name (H100: 68.9 against 31.1 TOPS at 4096³, 28.1 against 26.1 at 1024³), so where one
        // runs it goes first; the table's SIMT winners are the fallback.
        if let Some(kernel) = tensor_core_u32(p, limits.as_ref()) {
            return Ok(Choice {
                kernel,
                tiling: None,
                notes: Vec::new(),
            });
        }
        if let Some((kernel, tiling)) = table.and_then(|t| t.best(p, limits.as_ref())) {
            return Ok(Choice {
                kernel,
                tiling: Some(tiling),
                notes: Vec::new(),
            });
        }
    }
    let limits = backend.limits();
    let specs = default_kernels(backend.kind(), dtype, problem, limits.as_ref())
        .iter()
        .map(|name| find(name))
        .collect::<Result<Vec<_>>>()?;
    let kernel = first_runnable(&specs, problem, limits.as_ref());
    Ok(Choice {
        kernel,
        tiling: None,
        notes: Vec::new(),
    })
}

/// The byte-split u32 kernels `auto` prefers to the IMAD ones, fastest first: `wgmma-u8x4-tma`
/// and `wgmma-u8x4` (Hopper), `mma-u8x4` (sm_80+). Measured on H100 (u32 TOPS, n³, the int8 run
/// of record): 1024 — 32.7 / 28.1 / 23.5 against 26.2 for `multistage-raster`; 2048 — 114 / 62.0
/// / 51.0 / 30.7; 4096 — 129 / 68.8 / 55.4 / 31.1; 8192 — 140 / 64.1 / 54.9 / 32.0.
pub const TENSOR_CORE_U32: [&str; 3] = ["wgmma-u8x4-tma", "wgmma-u8x4", "mma-u8x4"];

/// The first of [`TENSOR_CORE_U32`] that can run `problem` (u32 only) on a device with `limits`.
fn tensor_core_u32(
    problem: &Problem,
    limits: Option<&DeviceLimits>,
) -> Option<&'static KernelSpec> {
    if problem.dtype != DType::U32 {
        return None;
    }
    TENSOR_CORE_U32
        .iter()
        .filter_map(|n| find(n).ok())
        .find(|k| k.can_run(problem, limits, &Default::default()).is_ok())
}

/// The kernels `auto` tries, in order, on a backend for a dtype without a tune table: the fastest
/// of our own kernels measured on H100 (lab/notebook.md) first, then the ones that run what the
/// faster ones refuse (GPUs other than Hopper; tf32's op(A) = T with op(B) = N). For tf32 that is
/// `mma-sync-wide` (128×256 tiles: on H100 +9 % at 8192 and +24 % on 4097×4095×4093 over
/// `mma-sync`, 2026-11-24); for 16-bit inputs `mma-sync`. The TMA kernels run rows of any length
/// (an operand whose stored rows are not 16-byte multiples is staged: cuda/staging.rs).
///
/// For 16-bit inputs the three wgmma tiles (128×256, 128×128, 128×64) go in the order of the
/// time model ([`Wgmma::estimate`], with each kernel's split-K plan): waves of tiles on the
/// device's SMs, the padding of a narrow C in a wide tile, the compulsory DRAM traffic. Measured
/// points it agrees with (H100, lab/notebook.md): 1024³ bf16 `wgmma-n64` 205 TFLOP/s, `wgmma-n128`
/// 178, `wgmma` 122; 2048³ `wgmma` 588, `wgmma-n128` 542. From [`LARGE_TILES`] tiles of 128×256 on,
/// `wgmma-cluster` goes first: in 30-round benches on H100 (2026-11-25) it ran 0.2–1.8 % ahead of
/// `wgmma` at 6144³ and 8192³ (bf16 and f16, three runs) and 0.3–4.4 % ahead or 0.8 % behind at
/// 16384³, and level at 512 tiles (4096³, 4096²×14336) and 8192²×2048 (lab/notebook.md 15v).
fn default_kernels(
    backend: BackendKind,
    dtype: DType,
    problem: Option<&Problem>,
    limits: Option<&DeviceLimits>,
) -> Vec<&'static str> {
    match (backend, dtype) {
        (BackendKind::Cpu, _) => vec!["cpu"],
        (BackendKind::Wgpu, _) => vec!["wgpu-regtile"],
        (BackendKind::Cuda, DType::F32) => vec!["warptile"],
        (BackendKind::Cuda, DType::U32) => {
            let mut list = TENSOR_CORE_U32.to_vec();
            list.push("warptile");
            list
        }
        (BackendKind::Cuda, DType::Tf32) => vec!["wgmma-tf32", "mma-sync-wide"],
        (BackendKind::Cuda, DType::Bf16 | DType::F16) => {
            let mut list = vec!["wgmma", "wgmma-n128", "wgmma-n64"];
            if let Some(p) = problem {
                let sms = limits.map_or(H100_SMS, |l| l.sms) as u64;
                let time = |name: &str| {
                    let k = find(name).expect("a registry kernel");
                    Wgmma::estimate(k, p, sms, Wgmma::splits(k, p, sms))
                };
                list.sort_by(|a, b| time(a).total_cmp(&time(b))); // stable: ties keep the order
                if wgmma_tiles(p).is_some_and(|t| t >= LARGE_TILES) {
                    list.insert(0, "wgmma-cluster");
                }
            }
            list.push("mma-sync");
            list
        }
    }
}

/// The SM count `auto` assumes where the device does not say (an H100 SXM's).
const H100_SMS: u32 = 132;

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

/// Device 0's tune table (the user's, else the built-in one for its name), read without a second
/// context; why a corrupt file was skipped goes to `notes`.
fn tuned_table(notes: &mut Vec<String>) -> Option<tune::TuneTable> {
    let lookup = tune::device0_table();
    if let Some(w) = lookup.warning {
        notes.push(format!("ignoring the tune table: {w}"));
    }
    lookup.found.map(|(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    fn specs(backend: BackendKind, dtype: DType) -> Vec<&'static KernelSpec> {
        default_kernels(backend, dtype, None, None)
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

    /// tf32 on CUDA: wgmma-tf32 where it can run (Hopper, op(A) = N or op(B) = T), mma-sync-wide
    /// otherwise.
    #[test]
    fn auto_tf32_prefers_wgmma_tf32_and_falls_back_to_mma_sync_wide() {
        let tf32 = specs(BackendKind::Cuda, DType::Tf32);
        let hopper = crate::registry::rules::test_limits::HOPPER;
        let ampere = crate::registry::rules::test_limits::AMPERE;
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
        // A stored row of 4097 floats is not a 16-byte multiple: staged, then read by TMA.
        assert_eq!(
            pick(&Problem::new(64, 64, 4097, DType::Tf32), &hopper),
            "wgmma-tf32"
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
            default_kernels(BackendKind::Cuda, DType::Bf16, Some(&p), None)[0]
        };
        assert_eq!(first(1024, 1024), "wgmma-n64"); // 8 × 4 = 32 tiles of 128×256
        assert_eq!(first(2048, 2048), "wgmma"); // 16 × 8 = 128
        assert_eq!(first(1024, 4096), "wgmma"); // 8 × 16 = 128
        assert_eq!(first(4096, 4096), "wgmma"); // 32 × 16 = 512
        assert_eq!(first(8192, 4096), "wgmma-cluster"); // 64 × 16 = 1024
        assert_eq!(first(16384, 16384), "wgmma-cluster");
        // A large problem whose stored rows TMA cannot read as they are runs staged; only a GPU
        // other than Hopper falls through to mma-sync.
        let hopper = crate::registry::rules::test_limits::HOPPER;
        let pick = |k, limits: &DeviceLimits| {
            let p = Problem::new(8192, 8192, k, DType::Bf16);
            let specs = default_kernels(BackendKind::Cuda, DType::Bf16, Some(&p), Some(limits))
                .iter()
                .map(|n| find(n).unwrap())
                .collect::<Vec<_>>();
            first_runnable(&specs, Some(&p), Some(limits)).name
        };
        assert_eq!(pick(1024, &hopper), "wgmma-cluster");
        assert_eq!(pick(1023, &hopper), "wgmma-cluster"); // rows of 2,046 bytes: staged
        let ampere = crate::registry::rules::test_limits::AMPERE;
        assert_eq!(pick(1024, &ampere), "mma-sync");
        assert_eq!(
            default_kernels(BackendKind::Cuda, DType::F16, None, None)[0],
            "wgmma"
        );
    }

    /// The CPU: `auto` is the fast kernel; a named kernel is found by name or alias in any case
    /// and refuses a backend it does not run on.
    #[test]
    fn select_on_the_cpu() {
        let p = Problem::new(3, 5, 7, DType::U32);
        let sel = select("AUTO", BackendChoice::Cpu, DType::U32, Some(&p)).unwrap();
        assert_eq!((sel.kernel.name, sel.tiling), ("cpu", None));
        assert_eq!(sel.backend.kind(), BackendKind::Cpu);
        assert!(sel.notes.is_empty());
        let sel = select("Reference", BackendChoice::Auto, DType::U32, Some(&p)).unwrap();
        assert_eq!(sel.kernel.name, "cpu-reference");
        assert_eq!(sel.backend.kind(), BackendKind::Cpu);
        let e = select("tiled", BackendChoice::Cpu, DType::F32, None).unwrap_err();
        assert!(matches!(e, Error::Invalid(_)), "{e}");
        assert!(e.to_string().contains("runs on the cuda backend"), "{e}");
        assert!(matches!(
            select("quantum", BackendChoice::Cpu, DType::F32, None),
            Err(Error::UnknownKernel(_))
        ));
        let cpu = crate::cpu::CpuBackend;
        assert!(matches!(
            choose("TILING", &cpu, DType::U32, Some(&p)),
            Err(Error::WrongBackend { .. })
        ));
        assert_eq!(
            choose("cpu-fast", &cpu, DType::U32, Some(&p))
                .unwrap()
                .kernel
                .name,
            "cpu"
        );
    }

    /// A CUDA device for `auto` without one: its limits only (nothing runs).
    struct FakeCuda(DeviceLimits);

    impl Backend for FakeCuda {
        fn kind(&self) -> BackendKind {
            BackendKind::Cuda
        }
        fn describe(&self) -> String {
            "fake".into()
        }
        fn limits(&self) -> Option<DeviceLimits> {
            Some(self.0)
        }
        fn run(
            &self,
            _: &KernelSpec,
            _: &Problem,
            _: &crate::AnyMatrix,
            _: &crate::AnyMatrix,
            _: crate::RunOptions,
        ) -> Result<crate::AnyMatrix> {
            Err(Error::Invalid("fake".into()))
        }
        fn time(
            &self,
            _: &KernelSpec,
            _: &Problem,
            _: &[crate::Inputs],
            _: usize,
            _: usize,
            _: crate::RunOptions,
        ) -> Result<Vec<f64>> {
            Err(Error::Invalid("fake".into()))
        }
    }

    /// u32 on CUDA: the int8 tensor-core kernels first (wgmma-u8x4 on Hopper, mma-u8x4 off it),
    /// before the built-in H100 tune table's SIMT winners, which stay the choice for f32; with
    /// no problem the list's order (wgmma-u8x4, mma-u8x4, warptile).
    #[test]
    fn auto_u32_prefers_the_int8_tensor_cores_over_the_tune_table() {
        let hopper = FakeCuda(crate::registry::rules::test_limits::HOPPER);
        let ampere = FakeCuda(crate::registry::rules::test_limits::AMPERE);
        let table = tune::builtin("NVIDIA H100 80GB HBM3").expect("the built-in H100 table");
        for p in [
            Problem::square(4096, DType::U32),
            Problem::new(1, 1, 1, DType::U32),
            Problem::new(127, 4099, 70_001, DType::U32).with_ops(Op::T, Op::N),
        ] {
            // The table alone would name an IMAD kernel.
            if let Some((k, _)) = table.best(&p, hopper.limits().as_ref()) {
                assert!(!k.is_byte_split(), "{}", k.name);
            }
            let pick = |b: &FakeCuda| {
                auto_with_table(b, DType::U32, Some(&p), Some(&table))
                    .unwrap()
                    .kernel
                    .name
            };
            assert_eq!(pick(&hopper), "wgmma-u8x4-tma", "{p}");
            assert_eq!(pick(&ampere), "mma-u8x4", "{p}");
        }
        let f32 = Problem::square(4096, DType::F32);
        let k = auto_with_table(&hopper, DType::F32, Some(&f32), Some(&table))
            .unwrap()
            .kernel;
        assert!(!k.is_byte_split() && k.supports(DType::F32), "{}", k.name);
        assert_eq!(
            default_kernels(BackendKind::Cuda, DType::U32, None, None),
            ["wgmma-u8x4-tma", "wgmma-u8x4", "mma-u8x4", "warptile"]
        );
    }
}
