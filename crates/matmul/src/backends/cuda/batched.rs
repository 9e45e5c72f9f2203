//! Strided batches in one launch: the kernels with a batched build
//! ([`crate::registry::CudaSource::batched`]) compiled with `BATCHED=1`, and cuBLAS's
//! `cublasGemmStridedBatchedEx`.
//!
//! - 13_multistage.cu (multistage, multistage-raster): the grid's z is the product; each block
//!   moves A, B and C to its product's and runs as one product's block (no split tail, no
//!   split-K: a batch brings its own parallelism).
//! - 15_wgmma.cu (the wgmma kernels): the persistent grid walks the tiles of every product; the
//!   tensor maps have the product as a third dimension (`tma::maps_of_batch`).
//!
//! A batch these cannot take runs product by product (the plan's loop): where the strides are
//! not 16-byte multiples (the kernels' vector and TMA accesses assume aligned matrices), where a
//! TMA kernel would need staged copies of the operands, and for every other kernel.

use std::sync::Arc;

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::compile::Build;
use super::launch::{int_args, launch_config};
use super::libs::Context;
use super::staging::{tma_reads_rows, Pitched};
use super::tma::{self, TensorMap};
use super::{cublas, CudaBackend, Loaded};
use crate::backends::Batch;
use crate::error::{Error, Result, Unsupported};
use crate::family::wgmma::Wgmma;
use crate::problem::Problem;
use crate::registry::{Implementation, KernelSpec, RunOptions, TcTile};

/// How a plan runs its whole batch at once.
pub(crate) enum BatchedLauncher {
    /// A kernel's batched build: its loaded entry, its launch configuration, and for a wgmma
    /// kernel its tile (the maps follow the usual arguments).
    Kernel {
        loaded: Arc<Loaded>,
        config: LaunchConfig,
        tile: Option<TcTile>,
    },
    /// `cublasGemmStridedBatchedEx`.
    Cublas,
}

impl CudaBackend {
    /// The one-launch form of `batch` of `kernel` on `problem`, or None where it runs product by
    /// product (module docs).
    pub(crate) fn batched_launcher(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: &RunOptions,
        batch: &Batch,
    ) -> Result<Option<BatchedLauncher>> {
        if batch.count < 2 {
            return Ok(None);
        }
        match &kernel.implementation {
            Implementation::Cublas => {
                self.launcher(kernel, problem, opts)?; // the handle
                return Ok(Some(BatchedLauncher::Cublas));
            }
            Implementation::Cuda(src) if src.batched => {}
            _ => return Ok(None),
        }
        let (elem, c_elem) = (problem.dtype.input_bytes(), problem.c_dtype().input_bytes());
        let aligned = |stride: usize, bytes: usize| (stride * bytes).is_multiple_of(16);
        if !aligned(batch.stride_a, elem)
            || !aligned(batch.stride_b, elem)
            || !aligned(batch.stride_c, c_elem)
        {
            return Ok(None);
        }
        let tile = kernel.tc_tile();
        let rows_readable = |(_, cols): (usize, usize)| tma_reads_rows(cols, elem);
        if tile.is_some()
            && !(rows_readable(problem.a_stored()) && rows_readable(problem.b_stored()))
        {
            return Ok(None);
        }
        let unsupported = |rule: String| Unsupported::error(kernel.name, problem, rule);
        let mut config = launch_config(kernel, problem, opts, &self.info)?;
        let loaded = self.load_kernel(kernel, problem.types(), opts, Build::Batched)?;
        self.allow_dynamic_shared(&loaded, config.shared_mem_bytes as usize)?;
        match tile {
            Some(t) => {
                // Persistent: the units of every product, in whole clusters that fit at once.
                let units = Wgmma::units(kernel, problem).map_err(unsupported)?;
                if units.saturating_mul(batch.count as u64) > i32::MAX as u64 {
                    return Ok(None); // the kernel counts every product's units in an int
                }
                let cluster = t.cluster.max(1);
                let sms = self.info.sm_count as u64;
                let mut grid = Wgmma::grid(units * batch.count as u64, cluster as u64, sms);
                if cluster > 1 {
                    let fit = loaded
                        .func
                        .occupancy_max_active_clusters(config, &self.stream)
                        .ctx(|| format!("cuOccupancyMaxActiveClusters for {}", kernel.name))?;
                    if fit == 0 {
                        return Ok(None);
                    }
                    grid = grid.min(fit * cluster);
                }
                config.grid_dim = (grid, 1, 1);
            }
            None => {
                // One product's grid (launch_dims: no split-K pieces), the batch as its z.
                let (grid, _) = kernel
                    .family()
                    .ok_or_else(|| {
                        Error::Invalid(format!("kernel `{}` has no family", kernel.name))
                    })?
                    .launch_dims(kernel, problem, opts, &self.info)
                    .map_err(unsupported)?;
                let Ok(z) = u32::try_from(batch.count) else {
                    return Ok(None);
                };
                if z > 65_535 {
                    return Ok(None); // CUDA's gridDim.z
                }
                config.grid_dim = (grid.0, grid.1, z);
            }
        }
        Ok(Some(BatchedLauncher::Kernel {
            loaded,
            config,
            tile,
        }))
    }

