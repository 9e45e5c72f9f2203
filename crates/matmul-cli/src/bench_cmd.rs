//! `matmul bench`: every kernel against cuBLAS and the machine's own measured limits, in one run.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use matmul::cuda::CudaBackend;
use matmul::{Backend, BackendChoice, BackendKind, COut, DType, Op, Precision, Shape};
use matmul_bench::profile::{profile_report, Profiled};
use matmul_bench::{
    defaults, measure_cpu, measure_gpu, BenchConfig, BenchKernel, CpuCeilingOptions, ProgressEvent,
    Record, Suite,
};

use crate::cli_error::{CliError, CliResult};

/// `matmul bench`'s arguments.
#[derive(Args)]
pub struct BenchArgs {
    /// Comma-separated kernel names or aliases, or `all` (every kernel of the backend); `auto` is
    /// the kernel and tiling `matmul run --kernel auto` picks for each problem, reported as
    /// `auto (KERNEL TILING)`; `cublaslt-int8` (CUDA, u32 only) adds cuBLASLt's int8 GEMM of the
    /// same m, n, k as a ceiling row (not a u32 product, not verified; u32 rows then show their
    /// rate against it ÷ 10).
    #[arg(long, default_value = "all")]
    kernels: String,
    /// Comma-separated dtypes (default: f32,u32,tf32,bf16,f16 on CUDA; f32,u32 on the CPU).
    #[arg(long, value_delimiter = ',')]
    dtypes: Vec<DType>,
    /// Square sizes, comma-separated (default: 1024,2048,4096 on CUDA; 256,512,1024 on the CPU).
    #[arg(long, value_delimiter = ',', conflicts_with = "shapes", value_parser = positive_size)]
    sizes: Vec<usize>,
    /// Shapes MxNxK, comma-separated.
    #[arg(long, value_delimiter = ',')]
    shapes: Vec<Shape>,
    /// A shape suite: `shapes` or `quick` (built in, from bench/suites/), or the path of a file of
    /// lines `MxNxK [--transpose-a] [--transpose-b] [TAG...] [# comment]`. The report adds, per
    /// dtype and kernel, the geometric mean and the worst ratio to cuBLAS, overall and per tag.
    #[arg(long, conflicts_with_all = ["sizes", "shapes", "transpose_a", "transpose_b"])]
    suite: Option<String>,
    /// Skip cases whose m·n·k is above this, saying so (default with --suite on the CPU: 2^30,
    /// as the suites are sized for GPUs; 0: no limit).
    #[arg(long)]
    max_mnk: Option<u64>,
    /// Every product with A stored transposed (k×m).
    #[arg(long)]
    transpose_a: bool,
    /// Every product with B stored transposed (n×k).
    #[arg(long)]
    transpose_b: bool,
    /// C's type: `f32` (the accumulator; u32 for u32) or `input` (bf16 C for bf16, f16 C for f16).
    #[arg(long, default_value = "f32")]
    c_dtype: COut,
    /// How `auto` may compute f32 products: `accurate` (SGEMM's accuracy and special values by
    /// the fastest method: on Hopper FP32 emulated on the tf32 tensor cores, 3xTF32, where it
    /// wins) or `strict` (IEEE FMA kernels only). A named kernel runs as named.
    #[arg(long, default_value = "accurate")]
    precision: Precision,
    /// Untimed launches before timing.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Timed launches (default: as many as fit in --min-time).
    #[arg(long, conflicts_with = "min_time", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000_000))]
    iters: Option<usize>,
    /// Seconds of timed launches per case (default 0.25), up to --max-iters launches.
    #[arg(long, value_parser = positive_seconds)]
    min_time: Option<f64>,
    /// The most launches --min-time may time per case, all rounds together: raise it for long
    /// runs of short launches (lab/gpu-power.sh's 5 s of 0.2 ms launches need 25,000).
    #[arg(long, default_value_t = 1000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000_000))]
    max_iters: usize,
    /// Seconds a slow kernel may spend per case before its launch count is cut (default 5).
    #[arg(long, default_value_t = 5.0, value_parser = positive_seconds)]
    max_case_seconds: f64,
    /// Timing rounds per shape: each kernel is timed this many times, in an order rotated every
    /// round, for its share of --min-time (or --iters) each time, and its statistics pool the
    /// rounds, so clock drift falls on every kernel alike (for ratios to cuBLAS of a few percent).
    /// For tensor-core kernels on a power-capped GPU use about 30: with 3 the medians follow the
    /// card's clock swings (stretches of 50–100 ms; ratios moved ±7 % on an H100), with 30 they
    /// repeated within ±0.3 % (lab/notebook.md, "Measuring small differences").
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,
    /// Run every case as a strided batch of this many products (contiguous A, B and C), timed
    /// as a whole: the kernels with a batched build in one launch, cuBLAS through
    /// cublasGemmStridedBatchedEx (docs/library.md, "Batches").
    #[arg(long, default_value_t = 1, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=65_535))]
    batch: usize,
    /// auto (the backend of the kernels --kernels names, else CUDA when present, else CPU), cpu
    /// or cuda.
    #[arg(long, default_value = "auto")]
    backend: BackendChoice,
    /// Report directory (results.json, results.csv, roofline.svg, ladder.svg, report.md,
    /// report.html), created if missing; a report already there is replaced. Checked before
    /// anything is timed.
    #[arg(long, default_value = "target/matmul-report")]
    out: PathBuf,
    /// A short run: small sizes and short timings; on the GPU a handful of kernels per dtype (the
    /// seeds' naive and tiled at 1024 only, the fastest SIMT and tensor-core kernels, cuBLAS)
    /// unless --kernels names them.
    #[arg(long)]
    quick: bool,
    /// Skip measuring the ceilings (the datasheet values are still shown).
    #[arg(long)]
    no_ceilings: bool,
    /// Ignore the tune tables (this machine's and the built-in one for the GPU's class): the
    /// SIMT kernels run at their registry tilings and `auto` decides by its cost model alone, as
    /// on a GPU never tuned.
    #[arg(long)]
    no_tuned: bool,
    /// `auto` times its top 3 candidates on the first case of each shape bucket without a
    /// measured choice (not counted in the case's timing), runs the fastest, and saves the
    /// choices into this device class's tune table for later runs (`matmul tune --suite` does
    /// the same for a whole suite ahead of time).
    #[arg(long)]
    autotune: bool,
    /// Measure each verified CUDA kernel's DRAM bytes with Nsight Compute (ncu) and place it on
    /// the roofline by that measured intensity (a note, not an error, when ncu is absent).
    #[arg(long)]
    profile: bool,
    /// Run every SIMT-ladder kernel of the run with this tiling
    /// (BMxBNxBK/TMxTN[/wWMxWNnWNITER][/sSTAGES][/pPAD][/bMIN_BLOCKS][/rMAX_REGISTERS][/oPTXAS_LEVEL]);
    /// an error when no kernel of the run has one.
    #[arg(long)]
    tiling: Option<matmul::Tiling>,
    #[command(flatten)]
    user: crate::byok_cmd::UserKernelArgs,
    #[command(flatten)]
    gpu: crate::multi_cmd::GpuArgs,
}

