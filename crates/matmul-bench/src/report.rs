//! The report: one record per kernel × dtype × shape, the machine, the ceilings; rendered as
//! JSON, CSV, SVG, Markdown, HTML and a text table. The JSON schema is docs/results-schema.md.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use matmul::{BackendKind, DType, Problem};

use crate::ceilings::Ceilings;
use crate::check::Verification;
use crate::fmt::{self, xml_escape};
use crate::roofline::{render_svg, PlotPoint, RoofBound, Roofs};
use crate::stats::Stats;
use crate::system::SystemInfo;

/// Bumped whenever a field of results.json changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

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
        }
    }
}

/// The measurement settings a run used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub warmup: usize,
    pub iters: Option<usize>,
    pub min_time_s: Option<f64>,
    pub max_iters: usize,
    pub cache_bytes: u64,
    pub max_input_sets: usize,
    /// Products with m·n·k at most this are verified in full; larger ones by sampling.
    pub verify_full_limit: u64,
    pub verify_samples: usize,
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
    pub measured: Option<Ceilings>,
    pub datasheet: Option<Ceilings>,
}

/// One kernel × dtype × shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Registry name.
    pub kernel: String,
    /// The tiling a SIMT-ladder kernel ran with (`BMxBNxBK/TMxTN...`); None for other kernels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiling: Option<String>,
    /// "cpu" or "cuda" (the kernel's backend).
    pub backend: String,
    pub dtype: DType,
    /// "MxNxK", with " (TN)" etc. when an operand is transposed.
    pub shape: String,
    pub problem: Problem,
    pub status: Status,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
    pub verification: Option<Verification>,
    pub timing: Option<Timing>,
    /// 2·m·n·k.
    pub flops: f64,
    /// (m·k + k·n)·input bytes + m·n·output bytes.
    pub min_bytes: f64,
    /// Global-memory bytes of the kernel's traffic model (`KernelSpec::model_bytes`).
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
    pub roof: Option<RoofBound>,
    /// cuBLAS median / this median for the same dtype and problem: 1.0 is parity.
    pub vs_cublas: Option<f64>,
    /// Naive median / this median: the speedup over the seeds' naive kernel.
    pub vs_naive: Option<f64>,
}

impl Record {
    /// A record with the problem's counts filled and nothing measured.
    pub fn new(
        kernel: &matmul::KernelSpec,
        problem: &Problem,
        opts: &matmul::RunOptions,
        status: Status,
    ) -> Record {
        let model_bytes = kernel.model_bytes(problem, opts);
        Record {
            kernel: kernel.name.to_string(),
            tiling: kernel.tiling(opts).map(|t| t.to_string()),
            backend: kernel.backend.to_string(),
            dtype: problem.dtype,
            shape: problem.shape_label(),
            problem: *problem,
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
        }
    }

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

    /// Sets the profiler-measured bytes (and so the measured intensity); call
    /// [`Report::apply_ceilings`] afterwards to re-evaluate the roof.
    pub fn set_measured_bytes(&mut self, bytes: f64) {
        self.measured_bytes = Some(bytes);
        self.intensity_measured = (bytes > 0.0).then(|| self.flops / bytes);
    }

    fn rate_text(&self) -> String {
        self.rate_gops
            .map_or("-".into(), |r| fmt::rate(r, self.dtype.rate_unit()))
    }
}

/// A whole benchmark run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    pub system: SystemInfo,
    pub settings: Settings,
    pub baselines: Baselines,
    pub ceilings: CeilingsInfo,
    pub records: Vec<Record>,
}

/// Paths of the files [`write_reports`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    pub json: PathBuf,
    pub csv: PathBuf,
    pub svg: PathBuf,
    pub markdown: PathBuf,
    pub html: PathBuf,
}

