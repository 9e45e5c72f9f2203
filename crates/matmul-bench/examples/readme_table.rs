//! Renders the results tables from the runs of record under bench/baselines/: every table into
//! docs/results.md, the square-size one into README.md, the multi-GPU scaling table into
//! docs/results.md.
//!
//! `cargo run -p matmul-bench --example readme_table`            prints them
//! `cargo run -p matmul-bench --example readme_table -- --write` rewrites them in place
//!
//! The test `tests/readme_table.rs` fails while a file's section differs from this rendering.

use std::path::Path;

use matmul_bench::{multi, record};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let write = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--write") => true,
        Some(other) => {
            eprintln!("readme_table: unknown argument '{other}' (usage: readme_table [--write])");
            std::process::exit(2);
        }
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let summary = record::summary_section(&root)?;
    let tables = record::for_docs(&record::readme_section(&root)?);
    let scaling = record::for_docs(&multi::scaling_table(&multi::runs_of_record(&root)?));
    if !write {
        print!("{summary}\n{tables}\n{scaling}");
        return Ok(());
    }
    let rewrite = |name: &str, f: &dyn Fn(&str) -> Result<String, String>| -> Result<(), String> {
        let path = root.join(name);
        let old = std::fs::read_to_string(&path).map_err(|e| format!("{name}: {e}"))?;
        let new = f(&old).map_err(|e| format!("{name}: {e}"))?;
        if new == old {
            eprintln!("{name}: up to date");
        } else {
            std::fs::write(&path, new).map_err(|e| format!("{name}: {e}"))?;
            eprintln!("{name}: rewritten");
        }
        Ok(())
    };
    rewrite("README.md", &|t| {
        record::splice_summary(t, &summary).map_err(|e| e.to_string())
    })?;
    rewrite(record::RESULTS_PAGE, &|t| {
        let t = record::splice(t, &tables).map_err(|e| e.to_string())?;
        multi::splice(&t, &scaling).ok_or_else(|| {
            format!(
                "no `{}` line followed by an `{}` line",
                multi::BEGIN,
                multi::END
            )
        })
    })?;
    Ok(())
}