/// `matmul bench --kernel-file` (docs/own-kernels.md): the user's kernel beside our best and
/// cuBLAS, run in a supervised child ([`crate::byok_cmd`]).
fn bench_user(args: &BenchArgs) -> CliResult {
    use crate::byok_cmd;
    let other = [
        (args.suite.is_some(), "--suite"),
        (args.tiling.is_some(), "--tiling"),
        (args.profile, "--profile"),
        (args.rounds != 1, "--rounds"),
        (args.batch != 1, "--batch"),
        (args.min_time.is_some(), "--min-time"),
    ];
    if let Some((_, opt)) = other.iter().find(|(given, _)| *given) {
        return Err(CliError::input(format!(
            "{opt} does not apply to --kernel-file (docs/own-kernels.md)"
        )));
    }
    let dtype = match args.dtypes.as_slice() {
        [] => DType::F32,
        [d] => *d,
        _ => {
            return Err(CliError::input(
                "--kernel-file: one --dtypes value (the kernel's dtype)",
            ))
        }
    };
    let kernel = byok_cmd::build(&args.user, dtype, args.backend)?;
    let shapes: Vec<(usize, usize, usize)> = if !args.shapes.is_empty() {
        args.shapes.iter().map(|s| (s.m, s.n, s.k)).collect()
    } else if !args.sizes.is_empty() {
        args.sizes.iter().map(|&n| (n, n, n)).collect()
    } else if kernel.lang == matmul::user::Lang::Wgsl {
        vec![(256, 256, 256)]
    } else {
        vec![(1024, 1024, 1024), (4096, 4096, 4096)]
    };
    let kernels = if args.kernels.eq_ignore_ascii_case("all") {
        Vec::new()
    } else {
        args.kernels
            .split(',')
            .map(|k| k.trim().to_string())
            .collect()
    };
    for k in &kernels {
        matmul::find(k)?;
    }
    let plan = byok_cmd::BenchPlan {
        shapes,
        dtype,
        ops: (
            matmul::Op::from_flag(args.transpose_a),
            matmul::Op::from_flag(args.transpose_b),
        ),
        warmup: args.warmup,
        iters: args.iters,
        kernels,
        out: args.out.clone(),
        no_ceilings: args.no_ceilings,
        no_tuned: args.no_tuned,
    };
    for &(m, n, k) in &plan.shapes {
        let p = matmul::Problem::new(m, n, k, dtype).with_ops(plan.ops.0, plan.ops.1);
        kernel.check_problem(&p)?;
        kernel.launch(&p)?;
    }
    if !byok_cmd::in_child() {
        prepare_out(&args.out)?;
        return byok_cmd::supervise(&kernel);
    }
    byok_cmd::bench_child(&args.user, &kernel, &plan)
}

