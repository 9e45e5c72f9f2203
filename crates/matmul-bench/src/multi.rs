//! A multi-GPU bench run (`matmul bench --gpus N`): its cases as JSON (`multi.json`) and Markdown
//! (`multi.md`), and the scaling table (docs/results.md) rendered from the runs of record kept under
//! `bench/baselines/<device>/multi-<N>gpu/` (see [`crate::record`] for the single-GPU runs).

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::record::BASELINES_DIR;
use crate::SystemInfo;

/// The file name of a multi-GPU run's JSON.
pub const JSON: &str = "multi.json";
/// The file name of its Markdown.
pub const MARKDOWN: &str = "multi.md";
/// The marker lines around README.md's generated scaling table.
pub const BEGIN: &str = "<!-- multi-table:begin -->";
/// See [`BEGIN`].
pub const END: &str = "<!-- multi-table:end -->";

/// One `matmul bench --gpus N` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultiRun {
    /// The machine, build and command line (device: every rank's device, `|`-separated).
    pub system: SystemInfo,
    /// GPUs (ranks).
    pub gpus: usize,
    /// NCCL's version and where it was loaded from.
    pub nccl: String,
    /// Untimed runs before timing, and timed runs of each mode.
    pub warmup: usize,
    /// See `warmup`.
    pub iters: usize,
    /// One per layout × dtype × shape.
    pub cases: Vec<MultiCase>,
}

/// One timed case; times are medians over the iterations, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultiCase {
    /// `row-split`, `ag-gemm`, `gemm-rs`.
    pub layout: String,
    /// The input dtype.
    pub dtype: String,
    /// The shape.
    pub m: usize,
    /// See `m`.
    pub n: usize,
    /// See `m`.
    pub k: usize,
    /// The local kernel.
    pub kernel: String,
    /// The whole problem on one GPU (same kernel choice), None when not run.
    pub one_gpu_s: Option<f64>,
    /// The layout as it runs (communication overlapped), the slowest rank.
    pub overlapped_s: f64,
    /// The same local products without communication.
    pub compute_s: f64,
    /// The same communication without products.
    pub comm_s: f64,
    /// 2·m·n·k / overlapped_s, in T(FL)OP/s.
    pub aggregate_tflops: f64,
    /// aggregate / gpus.
    pub per_gpu_tflops: f64,
    /// one_gpu_s / (gpus · overlapped_s).
    pub efficiency: Option<f64>,
    /// overlapped_s − compute_s.
    pub exposed_s: f64,
    /// C of the multi-GPU run against the 1-GPU C: `exact` (u32, bit for bit), `ok` (floats,
    /// within the reference tolerance), `MISMATCH ...`, or None when not compared.
    pub check: Option<String>,
    /// For the `auto` row: the placement the model chose (`1-gpu` or a layout), whose measured
    /// figures the row repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<String>,
}

impl MultiCase {
    /// The case's numbers from its medians (`one_gpu_s` None: no efficiency).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        layout: &str,
        dtype: &str,
        (m, n, k): (usize, usize, usize),
        kernel: &str,
        gpus: usize,
        one_gpu_s: Option<f64>,
        (overlapped_s, compute_s, comm_s): (f64, f64, f64),
    ) -> MultiCase {
        let flops = 2.0 * m as f64 * n as f64 * k as f64;
        let aggregate = flops / overlapped_s / 1e12;
        MultiCase {
            layout: layout.into(),
            dtype: dtype.into(),
            m,
            n,
            k,
            kernel: kernel.into(),
            one_gpu_s,
            overlapped_s,
            compute_s,
            comm_s,
            aggregate_tflops: aggregate,
            per_gpu_tflops: aggregate / gpus as f64,
            efficiency: one_gpu_s.map(|t1| t1 / (gpus as f64 * overlapped_s)),
            exposed_s: overlapped_s - compute_s,
            check: None,
            chosen: None,
        }
    }

    /// The share of the communication the overlap hid, (compute + comm − overlapped) / comm.
    pub fn hidden(&self) -> Option<f64> {
        (self.comm_s > 0.0).then(|| {
            ((self.compute_s + self.comm_s - self.overlapped_s) / self.comm_s).clamp(0.0, 1.0)
        })
    }
}

