//! The run of record: the small benchmark reports kept in the repository under
//! `bench/baselines/<device>/<ladder>/` (results.json without its per-launch samples, its
//! roofline.svg and its ladder.svg), and the results tables (docs/results.md, and the README's
//! square-size one), rendered from them so the two cannot drift.
//!
//! - [`write_baseline`] turns a `matmul bench` results.json into a run of record
//!   (`cargo run -p matmul-bench --example baseline -- RESULTS.json DIR`).
//! - [`readme_section`] renders every table from the runs of record; [`splice`] puts it between
//!   [`BEGIN`] and [`END`] in docs/results.md, and [`splice_summary`] the square-size table
//!   ([`summary_section`]) between the README's summary markers
//!   (`cargo run -p matmul-bench --example readme_table -- --write`); the test
//!   `tests/readme_table.rs` fails when either differs from the rendering.
//!
//! Every number in the table is a field of a results.json (`rate_gops`, `vs_cublas`, the device
//! line), rounded for print; nothing is typed by hand.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use matmul::{DType, Op};

use crate::{Record, Report, Status};

/// Where the runs of record live, relative to the repository root.
pub const BASELINES_DIR: &str = "bench/baselines";

/// The runs the square-size table is rendered from, as `<device>/<ladder>` under [`BASELINES_DIR`],
/// in the order their dtypes appear in the table.
pub const README_RUNS: &[&str] = &[
    "h100-80gb-hbm3/simt",
    "h100-80gb-hbm3/int8",
    "h100-80gb-hbm3/tensor-cores",
];

/// The shape-suite runs the suite tables (`auto` against cuBLAS over a suite, per dtype
/// and class) are rendered from, under [`BASELINES_DIR`]: on a GPU the project did not tune on
/// (the H200) with the tune table of its class and without any table (`--no-tuned`, what a GPU
/// never tuned gets), then on the H100.
pub const README_SUITE_RUNS: [&str; 3] =
    ["h200/suite", "h200/suite-no-tuned", "h100-80gb-hbm3/suite"];

/// The portable backend's runs its table is rendered from, under
/// [`BASELINES_DIR`]: the wgpu kernels through Vulkan, and the CUDA kernels (cuBLAS among them) on
/// the same shapes in the same call (`scripts/gpu-wgpu.sh`).
pub const README_WGPU_RUNS: [&str; 2] = ["h200/wgpu", "h200/wgpu-cuda"];

/// The wgpu table's columns.
pub const README_WGPU_SIZES: &[usize] = &[1024, 2048, 4096, 8192];

/// The run the README's accuracy table (FP32 emulated on tensor cores beside cuBLAS SGEMM and
/// TF32, speed and error) is rendered from, under [`BASELINES_DIR`] (`scripts/gpu-fp32.sh`).
pub const README_FP32_RUN: &str = "h200/fp32-emulated";

/// The accuracy table's columns.
pub const README_FP32_SIZES: &[usize] = &[2048, 4096, 8192];

/// The table's columns: square products m = n = k of these sizes.
pub const README_SIZES: &[usize] = &[1024, 2048, 4096, 8192, 16384];

/// The page that holds every generated results table (the README keeps the square-size one).
pub const RESULTS_PAGE: &str = "docs/results.md";

/// The marker lines around the README's generated square-size table.
pub const SUMMARY_BEGIN: &str = "<!-- summary-table:begin -->";
/// Its end.
pub const SUMMARY_END: &str = "<!-- summary-table:end -->";

/// The marker lines around the generated section of docs/results.md.
pub const BEGIN: &str = "<!-- results-table:begin -->";
/// See [`BEGIN`].
pub const END: &str = "<!-- results-table:end -->";

/// The command that rewrites README.md's section (named in the test's failure message).
pub const REGENERATE: &str = "cargo run -p matmul-bench --example readme_table -- --write";

/// Reads a results.json (with or without its samples).
pub fn load(path: &Path) -> io::Result<Report> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Report::from_json(&text)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))
}

