//! Hardware ceilings for the roofline: measured on the CPU here, a datasheet table for known GPUs,
//! and whatever the CUDA side measures for its device.
//!
//! Units: bandwidth in GB/s (10^9 bytes/s), compute in GFLOP/s or GOP/s (10^9 operations/s, one
//! multiply-add counted as 2 operations, as FLOPs = 2·m·n·k counts them).

use std::hint::black_box;
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use matmul::DType;

/// The ceilings of one device from one source (a measurement or a datasheet).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// The device these numbers describe.
    pub device: String,
    /// Main-memory (HBM / DRAM) bandwidth, GB/s.
    pub memory_bandwidth_gbs: Option<f64>,
    /// FP32 (CUDA-core FFMA / CPU SIMD FMA) peak, GFLOP/s.
    pub fp32_gflops: Option<f64>,
    /// INT32 multiply-add peak, GOP/s.
    pub int32_gops: Option<f64>,
    /// Tensor-core peaks by dtype name ("tf32", "bf16", "f16"), dense, GFLOP/s.
    pub tensor: Vec<(String, f64)>,
    /// Where the numbers come from: "datasheet: ..." or "measured: ...".
    pub source: String,
}

impl Ceilings {
    /// The compute roof that bounds `dtype`: fp32 for f32, int32 for u32, the tensor entry for
    /// tf32/bf16/f16 (falling back to fp32 where there is none, as on the CPU). Returns the roof's
    /// name and its value in GFLOP/s (GOP/s).
    pub fn compute_peak(&self, dtype: DType) -> Option<(String, f64)> {
        let fp32 = || self.fp32_gflops.map(|v| ("fp32".to_string(), v));
        match dtype {
            DType::F32 => fp32(),
            DType::U32 => self.int32_gops.map(|v| ("int32".to_string(), v)),
            DType::Tf32 | DType::Bf16 | DType::F16 => self
                .tensor_peak(dtype.name())
                .map(|v| (dtype.name().to_string(), v))
                .or_else(fp32),
        }
    }

    /// The tensor peak named `name`, if listed.
    pub fn tensor_peak(&self, name: &str) -> Option<f64> {
        self.tensor
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }

    /// Every roof with a value, as (name, value): "memory" in GB/s, the rest in GFLOP/s (GOP/s).
    pub fn roofs(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Some(v) = self.memory_bandwidth_gbs {
            out.push(("memory".to_string(), v));
        }
        if let Some(v) = self.fp32_gflops {
            out.push(("fp32".to_string(), v));
        }
        if let Some(v) = self.int32_gops {
            out.push(("int32".to_string(), v));
        }
        out.extend(self.tensor.iter().cloned());
        out
    }
}

/// One row of the datasheet table: matched when every `includes` and no `excludes` substring
/// occurs in the device name (case-insensitive).
#[derive(Debug, Clone, Copy)]
pub struct DatasheetRow {
    /// The device name the ceilings are reported under.
    pub name: &'static str,
    /// Substrings that must all occur in the device name.
    pub includes: &'static [&'static str],
    /// Substrings none of which may occur in the device name.
    pub excludes: &'static [&'static str],
    /// DRAM bandwidth, GB/s.
    pub memory_bandwidth_gbs: f64,
    /// FP32 (FFMA) peak, GFLOP/s.
    pub fp32_gflops: f64,
    /// INT32 (IMAD) peak, GOP/s, where the datasheet gives one.
    pub int32_gops: Option<f64>,
    /// Dense tensor-core peaks by roof name (tf32, bf16, f16), GFLOP/s.
    pub tensor: &'static [(&'static str, f64)],
}

const HOPPER_TENSOR: &[(&str, f64)] =
    &[("tf32", 494_700.0), ("bf16", 989_400.0), ("f16", 989_400.0)];
const AMPERE_TENSOR: &[(&str, f64)] =
    &[("tf32", 156_000.0), ("bf16", 312_000.0), ("f16", 312_000.0)];

