//! FP32 emulated by 3xTF32 from planes (21_wgmma_3xtf32.cu, `Geometry::Tf32x3`): before each
//! launch a pre-pass (`tf32x3_split`, tf32x3_split.cuh) writes A and B^T as big and small tf32
//! planes, K padded to [`TF32X3_K_PAD`], into a workspace and flags the rows and columns holding
//! ±∞; the main kernel is [`super::u8x4::U8x4Tma`]'s persistent pipeline on those planes (split-K
//! units, two tensor maps over the planes); behind it `tf32x3_fixup` recomputes the flagged
//! elements by FMA.

use super::{
    c_tiles, one_block_per_tile, pre_split_launch, split_k_plan, ExtraArgs, Family, LaunchDims,
    Planes,
};
use crate::dtype::DType;
use crate::problem::Problem;
use crate::registry::DeviceInfo;
use crate::registry::KernelSpec;
use crate::registry::RunOptions;

/// The multiple K is padded to in the planes (tf32x3_split.cuh's `TF32X3_KPAD`): the main
/// kernel's BK divides it, so it has no K edge.
pub const TF32X3_K_PAD: usize = 32;

/// What the 3xTF32 pre-pass writes: two planes (big, small) of f32 per operand, and a flag per
/// row of A and column of B for the fixup.
pub const PLANES: Planes = Planes {
    split: "tf32x3_split",
    count: 2,
    elem: 4,
    fixup: Some("tf32x3_fixup"),
};

/// The fewest k-blocks (of 32) in one piece of a split-K tile: 256 of K, 24 wgmma groups of
/// three products per k8 step through the pipeline's three stages.
pub const MIN_PIECE_KBLOCKS: u64 = 8;

/// The split plan's time model (H100 figures; only the ordering matters): one SM's tf32
/// tensor-core rate at 128×128 tiles (~400 TFLOP/s over 132 SMs, three products per f32
/// multiply-add), the DRAM bandwidth, and the second launch's fixed cost.
const SM_FLOPS: f64 = 3.0e12 / 3.0;
const DRAM_BYTES_PER_S: f64 = 3.0e12;
const REDUCE_LAUNCH_S: f64 = 3e-6;

/// The [`Family`] of `Tf32x3` kernels.
pub struct Tf32x3;

impl Tf32x3 {
    /// The BM×BN tiles of C.
    pub fn tiles(kernel: &KernelSpec, problem: &Problem) -> u64 {
        c_tiles(kernel, problem)
    }

    /// The k pieces of each tile on `problem` with `sms` SMs: 1 (no split) unless the tiles are
    /// for at most half the SMs; then about one wave of pieces of at least
    /// [`MIN_PIECE_KBLOCKS`], where the slabs cost less than the idle SMs they put to work.
    pub fn splits(kernel: &KernelSpec, problem: &Problem, sms: u64) -> u64 {
        let Some(t) = kernel.tc_tile() else {
            return 1;
        };
        split_k_plan(
            Tf32x3::tiles(kernel, problem),
            problem.k.div_ceil(t.bk as usize) as u64,
            sms,
            MIN_PIECE_KBLOCKS,
            |s| Tf32x3::estimate(kernel, problem, sms, s),
        )
    }

    /// The split plan's time for `splits` pieces a tile: waves of (tile, piece) units, plus the
    /// slabs written and read back and the reduction's launch.
    fn estimate(kernel: &KernelSpec, problem: &Problem, sms: u64, splits: u64) -> f64 {
        let Some(t) = kernel.tc_tile() else {
            return f64::INFINITY;
        };
        let units = Tf32x3::tiles(kernel, problem) * splits;
        let piece_k = problem.k.div_ceil(splits as usize) as f64;
        let unit_s = 2.0 * t.bm as f64 * t.bn as f64 * piece_k / SM_FLOPS;
        let compute = units.div_ceil(sms.max(1)) as f64 * unit_s;
        let split = if splits > 1 {
            let slabs = 2.0 * splits as f64 * (problem.m * problem.n) as f64 * 4.0;
            slabs / DRAM_BYTES_PER_S + REDUCE_LAUNCH_S
        } else {
            0.0
        };
        compute + split
    }

