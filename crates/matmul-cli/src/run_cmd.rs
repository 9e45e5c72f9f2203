//! `matmul run`: one product on the chosen backend, timed, and checked against the reference.

use std::time::Instant;

use clap::{Args, ValueEnum};
use matmul::cpu::reference;
use matmul::judge::{self, Generator};
use matmul::verify;
use matmul::{AnyMatrix, BackendChoice, COut, DType, Init, Op, Problem, RunOptions};

use crate::cli_error::{CliError, CliResult};

/// `--init`: how A and B are filled.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InitArg {
    /// Seeded uniform values (floats in [-1, 1), any u32).
    Random,
    /// A[e] = e, B[e] = 2e (row-major index e), as the Mojo puzzles do.
    Arange,
    /// The judge's rand_gen(seed) and rand_gen(seed + 1); u32 and m = n = k only.
    Judge,
}

/// The default check covers products up to this many multiply-adds (the f64 reference is slow).
const AUTO_CHECK_LIMIT: f64 = (1u64 << 28) as f64;

/// `matmul run`'s arguments.
#[derive(Args)]
pub struct RunArgs {
    /// Kernel (registry name or seed alias) or `auto`.
    #[arg(long, default_value = "auto")]
    kernel: String,
    /// Input dtype: f32, u32, tf32 (f32 storage, tensor cores), bf16 or f16.
    #[arg(long, default_value = "f32")]
    dtype: DType,
    /// Rows of C and of op(A).
    #[arg(short)]
    m: usize,
    /// Columns of C and of op(B).
    #[arg(short)]
    n: usize,
    /// The inner dimension.
    #[arg(short)]
    k: usize,
    /// A is stored transposed (k×m) and read as its transpose.
    #[arg(long)]
    transpose_a: bool,
    /// B is stored transposed (n×k) and read as its transpose.
    #[arg(long)]
    transpose_b: bool,
    /// C's type: `f32` (the accumulator; u32 for u32) or `input` (bf16 C for bf16, f16 C for f16;
    /// the kernel rounds its f32 sums).
    #[arg(long, default_value = "f32")]
    c_dtype: COut,
    #[arg(long, value_enum, default_value = "random")]
    init: InitArg,
    /// Seed of A's values; B's is seed + 1 (random and judge inits).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Tile / TPB for kernels that take one (tiled, single-block, naive).
    #[arg(long)]
    tile: Option<u32>,
    /// Tiling for the SIMT-ladder kernels:
    /// BMxBNxBK/TMxTN[/wWMxWNnWNITER][/sSTAGES][/pPAD][/bMIN_BLOCKS][/rMAX_REGISTERS][/oPTXAS_LEVEL]
    /// (e.g. 128x128x16/8x4/w64x32n2/s3); default: the tune table's entry for the kernel, dtype
    /// and shape class (the user's `matmul tune` cache, else the built-in table for the GPU, as
    /// `matmul bench` uses), else the registry's.
    #[arg(long)]
    tiling: Option<matmul::Tiling>,
    /// Verify against the CPU reference (default: on when m·n·k ≤ 2^28).
    #[arg(long, conflicts_with = "no_check")]
    check: bool,
    /// Skip the check against the CPU reference whatever the size.
    #[arg(long)]
    no_check: bool,
    /// auto (CUDA when present, else CPU), cpu or cuda.
    #[arg(long, default_value = "auto")]
    backend: BackendChoice,
}