/// Empties every record's per-launch samples (`timing.samples_s`); statistics, round medians and
/// everything else stay. What makes a run of record small.
pub fn strip_samples(report: &mut Report) {
    for timing in report.records.iter_mut().filter_map(|r| r.timing.as_mut()) {
        timing.samples_s.clear();
    }
}

/// Writes `report` without its samples into `dir` (created if missing) as results.json, its
/// roofline.svg and its ladder.svg; returns the three paths.
pub fn write_baseline(report: &Report, dir: &Path) -> io::Result<[PathBuf; 3]> {
    let mut report = report.clone();
    strip_samples(&mut report);
    std::fs::create_dir_all(dir)?;
    let json = dir.join("results.json");
    let svg = dir.join("roofline.svg");
    let mut text = report.to_json()?;
    text.push('\n');
    std::fs::write(&json, text)?;
    std::fs::write(&svg, report.roofline_svg())?;
    let ladder = dir.join("ladder.svg");
    std::fs::write(&ladder, report.ladder_svg())?;
    Ok([json, svg, ladder])
}

/// Loads the [`README_RUNS`] under `root` (the repository root).
pub fn load_readme_runs(root: &Path) -> io::Result<Vec<Report>> {
    README_RUNS
        .iter()
        .map(|run| load(&root.join(BASELINES_DIR).join(run).join("results.json")))
        .collect()
}

/// The README's summary, markers excluded: the square-size table of the runs of record under
/// `root` (docs/results.md has it again with every other table).
pub fn summary_section(root: &Path) -> io::Result<String> {
    Ok(readme_table(&load_readme_runs(root)?, README_SIZES))
}

/// Generated Markdown whose links are written from the repository root, relinked for a page in
/// docs/ (`docs/x.md` → `x.md`, `bench/…` → `../bench/…`, likewise crates/ and lab/).
pub fn for_docs(text: &str) -> String {
    text.replace("](docs/", "](")
        .replace("](bench/", "](../bench/")
        .replace("](crates/", "](../crates/")
        .replace("](lab/", "](../lab/")
}

/// The results page's section, markers excluded, rendered from the runs of record under `root`
/// (links from the repository root: [`for_docs`] relinks it): the square-size table, the suite
/// summaries of [`README_SUITE_RUNS`], the portable backend's table and the accuracy table.
pub fn readme_section(root: &Path) -> io::Result<String> {
    let mut out = readme_table(&load_readme_runs(root)?, README_SIZES);
    for run in README_SUITE_RUNS {
        let suite = load(&root.join(BASELINES_DIR).join(run).join("results.json"))?;
        out.push('\n');
        out.push_str(&suite_table(&suite));
    }
    let [wgpu, cuda] =
        README_WGPU_RUNS.map(|run| load(&root.join(BASELINES_DIR).join(run).join("results.json")));
    out.push('\n');
    out.push_str(&wgpu_table(&wgpu?, &cuda?, README_WGPU_SIZES));
    let fp32 = load(
        &root
            .join(BASELINES_DIR)
            .join(README_FP32_RUN)
            .join("results.json"),
    )?;
    out.push('\n');
    out.push_str(&accuracy_table(&fp32, README_FP32_SIZES));
    Ok(out)
}

