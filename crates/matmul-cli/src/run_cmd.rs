//! `matmul run`: one product on the chosen backend, timed, and checked against the reference.

use std::time::Instant;

use clap::{Args, ValueEnum};
use matmul::cpu::reference;
use matmul::judge::{self, Generator};
use matmul::verify;
use matmul::{
    AnyMatrix, BackendChoice, COut, DType, Init, KernelSpec, Op, Precision, Problem, RunOptions,
    KERNELS,
};

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
    /// How `auto` may compute f32 products: `accurate` (SGEMM's accuracy and special values by
    /// the fastest method: on Hopper FP32 emulated on the tf32 tensor cores, 3xTF32, where it
    /// wins) or `strict` (IEEE FMA kernels only). A named kernel runs as named.
    #[arg(long, default_value = "accurate")]
    precision: Precision,
    #[arg(long, value_enum, default_value = "random")]
    init: InitArg,
    /// Seed of A's values; B's is seed + 1 (random and judge inits).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Tile / TPB for the kernels that take one (tiled, tiled-async, single-block; 1 to 32);
    /// an error for any other kernel.
    #[arg(long)]
    tile: Option<u32>,
    /// Tiling for the SIMT-ladder kernels:
    /// BMxBNxBK/TMxTN[/wWMxWNnWNITER][/sSTAGES][/pPAD][/bMIN_BLOCKS][/rMAX_REGISTERS][/oPTXAS_LEVEL]
    /// (e.g. 128x128x16/8x4/w64x32n2/s3); default: the tune table's entry for the kernel, dtype
    /// and shape class (the user's `matmul tune` cache, else the built-in table for the GPU, as
    /// `matmul bench` uses), else the registry's. An error for a kernel without a tiling.
    #[arg(long)]
    tiling: Option<matmul::Tiling>,
    /// With `--kernel auto` on CUDA: if the device's tune table has no measured choice for this
    /// shape's bucket, time auto's top 3 candidates first and keep the fastest in the table
    /// (later runs use it without this flag).
    #[arg(long)]
    autotune: bool,
    /// Verify against the CPU reference (default: on when m·n·k ≤ 2^28).
    #[arg(long, conflicts_with = "no_check")]
    check: bool,
    /// Skip the check against the CPU reference whatever the size.
    #[arg(long)]
    no_check: bool,
    /// auto (CUDA, else wgpu on a hardware adapter, else CPU), cpu, cuda or wgpu (WGSL kernels; a CUDA kernel name runs its WGSL twin).
    #[arg(long, default_value = "auto")]
    backend: BackendChoice,
    #[command(flatten)]
    user: crate::byok_cmd::UserKernelArgs,
    #[command(flatten)]
    gpu: crate::multi_cmd::GpuArgs,
    #[command(flatten)]
    ranks: crate::multi_cmd::RankArgs,
}

/// The registry's kernels for which `pred` holds, comma-separated (for messages).
pub fn kernels_with(pred: impl Fn(&KernelSpec) -> bool) -> String {
    let names: Vec<&str> = KERNELS.iter().filter(|k| pred(k)).map(|k| k.name).collect();
    names.join(", ")
}

/// `--tile` and `--tiling` apply to some kernels only: either given for `kernel`, which has no
/// such parameter, is an input error naming the option (`chosen`: what picked the kernel).
fn check_options(args: &RunArgs, kernel: &KernelSpec, chosen: &str) -> CliResult {
    let none = RunOptions::default();
    if args.tile.is_some() && kernel.tile(&none).is_none() {
        return Err(CliError::input(format!(
            "--tile applies to the kernels with a TILE or TPB ({}); `{}`{chosen} has none",
            kernels_with(|k| k.tile(&none).is_some()),
            kernel.name
        )));
    }
    if args.tiling.is_some() && kernel.tiling(&none).is_none() {
        return Err(CliError::input(format!(
            "--tiling applies to the SIMT-ladder kernels ({}); `{}`{chosen} has no tiling",
            kernels_with(|k| k.tiling(&none).is_some()),
            kernel.name
        )));
    }
    Ok(())
}

