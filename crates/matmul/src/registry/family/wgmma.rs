//! Hopper's tensor cores through TMA and wgmma (15_wgmma.cu, 16_wgmma_tf32.cu; sm_90a): a
//! persistent grid of min(work units, SMs) blocks of `tile.threads` (producer and consumer
//! warpgroups) that walk the BM×BN tiles of D, in clusters of `tile.cluster` blocks that share
//! the B side by TMA multicast. A and B (and C, for the staged epilogue) reach the kernel as three
//! TMA tensor maps after the usual arguments (`cuda/tma.rs`). D is C, or C^T where the kernel
//! swaps the operands ([`WgmmaTf32Orientation`]).

use serde::Serialize;

use super::mma::{tc_shared_bytes, tile};
use super::{blocks, Boxes, ExtraArgs, Family, LaunchDims};
use crate::dtype::DType;
use crate::problem::{Op, Problem};
use crate::registry::DeviceInfo;
use crate::registry::KernelSpec;
use crate::registry::RunOptions;

/// The wgmma family (16-bit inputs and tf32).
pub struct Wgmma;

/// How the tf32 wgmma kernel maps a problem onto wgmma, whose shared-memory operand must be
/// K-major for tf32: D = R·S, with R loaded into registers (BM rows of D per tile) and S read by
/// descriptor (BN columns of D per tile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum WgmmaTf32Orientation {
    /// op(B) = T (B stored N×K, K-major): D = C, R = op(A), S = B.
    Direct,
    /// op(A) = N, op(B) = N: D = C^T, R = op(B)^T (B stored K×N), S = op(A)^T (A stored M×K).
    Swapped,
}

impl WgmmaTf32Orientation {
    /// The orientation of `problem`, or None for op(A) = T with op(B) = N (no K-major operand).
    pub fn of(problem: &Problem) -> Option<WgmmaTf32Orientation> {
        match (problem.op_a, problem.op_b) {
            (_, Op::T) => Some(WgmmaTf32Orientation::Direct),
            (Op::N, Op::N) => Some(WgmmaTf32Orientation::Swapped),
            (Op::T, Op::N) => None,
        }
    }

    /// (rows, columns) of D: (m, n) direct, (n, m) swapped.
    pub fn d_shape(self, problem: &Problem) -> (usize, usize) {
        match self {
            WgmmaTf32Orientation::Direct => (problem.m, problem.n),
            WgmmaTf32Orientation::Swapped => (problem.n, problem.m),
        }
    }
}

impl Family for Wgmma {
    fn name(&self) -> &'static str {
        "wgmma"
    }

    /// [`TcTile::shared_bytes`](crate::registry::TcTile::shared_bytes) of a persistent kernel.
    fn tile_shared_bytes(
        &self,
        kernel: &KernelSpec,
        dtype: DType,
        _opts: &RunOptions,
    ) -> Option<(String, usize)> {
        tc_shared_bytes(kernel, dtype, self.persistent())
    }

    fn launch_dims(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        _opts: &RunOptions,
        device: &DeviceInfo,
    ) -> Result<LaunchDims, String> {
        let t = tile(kernel)?;
        // Persistent: one block per SM (or per unit when there are fewer units), in whole
        // clusters of `t.cluster` blocks. A split-K kernel's units are (tile, k piece) pairs.
        let c = t.cluster.max(1) as u64;
        let units = Wgmma::units(kernel, problem)?;
        let splits = if kernel.cuda_source().is_some_and(|s| s.split_k) {
            Wgmma::splits(kernel, problem, device.sm_count as u64)
        } else {
            1
        };
        Ok((
            (Wgmma::grid(units * splits, c, device.sm_count as u64), 1, 1),
            (t.threads, 1, 1),
        ))
    }

    fn persistent(&self) -> bool {
        true
    }

    fn extra_args(&self, kernel: &KernelSpec, _opts: &RunOptions) -> ExtraArgs {
        ExtraArgs {
            planes: None,
            plane_maps: false,
            split_tail: None,
            tensor_maps: kernel.tc_tile().map(Boxes::Tc),
            split_k: kernel.cuda_source().is_some_and(|s| s.split_k),
        }
    }

    /// [`Wgmma::splits`].
    fn splits(&self, kernel: &KernelSpec, problem: &Problem, sms: u64) -> u64 {
        Wgmma::splits(kernel, problem, sms)
    }

    /// The (tile, piece) units become tiles: one block per tile (clusters never split).
    fn unsplit_grid(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        (_, y, z): (u32, u32, u32),
        sms: u64,
    ) -> (u32, u32, u32) {
        (Wgmma::grid(Wgmma::tiles(kernel, problem), 1, sms), y, z)
    }
}

