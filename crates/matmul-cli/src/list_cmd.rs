//! `matmul list` (the registry) and `matmul devices`.

use clap::Args;
use matmul::{Backend, KERNELS};
use matmul_bench::fmt::ruled_table;

use crate::cli_error::{CliError, CliResult};

/// `matmul list`'s arguments.
#[derive(Args)]
pub struct ListArgs {
    /// Also compile every CUDA kernel with NVRTC and show ptxas registers, spills and shared memory.
    #[arg(long)]
    verbose: bool,
    /// The registry as JSON.
    #[arg(long)]
    json: bool,
    /// With --verbose: only these kernels (comma-separated names or aliases).
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
    /// With --verbose: the NVRTC target, sm_XY or sm_XYa (default: the GPU's own, else sm_90a).
    #[arg(long)]
    arch: Option<String>,
    /// With --verbose: compile the SIMT-ladder kernels with this tiling instead of their default.
    #[arg(long)]
    tiling: Option<matmul::Tiling>,
}

/// The options of `--verbose` given without it, or with `--json`, are input errors naming the
/// option, as are unknown kernels, an `--arch` that is not `sm_XY[a]`, and a `--tiling` for
/// kernels without one.
fn check_args(args: &ListArgs) -> CliResult<Vec<&'static matmul::KernelSpec>> {
    let kernels = args
        .kernels
        .iter()
        .map(|n| matmul::find(n))
        .collect::<Result<Vec<_>, _>>()?;
    if args.json && args.verbose {
        return Err(CliError::input(
            "--json prints the registry only; it does not take --verbose",
        ));
    }
    let given = [
        ("--kernels", !args.kernels.is_empty()),
        ("--arch", args.arch.is_some()),
        ("--tiling", args.tiling.is_some()),
    ];
    if let Some((option, _)) = given
        .iter()
        .find(|(_, given)| *given)
        .filter(|_| !args.verbose)
    {
        return Err(CliError::input(format!(
            "{option} applies to --verbose's ptxas report; add --verbose"
        )));
    }
    if let Some(arch) = &args.arch {
        let digits = arch
            .strip_prefix("sm_")
            .map(|a| a.strip_suffix('a').unwrap_or(a));
        if !digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())) {
            return Err(CliError::input(format!(
                "--arch {}: expected sm_XY or sm_XYa (e.g. sm_90a, sm_80)",
                matmul::error::quoted(arch)
            )));
        }
    }
    let none = matmul::RunOptions::default();
    let has_tiling = |k: &&matmul::KernelSpec| k.tiling(&none).is_some();
    if args.tiling.is_some() && !kernels.is_empty() && !kernels.iter().any(has_tiling) {
        return Err(CliError::input(format!(
            "--tiling applies to the SIMT-ladder kernels ({}); none of --kernels has a tiling",
            crate::run_cmd::kernels_with(|k| k.tiling(&none).is_some())
        )));
    }
    Ok(kernels)
}

/// `matmul list`: the registry as a table (name, aliases, backend, dtypes, C types, constraints,
/// origin), as JSON with `--json`, or with `--verbose` each CUDA kernel's ptxas report.
pub fn list(args: ListArgs) -> CliResult {
    let kernels = check_args(&args)?;
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
            // C's types: the accumulator always; the 16-bit input dtype too where the kernel
            // writes it (`--c-dtype input`).
            let narrow = k.writes_narrow_c() && k.dtypes.iter().any(|d| d.is_16_bit());
            vec![
                k.name.to_string(),
                k.aliases.join(", "),
                k.backend.to_string(),
                dtypes.join(","),
                if narrow { "acc, input" } else { "acc" }.into(),
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
        ruled_table(
            &[
                "kernel",
                "aliases",
                "backend",
                "dtypes",
                "C",
                "constraints",
                "source",
                "origin"
            ],
            &rows
        )
    );
    if args.verbose {
        println!();
        println!("{}", ptxas_report(&args, kernels)?);
    }
    Ok(())
}

/// ptxas's resource report for every CUDA kernel × dtype, compiled by NVRTC for the GPU's arch
/// (or --arch; needs libnvrtc only, no GPU). Dynamic shared memory is what a launch asks for.
fn ptxas_report(args: &ListArgs, named: Vec<&'static matmul::KernelSpec>) -> CliResult<String> {
    let arch = match &args.arch {
        Some(a) => a.clone(),
        None => matmul::cuda::list_devices()
            .ok()
            .and_then(|d| d.first().map(|d| d.arch.clone()))
            .unwrap_or_else(|| "sm_90a".into()),
    };
    let kernels: Vec<&matmul::KernelSpec> = if named.is_empty() {
        KERNELS
            .iter()
            .filter(|k| k.cuda_source().is_some())
            .collect()
    } else {
        named
    };
    let opts = matmul::RunOptions {
        tile: None,
        tiling: args.tiling,
    };
    let mut rows = Vec::new();
    for k in kernels.into_iter().filter(|k| k.cuda_source().is_some()) {
        if !k.compiles_for(&arch) {
            let mut row = vec![
                k.name.to_string(),
                "-".into(),
                format!("(needs sm_90a, not {arch})"),
            ];
            row.resize(9, String::new());
            rows.push(row);
            continue;
        }
        for &dtype in k.dtypes {
            let compiled = matmul::cuda::compile(k, dtype, &opts, &arch)
                .map_err(|e| CliError::failure(format!("{} {dtype} for {arch}: {e}", k.name)))?;
            let info = compiled
                .function(&k.entry_point())
                .cloned()
                .unwrap_or_default();
            let params = k
                .tiling(&opts)
                .map(|t| t.to_string())
                .or(k.tile(&opts).map(|t| format!("TILE {t}")))
                .or(k.tc_tile().map(|t| t.to_string()))
                .unwrap_or_default();
            let dynamic = k.tile_shared_bytes(dtype, &opts).map_or(0, |(_, b)| b);
            rows.push(vec![
                k.name.to_string(),
                dtype.name().to_string(),
                params,
                info.registers.to_string(),
                format!("{}/{}", info.spill_store_bytes, info.spill_load_bytes),
                info.stack_frame_bytes.to_string(),
                info.shared_bytes.to_string(),
                dynamic.to_string(),
                info.barriers.to_string(),
            ]);
        }
    }
    let (major, minor) = matmul::cuda::nvrtc_version()?;
    Ok(format!(
        "ptxas for {arch} (NVRTC {major}.{minor}):\n{}",
        ruled_table(
            &[
                "kernel",
                "dtype",
                "params",
                "regs",
                "spill st/ld",
                "stack",
                "smem",
                "dyn smem",
                "barriers"
            ],
            &rows
        )
    ))
}

/// `matmul devices`: the CPU, CUDA device 0 or why there is none, and every wgpu adapter with
/// the one `--backend wgpu` opens, or why there is none (never an error).
pub fn devices() -> CliResult {
    println!("cpu   {}", matmul::cpu::CpuBackend.describe());
    match matmul::cuda::CudaBackend::new(0) {
        Ok(b) => println!("cuda  {}", b.describe()),
        Err(e) => println!("cuda  none: {e}"),
    }
    let adapters = matmul::wgpu::adapters();
    match matmul::WgpuBackend::new() {
        Ok(b) => {
            println!("wgpu  {}", b.describe());
            for a in adapters.iter().filter(|a| a.name != b.adapter().name) {
                println!("wgpu  also: {a} (WGPU_ADAPTER_NAME selects it)");
            }
        }
        Err(e) => println!("wgpu  none: {e}"),
    }
    Ok(())
}