/// NVIDIA datasheet figures (dense, no sparsity), most specific rows first.
pub static DATASHEET: &[DatasheetRow] = &[
    DatasheetRow {
        name: "H100 SXM5 80GB (HBM3)",
        includes: &["H100"],
        excludes: &["PCIE", "NVL"],
        memory_bandwidth_gbs: 3_350.0,
        fp32_gflops: 66_900.0,
        int32_gops: Some(33_500.0),
        tensor: HOPPER_TENSOR,
    },
    DatasheetRow {
        name: "H200 SXM 141GB (HBM3e)",
        includes: &["H200"],
        excludes: &["NVL"],
        memory_bandwidth_gbs: 4_800.0,
        fp32_gflops: 66_900.0,
        int32_gops: Some(33_500.0),
        tensor: HOPPER_TENSOR,
    },
    DatasheetRow {
        name: "A100 80GB PCIe",
        includes: &["A100", "80GB", "PCIE"],
        excludes: &[],
        memory_bandwidth_gbs: 1_935.0,
        fp32_gflops: 19_500.0,
        int32_gops: None,
        tensor: AMPERE_TENSOR,
    },
    DatasheetRow {
        name: "A100 SXM4 80GB",
        includes: &["A100", "80GB"],
        excludes: &[],
        memory_bandwidth_gbs: 2_039.0,
        fp32_gflops: 19_500.0,
        int32_gops: None,
        tensor: AMPERE_TENSOR,
    },
    DatasheetRow {
        name: "A100 40GB",
        includes: &["A100"],
        excludes: &[],
        memory_bandwidth_gbs: 1_555.0,
        fp32_gflops: 19_500.0,
        int32_gops: None,
        tensor: AMPERE_TENSOR,
    },
];

impl DatasheetRow {
    /// Whether this row describes `device_name` (case-insensitive substrings).
    pub fn matches(&self, device_name: &str) -> bool {
        let name = device_name.to_ascii_uppercase();
        self.includes
            .iter()
            .all(|s| name.contains(&s.to_ascii_uppercase()))
            && !self
                .excludes
                .iter()
                .any(|s| name.contains(&s.to_ascii_uppercase()))
    }

    /// The row as [`Ceilings`].
    pub fn ceilings(&self) -> Ceilings {
        Ceilings {
            device: self.name.to_string(),
            memory_bandwidth_gbs: Some(self.memory_bandwidth_gbs),
            fp32_gflops: Some(self.fp32_gflops),
            int32_gops: self.int32_gops,
            tensor: self
                .tensor
                .iter()
                .map(|(n, v)| (n.to_string(), *v))
                .collect(),
            source: format!("datasheet: NVIDIA {} (dense)", self.name),
        }
    }
}

/// The datasheet ceilings of the first row whose substrings match `device_name`.
pub fn datasheet(device_name: &str) -> Option<Ceilings> {
    DATASHEET
        .iter()
        .find(|r| r.matches(device_name))
        .map(DatasheetRow::ceilings)
}

/// How hard to measure the CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuCeilingOptions {
    /// Size of each of the two copy buffers, bytes (the default, 256 MiB, is far beyond any L3).
    pub copy_bytes: usize,
    /// Copies / compute runs per measurement; the best is kept.
    pub repeats: usize,
    /// Wall time of one compute run, seconds.
    pub compute_seconds: f64,
}

impl Default for CpuCeilingOptions {
    fn default() -> Self {
        CpuCeilingOptions {
            copy_bytes: 256 << 20,
            repeats: 5,
            compute_seconds: 0.1,
        }
    }
}

impl CpuCeilingOptions {
    /// Small and fast, for tests: the bandwidth is then a cache figure, not a memory one.
    pub fn quick() -> Self {
        CpuCeilingOptions {
            copy_bytes: 4 << 20,
            repeats: 2,
            compute_seconds: 0.01,
        }
    }
}

/// The GPU's own limits, measured now: a device-to-device copy, an FFMA loop, an IMAD loop, and
/// cuBLAS tf32 / bf16 / f16 at a large size (`quick`: smaller and shorter).
pub fn measure_gpu(cuda: &matmul::cuda::CudaBackend, quick: bool) -> matmul::Result<Ceilings> {
    let m = matmul::cuda::ceilings::measure(cuda, quick)?;
    Ok(Ceilings {
        device: cuda.info().name.clone(),
        memory_bandwidth_gbs: Some(m.copy_gbs),
        fp32_gflops: Some(m.fp32_gflops),
        int32_gops: Some(m.int32_gops),
        tensor: m.tensor_gflops,
        source: format!("measured: {}", m.method),
    })
}

/// Measures the CPU's memory-copy bandwidth, FP32 FMA peak and INT32 multiply-add peak on every
/// thread of rayon's pool.
pub fn measure_cpu(opts: &CpuCeilingOptions) -> Ceilings {
    let threads = rayon::current_num_threads();
    let bw = cpu_copy_bandwidth(opts.copy_bytes, opts.repeats);
    let (fp32, fp_isa) = cpu_fp32_peak(opts.compute_seconds, opts.repeats);
    let (int32, int_isa) = cpu_int32_peak(opts.compute_seconds, opts.repeats);
    Ceilings {
        device: crate::system::cpu_model().unwrap_or_else(|| "CPU".to_string()),
        memory_bandwidth_gbs: bw,
        fp32_gflops: Some(fp32),
        int32_gops: Some(int32),
        tensor: Vec::new(),
        source: format!(
            "measured: copy of {} MiB (read + written bytes), best of {}; f32 FMA loop ({fp_isa}), \
             u32 multiply-add loop ({int_isa}); {threads} threads",
            opts.copy_bytes >> 20,
            opts.repeats.max(1)
        ),
    }
}

