//! The report model: one [`Record`] per kernel × dtype × shape, the machine, the settings and
//! the ceilings, with the ratios and roofline bounds computed from them, and its JSON form
//! (schema: docs/results-schema.md). The renderers live beside it: `csv` (results.csv),
//! `markdown` (the text table for stdout and report.md), `html` (report.html, its charts' data from `page`), with the rows they
//! share in `rows`; `ladder` (each dtype's kernels in ladder order: tables and ladder.svg);
//! `write` holds [`write_reports`], which writes every file; `compare` sets two runs side by side.

use std::io;

use serde::{Deserialize, Serialize};

use matmul::{BackendKind, DType, Problem};

use crate::ceilings::Ceilings;
use crate::check::Verification;
use crate::roofline::{Bytes, Placement, PlotPoint, RoofBound, Roofs};
use crate::stats::Stats;
use crate::system::SystemInfo;

mod compare;
mod csv;
mod html;
mod ladder;
mod ladder_plot;
mod markdown;
mod page;
mod rows;
mod summary;
mod write;

pub use compare::{CaseComparison, CompareRow, Comparison};
pub use csv::csv_field;
pub use html::{script_json, CHART_JS, CHART_JS_VERSION};
pub use ladder::{Ladder, Rung};
#[cfg(test)]
pub(crate) use ladder_plot::layout_of as ladder_layout;
pub use summary::{ratio_text, Aggregate, Summary, SummaryRow};
pub use write::{prepare_report_dir, write_comparison, write_reports, write_views, ReportFiles};

/// Bumped whenever a field of results.json changes meaning or disappears. 2: `roof` places every
/// record by its compulsory traffic (or measured DRAM bytes), no longer by its kernel's traffic
/// model; [`Report::from_json`] recomputes the roofs of a schema-1 file.
pub const SCHEMA_VERSION: u32 = 2;

pub use crate::ceilings::INT8_CEILING;

/// The IMAD u32 kernel that the u32 rows' `vs_imad` compare with.
pub const IMAD_KERNEL: &str = "multistage-raster";

/// What happened to one kernel × dtype × shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    /// Verified, then timed.
    #[serde(rename = "OK")]
    Ok,
    /// The run errored or the result was wrong; not timed (or the timing itself errored).
    #[serde(rename = "FAILED")]
    Failed,
    /// Not attempted: wrong backend, unsupported dtype, a `can_run` rule, or no memory for inputs.
    #[serde(rename = "SKIPPED")]
    Skipped,
}

impl Status {
    /// "OK", "FAILED" or "SKIPPED", as in results.json and the tables.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Failed => "FAILED",
            Status::Skipped => "SKIPPED",
        }
    }
}

/// How one record was timed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Untimed launches before the timed ones.
    pub warmup: usize,
    /// Timed launches.
    pub iters: usize,
    /// Input sets rotated among (so that together they exceed `cache_bytes`).
    pub input_sets: usize,
    /// Bytes of A and B in one input set.
    pub input_set_bytes: u64,
    /// Statistics of the per-launch times, seconds.
    pub stats: Stats,
    /// Every timed launch, seconds, in order.
    pub samples_s: Vec<f64>,
    /// With `--rounds` > 1: the median launch time of each round, seconds (the spread of these is
    /// the run-to-run noise that interleaving averages out); empty for a single round.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_medians_s: Vec<f64>,
}

/// The kernels ratios are taken against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Baselines {
    /// The vendor library ("cublas" on CUDA; none on the CPU): `vs_cublas`.
    pub vendor: Option<String>,
    /// The seeds' naive kernel ("naive" on CUDA, "cpu-reference" on the CPU): `vs_naive`.
    pub naive: Option<String>,
}

impl Baselines {
    /// cuBLAS and `naive` on CUDA; no vendor and `cpu-reference` on the CPU.
    pub fn for_backend(kind: BackendKind) -> Baselines {
        match kind {
            BackendKind::Cuda => Baselines {
                vendor: Some("cublas".into()),
                naive: Some("naive".into()),
            },
            BackendKind::Cpu => Baselines {
                vendor: None,
                naive: Some("cpu-reference".into()),
            },
            BackendKind::Wgpu => Baselines {
                vendor: None,
                naive: Some("wgpu-naive".into()),
            },
        }
    }
}