/// `matmul run`: checks the command line (the problem, host memory, `--init`, and for a named
/// kernel its options and the rules that need no device) and, when checking, that the inputs
/// and the reference are within the dtype's range, before a backend is opened; selects
/// the kernel and its tuned tiling ([`matmul::dispatch::select`]), runs it once (the time
/// printed includes transfers and any first compile), prints the signature of a u32 C, and
/// checks C against the CPU reference (by default up to 2^28 multiply-adds); a failed check is
/// exit status 1.
pub fn run(args: RunArgs) -> CliResult {
    if args.gpu.active() || args.ranks.active() {
        return run_multi(&args);
    }
    args.gpu.refuse_without_gpus()?;
    let problem = Problem::new(args.m, args.n, args.k, args.dtype)
        .with_ops(
            Op::from_flag(args.transpose_a),
            Op::from_flag(args.transpose_b),
        )
        .with_c(args.c_dtype)
        .with_precision(args.precision);
    let bytes = problem.host_bytes()?;
    matmul::ensure_host_memory(&problem, bytes)?;
    judge_init(&args)?;
    if args.autotune && !args.kernel.eq_ignore_ascii_case("auto") {
        return Err(CliError::input(format!(
            "--autotune applies to --kernel auto (it measures auto's candidates); `{}` is named",
            args.kernel
        )));
    }
    // A kernel of your own (docs/own-kernels.md): checked here, run in a supervised child.
    let user = match &args.user.kernel_file {
        Some(_) => {
            let other = [
                (!args.kernel.eq_ignore_ascii_case("auto"), "--kernel"),
                (args.tile.is_some(), "--tile"),
                (args.tiling.is_some(), "--tiling"),
                (
                    args.backend != BackendChoice::Auto && !crate::byok_cmd::is_rust(&args.user),
                    "--backend",
                ),
            ];
            if let Some((_, opt)) = other.iter().find(|(given, _)| *given) {
                return Err(CliError::input(format!(
                    "{opt} does not apply to --kernel-file (the file's extension picks CUDA or wgpu, --backend too for a .rs kernel; -D, --grid and --block set the launch)"
                )));
            }
            let kernel = crate::byok_cmd::build(&args.user, args.dtype, args.backend)?;
            kernel.check_problem(&problem)?;
            kernel.launch(&problem)?;
            if !crate::byok_cmd::in_child() {
                return crate::byok_cmd::supervise(&kernel);
            }
            Some(kernel)
        }
        None => None,
    };
    let asked = RunOptions {
        tile: args.tile,
        tiling: args.tiling,
    };
    if user.is_none() && !args.kernel.eq_ignore_ascii_case("auto") {
        let spec = matmul::find(&args.kernel)?;
        check_options(&args, spec, "")?;
        spec.can_run(&problem, None, &asked)
            .map_err(matmul::Error::from)?;
    }
    let (a, b) = inputs(&args, &problem)?;
    let check = args.check || (!args.no_check && problem.flops() / 2.0 <= AUTO_CHECK_LIMIT);
    // The reference before the kernel: inputs or sums beyond the dtype's range leave it not
    // finite, which is the input's fault, found before any device is opened.
    let reference = if check {
        let r = reference::matmul(&problem, &a, &b)?;
        verify::check_range(&problem, &a, &b, &r).map_err(|e| out_of_range(&args, e))?;
        Some(r)
    } else {
        None
    };
    if let Some(kernel) = &user {
        crate::byok_cmd::run_child(&args.user, kernel, &problem, &a, &b, reference, args.seed);
    }
    let mut sel = matmul::dispatch::select(&args.kernel, args.backend, args.dtype, Some(&problem))?;
    if args.autotune && args.kernel.eq_ignore_ascii_case("auto") {
        let tuned = matmul::dispatch::autotune(sel.backend.as_ref(), &problem)?;
        sel.kernel = tuned.kernel;
        sel.tiling = tuned.tiling;
        sel.notes.extend(tuned.notes);
    }
    for note in &sel.notes {
        eprintln!("matmul: {note}");
    }
    check_options(&args, sel.kernel, " (the choice of `auto`)")?;
    let opts = RunOptions {
        tile: args.tile,
        tiling: args.tiling.or(sel.tiling),
    };
    sel.backend.check(sel.kernel, &problem, opts)?;

    let start = Instant::now();
    let c = sel.backend.run(sel.kernel, &problem, &a, &b, opts)?;
    let secs = start.elapsed().as_secs_f64();
    let rate = problem.flops() / secs / 1e9;
    println!("kernel   {} on {}", sel.kernel.name, sel.backend.describe());
    if sel.kernel.is_tf32x3() {
        println!("method   f32 via 3xTF32 on the tf32 tensor cores, SGEMM's accuracy and special values (--precision strict: IEEE FMA kernels only)");
    }
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
    if let Some(reference) = reference {
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

/// `run --gpus N` (every `--layout` once, checked as `run` checks) or `run --rank R` (this
/// process's rank, its blocks of C checked): the one-GPU options that do not apply refused.
fn run_multi(args: &RunArgs) -> CliResult {
    let given = [
        (args.tile.is_some(), "--tile"),
        (args.tiling.is_some(), "--tiling"),
        (args.user.kernel_file.is_some(), "--kernel-file"),
        (
            !matches!(args.backend, BackendChoice::Auto | BackendChoice::Cuda),
            "--backend (other than cuda)",
        ),
        (args.init == InitArg::Judge, "--init judge"),
        (
            args.transpose_a || args.transpose_b,
            "--transpose-a/--transpose-b",
        ),
    ];
    if let Some((_, opt)) = given.iter().find(|(g, _)| *g) {
        return Err(CliError::input(format!(
            "{opt} does not apply to a multi-GPU product (--gpus, --rank; docs/multi-gpu.md)"
        )));
    }
    let init = match args.init {
        InitArg::Arange => (Init::Arange { scale: 1 }, Init::Arange { scale: 2 }),
        _ => (
            Init::Random { seed: args.seed },
            Init::Random {
                seed: args.seed.wrapping_add(1),
            },
        ),
    };
    let problem = Problem::new(args.m, args.n, args.k, args.dtype).with_c(args.c_dtype);
    matmul::ensure_host_memory(&problem, problem.host_bytes()?)?;
    let plan = crate::multi_cmd::Plan {
        gpu: args.gpu.clone(),
        dtypes: vec![args.dtype],
        shapes: vec![matmul::Shape {
            m: args.m,
            n: args.n,
            k: args.k,
        }],
        kernel: args.kernel.clone(),
        c_dtype: args.c_dtype,
        init: Some(init),
        check: args.check || (!args.no_check && problem.flops() / 2.0 <= AUTO_CHECK_LIMIT),
        warmup: 0,
        iters: 1,
        out: None,
    };
    if args.ranks.active() {
        crate::multi_cmd::process(&plan, &args.ranks)
    } else {
        crate::multi_cmd::run(&plan)
    }
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
            let (n, s1) = judge_init(args)?.expect("--init judge");
            let a = judge::rand_gen(s1, n, Generator::Judge)?;
            let b = judge::rand_gen(s1.wrapping_add(1), n, Generator::Judge)?;
            (AnyMatrix::U32(a), AnyMatrix::U32(b))
        }
    })
}

