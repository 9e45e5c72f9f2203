//! A CPU benchmark with measured CPU ceilings, written as every report file.
//!
//! `cargo run --release -p matmul-bench --example cpu_report -- [OUT_DIR] [--quick]`
//! (`--quick` measures the ceilings with fewer repeats and short compute loops).

use matmul::cpu::CpuBackend;
use matmul::{DType, Shape};
use matmul_bench::{
    default_cpu_cache_bytes, measure_cpu, run, write_reports, BenchConfig, CpuCeilingOptions,
    ProgressEvent,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let dir = args.iter().find(|a| !a.starts_with("--")).map_or_else(
        || std::env::temp_dir().join("matmul-bench-cpu-report"),
        Into::into,
    );

    let opts = if quick {
        CpuCeilingOptions::quick()
    } else {
        CpuCeilingOptions::default()
    };
    eprintln!("measuring CPU ceilings ...");
    let ceilings = measure_cpu(&opts);

    let kernels = vec![matmul::find("cpu")?, matmul::find("cpu-reference")?];
    let shapes = ["64", "128", "256", "17x33x65"]
        .iter()
        .map(|s| s.parse::<Shape>())
        .collect::<Result<Vec<_>, _>>()?;
    let mut config = BenchConfig::new(kernels, vec![DType::F32, DType::U32], shapes);
    config.warmup = 1;
    config.iters = Some(5);
    config.min_time = Some(0.05);
    config.cache_bytes = default_cpu_cache_bytes();
    config.measured_ceilings = Some(ceilings);

    let report = run(&CpuBackend, &config, &mut |e| {
        if let ProgressEvent::Finished {
            index,
            total,
            record,
        } = e
        {
            eprintln!(
                "[{}/{total}] {} {} {}: {}",
                index + 1,
                record.kernel,
                record.dtype,
                record.shape,
                record.status.name()
            );
        }
    });
    print!("{}", report.table());
    let files = write_reports(&report, &dir)?;
    println!(
        "reports written to {}",
        files.json.parent().unwrap_or(&dir).display()
    );
    Ok(())
}