    /// The tensor maps of a batched wgmma launch over buffers at `a`, `b` and `c` (made once
    /// per set of addresses by the plan).
    pub(crate) fn batched_maps(
        &self,
        launcher: &BatchedLauncher,
        problem: &Problem,
        (a, b, c): (u64, u64, u64),
        batch: &Batch,
    ) -> Result<Option<[TensorMap; 3]>> {
        let BatchedLauncher::Kernel {
            tile: Some(tile), ..
        } = launcher
        else {
            return Ok(None);
        };
        let pitched = |ptr: u64, (_, cols): (usize, usize)| Pitched { ptr, pitch: cols };
        let (pa, pb) = (
            pitched(a, problem.a_stored()),
            pitched(b, problem.b_stored()),
        );
        tma::maps_of_batch(problem, tile, pa, pb, c, Some(batch)).map(Some)
    }

    /// Enqueues the whole batch: A, B and C at `a`, `b` and `c` holding it, `maps` from
    /// [`CudaBackend::batched_maps`].
    pub(crate) fn launch_batched(
        &self,
        launcher: &BatchedLauncher,
        problem: &Problem,
        (a, b, c): (u64, u64, u64),
        batch: &Batch,
        maps: Option<&[TensorMap; 3]>,
    ) -> Result<()> {
        let (loaded, config, tile) = match launcher {
            BatchedLauncher::Cublas => {
                return self
                    .with_blas(|blas| cublas::gemm_batched(blas, problem, a, b, c, Some(batch)));
            }
            BatchedLauncher::Kernel {
                loaded,
                config,
                tile,
            } => (loaded, config, tile),
        };
        let (sa, sb) = (problem.a_strides(), problem.b_strides());
        let args = int_args(problem, [sa.row, sa.col, sb.row, sb.col]);
        let mut builder = self.stream.launch_builder(&loaded.func);
        builder.arg(&a).arg(&b).arg(&c);
        for v in &args {
            builder.arg(v);
        }
        let tiles = (config.grid_dim.0 * config.grid_dim.1) as i32;
        let (splits, partial) = (1i32, 0u64);
        match (tile, maps) {
            (Some(_), Some([map_a, map_b, map_c])) => {
                builder.arg(map_a).arg(map_b).arg(map_c);
                builder.arg(&splits).arg(&partial);
            }
            (None, _) => {
                builder.arg(&tiles);
            }
            (Some(_), None) => {
                return Err(Error::Invalid(format!(
                    "the batched launch of {} needs its tensor maps",
                    loaded.entry
                )))
            }
        }
        let count = batch.count as i32; // batched_launcher: at most gridDim.z, or units · count in an int
        let long = |v: usize| v as i64; // Batch::check bounds every offset
        let (sa, sb, sc) = (
            long(batch.stride_a),
            long(batch.stride_b),
            long(batch.stride_c),
        );
        builder.arg(&count).arg(&sa).arg(&sb).arg(&sc);
        // SAFETY: the batched builds' ABI: three pointers, seven ints, then multistage's tiles
        // it computes (all of one product's grid) or wgmma's three tensor maps, one k piece and
        // no workspace; then the batch's count and its three strides in elements. The buffers
        // hold the batch (Batch::check_operands), the maps were made for them.
        unsafe { builder.launch(*config) }
            .map(|_| ())
            .ctx(|| format!("launching {} (batched) with {config:?}", loaded.entry))
    }
}
