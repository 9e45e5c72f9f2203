//! The split tail (13_multistage.cu, "The split tail"): where a SIMT kernel's last partial wave
//! is split into pieces of its k range, the workspace the pieces share, and the tail's launch.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig};

use super::compile::Build;
use super::launch::Launcher;
use super::libs::Context;
use super::{CudaBackend, Loaded};
use crate::backend::RunOptions;
use crate::error::Result;
use crate::problem::Problem;
use crate::registry::KernelSpec;

/// How a [`CudaSource::split_tail`](crate::registry::CudaSource::split_tail) kernel runs a
/// product: its main entry computes the first `whole_tiles` tiles of its block order whole (its
/// one extra argument; blocks past them exit), and the tail entry, if the plan splits, the rest in
/// pieces, launched right behind it.
pub(crate) struct SplitLaunch {
    pub(super) whole_tiles: i32,
    pub(super) tail: Option<TailLaunch>,
}

/// The tail entry's launch: `plan`'s blocks (the grid) drawing its pieces, with the workspace
/// 13_multistage.cu's `SplitTail` describes; always a programmatic dependent of the main entry
/// (planned only where the device has them: compute capability 9.0 and up), whose blocks exit at
/// once where the tail is all of C.
pub(super) struct TailLaunch {
    pub(super) loaded: Arc<Loaded>,
    pub(super) config: LaunchConfig,
    pub(super) plan: TailPlan,
    pub(super) workspace: Arc<TailWorkspace>,
}

/// The split tail's workspace, one per backend, grown as launches need it and shared by them (one
/// stream runs them in order, and each leaves the counters at zero).
pub(super) struct TailWorkspace {
    /// One slot of BM·BN accumulators per tail tile.
    pub(super) partials: CudaSlice<u8>,
    /// The piece queue's two counters, then one counter per tail tile; zero between launches
    /// (the kernel resets them).
    pub(super) sync: CudaSlice<u32>,
}

/// A split tail: the last `tiles − first_tile` tiles of the block order, each in `pieces` pieces
/// of its k range, drawn by `blocks` blocks (13_multistage.cu, "The split tail").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TailPlan {
    /// The first tile of the tail in block order: the main launch computes tiles
    /// `0..first_tile` whole (the extra argument of a split-tail entry).
    pub first_tile: u64,
    /// Blocks of the tail launch: one wave of the device.
    pub blocks: u64,
    /// Pieces each tail tile's k range is cut into (at least 1).
    pub pieces: u64,
}

/// The split tail of `tiles` tiles of `slices` k slices each, for a device that runs `wave` blocks
/// at once, where it is planned, for tiles at least [`TAIL_MIN_SLICES`] long: at least `min_waves`
/// ([`TAIL_MIN_WAVES`]) waves of tiles whose last partial wave is at most 3/4 full (fewer tiles are split-K's,
/// [`split_k_pieces`]). The tail is that partial wave plus
/// `extra_eighths`/8 of a wave, so that the SMs that finish their whole tiles first have pieces to
/// draw while the last whole tiles finish, in pieces of about `piece_slices` slices (at least one
/// per tile). The defaults are [`TAIL_EXTRA_EIGHTHS`] and [`TAIL_PIECE_SLICES`]; where the
/// plan gains and where it does not is measured in docs/ARCHITECTURE.md ("The split tail").
pub fn split_tail_plan(
    tiles: u64,
    slices: u64,
    wave: u64,
    extra_eighths: u64,
    piece_slices: u64,
    min_waves: u64,
) -> Option<TailPlan> {
    if wave == 0 || slices < TAIL_MIN_SLICES {
        return None;
    }
    // Under two waves, pieces half as long: the tail is then most of the product (H100, f32
    // 2049×2047×2045, 136 tiles of 128×256 on 132 SMs: whole 704 µs, pieces of 64 slices
    // 603 µs, of 32 533 µs).
    let piece_slices = if tiles < 2 * wave {
        piece_slices / 2
    } else {
        piece_slices
    };
    let pieces = (slices / piece_slices.max(1)).max(1);
    if tiles < min_waves.max(1) * wave || 4 * (tiles % wave) > 3 * wave {
        return None;
    }
    // Saturating: a huge extra tail means "all of C".
    let tail = (tiles % wave)
        .saturating_add(wave.saturating_mul(extra_eighths) / 8)
        .min(tiles);
    Some(TailPlan {
        first_tile: tiles - tail,
        blocks: wave,
        pieces,
    })
}