/// Speed and error side by side: one row per kernel and dtype of `report`, one column per size;
/// each cell the rate and the largest error |C − C_f64| / (|A|·|B|) in units u of C's type (the
/// bench's error column), then the run's device, date, commit and command.
pub fn accuracy_table(report: &Report, sizes: &[usize]) -> String {
    let mut out = String::new();
    out.push_str(
        "FP32 on tensor cores (`wgmma-3xtf32`, 3xTF32 at SGEMM's accuracy and special values, what \
         `auto` runs for f32 on Hopper unless `--precision strict`: \
         [docs/ladder/tensor-cores.md](docs/ladder/tensor-cores.md)) beside cuBLAS's SGEMM and \
         TF32, speed and error:\n\n",
    );
    out.push_str("| kernel | dtype |");
    for s in sizes {
        let _ = write!(out, " {s}³ |");
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(sizes.len()));
    out.push('\n');
    let vendor_name = report.baselines.vendor.as_deref();
    for (kernel, dtype) in kernel_rows(report) {
        let _ = write!(out, "| `{kernel}` | {dtype} |");
        for &size in sizes {
            let rec = square_record(report, kernel, dtype, size);
            let max_u = rec
                .and_then(|r| r.verification.as_ref())
                .and_then(|v| v.error.as_ref())
                .and_then(|e| e.max_u);
            let Some(rate) = rec.and_then(|r| r.rate_gops) else {
                out.push_str(" — |");
                continue;
            };
            let _ = write!(out, " {}", tera(rate));
            // f32 kernels other than cuBLAS's: the speedup over cuBLAS SGEMM in the same run.
            let sgemm = vendor(report, DType::F32, size).and_then(|r| r.rate_gops);
            if let (DType::F32, Some(sgemm), false) = (dtype, sgemm, Some(kernel) == vendor_name) {
                let _ = write!(out, " ({:.2}×)", rate / sgemm);
            }
            if let Some(u) = max_u {
                let digits = if u >= 100.0 {
                    0
                } else if u >= 10.0 {
                    1
                } else {
                    2
                };
                let _ = write!(out, " · {u:.digits$} u");
            }
            out.push_str(" |");
        }
        out.push('\n');
    }
    let s = &report.system;
    let (date, commit) = date_and_commit(s);
    let _ = writeln!(
        out,
        "\nEach cell: TFLOP/s from the median launch time (f32: in brackets the speedup over cuBLAS SGEMM) · the largest |C − C_f64| / (|A|·|B|) over the \
         checked elements, in units u = 2⁻²⁴ (uniform inputs in [−1, 1)). On {}: {date}, commit {commit}, `{}`.",
        s.device,
        command(&s.command_line)
    );
    out
}

/// The portable backend against CUDA on the same device: one row per kernel and dtype of `wgpu`
/// (the WGSL kernels through wgpu) and of `cuda` (cuBLAS and our CUDA kernels, same shapes, same
/// call), one column per size; each cell the rate, and for a wgpu f32 kernel its share of
/// cuBLAS's rate at that size. Then both runs' device, date, commit and command.
pub fn wgpu_table(wgpu: &Report, cuda: &Report, sizes: &[usize]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "The portable backend (`--backend wgpu`, WGSL through Vulkan) on the same GPU, beside CUDA in \
         the same call:\n"
    );
    out.push_str("| kernel | backend | dtype |");
    for s in sizes {
        let _ = write!(out, " {s}³ |");
    }
    out.push_str("\n|---|---|---|");
    out.push_str(&"---|".repeat(sizes.len()));
    out.push('\n');
    let cublas = |dtype: DType, size: usize| vendor(cuda, dtype, size).and_then(|r| r.rate_gops);
    for (report, backend) in [(wgpu, "wgpu"), (cuda, "cuda")] {
        for (kernel, dtype) in kernel_rows(report) {
            let _ = write!(out, "| `{kernel}` | {backend} | {dtype} |");
            for &size in sizes {
                let rec = square_record(report, kernel, dtype, size);
                match rec.and_then(|r| r.rate_gops) {
                    None => out.push_str(" — |"),
                    Some(rate) => {
                        let _ = write!(out, " {}", tera(rate));
                        if let (true, Some(vendor)) = (backend == "wgpu", cublas(dtype, size)) {
                            let _ = write!(out, " ({:.1} %)", 100.0 * rate / vendor);
                        }
                        out.push_str(" |");
                    }
                }
            }
            out.push('\n');
        }
    }
    out.push_str(
        "\nTFLOP/s (u32: TOPS) from the median launch time; in brackets the share of cuBLAS's rate \
         (of its dtype) in the same call. WGSL has no asynchronous copies; its matrix instructions \
         (cooperative matrices, f16 in `wgpu-coopmat`) are loaded and laid out by the driver, and \
         the scalar kernels compute f16 and bf16 in f32: [docs/wgpu.md](docs/wgpu.md) says what \
         bounds each. The runs:\n\n",
    );
    for report in [wgpu, cuda] {
        let s = &report.system;
        let (date, commit) = date_and_commit(s);
        let _ = writeln!(
            out,
            "- {}: {date}, commit {commit}, `{}`.",
            s.device,
            command(&s.command_line)
        );
    }
    out
}

