//! `matmul show`: a kernel's source as the backends get it — the CUDA C++ NVRTC compiles (with
//! its `-D` parameters for a dtype), the whole WGSL shader wgpu compiles, for a kernel written
//! once in Rust (`NAME@rs`) the Rust it was generated from (Sarek's generated-code tabs), and a
//! CUDA kernel's PTX as NVRTC writes it, with ptxas's report.

use clap::Args;
use matmul::registry::{rs_kernels, wgsl, Implementation};
use matmul::{DType, RunOptions};

use crate::cli_error::{CliError, CliResult};

#[derive(Args)]
pub struct ShowArgs {
    /// Kernel (registry name or seed alias).
    kernel: String,
    /// What to print: `cuda` (CUDA kernels), `wgsl` (wgpu kernels), `rust` (kernels written once in
    /// Rust, `NAME@rs`), `ptx` (CUDA kernels: compiled by NVRTC, then ptxas's registers, spills
    /// and shared memory); default: the kernel's own language.
    #[arg(long)]
    lang: Option<String>,
    /// The dtype the source is shown for (the `-D` parameters, WGSL's element type).
    #[arg(long, default_value = "f32")]
    dtype: DType,
    /// With `--lang ptx`: the architecture to compile for, sm_XX or sm_XXa (default: the CUDA
    /// device's, sm_90a without one).
    #[arg(long, value_name = "sm_XX")]
    arch: Option<String>,
}

/// The architecture `show --lang ptx` compiles for without --arch when there is no CUDA device.
const DEFAULT_PTX_ARCH: &str = "sm_90a";

pub fn show(args: ShowArgs) -> CliResult {
    let kernel = matmul::find(&args.kernel)?;
    let ptx = args
        .lang
        .as_deref()
        .is_some_and(|l| l.eq_ignore_ascii_case("ptx"));
    if let Some(arch) = &args.arch {
        if !ptx {
            return Err(CliError::input("--arch applies to --lang ptx"));
        }
        let digits = arch
            .strip_prefix("sm_")
            .map(|r| r.trim_end_matches(['a', 'f']))
            .unwrap_or("");
        if digits.len() < 2 || !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(CliError::input(format!(
                "--arch {}: give a real architecture, sm_XX or sm_XXa (sm_80, sm_90a)",
                matmul::error::quoted(arch)
            )));
        }
    }
    if args
        .lang
        .as_deref()
        .is_some_and(|l| l.eq_ignore_ascii_case("rust"))
    {
        return match rs_kernels::source_of(kernel.name) {
            Some(src) => {
                print!("{src}");
                Ok(())
            }
            None => Err(CliError::input(format!(
                "kernel `{}` is hand-written: it has no Rust form (the kernels written once in Rust are the `@rs` ones: `matmul list`)",
                kernel.name
            ))),
        };
    }
    if !kernel.supports(args.dtype) {
        return Err(CliError::input(format!(
            "kernel `{}` does not take {} (it takes {})",
            kernel.name,
            args.dtype,
            kernel
                .dtypes
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let own = match &kernel.implementation {
        Implementation::Cuda(_) => "cuda",
        Implementation::Wgsl(_) => "wgsl",
        _ => "",
    };
    let lang = args.lang.as_deref().unwrap_or(own).to_ascii_lowercase();
    match (lang.as_str(), &kernel.implementation) {
        ("cuda", Implementation::Cuda(src)) => {
            let defines =
                matmul::cuda::compile::kernel_defines(kernel, args.dtype, &RunOptions::default())?;
            let defines: Vec<String> = defines.iter().map(|(k, v)| format!("-D{k}={v}")).collect();
            println!(
                "// {} ({}): NVRTC options {} (`matmul list --verbose --kernels {}` adds ptxas's registers and spills)",
                kernel.name,
                src.file,
                defines.join(" "),
                kernel.name
            );
            for (name, text) in src.includes {
                println!("// ---- {name} (included before the kernel) ----\n{text}");
            }
            println!("// ---- {} ----\n{}", src.file, src.text);
        }
        ("ptx", Implementation::Cuda(_)) => print_ptx(kernel, &args)?,
        ("wgsl", Implementation::Wgsl(src)) => {
            let tile = kernel.tile(&RunOptions::default()).unwrap_or(0);
            print!("{}", wgsl::text(src, args.dtype, tile));
        }
        (lang, _) => {
            return Err(CliError::input(format!(
                "kernel `{}` has no {lang} source to show (its own: {own}; `--lang rust` for an `@rs` kernel, `--lang ptx` for a CUDA kernel)",
                kernel.name
            )))
        }
    }
    Ok(())
}

/// `--lang ptx`: the kernel compiled by NVRTC as a launch compiles it (its `-D` parameters for
/// the dtype, its options), for --arch, the device's architecture, or sm_90a; the PTX, then
/// ptxas's line for the entry point. Without NVRTC, an error (exit 1).
fn print_ptx(kernel: &'static matmul::KernelSpec, args: &ShowArgs) -> CliResult {
    let arch = match &args.arch {
        Some(a) => a.clone(),
        None => matmul::cuda::list_devices()
            .ok()
            .and_then(|d| d.first().map(|d| d.arch.clone()))
            .unwrap_or_else(|| DEFAULT_PTX_ARCH.to_string()),
    };
    let (ptx, compiled) = matmul::cuda::ptx(kernel, args.dtype, &RunOptions::default(), &arch)
        .map_err(|e| {
            let code = if e.is_bad_input() { 2 } else { 1 };
            CliError {
                code,
                message: format!("show --lang ptx compiles `{}` with NVRTC: {e}", kernel.name),
            }
        })?;
    print!("{ptx}");
    if !ptx.ends_with('\n') {
        println!();
    }
    let entry = kernel.entry_point();
    match compiled.function(&entry) {
        Some(f) => println!(
            "// ptxas {arch} {entry}: {} registers, {} bytes spill stores, {} bytes spill loads, {} bytes smem, {} bytes stack frame, {} barriers",
            f.registers,
            f.spill_store_bytes,
            f.spill_load_bytes,
            f.shared_bytes,
            f.stack_frame_bytes,
            f.barriers
        ),
        None => println!("// ptxas {arch}: no report for {entry} in NVRTC's log"),
    }
    Ok(())
}
