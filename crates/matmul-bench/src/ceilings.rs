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

/// The bench's int8 ceiling row (`bench --kernels cublaslt-int8`, u32 problems only): cuBLASLt's
/// s8·s8 → s32 GEMM of the same m, n, k (`CudaBackend::time_cublaslt_int8`). It does not compute
/// the u32 product, is not verified against the u32 reference and is never a u32 answer (`auto`,
/// `run`, `judge` never see it: it is not a registry kernel); the u32 rows' `vs_int8_ceiling`
/// hold them against its rate ÷ 10 (a byte-split u32 product is 10 such int8 products).
pub const INT8_CEILING: &str = "cublaslt-int8";

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
    /// Tensor-core peaks by dtype name ("tf32", "bf16", "f16"; "int8" in GOP/s), dense, GFLOP/s.
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

    /// Every roof with a value, as (name, value): "memory" in GB/s, the rest in GFLOP/s (GOP/s);
    /// with an int8 tensor peak also [`BYTE_SPLIT_ROOF`], that peak ÷ 10, and with a tf32 tensor
    /// peak also [`TF32X3_ROOF`], that peak ÷ 3.
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
        if let Some(v) = self.tensor_peak("int8") {
            out.push((BYTE_SPLIT_ROOF.to_string(), v / BYTE_SPLIT_PRODUCTS));
        }
        if let Some(v) = self.tensor_peak("tf32") {
            out.push((TF32X3_ROOF.to_string(), v / TF32X3_PRODUCTS));
        }
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
    /// Dense tensor-core peaks by roof name (tf32, bf16, f16; int8 in GOP/s), GFLOP/s.
    pub tensor: &'static [(&'static str, f64)],
}

const HOPPER_TENSOR: &[(&str, f64)] = &[
    ("tf32", 494_700.0),
    ("bf16", 989_400.0),
    ("f16", 989_400.0),
    ("int8", 1_978_900.0),
];
const AMPERE_TENSOR: &[(&str, f64)] = &[
    ("tf32", 156_000.0),
    ("bf16", 312_000.0),
    ("f16", 312_000.0),
    ("int8", 624_000.0),
];

/// The roof of u32 by the byte split (`KernelSpec::is_byte_split`): the int8 tensor peak ÷ 10,
/// one u32 multiply-add being 10 u8·u8 products (the byte pairs i + j ≤ 3).
pub const BYTE_SPLIT_ROOF: &str = "int8/10";
/// The u8 products per u32 multiply-add of the byte split.
pub const BYTE_SPLIT_PRODUCTS: f64 = 10.0;
/// The roof of f32 emulated by 3xTF32 (`KernelSpec::is_tf32x3`): the tf32 tensor peak ÷ 3, one
/// f32 multiply-add being 3 tf32 products (big·big, big·small, small·big).
pub const TF32X3_ROOF: &str = "tf32/3";
/// The tf32 products per f32 multiply-add of 3xTF32.
pub const TF32X3_PRODUCTS: f64 = 3.0;

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
    /// Size of each of the two copy buffers, bytes. The default, [`default_copy_bytes`], makes
    /// the copy's working set (both buffers) 4× the last-level cache, so it measures memory.
    pub copy_bytes: usize,
    /// Copies / compute runs per measurement; the best is kept.
    pub repeats: usize,
    /// Wall time of one compute run, seconds.
    pub compute_seconds: f64,
    /// A `--quick` run: the ceilings' source says which figures were measured with less effort
    /// than a full run's ([`CpuCeilingOptions::default`]).
    pub quick: bool,
}

impl Default for CpuCeilingOptions {
    fn default() -> Self {
        CpuCeilingOptions {
            copy_bytes: default_copy_bytes(),
            repeats: 5,
            compute_seconds: 0.1,
            quick: false,
        }
    }
}

