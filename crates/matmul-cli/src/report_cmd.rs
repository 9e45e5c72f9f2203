//! `matmul report`: renders every report file again from a saved results.json, and with
//! `--compare` sets it beside another run (compare.md, compare.html): per case both rates and
//! their ratio, per kernel × dtype the geometric mean, the way a change is reviewed.

use std::path::{Path, PathBuf};

use clap::Args;
use matmul_bench::{Comparison, Report, SCHEMA_VERSION};

use crate::cli_error::{CliError, CliResult};

/// `matmul report`'s arguments.
#[derive(Args)]
pub struct ReportArgs {
    /// A results.json written by `matmul bench` (schema 1 or 2; a schema-1 file's roofs are
    /// recomputed by the current model).
    results: PathBuf,
    /// Another run's results.json to compare with: per case the rate of each and RESULTS's
    /// speedup (the other's median time / RESULTS's), per kernel × dtype the geometric mean;
    /// written as compare.md (also printed) and compare.html.
    #[arg(long, value_name = "OTHER.json")]
    compare: Option<PathBuf>,
    /// Where to write the report files (results.csv, roofline.svg, ladder.svg, report.md,
    /// report.html, and results.json unless that is RESULTS itself); default: RESULTS's
    /// directory.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Reads a results.json; every way it can be unusable is an input error naming the file.
fn load(path: &Path) -> CliResult<Report> {
    let name = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| CliError::input(format!("{name}: cannot read it: {e}")))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CliError::input(format!("{name}: not JSON: {e}")))?;
    let version = value.get("schema_version").and_then(|v| v.as_u64());
    match version {
        None => {
            return Err(CliError::input(format!(
                "{name}: not a matmul results.json (no schema_version; `matmul bench` writes one)"
            )))
        }
        Some(v) if v == 0 || v > u64::from(SCHEMA_VERSION) => {
            return Err(CliError::input(format!(
                "{name}: schema_version {v}; this matmul reads 1 to {SCHEMA_VERSION}"
            )))
        }
        Some(_) => {}
    }
    Report::from_json(&text).map_err(|e| {
        CliError::input(format!(
            "{name}: does not fit the results.json schema (docs/results-schema.md): {e}"
        ))
    })
}

/// Whether `a` and `b` name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// `matmul report`: loads RESULTS (and OTHER), checks --out, then writes the files.
pub fn report(args: ReportArgs) -> CliResult {
    let report = load(&args.results)?;
    let other = args.compare.as_deref().map(load).transpose()?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| match args.results.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        });
    if out.exists() && !out.is_dir() {
        return Err(CliError::input(format!(
            "--out {}: is a file; --out names the report's directory",
            out.display()
        )));
    }
    let written = |e: std::io::Error| {
        CliError::failure(format!("cannot write the report to {}: {e}", out.display()))
    };
    let json = out.join("results.json");
    let files = if same_file(&json, &args.results) {
        matmul_bench::write_views(&report, &out)
    } else {
        matmul_bench::write_reports(&report, &out)
    }
    .map_err(written)?;
    eprintln!(
        "matmul: report written to {} (and results.csv, roofline.svg, ladder.svg, report.html beside it)",
        files.markdown.display()
    );
    if let (Some(other), Some(other_path)) = (other, args.compare.as_deref()) {
        let comparison = Comparison::new(
            &report,
            &args.results.display().to_string(),
            &other,
            &other_path.display().to_string(),
        );
        let (md, _) = matmul_bench::write_comparison(&comparison, &out).map_err(written)?;
        print!("{}", comparison.to_markdown());
        eprintln!(
            "matmul: comparison written to {} (and compare.html beside it)",
            md.display()
        );
    } else {
        println!("{}", report.table());
    }
    Ok(())
}