/// Best-of-`repeats` bandwidth of a parallel `copy_from_slice` of `bytes`, GB/s, counting the bytes
/// read plus the bytes written (STREAM "copy"). `None` when the buffers cannot be allocated.
pub fn cpu_copy_bandwidth(bytes: usize, repeats: usize) -> Option<f64> {
    let bytes = bytes.max(1 << 16);
    let alloc = |fill: u8| -> Option<Vec<u8>> {
        let mut v = Vec::new();
        v.try_reserve_exact(bytes).ok()?;
        v.resize(bytes, 0);
        // Touch every page in parallel so the timed copies take no page faults.
        v.par_chunks_mut(1 << 20).for_each(|c| c.fill(fill));
        Some(v)
    };
    let src = alloc(1)?;
    let mut dst = alloc(2)?;
    let chunk = bytes.div_ceil(rayon::current_num_threads() * 4).max(4096);
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let start = Instant::now();
        dst.par_chunks_mut(chunk)
            .zip(src.par_chunks(chunk))
            .for_each(|(d, s)| d.copy_from_slice(s));
        best = best.min(start.elapsed().as_secs_f64());
        black_box(&mut dst);
    }
    Some(2.0 * bytes as f64 / best / 1e9)
}

/// Independent accumulators per thread in the compute loops (enough to cover FMA latency × ports).
const ACCUMULATORS: usize = 12;
/// SIMD lanes per accumulator (one AVX2 register of 32-bit values).
const LANES: usize = 8;
/// Operations per loop iteration: every lane of every accumulator does one multiply-add = 2 ops.
const OPS_PER_ITER: f64 = (ACCUMULATORS * LANES * 2) as f64;

/// FP32 peak (GFLOP/s) over all threads, and the instruction set used.
pub fn cpu_fp32_peak(seconds: f64, repeats: usize) -> (f64, &'static str) {
    let (kernel, isa) = fp32_kernel();
    (
        peak(seconds, repeats, move |iters| {
            black_box(kernel(iters, black_box(1.0)));
        }),
        isa,
    )
}

/// INT32 multiply-add peak (GOP/s) over all threads, and the instruction set used.
pub fn cpu_int32_peak(seconds: f64, repeats: usize) -> (f64, &'static str) {
    let (kernel, isa) = int32_kernel();
    (
        peak(seconds, repeats, move |iters| {
            black_box(kernel(iters, black_box(3)));
        }),
        isa,
    )
}

/// Calibrates `run(iters)` to take about `seconds` on one thread, then runs it on every thread of
/// rayon's pool at once `repeats` times and returns the best aggregate rate in G ops/s.
fn peak(seconds: f64, repeats: usize, run: impl Fn(u64) + Sync) -> f64 {
    let mut iters: u64 = 1 << 12;
    loop {
        let start = Instant::now();
        run(iters);
        let t = start.elapsed().as_secs_f64();
        if t >= seconds / 8.0 || iters >= 1 << 40 {
            iters = ((iters as f64 * seconds / t.max(1e-9)) as u64).max(1);
            break;
        }
        iters *= 4;
    }
    let threads = rayon::current_num_threads();
    let mut best = f64::INFINITY;
    for _ in 0..repeats.max(1) {
        let start = Instant::now();
        rayon::broadcast(|_| run(iters));
        best = best.min(start.elapsed().as_secs_f64());
    }
    threads as f64 * iters as f64 * OPS_PER_ITER / best / 1e9
}

type Fp32Kernel = fn(u64, f32) -> f32;
type Int32Kernel = fn(u64, u32) -> u32;

fn fp32_kernel() -> (Fp32Kernel, &'static str) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has the features the function is compiled for.
        return (|i, s| unsafe { x86::fma_avx2(i, s) }, "avx2+fma");
    }
    (fma_portable, "portable")
}

fn int32_kernel() -> (Int32Kernel, &'static str) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has the feature the function is compiled for.
        return (|i, s| unsafe { x86::imad_avx2(i, s) }, "avx2");
    }
    (imad_portable, "portable")
}

/// `acc = acc · m + c` on ACCUMULATORS × LANES independent f32 values (the compiler vectorizes it
/// for the baseline ISA: SSE2 on x86-64, NEON on aarch64). Converges, so no overflow or denormals.
fn fma_portable(iters: u64, seed: f32) -> f32 {
    let (m, c) = (black_box(0.999_9f32), black_box(seed * 1e-3));
    let mut acc = [[seed; LANES]; ACCUMULATORS];
    for _ in 0..iters {
        for a in acc.iter_mut() {
            for x in a.iter_mut() {
                *x = *x * m + c;
            }
        }
    }
    acc.iter().flatten().sum()
}

