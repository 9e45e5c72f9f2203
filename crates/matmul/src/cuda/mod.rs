//! The CUDA backend: cudarc with every library loaded at run time. Kernels are CUDA C++ files
//! compiled by NVRTC for the device's own architecture ([`mod@compile`]), cached in memory (loaded
//! functions, per backend) and on disk (CUBINs); cuBLAS is the vendor baseline (`cublas.rs`);
//! [`device`] reads the device's properties without a context; [`ceilings`] measures the
//! device's own limits for the roofline.
//!
//! Nothing here panics on a machine without CUDA: every library is probed before its first use
//! ([`libs`]) and a missing one is `Error::NoGpu` (driver, device) or `Error::Cuda` (NVRTC,
//! cuBLAS). One backend owns one context and one stream; every launch is checked, and `run`
//! synchronizes and checks the context's error state before it returns.

pub mod ceilings;
pub mod compile;
mod cublas;
pub mod device;
pub mod libs;
mod tma;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::{self as cu_sys, CUfunction_attribute_enum as FuncAttr};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr,
    LaunchConfig, PushKernelArg,
};
use half::{bf16, f16};

use compile::Build;
pub use compile::{
    arch_for, compile, compile_source, compile_source_with_options, compile_with_cache,
    nvrtc_version, CompileInfo, Compiled, DiskCache,
};
pub use device::{list_devices, DeviceInfo};

use crate::backend::{check_inputs, Backend, Inputs, RunOptions};
use crate::dtype::{DType, Types};
use crate::error::{Error, Result, Unsupported};
use crate::matrix::{AnyMatrix, Matrix, POISON_BF16, POISON_F16, POISON_F32, POISON_U32};
use crate::problem::Problem;
use crate::registry::{
    BackendKind, CudaSource, DeviceLimits, Geometry, Implementation, KernelSpec,
    WgmmaTf32Orientation,
};
use libs::Context;

/// A loaded kernel: the function, ptxas's report for it, and the dynamic shared memory it has
/// been allowed so far.
struct Loaded {
    entry: String,
    module: Arc<CudaModule>,
    func: CudaFunction,
    info: Option<CompileInfo>,
    max_dynamic_shared: Mutex<usize>,
}

/// One CUDA device: a context, a stream, loaded kernels and (lazily) a cuBLAS handle.
pub struct CudaBackend {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    info: DeviceInfo,
    loaded: Mutex<HashMap<String, Arc<Loaded>>>,
    blas: Mutex<Option<CudaBlas>>,
    tail_workspace: Mutex<Option<Arc<TailWorkspace>>>,
}

/// An input matrix on the device.
enum DeviceBuf {
    F32(CudaSlice<f32>),
    U32(CudaSlice<u32>),
    F16(CudaSlice<f16>),
    Bf16(CudaSlice<bf16>),
}

impl DeviceBuf {
    fn ptr(&self, stream: &CudaStream) -> u64 {
        match self {
            DeviceBuf::F32(s) => s.device_ptr(stream).0,
            DeviceBuf::U32(s) => s.device_ptr(stream).0,
            DeviceBuf::F16(s) => s.device_ptr(stream).0,
            DeviceBuf::Bf16(s) => s.device_ptr(stream).0,
        }
    }
}

/// What one launch runs: a compiled kernel with its launch configuration, or cuBLAS.
enum Launcher {
    Kernel {
        loaded: Arc<Loaded>,
        config: LaunchConfig,
        /// The boxes of the TMA tensor maps that follow the usual arguments (TMA kernels only).
        tma: Option<tma::Boxes>,
        /// A split-tail kernel's extra argument and tail launch (split-tail kernels only).
        split: Option<SplitLaunch>,
    },
    Cublas,
}

/// How a [`CudaSource::split_tail`] kernel runs a product: its main entry computes the first
/// `whole_tiles` tiles of its block order whole (its one extra argument; blocks past them exit),
/// and the tail entry, if the plan splits, the rest in pieces, launched right behind it.
struct SplitLaunch {
    whole_tiles: i32,
    tail: Option<TailLaunch>,
}

/// The tail entry's launch: `plan`'s blocks (the grid) drawing its pieces, with the workspace
/// 13_multistage.cu's `SplitTail` describes; always a programmatic dependent of the main entry
/// (planned only where the device has them: compute capability 9.0 and up), whose blocks exit at
/// once where the tail is all of C.
struct TailLaunch {
    loaded: Arc<Loaded>,
    config: LaunchConfig,
    plan: TailPlan,
    workspace: Arc<TailWorkspace>,
}

/// The split tail's workspace, one per backend, grown as launches need it and shared by them (one
/// stream runs them in order, and each leaves the counters at zero).
struct TailWorkspace {
    /// One slot of BM·BN accumulators per tail tile.
    partials: CudaSlice<u8>,
    /// The piece queue's two counters, then one counter per tail tile; zero between launches
    /// (the kernel resets them).
    sync: CudaSlice<u32>,
}

/// A split tail: the last `tiles − first_tile` tiles of the block order, each in `pieces` pieces
/// of its k range, drawn by `blocks` blocks (13_multistage.cu, "The split tail").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailPlan {
    pub first_tile: u64,
    pub blocks: u64,
    pub pieces: u64,
}

