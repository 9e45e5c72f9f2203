//! The GPU's own limits, measured for the roofline: device-to-device copy bandwidth, the FFMA and
//! IMAD peaks (kernels/ceilings.cu), and cuBLAS's tensor-core rates at a large size.

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use super::libs::Context;
use super::CudaBackend;
use crate::backend::{Backend, Inputs, RunOptions};
use crate::dtype::DType;
use crate::error::Result;
use crate::matrix::{AnyMatrix, Init};
use crate::problem::Problem;

const SOURCE: &str = include_str!("../../../kernels/ceilings.cu");
/// Independent FMA chains per thread in the peak kernels.
const CHAINS: usize = 8;
const THREADS: u32 = 1024;

/// Measured ceilings (best of a few runs each).
#[derive(Debug, Clone)]
pub struct GpuCeilings {
    /// Device-to-device copy, bytes read + written, GB/s.
    pub copy_gbs: f64,
    /// FFMA peak of the CUDA cores, GFLOP/s (one FMA = 2 FLOP).
    pub fp32_gflops: f64,
    /// IMAD peak (32-bit integer multiply-add), GOP/s: the u32 kernels' compute ceiling.
    pub int32_gops: f64,
    /// cuBLAS at a large square size, by dtype name, GFLOP/s.
    pub tensor_gflops: Vec<(String, f64)>,
    /// How they were measured, for the report.
    pub method: String,
}

/// Times `f` (which enqueues work on the backend's stream) with events; best of `repeats`, seconds.
fn best_of(cuda: &CudaBackend, repeats: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let stream = cuda.stream();
    let mut best = f64::INFINITY;
    f()?; // warm-up (and first-use costs)
    for _ in 0..repeats {
        let start = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .ctx(|| "recording an event".into())?;
        f()?;
        let end = stream
            .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .ctx(|| "recording an event".into())?;
        end.synchronize()
            .ctx(|| "waiting for a ceiling measurement".into())?;
        best = best.min(start.elapsed_ms(&end).ctx(|| "reading an event".into())? as f64 / 1e3);
    }
    Ok(best)
}

/// Copy bandwidth with `bytes`-sized buffers, counting bytes read plus bytes written.
fn copy_bandwidth(cuda: &CudaBackend, bytes: usize) -> Result<f64> {
    let stream = cuda.stream();
    let src: CudaSlice<u8> = stream
        .alloc_zeros(bytes)
        .ctx(|| format!("allocating {bytes} bytes"))?;
    let mut dst: CudaSlice<u8> = stream
        .alloc_zeros(bytes)
        .ctx(|| format!("allocating {bytes} bytes"))?;
    let secs = best_of(cuda, 5, || {
        stream
            .memcpy_dtod(&src, &mut dst)
            .ctx(|| "device-to-device copy".into())
    })?;
    Ok(2.0 * bytes as f64 / secs / 1e9)
}

/// FFMA or IMAD peak: one wave of 2 blocks of 1024 threads per SM, `iters` × CHAINS multiply-adds
/// each, 2 operations per multiply-add. GFLOP/s or GOP/s.
fn peak(cuda: &CudaBackend, entry: &str, iters: i32) -> Result<f64> {
    let func = cuda.load_function(
        "ceilings.cu",
        SOURCE,
        &[("CHAINS".into(), CHAINS.to_string())],
        entry,
    )?;
    let blocks = cuda.info().sm_count * 2;
    let threads = (blocks * THREADS) as usize;
    let stream = cuda.stream();
    let mut out: CudaSlice<u32> = stream
        .alloc_zeros(threads)
        .ctx(|| "allocating the ceiling output".into())?;
    let cfg = LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let is_float = entry == "fma_peak";
    let secs = best_of(cuda, 3, || {
        let mut launch = stream.launch_builder(&func);
        launch.arg(&mut out).arg(&iters);
        // Multiplier and addend chosen so the chains neither overflow nor collapse to a constant.
        let (fb, fc, ub, uc) = (0.999_999f32, 1e-7f32, 1_664_525u32, 1_013_904_223u32);
        if is_float {
            launch.arg(&fb).arg(&fc);
        } else {
            launch.arg(&ub).arg(&uc);
        }
        // SAFETY: the arguments match the kernel's signature (out has one slot per thread).
        unsafe { launch.launch(cfg) }
            .map(|_| ())
            .ctx(|| format!("launching {entry}"))
    })?;
    Ok(2.0 * CHAINS as f64 * iters as f64 * threads as f64 / secs / 1e9)
}

/// cuBLAS's rate for `dtype` at n³, GFLOP/s (median of a few launches).
fn cublas_rate(cuda: &CudaBackend, dtype: DType, n: usize) -> Result<f64> {
    let kernel = crate::registry::find("cublas")?;
    let problem = Problem::square(n, dtype);
    let inputs = [Inputs {
        a: AnyMatrix::generate(dtype, n, n, Init::Random { seed: 1 })?,
        b: AnyMatrix::generate(dtype, n, n, Init::Random { seed: 2 })?,
    }];
    let mut times = cuda.time(kernel, &problem, &inputs, 2, 7, RunOptions::default())?;
    times.sort_by(f64::total_cmp);
    Ok(problem.flops() / times[times.len() / 2] / 1e9)
}

/// Measures every ceiling. `quick` uses smaller buffers, shorter loops and n = 4096 for cuBLAS
/// (n = 8192 otherwise).
pub fn measure(cuda: &CudaBackend, quick: bool) -> Result<GpuCeilings> {
    let (copy_bytes, iters, n) = if quick {
        (256 << 20, 1 << 14, 4096)
    } else {
        (1 << 30, 1 << 16, 8192)
    };
    let copy_gbs = copy_bandwidth(cuda, copy_bytes)?;
    let fp32_gflops = peak(cuda, "fma_peak", iters)?;
    let int32_gops = peak(cuda, "imad_peak", iters)?;
    let tensor_gflops = [DType::Tf32, DType::Bf16, DType::F16]
        .into_iter()
        .map(|d| Ok((d.name().to_string(), cublas_rate(cuda, d, n)?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(GpuCeilings {
        copy_gbs,
        fp32_gflops,
        int32_gops,
        tensor_gflops,
        method: format!(
            "device-to-device copy of {} MiB (read + write), FFMA/IMAD loops ({CHAINS} chains, {iters} iterations, 2 blocks x {THREADS} threads per SM), cuBLAS at n = {n}",
            copy_bytes >> 20
        ),
    })
}