fn imad_portable(iters: u64, seed: u32) -> u32 {
    let (m, c) = (black_box(0x9E37_79B9u32), black_box(seed));
    let mut acc = [[seed; LANES]; ACCUMULATORS];
    for _ in 0..iters {
        for a in acc.iter_mut() {
            for x in a.iter_mut() {
                *x = x.wrapping_mul(m).wrapping_add(c);
            }
        }
    }
    acc.iter().flatten().fold(0, |s, x| s ^ x)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::ACCUMULATORS;
    use std::arch::x86_64::*;

    /// AVX2 + FMA: ACCUMULATORS independent `vfmadd` chains of 8 lanes.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn fma_avx2(iters: u64, seed: f32) -> f32 {
        let m = _mm256_set1_ps(0.999_9);
        let c = _mm256_set1_ps(seed * 1e-3);
        let mut acc = [_mm256_set1_ps(seed); ACCUMULATORS];
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = _mm256_fmadd_ps(*a, m, c);
            }
        }
        let mut s = _mm256_setzero_ps();
        for a in acc {
            s = _mm256_add_ps(s, a);
        }
        let mut out = [0f32; 8];
        _mm256_storeu_ps(out.as_mut_ptr(), s);
        out.iter().sum()
    }

    /// AVX2: ACCUMULATORS independent `vpmulld` + `vpaddd` chains of 8 lanes.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn imad_avx2(iters: u64, seed: u32) -> u32 {
        let m = _mm256_set1_epi32(0x9E37_79B9u32 as i32);
        let c = _mm256_set1_epi32(seed as i32);
        let mut acc = [_mm256_set1_epi32(seed as i32); ACCUMULATORS];
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = _mm256_add_epi32(_mm256_mullo_epi32(*a, m), c);
            }
        }
        let mut s = _mm256_setzero_si256();
        for a in acc {
            s = _mm256_xor_si256(s, a);
        }
        let mut out = [0u32; 8];
        _mm256_storeu_si256(out.as_mut_ptr() as *mut __m256i, s);
        out.iter().fold(0, |x, y| x ^ y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datasheet_matches_device_names() {
        let h100 = datasheet("NVIDIA H100 80GB HBM3").unwrap();
        assert_eq!(h100.memory_bandwidth_gbs, Some(3_350.0));
        assert_eq!(h100.fp32_gflops, Some(66_900.0));
        assert_eq!(h100.int32_gops, Some(33_500.0));
        assert_eq!(h100.tensor_peak("bf16"), Some(989_400.0));
        assert!(h100.source.starts_with("datasheet"));
        assert_eq!(
            datasheet("NVIDIA H200").unwrap().memory_bandwidth_gbs,
            Some(4_800.0)
        );
        assert_eq!(
            datasheet("NVIDIA A100-SXM4-80GB")
                .unwrap()
                .memory_bandwidth_gbs,
            Some(2_039.0)
        );
        assert!(datasheet("NVIDIA H100 PCIe").is_none());
        assert!(datasheet("AMD EPYC").is_none());
    }

    #[test]
    fn compute_peak_by_dtype() {
        let h = datasheet("h100 hbm3").unwrap();
        assert_eq!(h.compute_peak(DType::F32), Some(("fp32".into(), 66_900.0)));
        assert_eq!(h.compute_peak(DType::U32), Some(("int32".into(), 33_500.0)));
        assert_eq!(
            h.compute_peak(DType::Tf32),
            Some(("tf32".into(), 494_700.0))
        );
        let cpu = Ceilings {
            device: "cpu".into(),
            memory_bandwidth_gbs: Some(10.0),
            fp32_gflops: Some(100.0),
            int32_gops: None,
            tensor: vec![],
            source: "test".into(),
        };
        assert_eq!(cpu.compute_peak(DType::Bf16), Some(("fp32".into(), 100.0)));
        assert_eq!(cpu.compute_peak(DType::U32), None);
    }

    #[test]
    fn portable_and_simd_kernels_agree() {
        let (f, _) = fp32_kernel();
        let a = f(100, 1.0);
        let b = fma_portable(100, 1.0);
        assert!((a - b).abs() <= 1e-3 * b.abs(), "{a} {b}");
        let (i, _) = int32_kernel();
        assert_eq!(i(100, 3), imad_portable(100, 3));
    }

    #[test]
    fn quick_cpu_measurement_is_positive() {
        let c = measure_cpu(&CpuCeilingOptions::quick());
        assert!(c.memory_bandwidth_gbs.unwrap() > 0.0);
        assert!(c.fp32_gflops.unwrap() > 0.0);
        assert!(c.int32_gops.unwrap() > 0.0);
        assert!(c.source.starts_with("measured"));
    }
}
