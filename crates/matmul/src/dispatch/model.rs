//! The cost model `auto` ranks its candidates with: for each (kernel, tiling) that can run a
//! problem, a time from the device's own figures — SM count, clock, DRAM bandwidth, shared
//! memory, and the nominal rate of each unit per SM per clock for its architecture — and the
//! family's structure: tiles of C in waves over the SMs (with each kernel's split-K plan), the
//! memory-bound floor of the operands, and a per-family efficiency (the fraction of the nominal
//! rate a busy SM reaches). Nothing here is keyed by a GPU's name: an untuned GPU gets the same
//! model with its own figures.
//!
//! The efficiencies are defaults measured once on a Hopper part (an H100 SXM: `lab/notebook.md`,
//! bench/baselines/h100-80gb-hbm3); a tune table measured on the device's class
//! ([`super::tune`]) replaces them for the tilings it holds ([`Candidate::calibrated`]), and a
//! measured choice for the problem's shape bucket overrides the model altogether.
//!
//! Only the ordering of the estimates matters; they are not predictions to quote.

use crate::dtype::DType;
use crate::family::decode;
use crate::family::simt;
use crate::family::tf32x3::Tf32x3;
use crate::family::u8x4::U8x4Tma;
use crate::family::wgmma::Wgmma;
use crate::problem::{Op, Precision, Problem};
use crate::registry::{Constraint, DeviceLimits, Geometry, KernelSpec, TcTile, Tiling, KERNELS};
use crate::RunOptions;

/// A device as the model sees it: its limits plus nominal per-SM rates from its architecture.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeviceModel {
    /// Streaming multiprocessors.
    pub sms: u64,
    /// SM clock, Hz.
    pub clock_hz: f64,
    /// DRAM bandwidth, bytes/s (the memory clock × bus width × 2).
    pub dram_bytes_per_s: f64,
    /// Shared memory per SM, bytes.
    pub shared_per_sm: usize,
    /// FP32 FMA lanes per SM (FLOP/clock/SM is twice this).
    pub fp32_lanes: f64,
    /// 32-bit integer multiply-add lanes per SM.
    pub imad_lanes: f64,
    /// Dense 16-bit tensor-core FLOP per clock per SM (tf32 is half, int8 twice).
    pub tc16_flops_per_clock: f64,
    /// Whether sm_90a code (wgmma, TMA) runs.
    pub sm90a: bool,
}

/// Where a device does not say (a fake backend, wgpu): an H100 SXM's figures.
const FALLBACK_CLOCK_MHZ: u32 = 1980;
const FALLBACK_DRAM_GBS: u32 = 3352;

impl DeviceModel {
    /// The model of a device with `limits`: rates by compute capability (nominal, per SM per
    /// clock: FP32 lanes 64 on sm_60/sm_70/sm_80 and 128 from sm_86 and on Hopper; IMAD 64;
    /// dense 16-bit tensor FLOP 1024 on sm_70/sm_86/sm_89, 2048 on sm_80, 4096 on sm_90,
    /// 8192 on sm_100).
    pub fn of(limits: &DeviceLimits) -> DeviceModel {
        let (major, minor) = limits.compute_capability;
        let fp32_lanes = match (major, minor) {
            (0..=7, _) | (8, 0) => 64.0,
            _ => 128.0,
        };
        let tc16 = match (major, minor) {
            (0..=6, _) => 0.0,
            (8, 0) => 2048.0,
            (9, _) => 4096.0,
            (10 | 11, _) => 8192.0,
            _ => 1024.0,
        };
        let clock = if limits.sm_clock_mhz > 0 {
            limits.sm_clock_mhz
        } else {
            FALLBACK_CLOCK_MHZ
        };
        let dram = if limits.dram_gbs > 0 {
            limits.dram_gbs
        } else {
            FALLBACK_DRAM_GBS
        };
        DeviceModel {
            sms: limits.sms.max(1) as u64,
            clock_hz: clock as f64 * 1e6,
            dram_bytes_per_s: dram as f64 * 1e9,
            shared_per_sm: limits.max_shared_per_block.max(48 << 10) + (1 << 10),
            fp32_lanes,
            imad_lanes: 64.0,
            tc16_flops_per_clock: tc16,
            sm90a: limits.sm90a,
        }
    }