/// `bench --gpus N`: one kernel (`--kernels` one name, default `auto`) over the dtypes (default
/// f32) and shapes (default 8192³), every `--layout`, beside the 1-GPU run; multi.json and
/// multi.md in `--out`. The options of the one-GPU bench that do not apply are refused.
fn bench_multi(args: &BenchArgs) -> CliResult {
    let given = [
        (args.suite.is_some(), "--suite"),
        (
            args.transpose_a || args.transpose_b,
            "--transpose-a/--transpose-b",
        ),
        (args.user.kernel_file.is_some(), "--kernel-file"),
        (args.profile, "--profile"),
        (args.tiling.is_some(), "--tiling"),
        (args.rounds != 1, "--rounds"),
        (args.batch != 1, "--batch"),
        (args.min_time.is_some(), "--min-time"),
        (args.quick, "--quick"),
        (args.max_mnk.is_some(), "--max-mnk"),
        (
            !matches!(args.backend, BackendChoice::Auto | BackendChoice::Cuda),
            "--backend (other than cuda)",
        ),
    ];
    if let Some((_, opt)) = given.iter().find(|(g, _)| *g) {
        return Err(CliError::input(format!(
            "{opt} does not apply to `bench --gpus` (docs/multi-gpu.md)"
        )));
    }
    let kernel = if args.kernels.eq_ignore_ascii_case("all") {
        "auto".to_string()
    } else if args.kernels.contains(',') {
        return Err(CliError::input(format!(
            "--kernels {}: `bench --gpus` times one local kernel (a name or auto)",
            args.kernels
        )));
    } else {
        if !args.kernels.eq_ignore_ascii_case("auto") {
            matmul::find(&args.kernels)?;
        }
        args.kernels.clone()
    };
    let plan = crate::multi_cmd::Plan {
        gpu: args.gpu.clone(),
        dtypes: if args.dtypes.is_empty() {
            vec![DType::F32]
        } else {
            args.dtypes.clone()
        },
        shapes: if !args.shapes.is_empty() {
            args.shapes.clone()
        } else if !args.sizes.is_empty() {
            args.sizes
                .iter()
                .map(|&n| Shape { m: n, n, k: n })
                .collect()
        } else {
            vec![Shape {
                m: 8192,
                n: 8192,
                k: 8192,
            }]
        },
        kernel,
        c_dtype: args.c_dtype,
        init: None,
        check: false,
        warmup: args.warmup,
        iters: args.iters.unwrap_or(5),
        out: Some(args.out.clone()),
    };
    crate::multi_cmd::bench(&plan)
}

/// The shapes to run: `--shapes`, else the square `--sizes`, else the backend's defaults.
fn shapes(args: &BenchArgs, kind: BackendKind) -> Vec<Shape> {
    if !args.shapes.is_empty() {
        return args.shapes.clone();
    }
    let sizes = if args.sizes.is_empty() {
        defaults::sizes(kind, args.quick)
    } else {
        args.sizes.clone()
    };
    sizes.into_iter().map(|n| Shape { m: n, n, k: n }).collect()
}

/// The CPU's default size budget for a suite (`--max-mnk`): 2^30 multiply-adds, about 5 ms of
/// f32 on a 2-core AVX-512 machine, so that the GPU-sized cases are skipped, saying so.
const CPU_SUITE_MAX_MNK: u64 = 1 << 30;

