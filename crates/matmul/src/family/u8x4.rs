//! Exact u32 on the int8 tensor cores by the byte split (18_mma_u8x4.cu, `Geometry::ByteSplit`):
//! before each launch a pre-pass (`u8x4_split`, u8x4_split.cuh) writes A and B^T as 4 byte planes
//! each, K padded to [`BYTE_PLANE_K_PAD`], into a workspace; the main kernel computes a BM×BN tile
//! of C per block of `tile.threads` from the planes, with STAGES·(BM + BN)·BK + 1024 bytes of
//! dynamic shared memory; grid = (⌈n / BN⌉, ⌈m / BM⌉). Its extra arguments are the planes' address and KP.

use super::mma::tile;
use super::{blocks, ExtraArgs, Family, LaunchDims};
use crate::backend::RunOptions;
use crate::cuda::DeviceInfo;
use crate::dtype::DType;
use crate::problem::Problem;
use crate::registry::KernelSpec;

/// The multiple K is padded to in the byte planes (u8x4_split.cuh's `U8X4_KPAD`): every BK of
/// the main kernels divides it, so they have no K edge.
pub const BYTE_PLANE_K_PAD: usize = 128;

/// The byte planes' K extent for a problem of depth `k`: k rounded up to [`BYTE_PLANE_K_PAD`].
pub fn padded_k(k: usize) -> usize {
    k.next_multiple_of(BYTE_PLANE_K_PAD)
}

/// Bytes of the byte-plane workspace of `problem`: 4 planes of m×KP (A) and 4 of n×KP (B^T).
pub fn plane_bytes(problem: &Problem) -> usize {
    4 * padded_k(problem.k) * (problem.m + problem.n)
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
            byte_planes: true,
            ..ExtraArgs::default()
        }
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

    /// The workspace: 4 planes each of A (m×KP) and B^T (n×KP), KP = K rounded up to 128.
    #[test]
    fn plane_workspace() {
        assert_eq!(padded_k(1), 128);
        assert_eq!(padded_k(128), 128);
        assert_eq!(padded_k(70_000), 70_016);
        let p = Problem::new(3, 5, 7, DType::U32);
        assert_eq!(plane_bytes(&p), 4 * 128 * 8);
    }
}
