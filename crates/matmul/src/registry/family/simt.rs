//! The SIMT ladder (10_blocktile.cu … 13_multistage.cu): a BM×BN tile of C per block of
//! [`Tiling::threads`] threads, the tiles of A and B staged in dynamic shared memory; grid =
//! (⌈n / BN⌉, ⌈m / BM⌉). The tiling is the registry's or `RunOptions::tiling` (`matmul tune`).
//! A split-tail kernel ([`CudaSource::split_tail`](crate::registry::CudaSource::split_tail)) takes
//! one more argument, the tiles its main entry computes whole.

use super::{blocks, ExtraArgs, Family, LaunchDims};
use crate::dtype::DType;
use crate::problem::{Op, Problem};
use crate::registry::DeviceInfo;
use crate::registry::RunOptions;
use crate::registry::{KernelSpec, Tiling};

/// The [`Family`] of `BlockTile` kernels whose threads load their tiles themselves.
pub struct Simt;

/// The tiling `kernel` runs with: the override in `opts`, else the registry's.
pub(super) fn tiling(kernel: &KernelSpec, opts: &RunOptions) -> Result<Tiling, String> {
    kernel
        .tiling(opts)
        .ok_or_else(|| format!("kernel `{}` has no tiling", kernel.name))
}

/// The dynamic shared memory of tiling `t` with `dtype` inputs: [`Tiling::shared_elems`] elements.
pub(super) fn shared_bytes(t: &Tiling, dtype: DType) -> usize {
    t.shared_elems() as usize * dtype.input_bytes()
}

impl Family for Simt {
    fn name(&self) -> &'static str {
        "simt"
    }

    /// [`KernelSpec::check_tiling`].
    fn check(&self, kernel: &KernelSpec, opts: &RunOptions) -> Result<(), String> {
        match kernel.tiling(opts) {
            Some(t) => kernel.check_tiling(&t),
            None => Ok(()),
        }
    }

    fn tile_shared_bytes(
        &self,
        kernel: &KernelSpec,
        dtype: DType,
        opts: &RunOptions,
    ) -> Option<(String, usize)> {
        let t = kernel.tiling(opts)?;
        Some((format!("tiling {t}"), shared_bytes(&t, dtype)))
    }

    fn grid_rows(&self, kernel: &KernelSpec, problem: &Problem, opts: &RunOptions) -> usize {
        problem
            .m
            .div_ceil(kernel.tiling(opts).map_or(1, |t| t.bm) as usize)
    }

    fn launch_dims(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: &RunOptions,
        _device: &DeviceInfo,
    ) -> Result<LaunchDims, String> {
        let t = tiling(kernel, opts)?;
        kernel.check_tiling(&t)?;
        let (m, n) = (problem.m, problem.n);
        Ok(((blocks(n, t.bn)?, blocks(m, t.bm)?, 1), (t.threads(), 1, 1)))
    }

    fn extra_args(&self, kernel: &KernelSpec, opts: &RunOptions) -> ExtraArgs {
        let split = kernel.cuda_source().is_some_and(|s| s.split_tail);
        ExtraArgs {
            planes: None,
            plane_maps: false,
            split_tail: kernel.tiling(opts).filter(|_| split),
            split_k: false,
            tensor_maps: None,
        }
    }
}

/// A SIMT kernel's operand is staged (copied padded, or transposed: the CUDA backend's
/// `staging.rs`) only where the copy is cheap next to the product: a copy reads and writes the
/// operand once, 8 bytes an element of A (m×k) against 2·m·n·k FLOPs, so at an H100's 3 TB/s and
/// 50 TFLOP/s it costs about 67/n of the kernel's time (67/m for B). From n (m for B) = 512 on,
/// under 1/8; below it the kernel reads the operand as stored (4-byte copies), which measured
/// faster on small-M shapes (127×4099×8191 f32: 364 µs unstaged, 440 µs with B staged; cuBLAS
/// 199 µs).
pub const STAGE_MIN_OTHER_SIDE: usize = 512;

/// Whether a SIMT kernel that reads 16-byte rows (13_multistage.cu) stages `problem`'s A (`a`)
/// or B: the other operand's free side is at least [`STAGE_MIN_OTHER_SIDE`], and the operand is
/// transposed or its stored rows are not 16-byte multiples.
pub fn stages_operand(problem: &Problem, a: bool) -> bool {
    let (op, (_, cols), other) = if a {
        (problem.op_a, problem.a_stored(), problem.n)
    } else {
        (problem.op_b, problem.b_stored(), problem.m)
    };
    other >= STAGE_MIN_OTHER_SIDE
        && (op == Op::T || !(cols * problem.dtype.input_bytes()).is_multiple_of(16))
}
