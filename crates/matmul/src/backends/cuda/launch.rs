//! One launch: the kernel's grid, block and dynamic shared memory, its loaded function, its
//! operands (with tensor maps for a TMA kernel) and the launch itself, cuBLAS included.

use std::sync::Arc;

use cudarc::cublas::CudaBlas;
use cudarc::driver::sys::{self as cu_sys, CUfunction_attribute_enum as FuncAttr};
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, LaunchConfig, PushKernelArg};

use super::buffers::DeviceBuf;
use super::compile::Build;
use super::libs::{self, Context};
use super::split_tail::{split_k_pieces, SplitLaunch, SPLIT_K_EIGHTHS, SPLIT_K_MIN_SLICES};
use super::staging::{padded, Pitched, Staged};
use super::{cublas, tma, CudaBackend, DeviceInfo, Loaded};
use crate::backend::RunOptions;
use crate::error::{Error, Result, Unsupported};
use crate::family::{Boxes, Planes};
use crate::problem::{Op, Problem};
use crate::registry::{Implementation, KernelSpec};

/// What one launch runs: a compiled kernel with its launch configuration, or cuBLAS.
pub(crate) enum Launcher {
    Kernel {
        loaded: Arc<Loaded>,
        config: LaunchConfig,
        /// The boxes of the TMA tensor maps that follow the usual arguments (TMA kernels only).
        tma: Option<Boxes>,
        /// A split-tail kernel's extra argument and tail launch (split-tail kernels only).
        split: Option<SplitLaunch>,
        /// A split-K kernel's pieces, workspace and reduction (split-K kernels only).
        split_k: Option<Box<SplitK>>,
        /// Whether an operand whose stored rows are not 16-byte multiples is staged into padded
        /// rows (the split-tail SIMT kernels, 13_multistage.cu: their cp.async copies read
        /// 16-byte groups, and a row of any other length falls to 4-byte copies).
        stage_rows: bool,
        /// A pre-split kernel's planes, pre-pass and fixup (u8x4 and 3xTF32 kernels only).
        planes: Option<Box<PlaneWork>>,
    },
    Cublas,
}

/// How a split-K kernel runs a product: `splits` k pieces per tile (1: whole tiles, no
/// workspace), their partials in `workspace` (`splits` slabs of M×N, 4-byte f32 or u32 sums),
/// summed into C by `reduce` (epilogue.cuh's `wgmma_reduce`, or 13_multistage.cu's
/// `multistage_reduce`, from the kernel's module) right behind the kernel.
pub(crate) struct SplitK {
    splits: u64,
    workspace: Option<(CudaSlice<u8>, CudaFunction)>,
    /// The SIMT kernels' split-K: the pieces are the grid's z, and each writes its slab through
    /// the kernel's C (no extra arguments). Else (wgmma) the kernel takes the pieces and the
    /// workspace as two more arguments.
    through_c: bool,
}

/// Whether a SIMT kernel stages `problem`'s A (`a`) or B: the registry's rule
/// ([`crate::family::simt::stages_operand`]), shared with `auto`'s model.
pub(super) fn simt_stages(problem: &Problem, a: bool) -> bool {
    crate::family::simt::stages_operand(problem, a)
}

/// How a pre-split kernel ([`crate::family::u8x4`], [`crate::family::tf32x3`]) runs a product:
/// `split` (its [`Planes::split`], from the kernel's module) writes A and B^T as planes of `kp`
/// columns into `workspace` (A's [`Planes::count`] planes of m×kp, then B's of n×kp) before every
/// launch of the main entry, on the stream and so inside any timed region; where the kernel has
/// a fixup, its flags (after the planes) are zeroed before the pre-pass and `fixup` runs behind
/// the product.
pub(crate) struct PlaneWork {
    workspace: CudaSlice<u8>,
    split: CudaFunction,
    fixup: Option<CudaFunction>,
    layout: Planes,
    kp: usize,
    /// A pre-split TMA kernel's tensor maps over the planes (A's, B^T's), encoded once here:
    /// the workspace lives as long as the launcher.
    maps: Option<[tma::TensorMap; 2]>,
}

