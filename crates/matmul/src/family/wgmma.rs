//! Hopper's tensor cores through TMA and wgmma (15_wgmma.cu, 16_wgmma_tf32.cu; sm_90a): a
//! persistent grid of min(work units, SMs) blocks of `tile.threads` (producer and consumer
//! warpgroups) that walk the BM×BN tiles of D, in clusters of `tile.cluster` blocks that share
//! the B side by TMA multicast. A and B (and C, for the staged epilogue) reach the kernel as three
//! TMA tensor maps after the usual arguments (`cuda/tma.rs`). D is C, or C^T where the kernel
//! swaps the operands ([`WgmmaTf32Orientation`]).

use serde::Serialize;

use super::mma::{tc_shared_bytes, tile};
use super::{blocks, Boxes, ExtraArgs, Family, LaunchDims};
use crate::backend::RunOptions;
use crate::cuda::DeviceInfo;
use crate::dtype::DType;
use crate::problem::{Op, Problem};
use crate::registry::KernelSpec;

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
        let (m, n) = (problem.m, problem.n);
        // Persistent: one block per SM (or per tile when there are fewer tiles), in
        // whole clusters of `t.cluster` blocks that take vertically adjacent tiles of D.
        // D is C, or C^T when both kernels swap the operands (op(A) = op(B) = N:
        // tma::swaps_operands); then the tiles run BM along N and BN along M. (tf32's
        // op(A) = T with op(B) = N has no orientation; can_run refuses it before this.)
        let c = t.cluster.max(1) as u64;
        let (rows, cols) = WgmmaTf32Orientation::of(problem).map_or((m, n), |o| o.d_shape(problem));
        let units = (blocks(rows, t.bm)? as u64).div_ceil(c) * blocks(cols, t.bn)? as u64;
        let clusters = units.min((device.sm_count as u64 / c).max(1));
        Ok((
            (u32::try_from(clusters * c).unwrap_or(u32::MAX), 1, 1),
            (t.threads, 1, 1),
        ))
    }

    fn persistent(&self) -> bool {
        true
    }

    fn extra_args(&self, kernel: &KernelSpec, _opts: &RunOptions) -> ExtraArgs {
        ExtraArgs {
            split_tail: None,
            tensor_maps: kernel.tc_tile().map(Boxes::Tc),
        }
    }
}
