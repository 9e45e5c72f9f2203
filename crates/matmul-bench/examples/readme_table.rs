//! Renders README.md's results table from the runs of record under bench/baselines/.
//!
//! `cargo run -p matmul-bench --example readme_table`            prints the section
//! `cargo run -p matmul-bench --example readme_table -- --write` rewrites it in README.md
//!
//! The test `tests/readme_table.rs` fails while README.md's section differs from this rendering.

use std::path::Path;

use matmul_bench::record;

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
    if !write {
        print!("{table}");
        return Ok(());
    }
    let path = root.join("README.md");
    let readme = std::fs::read_to_string(&path)?;
    let updated = record::splice(&readme, &table)?;
    if updated == readme {
        eprintln!("README.md's results table is up to date");
    } else {
        std::fs::write(&path, updated)?;
        eprintln!("README.md's results table rewritten");
    }
    Ok(())
}
