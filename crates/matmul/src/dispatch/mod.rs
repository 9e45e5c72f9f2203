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

pub mod measure;
pub mod model;
pub mod search;
pub mod tune;

use crate::backend::Backend;
use crate::dtype::DType;
use crate::error::{Error, Result};
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
            e @ Error::NotBuilt { .. } => e,
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
            tuned_table(backend, &mut notes).and_then(|t| t.runnable(spec, p, limits.as_ref()))
        }
        _ => None,
    };
    Ok(Choice {
        kernel: spec,
        tiling,
        notes,
    })
}

/// `auto` on an open `backend`. On CUDA with a `problem`: the measured choice for the problem's
/// shape bucket where the device's tune table has one, else the fastest candidate by the cost
/// model ([`model::rank`]: every eligible registry kernel and SIMT tiling that can run the
/// problem, the table's tilings calibrated to their measured rates). Otherwise (no problem, the
/// CPU, wgpu) the first kernel of the backend's list for `dtype` that can run `problem` (every
/// one can when there is no problem), the last of the list when none can (which then refuses
/// with a clear error).
pub fn auto(backend: &dyn Backend, dtype: DType, problem: Option<&Problem>) -> Result<Choice> {
    let mut notes = Vec::new();
    let table = match (backend.kind(), problem) {
        (BackendKind::Cuda, Some(_)) => tuned_table(backend, &mut notes),
        _ => None,
    };
    let mut choice = auto_with_table(backend, dtype, problem, table.as_ref())?;
    choice.notes = notes;
    Ok(choice)
}

/// `auto` for a strided batch of `count` products of `problem`. On CUDA: the model's ranking
/// of the batch seen as one product of `count` times the rows (the parallelism a batch offers;
/// for a B shared by every product it is that product), among the kernels that run a batch in one
/// launch ([`crate::registry::CudaSource::batched`]) and cuBLAS excluded; [`auto`] for one
/// product, other backends, or where no such kernel can run it.
pub fn auto_batched(backend: &dyn Backend, problem: &Problem, count: usize) -> Result<Choice> {
    let single = || auto(backend, problem.dtype, Some(problem));
    let Some(limits) = backend
        .limits()
        .filter(|_| backend.kind() == BackendKind::Cuda)
    else {
        return single();
    };
    if count < 2 {
        return single();
    }
    let proxy = Problem {
        m: problem.m.saturating_mul(count),
        ..*problem
    };
    let batched = |k: &KernelSpec| k.cuda_source().is_some_and(|s| s.batched);
    // The proxy hides each product's own edges: a tile wider than a product computes padding.
    // Each candidate's time is scaled by its tiles' fill of one product over their fill of the
    // proxy (512 × 128³ with 128×256 tiles: half of every tile is padding).
    let found = ranked(&proxy, &limits, None)
        .into_iter()
        .filter(|(c, _)| {
            let opts = crate::registry::RunOptions {
                tile: None,
                tiling: c.tiling,
            };
            batched(c.kernel) && c.kernel.can_run(problem, Some(&limits), &opts).is_ok()
        })
        .map(|(c, e)| {
            let padded = e.seconds * tile_fill(&c, &proxy) / tile_fill(&c, problem);
            (c, padded)
        })
        .min_by(|x, y| x.1.total_cmp(&y.1))
        .map(|(c, _)| c);
    match found {
        Some(c) => Ok(Choice {
            kernel: c.kernel,
            tiling: c.tiling,
            notes: Vec::new(),
        }),
        None => single(),
    }
}

