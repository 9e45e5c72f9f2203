//! One launch: the kernel's grid, block and dynamic shared memory, its loaded function, its
//! operands (with tensor maps for a TMA kernel) and the launch itself, cuBLAS included.

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::{self as cu_sys, CUfunction_attribute_enum as FuncAttr};
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};

use super::buffers::DeviceBuf;
use super::compile::Build;
use super::experiment::TailKnobs;
use super::libs::{self, Context};
use super::split_tail::SplitLaunch;
use super::staging::{tma_reads_rows, Pitched, Staged};
use super::{cublas, tma, CudaBackend, DeviceInfo, Loaded};
use crate::backend::RunOptions;
use crate::error::{Error, Result, Unsupported};
use crate::family::wgmma::Wgmma;
use crate::family::Boxes;
use crate::problem::{Op, Problem};
use crate::registry::{Implementation, KernelSpec};

/// What one launch runs: a compiled kernel with its launch configuration, or cuBLAS.
pub(super) enum Launcher {
    Kernel {
        loaded: Arc<Loaded>,
        config: LaunchConfig,
        /// The boxes of the TMA tensor maps that follow the usual arguments (TMA kernels only).
        tma: Option<Boxes>,
        /// A split-tail kernel's extra argument and tail launch (split-tail kernels only).
        split: Option<SplitLaunch>,
        /// A split-K kernel's pieces, workspace and reduction (split-K kernels only).
        split_k: Option<Box<SplitK>>,
    },
    Cublas,
}

/// How a split-K wgmma kernel runs a product: `splits` k pieces per tile (1: whole tiles, no
/// workspace), their f32 partials in `workspace` (`splits` slabs of M×N), summed into C by
/// `reduce` (15_wgmma.cu's `wgmma_reduce`, from the kernel's module) right behind the kernel.
pub(super) struct SplitK {
    splits: u64,
    workspace: Option<(CudaSlice<f32>, CudaFunction)>,
}

/// Threads per block of `wgmma_reduce`.
const REDUCE_THREADS: u32 = 256;

/// The device addresses of one launch's operands and output and, for a TMA kernel, their tensor
/// maps (encoded on the host before any timed region) and the copies of operands whose rows TMA
/// cannot read as stored (enqueued with every launch, [`super::staging`]).
pub(super) struct Operands {
    pub(super) a: u64,
    pub(super) b: u64,
    pub(super) c: u64,
    pub(super) maps: Option<[tma::TensorMap; 3]>,
    pub(super) staged: Vec<Staged>,
    /// The kernel's stride arguments (A's row and column, B's row and column): the problem's, or
    /// for a staged operand its workspace's pitch, from which the TMA kernels tell the stored
    /// layouts apart (a stored row of one element is always staged, so a pitch is never 1).
    pub(super) strides: [usize; 4],
}