/// The fewest k-blocks (of 64) in one piece of a split-K tile: 512 of K, enough for the pipeline
/// to fill (four stages) and drain several times over.
pub const MIN_PIECE_KBLOCKS: u64 = 8;

/// The time model `auto` and split-K plan with (H100 figures; only the ordering matters): one
/// SM's 16-bit tensor-core rate at 128×256 tiles (the 4096³ rate, ~700 TFLOP/s, over 132 SMs),
/// the DRAM bandwidth, and the fixed cost of split-K's second launch.
const SM_FLOPS: f64 = 5.3e12;
const DRAM_BYTES_PER_S: f64 = 3.0e12;
const REDUCE_LAUNCH_S: f64 = 3e-6;

/// A tile's rate relative to 128×256: the narrower tiles load more operand bytes per FLOP
/// (K/BN + K/BM) and issue more, smaller wgmma instructions. Assumed, checked by the suite.
fn tile_efficiency(bn: u32) -> f64 {
    match bn {
        256.. => 1.0,
        128..=255 => 0.9,
        _ => 0.75,
    }
}

impl Wgmma {
    /// The k pieces of each tile of a split-K kernel ([`CudaSource::split_k`]) on `problem` with
    /// `sms` SMs; 1 (no split) unless the tiles are for at most half the SMs. Then the pieces
    /// fill about one wave, each at least [`MIN_PIECE_KBLOCKS`] long: min(sms / tiles,
    /// k-blocks / 8), evened out so that no piece is empty. Clusters never split.
    ///
    /// [`CudaSource::split_k`]: crate::registry::CudaSource::split_k
    pub fn splits(kernel: &KernelSpec, problem: &Problem, sms: u64) -> u64 {
        let Some(t) = kernel.tc_tile() else {
            return 1;
        };
        if t.cluster > 1 {
            return 1;
        }
        super::split_k_plan(
            Wgmma::tiles(kernel, problem),
            problem.k.div_ceil(t.bk as usize) as u64,
            sms,
            MIN_PIECE_KBLOCKS,
            |s| Wgmma::estimate(kernel, problem, sms, s),
        )
    }

    /// The model's time for `kernel` on `problem` on `sms` SMs with `splits` k pieces per tile:
    /// the waves of (tile, piece) units, each a BM×BN tile over its share of K at the tile's
    /// rate (padding included: a tile past the edge computes zeros), or the compulsory DRAM
    /// traffic if that takes longer, plus split-K's slabs (written and read) and second launch.
    pub fn estimate(kernel: &KernelSpec, problem: &Problem, sms: u64, splits: u64) -> f64 {
        let Some(t) = kernel.tc_tile() else {
            return f64::INFINITY;
        };
        let units = Wgmma::tiles(kernel, problem) * splits;
        let piece_k = problem.k.div_ceil(splits as usize) as f64;
        // tf32 runs at half the 16-bit rate.
        let rate = SM_FLOPS * tile_efficiency(t.bn)
            / if problem.dtype == DType::Tf32 {
                2.0
            } else {
                1.0
            };
        let unit_s = 2.0 * t.bm as f64 * t.bn as f64 * piece_k / rate;
        let compute = units.div_ceil(sms.max(1)) as f64 * unit_s;
        let memory = problem.min_bytes() / DRAM_BYTES_PER_S;
        let split = if splits > 1 {
            let slabs = 2.0 * splits as f64 * (problem.m * problem.n) as f64 * 4.0;
            slabs / DRAM_BYTES_PER_S + REDUCE_LAUNCH_S
        } else {
            0.0
        };
        compute.max(memory) + split
    }

    /// The tiles of `kernel`'s block tile over `problem`'s D (C, or C^T where the kernel swaps
    /// the operands); 0 for a kernel without a tensor-core tile.
    pub fn tiles(kernel: &KernelSpec, problem: &Problem) -> u64 {
        let Some(t) = kernel.tc_tile() else {
            return 0;
        };
        let (rows, cols) = WgmmaTf32Orientation::of(problem)
            .map_or((problem.m, problem.n), |o| o.d_shape(problem));
        (rows.div_ceil(t.bm as usize) * cols.div_ceil(t.bn as usize)) as u64
    }

