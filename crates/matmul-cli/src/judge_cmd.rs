//! `matmul signature` and `matmul judge`: the Judge Girl CUDA-MATMUL contract (seed 001).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::{Args, ValueEnum};
use matmul::dispatch::Selection;
use matmul::judge::{self, Case, Generator};
use matmul::BackendChoice;

use crate::cli_error::{CliError, CliResult};

/// `--generator`: the reduction step of `rand_gen` ([`Generator`]).
#[derive(Clone, Copy, ValueEnum)]
pub enum GeneratorArg {
    /// x % (N·N): the problem statement's form and the official outputs'.
    Judge,
    /// x & (N·N − 1): the seed program's form (equal to `judge` when N is a power of two).
    Mask,
}

impl From<GeneratorArg> for Generator {
    fn from(g: GeneratorArg) -> Generator {
        match g {
            GeneratorArg::Judge => Generator::Judge,
            GeneratorArg::Mask => Generator::Mask,
        }
    }
}

/// `matmul signature`'s arguments.
#[derive(Args)]
pub struct SignatureArgs {
    /// Kernel (registry name or seed alias: TILING, ELE, ELEPACK, ROW, ROWPACK, ...) or `auto`.
    #[arg(long, default_value = "auto")]
    kernel: String,
    /// auto (CUDA, else wgpu on a hardware adapter, else CPU), cpu, cuda or wgpu (WGSL kernels; a CUDA kernel name runs its WGSL twin).
    #[arg(long, default_value = "auto")]
    backend: BackendChoice,
    /// How rand_gen reduces x (judge: the official outputs' form).
    #[arg(long, value_enum, default_value = "judge")]
    generator: GeneratorArg,
    /// Print each case's time on stderr.
    #[arg(short, long)]
    verbose: bool,
    /// Input file of `N S1 S2` triples; standard input when absent.
    file: Option<PathBuf>,
}

/// `matmul judge`'s arguments.
#[derive(Args)]
pub struct JudgeArgs {
    /// Kernel (registry name or seed alias: TILING, ELE, ELEPACK, ROW, ROWPACK, ...) or `auto`.
    #[arg(long, default_value = "auto")]
    kernel: String,
    /// auto (CUDA, else wgpu on a hardware adapter, else CPU), cpu, cuda or wgpu (WGSL kernels; a CUDA kernel name runs its WGSL twin).
    #[arg(long, default_value = "auto")]
    backend: BackendChoice,
    /// How rand_gen reduces x (judge: the official outputs' form).
    #[arg(long, value_enum, default_value = "judge")]
    generator: GeneratorArg,
    /// Case files; each CASE.in is compared with the CASE.out beside it.
    #[arg(required = true)]
    cases: Vec<PathBuf>,
    #[command(flatten)]
    user: crate::byok_cmd::UserKernelArgs,
}