/// The measurement settings a run used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Untimed launches before the timed ones (per kernel × problem).
    pub warmup: usize,
    /// Timed launches; with `min_time_s` also set, the minimum.
    pub iters: Option<usize>,
    /// Timing continued until the timed launches summed to this (capped by `max_iters`).
    pub min_time_s: Option<f64>,
    /// Cap on timed launches.
    pub max_iters: usize,
    /// The rotating input sets together exceed this many bytes.
    pub cache_bytes: u64,
    /// Cap on input sets.
    pub max_input_sets: usize,
    /// Products with m·n·k at most this are verified in full; larger ones by sampling.
    pub verify_full_limit: u64,
    /// Random entries of a sampled verification (the last row, last column and corners added).
    pub verify_samples: usize,
    /// Seed of the random inputs.
    pub seed: u64,
    /// Timing rounds per problem (see `BenchConfig::rounds`); 1 in reports written before it.
    #[serde(default = "one_round")]
    pub rounds: usize,
}

fn one_round() -> usize {
    1
}

/// The device's ceilings as measured in this run and as its datasheet gives them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CeilingsInfo {
    /// Measured on this machine in this run (None when not measured).
    pub measured: Option<Ceilings>,
    /// The datasheet's, when the device is in the table.
    pub datasheet: Option<Ceilings>,
}

/// A kernel of the user's own (`matmul bench --kernel-file`, docs/own-kernels.md): the file and
/// how it was launched, enough to run it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelFile {
    /// The file as given on the command line.
    pub path: String,
    /// "cuda" (.cu) or "wgsl" (.wgsl).
    pub lang: String,
    /// The entry point.
    pub entry: String,
    /// The launch options as given (`-D NAME=VALUE`, `--grid`, `--block`, `--shared`,
    /// `--zero-c`), in command-line form.
    pub options: Vec<String>,
}

/// The prefix of a kernel file's record name: `file:mine.cu` (no registry name has a colon).
pub const KERNEL_FILE_PREFIX: &str = "file:";

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

/// One kernel × dtype × shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Registry name; `auto`; [`INT8_CEILING`]; or for a kernel of the user's own,
    /// [`KERNEL_FILE_PREFIX`] and its file name (`file:mine.cu`), described by `kernel_file`.
    pub kernel: String,
    /// For a kernel of the user's own: its file and launch options; None for ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_file: Option<KernelFile>,
    /// The tiling a SIMT-ladder kernel ran with (`BMxBNxBK/TMxTN...`); None for other kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiling: Option<String>,
    /// For kernel `auto`: the registry name of the kernel it chose for this problem (its tiling
    /// is `tiling`); None for every other kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<String>,
    /// "cpu" or "cuda" (the kernel's backend).
    pub backend: String,
    /// The element type.
    pub dtype: DType,
    /// "MxNxK", with " (TN)" etc. when an operand is transposed.
    pub shape: String,
    /// The product run (shape, transpositions, dtype, C's type).
    pub problem: Problem,
    /// Products of a strided batch run as one (`bench --batch N`): `shape` reads "N × MxNxK",
    /// and `flops`, the bytes and the timing are the whole batch's. 1 for a single product.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub batch: usize,
    /// The tags (classes) of the suite case it ran; empty outside a suite.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// OK, FAILED or SKIPPED.
    pub status: Status,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
    /// The check against the CPU reference (None when not run).
    pub verification: Option<Verification>,
    /// How it was timed (None unless verified and timed).
    pub timing: Option<Timing>,
    /// 2·m·n·k.
    pub flops: f64,
    /// (m·k + k·n)·input bytes + m·n·output bytes.
    pub min_bytes: f64,
    /// Global-memory bytes of the kernel's traffic model (`KernelSpec::model_bytes`): what the
    /// kernel asks of global memory before any cache helps. A teaching figure, not a roofline
    /// placement: caches serve much of it, and no measured L2 roof exists to hold it against.
    pub model_bytes: f64,
    /// Bytes a profiler measured (None unless one was run).
    pub measured_bytes: Option<f64>,
    /// flops / model_bytes.
    pub intensity_model: f64,
    /// flops / measured_bytes.
    pub intensity_measured: Option<f64>,
    /// "FLOP/s" (floats) or "OP/s" (u32).
    pub rate_unit: String,
    /// flops / median time, in 10^9 per second (GFLOP/s or GOP/s).
    pub rate_gops: Option<f64>,
    /// min_bytes / median time, GB/s.
    pub bandwidth_gbs: Option<f64>,
    /// The roof that bounds this result and how close it came (None when skipped or no ceilings).
    pub roof: Option<RoofBound>,
    /// cuBLAS median / this median for the same dtype and problem: 1.0 is parity.
    pub vs_cublas: Option<f64>,
    /// Naive median / this median: the speedup over the seeds' naive kernel.
    pub vs_naive: Option<f64>,
    /// u32 rows of a run with the [`INT8_CEILING`] row: this rate ÷ (cuBLASLt int8's rate ÷ 10)
    /// for the same problem, the share of the byte split's 10-product ceiling reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_int8_ceiling: Option<f64>,
    /// u32 rows of a run with [`IMAD_KERNEL`]: its median / this median (the speedup over it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_imad: Option<f64>,
}