    /// One SM's nominal rate for `dtype` on SIMT lanes (FLOP or OP per second).
    fn simt_rate(&self, dtype: DType) -> f64 {
        let lanes = if dtype == DType::U32 {
            self.imad_lanes
        } else {
            self.fp32_lanes
        };
        2.0 * lanes * self.clock_hz
    }

    /// One SM's nominal tensor-core rate for `dtype` inputs (u32: the int8 rate).
    fn tc_rate(&self, dtype: DType) -> f64 {
        let scale = match dtype {
            DType::Tf32 | DType::F32 => 0.5,
            DType::U32 => 2.0,
            _ => 1.0,
        };
        self.tc16_flops_per_clock * scale * self.clock_hz
    }
}

/// One thing `auto` could run: a kernel and, for the SIMT ladder, a tiling.
#[derive(Debug, Clone, Copy)]
pub struct Candidate {
    /// The registry kernel.
    pub kernel: &'static KernelSpec,
    /// Its tiling (SIMT ladder), None for the registry's own.
    pub tiling: Option<Tiling>,
    /// A factor on the family's default efficiency, from a measurement on this device class
    /// (1: the default).
    pub calibration: f64,
}

impl Candidate {
    /// `kernel` at `tiling` with the default efficiency.
    pub fn new(kernel: &'static KernelSpec, tiling: Option<Tiling>) -> Candidate {
        Candidate {
            kernel,
            tiling,
            calibration: 1.0,
        }
    }

    /// The run options that select this candidate's tiling.
    pub fn options(&self) -> RunOptions {
        self.tiling.map(RunOptions::tiling).unwrap_or_default()
    }

    /// This candidate with its efficiency scaled so that the model's time for `shape` is
    /// `measured_s` (clamped to a factor of 0.5–2: one noisy point does not overturn the model).
    pub fn calibrated(self, shape: &Problem, measured_s: f64, device: &DeviceModel) -> Candidate {
        let Some(modelled) = estimate(&self, shape, device) else {
            return self;
        };
        let compute = modelled.compute_s;
        // Only the compute part scales with efficiency; a memory-bound point says nothing.
        // (NaN fails the comparisons too.)
        let positive = |x: f64| x.is_finite() && x > 0.0;
        if !positive(measured_s) || !positive(compute) || modelled.seconds > compute * 1.5 {
            return self;
        }
        let fixed = modelled.seconds - compute;
        let factor = compute / (measured_s - fixed).max(compute * 0.5);
        Candidate {
            calibration: self.calibration * factor.clamp(0.5, 2.0),
            ..self
        }
    }
}

/// The model's view of one candidate on one problem.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The modelled time, seconds.
    pub seconds: f64,
    /// The compute part (waves of work units at the family's efficiency), seconds.
    pub compute_s: f64,
    /// The k pieces of each tile (1: no split).
    pub splits: u64,
}

/// A launch's fixed cost (and a second launch's: split-K's reduction, the byte split's pre-pass).
const LAUNCH_S: f64 = 3e-6;
/// The fraction of DRAM bandwidth a streaming kernel sustains.
const DRAM_EFFICIENCY: f64 = 0.85;

/// Compute and memory overlap, but not perfectly: the longer of the two plus a tenth of the
/// shorter (which also orders kernels that all sit on the memory floor by their compute).
fn overlap(compute: f64, memory: f64) -> f64 {
    compute.max(memory) + 0.1 * compute.min(memory)
}

/// The efficiency of the SIMT ladder at a block tile of `area` = BM·BN outputs (measured on an
/// H100 at full load: 128×256 52.4 of 66.9 TFLOP/s at 4096³; 128×128 and 64×128 lower, as
/// each output costs more shared-memory reads).
fn simt_tile_efficiency(area: u32) -> f64 {
    match area {
        32768.. => 0.80,
        16384..=32767 => 0.72,
        8192..=16383 => 0.62,
        4096..=8191 => 0.45,
        _ => 0.30,
    }
}

