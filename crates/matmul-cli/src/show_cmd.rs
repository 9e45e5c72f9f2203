//! `matmul show`: a kernel's source as the backends get it — the CUDA C++ NVRTC compiles (with
//! its `-D` parameters for a dtype), the whole WGSL shader wgpu compiles, and for a kernel written
//! once in Rust (`NAME@rs`) the Rust it was generated from: Sarek's generated-code tabs.

use clap::Args;
use matmul::registry::{rs_kernels, wgsl, Implementation};
use matmul::{DType, RunOptions};

use crate::cli_error::{CliError, CliResult};

#[derive(Args)]
pub struct ShowArgs {
    /// Kernel (registry name or seed alias).
    kernel: String,
    /// What to print: `cuda` (CUDA kernels), `wgsl` (wgpu kernels), `rust` (kernels written once in
    /// Rust, `NAME@rs`); default: the kernel's own language.
    #[arg(long)]
    lang: Option<String>,
    /// The dtype the source is shown for (the `-D` parameters, WGSL's element type).
    #[arg(long, default_value = "f32")]
    dtype: DType,
}

pub fn show(args: ShowArgs) -> CliResult {
    let kernel = matmul::find(&args.kernel)?;
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
        ("wgsl", Implementation::Wgsl(src)) => {
            let tile = kernel.tile(&RunOptions::default()).unwrap_or(0);
            print!("{}", wgsl::text(src, args.dtype, tile));
        }
        (lang, _) => {
            return Err(CliError::input(format!(
                "kernel `{}` has no {lang} source to show (its own: {own}; `--lang rust` for an `@rs` kernel)",
                kernel.name
            )))
        }
    }
    Ok(())
}