/// The split tail of `tiles` tiles of `slices` k slices each, for a device that runs `wave` blocks
/// at once, where it is planned: at least two waves of tiles at least [`TAIL_MIN_SLICES`] long,
/// whose last partial wave is at most 3/4 full. The tail is that partial wave plus
/// `extra_eighths`/8 of a wave, so that the SMs that finish their whole tiles first have pieces to
/// draw while the last whole tiles finish, in pieces of about `piece_slices` slices (at least one
/// per tile). The defaults are [`TAIL_EXTRA_EIGHTHS`] and [`TAIL_PIECE_SLICES`]. Measured on an
/// H100 (docs/kernels.md, "The split tail"): +1 to +2 % at 8192³ and 16384³; at 4096³, whose last
/// wave is 116 tiles of 132, every tail tried lost 2–4 % (the tail's own cost: pieces that never
/// wait for each other lost as much), so it stays whole.
pub fn split_tail_plan(
    tiles: u64,
    slices: u64,
    wave: u64,
    extra_eighths: u64,
    piece_slices: u64,
) -> Option<TailPlan> {
    if wave == 0 || tiles < 2 * wave || slices < TAIL_MIN_SLICES || 4 * (tiles % wave) > 3 * wave {
        return None;
    }
    // Saturating: the knobs come from the kernel defines, and a huge one means "all of C".
    let tail = (tiles % wave)
        .saturating_add(wave.saturating_mul(extra_eighths) / 8)
        .min(tiles);
    Some(TailPlan {
        first_tile: tiles - tail,
        blocks: wave,
        pieces: (slices / piece_slices.max(1)).max(1),
    })
}

/// The shortest tiles (in k slices) whose tail [`split_tail_plan`] splits.
pub const TAIL_MIN_SLICES: u64 = 128;
/// The tail beyond the last partial wave, in eighths of a wave (`TAIL_EXTRA_EIGHTHS=n` among the
/// kernel defines overrides it, for A/B runs).
pub const TAIL_EXTRA_EIGHTHS: u64 = 4;
/// The length of a tail piece in k slices (`TAIL_PIECE_SLICES=n` overrides it): 64 ran 0.75 %
/// faster than 128 at 8192³ and as fast at 16384³.
pub const TAIL_PIECE_SLICES: u64 = 64;

/// The kernel define that turns the split tail off (`MATMUL_KERNEL_DEFINES=SPLIT_TAIL=0`, for
/// A/B runs): the host then launches every tile whole.
const SPLIT_TAIL_OFF: (&str, &str) = ("SPLIT_TAIL", "0");

/// The device addresses of one launch's operands and output and, for a TMA kernel, their tensor
/// maps (encoded on the host before any timed region).
struct Operands {
    a: u64,
    b: u64,
    c: u64,
    maps: Option<[tma::TensorMap; 3]>,
}

impl CudaBackend {
    /// Opens CUDA device `ordinal`; a missing driver library or device is an error, never a panic.
    pub fn new(ordinal: usize) -> Result<CudaBackend> {
        let count = device::init_and_count()?;
        if count == 0 {
            return Err(Error::NoGpu(
                "the CUDA driver is installed but reports no device".into(),
            ));
        }
        if ordinal >= count {
            return Err(Error::NoGpu(format!(
                "device {ordinal} was requested; the driver reports {count} device(s)"
            )));
        }
        let info = device::query(ordinal)?;
        let ctx =
            CudaContext::new(ordinal).ctx(|| format!("creating a context on device {ordinal}"))?;
        // One stream per backend: cudarc's cross-stream event tracking would only add an event
        // record to every launch (and to every timed one).
        // SAFETY: every buffer of this backend is used on `stream` alone.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().ctx(|| "creating a stream".into())?;
        Ok(CudaBackend {
            ctx,
            stream,
            info,
            loaded: Mutex::new(HashMap::new()),
            blas: Mutex::new(None),
            tail_workspace: Mutex::new(None),
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The NVRTC target of this device ("sm_90a" on H100).
    pub fn arch(&self) -> &str {
        &self.info.arch
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every launch of this backend goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Compiles (or finds in the caches) and loads `entry` from any CUDA C++ source, e.g. the
    /// ceilings micro-kernels, for this device.
    pub fn load_function(
        &self,
        name: &str,
        text: &str,
        defines: &[(String, String)],
        entry: &str,
    ) -> Result<CudaFunction> {
        Ok(self.load(name, text, defines, &[], entry)?.func.clone())
    }

    /// ptxas's report for `kernel` as this backend compiles it.
    pub fn compile_info(
        &self,
        kernel: &KernelSpec,
        types: impl Into<Types>,
        opts: &RunOptions,
    ) -> Result<CompileInfo> {
        let loaded = self.load_kernel(kernel, types.into(), opts, Build::Main)?;
        loaded.info.clone().ok_or_else(|| Error::Cuda {
            context: format!("compiling {}", kernel.name),
            message: "ptxas reported nothing for the entry point".into(),
        })
    }

    /// What `run` hands a kernel as C before the launch, downloaded without launching anything:
    /// every element is the poison pattern (NaN / 0xDEADBEEF). Lets tests check the poisoning.
    pub fn poisoned_output(&self, problem: &Problem) -> Result<AnyMatrix> {
        let mut c = self.alloc_output(problem)?;
        self.fill_output(&mut c, false)?;
        self.download(&c, problem)
    }

    /// Compiles (or finds in the caches) and loads `build` of registry kernel `kernel`.
    fn load_kernel(
        &self,
        kernel: &KernelSpec,
        types: Types,
        opts: &RunOptions,
        build: Build,
    ) -> Result<Arc<Loaded>> {
        let src = kernel.cuda_source().ok_or_else(|| {
            Error::Invalid(format!("kernel `{}` has no CUDA source", kernel.name))
        })?;
        let defines = build.defines(kernel, types, opts)?;
        let entry = build.entry_point(kernel).ok_or_else(|| {
            Error::Invalid(format!("kernel `{}` has no {build:?} build", kernel.name))
        })?;
        let options = compile::kernel_options(kernel, opts)?;
        self.load(src.file, &src.full_text(), &defines, &options, &entry)
    }

    /// Compiles (or finds in the caches) and loads `entry` of source `text` with `defines` and
    /// the `extra` NVRTC options.
    fn load(
        &self,
        name: &str,
        text: &str,
        defines: &[(String, String)],
        extra: &[String],
        entry: &str,
    ) -> Result<Arc<Loaded>> {
        let key = format!("{name}|{entry}|{defines:?}|{extra:?}");
        let mut loaded = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = loaded.get(&key) {
            return Ok(l.clone());
        }
        let cache = DiskCache::from_env();
        let arch = self.info.arch.as_str();
        let mut compiled = compile_source_with_options(name, text, defines, extra, arch, &cache)?;
        let module = match self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.clone()))
        {
            Ok(m) => m,
            Err(_) if compiled.from_disk_cache => {
                // A cached CUBIN the driver refuses: drop it and compile afresh.
                cache.evict(name, arch, compiled.key);
                let uncached = DiskCache::disabled();
                compiled =
                    compile_source_with_options(name, text, defines, extra, arch, &uncached)?;
                self.ctx
                    .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.cubin.clone()))
                    .ctx(|| format!("loading the CUBIN of {name}"))?
            }
            Err(e) => return Err(e).ctx(|| format!("loading the CUBIN of {name}")),
        };
        let func = module
            .load_function(entry)
            .ctx(|| format!("finding `{entry}` in {name}"))?;
        let l = Arc::new(Loaded {
            entry: entry.to_string(),
            module,
            func,
            info: compiled.function(entry).cloned(),
            max_dynamic_shared: Mutex::new(self.info.shared_per_block),
        });
        loaded.insert(key, l.clone());
        Ok(l)
    }