    /// The planes' K extent for `kernel` on `problem` on `sms` SMs: K rounded up to
    /// [`TF32X3_K_PAD`], then to a multiple of BK·splits (zeros), so that the pieces are equal.
    pub fn plane_k(kernel: &KernelSpec, problem: &Problem, sms: u64) -> usize {
        let kp = problem.k.next_multiple_of(TF32X3_K_PAD);
        match kernel.tc_tile() {
            Some(t) => {
                kp.next_multiple_of(t.bk as usize * Tf32x3::splits(kernel, problem, sms) as usize)
            }
            None => kp,
        }
    }
}

impl Family for Tf32x3 {
    fn name(&self) -> &'static str {
        "tf32x3"
    }

    /// STAGES·2·(BM + BN)·BK f32 (big and small boxes of each operand) and 1 KB to align the
    /// buffers to the 128-byte swizzle's 1024-byte period.
    fn tile_shared_bytes(
        &self,
        kernel: &KernelSpec,
        _dtype: DType,
        _opts: &RunOptions,
    ) -> Option<(String, usize)> {
        let t = kernel.tc_tile()?;
        let bytes = (t.stages * 2 * (t.bm + t.bn) * t.bk * 4) as usize + 1024;
        Some((format!("tile {t}"), bytes))
    }

    fn launch_dims(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        _opts: &RunOptions,
        device: &DeviceInfo,
    ) -> Result<LaunchDims, String> {
        pre_split_launch(kernel, problem, device, PLANES.count, |sms| {
            Tf32x3::splits(kernel, problem, sms)
        })
    }

    fn persistent(&self) -> bool {
        true
    }

    fn extra_args(&self, kernel: &KernelSpec, _opts: &RunOptions) -> ExtraArgs {
        ExtraArgs {
            planes: Some(PLANES),
            plane_maps: true,
            split_k: kernel.cuda_source().is_some_and(|s| s.split_k),
            ..ExtraArgs::default()
        }
    }

    /// [`Tf32x3::splits`].
    fn splits(&self, kernel: &KernelSpec, problem: &Problem, sms: u64) -> u64 {
        Tf32x3::splits(kernel, problem, sms)
    }

    /// [`Tf32x3::plane_k`].
    fn plane_k(&self, kernel: &KernelSpec, problem: &Problem, sms: u64) -> usize {
        Tf32x3::plane_k(kernel, problem, sms)
    }

    /// One block per tile, on at most `sms` SMs.
    fn unsplit_grid(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        grid: (u32, u32, u32),
        sms: u64,
    ) -> (u32, u32, u32) {
        one_block_per_tile(kernel, problem, grid, sms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::find;

    /// A persistent grid of min(units, SMs); split-K only for few tiles and long K, with KP
    /// padded to equal pieces; the workspace's planes and flags.
    #[test]
    fn plans_and_planes() {
        let k = find("wgmma-3xtf32").unwrap();
        let p = |m, n, kk| Problem::new(m, n, kk, DType::F32);
        assert_eq!(Tf32x3::splits(k, &p(8192, 8192, 8192), 132), 1);
        assert_eq!(Tf32x3::plane_k(k, &p(8192, 8192, 8192), 132), 8192);
        assert_eq!(Tf32x3::plane_k(k, &p(100, 100, 1), 132), 32);
        // 64×64×65536: one tile of 2048 k-blocks, 128 pieces of 16.
        let long = p(64, 64, 65536);
        let s = Tf32x3::splits(k, &long, 132);
        assert!(s > 64, "{s}");
        let kp = Tf32x3::plane_k(k, &long, 132);
        assert_eq!(kp % (32 * s as usize), 0);
        assert!(kp >= 65536 && kp < 65536 + 32 * s as usize);
        assert_eq!(PLANES.bytes(&long, kp), 2 * 4 * kp * 128 + 4 * (1 + 128));
        let none = RunOptions::default();
        assert_eq!(
            k.tile_shared_bytes(DType::F32, &none).map(|(_, b)| b),
            Some(3 * 2 * 256 * 32 * 4 + 1024)
        );
    }
}