/// [`verify::check_range`]'s error (exit status 2), with the largest values `--init arange`
/// puts in A and B when they came from it.
fn out_of_range(args: &RunArgs, e: matmul::Error) -> CliError {
    let mut e = CliError::from(e);
    if args.init == InitArg::Arange {
        let last = |rows: usize, cols: usize| (rows * cols).saturating_sub(1);
        e.message += &format!(
            " (--init arange fills A with 0 to {} and B with 0 to {})",
            last(args.m, args.k),
            2 * last(args.k, args.n)
        );
    }
    e
}

/// For `--init judge`, the judge's N and first seed; an input error unless the problem is the
/// judge's (u32, m = n = k ≤ 65535, a seed that fits in u32). None for the other inits.
fn judge_init(args: &RunArgs) -> CliResult<Option<(u32, u32)>> {
    if args.init != InitArg::Judge {
        return Ok(None);
    }
    if args.dtype != DType::U32 || args.m != args.n || args.n != args.k {
        return Err(CliError::input(
            "--init judge needs --dtype u32 and m = n = k (the judge's square u32 matrices)",
        ));
    }
    let n = u32::try_from(args.n)
        .ok()
        .filter(|&n| n <= judge::MAX_N)
        .ok_or_else(|| CliError::input(format!("--init judge needs n ≤ {}", judge::MAX_N)))?;
    let s1 = u32::try_from(args.seed)
        .map_err(|_| CliError::input("--init judge needs a seed that fits in u32"))?;
    Ok(Some((n, s1)))
}