    /// Grid, block and dynamic shared memory for `src` on `problem` (see `registry::Geometry`).
    fn launch_config(
        &self,
        kernel: &KernelSpec,
        src: &CudaSource,
        problem: &Problem,
        opts: &RunOptions,
    ) -> Result<LaunchConfig> {
        let unsupported = |rule: String| -> Error {
            Unsupported {
                kernel: kernel.name.to_string(),
                problem: problem.to_string(),
                rule,
            }
            .into()
        };
        let blocks = |n: usize, per: u32| -> Result<u32> {
            u32::try_from(n.div_ceil(per as usize)).map_err(|_| {
                unsupported(format!(
                    "the grid would need {} blocks",
                    n.div_ceil(per as usize)
                ))
            })
        };
        let (m, n) = (problem.m, problem.n);
        let square = |t: u32| -> Result<u32> {
            let threads = t as u64 * t as u64;
            if t == 0 || threads > self.info.max_threads_per_block as u64 {
                return Err(unsupported(format!(
                    "TILE {t} needs {threads} threads per block; the device allows 1 to {}",
                    self.info.max_threads_per_block
                )));
            }
            Ok(t)
        };
        let (grid_dim, block_dim) = match src.geometry {
            Geometry::RowPerThread { threads } => ((blocks(m, threads)?, 1, 1), (threads, 1, 1)),
            Geometry::ElementPerThread { threads } => {
                ((blocks(m * n, threads)?, 1, 1), (threads, 1, 1))
            }
            Geometry::RowSegment { threads } => {
                ((blocks(n, threads)?, blocks(m, 1)?, 1), (threads, 1, 1))
            }
            Geometry::Tile2d { tile: t } => {
                let t = square(opts.tile.unwrap_or(t))?;
                ((blocks(n, t)?, blocks(m, t)?, 1), (t, t, 1))
            }
            Geometry::SingleBlock { tpb } => {
                let t = square(opts.tile.unwrap_or(tpb))?;
                ((1, 1, 1), (t, t, 1))
            }
            Geometry::BlockTile { tiling } => {
                let t = opts.tiling.unwrap_or(tiling);
                kernel.check_tiling(&t).map_err(unsupported)?;
                ((blocks(n, t.bn)?, blocks(m, t.bm)?, 1), (t.threads(), 1, 1))
            }
            Geometry::Mma { tile: t } => {
                ((blocks(n, t.bn)?, blocks(m, t.bm)?, 1), (t.threads, 1, 1))
            }
            Geometry::Wgmma { tile: t } | Geometry::WgmmaTf32 { tile: t } => {
                // Persistent: one block per SM (or per tile when there are fewer tiles), in
                // whole clusters of `t.cluster` blocks that take vertically adjacent tiles of D.
                // D is C, or C^T when both kernels swap the operands (op(A) = op(B) = N:
                // tma::swaps_operands); then the tiles run BM along N and BN along M. (tf32's
                // op(A) = T with op(B) = N has no orientation; can_run refuses it before this.)
                let c = t.cluster.max(1) as u64;
                let (rows, cols) =
                    WgmmaTf32Orientation::of(problem).map_or((m, n), |o| o.d_shape(problem));
                let units = (blocks(rows, t.bm)? as u64).div_ceil(c) * blocks(cols, t.bn)? as u64;
                let clusters = units.min((self.info.sm_count as u64 / c).max(1));
                (
                    (u32::try_from(clusters * c).unwrap_or(u32::MAX), 1, 1),
                    (t.threads, 1, 1),
                )
            }
        };
        // Rounded up to 16 bytes: ptxas reads the K loop's remainder (up to 3 elements) with one
        // 16-byte LDS whatever the remainder is, so up to 12 bytes past K·elem are read (and
        // discarded). The device limit is a multiple of 16, so rounding never crosses it.
        let shared = if let Some((_, bytes)) = kernel.tile_shared_bytes(problem.dtype, opts) {
            bytes
        } else if kernel
            .constraints
            .contains(&crate::registry::Constraint::KFitsSharedMemory)
        {
            (problem.k * problem.dtype.input_bytes()).next_multiple_of(16)
        } else {
            0
        };
        Ok(LaunchConfig {
            grid_dim,
            block_dim,
            shared_mem_bytes: u32::try_from(shared)
                .map_err(|_| unsupported(format!("{shared} bytes of shared memory")))?,
        })
    }