/// Split-K for a SIMT split-tail kernel: the pieces each of `tiles` tiles of `slices` k slices is
/// cut into, so that the pieces fill about `target` blocks (the wave's, or
/// [`SPLIT_K_EIGHTHS`]/8 of it) with pieces of at least `min_slices` slices; 1 (no split) where the
/// tiles alone fill half of the target. Every piece writes its own slab of C, and
/// 13_multistage.cu's `multistage_reduce` sums them: no piece waits for another.
pub fn split_k_pieces(tiles: u64, slices: u64, target: u64, min_slices: u64) -> u64 {
    if tiles == 0 {
        return 1;
    }
    (target / tiles).min(slices / min_slices.max(1)).max(1)
}

// The plans' constants below were chosen by measurement (docs/ARCHITECTURE.md, "The split tail"
// and "Split-K"); lab/README.md says how to try others.

/// The shortest split-K piece, in k slices.
pub const SPLIT_K_MIN_SLICES: u64 = 4;
/// The blocks split-K fills, in eighths of a wave.
pub const SPLIT_K_EIGHTHS: u64 = 8;

/// The shortest tiles (in k slices) whose tail [`split_tail_plan`] splits.
pub const TAIL_MIN_SLICES: u64 = 128;
/// The tail beyond the last partial wave, in eighths of a wave.
pub const TAIL_EXTRA_EIGHTHS: u64 = 4;
/// The fewest waves of tiles whose tail is split: from one whole wave and a few tiles on.
pub const TAIL_MIN_WAVES: u64 = 1;
/// The length of a tail piece in k slices.
pub const TAIL_PIECE_SLICES: u64 = 64;

impl CudaBackend {
    /// Where [`split_tail_plan`] splits the `tiles` tiles of `problem` for a split-tail kernel
    /// (loaded as `main`, launched with `config` at `tiling`), with the default knobs.
    fn tail_plan(
        &self,
        problem: &Problem,
        tiles: u64,
        main: &Loaded,
        config: &LaunchConfig,
        tiling: crate::registry::Tiling,
    ) -> Result<Option<TailPlan>> {
        // Without programmatic dependent launches (before compute capability 9.0) the tail could
        // only start after the last whole tile, which is what it is there to overlap.
        if self.info.compute_capability.0 < 9 {
            return Ok(None);
        }
        let wave = self.blocks_per_sm(main, config)? as u64 * self.info.sm_count as u64;
        let slices = problem.k.div_ceil(tiling.bk as usize) as u64;
        Ok(split_tail_plan(
            tiles,
            slices,
            wave,
            TAIL_EXTRA_EIGHTHS,
            TAIL_PIECE_SLICES,
            TAIL_MIN_WAVES,
        ))
    }