/// Says on stderr what a suite run will do, and roughly how long its timing takes.
fn announce(suite: &Suite, config: &BenchConfig) {
    let cases = suite.cases.len();
    let over = config.max_mnk.map_or(0, |max| {
        suite
            .cases
            .iter()
            .filter(|c| {
                (c.shape.m as u128) * (c.shape.n as u128) * (c.shape.k as u128) > max as u128
            })
            .count()
    });
    // The kernel × case pairs that apply (a kernel without the dtype has none), less those
    // above the size budget.
    let runs: usize = config
        .planned()
        .iter()
        .filter(|(p, _, _)| {
            config
                .max_mnk
                .is_none_or(|max| (p.m as u128) * (p.n as u128) * (p.k as u128) <= max as u128)
        })
        .map(|(_, _, kernels)| kernels.len())
        .sum();
    eprintln!(
        "matmul: suite `{}` ({}): {cases} cases × {} dtype(s) × {} kernel(s)",
        suite.name,
        suite.file,
        config.dtypes.len(),
        config.kernels.len()
    );
    if let Some(max) = config.max_mnk.filter(|_| over > 0) {
        eprintln!("matmul: {over} case(s) with m·n·k above {max} are skipped (--max-mnk)");
    }
    let per_run = match (config.iters, config.min_time) {
        (None, Some(t)) => format!("{t} s"),
        _ => "its --iters launches".into(),
    };
    eprintln!(
        "matmul: {runs} runs, each timed for {per_run} after {} warm-up launches (a slow one cut at {} s), plus verification, input generation and compilation",
        config.warmup,
        config.max_case_seconds.unwrap_or(f64::INFINITY)
    );
}

/// How long work runs before its progress bar shows: a short run prints no bar at all.
const REVEAL_AFTER: Duration = Duration::from_secs(2);

/// A progress bar (or spinner) on stderr that shows itself once its work has run for
/// [`REVEAL_AFTER`], never when stderr is not a terminal (indicatif's stderr target hides itself
/// then), and clears itself when finished or dropped.
struct Progress {
    bar: ProgressBar,
    /// Set when finished; the reveal checks it under the same lock.
    done: Arc<Mutex<bool>>,
}