    /// Lets `loaded` use `bytes` of dynamic shared memory (above 48 KiB this is an opt-in).
    fn allow_dynamic_shared(&self, loaded: &Loaded, bytes: usize) -> Result<()> {
        let mut allowed = loaded
            .max_dynamic_shared
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if bytes > *allowed {
            loaded
                .func
                .set_attribute(
                    FuncAttr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    bytes as i32,
                )
                .ctx(|| format!("allowing {bytes} bytes of dynamic shared memory"))?;
            *allowed = bytes;
        }
        Ok(())
    }

    fn launcher(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: &RunOptions,
    ) -> Result<Launcher> {
        match &kernel.implementation {
            Implementation::Cuda(src) => {
                let mut config = self.launch_config(kernel, src, problem, opts)?;
                let loaded = self.load_kernel(kernel, problem.types(), opts, Build::Main)?;
                self.allow_dynamic_shared(&loaded, config.shared_mem_bytes as usize)?;
                let tma = match src.geometry {
                    Geometry::Wgmma { tile } | Geometry::WgmmaTf32 { tile } => {
                        Some(tma::Boxes::Tc(tile))
                    }
                    Geometry::BlockTile { tiling } if src.tma_tiles => {
                        Some(tma::Boxes::Simt(opts.tiling.unwrap_or(tiling)))
                    }
                    _ => None,
                };
                if let Some(tma::Boxes::Tc(t)) = tma.filter(|b| b.cluster() > 1) {
                    // A persistent grid must be co-resident: not every SM can host half of a
                    // cluster (the GPCs' SM counts), so ask the driver how many clusters fit.
                    let fit = loaded
                        .func
                        .occupancy_max_active_clusters(config, &self.stream)
                        .ctx(|| format!("cuOccupancyMaxActiveClusters for {}", kernel.name))?;
                    if fit == 0 {
                        return Err(Unsupported {
                            kernel: kernel.name.to_string(),
                            problem: problem.to_string(),
                            rule: format!("the device cannot run one cluster of {} blocks with {} bytes of shared memory each", t.cluster, config.shared_mem_bytes),
                        }
                        .into());
                    }
                    config.grid_dim.0 = config.grid_dim.0.min(fit * t.cluster);
                }
                let split = match src.geometry {
                    Geometry::BlockTile { tiling } if src.split_tail => Some(self.split_launch(
                        kernel,
                        problem,
                        opts,
                        &loaded,
                        &config,
                        opts.tiling.unwrap_or(tiling),
                    )?),
                    _ => None,
                };
                Ok(Launcher::Kernel {
                    loaded,
                    config,
                    tma,
                    split,
                })
            }
            Implementation::Cublas => {
                let mut blas = self.blas.lock().unwrap_or_else(|p| p.into_inner());
                if blas.is_none() {
                    libs::cublas()?;
                    *blas = Some(
                        CudaBlas::new(self.stream.clone())
                            .ctx(|| "creating a cuBLAS handle".into())?,
                    );
                }
                Ok(Launcher::Cublas)
            }
            _ => Err(Error::WrongBackend {
                kernel: kernel.name.to_string(),
                backend: "cuda".into(),
            }),
        }
    }

    /// Where [`split_tail_plan`] splits the `tiles` tiles of `problem` for a split-tail kernel
    /// (loaded as `main`, launched with `config` at `tiling`). Its knobs are experiment defines
    /// (`MATMUL_KERNEL_DEFINES`; the registry sets none of them).
    fn tail_plan(
        &self,
        problem: &Problem,
        tiles: u64,
        main: &Loaded,
        config: &LaunchConfig,
        tiling: crate::registry::Tiling,
    ) -> Result<Option<TailPlan>> {
        let defines = compile::experiment_defines()?;
        let define = |name: &str, default: u64| -> Result<u64> {
            match defines.iter().rev().find(|(n, _)| n == name) {
                None => Ok(default),
                Some((_, v)) => v.parse().map_err(|_| {
                    Error::Invalid(format!("{name}={v}: the split tail needs a whole number"))
                }),
            }
        };
        // Without programmatic dependent launches (before compute capability 9.0) the tail could
        // only start after the last whole tile, which is what it is there to overlap.
        if define(SPLIT_TAIL_OFF.0, 1)? == 0 || self.info.compute_capability.0 < 9 {
            return Ok(None);
        }
        let wave = self.blocks_per_sm(main, config)? as u64 * self.info.sm_count as u64;
        let slices = problem.k.div_ceil(tiling.bk as usize) as u64;
        Ok(split_tail_plan(
            tiles,
            slices,
            wave,
            define("TAIL_EXTRA_EIGHTHS", TAIL_EXTRA_EIGHTHS)?,
            define("TAIL_PIECE_SLICES", TAIL_PIECE_SLICES)?,
        ))
    }

    /// How many blocks of `loaded` one SM holds at once, launched with `config`.
    fn blocks_per_sm(&self, loaded: &Loaded, config: &LaunchConfig) -> Result<u32> {
        let (threads, shared) = (config.block_dim.0, config.shared_mem_bytes as usize);
        loaded
            .func
            .occupancy_max_active_blocks_per_multiprocessor(threads, shared, None)
            .ctx(|| {
                format!(
                    "cuOccupancyMaxActiveBlocksPerMultiprocessor for {}",
                    loaded.entry
                )
            })
    }