/// `matmul run`: selects the kernel and its tuned tiling ([`matmul::dispatch::select`]), runs it
/// once (the time printed includes transfers and any first compile), prints the signature of a
/// u32 C, and checks C against the CPU reference (by default up to 2^28 multiply-adds); a failed
/// check is exit status 1.
pub fn run(args: RunArgs) -> CliResult {
    let problem = Problem::new(args.m, args.n, args.k, args.dtype)
        .with_ops(
            Op::from_flag(args.transpose_a),
            Op::from_flag(args.transpose_b),
        )
        .with_c(args.c_dtype);
    let bytes = problem.host_bytes()?;
    matmul::ensure_host_memory(&problem, bytes)?;
    let sel = matmul::dispatch::select(&args.kernel, args.backend, args.dtype, Some(&problem))?;
    for note in &sel.notes {
        eprintln!("matmul: {note}");
    }
    let opts = RunOptions {
        tile: args.tile,
        tiling: args.tiling.or(sel.tiling),
    };
    sel.backend.check(sel.kernel, &problem, opts)?;

    let (a, b) = inputs(&args, &problem)?;
    let start = Instant::now();
    let c = sel.backend.run(sel.kernel, &problem, &a, &b, opts)?;
    let secs = start.elapsed().as_secs_f64();
    let rate = problem.flops() / secs / 1e9;
    println!("kernel   {} on {}", sel.kernel.name, sel.backend.describe());
    if let Some(t) = opts.tiling {
        let origin = if args.tiling.is_some() {
            "--tiling"
        } else {
            "tuned"
        };
        println!("tiling   {t} ({origin})");
    }
    println!("problem  {problem}");
    println!(
        "time     {:.3} ms (one call, including transfers and any first-use compilation)",
        secs * 1e3
    );
    println!(
        "rate     {rate:.2} G{}/s (use `matmul bench` for steady-state timing)",
        args.dtype.rate_unit()
    );
    if let AnyMatrix::U32(c) = &c {
        println!("signature {}", judge::signature(&c.data));
    }
    let check = args.check || (!args.no_check && problem.flops() / 2.0 <= AUTO_CHECK_LIMIT);
    if check {
        let reference = reference::matmul(&problem, &a, &b)?;
        let v = verify::compare_inputs(&problem, &a, &b, &c, &reference);
        let verdict = if v.passed { "PASS" } else { "FAIL" };
        println!(
            "check    {verdict}: rel. Frobenius error {:.3e} (tolerance {:.1e}), max |error| {:.3e}, {} mismatches",
            v.rel_frobenius, v.tolerance, v.max_abs_err, v.mismatches
        );
        if !v.passed {
            return Err(CliError::failure(format!(
                "{} does not match the CPU reference on {problem}",
                sel.kernel.name
            )));
        }
    } else {
        println!("check    skipped (m·n·k > 2^28; pass --check to force it)");
    }
    Ok(())
}

/// A and B as stored for `problem`, filled as `--init` and `--seed` say.
fn inputs(args: &RunArgs, problem: &Problem) -> CliResult<(AnyMatrix, AnyMatrix)> {
    let (ar, ac) = problem.a_stored();
    let (br, bc) = problem.b_stored();
    Ok(match args.init {
        InitArg::Random => (
            AnyMatrix::generate(args.dtype, ar, ac, Init::Random { seed: args.seed })?,
            AnyMatrix::generate(
                args.dtype,
                br,
                bc,
                Init::Random {
                    seed: args.seed.wrapping_add(1),
                },
            )?,
        ),
        InitArg::Arange => (
            AnyMatrix::generate(args.dtype, ar, ac, Init::Arange { scale: 1 })?,
            AnyMatrix::generate(args.dtype, br, bc, Init::Arange { scale: 2 })?,
        ),
        InitArg::Judge => {
            if args.dtype != DType::U32 || args.m != args.n || args.n != args.k {
                return Err(CliError::input("--init judge needs --dtype u32 and m = n = k (the judge's square u32 matrices)"));
            }
            let n = u32::try_from(args.n)
                .ok()
                .filter(|&n| n <= judge::MAX_N)
                .ok_or_else(|| {
                    CliError::input(format!("--init judge needs n ≤ {}", judge::MAX_N))
                })?;
            let s1 = u32::try_from(args.seed)
                .map_err(|_| CliError::input("--init judge needs a seed that fits in u32"))?;
            let a = judge::rand_gen(s1, n, Generator::Judge)?;
            let b = judge::rand_gen(s1.wrapping_add(1), n, Generator::Judge)?;
            (AnyMatrix::U32(a), AnyMatrix::U32(b))
        }
    })
}