    /// How many blocks of `loaded` one SM holds at once, launched with `config`.
    pub(super) fn blocks_per_sm(&self, loaded: &Loaded, config: &LaunchConfig) -> Result<u32> {
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
    pub(super) fn split_launch(
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

    /// How `kernel` runs `problem` with `opts`, if it splits the tail
    /// ([`CudaSource::split_tail`](crate::registry::CudaSource::split_tail) and
    /// [`split_tail_plan`]); None where every tile is computed whole. It prepares what a launch
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

    /// The k pieces split-K cuts each tile of `problem` into when `kernel` runs it with `opts`
    /// (1: no split-K), as a launch plans them.
    pub fn split_k_plan(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: RunOptions,
    ) -> Result<u64> {
        Ok(match self.launcher(kernel, problem, &opts)? {
            Launcher::Kernel { config, .. } => config.grid_dim.2 as u64,
            Launcher::Cublas => 1,
        })
    }

    /// Launches the tail entry of a split launch right behind its main entry, which computed
    /// the first `whole_tiles` tiles whole; A, B and C at `(a, b, c)` and the seven ints `args` are
    /// the main entry's.
    pub(super) fn launch_tail(
        &self,
        tail: &TailLaunch,
        whole_tiles: i32,
        (a, b, c): (u64, u64, u64),
        args: &[i32; 7],
    ) -> Result<()> {
        // The tail entry's ABI: the usual three pointers and seven ints, the first tail
        // tile, the pieces per tile, the workspace (a BM×BN slot per tail tile) and its
        // counters, zero as the last launch left them.
        let (first, pieces) = (whole_tiles, tail.plan.pieces as i32);
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
        unsafe { self.launch_dependent(&tail.loaded.func, &tail.config, &mut values) }.ctx(what)
    }
}

#[cfg(test)]
mod tests {
    use super::{
        split_k_pieces, split_tail_plan, TAIL_EXTRA_EIGHTHS, TAIL_MIN_WAVES, TAIL_PIECE_SLICES,
    };

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
                TAIL_MIN_WAVES,
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
        // One wave and a few tiles (2049×2047×2045: 136 tiles): the few and half a wave, in
        // pieces of 32 slices.
        assert_eq!(plan(2049, 2047, 2045), Some((136 - 4 - 66, 132, 4)));
        // Fewer tiles than a wave are split-K's (split_k_pieces), not the tail's.
        assert_eq!(plan(64, 64, 65536), None);
        assert_eq!(plan(256, 8192, 8192), None);
        // Fewer than two waves but more than half of one (2048²: 128 tiles), or tiles under
        // TAIL_MIN_SLICES (1000³, K = 1024; 64×64×1024).
        assert_eq!(plan(2048, 2048, 2048), None);
        assert_eq!(plan(1000, 1000, 1000), None);
        assert_eq!(plan(8192, 8192, 1024), None);
        assert_eq!(plan(64, 64, 1024), None);
        // No wave (a device that cannot run the kernel): no split, and no division by zero.
        assert_eq!(split_tail_plan(10, 1000, 0, 4, 128, 2), None);
        // A tail as large as the problem is the whole problem.
        assert_eq!(
            split_tail_plan(300, 1000, 132, 64, 128, 2).map(|p| p.first_tile),
            Some(0)
        );
        // A knob too large for u64 arithmetic is all of C, not an overflow.
        assert_eq!(
            split_tail_plan(300, 1000, 132, u64::MAX, 128, 2).map(|p| p.first_tile),
            Some(0)
        );
        // Pieces of at least one slice, and at least one piece a tile.
        assert_eq!(
            split_tail_plan(300, 1000, 132, 4, 0, 2).map(|p| p.pieces),
            Some(1000)
        );
        assert_eq!(
            split_tail_plan(300, 130, 132, 4, 1000, 2).map(|p| p.pieces),
            Some(1)
        );
    }

    #[test]
    fn split_k_pieces_fill_the_wave() {
        // 64×64×65536 at 64×128×32 tiles, two blocks an SM on 132 SMs: one tile of 2048 slices
        // in 264 pieces of 7–8 slices.
        assert_eq!(split_k_pieces(1, 2048, 264, 4), 264);
        // 1×4096×4096: 32 tiles of 128 slices, 8 pieces each.
        assert_eq!(split_k_pieces(32, 128, 264, 4), 8);
        // 512³: 32 tiles of 16 slices, held to pieces of 4 slices.
        assert_eq!(split_k_pieces(32, 16, 264, 4), 4);
        // Tiles for more than half the wave stay whole; so do short ones.
        assert_eq!(split_k_pieces(133, 4096, 264, 4), 1);
        assert_eq!(split_k_pieces(8, 7, 264, 4), 1);
        // No tiles, no wave, a zero knob: one piece, no division by zero.
        assert_eq!(split_k_pieces(0, 100, 264, 4), 1);
        assert_eq!(split_k_pieces(4, 100, 0, 4), 1);
        assert_eq!(split_k_pieces(4, 100, 264, 0), 66);
    }
}
