//! The seed kernels (01_row_global.cu … 09_tiled_async.cu): one thread per row of C, per element,
//! per element of a row segment, or per element of a square tile, the geometry and its size fixed
//! by the registry entry (a tile edge may be overridden by `RunOptions::tile`).

use super::{blocks, Family, LaunchDims};
use crate::problem::Problem;
use crate::registry::DeviceInfo;
use crate::registry::RunOptions;
use crate::registry::{Geometry, KernelSpec};

/// The [`Family`] of the seed geometries (`RowPerThread`, `ElementPerThread`, `RowSegment`,
/// `Tile2d`, `SingleBlock`): one output per thread, no extra arguments.
pub struct Seed;

/// The geometry of `kernel`'s CUDA source.
fn geometry(kernel: &KernelSpec) -> Result<Geometry, String> {
    kernel
        .cuda_source()
        .map(|s| s.geometry)
        .ok_or_else(|| format!("kernel `{}` has no CUDA source", kernel.name))
}

impl Family for Seed {
    fn name(&self) -> &'static str {
        "seed"
    }

    /// A `Tile2d` or `SingleBlock` kernel's TILE: 1 to 32 (TILE² threads per block).
    fn check(&self, kernel: &KernelSpec, opts: &RunOptions) -> Result<(), String> {
        if let Some(t) = kernel.tile(opts) {
            if t == 0 || t > 32 {
                return Err(format!("TILE {t} needs {} threads per block; TILE must be 1 to 32 (at most 1024 threads)", t as u64 * t as u64));
            }
        }
        Ok(())
    }

    fn grid_rows(&self, kernel: &KernelSpec, problem: &Problem, opts: &RunOptions) -> usize {
        match geometry(kernel) {
            Ok(Geometry::RowSegment { .. }) => problem.m,
            Ok(Geometry::Tile2d { .. }) => {
                problem.m.div_ceil(kernel.tile(opts).unwrap_or(1) as usize)
            }
            _ => 1,
        }
    }

    /// `RowPerThread`: ⌈m / threads⌉ blocks; `ElementPerThread`: ⌈m·n / threads⌉;
    /// `RowSegment`: (⌈n / threads⌉, m); `Tile2d`: (⌈n / TILE⌉, ⌈m / TILE⌉) blocks of TILE×TILE;
    /// `SingleBlock`: one block of TPB×TPB.
    fn launch_dims(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: &RunOptions,
        device: &DeviceInfo,
    ) -> Result<LaunchDims, String> {
        let (m, n) = (problem.m, problem.n);
        let square = |t: u32| -> Result<u32, String> {
            let threads = t as u64 * t as u64;
            if t == 0 || threads > device.max_threads_per_block as u64 {
                return Err(format!(
                    "TILE {t} needs {threads} threads per block; the device allows 1 to {}",
                    device.max_threads_per_block
                ));
            }
            Ok(t)
        };
        Ok(match geometry(kernel)? {
            Geometry::RowPerThread { threads } => ((blocks(m, threads)?, 1, 1), (threads, 1, 1)),
            Geometry::ElementPerThread { threads } => {
                ((blocks(m * n, threads)?, 1, 1), (threads, 1, 1))
            }
            Geometry::RowSegment { threads } => {
                ((blocks(n, threads)?, blocks(m, 1)?, 1), (threads, 1, 1))
            }
            Geometry::Tile2d { tile: t } => {
                let t = square(opts.tile.unwrap_or(t))?;
                ((blocks(n, t)?, blocks(m, t)?, 1), (t, t, 1))
            }
            Geometry::SingleBlock { tpb } => {
                let t = square(opts.tile.unwrap_or(tpb))?;
                ((1, 1, 1), (t, t, 1))
            }
            other => return Err(format!("{other:?} is not a seed kernel's geometry")),
        })
    }
}
