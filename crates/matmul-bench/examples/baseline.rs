//! Makes a run of record from a `matmul bench` results.json: the same report without its
//! per-launch samples, its roofline and its ladder, written as DIR/results.json, DIR/roofline.svg
//! and DIR/ladder.svg.
//!
//! `cargo run -p matmul-bench --example baseline -- RESULTS.json bench/baselines/DEVICE/LADDER`
//!
//! bench/baselines/README.md lists the runs of record and the commands behind them.

use std::path::Path;

use matmul_bench::record;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, dir] = args.as_slice() else {
        eprintln!("usage: baseline RESULTS.json OUT_DIR");
        std::process::exit(2);
    };
    let report = record::load(Path::new(input))?;
    for path in record::write_baseline(&report, Path::new(dir))? {
        let bytes = std::fs::metadata(&path)?.len();
        println!("{} ({} KB)", path.display(), bytes.div_ceil(1024));
    }
    Ok(())
}