impl Record {
    /// A record with the problem's counts filled and nothing measured.
    pub fn new(
        kernel: &matmul::KernelSpec,
        problem: &Problem,
        opts: &matmul::RunOptions,
        status: Status,
    ) -> Record {
        let mut record = Record::blank(
            kernel.name,
            kernel.backend.to_string(),
            problem,
            status,
            kernel.model_bytes(problem, opts),
        );
        record.tiling = kernel.tiling(opts).map(|t| t.to_string());
        record
    }

    /// A FAILED record of `kernel` on `backend` that never got to run any kernel (`auto` could
    /// not choose one): the problem's counts, the traffic model's bytes taken as the minimum.
    pub fn unresolved(kernel: &str, backend: &str, problem: &Problem, reason: String) -> Record {
        let mut record = Record::blank(
            kernel,
            backend.to_string(),
            problem,
            Status::Failed,
            problem.min_bytes(),
        );
        record.reason = Some(reason);
        record
    }

    /// `kernel` on `backend` for `problem`, with its counts and `model_bytes` and nothing else.
    fn blank(
        kernel: &str,
        backend: String,
        problem: &Problem,
        status: Status,
        model_bytes: f64,
    ) -> Record {
        Record {
            kernel: kernel.to_string(),
            kernel_file: None,
            tiling: None,
            chosen: None,
            backend,
            dtype: problem.dtype,
            shape: problem.shape_label(),
            problem: *problem,
            batch: 1,
            tags: Vec::new(),
            status,
            reason: None,
            verification: None,
            timing: None,
            flops: problem.flops(),
            min_bytes: problem.min_bytes(),
            model_bytes,
            measured_bytes: None,
            intensity_model: problem.flops() / model_bytes,
            intensity_measured: None,
            rate_unit: format!("{}/s", problem.dtype.rate_unit()),
            rate_gops: None,
            bandwidth_gbs: None,
            roof: None,
            vs_cublas: None,
            vs_naive: None,
            vs_int8_ceiling: None,
            vs_imad: None,
        }
    }

    /// This record as the row of a strided batch of `count` products: the shape labelled
    /// "count × MxNxK", the FLOPs and bytes the batch's.
    pub fn batched(mut self, count: usize) -> Record {
        let n = count as f64;
        self.batch = count;
        self.shape = format!("{count} × {}", self.shape);
        self.flops *= n;
        self.min_bytes *= n;
        self.model_bytes *= n;
        self
    }

