//! Exact u32 on the int8 tensor cores by the byte split (18_mma_u8x4.cu, `Geometry::ByteSplit`):
//! before each launch a pre-pass (`u8x4_split`, u8x4_split.cuh) writes A and B^T as 4 byte planes
//! each, K padded to [`BYTE_PLANE_K_PAD`], into a workspace; the main kernel computes a BM×BN tile
//! of C per block of `tile.threads` from the planes, with STAGES·(BM + BN)·BK + 1024 bytes of
//! dynamic shared memory; grid = (⌈n / BN⌉, ⌈m / BM⌉). Its extra arguments are the planes' address and KP.

use super::mma::tile;
use super::{
    blocks, c_tiles, one_block_per_tile, pre_split_launch, ExtraArgs, Family, LaunchDims, Planes,
};
use crate::dtype::DType;
use crate::problem::Problem;
use crate::registry::DeviceInfo;
use crate::registry::RunOptions;
use crate::registry::{Geometry, KernelSpec};

/// The multiple K is padded to in the byte planes (u8x4_split.cuh's `U8X4_KPAD`): every BK of
/// the main kernels divides it, so they have no K edge.
pub const BYTE_PLANE_K_PAD: usize = 128;

/// The byte planes' K extent for a problem of depth `k`: k rounded up to [`BYTE_PLANE_K_PAD`].
pub fn padded_k(k: usize) -> usize {
    k.next_multiple_of(BYTE_PLANE_K_PAD)
}

/// The byte planes' K extent for `kernel` on `problem` on `sms` SMs: [`padded_k`], and for a
/// split-K kernel further up to a multiple of BK·splits (zero bytes), so that its pieces are
/// equal ([`U8x4Tma::splits`]).
pub fn plane_k(kernel: &KernelSpec, problem: &Problem, sms: u64) -> usize {
    let kp = padded_k(problem.k);
    match (kernel.cuda_source(), kernel.tc_tile()) {
        (Some(src), Some(t))
            if src.split_k && matches!(src.geometry, Geometry::ByteSplitTma { .. }) =>
        {
            let splits = U8x4Tma::splits(kernel, problem, sms) as usize;
            kp.next_multiple_of(t.bk as usize * splits)
        }
        _ => kp,
    }
}

/// What the byte-split pre-pass writes: 4 byte planes per operand, no fixup.
pub const PLANES: Planes = Planes {
    split: "u8x4_split",
    count: 4,
    elem: 1,
    fixup: None,
};

/// Bytes of a byte-plane workspace of K extent `kp` for `problem`: 4 planes of m×KP (A) and 4
/// of n×KP (B^T).
pub fn plane_bytes(problem: &Problem, kp: usize) -> usize {
    PLANES.bytes(problem, kp)
}

/// The [`Family`] of `ByteSplit` kernels.
pub struct U8x4;

impl Family for U8x4 {
    fn name(&self) -> &'static str {
        "u8x4"
    }

    /// STAGES·(BM + BN)·BK bytes (the tiles hold bytes, whatever the dtype's element size) and
    /// 1 KB to align the buffers to the 128-byte swizzle's 1024-byte period (wgmma reads them).
    fn tile_shared_bytes(
        &self,
        kernel: &KernelSpec,
        _dtype: DType,
        _opts: &RunOptions,
    ) -> Option<(String, usize)> {
        let t = kernel.tc_tile()?;
        let bytes = (t.stages * (t.bm + t.bn) * t.bk) as usize + 1024;
        Some((format!("tile {t}"), bytes))
    }

    fn grid_rows(&self, kernel: &KernelSpec, problem: &Problem, _opts: &RunOptions) -> usize {
        problem
            .m
            .div_ceil(kernel.tc_tile().map_or(1, |t| t.bm) as usize)
    }

    fn launch_dims(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        _opts: &RunOptions,
        _device: &DeviceInfo,
    ) -> Result<LaunchDims, String> {
        let t = tile(kernel)?;
        Ok((
            (blocks(problem.n, t.bn)?, blocks(problem.m, t.bm)?, 1),
            (t.threads, 1, 1),
        ))
    }

    fn extra_args(&self, _kernel: &KernelSpec, _opts: &RunOptions) -> ExtraArgs {
        ExtraArgs {
            planes: Some(PLANES),
            ..ExtraArgs::default()
        }
    }

    /// [`plane_k`].
    fn plane_k(&self, kernel: &KernelSpec, problem: &Problem, sms: u64) -> usize {
        plane_k(kernel, problem, sms)
    }
}