/// The share of `c`'s tiles over `problem`'s C (C^T where a wgmma kernel swaps the operands)
/// that is C rather than padding past its edges: 1 when the tiles divide it.
fn tile_fill(c: &model::Candidate, problem: &Problem) -> f64 {
    let (bm, bn) = match (
        c.kernel.tc_tile(),
        c.tiling.or_else(|| c.kernel.tiling(&Default::default())),
    ) {
        (Some(t), _) => (t.bm as usize, t.bn as usize),
        (None, Some(t)) => (t.bm as usize, t.bn as usize),
        (None, None) => return 1.0,
    };
    let (rows, cols) = match (
        c.kernel.tc_tile(),
        crate::registry::WgmmaTf32Orientation::of(problem),
    ) {
        (Some(_), Some(o)) => o.d_shape(problem),
        _ => (problem.m, problem.n),
    };
    let padded = rows.div_ceil(bm) * bm * cols.div_ceil(bn) * bn;
    (rows * cols) as f64 / padded.max(1) as f64
}

/// The choices [`autotune`] measured in this process, by device class.
static MEASURED: std::sync::Mutex<Vec<(String, tune::MeasuredChoice)>> =
    std::sync::Mutex::new(Vec::new());

/// [`auto`] with a measured choice: where the device's table has none for `problem`'s shape
/// bucket, the model's top [`measure::TOP`] candidates are timed on it (about 15 ms each, after
/// their first compilation, which the kernel cache keeps) and the fastest becomes the bucket's
/// choice, saved in the table of the device's class ([`tune::save_choice`]) for every later
/// call and process. As [`auto`] off CUDA or for a device without an identity.
pub fn autotune(backend: &dyn Backend, problem: &Problem) -> Result<Choice> {
    let (Some(id), Some(limits)) = (backend.identity(), backend.limits()) else {
        return auto(backend, problem.dtype, Some(problem));
    };
    if backend.kind() != BackendKind::Cuda {
        return auto(backend, problem.dtype, Some(problem));
    }
    let mut notes = Vec::new();
    let mut table = tuned_table(backend, &mut notes).unwrap_or_default();
    // This process's choices for the class too: without a cache directory (or before the file
    // is read again) a bucket is measured once per process.
    let mut kept = MEASURED.lock().unwrap_or_else(|e| e.into_inner());
    for (class, c) in kept.iter() {
        if *class == id.class {
            table.insert_choice(c.clone());
        }
    }
    if table.choice(problem, Some(&limits)).is_none() {
        let choice = measure::measure(backend, problem, Some(&table), measure::TOP)?;
        match tune::save_choice(&id, choice.clone()) {
            Ok(Some(_)) => {}
            Ok(None) => notes.push(
                "no cache directory: the measured choice is kept for this process only".into(),
            ),
            Err(e) => notes.push(format!(
                "the measured choice is kept for this process only: {e}"
            )),
        }
        kept.push((id.class.clone(), choice.clone()));
        table.insert_choice(choice);
    }
    drop(kept);
    let mut choice = auto_with_table(backend, problem.dtype, Some(problem), Some(&table))?;
    choice.notes = notes;
    Ok(choice)
}

/// [`auto`] with the tune table given instead of read from device 0: what `matmul bench` runs
/// for its kernel `auto`, with the table it loaded (None under `--no-tuned`: the model alone).
/// The table is consulted on CUDA with a `problem` only, as in [`auto`].
pub fn auto_with_table(
    backend: &dyn Backend,
    dtype: DType,
    problem: Option<&Problem>,
    table: Option<&tune::TuneTable>,
) -> Result<Choice> {
    let limits = backend.limits();
    if let (BackendKind::Cuda, Some(p), Some(l)) = (backend.kind(), problem, limits.as_ref()) {
        if let Some((kernel, tiling)) = table
            .and_then(|t| t.choice(p, Some(l)))
            .filter(|(k, _)| model::precise_enough(k, p))
        {
            return Ok(Choice {
                kernel,
                tiling,
                notes: Vec::new(),
            });
        }
        if let Some((best, _)) = ranked(p, l, table).first() {
            return Ok(Choice {
                kernel: best.kernel,
                tiling: best.tiling,
                notes: Vec::new(),
            });
        }
    }
    let specs = default_kernels(backend.kind(), dtype)
        .iter()
        .map(|name| find(name))
        .collect::<Result<Vec<_>>>()?;
    let kernel = first_runnable(&specs, problem, backend);
    Ok(Choice {
        kernel,
        tiling: None,
        notes: Vec::new(),
    })
}