    /// The [`INT8_CEILING`] row for u32 `problem` before it is timed: its rate is int8
    /// operations of the same m, n, k, its bytes the int8 product's (1-byte A and B, 4-byte C),
    /// no verification.
    pub fn int8_ceiling(problem: &Problem) -> Record {
        let (m, n, k) = (problem.m as f64, problem.n as f64, problem.k as f64);
        let bytes = m * k + k * n + 4.0 * m * n;
        let mut r = Record::blank(INT8_CEILING, "cuda".into(), problem, Status::Skipped, bytes);
        r.min_bytes = bytes;
        r
    }

    /// The record of a kernel of the user's own named `name` (`file:mine.cu`) on `backend`
    /// before it runs: no traffic model, so `model_bytes` is the compulsory traffic.
    pub fn kernel_file(name: &str, backend: &str, problem: &Problem, file: KernelFile) -> Record {
        let mut r = Record::blank(
            name,
            backend.to_string(),
            problem,
            Status::Skipped,
            problem.min_bytes(),
        );
        r.kernel_file = Some(file);
        r
    }

    /// Whether this is the [`INT8_CEILING`] row (not a u32 kernel's).
    pub fn is_int8_ceiling(&self) -> bool {
        self.kernel == INT8_CEILING
    }

    /// The kernel that actually ran: for `auto` the one it chose (`chosen`), else `kernel`.
    /// Whatever depends on the code that ran, such as the compute roof of a byte-split or
    /// 3xTF32 kernel, follows this name, not the row's.
    pub fn ran_kernel(&self) -> &str {
        self.chosen.as_deref().unwrap_or(&self.kernel)
    }

    /// The kernel as the tables name it: the registry name, or for `auto` what it chose,
    /// `auto (warptile 128x128x16/8x4)`.
    pub fn label(&self) -> String {
        // `auto` on f32 may run FP32 emulated on tf32: say so where it does.
        let via = |c: &str| {
            if matmul::find(c).is_ok_and(|k| k.is_tf32x3()) {
                ", f32 via 3xTF32"
            } else {
                ""
            }
        };
        match (&self.chosen, &self.tiling) {
            (Some(c), Some(t)) => format!("{} ({c} {t}{})", self.kernel, via(c)),
            (Some(c), None) => format!("{} ({c}{})", self.kernel, via(c)),
            (None, _) => self.kernel.clone(),
        }
    }

    /// The median launch time, seconds (None when not timed).
    pub fn median_s(&self) -> Option<f64> {
        self.timing.as_ref().map(|t| t.stats.median)
    }

    /// With several timing rounds: (slowest − fastest round median) / the pooled median.
    pub fn round_spread(&self) -> Option<f64> {
        let t = self.timing.as_ref()?;
        let m = &t.round_medians_s;
        if m.len() < 2 || t.stats.median <= 0.0 {
            return None;
        }
        let (lo, hi) = m.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
        Some((hi - lo) / t.stats.median)
    }

    /// Where the roofline places this record: flops over the measured DRAM bytes if a profiler
    /// gave them, else over the compulsory bytes (`min_bytes`: one intensity per problem, the
    /// same for every kernel); `in_cache` when its rotated input sets stayed below `cache_bytes`
    /// (the operands may then have been served from a cache, and only the compute roof applies).
    pub fn placement(&self, cache_bytes: u64) -> Placement {
        let in_cache = self.timing.as_ref().is_some_and(|t| {
            (t.input_sets as u128) * (t.input_set_bytes as u128) < cache_bytes as u128
        });
        match self.intensity_measured {
            Some(i) => Placement {
                intensity: i,
                bytes: Bytes::Measured,
                in_cache,
            },
            None => Placement {
                intensity: self.flops / self.min_bytes,
                bytes: Bytes::Compulsory,
                in_cache,
            },
        }
    }

    /// Sets the profiler-measured bytes (and so the measured intensity); call
    /// [`Report::apply_ceilings`] afterwards to re-evaluate the roof.
    pub fn set_measured_bytes(&mut self, bytes: f64) {
        self.measured_bytes = Some(bytes);
        self.intensity_measured = (bytes > 0.0).then(|| self.flops / bytes);
    }
}