/// The [`Family`] of `ByteSplitTma` kernels (20_wgmma_u8x4_tma.cu): `U8x4`'s planes and shared
/// memory, a persistent grid of min(units, SMs) blocks over (tile, k piece) units, and two tensor
/// maps over the planes.
pub struct U8x4Tma;

/// The fewest k-blocks (of 128 bytes) in one piece of a split-K tile: 512 of K, which with the
/// 10 byte pairs is 40 k-blocks through the pipeline, ten times its four stages.
pub const MIN_PIECE_KBLOCKS: u64 = 4;

/// The split plan's time model (H100 figures; only the ordering matters): one SM's int8
/// tensor-core rate at 128×256 tiles (1,350 TOP/s of u8 products over 132 SMs, the 135 TOP/s
/// of u32 at 8192³ times ten), the DRAM bandwidth, and the second launch's fixed cost.
const SM_OPS: f64 = 1.0e13;
const DRAM_BYTES_PER_S: f64 = 3.0e12;
const REDUCE_LAUNCH_S: f64 = 3e-6;

impl U8x4Tma {
    /// The BM×BN tiles of C.
    pub fn tiles(kernel: &KernelSpec, problem: &Problem) -> u64 {
        c_tiles(kernel, problem)
    }

    /// The k pieces of each tile on `problem` with `sms` SMs; 1 (no split) unless the tiles are
    /// for at most half the SMs. Then the pieces fill about one wave, each at least
    /// [`MIN_PIECE_KBLOCKS`] of the planes' k-blocks, evened out so that no piece is empty, and
    /// only where the partial slabs cost less than the idle SMs they put to work.
    pub fn splits(kernel: &KernelSpec, problem: &Problem, sms: u64) -> u64 {
        let Some(t) = kernel.tc_tile() else {
            return 1;
        };
        super::split_k_plan(
            U8x4Tma::tiles(kernel, problem),
            (padded_k(problem.k) / t.bk as usize) as u64,
            sms,
            MIN_PIECE_KBLOCKS,
            |s| U8x4Tma::estimate(kernel, problem, sms, s),
        )
    }

    /// The split plan's time for `splits` pieces a tile: waves of (tile, piece) units of ten
    /// u8 GEMMs over the piece's share of the planes' K, plus the slabs written and read back
    /// and the reduction's launch.
    fn estimate(kernel: &KernelSpec, problem: &Problem, sms: u64, splits: u64) -> f64 {
        let Some(t) = kernel.tc_tile() else {
            return f64::INFINITY;
        };
        let units = U8x4Tma::tiles(kernel, problem) * splits;
        let piece_k = padded_k(problem.k).div_ceil(splits as usize) as f64;
        let unit_s = 10.0 * 2.0 * t.bm as f64 * t.bn as f64 * piece_k / SM_OPS;
        let compute = units.div_ceil(sms.max(1)) as f64 * unit_s;
        let split = if splits > 1 {
            let slabs = 2.0 * splits as f64 * (problem.m * problem.n) as f64 * 4.0;
            slabs / DRAM_BYTES_PER_S + REDUCE_LAUNCH_S
        } else {
            0.0
        };
        compute + split
    }
}