    /// How split-tail `kernel` (loaded as `main`, launched with `config` at `tiling`) runs
    /// `problem`: whole tiles, and where [`split_tail_plan`] plans one, a tail in pieces behind them.
    fn split_launch(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: &RunOptions,
        main: &Loaded,
        config: &LaunchConfig,
        tiling: crate::registry::Tiling,
    ) -> Result<SplitLaunch> {
        let tiles = config.grid_dim.0 as u64 * config.grid_dim.1 as u64;
        // can_run bounds every matrix below 2^31 elements, and C has a tile per BM×BN of them.
        let whole = |tiles: u64| i32::try_from(tiles).expect("fewer tiles than elements of C");
        let unsplit = SplitLaunch {
            whole_tiles: whole(tiles),
            tail: None,
        };
        let Some(plan) = self.tail_plan(problem, tiles, main, config, tiling)? else {
            return Ok(unsplit);
        };
        let tail = self.load_kernel(kernel, problem.types(), opts, Build::Tail)?;
        self.allow_dynamic_shared(&tail, config.shared_mem_bytes as usize)?;
        if self.blocks_per_sm(&tail, config)? as u64 * (self.info.sm_count as u64) < plan.blocks {
            return Ok(unsplit); // the tail's blocks would not all run at once
        }
        let tail_tiles = (tiles - plan.first_tile) as usize;
        let slot = (tiling.bm * tiling.bn) as usize * problem.dtype.input_bytes();
        let workspace = self.tail_workspace(tail_tiles * slot, 2 + tail_tiles, problem)?;
        Ok(SplitLaunch {
            whole_tiles: whole(plan.first_tile),
            tail: Some(TailLaunch {
                loaded: tail,
                config: LaunchConfig {
                    grid_dim: (plan.blocks as u32, 1, 1),
                    ..*config
                },
                plan,
                workspace,
            }),
        })
    }

    /// The split tail's workspace with at least `bytes` of partial sums and `counters` counters:
    /// the backend's, or a larger one that replaces it.
    fn tail_workspace(
        &self,
        bytes: usize,
        counters: usize,
        problem: &Problem,
    ) -> Result<Arc<TailWorkspace>> {
        let mut cached = self
            .tail_workspace
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let (have_bytes, have_counters) = cached
            .as_ref()
            .map_or((0, 0), |w| (w.partials.len(), w.sync.len()));
        if let Some(w) = cached
            .as_ref()
            .filter(|_| bytes <= have_bytes && counters <= have_counters)
        {
            return Ok(w.clone());
        }
        let what = || format!("allocating the split tail's workspace for {problem}");
        let w = Arc::new(TailWorkspace {
            // SAFETY: a piece writes its slot before any block reads it (the counters order them).
            partials: unsafe { self.stream.alloc::<u8>(bytes.max(have_bytes)) }.ctx(what)?,
            sync: self
                .stream
                .alloc_zeros::<u32>(counters.max(have_counters))
                .ctx(what)?,
        });
        *cached = Some(w.clone());
        Ok(w)
    }

    /// How `kernel` runs `problem` with `opts`, if it splits the tail ([`CudaSource::split_tail`]
    /// and [`split_tail_plan`]); None where every tile is computed whole. It prepares what a launch
    /// does (both entries loaded, the workspace sized), so its answer is the launch's, occupancy
    /// check included.
    pub fn tail_split(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: RunOptions,
    ) -> Result<Option<TailPlan>> {
        if kernel.tail_entry_point().is_none() {
            return Ok(None);
        }
        Ok(match self.launcher(kernel, problem, &opts)? {
            Launcher::Kernel {
                split:
                    Some(SplitLaunch {
                        tail: Some(tail), ..
                    }),
                ..
            } => Some(tail.plan),
            _ => None,
        })
    }

    /// The operands of one launch: `a`, `b` and `c` as they are, plus tensor maps for a TMA
    /// kernel.
    fn operands(
        &self,
        launcher: &Launcher,
        problem: &Problem,
        a: &DeviceBuf,
        b: &DeviceBuf,
        c: &DeviceBuf,
    ) -> Result<Operands> {
        let s = &self.stream;
        let (a, b, c) = (a.ptr(s), b.ptr(s), c.ptr(s));
        let maps = match launcher {
            Launcher::Kernel {
                tma: Some(boxes), ..
            } => Some(match boxes {
                tma::Boxes::Tc(t) => tma::maps(problem, t, a, b, c)?,
                tma::Boxes::Simt(t) => tma::simt_maps(problem, t, a, b)?,
            }),
            _ => None,
        };
        Ok(Operands { a, b, c, maps })
    }