/// The summary of a suite run (a report with `suite` set) in Markdown: one row per dtype and
/// kernel (geometric mean and worst ratio to cuBLAS, overall and per class), its caption, and
/// the run's date, commit and command. Empty for a report that is not a suite run.
pub fn suite_table(report: &Report) -> String {
    let mut out = String::new();
    let (Some(name), Some(summary)) = (report.suite.as_deref(), report.summary()) else {
        return out;
    };
    let (header, rows) = summary.rows();
    let tuned = if s_no_tuned(report) {
        "no tune table (`--no-tuned`: the cost model alone, as on a GPU never tuned)"
    } else {
        "its class's tune table"
    };
    let _ = writeln!(
        out,
        "On {}, off the square sizes, over the shape suite `{name}` ([bench/suites/{name}.txt](bench/suites/{name}.txt)): \
         `--kernel auto` against cuBLAS, with {tuned}.\n",
        report.system.device
    );
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    let s = &report.system;
    let (date, commit) = date_and_commit(s);
    let _ = writeln!(
        out,
        "\n{} The run: {date}, commit {commit}, `{}`.",
        summary.caption(Some(name)),
        command(&s.command_line)
    );
    out
}

/// Whether the run was made with `--no-tuned`.
fn s_no_tuned(report: &Report) -> bool {
    report.system.command_line.iter().any(|a| a == "--no-tuned")
}

/// A plain N·N product with C in the accumulator type, m = n = k = `size`.
fn is_square(r: &Record, size: usize) -> bool {
    let p = &r.problem;
    p.m == size
        && p.n == size
        && p.k == size
        && p.op_a == Op::N
        && p.op_b == Op::N
        && !p.types().narrow_c()
}

/// The (kernel, dtype) pairs of `report`'s records, in their first appearance's order.
fn kernel_rows(report: &Report) -> Vec<(&str, DType)> {
    let mut rows: Vec<(&str, DType)> = Vec::new();
    for r in &report.records {
        if !rows.contains(&(r.kernel.as_str(), r.dtype)) {
            rows.push((&r.kernel, r.dtype));
        }
    }
    rows
}

/// `kernel`'s verified record on `dtype` at `size`³ in `report`.
fn square_record<'a>(
    report: &'a Report,
    kernel: &str,
    dtype: DType,
    size: usize,
) -> Option<&'a Record> {
    report.records.iter().find(|r| {
        r.kernel == kernel && r.dtype == dtype && is_square(r, size) && r.status == Status::Ok
    })
}

/// Our fastest verified kernel (not the vendor's) on `dtype` at `size`³ in `report`.
fn best(report: &Report, dtype: DType, size: usize) -> Option<&Record> {
    let vendor = report.baselines.vendor.as_deref();
    report
        .records
        .iter()
        .filter(|r| r.dtype == dtype && is_square(r, size) && r.status == Status::Ok)
        .filter(|r| Some(r.kernel.as_str()) != vendor && r.rate_gops.is_some())
        // The int8 ceiling row is cuBLASLt's s8 GEMM, never a u32 result.
        .filter(|r| !r.is_int8_ceiling())
        .fold(None, |acc: Option<&Record>, r| match acc {
            Some(b) if b.rate_gops >= r.rate_gops => Some(b),
            _ => Some(r),
        })
}

/// The vendor library's verified record on `dtype` at `size`³.
fn vendor(report: &Report, dtype: DType, size: usize) -> Option<&Record> {
    square_record(report, report.baselines.vendor.as_deref()?, dtype, size)
}

/// G(FL)OP/s as T(FL)OP/s with three significant digits (52.4, 743, 0.0198).
fn tera(gops: f64) -> String {
    let t = gops / 1000.0;
    if !t.is_finite() || t <= 0.0 {
        format!("{t}")
    } else if t >= 100.0 {
        format!("{t:.0}")
    } else if t >= 10.0 {
        format!("{t:.1}")
    } else if t >= 1.0 {
        format!("{t:.2}")
    } else {
        // 0.114, 0.0198: two more decimals than the first significant digit's place.
        let decimals = (2.0 - t.log10().floor()).min(12.0) as usize;
        format!("{t:.decimals$}")
    }
}