impl Family for U8x4Tma {
    fn name(&self) -> &'static str {
        "u8x4-tma"
    }

    fn tile_shared_bytes(
        &self,
        kernel: &KernelSpec,
        dtype: DType,
        opts: &RunOptions,
    ) -> Option<(String, usize)> {
        U8x4.tile_shared_bytes(kernel, dtype, opts)
    }

    fn launch_dims(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        _opts: &RunOptions,
        device: &DeviceInfo,
    ) -> Result<LaunchDims, String> {
        pre_split_launch(kernel, problem, device, PLANES.count, |sms| {
            U8x4Tma::splits(kernel, problem, sms)
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

    /// [`plane_k`].
    fn plane_k(&self, kernel: &KernelSpec, problem: &Problem, sms: u64) -> usize {
        plane_k(kernel, problem, sms)
    }

    /// [`U8x4Tma::splits`].
    fn splits(&self, kernel: &KernelSpec, problem: &Problem, sms: u64) -> u64 {
        U8x4Tma::splits(kernel, problem, sms)
    }

    fn reduce_entry(&self) -> &'static str {
        "u8x4_reduce"
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

/// The byte split computed on the CPU the way the u8x4 kernels compute it: the 10 byte products
/// a_i·b_j with i + j ≤ 3 as u8·u8 GEMMs into wrapping i32 accumulators, one per shift group,
/// then C = Σ_s acc_s << 8s (mod 2^32). `a` is m×k and `b` k×n, row-major. A model of the
/// kernels' arithmetic for the tests; [`crate::cpu`]'s reference is the product itself.
pub fn byte_split_product(a: &[u32], b: &[u32], m: usize, n: usize, k: usize) -> Vec<u32> {
    let byte = |x: u32, i: usize| ((x >> (8 * i)) & 0xff) as i32;
    let mut c = vec![0u32; m * n];
    for r in 0..m {
        for col in 0..n {
            let mut out = 0u32;
            for s in 0..4 {
                let mut acc = 0i32;
                for i in 0..=s {
                    let j = s - i;
                    for l in 0..k {
                        let p = byte(a[r * k + l], i) * byte(b[l * n + col], j);
                        acc = acc.wrapping_add(p);
                    }
                }
                out = out.wrapping_add((acc as u32) << (8 * s));
            }
            c[r * n + col] = out;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapping_product(a: &[u32], b: &[u32], m: usize, n: usize, k: usize) -> Vec<u32> {
        let mut c = vec![0u32; m * n];
        for r in 0..m {
            for col in 0..n {
                c[r * n + col] = (0..k).fold(0u32, |acc, l| {
                    acc.wrapping_add(a[r * k + l].wrapping_mul(b[l * n + col]))
                });
            }
        }
        c
    }

    /// A small xorshift: deterministic random u32s without a dependency.
    fn random(len: usize, mut seed: u64) -> Vec<u32> {
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                (seed >> 16) as u32
            })
            .collect()
    }

    /// The identity the kernels rest on: the 10 byte GEMMs with wrapping i32 accumulators,
    /// shifted and summed, are the wrapping u32 product — on random inputs and on all-0xFF bytes,
    /// at K = 70,000, past the 66,051 products of 255·255 that still fit 32 bits (every
    /// accumulator wraps, and the wraps must cancel out).
    #[test]
    fn byte_split_is_the_wrapping_product() {
        let k = 70_000;
        // 66,051 products of 255·255 still fit 32 unsigned bits, 66,052 do not; the s32
        // accumulators pass 2^31 − 1 already at 33,026.
        let max = 255u64 * 255;
        assert!(max * 66_051 <= u32::MAX as u64 && max * 66_052 > u32::MAX as u64);
        assert!(max * 33_025 <= i32::MAX as u64 && max * 33_026 > i32::MAX as u64);
        for (a, b, m, n) in [
            (random(3 * k, 1), random(k * 2, 2), 3, 2),
            (vec![u32::MAX; 2 * k], vec![u32::MAX; k * 2], 2, 2),
            (vec![u32::MAX; k], random(k, 3), 1, 1),
        ] {
            let want = wrapping_product(&a, &b, m, n, k);
            assert_eq!(byte_split_product(&a, &b, m, n, k), want);
        }
        // All ones: k·(2^32 − 1)^2 ≡ k (mod 2^32).
        let ones = vec![u32::MAX; k];
        assert_eq!(byte_split_product(&ones, &ones, 1, 1, k), vec![k as u32]);
        // Small odd shapes.
        let (m, n, kk) = (3, 5, 7);
        let (a, b) = (random(m * kk, 4), random(kk * n, 5));
        assert_eq!(
            byte_split_product(&a, &b, m, n, kk),
            wrapping_product(&a, &b, m, n, kk)
        );
    }

    /// 20_wgmma_u8x4_tma.cu's order, modelled with its constants: the 10 pairs from shift group
    /// 3 down to 0 into ONE wrapping i32 accumulator, shifted left by 8 after the last pair of
    /// groups 3, 2 and 1 (Horner), equals the wrapping product — at K = 70,000 (every partial
    /// sum wraps) on all-0xFF and random inputs, and on small odd shapes.
    #[test]
    fn horner_order_of_the_tma_kernel_is_the_wrapping_product() {
        const HPAIR_I: u32 = 1 << 2 | 2 << 4 | 3 << 6 | 1 << 10 | 2 << 12 | 1 << 16;
        const HPAIR_J: u32 = 3 | 2 << 2 | 1 << 4 | 2 << 8 | 1 << 10 | 1 << 14;
        const SHIFT_AFTER: u32 = 1 << 3 | 1 << 6 | 1 << 8;
        // The pairs are the 10 with i + j ≤ 3, each once, in non-increasing i + j.
        let pairs: Vec<(u32, u32)> = (0..10)
            .map(|p| ((HPAIR_I >> (2 * p)) & 3, (HPAIR_J >> (2 * p)) & 3))
            .collect();
        let mut all: Vec<(u32, u32)> = (0..4)
            .flat_map(|i| (0..4 - i).map(move |j| (i, j)))
            .collect();
        let mut sorted = pairs.clone();
        sorted.sort();
        all.sort();
        assert_eq!(sorted, all);
        assert!(pairs.windows(2).all(|w| w[0].0 + w[0].1 >= w[1].0 + w[1].1));
        for p in 0..9u32 {
            let (s, next) = (
                pairs[p as usize].0 + pairs[p as usize].1,
                pairs[p as usize + 1],
            );
            assert_eq!((SHIFT_AFTER >> p) & 1 == 1, next.0 + next.1 < s, "pair {p}");
        }
        let horner = |a: &[u32], b: &[u32], m: usize, n: usize, k: usize| {
            let byte = |x: u32, i: u32| ((x >> (8 * i)) & 0xff) as i32;
            let mut c = vec![0u32; m * n];
            for r in 0..m {
                for col in 0..n {
                    let mut acc = 0i32;
                    for (p, &(i, j)) in pairs.iter().enumerate() {
                        for l in 0..k {
                            acc = acc.wrapping_add(byte(a[r * k + l], i) * byte(b[l * n + col], j));
                        }
                        if (SHIFT_AFTER >> p) & 1 == 1 {
                            acc = ((acc as u32) << 8) as i32;
                        }
                    }
                    c[r * n + col] = acc as u32;
                }
            }
            c
        };
        let k = 70_000;
        for (a, b, m, n) in [
            (random(2 * k, 21), random(k * 3, 22), 2, 3),
            (vec![u32::MAX; k], vec![u32::MAX; k], 1, 1),
            (vec![u32::MAX; k], random(k, 23), 1, 1),
        ] {
            assert_eq!(horner(&a, &b, m, n, k), wrapping_product(&a, &b, m, n, k));
        }
        let (m, n, kk) = (3, 5, 7);
        let (a, b) = (random(m * kk, 24), random(kk * n, 25));
        assert_eq!(horner(&a, &b, m, n, kk), wrapping_product(&a, &b, m, n, kk));
    }

    /// Split-K plans pieces only for tiles on at most half of 132 SMs and K of 8 or more
    /// k-blocks of the planes, fills about one wave with pieces of at least 4 k-blocks, and
    /// leaves no piece empty.
    #[test]
    fn split_k_plans() {
        let kernel = crate::registry::find("wgmma-u8x4-tma").unwrap();
        let splits = |m, n, k| U8x4Tma::splits(kernel, &Problem::new(m, n, k, DType::U32), 132);
        // 8192² is 2,048 tiles: no split; 256×256×65536 is 2 tiles of 512 k-blocks: 66 pieces
        // at most, evened out to 64 of 8.
        assert_eq!(splits(8192, 8192, 8192), 1);
        assert_eq!(splits(256, 256, 65_536), 64);
        // 48×48×100000: one tile, 782 k-blocks, 132 pieces of 6.
        assert_eq!(splits(48, 48, 100_000), 131);
        // Short K: 512 is 4 k-blocks, too few for two pieces.
        assert_eq!(splits(256, 256, 512), 1);
        for (m, n, k) in [
            (48, 48, 100_000),
            (256, 256, 65_536),
            (1000, 1000, 4096),
            (64, 4096, 20_000),
        ] {
            let s = splits(m, n, k);
            let kblocks = padded_k(k).div_ceil(128) as u64;
            let per = kblocks.div_ceil(s);
            assert!(
                s == 1 || per >= MIN_PIECE_KBLOCKS,
                "{m}x{n}x{k}: {s} pieces"
            );
            assert!(
                (s - 1) * per < kblocks,
                "{m}x{n}x{k}: an empty piece of {s}"
            );
        }
    }

    /// The workspace: 4 planes each of A (m×KP) and B^T (n×KP), KP = K rounded up to 128.
    #[test]
    fn plane_workspace() {
        assert_eq!(padded_k(1), 128);
        assert_eq!(padded_k(128), 128);
        assert_eq!(padded_k(70_000), 70_016);
        let p = Problem::new(3, 5, 7, DType::U32);
        assert_eq!(plane_bytes(&p, padded_k(7)), 4 * 128 * 8);
        // The split kernel pads to equal pieces: 48×48×100000 is 782 k-blocks in 131 pieces of
        // 6, 786 k-blocks; the unsplit kernels keep 782.
        let tma = crate::registry::find("wgmma-u8x4-tma").unwrap();
        let long = Problem::new(48, 48, 100_000, DType::U32);
        assert_eq!(plane_k(tma, &long, 132), 131 * 6 * 128);
        assert_eq!(
            plane_k(crate::registry::find("mma-u8x4").unwrap(), &long, 132),
            782 * 128
        );
        assert_eq!(
            plane_k(tma, &Problem::new(8192, 8192, 8192, DType::U32), 132),
            8192
        );
    }
}