/// Writes results.json, results.csv, roofline.svg, report.md and report.html into `dir`
/// (created if missing).
pub fn write_reports(report: &Report, dir: &Path) -> io::Result<ReportFiles> {
    std::fs::create_dir_all(dir)?;
    let files = ReportFiles {
        json: dir.join("results.json"),
        csv: dir.join("results.csv"),
        svg: dir.join("roofline.svg"),
        markdown: dir.join("report.md"),
        html: dir.join("report.html"),
    };
    std::fs::write(&files.json, report.to_json()?)?;
    std::fs::write(&files.csv, report.to_csv())?;
    std::fs::write(&files.svg, report.roofline_svg())?;
    std::fs::write(&files.markdown, report.to_markdown("roofline.svg"))?;
    std::fs::write(&files.html, report.to_html())?;
    Ok(files)
}

const CSV_HEADER: &[&str] = &[
    "kernel",
    "backend",
    "dtype",
    "m",
    "n",
    "k",
    "op_a",
    "op_b",
    "status",
    "reason",
    "verify_method",
    "verify_passed",
    "verify_rel_error",
    "verify_max_abs_error",
    "warmup",
    "iters",
    "input_sets",
    "median_s",
    "mean_s",
    "std_s",
    "min_s",
    "max_s",
    "rate_gops",
    "rate_unit",
    "bandwidth_gbs",
    "flops",
    "min_bytes",
    "model_bytes",
    "measured_bytes",
    "intensity_model",
    "intensity_measured",
    "roof",
    "roof_bound_gops",
    "roof_percent",
    "vs_cublas",
    "vs_naive",
];