impl Progress {
    /// A bar of `len` steps (a spinner for 0) drawn with `template`.
    fn new(len: usize, template: &str) -> Progress {
        let bar = ProgressBar::with_draw_target(
            (len > 0).then_some(len as u64),
            ProgressDrawTarget::hidden(),
        );
        bar.set_style(
            ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let done = Arc::new(Mutex::new(false));
        let (b, d) = (bar.clone(), done.clone());
        std::thread::spawn(move || {
            let start = Instant::now();
            while start.elapsed() < REVEAL_AFTER {
                if *d.lock().unwrap_or_else(|p| p.into_inner()) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let finished = d.lock().unwrap_or_else(|p| p.into_inner());
            if !*finished {
                b.set_draw_target(ProgressDrawTarget::stderr());
                b.enable_steady_tick(Duration::from_millis(200));
            }
        });
        Progress { bar, done }
    }

    /// A spinner with `message` for work of unknown length.
    fn spinner(message: &str) -> Progress {
        let p = Progress::new(0, "{spinner} {msg} ({elapsed})");
        p.bar.set_message(message.to_string());
        p
    }

    fn finish(&self) {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        *done = true;
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The backend, and for CUDA the concrete device (for its L2 size, its info and its ceilings).
enum Opened {
    /// The CPU backend.
    Cpu(matmul::cpu::CpuBackend),
    /// CUDA device 0.
    Cuda(Box<CudaBackend>),
    /// wgpu's adapter.
    Wgpu(Box<matmul::WgpuBackend>),
}

/// The backend a bench runs on: `--backend` when it names one, else the one the named kernels
/// run on (as `matmul run --kernel` picks it), else `auto`. A named kernel of another backend
/// than `--backend`, or named kernels of both, are input errors: one bench runs on one backend.
/// With CUDA, also the first CUDA kernel named (the one a missing device is reported for).
fn backend_for(
    choice: BackendChoice,
    named: Option<&[BenchKernel]>,
) -> CliResult<(BackendChoice, Option<&'static str>)> {
    let specs: Vec<&'static matmul::KernelSpec> = named
        .unwrap_or_default()
        .iter()
        .filter_map(|k| match k {
            BenchKernel::Named(spec) => Some(*spec),
            BenchKernel::Auto | BenchKernel::Int8Ceiling | BenchKernel::External => None,
        })
        .collect();
    let on = |kind: BackendKind| specs.iter().find(|k| k.backend == kind);
    let kinds: Vec<&&'static matmul::KernelSpec> =
        [BackendKind::Cpu, BackendKind::Cuda, BackendKind::Wgpu]
            .into_iter()
            .filter_map(on)
            .collect();
    let wanted = match kinds.as_slice() {
        [] => return Ok((choice, None)),
        [k] => BackendChoice::of(k.backend),
        [a, b, ..] => {
            return Err(CliError::input(format!(
            "--kernels: `{}` runs on the {} backend and `{}` on {}; one bench runs on one backend",
            a.name, a.backend, b.name, b.backend
        )))
        }
    };
    if choice != BackendChoice::Auto && choice != wanted {
        let k = specs[0];
        return Err(CliError::input(format!(
            "--kernels: `{}` runs on the {} backend, not on the {} backend --backend names",
            k.name,
            k.backend,
            choice.name()
        )));
    }
    Ok((wanted, on(BackendKind::Cuda).map(|k| k.name)))
}

/// Opens the backend; `auto` says on stderr why it fell back to the CPU. Without a CUDA device,
/// CUDA is a runtime error (exit status 1), named for `kernel` when the kernels asked for it.
fn open(choice: BackendChoice, kernel: Option<&str>) -> CliResult<Opened> {
    match choice {
        BackendChoice::Cpu => Ok(Opened::Cpu(matmul::cpu::CpuBackend)),
        BackendChoice::Cuda => match (CudaBackend::new(0), kernel) {
            (Ok(b), _) => Ok(Opened::Cuda(Box::new(b))),
            (Err(e), Some(kernel)) => Err(CliError::from(matmul::Error::NeedsGpu {
                kernel: kernel.to_string(),
                reason: e.to_string(),
            })),
            (Err(e), None) => Err(CliError::from(e)),
        },
        BackendChoice::Wgpu => Ok(Opened::Wgpu(Box::new(matmul::WgpuBackend::new()?))),
        BackendChoice::Auto => match CudaBackend::new(0) {
            Ok(b) => Ok(Opened::Cuda(Box::new(b))),
            Err(e) => match matmul::WgpuBackend::new() {
                Ok(w) if !w.is_software() => {
                    eprintln!("matmul: benchmarking the wgpu backend ({e})");
                    Ok(Opened::Wgpu(Box::new(w)))
                }
                _ => {
                    eprintln!("matmul: benchmarking the CPU backend ({e})");
                    Ok(Opened::Cpu(matmul::cpu::CpuBackend))
                }
            },
        },
    }
}

/// `--tiling` applies to the SIMT-ladder kernels: an input error when the run has none (on the
/// CPU, `auto` chooses none).
fn check_tiling(kernels: &[BenchKernel], kind: BackendKind) -> CliResult {
    let applies = kernels.iter().any(|k| match k {
        BenchKernel::Named(spec) => spec.tiling(&matmul::RunOptions::default()).is_some(),
        BenchKernel::Auto => kind == BackendKind::Cuda,
        BenchKernel::Int8Ceiling | BenchKernel::External => false,
    });
    if applies {
        return Ok(());
    }
    let names: Vec<&str> = kernels.iter().map(BenchKernel::name).collect();
    Err(CliError::input(format!(
        "--tiling applies to the SIMT-ladder kernels ({}); none of this run's kernels on {kind} ({}) has a tiling",
        crate::run_cmd::kernels_with(|k| k.tiling(&matmul::RunOptions::default()).is_some()),
        names.join(", ")
    )))
}

/// `--out` made ready before anything is timed (a report lost after the run is the cost
/// otherwise): a directory, created if missing, in which every report file can be written.
fn prepare_out(dir: &Path) -> CliResult {
    let bad = |why: String| CliError::input(format!("--out {}: {why}", dir.display()));
    if dir.exists() && !dir.is_dir() {
        return Err(bad(
            "is a file; --out names the report's directory (results.json, results.csv, roofline.svg, report.md, report.html)".into(),
        ));
    }
    matmul_bench::prepare_report_dir(dir)
        .map_err(|e| bad(format!("cannot write the report there: {e}")))
}

/// A square size given on the command line: an integer of at least 1.
fn positive_size(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "{} is not a size: sizes are integers of at least 1",
            matmul::error::quoted(text)
        )),
    }
}

/// A duration in seconds given on the command line: a finite number above zero.
fn positive_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => Err(format!(
            "{} is not a number of seconds above 0",
            matmul::error::quoted(text)
        )),
    }
}