    /// The work units of one product: a cluster's `t.cluster` vertically adjacent tiles of D.
    /// D is C, or C^T when both kernels swap the operands (op(A) = op(B) = N:
    /// tma::swaps_operands); then the tiles run BM along N and BN along M. (tf32's op(A) = T
    /// with op(B) = N has no orientation; can_run refuses it before this.)
    pub fn units(kernel: &KernelSpec, problem: &Problem) -> Result<u64, String> {
        let t = tile(kernel)?;
        let c = t.cluster.max(1) as u64;
        let (m, n) = (problem.m, problem.n);
        let (rows, cols) = WgmmaTf32Orientation::of(problem).map_or((m, n), |o| o.d_shape(problem));
        Ok((blocks(rows, t.bm)? as u64).div_ceil(c) * blocks(cols, t.bn)? as u64)
    }

    /// The persistent grid for `units` work units in clusters of `cluster` blocks on `sms` SMs:
    /// one block per SM, or per unit where there are fewer.
    pub fn grid(units: u64, cluster: u64, sms: u64) -> u32 {
        let clusters = units.min((sms / cluster).max(1));
        u32::try_from(clusters * cluster).unwrap_or(u32::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::find;

    /// Split-K plans pieces only for tiles on at most half the SMs and a K of 16 k-blocks or more,
    /// fills about one wave with pieces of at least 8 k-blocks, leaves no piece empty, and never
    /// splits a cluster.
    #[test]
    fn split_k_plans() {
        let splits = |name: &str, m, n, k| {
            let p = Problem::new(m, n, k, DType::Bf16);
            Wgmma::splits(find(name).unwrap(), &p, 132)
        };
        assert_eq!(splits("wgmma-n64", 64, 64, 65536), 128); // 1 tile, 1024 k-blocks
                                                             // N·N is computed as C^T: 16×4096 is 32 tiles of 128×64, 64 k-blocks.
        assert_eq!(splits("wgmma-n64", 16, 4096, 4096), 4);
        // 4 tiles, 782 k-blocks: 33 pieces of 24 (the last 14).
        assert_eq!(splits("wgmma-n64", 97, 211, 50021), 33);
        // 16 k-blocks could be two pieces of 8, but the second launch costs more than it saves.
        assert_eq!(splits("wgmma-n64", 1, 1, 1000), 1);
        assert_eq!(splits("wgmma-n64", 1, 1, 900), 1); // 15 k-blocks: one piece of 8 only
        assert_eq!(splits("wgmma", 4096, 4096, 4096), 1); // 512 tiles
        assert_eq!(splits("wgmma", 1024, 1024, 8192), 4); // 32 tiles of 128×256
        assert_eq!(splits("wgmma", 2048, 1024, 8192), 2); // 64 tiles
        assert_eq!(splits("wgmma", 2048, 2048, 8192), 1); // 128 tiles: more than half the SMs
        assert_eq!(splits("wgmma-cluster", 64, 64, 65536), 1);
        // tf32 (BK 32): 2048 k-blocks of one tile in 128 pieces; its cluster build never splits.
        let tf32 = Problem::new(64, 64, 65536, DType::Tf32);
        assert_eq!(Wgmma::splits(find("wgmma-tf32").unwrap(), &tf32, 132), 128);
        assert_eq!(
            Wgmma::splits(find("wgmma-tf32-cluster").unwrap(), &tf32, 132),
            1
        );
        // Evened out: never an empty piece.
        for k in [1000, 6400, 20000, 65536, 50021] {
            let p = Problem::new(64, 64, k, DType::Bf16);
            let s = Wgmma::splits(find("wgmma-n64").unwrap(), &p, 132);
            let kblocks = k.div_ceil(64) as u64;
            let per = kblocks.div_ceil(s);
            assert!((s - 1) * per < kblocks, "k {k}: {s} pieces of {per}");
        }
        assert_eq!(Wgmma::grid(128, 1, 132), 128);
        assert_eq!(Wgmma::grid(4 * 33, 1, 132), 132);
        assert_eq!(Wgmma::grid(1000, 2, 132), 132);
    }
}