/// Grid, block and dynamic shared memory for `kernel` on `problem` on `device`: the grid and
/// block of its family ([`Family::launch_dims`](crate::family::Family::launch_dims)), and the
/// shared memory of its tile or of a packed row of K.
pub(super) fn launch_config(
    kernel: &KernelSpec,
    problem: &Problem,
    opts: &RunOptions,
    device: &DeviceInfo,
) -> Result<LaunchConfig> {
    let unsupported = |rule: String| -> Error {
        Unsupported {
            kernel: kernel.name.to_string(),
            problem: problem.to_string(),
            rule,
        }
        .into()
    };
    let family = kernel
        .family()
        .ok_or_else(|| Error::Invalid(format!("kernel `{}` has no CUDA source", kernel.name)))?;
    let (grid_dim, block_dim) = family
        .launch_dims(kernel, problem, opts, device)
        .map_err(unsupported)?;
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

impl CudaBackend {
    /// Lets `loaded` use `bytes` of dynamic shared memory (above 48 KiB this is an opt-in).
    pub(super) fn allow_dynamic_shared(&self, loaded: &Loaded, bytes: usize) -> Result<()> {
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

    pub(super) fn launcher(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: &RunOptions,
    ) -> Result<Launcher> {
        match &kernel.implementation {
            Implementation::Cuda(src) => {
                let mut config = launch_config(kernel, problem, opts, &self.info)?;
                let loaded = self.load_kernel(kernel, problem.types(), opts, Build::Main)?;
                self.allow_dynamic_shared(&loaded, config.shared_mem_bytes as usize)?;
                let extra = src.family().extra_args(kernel, opts);
                let tma = extra.tensor_maps;
                if let Some(Boxes::Tc(t)) = tma.filter(|b| b.cluster() > 1) {
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
                let split = match extra.split_tail {
                    Some(tiling) => {
                        Some(self.split_launch(kernel, problem, opts, &loaded, &config, tiling)?)
                    }
                    None => None,
                };
                let split_k = if extra.split_k {
                    Some(Box::new(self.split_k(
                        kernel,
                        problem,
                        &loaded,
                        &mut config,
                    )?))
                } else {
                    None
                };
                Ok(Launcher::Kernel {
                    loaded,
                    config,
                    tma,
                    split,
                    split_k,
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

    /// The operands of one launch: `a`, `b` and `c` as they are, plus tensor maps for a TMA
    /// kernel, over a padded copy of A or B where TMA cannot read its stored rows.
    pub(super) fn operands(
        &self,
        launcher: &Launcher,
        problem: &Problem,
        a: &DeviceBuf,
        b: &DeviceBuf,
        c: &DeviceBuf,
    ) -> Result<Operands> {
        let s = &self.stream;
        self.operands_at(launcher, problem, a.ptr(s), b.ptr(s), c.ptr(s))
    }

    /// [`CudaBackend::operands`] for device addresses: `a`, `b` and `c` must be allocations of
    /// this device (each at an allocation's start, as TMA wants 16-byte aligned bases) holding A
    /// and B stored as `problem` says and room for its C.
    pub(super) fn operands_at(
        &self,
        launcher: &Launcher,
        problem: &Problem,
        a: u64,
        b: u64,
        c: u64,
    ) -> Result<Operands> {
        let s = &self.stream;
        let (sa, sb) = (problem.a_strides(), problem.b_strides());
        let Launcher::Kernel {
            tma: Some(boxes),
            split,
            ..
        } = launcher
        else {
            return Ok(Operands {
                a,
                b,
                c,
                maps: None,
                staged: Vec::new(),
                strides: [sa.row, sa.col, sb.row, sb.col],
            });
        };
        let elem = problem.dtype.input_bytes();
        let mut staged = Vec::new();
        let mut pitched = |ptr: u64, (rows, cols): (usize, usize)| -> Result<Pitched> {
            if tma_reads_rows(cols, elem) {
                return Ok(Pitched { ptr, pitch: cols });
            }
            let copy = Staged::new(s, ptr, (rows, cols), elem)?;
            let at = copy.pitched(s);
            staged.push(copy);
            Ok(at)
        };
        let (pa, pb) = (
            pitched(a, problem.a_stored())?,
            pitched(b, problem.b_stored())?,
        );
        if !staged.is_empty() && split.is_some() {
            // A split tail reads A and B by pointer and stride: it would miss the staging.
            return Err(Error::Invalid(format!(
                "a split-tail TMA kernel cannot read staged operands ({problem})"
            )));
        }
        let maps = Some(match boxes {
            Boxes::Tc(t) => tma::maps(problem, t, pa, pb, c)?,
            Boxes::Simt(t) => tma::simt_maps(problem, t, pa, pb)?,
        });
        // Element (i, l) of op(A) is at a[i·row + l·col]; a staged operand's stored rows are
        // `pitch` apart (op N: rows of A are M's; op T: rows of A are K's).
        let strides = |op: Op, p: Pitched| match op {
            Op::N => (p.pitch, 1),
            Op::T => (1, p.pitch),
        };
        let ((ar, ac), (br, bc)) = (strides(problem.op_a, pa), strides(problem.op_b, pb));
        // B's op T reads op(B)[l][j] = b[j·pitch + l]: (row 1, col pitch), as for A.
        Ok(Operands {
            a,
            b,
            c,
            maps,
            staged,
            strides: [ar, ac, br, bc],
        })
    }

    /// Enqueues one product on the stream.
    pub(super) fn launch(
        &self,
        launcher: &Launcher,
        problem: &Problem,
        ops: &Operands,
    ) -> Result<()> {
        let (a, b, c) = (ops.a, ops.b, ops.c);
        match launcher {
            Launcher::Kernel {
                loaded,
                config,
                split,
                split_k,
                ..
            } => {
                let int = |v: usize| v as i32; // can_run bounds every matrix below 2^31 elements
                let [ar, ac, br, bc] = ops.strides;
                let args = [
                    int(problem.m),
                    int(problem.n),
                    int(problem.k),
                    int(ar),
                    int(ac),
                    int(br),
                    int(bc),
                ];
                for copy in &ops.staged {
                    copy.enqueue(&self.stream)?;
                }
                let whole_tiles = split.as_ref().map(|s| s.whole_tiles);
                let pieces = split_k.as_ref().map(|s| {
                    let partial = s
                        .workspace
                        .as_ref()
                        .map_or(0, |(w, _)| w.device_ptr(&self.stream).0);
                    (s.splits as i32, partial)
                });
                self.launch_main(loaded, config, (a, b, c), &args, whole_tiles, pieces, ops)?;
                if let Some(SplitK {
                    splits,
                    workspace: Some((partial, reduce)),
                }) = split_k.as_deref()
                {
                    return self.launch_reduce(reduce, partial, c, problem, *splits);
                }
                let Some(SplitLaunch {
                    whole_tiles,
                    tail: Some(tail),
                }) = split
                else {
                    return Ok(());
                };
                self.launch_tail(tail, *whole_tiles, (a, b, c), &args)
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
    /// the tiles it computes whole, for a TMA kernel the three tensor maps of `ops`, and for a
    /// split-K kernel its pieces and workspace.
    #[allow(clippy::too_many_arguments)]
    fn launch_main(
        &self,
        loaded: &Loaded,
        config: &LaunchConfig,
        ptrs: (u64, u64, u64),
        args: &[i32; 7],
        whole_tiles: Option<i32>,
        pieces: Option<(i32, u64)>,
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
        if let Some((splits, partial)) = &pieces {
            builder.arg(splits).arg(partial);
        }
        // SAFETY: the argument list matches the kernel ABI (three pointers, seven ints,
        // for a split-tail kernel the tiles it computes, for a TMA kernel three tensor maps,
        // for a split-K kernel its pieces and a workspace of that many M×N f32 slabs); the
        // buffers are sized for `problem`, which the kernels index within (TMA bounds its own
        // reads).
        unsafe { builder.launch(*config) }
            .map(|_| ())
            .ctx(|| format!("launching {} with {config:?}", loaded.entry))
    }

    /// The split-K plan of a split-K kernel ([`Wgmma::splits`]; off under the split tail's
    /// `SPLIT_TAIL=0` knob, for A/B runs), its workspace and reduction, with the grid of
    /// `config` widened to the (tile, piece) units.
    fn split_k(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        loaded: &Loaded,
        config: &mut LaunchConfig,
    ) -> Result<SplitK> {
        let sms = self.info.sm_count as u64;
        let planned = Wgmma::splits(kernel, problem, sms);
        let splits = if TailKnobs::read()?.enabled()? {
            planned
        } else {
            1
        };
        if splits == 1 {
            if planned > 1 {
                // launch_dims planned the pieces (clusters never split): one block per tile.
                config.grid_dim.0 = Wgmma::grid(Wgmma::tiles(kernel, problem), 1, sms);
            }
            return Ok(SplitK {
                splits,
                workspace: None,
            });
        }
        let len = splits as usize * problem.m * problem.n;
        // SAFETY: every slab element within M×N is written by its piece before the reduction
        // reads it (each piece stores its whole tile, bounds-checked).
        let partial = unsafe { self.stream.alloc::<f32>(len) }
            .ctx(|| format!("allocating {splits} split-K slabs for {problem}"))?;
        let reduce = loaded
            .module
            .load_function("wgmma_reduce")
            .ctx(|| format!("finding `wgmma_reduce` for {}", kernel.name))?;
        Ok(SplitK {
            splits,
            workspace: Some((partial, reduce)),
        })
    }

    /// Launches split-K's reduction: C = the sum of the `splits` slabs of `partial`.
    fn launch_reduce(
        &self,
        reduce: &CudaFunction,
        partial: &CudaSlice<f32>,
        c: u64,
        problem: &Problem,
        splits: u64,
    ) -> Result<()> {
        let count = (problem.m * problem.n) as i32; // can_run bounds C below 2^31 elements
        let blocks = (count as u32)
            .div_ceil(REDUCE_THREADS)
            .min(self.info.sm_count * 16);
        let config = LaunchConfig {
            grid_dim: (blocks.max(1), 1, 1),
            block_dim: (REDUCE_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let splits = splits as i32;
        let mut builder = self.stream.launch_builder(reduce);
        builder.arg(partial).arg(&c).arg(&count).arg(&splits);
        // SAFETY: wgmma_reduce(const float*, OUT*, int, int): `partial` holds `splits` slabs of
        // `count` floats, C `count` elements of the kernel's output type.
        unsafe { builder.launch(config) }
            .map(|_| ())
            .ctx(|| format!("launching wgmma_reduce over {splits} slabs"))
    }

    /// Launches `func` with `config` as a programmatic dependent of the kernel before it on the
    /// stream (`cuLaunchKernelEx` with programmatic stream serialization; compute capability 9.0
    /// and up): its blocks may start once every block of that kernel has executed
    /// `griddepcontrol.launch_dependents` or exited.
    ///
    /// # Safety
    /// `args` must point at live values of the kernel's parameter types, in order.
    pub(super) unsafe fn launch_dependent(
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
}

#[cfg(test)]
mod tests {
    use super::launch_config;
    use crate::family::tests::h100;
    use crate::registry::find;
    use crate::{DType, Problem, RunOptions};

    /// The shared memory of a launch: the tile's, a packed row of K rounded up to 16 bytes, or
    /// none; grid and block are the family's.
    #[test]
    fn launch_configs_carry_the_tiles_shared_memory() {
        let config = |name: &str, p: Problem| {
            let c =
                launch_config(find(name).unwrap(), &p, &RunOptions::default(), &h100()).unwrap();
            (c.grid_dim, c.block_dim, c.shared_mem_bytes)
        };
        let f32 = |m, n, k| Problem::new(m, n, k, DType::F32);
        assert_eq!(
            config("tiled", f32(17, 33, 65)),
            ((3, 2, 1), (16, 16, 1), 0)
        );
        // 1001 floats of B's column: 4004 bytes, read in 16-byte loads.
        assert_eq!(
            config("rowpack", f32(70, 5, 1001)),
            ((2, 1, 1), (64, 1, 1), 4016)
        );
        // 4 stages of (128 + 128) × 32 bf16.
        let mma = config("mma-sync", Problem::new(300, 260, 36, DType::Bf16));
        assert_eq!(mma, ((3, 3, 1), (256, 1, 1), 4 * 256 * 32 * 2));
        // 4 stages of (128 + 256) × 64 bf16, 1 KiB of alignment, 2 staged C boxes per consumer.
        let wgmma = config("wgmma", Problem::new(8192, 8192, 8192, DType::Bf16));
        let shared = 4 * 384 * 64 * 2 + 1024 + 2 * 128 * 128;
        assert_eq!(wgmma, ((132, 1, 1), (384, 1, 1), shared));
        // 4 stages of 20 × (128 + 256) floats, 4 mbarriers and 128 bytes of alignment slack.
        let tma = config("simt-tma", f32(300, 260, 36));
        assert_eq!(
            tma,
            ((2, 3, 1), (256, 1, 1), 4 * 20 * 384 * 4 + 8 * 4 + 128)
        );
    }
}
