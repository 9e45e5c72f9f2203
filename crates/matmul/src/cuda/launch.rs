//! One launch: the kernel's grid, block and dynamic shared memory, its loaded function, its
//! operands (with tensor maps for a TMA kernel) and the launch itself, cuBLAS included.

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::{self as cu_sys, CUfunction_attribute_enum as FuncAttr};
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};

use super::buffers::DeviceBuf;
use super::compile::Build;
use super::libs::{self, Context};
use super::split_tail::SplitLaunch;
use super::{cublas, tma, CudaBackend, Loaded};
use crate::backend::RunOptions;
use crate::error::{Error, Result, Unsupported};
use crate::problem::Problem;
use crate::registry::{CudaSource, Geometry, Implementation, KernelSpec, WgmmaTf32Orientation};

/// What one launch runs: a compiled kernel with its launch configuration, or cuBLAS.
pub(super) enum Launcher {
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

/// The device addresses of one launch's operands and output and, for a TMA kernel, their tensor
/// maps (encoded on the host before any timed region).
pub(super) struct Operands {
    pub(super) a: u64,
    pub(super) b: u64,
    pub(super) c: u64,
    pub(super) maps: Option<[tma::TensorMap; 3]>,
}

impl CudaBackend {
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

    /// The operands of one launch: `a`, `b` and `c` as they are, plus tensor maps for a TMA
    /// kernel.
    pub(super) fn operands(
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