/// A run's day (YYYY-MM-DD) and short commit (`?` when unknown), as the tables cite runs.
fn date_and_commit(s: &crate::SystemInfo) -> (&str, &str) {
    let date = s.date.get(..10).unwrap_or(&s.date);
    let commit = s
        .git_commit
        .as_deref()
        .map_or("?", |c| c.get(..7).unwrap_or(c));
    (date, commit)
}

/// The command line as a user types it: `matmul` for the binary's path, without `--out DIR`.
pub fn command_line(argv: &[String]) -> String {
    command(argv)
}

fn command(argv: &[String]) -> String {
    let mut words = vec!["matmul".to_string()];
    let mut args = argv.iter().skip(1);
    while let Some(a) = args.next() {
        if a == "--out" {
            args.next();
        } else if !a.starts_with("--out=") {
            words.push(a.clone());
        }
    }
    words.join(" ")
}

/// The dtypes of `report`'s records, in their first appearance's order.
fn dtypes(report: &Report) -> Vec<DType> {
    let mut out = Vec::new();
    for r in &report.records {
        if !out.contains(&r.dtype) {
            out.push(r.dtype);
        }
    }
    out
}

/// The README's results table: one row per dtype of `runs` (in order), one column per size of
/// `sizes`; each cell our fastest kernel's rate / cuBLAS's rate (cuBLAS's median / ours), then the
/// device, date, commit and command of each run. Markdown, ending in a newline.
pub fn readme_table(runs: &[Report], sizes: &[usize]) -> String {
    let mut out = String::new();
    let mut devices: Vec<&str> = runs.iter().map(|r| r.system.device.as_str()).collect();
    devices.dedup();
    let _ = writeln!(
        out,
        "<!-- generated from {BASELINES_DIR}/ by `{REGENERATE}`; do not edit by hand -->"
    );
    if let [device] = devices.as_slice() {
        let _ = writeln!(out, "On {device}:");
        out.push('\n');
    }
    out.push_str("| dtype |");
    for s in sizes {
        let _ = write!(out, " {s}³ |");
    }
    out.push_str(" our kernels |\n|---|");
    for _ in sizes {
        out.push_str("---|");
    }
    out.push_str("---|\n");
    // One row per dtype, in the order the runs first name them; a dtype in several runs (u32 in
    // the SIMT and the int8 runs) shows each size's fastest kernel over all of them, with the
    // vendor's rate from the same run.
    let mut all: Vec<DType> = Vec::new();
    for d in runs.iter().flat_map(dtypes) {
        if !all.contains(&d) {
            all.push(d);
        }
    }
    for dtype in all {
        {
            let _ = write!(out, "| {dtype} |");
            let mut kernels: Vec<&str> = Vec::new();
            for &size in sizes {
                let fastest = runs
                    .iter()
                    .filter_map(|report| Some((report, best(report, dtype, size)?)))
                    .max_by(|a, b| {
                        let rate = |r: &Record| r.rate_gops.unwrap_or(0.0);
                        rate(a.1).total_cmp(&rate(b.1))
                    });
                let Some((report, ours)) = fastest else {
                    out.push_str(" — |");
                    continue;
                };
                if !kernels.contains(&ours.kernel.as_str()) {
                    kernels.push(&ours.kernel);
                }
                let theirs = vendor(report, dtype, size)
                    .and_then(|r| r.rate_gops)
                    .map_or("—".to_string(), tera);
                let _ = write!(out, " {} / {theirs}", tera(ours.rate_gops.unwrap_or(0.0)));
                if let Some(ratio) = ours.vs_cublas {
                    let _ = write!(out, " ({ratio:.3}×)");
                }
                out.push_str(" |");
            }
            let names: Vec<String> = kernels.iter().map(|k| format!("`{k}`")).collect();
            let _ = writeln!(out, " {} |", names.join(", "));
        }
    }
    out.push('\n');
    out.push_str(
        "Each cell: our fastest kernel / cuBLAS, TFLOP/s (u32: TOPS, where cuBLAS has no \
         kernel), from the median launch time; in brackets cuBLAS's median time / ours \
         (above 1: ours is faster). The runs:\n\n",
    );
    for report in runs {
        let dt: Vec<String> = dtypes(report).iter().map(|d| d.to_string()).collect();
        let s = &report.system;
        let (date, commit) = date_and_commit(s);
        let _ = write!(out, "- {}: {date}, commit {commit}", dt.join(", "));
        if devices.len() > 1 {
            let _ = write!(out, ", {}", s.device);
        }
        let _ = writeln!(out, ", `{}`.", command(&s.command_line));
    }
    out
}