/// The SIMT rungs below multistage reach less of the same tile's rate: their fraction of
/// multistage's, read from the kernel's structure rather than its name (TMA-fed tiles; the
/// cp.async pipeline with its split tail, rastered or not; warp tiles alone; neither).
fn simt_rung(kernel: &KernelSpec) -> f64 {
    let Some(src) = kernel.cuda_source() else {
        return 0.0;
    };
    let raster = src.defines.iter().any(|(name, _)| *name == "RASTER_GROUP");
    let warp_tiled = kernel
        .tiling(&RunOptions::default())
        .is_some_and(|t| t.warp_tiled());
    match () {
        _ if src.tma_tiles => 0.99,
        _ if src.split_tail && raster => 1.0,
        _ if src.split_tail => 0.995,
        _ if warp_tiled => 0.75,
        _ => 0.5,
    }
}

/// The fraction of the nominal tensor rate each tensor-core family reaches at its tile (H100:
/// bf16 `wgmma` 743 of 1070 TFLOP/s at 4096³, tf32 399 of 535, `wgmma-u8x4-tma` 1,420 of 2,140
/// int8 TOPS at 8192³; mma.sync on Hopper about half of wgmma's).
fn tc_efficiency(kernel: &KernelSpec, tile_bn: u32, device: &DeviceModel) -> f64 {
    let tile = match tile_bn {
        256.. => 1.0,
        128..=255 => 0.9,
        _ => 0.75,
    };
    let family = match kernel.cuda_source().map(|s| s.geometry) {
        Some(Geometry::Wgmma { .. }) => 0.69,
        Some(Geometry::WgmmaTf32 { .. } | Geometry::Tf32x3 { .. }) => 0.75,
        Some(Geometry::Mma { .. }) if device.sm90a => 0.35,
        Some(Geometry::Mma { .. }) => 0.65,
        Some(Geometry::ByteSplitTma { .. }) => 0.66,
        Some(Geometry::ByteSplit { .. }) if kernel.constraints.contains(&Constraint::Sm90a) => 0.33,
        Some(Geometry::ByteSplit { .. }) if device.sm90a => 0.26,
        Some(Geometry::ByteSplit { .. }) => 0.6,
        _ => 0.0,
    };
    tile * family
}

/// The time of `units` work units, `unit_s` each at an SM's full rate, on `sms` SMs that each
/// hold `occupancy` units at once: the busiest SM's share, where fewer units than the occupancy
/// leave the SM partly idle (a lone block reaches about 3/4 of what a full SM would per block).
fn waves(units: u64, sms: u64, occupancy: u64, unit_s: f64) -> f64 {
    if units == 0 {
        return 0.0;
    }
    let per_sm = units.div_ceil(sms.max(1)) as f64;
    per_sm.max(occupancy as f64 * 0.75) * unit_s
}

/// The memory-bound floor of `problem`: its compulsory bytes at the sustained DRAM bandwidth.
fn memory_floor(problem: &Problem, device: &DeviceModel) -> f64 {
    problem.min_bytes() / (device.dram_bytes_per_s * DRAM_EFFICIENCY)
}

/// The blocks of `tiling` one SM holds: its MIN_BLOCKS, as far as shared memory allows.
fn simt_occupancy(tiling: &Tiling, dtype: DType, device: &DeviceModel) -> u64 {
    let smem = tiling.shared_elems() as usize * dtype.input_bytes() + 1024;
    let by_smem = (device.shared_per_sm / smem.max(1)).max(1) as u64;
    (tiling.min_blocks.max(1) as u64).min(by_smem)
}

/// The SIMT split-K plan (as the CUDA launch computes it: cuda/split_tail.rs): tiles for less
/// than half a wave split K into pieces of at least 4 k-slices, filling about one wave.
pub fn simt_splits(tiles: u64, k: usize, tiling: &Tiling, wave: u64) -> u64 {
    let slices = k.div_ceil(tiling.bk.max(1) as usize) as u64;
    if tiles == 0 {
        return 1;
    }
    (wave / tiles).min(slices / 4).clamp(1, u16::MAX as u64)
}