/// A whole benchmark run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`] of the code that wrote it.
    pub schema_version: u32,
    /// The machine, the date, the commit and the command line.
    pub system: SystemInfo,
    /// How the run measured.
    pub settings: Settings,
    /// The suite run (`--suite`: a built-in name or a path); None for sizes or shapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suite: Option<String>,
    /// The kernels ratios are taken against.
    pub baselines: Baselines,
    /// The ceilings the roofs come from.
    pub ceilings: CeilingsInfo,
    /// One per kernel × dtype × shape, in run order.
    pub records: Vec<Record>,
    /// Why the run stopped before its last case (an interrupt), or None for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
}

impl Report {
    /// Attaches the ceilings and (re)computes every record's roof at its
    /// [`Record::placement`]: the measured DRAM bytes where a profiler provided them, else the
    /// compulsory bytes.
    pub fn apply_ceilings(&mut self, measured: Option<Ceilings>, datasheet: Option<Ceilings>) {
        self.ceilings = CeilingsInfo {
            measured,
            datasheet,
        };
        self.recompute_roofs();
    }

    /// (Re)computes every record's roof from the ceilings the report holds, each under the
    /// compute roof of the kernel that ran ([`Record::ran_kernel`]).
    pub fn recompute_roofs(&mut self) {
        let roofs = self.roofs();
        let cache_bytes = self.settings.cache_bytes;
        for r in &mut self.records {
            r.roof = if r.status == Status::Skipped {
                None
            } else {
                roofs.bound_for_kernel(
                    r.ran_kernel(),
                    r.dtype,
                    r.placement(cache_bytes),
                    r.rate_gops,
                )
            };
        }
    }