impl CpuCeilingOptions {
    /// `bench --quick`: the copy's working set as in a full run (a smaller one would measure a
    /// cache, not memory), fewer repeats and shorter compute runs.
    pub fn quick() -> Self {
        CpuCeilingOptions {
            // Runs of 10 ms, best of 2, read half the peak on a busy 2-core machine (and put the
            // CPU kernels "above the roof"); 50 ms, best of 3, held there.
            repeats: 3,
            compute_seconds: 0.05,
            quick: true,
            ..CpuCeilingOptions::default()
        }
    }

    /// What a quick run reduces, against a full run's options, for the ceilings' source.
    fn reduced(&self) -> Option<String> {
        if !self.quick {
            return None;
        }
        let full = CpuCeilingOptions::default();
        let mut what = Vec::new();
        if self.repeats < full.repeats {
            what.push(format!(
                "best of {} copies and compute runs (full: {})",
                self.repeats.max(1),
                full.repeats
            ));
        }
        if self.compute_seconds < full.compute_seconds {
            what.push(format!(
                "compute runs of {} ms (full: {} ms)",
                fmt_ms(self.compute_seconds),
                fmt_ms(full.compute_seconds)
            ));
        }
        if self.copy_bytes < full.copy_bytes {
            what.push(format!(
                "copy buffers of {} MiB (full: {} MiB)",
                self.copy_bytes >> 20,
                full.copy_bytes >> 20
            ));
        }
        Some(if what.is_empty() {
            "quick run, nothing reduced".to_string()
        } else {
            format!("quick run, reduced: {}", what.join(", "))
        })
    }
}

fn fmt_ms(seconds: f64) -> String {
    format!("{}", (seconds * 1e3).round())
}

/// The CPU's last-level cache: the highest level of data (or unified) cache that
/// `/sys/devices/system/cpu/cpu*/cache/index*/` lists, over all its instances (one per socket or
/// core complex).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastLevelCache {
    /// The cache level (3 for an L3).
    pub level: u32,
    /// Bytes of one instance.
    pub instance_bytes: usize,
    /// Instances over the online CPUs.
    pub instances: usize,
}

impl LastLevelCache {
    /// Bytes of every instance together.
    pub fn total_bytes(&self) -> usize {
        self.instance_bytes * self.instances
    }
}

/// The last-level cache, from Linux's sysfs; `None` elsewhere or when it lists no cache.
pub fn last_level_cache() -> Option<LastLevelCache> {
    last_level_cache_in(std::path::Path::new("/sys/devices/system/cpu"))
}

/// [`last_level_cache`] under `root` (a copy of `/sys/devices/system/cpu`, for tests).
fn last_level_cache_in(root: &std::path::Path) -> Option<LastLevelCache> {
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok();
    // (level, shared_cpu_list) → bytes: each instance once, however many CPUs share it.
    let mut caches = std::collections::BTreeMap::<(u32, String), usize>::new();
    for cpu in std::fs::read_dir(root).ok()?.flatten() {
        let name = cpu.file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_prefix("cpu") else {
            continue;
        };
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(cpu.path().join("cache")) else {
            continue;
        };
        for index in entries.flatten() {
            let dir = index.path();
            let ty = read(dir.join("type")).unwrap_or_default();
            if ty.trim() == "Instruction" {
                continue;
            }
            let level = read(dir.join("level")).and_then(|l| l.trim().parse::<u32>().ok());
            let size = read(dir.join("size")).and_then(|s| crate::fmt::parse_size(s.trim()));
            let (Some(level), Some(size)) = (level, size) else {
                continue;
            };
            // Without a sharing list, count the cache once per CPU (private).
            let shared = read(dir.join("shared_cpu_list"))
                .map_or_else(|| name.clone(), |s| s.trim().to_string());
            caches.insert((level, shared), size);
        }
    }
    let level = caches.keys().map(|(level, _)| *level).max()?;
    let sizes: Vec<usize> = caches
        .iter()
        .filter(|((l, _), _)| *l == level)
        .map(|(_, &b)| b)
        .collect();
    Some(LastLevelCache {
        level,
        instance_bytes: sizes.iter().copied().max()?,
        instances: sizes.len(),
    })
}