/// The model's estimate of `candidate` on `problem` on `device`; None where the family has no
/// model (the seed kernels, cuBLAS, the CPU and wgpu kernels).
pub fn estimate(
    candidate: &Candidate,
    problem: &Problem,
    device: &DeviceModel,
) -> Option<Estimate> {
    let kernel = candidate.kernel;
    let src = kernel.cuda_source()?;
    let (m, n, k) = (problem.m as u64, problem.n as u64, problem.k as u64);
    let floor = memory_floor(problem, device);
    let calibration = candidate.calibration;
    let est = match src.geometry {
        Geometry::BlockTile { .. } => {
            let t = kernel.tiling(&candidate.options())?;
            let tiles = m.div_ceil(t.bm as u64) * n.div_ceil(t.bn as u64);
            let occupancy = simt_occupancy(&t, problem.dtype, device);
            let splits = if src.split_tail {
                simt_splits(tiles, problem.k, &t, occupancy * device.sms)
            } else {
                1
            };
            // IMAD issues at half the FFMA rate, so each output's shared-memory reads weigh
            // half as much against it: small tiles lose half as much (H200, u32 at 4096³
            // 4.46 ms and 64×8192×8192 0.30 ms, where f32's efficiencies predicted 5.3 and 0.44).
            let tile_eff = match problem.dtype {
                DType::U32 => 1.0 - 0.5 * (1.0 - simt_tile_efficiency(t.bm * t.bn)),
                _ => simt_tile_efficiency(t.bm * t.bn),
            };
            // The cp.async kernels read a transposed operand that is not staged with 4-byte
            // copies (H200, tuned multistage-raster: 128×14336×4096 N·T 488 µs against 305 µs
            // for the N·N 128×4096×14336 of the same FLOPs).
            let unstaged_t = src.split_tail
                && !src.tma_tiles
                && [(problem.op_a, true), (problem.op_b, false)]
                    .iter()
                    .any(|&(op, a)| op == Op::T && !simt::stages_operand(problem, a));
            let layout = if unstaged_t { 0.65 } else { 1.0 };
            let eff = tile_eff * simt_rung(kernel) * calibration * layout;
            let piece_k = k.div_ceil(splits) as f64;
            let unit_s =
                2.0 * t.bm as f64 * t.bn as f64 * piece_k / (device.simt_rate(problem.dtype) * eff);
            let compute = waves(tiles * splits, device.sms, occupancy, unit_s);
            let mut split = split_cost(splits, problem, device);
            if src.tma_tiles {
                split += staging_cost(problem, device);
            } else if src.split_tail {
                split += simt_staging_cost(problem, device);
            }
            Estimate {
                seconds: overlap(compute, floor) + split + LAUNCH_S,
                compute_s: compute,
                splits,
            }
        }
        Geometry::Wgmma { tile } | Geometry::WgmmaTf32 { tile } => {
            let splits = if src.split_k {
                Wgmma::splits(kernel, problem, device.sms)
            } else {
                1
            };
            let units = Wgmma::tiles(kernel, problem) * splits;
            let eff = tc_efficiency(kernel, tile.bn, device) * calibration;
            let piece_k = k.div_ceil(splits) as f64 + 2.0 * tile.bk as f64;
            let unit_s = 2.0 * tile.bm as f64 * tile.bn as f64 * piece_k
                / (device.tc_rate(problem.dtype) * eff);
            // Clusters of two share B by multicast: a little faster once there are many waves.
            let cluster = if tile.cluster > 1 {
                if units >= 8 * device.sms {
                    0.99
                } else {
                    1.01
                }
            } else {
                1.0
            };
            let compute = waves(units, device.sms, 1, unit_s) * cluster;
            Estimate {
                seconds: overlap(compute, floor)
                    + split_cost(splits, problem, device)
                    + staging_cost(problem, device)
                    + LAUNCH_S,
                compute_s: compute,
                splits,
            }
        }
        Geometry::Mma { tile } => {
            let tiles = m.div_ceil(tile.bm as u64) * n.div_ceil(tile.bn as u64);
            let eff = tc_efficiency(kernel, tile.bn, device) * calibration;
            let piece_k = k as f64 + 2.0 * tile.bk as f64;
            let unit_s = 2.0 * tile.bm as f64 * tile.bn as f64 * piece_k
                / (device.tc_rate(problem.dtype) * eff);
            let compute = waves(tiles, device.sms, 1, unit_s);
            Estimate {
                seconds: overlap(compute, floor) + LAUNCH_S,
                compute_s: compute,
                splits: 1,
            }
        }
        Geometry::ByteSplit { tile } | Geometry::ByteSplitTma { tile } => {
            // Ten u8 GEMMs on the int8 rate, after a pre-pass that reads A and B and writes
            // their four byte planes each.
            // The TMA kernel splits K where its tiles fill less than half the SMs.
            let splits = if src.split_k {
                U8x4Tma::splits(kernel, problem, device.sms)
            } else {
                1
            };
            let kp = k.div_ceil(128) * 128;
            let eff = tc_efficiency(kernel, tile.bn, device) * calibration;
            let compute =
                pre_split_compute(problem, tile, (10, kp, splits), DType::U32, eff, device);
            let dram = device.dram_bytes_per_s * DRAM_EFFICIENCY;
            // Each pair streams a byte plane of A and of B^T: B's from DRAM once per group
            // of 16 tile-rows (the grouped raster shares it through L2 within a group), A's
            // once per 16 tile-columns. Few tile-rows with a long K make it the bound; it
            // overlaps the tensor work only in part.
            let groups = |tiles: u64| tiles.div_ceil(16) as f64;
            let stream = 10.0
                * kp as f64
                * (n as f64 * groups(m.div_ceil(tile.bm as u64))
                    + m as f64 * groups(n.div_ceil(tile.bn as u64)))
                / dram;
            let main = compute.max(stream).max(floor) + 0.5 * compute.min(stream);
            let planes = ((m + n) * k * 4 + (m + n) * kp * 4) as f64 / dram;
            Estimate {
                seconds: main + planes + split_cost(splits, problem, device) + 2.0 * LAUNCH_S,
                compute_s: compute,
                splits,
            }
        }
        Geometry::Tf32x3 { tile } => {
            // Three tf32 GEMMs through one pipeline on the tf32 rate, after a pre-pass that
            // reads A and B and writes their big and small planes, and before a fixup launch
            // (which returns at once unless an input holds ±∞).
            let splits = if src.split_k {
                Tf32x3::splits(kernel, problem, device.sms)
            } else {
                1
            };
            let kp = k.div_ceil(32) * 32;
            let eff = tc_efficiency(kernel, tile.bn, device) * calibration;
            let compute =
                pre_split_compute(problem, tile, (3, kp, splits), DType::Tf32, eff, device);
            let dram = device.dram_bytes_per_s * DRAM_EFFICIENCY;
            let planes = ((m + n) * k * 4 + 2 * (m + n) * kp * 4) as f64 / dram;
            Estimate {
                seconds: overlap(compute, floor)
                    + planes
                    + split_cost(splits, problem, device)
                    + 3.0 * LAUNCH_S,
                compute_s: compute,
                splits,
            }
        }
        Geometry::Decode => {
            // Streams op(B) from DRAM, once per group of 8 rows of C (the later groups mostly
            // from L2), with the FMAs on SIMT lanes (16-bit inputs widened to f32).
            let splits = decode::splits(problem, device.sms);
            let groups = decode::row_groups(problem) as f64;
            let b_bytes = (problem.k * problem.n * problem.dtype.input_bytes()) as f64;
            let memory = floor
                + 0.25 * (groups - 1.0).max(0.0) * b_bytes
                    / (device.dram_bytes_per_s * DRAM_EFFICIENCY);
            let compute = problem.flops()
                / (device.simt_rate(problem.dtype) * device.sms as f64 * 0.5 * calibration);
            Estimate {
                seconds: overlap(compute, memory) + split_cost(splits, problem, device) + LAUNCH_S,
                compute_s: compute,
                splits,
            }
        }
        _ => return None,
    };
    Some(est)
}