/// Threads per block of the pre-passes, and the rows and k of their tile.
const SPLIT_THREADS: u32 = 256;
const SPLIT_ROWS: usize = 32;
const SPLIT_K: usize = 64;

/// Threads per block of `wgmma_reduce`.
const REDUCE_THREADS: u32 = 256;

/// The device addresses of one launch's operands and output and, for a TMA kernel, their tensor
/// maps (encoded on the host before any timed region) and the copies of operands whose rows TMA
/// cannot read as stored (enqueued with every launch, [`super::staging`]).
pub(crate) struct Operands {
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

/// The stride arguments (A's row and column, B's row and column) for A and B stored at `pa`
/// and `pb`: element (i, l) of op(A) is at a[i·row + l·col], and an operand's stored rows are
/// `pitch` apart (op N: rows of A are M's; op T: rows of A are K's; B's op T reads
/// op(B)[l][j] = b[j·pitch + l], row 1 and column pitch, as for A).
fn stored_strides(problem: &Problem, pa: Pitched, pb: Pitched) -> [usize; 4] {
    let strides = |op: Op, p: Pitched| match op {
        Op::N => (p.pitch, 1),
        Op::T => (1, p.pitch),
    };
    let ((ar, ac), (br, bc)) = (strides(problem.op_a, pa), strides(problem.op_b, pb));
    [ar, ac, br, bc]
}

/// The seven `int`s every kernel takes after A, B and C: m, n, k and the row and column strides
/// of op(A) and op(B) (`strides`: A's row and column, B's row and column).
pub(super) fn int_args(problem: &Problem, strides: [usize; 4]) -> [i32; 7] {
    let int = |v: usize| v as i32; // can_run bounds every matrix below 2^31 elements
    let [ar, ac, br, bc] = strides;
    [
        int(problem.m),
        int(problem.n),
        int(problem.k),
        int(ar),
        int(ac),
        int(br),
        int(bc),
    ]
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
    let unsupported = |rule: String| Unsupported::error(kernel.name, problem, rule);
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

    pub(crate) fn launcher(
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
                let split_k = match extra.split_tail {
                    _ if extra.split_k => Some(Box::new(self.split_k(
                        kernel,
                        problem,
                        &loaded,
                        &mut config,
                    )?)),
                    Some(tiling) => {
                        self.simt_split_k(kernel, problem, &loaded, &mut config, tiling)?
                    }
                    None => None,
                };
                let split = match extra.split_tail {
                    // Split-K: every tile in pieces, none whole in the tail's sense.
                    Some(_) if split_k.is_some() => Some(SplitLaunch {
                        whole_tiles: i32::try_from(
                            config.grid_dim.0 as u64 * config.grid_dim.1 as u64,
                        )
                        .expect("fewer tiles than elements of C"),
                        tail: None,
                    }),
                    Some(tiling) => {
                        Some(self.split_launch(kernel, problem, opts, &loaded, &config, tiling)?)
                    }
                    None => None,
                };
                let planes = match extra.planes {
                    Some(layout) => {
                        let boxes = kernel
                            .tc_tile()
                            .filter(|_| extra.plane_maps)
                            .map(|t| (t.bm, t.bn));
                        Some(Box::new(
                            self.plane_work(kernel, problem, &loaded, layout, boxes)?,
                        ))
                    }
                    None => None,
                };
                Ok(Launcher::Kernel {
                    loaded,
                    config,
                    tma,
                    stage_rows: split.is_some(),
                    split,
                    split_k,
                    planes,
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
    pub(crate) fn operands_at(
        &self,
        launcher: &Launcher,
        problem: &Problem,
        a: u64,
        b: u64,
        c: u64,
    ) -> Result<Operands> {
        let s = &self.stream;
        let (sa, sb) = (problem.a_strides(), problem.b_strides());
        if let Launcher::Kernel {
            tma: None,
            stage_rows: true,
            loaded,
            ..
        } = launcher
        {
            return self.staged_simt_operands(problem, loaded, (a, b, c));
        }
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
        let (pa, pb) = (
            padded(s, a, problem.a_stored(), elem, &mut staged)?,
            padded(s, b, problem.b_stored(), elem, &mut staged)?,
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
        Ok(Operands {
            a,
            b,
            c,
            maps,
            staged,
            strides: stored_strides(problem, pa, pb),
        })
    }

    /// The operands of a SIMT kernel that reads 16-byte rows (13_multistage.cu): A and B as they
    /// are, or where [`simt_stages`] says so a copy ([`super::staging`]): a transposed operand
    /// transposed (so that the kernel runs its N·N loop), another padded. The kernel (and its split
    /// tail) then reads the copy, with its strides. The copy's padding is zero: the kernel's
    /// 16-byte groups read past a row's last element into it.
    fn staged_simt_operands(
        &self,
        problem: &Problem,
        loaded: &Loaded,
        (a, b, c): (u64, u64, u64),
    ) -> Result<Operands> {
        let s = &self.stream;
        let elem = problem.dtype.input_bytes();
        let mut staged = Vec::new();
        let mut stage = |ptr: u64, a_side: bool| -> Result<(Op, Pitched)> {
            let (op, (rows, cols)) = if a_side {
                (problem.op_a, problem.a_stored())
            } else {
                (problem.op_b, problem.b_stored())
            };
            if !simt_stages(problem, a_side) {
                return Ok((op, Pitched { ptr, pitch: cols }));
            }
            if op == Op::T {
                let f = loaded.module.load_function("multistage_transpose");
                let f = f.ctx(|| format!("finding `multistage_transpose` for {}", loaded.entry))?;
                if let Some(copy) = Staged::transposed(s, ptr, (rows, cols), elem, f)? {
                    let at = copy.pitched(s);
                    staged.push(copy);
                    return Ok((Op::N, at));
                }
            }
            Ok((op, padded(s, ptr, (rows, cols), elem, &mut staged)?))
        };
        let (op_a, pa) = stage(a, true)?;
        let (op_b, pb) = stage(b, false)?;
        Ok(Operands {
            a: pa.ptr,
            b: pb.ptr,
            c,
            maps: None,
            staged,
            strides: stored_strides(&problem.with_ops(op_a, op_b), pa, pb),
        })
    }

    /// Enqueues one product on the stream.
    pub(crate) fn launch(
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
                planes,
                ..
            } => {
                let args = int_args(problem, ops.strides);
                for copy in &ops.staged {
                    copy.enqueue(&self.stream)?;
                }
                let whole_tiles = split.as_ref().map(|s| s.whole_tiles);
                let slabs = split_k.as_deref().and_then(|s| {
                    let (w, reduce) = s.workspace.as_ref()?;
                    Some((w.device_ptr(&self.stream).0, reduce, s.splits))
                });
                let (pieces, main_c) = match split_k.as_deref() {
                    Some(s) if s.through_c => (None, slabs.map_or(c, |(w, _, _)| w)),
                    Some(s) => (Some((s.splits as i32, slabs.map_or(0, |(w, _, _)| w))), c),
                    None => (None, c),
                };
                let work = planes.as_deref();
                let plane_maps = work.and_then(|p| p.maps);
                let planes = match work {
                    Some(p) => Some(self.launch_split(p, problem, (a, b), ops.strides)?),
                    None => None,
                };
                self.launch_main(
                    loaded,
                    config,
                    (a, b, main_c),
                    &args,
                    whole_tiles,
                    pieces,
                    planes.map(|(w, kp)| (w, kp, plane_maps)),
                    ops,
                )?;
                if let Some((partial, reduce, splits)) = slabs {
                    self.launch_reduce(reduce, partial, c, problem, splits)?;
                }
                if let Some(work) = work.filter(|w| w.fixup.is_some()) {
                    return self.launch_fixup(work, problem, (a, b, c), &args);
                }
                if slabs.is_some() {
                    return Ok(());
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
            Launcher::Cublas => self.with_blas(|blas| cublas::gemm(blas, problem, a, b, c)),
        }
    }

    /// Calls `f` with the backend's cuBLAS handle (made by [`CudaBackend::launcher`] for a
    /// cuBLAS launcher), the context bound to this thread.
    pub(super) fn with_blas<T>(&self, f: impl FnOnce(&CudaBlas) -> Result<T>) -> Result<T> {
        let blas = self.blas.lock().unwrap_or_else(|p| p.into_inner());
        let blas = blas.as_ref().expect("created by launcher()");
        self.ctx
            .bind_to_thread()
            .ctx(|| "binding the context".into())?;
        f(blas)
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
        planes: Option<(u64, i32, Option<[tma::TensorMap; 2]>)>,
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
        if let Some((workspace, kp, maps)) = &planes {
            builder.arg(workspace).arg(kp);
            if let Some([map_a, map_b]) = maps {
                builder.arg(map_a).arg(map_b);
            }
        }
        // SAFETY: the argument list matches the kernel ABI (three pointers, seven ints,
        // for a split-tail kernel the tiles it computes, for a TMA kernel three tensor maps,
        // for a split-K kernel its pieces and a workspace of that many M×N 4-byte slabs (null
        // with one piece, which the kernels then never touch), for a
        // pre-split kernel its planes (Planes::plane_bytes) and KP, and for a TMA build two
        // tensor maps over them); the
        // buffers are sized for `problem`, which the kernels index within (TMA bounds its own
        // reads).
        unsafe { builder.launch(*config) }
            .map(|_| ())
            .ctx(|| format!("launching {} with {config:?}", loaded.entry))
    }

    /// The split-K plan of a split-K kernel (its family's [`Family::splits`](crate::family::Family::splits): wgmma's or
    /// decode's), its workspace and
    /// reduction ([`Family::reduce_entry`](crate::family::Family::reduce_entry)); `config` is `launch_dims`' grid for the planned
    /// pieces, narrowed back to one piece ([`Family::unsplit_grid`](crate::family::Family::unsplit_grid)) where the knob turns it off.
    fn split_k(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        loaded: &Loaded,
        config: &mut LaunchConfig,
    ) -> Result<SplitK> {
        let sms = self.info.sm_count as u64;
        let family = kernel.family().ok_or_else(|| {
            Error::Invalid(format!("kernel `{}` has no CUDA family", kernel.name))
        })?;
        let planned = family.splits(kernel, problem, sms);
        let splits = planned;
        if splits == 1 {
            if planned > 1 {
                config.grid_dim = family.unsplit_grid(kernel, problem, config.grid_dim, sms);
            }
            return Ok(SplitK {
                splits,
                workspace: None,
                through_c: false,
            });
        }
        let reduce = family.reduce_entry();
        Ok(SplitK {
            splits,
            workspace: Some(self.split_k_workspace(kernel, problem, loaded, splits, reduce)?),
            through_c: false,
        })
    }

    /// Split-K for a SIMT split-tail kernel (13_multistage.cu) whose tiles fill less than half of
    /// the wave ([`split_k_pieces`]): the pieces become the grid's z,
    /// each writing its slab of the workspace through C, and `multistage_reduce` sums them. None
    /// where it does not split.
    fn simt_split_k(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        loaded: &Loaded,
        config: &mut LaunchConfig,
        tiling: crate::registry::Tiling,
    ) -> Result<Option<Box<SplitK>>> {
        let tiles = config.grid_dim.0 as u64 * config.grid_dim.1 as u64;
        let wave = self.blocks_per_sm(loaded, config)? as u64 * self.info.sm_count as u64;
        let slices = problem.k.div_ceil(tiling.bk as usize) as u64;
        let splits = split_k_pieces(
            tiles,
            slices,
            wave.saturating_mul(SPLIT_K_EIGHTHS) / 8,
            SPLIT_K_MIN_SLICES,
        )
        .min(u16::MAX as u64);
        if splits == 1 {
            return Ok(None);
        }
        config.grid_dim.2 = splits as u32;
        Ok(Some(Box::new(SplitK {
            splits,
            workspace: Some(self.split_k_workspace(
                kernel,
                problem,
                loaded,
                splits,
                "multistage_reduce",
            )?),
            through_c: true,
        })))
    }

    /// `splits` slabs of M×N 4-byte sums, and `reduce` from `loaded`'s module.
    fn split_k_workspace(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        loaded: &Loaded,
        splits: u64,
        reduce: &str,
    ) -> Result<(CudaSlice<u8>, CudaFunction)> {
        let bytes = splits as usize * problem.m * problem.n * 4;
        // SAFETY: every slab element within M×N is written by its piece before the reduction
        // reads it (each piece stores its whole tile, bounds-checked).
        let partial = unsafe { self.stream.alloc::<u8>(bytes) }
            .ctx(|| format!("allocating {splits} split-K slabs for {problem}"))?;
        let reduce = loaded
            .module
            .load_function(reduce)
            .ctx(|| format!("finding `{reduce}` for {}", kernel.name))?;
        Ok((partial, reduce))
    }

    /// The planes of a pre-split kernel for `problem` as `layout` says: the workspace (A's
    /// planes, m×KP each, then B^T's, n×KP, KP from the family's
    /// [`plane_k`](crate::family::Family::plane_k), then a fixup's flags), the pre-pass and fixup
    /// from `loaded`'s module. With `map_boxes` (BM, BN), also the tensor maps over the planes
    /// ([`tma::plane_maps`]).
    fn plane_work(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        loaded: &Loaded,
        layout: Planes,
        map_boxes: Option<(u32, u32)>,
    ) -> Result<PlaneWork> {
        let family = kernel.family().ok_or_else(|| {
            Error::Invalid(format!("kernel `{}` has no CUDA family", kernel.name))
        })?;
        let kp = family.plane_k(kernel, problem, self.info.sm_count as u64);
        if i32::try_from(kp).is_err() {
            return Err(Unsupported {
                kernel: kernel.name.to_string(),
                problem: problem.to_string(),
                rule: "K rounded up for the planes must fit an int".into(),
            }
            .into());
        }
        let bytes = layout.bytes(problem, kp).max(1);
        // SAFETY: the pre-pass writes every byte of the planes (k past K as zeros) before the
        // main entry reads them, on the same stream; the flags are zeroed before it.
        let workspace = unsafe { self.stream.alloc::<u8>(bytes) }
            .ctx(|| format!("allocating {bytes} bytes of planes for {problem}"))?;
        let find = |entry: &str| {
            loaded
                .module
                .load_function(entry)
                .ctx(|| format!("finding `{entry}` for {}", kernel.name))
        };
        let split = find(layout.split)?;
        let fixup = layout.fixup.map(find).transpose()?;
        let maps = match map_boxes {
            // K = 0 (KP = 0) has no planes to read: the kernel runs no k-block and stores zeros,
            // and its maps (which cuTensorMapEncodeTiled refuses for an empty extent) stay unused.
            Some(boxes) if kp > 0 && problem.m > 0 && problem.n > 0 => {
                let base = workspace.device_ptr(&self.stream).0;
                Some(tma::plane_maps(
                    base,
                    &layout,
                    (problem.m, problem.n, kp),
                    boxes,
                )?)
            }
            Some(_) => Some([tma::unused_map(), tma::unused_map()]),
            None => None,
        };
        Ok(PlaneWork {
            workspace,
            split,
            fixup,
            layout,
            kp,
            maps,
        })
    }

    /// Enqueues the pre-pass for A (rows m, element (r, l) at a[r·ar + l·ac]) and B^T (rows n,
    /// element (r, l) at b[l·br + r·bc]), after zeroing a fixup's flags; returns the planes'
    /// address and KP for the main entry.
    pub(super) fn launch_split(
        &self,
        planes: &PlaneWork,
        problem: &Problem,
        (a, b): (u64, u64),
        [ar, ac, br, bc]: [usize; 4],
    ) -> Result<(u64, i32)> {
        let base = planes.workspace.device_ptr(&self.stream).0;
        let kp = planes.kp as i32; // checked by plane_work
        let k = problem.k as i32;
        let b_planes = base + planes.layout.a_bytes(problem, planes.kp) as u64;
        let flags = base + planes.layout.plane_bytes(problem, planes.kp) as u64;
        if planes.fixup.is_some() {
            self.zero_at(flags, 1 + problem.m + problem.n, 4)?;
        }
        let k_tiles = planes.kp.div_ceil(SPLIT_K).clamp(1, 65_535) as u32;
        for (src, dst, rows, rs, cs, row_flags) in [
            (a, base, problem.m, ar, ac, flags + 4),
            (
                b,
                b_planes,
                problem.n,
                bc,
                br,
                flags + 4 + 4 * problem.m as u64,
            ),
        ] {
            if rows == 0 || planes.kp == 0 {
                continue;
            }
            let config = LaunchConfig {
                grid_dim: (rows.div_ceil(SPLIT_ROWS) as u32, k_tiles, 1),
                block_dim: (SPLIT_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let (rows, rs, cs) = (rows as i32, rs as i32, cs as i32);
            let mut builder = self.stream.launch_builder(&planes.split);
            builder
                .arg(&src)
                .arg(&dst)
                .arg(&rows)
                .arg(&k)
                .arg(&kp)
                .arg(&rs)
                .arg(&cs);
            if planes.fixup.is_some() {
                builder.arg(&flags).arg(&row_flags);
            }
            // SAFETY: u8x4_split(const u32*, u32*, int rows, int K, int KP, int rs, int cs) and
            // tf32x3_split(the same with f32, then unsigned* any, unsigned* flags): they read
            // the operand within rows×K through the strides and write its planes of rows×KP at
            // `dst`, inside the workspace sized by plane_work, and flags within its 1 + M + N.
            unsafe { builder.launch(config) }
                .map(|_| ())
                .ctx(|| format!("launching the pre-pass over {rows} rows"))?;
        }
        Ok((base, kp))
    }

    /// Enqueues a pre-split kernel's fixup over C (`ptrs`: A, B, C as the main entry read and
    /// wrote them), which reads the flags the pre-pass set.
    fn launch_fixup(
        &self,
        planes: &PlaneWork,
        problem: &Problem,
        (a, b, c): (u64, u64, u64),
        args: &[i32; 7],
    ) -> Result<()> {
        let Some(fixup) = &planes.fixup else {
            return Ok(());
        };
        let base = planes.workspace.device_ptr(&self.stream).0;
        let flags = base + planes.layout.plane_bytes(problem, planes.kp) as u64;
        let row_flags = flags + 4;
        let config = self.elementwise_config((problem.m * problem.n) as u64);
        let mut builder = self.stream.launch_builder(fixup);
        builder.arg(&a).arg(&b).arg(&c);
        for v in args {
            builder.arg(v);
        }
        builder.arg(&flags).arg(&row_flags);
        // SAFETY: tf32x3_fixup(const float* A, const float* B, float* C, int M, N, K, a_rs, a_cs,
        // b_rs, b_cs, const unsigned* any, const unsigned* flags): A, B and C as the main entry
        // had them, the flags (1 + M + N) inside the workspace, written by the pre-pass.
        unsafe { builder.launch(config) }
            .map(|_| ())
            .ctx(|| "launching the 3xTF32 fixup".to_string())
    }

    /// Launches split-K's reduction: C = the sum of the `splits` slabs at `partial`.
    /// The launch of an elementwise grid-stride kernel over `count` elements (split-K's
    /// reductions, a plan's α/β pass): blocks of [`REDUCE_THREADS`], at most 16 per SM.
    pub(super) fn elementwise_config(&self, count: u64) -> LaunchConfig {
        let blocks = count
            .div_ceil(REDUCE_THREADS as u64)
            .min(self.info.sm_count as u64 * 16)
            .max(1);
        LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (REDUCE_THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    fn launch_reduce(
        &self,
        reduce: &CudaFunction,
        partial: u64,
        c: u64,
        problem: &Problem,
        splits: u64,
    ) -> Result<()> {
        let count = (problem.m * problem.n) as i32; // can_run bounds C below 2^31 elements
        let config = self.elementwise_config(count as u64);
        let splits = splits as i32;
        let mut builder = self.stream.launch_builder(reduce);
        builder.arg(&partial).arg(&c).arg(&count).arg(&splits);
        // SAFETY: wgmma_reduce(const float*, OUT*, int, int), multistage_reduce(const ELEM*,
        // ELEM*, int, int) and decode_reduce(const ACC*, OUT*, int, int): `partial` holds
        // `splits` slabs of `count` 4-byte sums, C `count` elements of the kernel's output type.
        unsafe { builder.launch(config) }
            .map(|_| ())
            .ctx(|| format!("launching the split-K reduction over {splits} slabs"))
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
