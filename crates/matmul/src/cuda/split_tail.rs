//! The split tail (13_multistage.cu, "The split tail"): where a SIMT kernel's last partial wave
//! is split into pieces of its k range, the workspace the pieces share, and the tail's launch.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig};

use super::compile::Build;
use super::experiment::TailKnobs;
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
pub(super) struct SplitLaunch {
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
/// at once on its `sms` SMs, where it is planned, for tiles at least [`TAIL_MIN_SLICES`] long:
/// every tile, in pieces (split-K), when there are tiles for at most half the SMs; else at least two waves of tiles
/// whose last partial wave is at most 3/4 full. The tail is that partial wave plus
/// `extra_eighths`/8 of a wave, so that the SMs that finish their whole tiles first have pieces to
/// draw while the last whole tiles finish, in pieces of about `piece_slices` slices (at least one
/// per tile). The defaults are [`TAIL_EXTRA_EIGHTHS`] and [`TAIL_PIECE_SLICES`]. Measured on an
/// H100 (lab/notebook.md, "The split tail"): +1 to +2 % at 8192³ and 16384³; at 4096³, whose last
/// wave is 116 tiles of 132, every tail tried lost 2–4 % (the tail's own cost: pieces that never
/// wait for each other lost as much), so it stays whole.
pub fn split_tail_plan(
    tiles: u64,
    slices: u64,
    sms: u64,
    wave: u64,
    extra_eighths: u64,
    piece_slices: u64,
) -> Option<TailPlan> {
    if wave == 0 || slices < TAIL_MIN_SLICES {
        return None;
    }
    let pieces = (slices / piece_slices.max(1)).max(1);
    if 2 * tiles <= sms {
        // Split-K: tiles for half the SMs or fewer would leave most SMs idle for the whole of K,
        // so every tile goes to the tail, in pieces: no more than about two waves of them, since a
        // tile's pieces add up in order. (With a tile for nearly every SM, u32 1024²×32768 and
        // 8192×64×8192 ran 16 % slower split, on the H100: one block an SM already kept its IMAD
        // pipes busy.)
        return Some(TailPlan {
            first_tile: 0,
            blocks: wave,
            pieces: pieces.min((2 * wave).div_ceil(tiles.max(1))),
        });
    }
    if tiles < 2 * wave || 4 * (tiles % wave) > 3 * wave {
        return None;
    }
    // Saturating: the knobs come from the kernel defines, and a huge one means "all of C".
    let tail = (tiles % wave)
        .saturating_add(wave.saturating_mul(extra_eighths) / 8)
        .min(tiles);
    Some(TailPlan {
        first_tile: tiles - tail,
        blocks: wave,
        pieces,
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

impl CudaBackend {
    /// Where [`split_tail_plan`] splits the `tiles` tiles of `problem` for a split-tail kernel
    /// (loaded as `main`, launched with `config` at `tiling`), with the knobs of
    /// [`TailKnobs`] (experiment defines; the registry sets none of them).
    fn tail_plan(
        &self,
        problem: &Problem,
        tiles: u64,
        main: &Loaded,
        config: &LaunchConfig,
        tiling: crate::registry::Tiling,
    ) -> Result<Option<TailPlan>> {
        let knobs = TailKnobs::read()?;
        // Without programmatic dependent launches (before compute capability 9.0) the tail could
        // only start after the last whole tile, which is what it is there to overlap.
        if !knobs.enabled()? || self.info.compute_capability.0 < 9 {
            return Ok(None);
        }
        let wave = self.blocks_per_sm(main, config)? as u64 * self.info.sm_count as u64;
        let slices = problem.k.div_ceil(tiling.bk as usize) as u64;
        Ok(split_tail_plan(
            tiles,
            slices,
            self.info.sm_count as u64,
            wave,
            knobs.extra_eighths()?,
            knobs.piece_slices()?,
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
    use super::{split_tail_plan, TAIL_EXTRA_EIGHTHS, TAIL_PIECE_SLICES};

    #[test]
    fn split_tail_plans() {
        // The ★ tiling (128×256, BK 16) on 132 SMs at one block each, the default tail.
        let plan = |m: u64, n: u64, k: u64| {
            split_tail_plan(
                m.div_ceil(128) * n.div_ceil(256),
                k.div_ceil(16),
                132,
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
        // Split-K: at most half a wave of tiles, all of them in pieces (64×64×65536: one tile of
        // 65536/16 slices in 64 pieces; 256×8192×8192 and 2048×1024×8192: 64 tiles of 512 slices,
        // in 5 pieces rather than 8, about two waves of pieces).
        assert_eq!(plan(64, 64, 65536), Some((0, 132, 64)));
        assert_eq!(plan(256, 8192, 8192), Some((0, 132, 5)));
        assert_eq!(plan(2048, 1024, 8192), Some((0, 132, 5)));
        // Fewer than two waves but more than half of one (2048²: 128 tiles), or tiles under
        // TAIL_MIN_SLICES (1000³, K = 1024; 64×64×1024).
        assert_eq!(plan(2048, 2048, 2048), None);
        assert_eq!(plan(1000, 1000, 1000), None);
        assert_eq!(plan(8192, 8192, 1024), None);
        assert_eq!(plan(64, 64, 1024), None);
        // Two blocks an SM (u32's 64×128 tiles): the split-K rule counts SMs, not the wave, and
        // caps the pieces at about two waves (1024²×32768: 128 tiles stay whole; 64 tiles of
        // 2048 slices go in 9 pieces, not 32).
        assert_eq!(split_tail_plan(128, 2048, 132, 264, 4, 64), None);
        assert_eq!(
            split_tail_plan(64, 2048, 132, 264, 4, 64).map(|p| (p.first_tile, p.pieces)),
            Some((0, 9))
        );
        // No wave (a device that cannot run the kernel): no split, and no division by zero.
        assert_eq!(split_tail_plan(10, 1000, 0, 0, 4, 128), None);
        // A tail as large as the problem is the whole problem.
        assert_eq!(
            split_tail_plan(300, 1000, 132, 132, 64, 128).map(|p| p.first_tile),
            Some(0)
        );
        // A knob too large for u64 arithmetic is all of C, not an overflow.
        assert_eq!(
            split_tail_plan(300, 1000, 132, 132, u64::MAX, 128).map(|p| p.first_tile),
            Some(0)
        );
        // Pieces of at least one slice, and at least one piece a tile.
        assert_eq!(
            split_tail_plan(300, 1000, 132, 132, 4, 0).map(|p| p.pieces),
            Some(1000)
        );
        assert_eq!(
            split_tail_plan(300, 130, 132, 132, 4, 1000).map(|p| p.pieces),
            Some(1)
        );
    }
}