impl MultiRun {
    /// Reads a multi.json.
    pub fn load(path: &Path) -> io::Result<MultiRun> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
        serde_json::from_str(&text).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })
    }

    /// Writes multi.json and multi.md into `dir` (created if missing); returns their paths.
    pub fn write(&self, dir: &Path) -> io::Result<[PathBuf; 2]> {
        std::fs::create_dir_all(dir)?;
        let json = dir.join(JSON);
        let md = dir.join(MARKDOWN);
        let mut text = serde_json::to_string_pretty(self).map_err(io::Error::other)?;
        text.push('\n');
        std::fs::write(&json, text)?;
        std::fs::write(&md, self.markdown())?;
        Ok([json, md])
    }

    /// Every case as a Markdown table, with the run's device, NCCL, date, commit and command.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        let s = &self.system;
        let _ = writeln!(out, "# Multi-GPU bench: {} GPUs\n", self.gpus);
        let _ = writeln!(out, "Devices: {}  ", s.device);
        let _ = writeln!(out, "NCCL: {}  ", self.nccl);
        let _ = writeln!(
            out,
            "{}, commit {}, `{}` (medians of {} runs after {} warm-up)\n",
            s.date,
            s.git_commit.as_deref().unwrap_or("?"),
            crate::record::command_line(&s.command_line),
            self.iters,
            self.warmup
        );
        out.push_str(
            "| layout | dtype | shape | kernel | 1-GPU ms | N-GPU ms | aggregate TFLOP/s | per GPU | efficiency | compute ms | comm ms | exposed ms | hidden | check |\n\
             |---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        );
        for c in &self.cases {
            let layout = match &c.chosen {
                Some(pick) => format!("{} ({pick})", c.layout),
                None => c.layout.clone(),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {}x{}x{} | `{}` | {} | {:.3} | {:.1} | {:.1} | {} | {:.3} | {:.3} | {:.3} | {} | {} |",
                layout,
                c.dtype,
                c.m,
                c.n,
                c.k,
                c.kernel,
                c.one_gpu_s.map_or("—".into(), |t| format!("{:.3}", t * 1e3)),
                c.overlapped_s * 1e3,
                c.aggregate_tflops,
                c.per_gpu_tflops,
                pct(c.efficiency),
                c.compute_s * 1e3,
                c.comm_s * 1e3,
                c.exposed_s * 1e3,
                pct(c.hidden()),
                c.check.as_deref().unwrap_or("—"),
            );
        }
        if let Some(summary) = self.auto_summary() {
            let _ = writeln!(out, "\n{summary}");
        }
        out
    }

    /// How the `auto` rows compare with the fastest of every layout and one GPU measured for the
    /// same dtype and shape: the worst ratio and where (None without `auto` rows).
    pub fn auto_summary(&self) -> Option<String> {
        let mut worst: Option<(f64, &MultiCase)> = None;
        let mut count = 0;
        for auto in self.cases.iter().filter(|c| c.chosen.is_some()) {
            let same = |c: &&MultiCase| {
                c.chosen.is_none()
                    && (c.dtype.as_str(), c.m, c.n, c.k)
                        == (auto.dtype.as_str(), auto.m, auto.n, auto.k)
            };
            let best = self
                .cases
                .iter()
                .filter(same)
                .map(|c| c.overlapped_s)
                .chain(auto.one_gpu_s)
                .fold(f64::INFINITY, f64::min);
            let ratio = auto.overlapped_s / best;
            count += 1;
            if worst.is_none_or(|(w, _)| ratio > w) {
                worst = Some((ratio, auto));
            }
        }
        let (ratio, c) = worst?;
        Some(format!(
            "`auto` over {count} case(s): at worst {:.1} % slower than the fastest placement measured \
             ({} {}x{}x{}, chose {})",
            100.0 * (ratio - 1.0),
            c.dtype,
            c.m,
            c.n,
            c.k,
            c.chosen.as_deref().unwrap_or("?")
        ))
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{:.1} %", 100.0 * v))
}

