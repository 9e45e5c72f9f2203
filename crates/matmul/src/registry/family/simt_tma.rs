//! The SIMT ladder fed by TMA (17_simt_tma.cu): [`Simt`]'s tiles and grid, with A's and B's
//! tiles brought into an mbarrier ring by TMA. The tensor maps follow the usual arguments, boxed
//! by the tiling (`cuda/tma.rs`, `simt_maps`); its tilings also follow
//! [`TMA_TILING_RULE`](crate::registry::TMA_TILING_RULE) ([`KernelSpec::check_tiling`]).

use super::simt::{self, Simt};
use super::{Boxes, ExtraArgs, Family, LaunchDims};
use crate::dtype::DType;
use crate::problem::Problem;
use crate::registry::DeviceInfo;
use crate::registry::KernelSpec;
use crate::registry::RunOptions;

/// The [`Family`] of `BlockTile` kernels whose tiles arrive by TMA
/// ([`CudaSource::tma_tiles`](crate::registry::CudaSource::tma_tiles)).
pub struct SimtTma;

impl Family for SimtTma {
    fn name(&self) -> &'static str {
        "simt-tma"
    }

    fn check(&self, kernel: &KernelSpec, opts: &RunOptions) -> Result<(), String> {
        Simt.check(kernel, opts)
    }

    /// [`Simt`]'s, with the STAGES mbarriers and slack to align the boxes to 128 bytes.
    fn tile_shared_bytes(
        &self,
        kernel: &KernelSpec,
        dtype: DType,
        opts: &RunOptions,
    ) -> Option<(String, usize)> {
        let t = kernel.tiling(opts)?;
        Some((
            format!("tiling {t}"),
            simt::shared_bytes(&t, dtype) + 8 * t.stages as usize + 128,
        ))
    }

    fn grid_rows(&self, kernel: &KernelSpec, problem: &Problem, opts: &RunOptions) -> usize {
        Simt.grid_rows(kernel, problem, opts)
    }

    fn launch_dims(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: &RunOptions,
        device: &DeviceInfo,
    ) -> Result<LaunchDims, String> {
        Simt.launch_dims(kernel, problem, opts, device)
    }

    fn extra_args(&self, kernel: &KernelSpec, opts: &RunOptions) -> ExtraArgs {
        ExtraArgs {
            planes: None,
            plane_maps: false,
            split_tail: None,
            split_k: false,
            tensor_maps: kernel.tiling(opts).map(Boxes::Simt),
        }
    }
}