/// Quotes a CSV field when it holds a comma, quote, CR or LF (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// A float for CSV: shortest round-trip digits, in exponent form when tiny or huge.
fn num(x: f64) -> String {
    let a = x.abs();
    if x != 0.0 && !(1e-4..1e15).contains(&a) {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

fn opt_num(v: Option<f64>) -> String {
    v.map_or(String::new(), num)
}

impl Report {
    /// Attaches the ceilings and (re)computes every record's roof. The measured intensity is used
    /// where a profiler provided bytes, else the traffic model's.
    pub fn apply_ceilings(&mut self, measured: Option<Ceilings>, datasheet: Option<Ceilings>) {
        self.ceilings = CeilingsInfo {
            measured,
            datasheet,
        };
        let roofs = self.roofs();
        for r in &mut self.records {
            r.roof = if r.status == Status::Skipped {
                None
            } else {
                let intensity = r.intensity_measured.unwrap_or(r.intensity_model);
                roofs.bound(r.dtype, intensity, r.rate_gops)
            };
        }
    }

    /// Where the intensities placing records on the roofline come from.
    pub fn intensity_source(&self) -> &'static str {
        let measured = self.records.iter().any(|r| r.intensity_measured.is_some());
        if measured {
            "DRAM bytes measured by ncu where profiled, else the traffic model"
        } else {
            "traffic model"
        }
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
                let Some(t) = r.median_s().filter(|_| r.status == Status::Ok) else {
                    return (None, None);
                };
                let vendor = median_of(&self.baselines.vendor, &r.problem, &self.records);
                let naive = median_of(&self.baselines.naive, &r.problem, &self.records);
                (vendor.map(|v| v / t), naive.map(|n| n / t))
            })
            .collect();
        for (r, (v, n)) in self.records.iter_mut().zip(ratios) {
            r.vs_cublas = v;
            r.vs_naive = n;
        }
    }

    pub fn to_json(&self) -> io::Result<String> {
        serde_json::to_string_pretty(self).map_err(io::Error::other)
    }

    pub fn from_json(text: &str) -> io::Result<Report> {
        serde_json::from_str(text).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    /// One header row and one row per record (RFC 4180 quoting, LF line ends).
    pub fn to_csv(&self) -> String {
        let mut out = CSV_HEADER.join(",");
        out.push('\n');
        for r in &self.records {
            let v = r.verification.as_ref();
            let t = r.timing.as_ref();
            let s = t.map(|t| t.stats);
            let b = r.roof.as_ref();
            let fields: Vec<String> = vec![
                r.kernel.clone(),
                r.backend.clone(),
                r.dtype.to_string(),
                r.problem.m.to_string(),
                r.problem.n.to_string(),
                r.problem.k.to_string(),
                format!("{:?}", r.problem.op_a),
                format!("{:?}", r.problem.op_b),
                r.status.name().to_string(),
                r.reason.clone().unwrap_or_default(),
                opt(v.map(|v| {
                    serde_json::to_value(v.method)
                        .ok()
                        .and_then(|x| x.as_str().map(str::to_string))
                        .unwrap_or_default()
                })),
                opt(v.map(|v| v.passed)),
                opt_num(v.and_then(|v| v.rel_error)),
                opt_num(v.and_then(|v| v.max_abs_error)),
                opt(t.map(|t| t.warmup)),
                opt(t.map(|t| t.iters)),
                opt(t.map(|t| t.input_sets)),
                opt_num(s.map(|s| s.median)),
                opt_num(s.map(|s| s.mean)),
                opt_num(s.map(|s| s.std_dev)),
                opt_num(s.map(|s| s.min)),
                opt_num(s.map(|s| s.max)),
                opt_num(r.rate_gops),
                r.rate_unit.clone(),
                opt_num(r.bandwidth_gbs),
                num(r.flops),
                num(r.min_bytes),
                num(r.model_bytes),
                opt_num(r.measured_bytes),
                num(r.intensity_model),
                opt_num(r.intensity_measured),
                opt(b.map(|b| b.roof.clone())),
                opt_num(b.map(|b| b.bound_gops)),
                opt_num(b.and_then(|b| b.percent)),
                opt_num(r.vs_cublas),
                opt_num(r.vs_naive),
            ];
            debug_assert_eq!(fields.len(), CSV_HEADER.len());
            let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
            out.push_str(&line.join(","));
            out.push('\n');
        }
        out
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
                intensity: r.intensity_measured.unwrap_or(r.intensity_model),
                rate_gops: r.rate_gops.unwrap_or(0.0),
                bound: r.roof.clone(),
            })
            .collect()
    }

    pub fn roofline_svg(&self) -> String {
        let title = format!("Roofline: {} ({})", self.system.device, self.system.date);
        let subtitle = "Largest timed shape per kernel and dtype; intensity from each kernel's \
                        global-memory traffic model (before caches), rate from the median time.";
        render_svg(&title, subtitle, &self.roofs(), &self.plot_points())
    }

    fn vendor_header(&self) -> String {
        match self.baselines.vendor.as_deref() {
            Some("cublas") | None => "vs cuBLAS".into(),
            Some(v) => format!("vs {v}"),
        }
    }

    /// A compact aligned table for stdout: OK and FAILED rows, then skipped cases grouped.
    pub fn table(&self) -> String {
        let naive = self.baselines.naive.as_deref().unwrap_or("naive");
        let vendor_h = self.vendor_header();
        let header = [
            "kernel",
            "dtype",
            "shape",
            "median",
            "rate",
            vendor_h.as_str(),
            "vs naive",
            "roof",
            "status",
        ];
        let rounds = self.settings.rounds > 1;
        let rows: Vec<Vec<String>> = self
            .records
            .iter()
            .filter(|r| r.status != Status::Skipped)
            .map(|r| {
                let mut row = vec![
                    r.kernel.clone(),
                    r.dtype.to_string(),
                    r.shape.clone(),
                    r.median_s().map_or("-".into(), fmt::time),
                    r.rate_text(),
                    r.vs_cublas
                        .map_or("-".into(), |v| format!("{}%", fmt::sig(v * 100.0, 3))),
                    r.vs_naive
                        .map_or("-".into(), |v| format!("{}x", fmt::sig(v, 3))),
                    r.roof
                        .as_ref()
                        .filter(|_| r.status == Status::Ok)
                        .and_then(|b| b.percent.map(|p| format!("{}% {}", fmt::sig(p, 3), b.roof)))
                        .unwrap_or_else(|| "-".into()),
                    r.status.name().to_string(),
                ];
                if rounds {
                    row.push(
                        r.round_spread()
                            .map_or("-".into(), |s| format!("{}%", fmt::sig(s * 100.0, 2))),
                    );
                }
                row
            })
            .collect();
        let mut header = header.to_vec();
        let mut right = vec![false, false, false, true, true, true, true, true, false];
        if rounds {
            header.push("spread");
            right.push(true);
        }
        let mut out = fmt::align(&header, &rows, &right);
        if rows.is_empty() {
            out.push_str("(no kernel ran)\n");
        }
        let source = self.intensity_source();
        let _ = writeln!(
            out,
            "vs naive = speedup over `{naive}`; roof = % of the bounding roof (intensity: {source})"
        );
        if rounds {
            let _ = writeln!(
                out,
                "{} timing rounds per shape, kernels rotated each round; spread = (slowest − fastest round median) / median",
                self.settings.rounds
            );
        }
        for r in self.records.iter().filter(|r| r.status == Status::Failed) {
            let _ = writeln!(
                out,
                "FAILED {} {} {}: {}",
                r.kernel,
                r.dtype,
                r.shape,
                r.reason.as_deref().unwrap_or("")
            );
        }
        for (what, count, reason) in self.skipped_groups() {
            let _ = writeln!(out, "skipped {what} ({count}x): {reason}");
        }
        out
    }

    /// Skipped records grouped by kernel and dtype: (label, count, first reason).
    fn skipped_groups(&self) -> Vec<(String, usize, String)> {
        let mut groups: Vec<(String, usize, String)> = Vec::new();
        for r in self.records.iter().filter(|r| r.status == Status::Skipped) {
            let label = format!("{} {}", r.kernel, r.dtype);
            match groups.iter_mut().find(|g| g.0 == label) {
                Some(g) => g.1 += 1,
                None => groups.push((label, 1, r.reason.clone().unwrap_or_default())),
            }
        }
        groups
    }

    /// Rows of the results table of report.md / report.html (OK and FAILED records).
    fn result_rows(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = vec![
            "kernel".to_string(),
            "dtype".into(),
            "shape".into(),
            "median (ms)".into(),
            "rate".into(),
            format!("% of {}", self.vendor_header().trim_start_matches("vs ")),
            format!("× {}", self.baselines.naive.as_deref().unwrap_or("naive")),
            "bound roof".into(),
            "% of roof".into(),
            "verification".into(),
        ];
        let rows = self
            .records
            .iter()
            .filter(|r| r.status != Status::Skipped)
            .map(|r| {
                let ok = r.status == Status::Ok;
                vec![
                    r.kernel.clone(),
                    r.dtype.to_string(),
                    r.shape.clone(),
                    r.median_s().map_or("-".into(), |t| fmt::sig(t * 1e3, 4)),
                    r.rate_text(),
                    r.vs_cublas.map_or("-".into(), |v| fmt::sig(v * 100.0, 3)),
                    r.vs_naive.map_or("-".into(), |v| fmt::sig(v, 3)),
                    r.roof
                        .as_ref()
                        .filter(|_| ok)
                        .map_or("-".into(), |b| b.roof.clone()),
                    r.roof
                        .as_ref()
                        .filter(|_| ok)
                        .and_then(|b| b.percent)
                        .map_or("-".into(), |p| fmt::sig(p, 3)),
                    match (&r.verification, r.status) {
                        (Some(v), _) => v.summary(),
                        (None, Status::Failed) => "not verified (run failed)".into(),
                        _ => "-".into(),
                    },
                ]
            })
            .collect();
        (header, rows)
    }

    /// The ceilings table: roof, measured, datasheet.
    fn ceiling_rows(&self) -> Vec<Vec<String>> {
        let (m, d) = (
            self.ceilings.measured.as_ref(),
            self.ceilings.datasheet.as_ref(),
        );
        let mut names: Vec<String> = Vec::new();
        for c in m.iter().chain(d.iter()) {
            for (n, _) in c.roofs() {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let value = |c: Option<&Ceilings>, name: &str| {
            c.and_then(|c| c.roofs().into_iter().find(|(n, _)| n == name))
                .map_or("-".into(), |(_, v)| match name {
                    "memory" => fmt::bandwidth(v),
                    "int32" => fmt::rate(v, "OP"),
                    _ => fmt::rate(v, "FLOP"),
                })
        };
        names
            .iter()
            .map(|n| vec![n.clone(), value(m, n), value(d, n)])
            .collect()
    }

    fn system_lines(&self) -> Vec<(String, String)> {
        let s = &self.system;
        let mut v = vec![
            ("device".to_string(), s.device.clone()),
            ("backend".into(), s.backend.clone()),
            (
                "CPU".into(),
                format!(
                    "{} ({} cores, {} threads)",
                    s.cpu_model.as_deref().unwrap_or("unknown"),
                    s.cpu_cores,
                    s.cpu_threads
                ),
            ),
            ("date".into(), s.date.clone()),
            (
                "commit".into(),
                match (&s.git_commit, s.git_dirty) {
                    (Some(c), Some(true)) => format!("{c} (with uncommitted changes)"),
                    (Some(c), _) => c.clone(),
                    (None, _) => "unknown".into(),
                },
            ),
            ("command".into(), s.command_line.join(" ")),
        ];
        let st = &self.settings;
        v.push((
            "settings".into(),
            format!(
                "warmup {}, iters {}, min time {}, rotating inputs past {}, verify in full up to m·n·k = {} (else {} samples + last row/column)",
                st.warmup,
                st.iters.map_or("auto".into(), |i| i.to_string()),
                st.min_time_s.map_or("-".into(), fmt::time),
                fmt::bytes(st.cache_bytes),
                st.verify_full_limit,
                st.verify_samples
            ),
        ));
        v
    }

    /// report.md: system, results table, the roofline image (`svg_path`), ceilings, problems.
    pub fn to_markdown(&self, svg_path: &str) -> String {
        let md = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let table = |header: &[String], rows: &[Vec<String>]| {
            let mut t = format!(
                "| {} |\n",
                header.iter().map(|h| md(h)).collect::<Vec<_>>().join(" | ")
            );
            t.push_str(&format!("|{}\n", "---|".repeat(header.len())));
            for r in rows {
                t.push_str(&format!(
                    "| {} |\n",
                    r.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | ")
                ));
            }
            t
        };
        let mut out = format!("# matmul benchmark: {}\n\n", md(&self.system.device));
        for (k, v) in self.system_lines() {
            let _ = writeln!(out, "- **{k}**: {}", md(&v));
        }
        if let Some(gpu) = &self.system.gpu {
            let _ = writeln!(
                out,
                "\nGPU:\n\n```json\n{}\n```",
                serde_json::to_string_pretty(gpu).unwrap_or_default()
            );
        }
        let (header, rows) = self.result_rows();
        out.push_str("\n## Results\n\n");
        if rows.is_empty() {
            out.push_str("No kernel ran.\n");
        } else {
            out.push_str(&table(&header, &rows));
        }
        let _ = writeln!(
            out,
            "\nRates from the median time; `% of roof` against the lower of bandwidth × intensity \
             ({}) and the dtype's compute peak.",
            self.intensity_source()
        );
        let _ = writeln!(out, "\n## Roofline\n\n![roofline]({svg_path})\n");
        out.push_str("## Ceilings\n\n");
        let ceil = self.ceiling_rows();
        if ceil.is_empty() {
            out.push_str("No ceilings were measured or found in the datasheet table.\n");
        } else {
            out.push_str(&table(
                &["roof".into(), "measured".into(), "datasheet".into()],
                &ceil,
            ));
            out.push('\n');
            for c in [&self.ceilings.measured, &self.ceilings.datasheet]
                .into_iter()
                .flatten()
            {
                let _ = writeln!(out, "- {}: {}", md(&c.device), md(&c.source));
            }
        }
        let failed: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.status == Status::Failed)
            .collect();
        if !failed.is_empty() {
            out.push_str("\n## Failed\n\n");
            for r in failed {
                let _ = writeln!(
                    out,
                    "- `{}` {} {}: {}",
                    r.kernel,
                    r.dtype,
                    r.shape,
                    md(r.reason.as_deref().unwrap_or(""))
                );
            }
        }
        let skipped = self.skipped_groups();
        if !skipped.is_empty() {
            out.push_str("\n## Skipped\n\n");
            for (what, count, reason) in skipped {
                let _ = writeln!(out, "- {what} ({count}x): {}", md(&reason));
            }
        }
        out
    }

    /// report.html: the Markdown report's content with the SVG inline.
    pub fn to_html(&self) -> String {
        let e = xml_escape;
        let table = |header: &[String], rows: &[Vec<String>], numeric: &[usize]| {
            let mut t = String::from("<table>\n<tr>");
            for h in header {
                let _ = write!(t, "<th>{}</th>", e(h));
            }
            t.push_str("</tr>\n");
            for r in rows {
                t.push_str("<tr>");
                for (i, c) in r.iter().enumerate() {
                    let class = if numeric.contains(&i) {
                        " class=\"num\""
                    } else {
                        ""
                    };
                    let _ = write!(t, "<td{class}>{}</td>", e(c));
                }
                t.push_str("</tr>\n");
            }
            t.push_str("</table>\n");
            t
        };
        let title = format!("matmul benchmark: {}", self.system.device);
        let mut out = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n\
             <style>\nbody {{ font-family: Helvetica, Arial, sans-serif; margin: 2em; color: #222; }}\n\
             table {{ border-collapse: collapse; margin: 1em 0; }}\n\
             th, td {{ border: 1px solid #ccc; padding: 3px 8px; }}\n\
             th {{ background: #f3f3f3; }}\ntd.num {{ text-align: right; font-variant-numeric: tabular-nums; }}\n\
             code, pre {{ background: #f6f6f6; }}\n</style>\n</head>\n<body>\n<h1>{}</h1>\n<ul>\n",
            e(&title),
            e(&title)
        );
        for (k, v) in self.system_lines() {
            let _ = writeln!(out, "<li><b>{}</b>: {}</li>", e(&k), e(&v));
        }
        out.push_str("</ul>\n");
        if let Some(gpu) = &self.system.gpu {
            let _ = writeln!(
                out,
                "<pre>{}</pre>",
                e(&serde_json::to_string_pretty(gpu).unwrap_or_default())
            );
        }
        out.push_str("<h2>Results</h2>\n");
        let (header, rows) = self.result_rows();
        if rows.is_empty() {
            out.push_str("<p>No kernel ran.</p>\n");
        } else {
            out.push_str(&table(&header, &rows, &[3, 4, 5, 6, 8]));
        }
        out.push_str("<h2>Roofline</h2>\n");
        out.push_str(&self.roofline_svg());
        out.push_str("<h2>Ceilings</h2>\n");
        let ceil = self.ceiling_rows();
        if ceil.is_empty() {
            out.push_str("<p>No ceilings were measured or found in the datasheet table.</p>\n");
        } else {
            out.push_str(&table(
                &["roof".into(), "measured".into(), "datasheet".into()],
                &ceil,
                &[1, 2],
            ));
            out.push_str("<ul>\n");
            for c in [&self.ceilings.measured, &self.ceilings.datasheet]
                .into_iter()
                .flatten()
            {
                let _ = writeln!(out, "<li>{}: {}</li>", e(&c.device), e(&c.source));
            }
            out.push_str("</ul>\n");
        }
        let failed: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.status == Status::Failed)
            .collect();
        if !failed.is_empty() {
            out.push_str("<h2>Failed</h2>\n<ul>\n");
            for r in failed {
                let _ = writeln!(
                    out,
                    "<li><code>{}</code> {} {}: <pre>{}</pre></li>",
                    e(&r.kernel),
                    r.dtype,
                    e(&r.shape),
                    e(r.reason.as_deref().unwrap_or(""))
                );
            }
            out.push_str("</ul>\n");
        }
        let skipped = self.skipped_groups();
        if !skipped.is_empty() {
            out.push_str("<h2>Skipped</h2>\n<ul>\n");
            for (what, count, reason) in skipped {
                let _ = writeln!(out, "<li>{} ({count}x): {}</li>", e(&what), e(&reason));
            }
            out.push_str("</ul>\n");
        }
        out.push_str("</body>\n</html>\n");
        out
    }
}