    /// Enqueues one product on the stream.
    fn launch(&self, launcher: &Launcher, problem: &Problem, ops: &Operands) -> Result<()> {
        let (a, b, c) = (ops.a, ops.b, ops.c);
        match launcher {
            Launcher::Kernel {
                loaded,
                config,
                split,
                ..
            } => {
                let int = |v: usize| v as i32; // can_run bounds every matrix below 2^31 elements
                let (sa, sb) = (problem.a_strides(), problem.b_strides());
                let args = [
                    int(problem.m),
                    int(problem.n),
                    int(problem.k),
                    int(sa.row),
                    int(sa.col),
                    int(sb.row),
                    int(sb.col),
                ];
                let whole_tiles = split.as_ref().map(|s| s.whole_tiles);
                self.launch_main(loaded, config, (a, b, c), &args, whole_tiles, ops)?;
                let Some(SplitLaunch {
                    whole_tiles,
                    tail: Some(tail),
                }) = split
                else {
                    return Ok(());
                };
                // The tail entry's ABI: the usual three pointers and seven ints, the first tail
                // tile, the pieces per tile, the workspace (a BM×BN slot per tail tile) and its
                // counters, zero as the last launch left them.
                let (first, pieces) = (*whole_tiles, tail.plan.pieces as i32);
                let (partials, sync) = (
                    tail.workspace.partials.device_ptr(&self.stream).0,
                    tail.workspace.sync.device_ptr(&self.stream).0,
                );
                let ptr_arg = |v: &u64| v as *const u64 as *mut std::ffi::c_void;
                let int_arg = |v: &i32| v as *const i32 as *mut std::ffi::c_void;
                let mut values: Vec<_> = [&a, &b, &c].map(ptr_arg).into();
                values.extend(args.iter().map(int_arg));
                values.extend([
                    int_arg(&first),
                    int_arg(&pieces),
                    ptr_arg(&partials),
                    ptr_arg(&sync),
                ]);
                let what = || format!("launching {} with {:?}", tail.loaded.entry, tail.config);
                // SAFETY: `values` points at live values of the entry's parameter types, in
                // order (the ABI above), and outlives the call, which copies them.
                unsafe { self.launch_dependent(&tail.loaded.func, &tail.config, &mut values) }
                    .ctx(what)
            }
            Launcher::Cublas => {
                let blas = self.blas.lock().unwrap_or_else(|p| p.into_inner());
                let blas = blas.as_ref().expect("created by launcher()");
                self.ctx
                    .bind_to_thread()
                    .ctx(|| "binding the context".into())?;
                cublas::gemm(blas, problem, a, b, c)
            }
        }
    }

    /// Launches a kernel's main entry: `ptrs` (A, B, C), the seven ints, for a split-tail kernel
    /// the tiles it computes whole, and for a TMA kernel the three tensor maps of `ops`.
    fn launch_main(
        &self,
        loaded: &Loaded,
        config: &LaunchConfig,
        ptrs: (u64, u64, u64),
        args: &[i32; 7],
        whole_tiles: Option<i32>,
        ops: &Operands,
    ) -> Result<()> {
        let (a, b, c) = ptrs;
        let mut builder = self.stream.launch_builder(&loaded.func);
        builder.arg(&a).arg(&b).arg(&c);
        for v in args {
            builder.arg(v);
        }
        if let Some(tiles) = &whole_tiles {
            builder.arg(tiles);
        }
        if let Some([map_a, map_b, map_c]) = &ops.maps {
            builder.arg(map_a).arg(map_b).arg(map_c);
        }
        // SAFETY: the argument list matches the kernel ABI (three pointers, seven ints,
        // for a split-tail kernel the tiles it computes, and for a TMA kernel three tensor
        // maps); the buffers are sized for `problem`, which the kernels index within (TMA
        // bounds its own reads).
        unsafe { builder.launch(*config) }
            .map(|_| ())
            .ctx(|| format!("launching {} with {config:?}", loaded.entry))
    }