/// The tensor work of a pre-split kernel: `products` GEMMs over the planes' K extent `kp` (ten
/// byte products; 3xTF32's three) through one pipeline that fills once per (tile, piece) unit,
/// `splits` pieces a tile, at `rate`'s tensor rate times `eff`.
fn pre_split_compute(
    problem: &Problem,
    tile: TcTile,
    (products, kp, splits): (u64, u64, u64),
    rate: DType,
    eff: f64,
    device: &DeviceModel,
) -> f64 {
    let tiles =
        (problem.m as u64).div_ceil(tile.bm as u64) * (problem.n as u64).div_ceil(tile.bn as u64);
    let piece_k = (products * kp.div_ceil(splits)) as f64 + 2.0 * tile.bk as f64;
    let unit_s = 2.0 * tile.bm as f64 * tile.bn as f64 * piece_k / (device.tc_rate(rate) * eff);
    waves(tiles * splits, device.sms, 1, unit_s)
}

/// What a TMA kernel pays for an operand whose stored rows are not 16-byte multiples: a padded
/// copy (read and written once, cuda/staging.rs) and its launch, per such operand.
fn staging_cost(problem: &Problem, device: &DeviceModel) -> f64 {
    let elem = problem.dtype.input_bytes();
    let (a, b) = (problem.a_stored(), problem.b_stored());
    [a, b]
        .iter()
        .filter(|(_, cols)| !(cols * elem).is_multiple_of(16))
        .map(|(rows, cols)| 2.0 * (rows * cols * elem) as f64 / device.dram_bytes_per_s + LAUNCH_S)
        .sum()
}

