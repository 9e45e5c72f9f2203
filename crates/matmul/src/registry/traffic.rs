//! The roofline's traffic model: the global-memory bytes a kernel's structure predicts for a
//! problem, from which its arithmetic intensity is computed.

use serde::Serialize;

use super::types::KernelSpec;
use crate::problem::Problem;
use crate::registry::RunOptions;

/// A kernel's documented global-memory traffic model: what the roofline's arithmetic intensity
/// is computed from (seed 004 does this for naive: 2·K loads per output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Traffic {
    /// Each output reads a row of op(A) and a column of op(B): 2·K loads, plus one store.
    RowTimesColumn,
    /// As `RowTimesColumn`, and every term also reads and writes C (K loads + K stores more).
    AccumulateInGlobal,
    /// One operand's K elements per output, the other's shared by `threads` outputs:
    /// K + K/threads loads per output.
    OnePacked {
        /// Outputs that share one load of the packed operand (the block's threads).
        threads: u32,
    },
    /// Tiles of TILE (the geometry's, or the override): 2·K/TILE loads per output.
    Tiled,
    /// BM×BN block tiles: K/BN loads of A and K/BM of B per output.
    BlockTiled,
    /// Each input element read once and C written once: the minimum (libraries, blocked CPU code).
    Minimal,
}

impl KernelSpec {
    /// Global-memory bytes the traffic model predicts for `problem` (before any cache helps),
    /// with the tile or tiling of `opts` where it overrides the registry's.
    pub fn model_bytes(&self, problem: &Problem, opts: &RunOptions) -> f64 {
        let (m, n, k) = (problem.m as f64, problem.n as f64, problem.k as f64);
        let (elem, out) = (
            problem.dtype.input_bytes() as f64,
            problem.c_dtype().input_bytes() as f64,
        );
        let outputs = m * n;
        let loads_per_output = match self.traffic {
            Traffic::RowTimesColumn => 2.0 * k,
            Traffic::AccumulateInGlobal => 2.0 * k + k * out / elem,
            Traffic::OnePacked { threads } => k + k / threads as f64,
            Traffic::Tiled => 2.0 * k / self.tile(opts).unwrap_or(1).max(1) as f64,
            Traffic::BlockTiled => match self.block_tile(opts) {
                Some((bm, bn)) => k / bn.max(1) as f64 + k / bm.max(1) as f64,
                None => 2.0 * k,
            },
            Traffic::Minimal => return problem.min_bytes(),
        };
        let stores = match self.traffic {
            Traffic::AccumulateInGlobal => k,
            _ => 1.0,
        };
        outputs * (loads_per_output * elem + stores * out)
    }
}