    /// Launches `func` with `config` as a programmatic dependent of the kernel before it on the
    /// stream (`cuLaunchKernelEx` with programmatic stream serialization; compute capability 9.0
    /// and up): its blocks may start once every block of that kernel has executed
    /// `griddepcontrol.launch_dependents` or exited.
    ///
    /// # Safety
    /// `args` must point at live values of the kernel's parameter types, in order.
    unsafe fn launch_dependent(
        &self,
        func: &CudaFunction,
        config: &LaunchConfig,
        args: &mut [*mut std::ffi::c_void],
    ) -> std::result::Result<(), cudarc::driver::DriverError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: a plain C struct and union, all zeros valid; the fields set below.
        let mut attr: cu_sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attr.id =
            cu_sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        let cfg = cu_sys::CUlaunchConfig {
            gridDimX: config.grid_dim.0,
            gridDimY: config.grid_dim.1,
            gridDimZ: config.grid_dim.2,
            blockDimX: config.block_dim.0,
            blockDimY: config.block_dim.1,
            blockDimZ: config.block_dim.2,
            sharedMemBytes: config.shared_mem_bytes,
            hStream: self.stream.cu_stream(),
            attrs: &mut attr,
            numAttrs: 1,
        };
        // SAFETY: `cfg` and `attr` live through the call; the caller vouches for `args`.
        unsafe {
            cu_sys::cuLaunchKernelEx(
                &cfg,
                func.cu_function(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
    }

    /// Experiment hook: with `$MATMUL_PROBE=SYMBOL`, prints the module-scope `__device__` array
    /// SYMBOL of the kernel just timed, as u64 words, to stderr (a kernel compiled with a probe
    /// switch writes its timestamps there, left by the last launch).
    fn print_probe(&self, launcher: &Launcher) -> Result<()> {
        let (Ok(symbol), Launcher::Kernel { loaded, .. }) =
            (std::env::var("MATMUL_PROBE"), launcher)
        else {
            return Ok(());
        };
        let view = loaded
            .module
            .get_global(&symbol, &self.stream)
            .ctx(|| {
                format!(
                    "finding the probe array `{symbol}` (MATMUL_PROBE) in {}: was the kernel built with its probe switch (e.g. MATMUL_KERNEL_DEFINES=PROBE=1)?",
                    loaded.entry
                )
            })?;
        let bytes = self
            .stream
            .clone_dtoh(&view)
            .ctx(|| format!("reading the probe array `{symbol}`"))?;
        for (i, w) in bytes.chunks_exact(8).enumerate() {
            let v = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            eprintln!("probe {symbol} {i} {v}");
        }
        Ok(())
    }

    fn upload(&self, m: &AnyMatrix) -> Result<DeviceBuf> {
        let what = || {
            format!(
                "copying a {}x{} {} matrix to the device",
                m.rows(),
                m.cols(),
                m.dtype()
            )
        };
        Ok(match m {
            AnyMatrix::F32(x) => DeviceBuf::F32(self.stream.clone_htod(&x.data).ctx(what)?),
            AnyMatrix::U32(x) => DeviceBuf::U32(self.stream.clone_htod(&x.data).ctx(what)?),
            AnyMatrix::F16(x) => DeviceBuf::F16(self.stream.clone_htod(&x.data).ctx(what)?),
            AnyMatrix::Bf16(x) => DeviceBuf::Bf16(self.stream.clone_htod(&x.data).ctx(what)?),
        })
    }

    /// An uninitialized m×n output of C's type (u32, f32, or bf16/f16 when the problem asks for
    /// C in the input dtype).
    fn alloc_output(&self, problem: &Problem) -> Result<DeviceBuf> {
        let len = problem.m * problem.n;
        let what = || format!("allocating C for {problem}");
        // SAFETY: the buffer is filled (poison or zeros) before anything reads it.
        Ok(unsafe {
            match problem.c_dtype() {
                DType::U32 => DeviceBuf::U32(self.stream.alloc::<u32>(len).ctx(what)?),
                DType::Bf16 => DeviceBuf::Bf16(self.stream.alloc::<bf16>(len).ctx(what)?),
                DType::F16 => DeviceBuf::F16(self.stream.alloc::<f16>(len).ctx(what)?),
                DType::F32 | DType::Tf32 => {
                    DeviceBuf::F32(self.stream.alloc::<f32>(len).ctx(what)?)
                }
            }
        })
    }

    /// Fills C with zeros (for kernels that accumulate into it) or the poison pattern of its
    /// type (NaN, or 0xDEADBEEF for u32).
    fn fill_output(&self, c: &mut DeviceBuf, zero: bool) -> Result<()> {
        let stream = self.stream.cu_stream();
        // (address, elements, bytes per element, the poison pattern's bits)
        let (ptr, len, width, poison) = match c {
            DeviceBuf::F32(s) => (
                s.device_ptr(&self.stream).0,
                s.len(),
                4,
                POISON_F32.to_bits(),
            ),
            DeviceBuf::U32(s) => (s.device_ptr(&self.stream).0, s.len(), 4, POISON_U32),
            DeviceBuf::Bf16(s) => {
                let bits = POISON_BF16.to_bits() as u32;
                (s.device_ptr(&self.stream).0, s.len(), 2, bits)
            }
            DeviceBuf::F16(s) => {
                let bits = POISON_F16.to_bits() as u32;
                (s.device_ptr(&self.stream).0, s.len(), 2, bits)
            }
        };
        let value = if zero { 0 } else { poison };
        self.ctx
            .bind_to_thread()
            .ctx(|| "binding the context".into())?;
        // SAFETY: `ptr` is a live allocation of `len` elements of `width` bytes; a 2-byte
        // pattern fits its u16.
        let done = if width == 2 {
            unsafe { cu_sys::cuMemsetD16Async(ptr, value as u16, len, stream) }
        } else {
            unsafe { cu_sys::cuMemsetD32Async(ptr, value, len, stream) }
        };
        done.result()
            .ctx(|| format!("cuMemsetD{}Async on C", width * 8))
    }

    fn download(&self, c: &DeviceBuf, problem: &Problem) -> Result<AnyMatrix> {
        let what = || format!("copying C of {problem} to the host");
        let (m, n) = (problem.m, problem.n);
        let out = match c {
            DeviceBuf::F32(s) => AnyMatrix::F32(Matrix::from_vec(
                m,
                n,
                self.stream.clone_dtoh(s).ctx(what)?,
            )?),
            DeviceBuf::U32(s) => AnyMatrix::U32(Matrix::from_vec(
                m,
                n,
                self.stream.clone_dtoh(s).ctx(what)?,
            )?),
            DeviceBuf::Bf16(s) => AnyMatrix::Bf16(Matrix::from_vec(
                m,
                n,
                self.stream.clone_dtoh(s).ctx(what)?,
            )?),
            DeviceBuf::F16(s) => AnyMatrix::F16(Matrix::from_vec(
                m,
                n,
                self.stream.clone_dtoh(s).ctx(what)?,
            )?),
        };
        self.sync(|| format!("after copying C of {problem}"))?;
        Ok(out)
    }

    /// Waits for the stream and surfaces any error a kernel or a deferred release left behind.
    fn sync(&self, what: impl Fn() -> String) -> Result<()> {
        self.stream.synchronize().ctx(&what)?;
        self.ctx.check_err().ctx(what)
    }

    fn check_tile(&self, kernel: &KernelSpec, problem: &Problem, opts: RunOptions) -> Result<()> {
        // Checked here, before `can_run` divides by it.
        if opts.tile == Some(0) {
            return Err(Unsupported {
                kernel: kernel.name.to_string(),
                problem: problem.to_string(),
                rule: "TILE must be at least 1".into(),
            }
            .into());
        }
        Ok(())
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn describe(&self) -> String {
        self.info.summary()
    }

    fn limits(&self) -> Option<DeviceLimits> {
        Some(DeviceLimits {
            max_shared_per_block: self.info.shared_per_block_optin,
            sm90a: self.info.arch == "sm_90a",
        })
    }

    fn run(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
        opts: RunOptions,
    ) -> Result<AnyMatrix> {
        self.check_tile(kernel, problem, opts)?;
        self.check(kernel, problem, opts)?;
        check_inputs(problem, a, b)?;
        let launcher = self.launcher(kernel, problem, &opts)?;
        let (da, db) = (self.upload(a)?, self.upload(b)?);
        let mut c = self.alloc_output(problem)?;
        let zero = kernel.cuda_source().is_some_and(|s| s.zero_output);
        self.fill_output(&mut c, zero)?;
        let ops = self.operands(&launcher, problem, &da, &db, &c)?;
        self.launch(&launcher, problem, &ops)?;
        self.sync(|| format!("running {} on {problem}", kernel.name))?;
        self.download(&c, problem)
    }

    fn time(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        inputs: &[Inputs],
        warmup: usize,
        iters: usize,
        opts: RunOptions,
    ) -> Result<Vec<f64>> {
        self.check_tile(kernel, problem, opts)?;
        self.check(kernel, problem, opts)?;
        if inputs.is_empty() {
            return Err(Error::Invalid("timing needs at least one input set".into()));
        }
        for set in inputs {
            check_inputs(problem, &set.a, &set.b)?;
        }
        let launcher = self.launcher(kernel, problem, &opts)?;
        let bufs = inputs
            .iter()
            .map(|set| Ok((self.upload(&set.a)?, self.upload(&set.b)?)))
            .collect::<Result<Vec<_>>>()?;
        let mut c = self.alloc_output(problem)?;
        let sets = bufs
            .iter()
            .map(|(a, b)| self.operands(&launcher, problem, a, b, &c))
            .collect::<Result<Vec<_>>>()?;
        let zero = kernel.cuda_source().is_some_and(|s| s.zero_output);
        self.fill_output(&mut c, zero)?;
        let s = &self.stream;
        let event = || -> Result<CudaEvent> {
            self.ctx
                .new_event(Some(cu_sys::CUevent_flags::CU_EVENT_DEFAULT))
                .ctx(|| "creating a timing event".into())
        };
        let events = (0..iters)
            .map(|_| Ok((event()?, event()?)))
            .collect::<Result<Vec<_>>>()?;
        for i in 0..warmup {
            if zero {
                // Accumulating kernels start from zero each time (outside the timed region).
                self.fill_output(&mut c, true)?;
            }
            self.launch(&launcher, problem, &sets[i % sets.len()])?;
        }
        for (i, (start, end)) in events.iter().enumerate() {
            if zero {
                self.fill_output(&mut c, true)?;
            }
            start.record(s).ctx(|| "recording a timing event".into())?;
            self.launch(&launcher, problem, &sets[i % sets.len()])?;
            end.record(s).ctx(|| "recording a timing event".into())?;
        }
        self.sync(|| format!("timing {} on {problem}", kernel.name))?;
        self.print_probe(&launcher)?;
        events
            .iter()
            .map(|(start, end)| {
                start
                    .elapsed_ms(end)
                    .map(|ms| ms as f64 / 1e3)
                    .ctx(|| "reading a timing event".into())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{split_tail_plan, TAIL_EXTRA_EIGHTHS, TAIL_PIECE_SLICES};

    #[test]
    fn split_tail_plans() {
        // The ★ tiling (128×256, BK 16) on 132 SMs at one block each, the default tail.
        let plan = |m: u64, n: u64, k: u64| {
            split_tail_plan(
                m.div_ceil(128) * n.div_ceil(256),
                k.div_ceil(16),
                132,
                TAIL_EXTRA_EIGHTHS,
                TAIL_PIECE_SLICES,
            )
            .map(|p| (p.first_tile, p.blocks, p.pieces))
        };
        // The last partial wave plus half a wave, in pieces of 64 slices: 8192² is 2048 tiles,
        // 15·132 + 68; 16384² 8192 = 62·132 + 8; 10240² 3200 = 24·132 + 32.
        assert_eq!(plan(8192, 8192, 8192), Some((2048 - 68 - 66, 132, 8)));
        assert_eq!(plan(16384, 16384, 16384), Some((8192 - 8 - 66, 132, 16)));
        assert_eq!(plan(10240, 10240, 10240), Some((3200 - 32 - 66, 132, 10)));
        // Whole waves still end unevenly: half a wave in pieces (4224×4096: 528 = 4·132).
        assert_eq!(plan(4224, 4096, 4096), Some((528 - 66, 132, 4)));
        assert_eq!(plan(8192, 8192, 2048), Some((2048 - 68 - 66, 132, 2)));
        // A last wave over 3/4 full stays whole: 4096² (116 of 132), 12288² (120).
        assert_eq!(plan(4096, 4096, 4096), None);
        assert_eq!(plan(12288, 12288, 4096), None);
        // Fewer than two waves (2048²: 128 tiles), or tiles under TAIL_MIN_SLICES (1000³, K = 1024).
        assert_eq!(plan(2048, 2048, 2048), None);
        assert_eq!(plan(1000, 1000, 1000), None);
        assert_eq!(plan(8192, 8192, 1024), None);
        // No wave (a device that cannot run the kernel): no split, and no division by zero.
        assert_eq!(split_tail_plan(10, 1000, 0, 4, 128), None);
        // A tail as large as the problem is the whole problem.
        assert_eq!(
            split_tail_plan(300, 1000, 132, 64, 128).map(|p| p.first_tile),
            Some(0)
        );
        // A knob too large for u64 arithmetic is all of C, not an overflow.
        assert_eq!(
            split_tail_plan(300, 1000, 132, u64::MAX, 128).map(|p| p.first_tile),
            Some(0)
        );
        // Pieces of at least one slice, and at least one piece a tile.
        assert_eq!(
            split_tail_plan(300, 1000, 132, 4, 0).map(|p| p.pieces),
            Some(1000)
        );
        assert_eq!(
            split_tail_plan(300, 130, 132, 4, 1000).map(|p| p.pieces),
            Some(1)
        );
    }
}