/// What a cp.async SIMT kernel pays for the operands it stages ([`simt::stages_operand`]): each
/// copied (read and written once) and its launch.
fn simt_staging_cost(problem: &Problem, device: &DeviceModel) -> f64 {
    let elem = problem.dtype.input_bytes();
    [(problem.a_stored(), true), (problem.b_stored(), false)]
        .iter()
        .filter(|&&(_, a)| simt::stages_operand(problem, a))
        .map(|((rows, cols), _)| {
            2.0 * (rows * cols * elem) as f64 / device.dram_bytes_per_s + LAUNCH_S
        })
        .sum()
}

/// What split-K adds: `splits` slabs of M×N 4-byte partials written and read back, and the
/// reduction's launch.
fn split_cost(splits: u64, problem: &Problem, device: &DeviceModel) -> f64 {
    if splits <= 1 {
        return 0.0;
    }
    let slabs = 2.0 * splits as f64 * (problem.m * problem.n) as f64 * 4.0;
    slabs / device.dram_bytes_per_s + LAUNCH_S
}

/// SIMT tilings `auto` weighs besides each kernel's registry tiling, one per regime of C's shape:
/// large (128×256, one block an SM), medium (128×128, three stages), small (64×128, BK 32), short
/// (32×256: few rows, wide C) and narrow (128×64: few columns). They are shapes, not one GPU's
/// tuning: the model picks among them by the waves each makes on the device at hand.
pub const SIMT_TILINGS: [Tiling; 5] = [
    Tiling::block(128, 256, 16, 8, 4)
        .warps(64, 64, 2)
        .with_stages(3)
        .with_pad(4),
    Tiling::block(128, 128, 16, 8, 4)
        .warps(64, 32, 2)
        .with_stages(3)
        .with_pad(4),
    Tiling::block(64, 128, 32, 8, 4)
        .warps(32, 32, 1)
        .with_stages(2)
        .with_pad(4),
    Tiling::block(32, 256, 16, 4, 4)
        .warps(32, 64, 1)
        .with_stages(3)
        .with_pad(4),
    Tiling::block(128, 64, 32, 8, 4)
        .warps(32, 32, 1)
        .with_stages(3)
        .with_pad(4),
];