/// The whole of `path`, or of standard input when None, less a UTF-8 byte-order mark at the
/// start; unreadable input is exit status 2.
fn read_text(path: Option<&Path>) -> CliResult<String> {
    let mut text = String::new();
    let result = match path {
        Some(p) => std::fs::File::open(p).and_then(|mut f| f.read_to_string(&mut text)),
        None => std::io::stdin().read_to_string(&mut text),
    };
    let name = path.map_or("standard input".to_string(), |p| p.display().to_string());
    result.map_err(|e| CliError::input(format!("cannot read {name}: {e}")))?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

/// The kernel and backend for judge cases (a kernel without u32 is an input error); the
/// selection's notes go to stderr.
fn select_u32(kernel: &str, backend: BackendChoice) -> CliResult<Selection> {
    let sel = judge::select(kernel, backend)?;
    for note in &sel.notes {
        eprintln!("matmul: {note}");
    }
    Ok(sel)
}

/// The signature of C = A·B for one case, on the selected kernel.
fn case_signature(sel: &Selection, case: &Case, generator: Generator) -> CliResult<u32> {
    Ok(judge::case_signature(
        sel.backend.as_ref(),
        sel.kernel,
        case,
        generator,
    )?)
}

/// `matmul signature`: one signature per `N S1 S2` case of the input, on stdout, each as soon as
/// it is computed; a malformed case stops the run with exit status 2 after the cases before it.
pub fn signature(args: SignatureArgs) -> CliResult {
    let text = read_text(args.file.as_deref())?;
    let source = args
        .file
        .as_ref()
        .map_or("<stdin>".to_string(), |p| p.display().to_string());
    let sel = select_u32(&args.kernel, args.backend)?;
    let mut out = std::io::stdout().lock();
    for case in judge::parse_cases(&text) {
        let case = case.map_err(|e| CliError::input(format!("{source}: {e}")))?;
        let start = Instant::now();
        let sig = case_signature(&sel, &case, args.generator.into()).map_err(|e| CliError {
            code: e.code,
            message: format!(
                "{source}: line {}: N = {}: {}",
                case.line, case.n, e.message
            ),
        })?;
        writeln!(out, "{sig}")
            .and_then(|_| out.flush())
            .map_err(|e| CliError::failure(format!("cannot write to standard output: {e}")))?;
        if args.verbose {
            eprintln!(
                "N = {:5}: {:9.3} ms ({} on {})",
                case.n,
                start.elapsed().as_secs_f64() * 1e3,
                sel.kernel.name,
                sel.backend.describe()
            );
        }
    }
    Ok(())
}

/// `matmul judge`: runs each CASE.in file and compares its signatures with CASE.out, printing
/// PASS or FAIL (with the first differing case) per file; any FAIL is exit status 1.
pub fn judge(args: JudgeArgs) -> CliResult {
    // Every case file and its expected signatures are read and checked before a device is
    // opened: a bad file is exit status 2 whatever the machine.
    let mut files = Vec::new();
    for input in &args.cases {
        let text = read_text(Some(input))?;
        let out_path = input.with_extension("out");
        let expected_text = read_text(Some(&out_path))?;
        let cases = judge::parse_cases(&text)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| CliError::input(format!("{}: {e}", input.display())))?;
        let expected = expected_text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                l.trim().parse::<u32>().map_err(|_| {
                    CliError::input(format!(
                        "{}: line {}: {} is not a u32 signature",
                        out_path.display(),
                        i + 1,
                        matmul::error::quoted(l.trim())
                    ))
                })
            })
            .collect::<CliResult<Vec<u32>>>()?;
        files.push((input, out_path, cases, expected));
    }
    let generator: Generator = args.generator.into();
    // A u32 kernel of your own (docs/own-kernels.md), run in a supervised child.
    if args.user.kernel_file.is_some() {
        let backend_given =
            args.backend != BackendChoice::Auto && !crate::byok_cmd::is_rust(&args.user);
        if !args.kernel.eq_ignore_ascii_case("auto") || backend_given {
            return Err(CliError::input(
                "--kernel and --backend do not apply to --kernel-file (--backend does to a .rs kernel)",
            ));
        }
        let kernel = crate::byok_cmd::build(&args.user, matmul::DType::U32, args.backend)?;
        if !crate::byok_cmd::in_child() {
            return crate::byok_cmd::supervise(&kernel);
        }
        let r = crate::byok_cmd::Session::open(&args.user, kernel).and_then(|mut session| {
            let describe = session.describe();
            judge_files(&args, &files, &describe, &mut |case: &Case| {
                session.case_signature(case, generator)
            })
        });
        crate::byok_cmd::finish_child(r);
    }
    let sel = select_u32(&args.kernel, args.backend)?;
    let describe = format!("{} on {}", sel.kernel.name, sel.backend.describe());
    judge_files(&args, &files, &describe, &mut |case: &Case| {
        case_signature(&sel, case, generator)
    })
}

/// A case file: its path, its .out's, its cases and the expected signatures.
type CaseFile<'a> = (&'a PathBuf, PathBuf, Vec<Case>, Vec<u32>);

/// Runs every case file through `signature` and compares with its expected signatures.
fn judge_files(
    args: &JudgeArgs,
    files: &[CaseFile<'_>],
    describe: &str,
    signature: &mut dyn FnMut(&Case) -> CliResult<u32>,
) -> CliResult {
    let mut failed = 0;
    for (input, out_path, cases, expected) in files {
        let start = Instant::now();
        let mut first_diff = None;
        let mut differing = 0;
        for (idx, case) in cases.iter().enumerate() {
            let got = signature(case).map_err(|e| CliError {
                code: e.code,
                message: format!("{}: line {}: {}", input.display(), case.line, e.message),
            })?;
            if expected.get(idx) != Some(&got) {
                differing += 1;
                first_diff.get_or_insert((idx, case, got));
            }
        }
        let secs = start.elapsed().as_secs_f64();
        let what = format!(
            "{} ({} cases, kernel {describe}, {secs:.2} s)",
            input.display(),
            cases.len(),
        );
        if cases.len() != expected.len() {
            failed += 1;
            println!(
                "FAIL {what}: {} has {} signatures for {} cases",
                out_path.display(),
                expected.len(),
                cases.len()
            );
        } else if let Some((idx, case, got)) = first_diff {
            failed += 1;
            println!(
                "FAIL {what}: case {} (line {}: {} {} {}): expected {}, got {got}; {differing} of {} cases differ",
                idx + 1,
                case.line,
                case.n,
                case.s1,
                case.s2,
                expected[idx],
                cases.len()
            );
        } else {
            println!("PASS {what}");
        }
    }
    if failed > 0 {
        return Err(CliError::failure(format!(
            "{failed} of {} case files failed",
            args.cases.len()
        )));
    }
    Ok(())
}