/// The choices `--autotune` measured, merged into this device class's tune table on disk.
fn save_measured(
    cuda: &matmul::cuda::CudaBackend,
    config: &matmul_bench::BenchConfig,
) -> CliResult {
    let measured = config
        .measured
        .lock()
        .map(|m| m.clone())
        .unwrap_or_default();
    if measured.is_empty() {
        return Ok(());
    }
    let Some(path) = matmul::dispatch::tune::table_path(cuda.info()) else {
        eprintln!("matmul: no cache directory: the measured choices are not saved");
        return Ok(());
    };
    let info = cuda.info();
    let mut table = matmul::tune::TuneTable::load_or_builtin(&path, info).unwrap_or_else(|_| {
        matmul::dispatch::tune::builtin_for_class(&matmul::dispatch::tune::class_of(info))
            .unwrap_or_default()
    });
    table.stamp(
        info,
        matmul_bench::system::rfc3339_utc(std::time::SystemTime::now()),
    );
    for c in measured {
        table.insert_choice(c);
    }
    table.save(&path)?;
    eprintln!(
        "matmul: auto's measured choices saved in {}",
        path.display()
    );
    Ok(())
}

/// `matmul bench`: checks the command line (kernels, shapes, memory, --tiling, --out) before a
/// device is opened, opens the backend, measures its ceilings (unless `--no-ceilings`), times
/// every selected kernel × dtype × shape with `matmul_bench::run`, prints the table and writes
/// the report files to `--out`; any case that failed verification or timing is exit status 1,
/// and a run in which every case was skipped is exit status 2.
pub fn bench(args: BenchArgs) -> CliResult {
    if args.gpu.active() {
        return bench_multi(&args);
    }
    args.gpu.refuse_without_gpus()?;
    if args.user.kernel_file.is_some() {
        return bench_user(&args);
    }
    let suite = match &args.suite {
        Some(name) => Some(Suite::load(name).map_err(CliError::input)?),
        None => None,
    };
    let named = defaults::named_kernels(&args.kernels)?;
    let (choice, cuda_kernel) = backend_for(args.backend, named.as_deref())?;
    // `auto` opens the device to learn the backend (it never fails: no device is the CPU);
    // CUDA is opened only once the whole command line has been checked.
    let mut opened = match choice {
        BackendChoice::Auto => Some(open(choice, None)?),
        BackendChoice::Cpu => Some(Opened::Cpu(matmul::cpu::CpuBackend)),
        BackendChoice::Cuda | BackendChoice::Wgpu => None,
    };
    let kind = match &opened {
        Some(Opened::Cpu(_)) => BackendKind::Cpu,
        Some(Opened::Wgpu(_)) => BackendKind::Wgpu,
        None if choice == BackendChoice::Wgpu => BackendKind::Wgpu,
        Some(Opened::Cuda(_)) | None => BackendKind::Cuda,
    };
    let dtypes = if args.dtypes.is_empty() {
        defaults::dtypes(kind)
    } else {
        args.dtypes.clone()
    };
    let kernels = defaults::select_kernels(&args.kernels, kind, args.quick)?;
    if args.tiling.is_some() {
        check_tiling(&kernels, kind)?;
    }
    let mut config = BenchConfig::new(Vec::new(), dtypes, shapes(&args, kind));
    config.kernels = kernels;
    if args.quick && args.kernels.eq_ignore_ascii_case("all") {
        // A handful of representative kernels per dtype, the seeds at the small size only.
        config.plan = defaults::quick_plan(kind);
    }
    config.ops = vec![(
        Op::from_flag(args.transpose_a),
        Op::from_flag(args.transpose_b),
    )];
    config.suite = suite;
    config.max_mnk = match args.max_mnk {
        Some(0) => None,
        Some(n) => Some(n),
        None if config.suite.is_some() && kind == BackendKind::Cpu => Some(CPU_SUITE_MAX_MNK),
        None => None,
    };
    config.c = args.c_dtype;
    config.precision = args.precision;
    config.warmup = args.warmup;
    config.iters = args.iters;
    if args.iters.is_some() {
        config.min_time = None;
    } else if let Some(t) = args.min_time {
        config.min_time = Some(t);
    } else if args.quick {
        config.min_time = Some(defaults::QUICK_MIN_TIME);
    }
    config.max_iters = args.max_iters;
    config.max_case_seconds = Some(args.max_case_seconds);
    config.rounds = args.rounds as usize;
    config.batch = args.batch;
    config.tiling = args.tiling;
    config.validate()?;
    prepare_out(&args.out)?;

    let opened = match opened.take() {
        Some(o) => o,
        None => open(choice, cuda_kernel)?,
    };
    let backend: &dyn Backend = match &opened {
        Opened::Cpu(b) => b,
        Opened::Cuda(b) => b.as_ref(),
        Opened::Wgpu(b) => b.as_ref(),
    };
    match &opened {
        Opened::Cpu(_) => {
            config.cache_bytes = matmul_bench::default_cpu_cache_bytes();
            if !args.no_ceilings {
                eprintln!(
                    "matmul: measuring CPU ceilings (copy bandwidth, FMA and integer peaks)..."
                );
                let opts = if args.quick {
                    CpuCeilingOptions::quick()
                } else {
                    CpuCeilingOptions::default()
                };
                let _spinner = Progress::spinner("measuring CPU ceilings");
                config.measured_ceilings = Some(measure_cpu(&opts));
            }
        }
        Opened::Cuda(cuda) => {
            config.use_cuda_device(cuda.info());
            config.autotune = args.autotune;
            if !args.no_tuned {
                let lookup = matmul::dispatch::tune::load_table(cuda.info());
                if let Some(w) = lookup.warning {
                    eprintln!("matmul: ignoring the tune table: {w}");
                }
                if let Some((source, table)) = lookup.found {
                    eprintln!(
                        "matmul: SIMT kernels use the tilings tuned in {source} ({} entries; --no-tuned for the registry's)",
                        table.entries.len()
                    );
                    config.tuned = Some(table);
                }
            }
            if !args.no_ceilings {
                eprintln!("matmul: measuring GPU ceilings (copy bandwidth, FFMA, IMAD, cuBLAS tensor cores)...");
                let _spinner = Progress::spinner("measuring GPU ceilings");
                config.measured_ceilings = Some(measure_gpu(cuda, args.quick)?);
            }
            // Every kernel the run loads, compiled at once on every core into the disk cache,
            // rather than one after another as the run first meets each (failures are the run's
            // to record, where they belong).
            let units = config.compile_units(backend);
            if units.len() > 1 {
                let bar = Progress::new(
                    units.len(),
                    "compiling kernels {bar:30} {pos}/{len} ({elapsed})",
                );
                matmul_bench::precompile(&units, cuda.arch(), &|| bar.bar.inc(1));
                bar.finish();
            }
        }
        Opened::Wgpu(w) => {
            eprintln!(
                "matmul: benchmarking {} (no ceilings measured on wgpu yet)",
                w.describe()
            );
        }
    }

    if let Some(suite) = &config.suite {
        announce(suite, &config);
    }

    // SIGINT or SIGTERM: finish the case in progress, write what is done, marked partial; a
    // second one exits at once.
    let stop = interrupt_flag();
    config.stop = Some(stop.clone());
    let progress = Progress::new(
        0,
        "{bar:30} {pos}/{len} cases ({elapsed}, about {eta} left) {msg}",
    );
    let bar = &progress.bar;
    let report = matmul_bench::run(backend, &config, &mut |event| match event {
        ProgressEvent::Planned { total } => bar.set_length(total as u64),
        ProgressEvent::Started {
            kernel, problem, ..
        } => bar.set_message(format!("{kernel} {problem}")),
        ProgressEvent::Timing { .. } => {}
        ProgressEvent::Finished { .. } => bar.inc(1),
    });
    progress.finish();
    if config.autotune {
        if let Opened::Cuda(cuda) = &opened {
            save_measured(cuda, &config)?;
        }
    }
    let mut report = report;
    if args.profile {
        profile(&mut report);
    }

    println!("{}", report.table());
    let files = matmul_bench::write_reports(&report, &args.out).map_err(|e| {
        CliError::failure(format!(
            "cannot write the report to {}: {e}",
            args.out.display()
        ))
    })?;
    eprintln!("matmul: report written to {} (and results.json, results.csv, roofline.svg, ladder.svg, report.html beside it)", files.markdown.display());
    let signal = stop.load(std::sync::atomic::Ordering::SeqCst);
    if let Some(why) = report.partial.as_ref().filter(|_| signal != 0) {
        return Err(CliError {
            code: (128 + signal).min(255) as u8,
            message: format!("{why} (signal {signal}); the report holds them, marked partial"),
        });
    }
    let failed: Vec<_> = report
        .records
        .iter()
        .filter(|r| r.status == matmul_bench::Status::Failed)
        .map(|r| format!("{} {}", r.kernel, r.shape))
        .collect();
    if !failed.is_empty() {
        return Err(CliError::failure(format!(
            "{} case(s) FAILED verification or timing: {}",
            failed.len(),
            failed.join(", ")
        )));
    }
    nothing_ran(&report.records)
}