/// `auto`'s candidates for `problem` on a device with `limits`, fastest first by the cost model
/// ([`model::rank`]), with `table`'s tilings calibrated to their measured rates where a table is
/// given.
pub fn ranked(
    problem: &Problem,
    limits: &DeviceLimits,
    table: Option<&tune::TuneTable>,
) -> Vec<(model::Candidate, model::Estimate)> {
    let device = model::DeviceModel::of(limits);
    let extra = table.map_or_else(Vec::new, |t| t.calibrated(problem, &device));
    model::rank(problem, limits, &extra)
}

/// The byte-split u32 kernels, fastest first on Hopper at large sizes: `wgmma-u8x4-tma` and
/// `wgmma-u8x4` (Hopper), `mma-u8x4` (sm_80+). Measured on H100 (u32 TOPS, n³, the int8 run
/// of record): 1024 — 32.7 / 28.1 / 23.5 against 26.2 for `multistage-raster`; 2048 — 114 / 62.0
/// / 51.0 / 30.7; 4096 — 129 / 68.8 / 55.4 / 31.1; 8192 — 140 / 64.1 / 54.9 / 32.0.
pub const TENSOR_CORE_U32: [&str; 3] = ["wgmma-u8x4-tma", "wgmma-u8x4", "mma-u8x4"];

/// The kernels `auto` tries, in order, where the model has nothing to rank (no problem given, or
/// a backend other than CUDA): the fastest first, then the ones that run what the faster ones
/// refuse (GPUs other than Hopper; tf32's op(A) = T with op(B) = N).
fn default_kernels(backend: BackendKind, dtype: DType) -> Vec<&'static str> {
    match (backend, dtype) {
        (BackendKind::Cpu, _) => vec!["cpu"],
        // f16 on the tensor cores where the adapter has cooperative matrices, else (and bf16)
        // the scalar register tile, computing in f32.
        (BackendKind::Wgpu, DType::F16) => vec!["wgpu-coopmat", "wgpu-regtile"],
        (BackendKind::Wgpu, _) => vec!["wgpu-regtile"],
        (BackendKind::Cuda, DType::F32) => vec!["multistage-raster"],
        (BackendKind::Cuda, DType::U32) => {
            let mut list = TENSOR_CORE_U32.to_vec();
            list.push("multistage-raster");
            list
        }
        (BackendKind::Cuda, DType::Tf32) => vec!["wgmma-tf32", "mma-sync-wide"],
        (BackendKind::Cuda, DType::Bf16 | DType::F16) => vec!["wgmma", "mma-sync"],
    }
}

/// The first of `specs` that `backend` can run `problem` with (its own rules included: an
/// adapter without cooperative matrices refuses `wgpu-coopmat`; every one can when there is no
/// problem); the last when none can, which then refuses with a clear error.
fn first_runnable(
    specs: &[&'static KernelSpec],
    problem: Option<&Problem>,
    backend: &dyn Backend,
) -> &'static KernelSpec {
    let runs =
        |k: &KernelSpec| problem.is_none_or(|p| backend.check(k, p, Default::default()).is_ok());
    specs
        .iter()
        .copied()
        .find(|k| runs(k))
        .unwrap_or(specs[specs.len() - 1])
}

/// Device 0's tune table (the user's, else the built-in one for its name), read without a second
/// context; why a corrupt file was skipped goes to `notes`.
/// The tune table of `backend`'s device ([`tune::table_for`]), noting a file that was skipped.
fn tuned_table(backend: &dyn Backend, notes: &mut Vec<String>) -> Option<tune::TuneTable> {
    let lookup = tune::table_for(&backend.identity()?);
    if let Some(w) = lookup.warning {
        notes.push(format!("ignoring the tune table: {w}"));
    }
    lookup.found.map(|(_, t)| t)
}

#[cfg(test)]
mod tests;