/// The copy buffers' size when not told: [`copy_bytes_for`] this CPU's last-level cache and
/// available memory.
pub fn default_copy_bytes() -> usize {
    copy_bytes_for(last_level_cache(), matmul::available_memory())
}

/// Each copy buffer 2× the last-level cache (so the working set, both buffers, is 4× it), at
/// least 64 MiB; 512 MiB (1 GiB together) when the cache is unknown; at most a quarter of the
/// available memory (and at least 1 MiB).
pub fn copy_bytes_for(llc: Option<LastLevelCache>, available: Option<u64>) -> usize {
    let wanted = llc.map_or(512 << 20, |llc| (2 * llc.total_bytes()).max(64 << 20));
    match available {
        Some(avail) => wanted.min((avail / 4) as usize).max(1 << 20),
        None => wanted,
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
/// thread of rayon's pool, the compute loops with the widest vector instructions the CPU has.
/// The source says how: the copy's working set against the last-level cache, the instruction
/// sets, and, for a quick run, what was reduced.
pub fn measure_cpu(opts: &CpuCeilingOptions) -> Ceilings {
    let threads = rayon::current_num_threads();
    let bw = cpu_copy_bandwidth(opts.copy_bytes, opts.repeats);
    let (fp32, fp_isa) = cpu_fp32_peak(opts.compute_seconds, opts.repeats);
    let (int32, int_isa) = cpu_int32_peak(opts.compute_seconds, opts.repeats);
    let working_set = 2 * opts.copy_bytes.max(1 << 16);
    let against_cache = match last_level_cache() {
        Some(llc) => {
            let ratio = working_set as f64 / llc.total_bytes().max(1) as f64;
            let verdict = if ratio >= 2.0 {
                ""
            } else {
                "; not well beyond it, so partly a cache figure"
            };
            format!(
                "{ratio:.1}× the {} MiB L{} cache ({} × {} MiB){verdict}",
                llc.total_bytes() >> 20,
                llc.level,
                llc.instances,
                llc.instance_bytes >> 20
            )
        }
        None => "last-level cache unknown".to_string(),
    };
    let reduced = opts
        .reduced()
        .map_or_else(String::new, |r| format!("; {r}"));
    Ceilings {
        device: crate::system::cpu_model().unwrap_or_else(|| "CPU".to_string()),
        memory_bandwidth_gbs: bw,
        fp32_gflops: Some(fp32),
        int32_gops: Some(int32),
        tensor: Vec::new(),
        source: format!(
            "measured: copy of 2 × {} MiB (read + written bytes; working set {against_cache}), \
             best of {}; f32 FMA loop ({fp_isa}), u32 multiply-add loop ({int_isa}); \
             {threads} threads{reduced}",
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

/// Independent accumulators per thread in the portable and AVX2 compute loops (enough to cover
/// FMA latency × ports, within AVX2's 16 registers).
const ACCUMULATORS: usize = 12;
/// Independent accumulators per thread in the AVX-512 loops (of 32 registers). On a Zen 4, 12
/// chains of 512-bit `vpmulld` + `vpaddd` ran 11 % below the AVX2 loop (latency-bound); 24 ran
/// at or above it (CPU time, one core).
const ACCUMULATORS_512: usize = 24;
/// 32-bit lanes per accumulator of the portable loops (one AVX2 register's worth).
const LANES: usize = 8;

/// FP32 peak (GFLOP/s) over all threads, and the instruction set used.
pub fn cpu_fp32_peak(seconds: f64, repeats: usize) -> (f64, &'static str) {
    let k = fp32_kernel();
    let rate = peak(seconds, repeats, k.ops_per_iter(), move |iters| {
        black_box((k.run)(iters, black_box(1.0)));
    });
    (rate, k.isa)
}

/// INT32 multiply-add peak (GOP/s) over all threads, and the instruction set used.
pub fn cpu_int32_peak(seconds: f64, repeats: usize) -> (f64, &'static str) {
    let k = int32_kernel();
    let rate = peak(seconds, repeats, k.ops_per_iter(), move |iters| {
        black_box((k.run)(iters, black_box(3)));
    });
    (rate, k.isa)
}

/// Calibrates `run(iters)` to take about `seconds` on one thread, then runs it on every thread of
/// rayon's pool at once `repeats` times and returns the best aggregate rate in G ops/s, `run`
/// doing `ops_per_iter` operations per iteration.
fn peak(seconds: f64, repeats: usize, ops_per_iter: f64, run: impl Fn(u64) + Sync) -> f64 {
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
    threads as f64 * iters as f64 * ops_per_iter / best / 1e9
}

/// One compute loop: `run(iters, seed)`, the instruction set it uses, its lanes per accumulator
/// and its accumulators.
#[derive(Clone, Copy)]
struct ComputeKernel<T> {
    run: fn(u64, T) -> T,
    isa: &'static str,
    lanes: usize,
    accumulators: usize,
}

impl<T> ComputeKernel<T> {
    /// Operations per loop iteration: every lane of every accumulator does one multiply-add = 2.
    fn ops_per_iter(&self) -> f64 {
        (self.accumulators * self.lanes * 2) as f64
    }
}

/// The FMA loop with the widest vector instructions the CPU has (detected at run time).
fn fp32_kernel() -> ComputeKernel<f32> {
    fp32_kernels()[0]
}

/// Every FMA loop this CPU can run, widest first (the portable one last).
fn fp32_kernels() -> Vec<ComputeKernel<f32>> {
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") {
        out.push(ComputeKernel {
            // SAFETY: the CPU has the feature the function is compiled for.
            run: |i, s| unsafe { x86::fma_avx512(i, s) },
            isa: "avx512f",
            lanes: 16,
            accumulators: ACCUMULATORS_512,
        });
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        out.push(ComputeKernel {
            // SAFETY: the CPU has the features the function is compiled for.
            run: |i, s| unsafe { x86::fma_avx2(i, s) },
            isa: "avx2+fma",
            lanes: 8,
            accumulators: ACCUMULATORS,
        });
    }
    out.push(ComputeKernel {
        run: fma_portable,
        isa: "portable",
        lanes: LANES,
        accumulators: ACCUMULATORS,
    });
    out
}

/// The multiply-add loop with the widest vector instructions the CPU has (detected at run time).
fn int32_kernel() -> ComputeKernel<u32> {
    int32_kernels()[0]
}

/// Every multiply-add loop this CPU can run, widest first (the portable one last).
fn int32_kernels() -> Vec<ComputeKernel<u32>> {
    let mut out = Vec::new();
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") {
        out.push(ComputeKernel {
            // SAFETY: the CPU has the feature the function is compiled for.
            run: |i, s| unsafe { x86::imad_avx512(i, s) },
            isa: "avx512f",
            lanes: 16,
            accumulators: ACCUMULATORS_512,
        });
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        out.push(ComputeKernel {
            // SAFETY: the CPU has the feature the function is compiled for.
            run: |i, s| unsafe { x86::imad_avx2(i, s) },
            isa: "avx2",
            lanes: 8,
            accumulators: ACCUMULATORS,
        });
    }
    out.push(ComputeKernel {
        run: imad_portable,
        isa: "portable",
        lanes: LANES,
        accumulators: ACCUMULATORS,
    });
    out
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
    acc.iter().flatten().fold(0, |s, x| s.wrapping_add(*x))
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{ACCUMULATORS, ACCUMULATORS_512};
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
            s = _mm256_add_epi32(s, a);
        }
        let mut out = [0u32; 8];
        _mm256_storeu_si256(out.as_mut_ptr() as *mut __m256i, s);
        out.iter().fold(0, |x, y| x.wrapping_add(*y))
    }

    /// AVX-512F: ACCUMULATORS_512 independent `vfmadd` chains of 16 lanes.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn fma_avx512(iters: u64, seed: f32) -> f32 {
        let m = _mm512_set1_ps(0.999_9);
        let c = _mm512_set1_ps(seed * 1e-3);
        let mut acc = [_mm512_set1_ps(seed); ACCUMULATORS_512];
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = _mm512_fmadd_ps(*a, m, c);
            }
        }
        let mut s = _mm512_setzero_ps();
        for a in acc {
            s = _mm512_add_ps(s, a);
        }
        _mm512_reduce_add_ps(s)
    }

    /// AVX-512F: ACCUMULATORS_512 independent `vpmulld` + `vpaddd` chains of 16 lanes.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn imad_avx512(iters: u64, seed: u32) -> u32 {
        let m = _mm512_set1_epi32(0x9E37_79B9u32 as i32);
        let c = _mm512_set1_epi32(seed as i32);
        let mut acc = [_mm512_set1_epi32(seed as i32); ACCUMULATORS_512];
        for _ in 0..iters {
            for a in acc.iter_mut() {
                *a = _mm512_add_epi32(_mm512_mullo_epi32(*a, m), c);
            }
        }
        let mut s = _mm512_setzero_si512();
        for a in acc {
            s = _mm512_add_epi32(s, a);
        }
        let mut out = [0u32; 16];
        _mm512_storeu_si512(out.as_mut_ptr().cast(), s);
        out.iter().fold(0, |x, y| x.wrapping_add(*y))
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

    /// Every loop this CPU can run computes what the portable one does (every lane of every
    /// accumulator alike, so a loop of 24 × 16 lanes sums to 4× the portable loop's 12 × 8).
    #[test]
    fn portable_and_simd_kernels_agree() {
        let values = |lanes: usize, accumulators: usize| lanes * accumulators;
        let portable = values(LANES, ACCUMULATORS);
        let want = fma_portable(100, 1.0) / portable as f32;
        for k in fp32_kernels() {
            let got = (k.run)(100, 1.0) / values(k.lanes, k.accumulators) as f32;
            assert!(
                (got - want).abs() <= 1e-3 * want.abs(),
                "{}: {got} {want}",
                k.isa
            );
        }
        let want = imad_portable(100, 3);
        for k in int32_kernels() {
            let got = (k.run)(100, 3);
            let times = values(k.lanes, k.accumulators) / portable;
            assert_eq!(got, want.wrapping_mul(times as u32), "{}", k.isa);
        }
        // The widest one is measured.
        assert_eq!(fp32_kernel().isa, fp32_kernels()[0].isa);
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx512f") {
            assert_eq!(
                (fp32_kernel().isa, int32_kernel().isa),
                ("avx512f", "avx512f")
            );
        }
    }

    #[test]
    fn quick_cpu_measurement_is_positive() {
        let c = measure_cpu(&CpuCeilingOptions::quick());
        assert!(c.memory_bandwidth_gbs.unwrap() > 0.0);
        assert!(c.fp32_gflops.unwrap() > 0.0);
        assert!(c.int32_gops.unwrap() > 0.0);
        assert!(c.source.starts_with("measured"));
        assert!(
            c.source.contains("quick run, reduced: best of 3"),
            "{}",
            c.source
        );
        assert!(c.source.contains(fp32_kernel().isa), "{}", c.source);
    }

    #[test]
    fn quick_keeps_the_working_set_and_says_what_it_reduces() {
        let (full, quick) = (CpuCeilingOptions::default(), CpuCeilingOptions::quick());
        assert_eq!(full.reduced(), None);
        assert_eq!(quick.copy_bytes, full.copy_bytes);
        let said = quick.reduced().unwrap();
        assert!(
            said.contains("best of 3 copies and compute runs (full: 5)"),
            "{said}"
        );
        assert!(
            said.contains("compute runs of 50 ms (full: 100 ms)"),
            "{said}"
        );
        assert!(!said.contains("copy buffers"), "{said}");
        let small = CpuCeilingOptions {
            copy_bytes: 4 << 20,
            ..quick
        };
        if full.copy_bytes > 4 << 20 {
            assert!(small.reduced().unwrap().contains("copy buffers of 4 MiB"));
        }
    }

    /// A fake `/sys/devices/system/cpu`: `cpus` CPUs, private L1d/L1i/L2, and L3s shared by
    /// `per_l3` CPUs each.
    fn fake_sysfs(name: &str, cpus: usize, per_l3: usize) -> std::path::PathBuf {
        let root = std::env::temp_dir().join(format!("matmul-llc-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for cpu in 0..cpus {
            let l3 = cpu / per_l3 * per_l3;
            let l3_list = format!("{l3}-{}", l3 + per_l3 - 1);
            let cpu_list = cpu.to_string();
            let caches = [
                (1, "Data", "48K", cpu_list.as_str()),
                (1, "Instruction", "32K", cpu_list.as_str()),
                (2, "Unified", "2048K", cpu_list.as_str()),
                (3, "Unified", "105M", l3_list.as_str()),
            ];
            for (i, (level, ty, size, shared)) in caches.iter().enumerate() {
                let dir = root.join(format!("cpu{cpu}/cache/index{i}"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("level"), format!("{level}\n")).unwrap();
                std::fs::write(dir.join("type"), format!("{ty}\n")).unwrap();
                std::fs::write(dir.join("size"), format!("{size}\n")).unwrap();
                std::fs::write(dir.join("shared_cpu_list"), format!("{shared}\n")).unwrap();
            }
        }
        // Entries that are not CPUs are ignored.
        std::fs::create_dir_all(root.join("cpufreq")).unwrap();
        std::fs::write(root.join("online"), "0-3\n").unwrap();
        root
    }

    #[test]
    fn last_level_cache_counts_each_instance_once() {
        let one = fake_sysfs("one", 4, 4);
        let llc = last_level_cache_in(&one).unwrap();
        assert_eq!(
            (llc.level, llc.instance_bytes, llc.instances),
            (3, 105 << 20, 1)
        );
        let two = fake_sysfs("two", 4, 2);
        let llc = last_level_cache_in(&two).unwrap();
        assert_eq!(
            (llc.level, llc.instances, llc.total_bytes()),
            (3, 2, 210 << 20)
        );
        assert_eq!(last_level_cache_in(&two.join("missing")), None);
        let _ = std::fs::remove_dir_all(one);
        let _ = std::fs::remove_dir_all(two);
    }

    #[test]
    fn copy_buffers_are_beyond_the_last_level_cache() {
        let llc = |mib: usize, instances| LastLevelCache {
            level: 3,
            instance_bytes: mib << 20,
            instances,
        };
        const GIB: u64 = 1 << 30;
        // Two sockets of 105 MiB: 420 MiB a buffer, the working set 4× the 210 MiB.
        assert_eq!(copy_bytes_for(Some(llc(105, 2)), Some(64 * GIB)), 420 << 20);
        // A small cache: the 64 MiB floor.
        assert_eq!(copy_bytes_for(Some(llc(8, 1)), Some(64 * GIB)), 64 << 20);
        // Unknown cache: 1 GiB together.
        assert_eq!(copy_bytes_for(None, None), 512 << 20);
        // Capped by a quarter of the available memory.
        assert_eq!(copy_bytes_for(Some(llc(105, 2)), Some(GIB)), 256 << 20);
        assert_eq!(copy_bytes_for(None, Some(0)), 1 << 20);
    }
}