/// A run in which every case was skipped (the kernels' rules refused every problem, or every
/// case was above the size budget): nothing was measured because of the input, exit status 2,
/// naming the first case and why.
fn nothing_ran(records: &[Record]) -> CliResult {
    if records
        .iter()
        .any(|r| r.status != matmul_bench::Status::Skipped)
    {
        return Ok(());
    }
    let first = records.first().map_or(String::new(), |r| {
        format!(
            "; the first, {} {} {}: {}",
            r.kernel,
            r.dtype,
            r.shape,
            r.reason.as_deref().unwrap_or("skipped")
        )
    });
    Err(CliError::input(format!(
        "nothing ran: all {} case(s) were skipped{first}",
        records.len()
    )))
}

/// `--profile`: each OK CUDA record runs once more under ncu (`matmul run` of the same kernel,
/// dtype, shape and tiling), and its DRAM bytes become the record's measured traffic.
fn profile(report: &mut matmul_bench::Report) {
    let Some(ncu) = find_ncu() else {
        eprintln!("matmul: --profile: ncu was not found; DRAM bytes not measured (the roofline uses the traffic models)");
        return;
    };
    let Ok(me) = std::env::current_exe() else {
        eprintln!("matmul: --profile: cannot find this program's path; DRAM bytes not measured");
        return;
    };
    profile_report(report, &ncu, &me, run_args, |rec, outcome| match outcome {
        Profiled::Bytes(bytes) => eprintln!(
            "matmul: --profile: {} {} {}: {:.3} GB of DRAM traffic",
            rec.kernel,
            rec.dtype,
            rec.shape,
            bytes / 1e9
        ),
        Profiled::NoMetrics => eprintln!(
            "matmul: --profile: {} {}: ncu printed no DRAM metrics",
            rec.kernel, rec.shape
        ),
        Profiled::Failed => eprintln!(
            "matmul: --profile: ncu failed on {} {} (permissions for GPU counters?)",
            rec.kernel, rec.shape
        ),
        Profiled::CannotRun(e) => eprintln!("matmul: --profile: cannot run {}: {e}", ncu.display()),
    });
}

