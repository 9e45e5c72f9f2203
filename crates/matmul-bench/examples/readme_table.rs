//! Renders README.md's results table and multi-GPU scaling table from the runs of record under bench/baselines/.
//!
//! `cargo run -p matmul-bench --example readme_table`            prints the section
//! `cargo run -p matmul-bench --example readme_table -- --write` rewrites it in README.md
//!
//! The test `tests/readme_table.rs` fails while README.md's section differs from this rendering.

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
    let table = record::readme_section(&root)?;
    let scaling = multi::scaling_table(&multi::runs_of_record(&root)?);
    if !write {
        print!("{table}\n{scaling}");
        return Ok(());
    }
    let path = root.join("README.md");
    let readme = std::fs::read_to_string(&path)?;
    let updated = record::splice(&readme, &table)?;
    let updated = multi::splice(&updated, &scaling).ok_or_else(|| {
        format!(
            "README.md has no `{}` line followed by an `{}` line",
            multi::BEGIN,
            multi::END
        )
    })?;
    if updated == readme {
        eprintln!("README.md's results table is up to date");
    } else {
        std::fs::write(&path, updated)?;
        eprintln!("README.md's results table rewritten");
    }
    Ok(())
}