/// A generated section's marker lines were not found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingMarkers(pub &'static str, pub &'static str);

impl std::fmt::Display for MissingMarkers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no `{}` line followed by an `{}` line", self.0, self.1)
    }
}

impl std::error::Error for MissingMarkers {}

/// The byte range of the text between the marker lines (after `begin`'s line, up to `end`).
fn section_range(
    text: &str,
    begin: &'static str,
    end: &'static str,
) -> Result<std::ops::Range<usize>, MissingMarkers> {
    let missing = MissingMarkers(begin, end);
    let b = text.find(begin).ok_or(missing.clone())?;
    let start = text[b..]
        .find('\n')
        .map(|i| b + i + 1)
        .ok_or(missing.clone())?;
    let stop = text[start..].find(end).map(|i| start + i).ok_or(missing)?;
    Ok(start..stop)
}

/// The text between the results page's marker lines ([`BEGIN`], [`END`]).
pub fn section(page: &str) -> Result<&str, MissingMarkers> {
    Ok(&page[section_range(page, BEGIN, END)?])
}

/// The text between the README's summary markers ([`SUMMARY_BEGIN`], [`SUMMARY_END`]).
pub fn summary(readme: &str) -> Result<&str, MissingMarkers> {
    Ok(&readme[section_range(readme, SUMMARY_BEGIN, SUMMARY_END)?])
}

/// `page` with the text between its [`BEGIN`] and [`END`] lines replaced by `table`.
pub fn splice(page: &str, table: &str) -> Result<String, MissingMarkers> {
    splice_between(page, BEGIN, END, table)
}

/// `readme` with the text between its summary markers replaced by `table`.
pub fn splice_summary(readme: &str, table: &str) -> Result<String, MissingMarkers> {
    splice_between(readme, SUMMARY_BEGIN, SUMMARY_END, table)
}

fn splice_between(
    readme: &str,
    begin: &'static str,
    end: &'static str,
    table: &str,
) -> Result<String, MissingMarkers> {
    let range = section_range(readme, begin, end)?;
    let mut out = String::with_capacity(readme.len() + table.len());
    out.push_str(&readme[..range.start]);
    out.push_str(table);
    out.push_str(&readme[range.end..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tera_keeps_three_significant_digits() {
        assert_eq!(tera(743_123.0), "743");
        assert_eq!(tera(52_412.0), "52.4");
        assert_eq!(tera(8_150.0), "8.15");
        assert_eq!(tera(114.2), "0.114");
        assert_eq!(tera(19.8), "0.0198");
        assert_eq!(tera(0.0), "0");
    }

    #[test]
    fn command_drops_the_binary_path_and_out() {
        let argv: Vec<String> = [
            "dist/gpu/bin/matmul",
            "bench",
            "--out",
            "/x",
            "--rounds",
            "3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(command(&argv), "matmul bench --rounds 3");
    }

    #[test]
    fn splice_replaces_only_the_section() {
        let readme = format!("a\n{BEGIN}\nold\n{END}\nb\n");
        let new = splice(&readme, "new\n").unwrap();
        assert_eq!(new, format!("a\n{BEGIN}\nnew\n{END}\nb\n"));
        assert_eq!(section(&new).unwrap(), "new\n");
        assert_eq!(splice("no markers", "x"), Err(MissingMarkers(BEGIN, END)));
        assert_eq!(
            section(&format!("{END}\n{BEGIN}\n")),
            Err(MissingMarkers(BEGIN, END))
        );
    }
}