/// The `matmul run` arguments that repeat `rec`: its kernel (for `auto`, the one it chose),
/// dtype, shape, transpositions, C's type and tiling, unchecked.
fn run_args(rec: &Record) -> Vec<String> {
    let p = rec.problem;
    let mut args: Vec<String> = vec![
        "run".into(),
        "--backend".into(),
        "cuda".into(),
        "--no-check".into(),
        "--kernel".into(),
        // `auto`'s record names the kernel it chose: profile that one.
        rec.chosen.clone().unwrap_or_else(|| rec.kernel.clone()),
        "--dtype".into(),
        p.dtype.name().into(),
        "-m".into(),
        p.m.to_string(),
        "-n".into(),
        p.n.to_string(),
        "-k".into(),
        p.k.to_string(),
    ];
    if p.op_a == Op::T {
        args.push("--transpose-a".into());
    }
    if p.op_b == Op::T {
        args.push("--transpose-b".into());
    }
    if p.c == COut::Input {
        args.extend(["--c-dtype".to_string(), "input".to_string()]);
    }
    if let Some(t) = &rec.tiling {
        args.extend(["--tiling".to_string(), t.clone()]);
    }
    args
}

/// A flag that SIGINT or SIGTERM sets to its signal number (the bench stops after the case in
/// progress); a second such signal exits at once with 128 + its number. Never set off Unix.
fn interrupt_flag() -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGINT, SIGTERM};
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        for sig in [SIGINT, SIGTERM] {
            // The conditional exit first, so that the first signal only sets the flags.
            let _ = signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, seen.clone());
            let _ = signal_hook::flag::register(sig, seen.clone());
            let _ = signal_hook::flag::register_usize(sig, stop.clone(), sig as usize);
        }
    }
    stop
}

/// `ncu` on PATH or in the usual CUDA locations.
fn find_ncu() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("ncu"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        ["/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/ncu"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use matmul::{DType, Problem, RunOptions};
    use matmul_bench::Status;

    /// A run of skips is exit status 2 naming the first; one case that ran (or failed) is not.
    #[test]
    fn a_run_of_skips_is_an_input_error() {
        let cpu = matmul::find("cpu").unwrap();
        let p = Problem::new(8, 8, 8, DType::F32);
        let record = |status, reason: &str| {
            let mut r = Record::new(cpu, &p, &RunOptions::default(), status);
            r.reason = Some(reason.into());
            r
        };
        let skips = [
            record(Status::Skipped, "needs Hopper"),
            record(Status::Skipped, "too big"),
        ];
        let e = nothing_ran(&skips).unwrap_err();
        assert_eq!(e.code, 2);
        assert_eq!(
            e.message,
            "nothing ran: all 2 case(s) were skipped; the first, cpu f32 8x8x8: needs Hopper"
        );
        for status in [Status::Ok, Status::Failed] {
            assert!(nothing_ran(&[skips[0].clone(), record(status, "")]).is_ok());
        }
    }
}