/// Whether `kernel` is one of `auto`'s candidates at all: the production ladders on CUDA (the
/// SIMT ladder from warptile up, the tensor-core kernels, the byte split, FP32 emulated by
/// 3xTF32, decode), never the seed kernels (they are there to be read) nor cuBLAS (the baseline).
/// (A problem's [`Precision`] narrows this: [`precise_enough`].)
pub fn auto_eligible(kernel: &KernelSpec) -> bool {
    let Some(src) = kernel.cuda_source() else {
        return false;
    };
    match src.geometry {
        Geometry::BlockTile { .. } => simt_rung(kernel) >= 0.75,
        Geometry::Wgmma { .. }
        | Geometry::WgmmaTf32 { .. }
        | Geometry::Mma { .. }
        | Geometry::ByteSplit { .. }
        | Geometry::ByteSplitTma { .. }
        | Geometry::Tf32x3 { .. }
        | Geometry::Decode => true,
        _ => false,
    }
}

/// Whether `kernel` computes `problem` as its [`Precision`] allows: FP32 emulated on tf32
/// (3xTF32) only where the problem is not `Precision::Strict`.
pub fn precise_enough(kernel: &KernelSpec, problem: &Problem) -> bool {
    !(kernel.is_tf32x3() && problem.precision == Precision::Strict)
}

/// Whether `kernel` is of the SIMT ladder (a tiling of its own).
fn is_simt(kernel: &KernelSpec) -> bool {
    matches!(
        kernel.cuda_source().map(|s| s.geometry),
        Some(Geometry::BlockTile { .. })
    )
}

/// `auto`'s candidates for `problem` on a CUDA device with `limits`: every eligible registry
/// kernel that takes the dtype, the SIMT ones at their registry tiling and each of
/// [`SIMT_TILINGS`], plus `extra` (a tune table's tilings, calibrated); only those that can run
/// the problem on the device.
pub fn candidates(problem: &Problem, limits: &DeviceLimits, extra: &[Candidate]) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = Vec::new();
    let mut push = |c: Candidate| {
        if c.kernel
            .can_run(problem, Some(limits), &c.options())
            .is_ok()
            && !out
                .iter()
                .any(|o| o.kernel.name == c.kernel.name && o.tiling == c.tiling)
        {
            out.push(c);
        }
    };
    // Measured ones first: they replace the same (kernel, tiling) at the default efficiency.
    for c in extra {
        if c.kernel.supports(problem.dtype)
            && auto_eligible(c.kernel)
            && precise_enough(c.kernel, problem)
        {
            push(*c);
        }
    }
    for kernel in KERNELS
        .iter()
        .filter(|k| auto_eligible(k) && k.supports(problem.dtype) && precise_enough(k, problem))
    {
        push(Candidate::new(kernel, None));
        if is_simt(kernel) {
            for t in SIMT_TILINGS {
                // TMA-fed tiles have rules of their own (BK a multiple of the TMA box).
                if kernel.check_tiling(&t).is_ok() {
                    push(Candidate::new(kernel, Some(t)));
                }
            }
        }
    }
    out
}

/// The candidates ranked by the model's time, fastest first (ties keep the registry's order),
/// each with its estimate; those without a model are left out. Where `extra` holds measured
/// SIMT tilings (a tune table's, for this problem's dtype), they stand for the SIMT ladder: the
/// model's own tilings, never measured here, do not compete with them.
pub fn rank(
    problem: &Problem,
    limits: &DeviceLimits,
    extra: &[Candidate],
) -> Vec<(Candidate, Estimate)> {
    let device = DeviceModel::of(limits);
    let measured_simt = extra.iter().any(|c| is_simt(c.kernel));
    let mut ranked: Vec<(Candidate, Estimate)> = candidates(problem, limits, extra)
        .into_iter()
        .filter(|c| {
            !measured_simt
                || !is_simt(c.kernel)
                || extra
                    .iter()
                    .any(|e| e.kernel.name == c.kernel.name && e.tiling == c.tiling)
        })
        .filter_map(|c| estimate(&c, problem, &device).map(|e| (c, e)))
        .collect();
    ranked.sort_by(|a, b| a.1.seconds.total_cmp(&b.1.seconds));
    ranked
}
