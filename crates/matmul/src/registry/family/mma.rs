//! Tensor cores through mma.sync (14_mma_sync.cu): a BM×BN tile of C per block of
//! `tile.threads`, a cp.async pipeline of STAGES slices of A and B in dynamic shared memory
//! ([`TcTile::shared_bytes`](crate::registry::TcTile::shared_bytes)); grid = (⌈n / BN⌉, ⌈m / BM⌉).

use super::{blocks, Family, LaunchDims};
use crate::dtype::DType;
use crate::problem::Problem;
use crate::registry::DeviceInfo;
use crate::registry::RunOptions;
use crate::registry::{KernelSpec, TcTile};

/// A tensor-core kernel's dynamic shared memory, named by its tile, for
/// [`Family::tile_shared_bytes`].
pub(super) fn tc_shared_bytes(
    kernel: &KernelSpec,
    dtype: DType,
    persistent: bool,
) -> Option<(String, usize)> {
    let t = kernel.tc_tile()?;
    Some((format!("tile {t}"), t.shared_bytes(dtype, persistent)))
}

/// The [`Family`] of `Geometry::Mma` kernels (tensor cores through mma.sync).
pub struct Mma;

/// The tile of a tensor-core kernel.
pub(super) fn tile(kernel: &KernelSpec) -> Result<TcTile, String> {
    kernel
        .tc_tile()
        .ok_or_else(|| format!("kernel `{}` has no tensor-core tile", kernel.name))
}

impl Family for Mma {
    fn name(&self) -> &'static str {
        "mma"
    }

    fn tile_shared_bytes(
        &self,
        kernel: &KernelSpec,
        dtype: DType,
        _opts: &RunOptions,
    ) -> Option<(String, usize)> {
        tc_shared_bytes(kernel, dtype, self.persistent())
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
        let (m, n) = (problem.m, problem.n);
        Ok(((blocks(n, t.bn)?, blocks(m, t.bm)?, 1), (t.threads, 1, 1)))
    }
}