/// The multi-GPU runs of record under `root` (the repository root):
/// `bench/baselines/<device>/multi-<N>gpu/multi.json`, sorted by path.
pub fn runs_of_record(root: &Path) -> io::Result<Vec<(String, MultiRun)>> {
    let base = root.join(BASELINES_DIR);
    let mut found = Vec::new();
    for device in std::fs::read_dir(&base)? {
        let device = device?;
        if !device.file_type()?.is_dir() {
            continue;
        }
        for run in std::fs::read_dir(device.path())? {
            let run = run?;
            let name = run.file_name().to_string_lossy().into_owned();
            if name.starts_with("multi-") && run.path().join(JSON).is_file() {
                let rel = format!("{}/{name}", device.file_name().to_string_lossy());
                found.push((rel, run.path().join(JSON)));
            }
        }
    }
    found.sort();
    found
        .into_iter()
        .map(|(rel, path)| Ok((rel, MultiRun::load(&path)?)))
        .collect()
}

/// README.md's scaling table, markers excluded: per run of record, one row per layout × dtype,
/// one column per square size (aggregate TFLOP/s and efficiency), then each run's source.
pub fn scaling_table(runs: &[(String, MultiRun)]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<!-- generated from {BASELINES_DIR}/*/multi-*gpu/ by `{}`; do not edit by hand -->",
        crate::record::REGENERATE
    );
    if runs.is_empty() {
        out.push_str(
            "No multi-GPU run of record yet (`scripts/gpu-nccl.sh` writes one; docs/multi-gpu.md).\n",
        );
        return out;
    }
    for (rel, run) in runs {
        let mut sizes: Vec<usize> = run
            .cases
            .iter()
            .filter(|c| c.m == c.n && c.n == c.k)
            .map(|c| c.m)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        let first = run.system.device.split(" | ").next().unwrap_or("");
        let _ = writeln!(out, "{} × {first}:\n", run.gpus);
        out.push_str("| layout | dtype |");
        for s in &sizes {
            let _ = write!(out, " {s}³ |");
        }
        out.push_str(" kernel |\n|---|---|");
        out.push_str(&"---|".repeat(sizes.len() + 1));
        out.push('\n');
        let mut rows: Vec<(&str, &str)> = Vec::new();
        for c in &run.cases {
            if !rows.contains(&(c.layout.as_str(), c.dtype.as_str())) {
                rows.push((&c.layout, &c.dtype));
            }
        }
        for (layout, dtype) in rows {
            let _ = write!(out, "| {layout} | {dtype} |");
            let mut kernels: Vec<&str> = Vec::new();
            for &s in &sizes {
                let case = run.cases.iter().find(|c| {
                    c.layout == layout && c.dtype == dtype && c.m == s && c.n == s && c.k == s
                });
                match case {
                    Some(c) => {
                        if !kernels.contains(&c.kernel.as_str()) {
                            kernels.push(&c.kernel);
                        }
                        let _ = write!(out, " {:.1} ({}) |", c.aggregate_tflops, pct(c.efficiency));
                    }
                    None => out.push_str(" — |"),
                }
            }
            let names: Vec<String> = kernels.iter().map(|k| format!("`{k}`")).collect();
            let _ = writeln!(out, " {} |", names.join(", "));
        }
        let s = &run.system;
        let _ = writeln!(
            out,
            "\nEach cell: aggregate TFLOP/s (u32: TOPS) of the {} GPUs, in brackets the scaling \
             efficiency (1-GPU time of the same kernel on the whole problem, measured in the same \
             run, / ({} × the {}-GPU time)). The run: {}, commit {}, `{}` \
             ([{BASELINES_DIR}/{rel}/{MARKDOWN}]({BASELINES_DIR}/{rel}/{MARKDOWN}): per-GPU rate, \
             compute, communication and exposed time per case).\n",
            run.gpus,
            run.gpus,
            run.gpus,
            s.date.get(..10).unwrap_or(&s.date),
            s.git_commit
                .as_deref()
                .map_or("?", |c| c.get(..7).unwrap_or(c)),
            crate::record::command_line(&s.command_line),
        );
    }
    out
}

/// The text between README.md's multi-table markers.
pub fn section(readme: &str) -> Option<&str> {
    let begin = readme.find(BEGIN)?;
    let start = begin + readme[begin..].find('\n')? + 1;
    let end = start + readme[start..].find(END)?;
    Some(&readme[start..end])
}

/// README.md with the multi-table section replaced by `table` (None: no markers).
pub fn splice(readme: &str, table: &str) -> Option<String> {
    let old = section(readme)?;
    let start = old.as_ptr() as usize - readme.as_ptr() as usize;
    Some(format!(
        "{}{table}{}",
        &readme[..start],
        &readme[start + old.len()..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> MultiRun {
        let mut system = SystemInfo::collect("GPU0 | GPU1", "cuda", None);
        system.command_line = vec![
            "/x/matmul".into(),
            "bench".into(),
            "--gpus".into(),
            "2".into(),
        ];
        let cases = vec![
            MultiCase::new(
                "ag-gemm",
                "f32",
                (8192, 8192, 8192),
                "warptile",
                2,
                Some(0.02),
                (0.0105, 0.01, 0.002),
            ),
            MultiCase::new(
                "ag-gemm",
                "f32",
                (16384, 16384, 16384),
                "warptile",
                2,
                None,
                (0.08, 0.079, 0.01),
            ),
        ];
        MultiRun {
            system,
            gpus: 2,
            nccl: "2.28.3".into(),
            warmup: 1,
            iters: 3,
            cases,
        }
    }

    #[test]
    fn case_numbers_follow_from_the_times() {
        let c = &run().cases[0];
        let flops = 2.0 * 8192f64.powi(3);
        assert!((c.aggregate_tflops - flops / 0.0105 / 1e12).abs() < 1e-9);
        assert!((c.per_gpu_tflops - c.aggregate_tflops / 2.0).abs() < 1e-9);
        assert!((c.efficiency.unwrap() - 0.02 / 0.021).abs() < 1e-12);
        assert!((c.exposed_s - 0.0005).abs() < 1e-12);
        // 0.01 + 0.002 − 0.0105 of 0.002 hidden.
        assert!((c.hidden().unwrap() - 0.75).abs() < 1e-9);
    }

    #[test]
    fn json_round_trips_and_the_table_cites_the_run() {
        let r = run();
        let back: MultiRun = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let t = scaling_table(&[("h200/multi-2gpu".into(), r.clone())]);
        assert!(
            t.contains("| ag-gemm | f32 | 104.7 (95.2 %) | 110.0 (—) |"),
            "{t}"
        );
        assert!(t.contains("`matmul bench --gpus 2`"), "{t}");
        assert!(scaling_table(&[]).contains("No multi-GPU run of record yet"));
    }

    /// The auto row repeats its pick's figures and is measured against the fastest placement of
    /// its case (one GPU included); old multi.json files without `chosen` still load.
    #[test]
    fn auto_rows_against_the_best_placement() {
        let mut r = run();
        assert_eq!(r.auto_summary(), None);
        let row_split = MultiCase::new(
            "row-split",
            "f32",
            (8192, 8192, 8192),
            "warptile",
            2,
            Some(0.02),
            (0.0101, 0.0101, 0.0),
        );
        let mut auto = MultiCase {
            layout: "auto".into(),
            ..r.cases[0].clone()
        };
        auto.chosen = Some("ag-gemm".into());
        r.cases.push(row_split);
        r.cases.push(auto);
        let s = r.auto_summary().unwrap();
        // ag-gemm's 10.5 ms against row-split's 10.1: 4.0 % slower.
        assert!(
            s.contains("at worst 4.0 % slower") && s.contains("chose ag-gemm"),
            "{s}"
        );
        assert!(r.markdown().contains("| auto (ag-gemm) | f32 |"));
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<MultiRun>(&json).unwrap(), r);
        let old = json.replace(",\"chosen\":\"ag-gemm\"", "");
        let back: MultiRun = serde_json::from_str(&old).unwrap();
        assert_eq!(back.cases.last().unwrap().chosen, None);
    }

    #[test]
    fn splice_replaces_only_the_section() {
        let readme = format!("a\n{BEGIN}\nold\n{END}\nb\n");
        let new = splice(&readme, "new\n").unwrap();
        assert_eq!(new, format!("a\n{BEGIN}\nnew\n{END}\nb\n"));
        assert_eq!(section(&new), Some("new\n"));
        assert!(splice("no markers", "x").is_none());
    }
}
