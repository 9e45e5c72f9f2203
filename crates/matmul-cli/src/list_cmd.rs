//! `matmul list` (the registry) and `matmul devices`.

use clap::Args;
use matmul::{Backend, KERNELS};

use crate::cli_error::{CliError, CliResult};

#[derive(Args)]
pub struct ListArgs {
    /// Also compile every CUDA kernel with NVRTC and show ptxas registers, spills and shared memory.
    #[arg(long)]
    verbose: bool,
    /// The registry as JSON.
    #[arg(long)]
    json: bool,
}

/// Renders rows as an aligned text table with a header rule.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let mut out = vec![
        line(header.to_vec()),
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  "),
    ];
    out.extend(
        rows.iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    out.join("\n")
}

pub fn list(args: ListArgs) -> CliResult {
    if args.json {
        let json =
            serde_json::to_string_pretty(KERNELS).map_err(|e| CliError::failure(e.to_string()))?;
        println!("{json}");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = KERNELS
        .iter()
        .map(|k| {
            let dtypes: Vec<_> = k.dtypes.iter().map(|d| d.name()).collect();
            let constraints: Vec<_> = k.constraints.iter().map(|c| c.describe()).collect();
            vec![
                k.name.to_string(),
                k.aliases.join(", "),
                k.backend.to_string(),
                dtypes.join(","),
                if constraints.is_empty() {
                    "any shape".into()
                } else {
                    constraints.join("; ")
                },
                k.cuda_source().map_or("-".into(), |s| s.file.to_string()),
                k.origin.to_string(),
            ]
        })
        .collect();
    println!(
        "{}",
        table(
            &[
                "kernel",
                "aliases",
                "backend",
                "dtypes",
                "constraints",
                "source",
                "origin"
            ],
            &rows
        )
    );
    if args.verbose {
        println!();
        println!("{}", crate::list_cmd::ptxas_report()?);
    }
    Ok(())
}

/// ptxas information for every CUDA kernel × dtype (needs libnvrtc only, no GPU).
fn ptxas_report() -> CliResult<String> {
    Err(CliError::failure(
        "ptxas information needs the CUDA backend's compiler (not built yet)",
    ))
}

pub fn devices() -> CliResult {
    println!("cpu   {}", matmul::cpu::CpuBackend.describe());
    match matmul::cuda::CudaBackend::new(0) {
        Ok(b) => println!("cuda  {}", b.describe()),
        Err(e) => println!("cuda  none: {e}"),
    }
    Ok(())
}