    /// Where the intensities placing records on the roofline come from.
    pub fn intensity_source(&self) -> &'static str {
        let measured = self.records.iter().any(|r| r.intensity_measured.is_some());
        if measured {
            "DRAM bytes measured by ncu where profiled, else the compulsory traffic"
        } else {
            "compulsory traffic: A and B read once, C written once"
        }
    }

    /// The records above the roof that bounds them: a measurement problem, never a result.
    pub fn above_roof(&self) -> Vec<&Record> {
        self.records
            .iter()
            .filter(|r| {
                r.status == Status::Ok && r.roof.as_ref().is_some_and(RoofBound::above_roof)
            })
            .collect()
    }

    /// The roofs in force (measured where measured, else datasheet).
    pub fn roofs(&self) -> Roofs {
        Roofs::effective(
            self.ceilings.measured.as_ref(),
            self.ceilings.datasheet.as_ref(),
        )
    }

    /// (Re)computes `vs_cublas` and `vs_naive` from the baselines run in this report; a baseline
    /// that was not run, failed or was skipped leaves the ratio `None`.
    pub fn compute_ratios(&mut self) {
        let median_of = |name: &Option<String>, p: &Problem, records: &[Record]| {
            let name = name.as_deref()?;
            records
                .iter()
                .find(|r| r.kernel == name && r.problem == *p && r.status == Status::Ok)
                .and_then(Record::median_s)
        };
        let ratios: Vec<(Option<f64>, Option<f64>)> = self
            .records
            .iter()
            .map(|r| {
                let Some(t) = r
                    .median_s()
                    .filter(|_| r.status == Status::Ok && !r.is_int8_ceiling())
                else {
                    return (None, None);
                };
                let vendor = median_of(&self.baselines.vendor, &r.problem, &self.records);
                let naive = median_of(&self.baselines.naive, &r.problem, &self.records);
                (vendor.map(|v| v / t), naive.map(|n| n / t))
            })
            .collect();
        let u32_ratios: Vec<(Option<f64>, Option<f64>)> = self
            .records
            .iter()
            .map(|r| {
                let Some(t) = r.median_s().filter(|_| {
                    r.status == Status::Ok && r.dtype == DType::U32 && !r.is_int8_ceiling()
                }) else {
                    return (None, None);
                };
                let int8 = median_of(&Some(INT8_CEILING.into()), &r.problem, &self.records);
                let imad = median_of(&Some(IMAD_KERNEL.into()), &r.problem, &self.records);
                // rate / (int8 rate / 10) = 10 · int8 median / this median.
                (int8.map(|i| 10.0 * i / t), imad.map(|i| i / t))
            })
            .collect();
        for ((r, (v, n)), (c, i)) in self.records.iter_mut().zip(ratios).zip(u32_ratios) {
            r.vs_cublas = v;
            r.vs_naive = n;
            r.vs_int8_ceiling = c;
            r.vs_imad = i;
        }
    }

    /// Whether any record has a `vs_int8_ceiling` or `vs_imad` ratio (the tables then show
    /// those two columns).
    pub fn has_u32_ratios(&self) -> bool {
        self.records
            .iter()
            .any(|r| r.vs_int8_ceiling.is_some() || r.vs_imad.is_some())
    }

    /// results.json: pretty-printed JSON.
    pub fn to_json(&self) -> io::Result<String> {
        serde_json::to_string_pretty(self).map_err(io::Error::other)
    }

    /// Reads results.json (an error names what does not fit the schema). A schema-1 file, whose
    /// roofs placed each kernel by its traffic model, gets its roofs recomputed by the current
    /// model and the current schema version; everything else reads back exactly.
    pub fn from_json(text: &str) -> io::Result<Report> {
        let mut report: Report = serde_json::from_str(text)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if report.schema_version < 2 {
            report.recompute_roofs();
            report.schema_version = SCHEMA_VERSION;
        }
        Ok(report)
    }

    /// The points the roofline plots: for each kernel × dtype that was timed, its largest shape
    /// (most FLOPs; the first on ties), numbered in record order.
    pub fn plot_points(&self) -> Vec<PlotPoint> {
        let mut best: Vec<&Record> = Vec::new();
        for r in &self.records {
            if r.status != Status::Ok || r.rate_gops.is_none() {
                continue;
            }
            match best
                .iter_mut()
                .find(|b| b.kernel == r.kernel && b.dtype == r.dtype)
            {
                Some(b) if r.flops > b.flops => *b = r,
                Some(_) => {}
                None => best.push(r),
            }
        }
        best.iter()
            .enumerate()
            .map(|(i, r)| PlotPoint {
                number: i + 1,
                kernel: r.kernel.clone(),
                dtype: r.dtype,
                shape: r.shape.clone(),
                intensity: r.roof.as_ref().map_or_else(
                    || r.placement(self.settings.cache_bytes).intensity,
                    |b| b.intensity,
                ),
                rate_gops: r.rate_gops.unwrap_or(0.0),
                bound: r.roof.clone(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::synthetic_report;

    #[test]
    fn json_round_trip() {
        let report = synthetic_report();
        let text = report.to_json().unwrap();
        let back = Report::from_json(&text).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.to_json().unwrap(), text);
        assert!(Report::from_json("{}").is_err());
    }

    #[test]
    fn ratios_use_only_baselines_that_ran() {
        let mut report = synthetic_report();
        let find = |r: &Report, k: &str, d: DType, n: usize| {
            r.records
                .iter()
                .find(|x| x.kernel == k && x.dtype == d && x.problem.m == n)
                .cloned()
                .unwrap()
        };
        // Synthetic records keep the template's timing; give the baselines distinct medians.
        for r in &mut report.records {
            let t = r.timing.as_mut().unwrap();
            t.stats.median = match r.kernel.as_str() {
                "cublas" => 1.0,
                "naive" => 8.0,
                _ => 2.0,
            };
        }
        report.compute_ratios();
        let tiled = find(&report, "tiled", DType::F32, 1024);
        assert_eq!(tiled.vs_cublas, Some(0.5));
        assert_eq!(tiled.vs_naive, Some(4.0));
        // A failed baseline gives no ratio.
        for r in &mut report.records {
            if r.kernel == "cublas" && r.dtype == DType::F32 {
                r.status = Status::Failed;
            }
        }
        report.compute_ratios();
        assert_eq!(find(&report, "tiled", DType::F32, 1024).vs_cublas, None);
        assert_eq!(
            find(&report, "tiled", DType::U32, 1024).vs_cublas,
            Some(0.5)
        );
    }
}
