//! `matmul`: the command-line front end. Every subcommand reads the one kernel registry.

mod bench_cmd;
mod byok_cmd;
mod cli_error;
mod env_config;
mod judge_cmd;
mod list_cmd;
mod multi_cmd;
mod puzzle_cmd;
mod report_cmd;
mod run_cmd;
mod show_cmd;
mod soak_cmd;
mod tune_cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// The command line: one subcommand.
#[derive(Parser)]
#[command(
    name = "matmul",
    version,
    about = "GPU matrix multiplication: seed kernels to tensor cores, checked against a CPU reference",
    after_help = cli_error::EXIT_STATUSES
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The subcommands; each variant's doc comment is its `--help` summary.
#[derive(Subcommand)]
enum Command {
    /// Judge Girl CUDA-MATMUL: read `N S1 S2` triples, print one u32 signature of C = A·B per line.
    #[command(after_help = cli_error::EXIT_STATUSES)]
    Signature(judge_cmd::SignatureArgs),
    /// Run judge case files (CASE.in) and compare with the CASE.out beside each.
    #[command(after_help = cli_error::EXIT_STATUSES)]
    Judge(judge_cmd::JudgeArgs),
    /// Run one product and report time, rate and (by default for small sizes) the check.
    #[command(after_help = cli_error::EXIT_STATUSES)]
    Run(run_cmd::RunArgs),
    /// Reproduce a Mojo GPU puzzle configuration and compare with its expected output.
    #[command(after_help = cli_error::EXIT_STATUSES)]
    Puzzle(puzzle_cmd::PuzzleArgs),
    /// The kernel registry as a table.
    #[command(after_help = cli_error::EXIT_STATUSES)]
    List(list_cmd::ListArgs),
    /// The CPU and every CUDA device found (or why none was).
    #[command(after_help = cli_error::EXIT_STATUSES)]
    Devices,
    /// Time every kernel against cuBLAS and the measured ceilings; write JSON, CSV, SVG, Markdown, HTML.
    #[command(after_help = cli_error::EXIT_STATUSES)]
    Bench(bench_cmd::BenchArgs),
    /// Render the report files again from a saved results.json; --compare sets two runs side by side.
    #[command(after_help = cli_error::EXIT_STATUSES)]
    Report(report_cmd::ReportArgs),
    /// Search the SIMT kernels' tile parameters on this GPU; `--kernel auto` and `bench` use the winners.
    #[command(after_help = cli_error::EXIT_STATUSES)]
    Tune(tune_cmd::TuneArgs),
    /// Judge cases and bench-like runs of every kernel in a loop for a set time, every result
    /// verified; counts launches, failures and memory growth (exit 1 on any failure).
    #[command(after_help = cli_error::EXIT_STATUSES)]
    Soak(soak_cmd::SoakArgs),
    /// A kernel's source as the backends get it: CUDA C++ with its -D parameters, the whole WGSL
    /// shader, for a kernel written once in Rust (NAME@rs) the Rust it was generated from, or a
    /// CUDA kernel's PTX with ptxas's registers and spills (--lang ptx).
    #[command(after_help = cli_error::EXIT_STATUSES)]
    Show(show_cmd::ShowArgs),
    /// Write a starter kernel of your own (CUDA, WGSL or Rust) for `run --kernel-file` (docs/own-kernels.md).
    #[command(after_help = cli_error::EXIT_STATUSES)]
    NewKernel(byok_cmd::NewKernelArgs),
}

/// A reader that closes the pipe early (`matmul list | head`) ends the process quietly, by
/// SIGPIPE, as it ends other Unix tools, instead of a panic in the next `println!` (Rust ignores
/// SIGPIPE by default, so every write would fail with EPIPE).
#[cfg(unix)]
fn quiet_on_closed_pipe() {
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid handler.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[cfg(not(unix))]
fn quiet_on_closed_pipe() {}

fn main() -> ExitCode {
    env_config::quiet_window_system();
    quiet_on_closed_pipe();
    matmul::config::set(env_config::from_env());
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version (stdout, status 0), and usage errors (stderr, status 2), as clap
        // prints them, less the whole of a long bad value.
        Err(e) => {
            let text = e.render().to_string();
            let cut = cli_error::cut_long_words(&text);
            if !e.use_stderr() || cut == text {
                e.exit();
            }
            eprint!("{cut}");
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let result = match cli.command {
        Command::Signature(args) => judge_cmd::signature(args),
        Command::Judge(args) => judge_cmd::judge(args),
        Command::Run(args) => run_cmd::run(args),
        Command::Puzzle(args) => puzzle_cmd::puzzle(args),
        Command::List(args) => list_cmd::list(args),
        Command::Devices => list_cmd::devices(),
        Command::Bench(args) => bench_cmd::bench(args),
        Command::Report(args) => report_cmd::report(args),
        Command::Tune(args) => tune_cmd::tune(args),
        Command::Soak(args) => soak_cmd::soak(args),
        Command::NewKernel(args) => byok_cmd::new_kernel(args),
        Command::Show(args) => show_cmd::show(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("matmul: {}", e.message);
            ExitCode::from(e.code)
        }
    }
}
