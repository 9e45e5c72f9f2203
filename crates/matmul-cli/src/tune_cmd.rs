//! `matmul tune`: searches the tiling of the SIMT ladder's top kernels on this GPU, per dtype and
//! shape class, and caches the winners (`matmul::dispatch::tune`; the search space is
//! `matmul::dispatch::search`). Each candidate is compiled (one that spills is skipped), verified
//! against the CPU reference on an awkward shape with both operand layouts, then timed with CUDA
//! events; the fastest verified one wins.

use std::path::{Path, PathBuf};

use clap::Args;
use matmul::cpu::reference;
use matmul::cuda::CudaBackend;
use matmul::dispatch::search;
use matmul::dispatch::tune::{self, ShapeClass, TuneEntry, TuneTable};
use matmul::verify::compare;
use matmul::{AnyMatrix, Backend, DType, Init, Inputs, KernelSpec, Op, Problem, RunOptions, Shape};

use crate::cli_error::{CliError, CliResult};

/// `matmul tune`'s arguments.
#[derive(Args)]
pub struct TuneArgs {
    /// Kernels to tune (default: the warp-tiled SIMT kernels).
    #[arg(long, value_delimiter = ',')]
    kernels: Vec<String>,
    /// Comma-separated dtypes.
    #[arg(long, value_delimiter = ',', default_value = "f32,u32")]
    dtypes: Vec<DType>,
    /// Shapes MxNxK to tune on; one per shape class is enough (small < 1536 ≤ medium < 6144 ≤ large).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1024x1024x1024,4096x4096x4096,8192x8192x8192"
    )]
    shapes: Vec<Shape>,
    /// Candidates timed per kernel × dtype × shape in each of two passes: an even spread of the
    /// space (the default first, then the table's incumbent), then neighbours of the first pass's
    /// winner (one knob changed).
    #[arg(long, default_value_t = 16, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    max_candidates: usize,
    /// Timed launches per candidate (the median counts).
    #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    iters: usize,
    /// The table to write (default: tune-<class>-<driver>.json in the kernel cache directory,
    /// the class being the architecture and SM count, e.g. sm_90-132, so that every GPU of the
    /// class shares it); checked before the device is opened.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Measure `auto`'s choice for each case of a suite (a built-in name such as `shapes`, or a
    /// file in its format) instead of searching tilings: the model's top candidates per case
    /// are verified and timed, and the fastest becomes the choice for the case's shape bucket.
    #[arg(long)]
    suite: Option<String>,
}

/// Awkward shapes for `verify`: no edge a multiple of a tile. The second has every stored row a
/// multiple of 16 bytes, for the TMA kernels, which refuse the first; the last two have few
/// rows, for kernels made for small M.
const AWKWARD: [(usize, usize, usize); 4] =
    [(257, 131, 67), (260, 132, 68), (17, 131, 67), (16, 132, 68)];

/// Runs `kernel` with `opts` against the CPU reference, both layouts, on the first of [`AWKWARD`]
/// it can run (a kernel that runs neither gets the first, and its refusal is the error).
fn verify(
    backend: &CudaBackend,
    kernel: &KernelSpec,
    dtype: DType,
    opts: RunOptions,
) -> Result<(), String> {
    let problems = |(m, n, k)| {
        [(Op::N, Op::N), (Op::T, Op::T)].map(|(a, b)| Problem::new(m, n, k, dtype).with_ops(a, b))
    };
    let runs = |&shape: &(usize, usize, usize)| {
        problems(shape)
            .iter()
            .all(|p| kernel.can_run(p, None, &opts).is_ok())
    };
    let shape = AWKWARD.iter().copied().find(runs).unwrap_or(AWKWARD[0]);
    for problem in problems(shape) {
        let (ar, ac) = problem.a_stored();
        let (br, bc) = problem.b_stored();
        let a = AnyMatrix::generate(dtype, ar, ac, Init::Random { seed: 7 })
            .map_err(|e| e.to_string())?;
        let b = AnyMatrix::generate(dtype, br, bc, Init::Random { seed: 8 })
            .map_err(|e| e.to_string())?;
        let want = reference::matmul(&problem, &a, &b).map_err(|e| e.to_string())?;
        let got = backend
            .run(kernel, &problem, &a, &b, opts)
            .map_err(|e| e.to_string())?;
        let v = compare(&problem, &got, &want);
        if !v.passed {
            return Err(format!("wrong result on {problem}: {v:?}"));
        }
    }
    Ok(())
}

/// The median seconds per launch of `iters` timed launches (after 2 untimed), rotating `sets`.
fn median_seconds(
    backend: &CudaBackend,
    kernel: &KernelSpec,
    problem: &Problem,
    sets: &[Inputs],
    iters: usize,
    opts: RunOptions,
) -> Result<f64, String> {
    let t = backend
        .time(kernel, problem, sets, 2, iters, opts)
        .map_err(|e| e.to_string())?;
    matmul_bench::Stats::from_samples(&t)
        .map(|s| s.median)
        .ok_or_else(|| "timing returned no usable samples".to_string())
}

/// `--out` made ready before the device is opened: not a directory, its directory created if
/// missing, and the file open for writing (an existing table is left as it is; a file created
/// here is removed again, as the tune writes it after its first winner).
fn check_out(path: &Path) -> CliResult {
    let bad = |why: String| CliError::input(format!("--out {}: {why}", path.display()));
    if path.is_dir() {
        return Err(bad(
            "is a directory; --out names the tune table's file".into()
        ));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| bad(format!("cannot create its directory: {e}")))?;
    }
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| bad(format!("cannot write the tune table there: {e}")))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// `matmul tune`: checks the kernels (each must have a tiling and a dtype of the run) and
/// `--out` before the device is opened; then for each dtype × shape × kernel, compiles,
/// verifies and times up to `--max-candidates` tilings in each of two passes (an even spread,
/// then the first winner's neighbours and builds), and saves the fastest verified one into the
/// table (this machine's, else the built-in one for the GPU) after every winner; without a
/// CUDA device, exit status 1.
pub fn tune(args: TuneArgs) -> CliResult {
    let suite = match &args.suite {
        Some(name) => Some(
            matmul_bench::suite::Suite::load(name).map_err(|e| CliError::input(e.to_string()))?,
        ),
        None => None,
    };
    let kernels: Vec<&'static KernelSpec> = if args.kernels.is_empty() {
        search::tunable_kernels()
    } else {
        args.kernels
            .iter()
            .map(|n| matmul::find(n))
            .collect::<Result<_, _>>()?
    };
    for k in &kernels {
        if k.tiling(&RunOptions::default()).is_none() {
            return Err(CliError::input(format!(
                "kernel `{}` has no tiling to tune (SIMT-ladder kernels do)",
                k.name
            )));
        }
        if !args.dtypes.iter().any(|&d| k.supports(d)) {
            let names: Vec<_> = k.dtypes.iter().map(|d| d.name()).collect();
            return Err(CliError::input(format!(
                "kernel `{}` runs none of the dtypes asked for (it runs {})",
                k.name,
                names.join(", ")
            )));
        }
    }
    if let Some(out) = &args.out {
        check_out(out)?;
    }
    let backend = CudaBackend::new(0)
        .map_err(|e| CliError::failure(format!("tuning needs a CUDA device: {e}")))?;
    let path = match &args.out {
        Some(p) => p.clone(),
        None => tune::table_path(backend.info())
            .ok_or_else(|| CliError::failure("no cache directory for the tune table: set MATMUL_CACHE_DIR or HOME, or pass --out"))?,
    };
    let info = backend.info().clone();
    // Starts from this machine's table, else the built-in one for its device class.
    let mut table = TuneTable::load_or_builtin(&path, &info).unwrap_or_else(|e| {
        eprintln!("matmul: starting a new tune table: {e}");
        TuneTable::default()
    });
    table.stamp(
        &info,
        matmul_bench::system::rfc3339_utc(std::time::SystemTime::now()),
    );
    if let Some(suite) = suite {
        return tune_suite(&backend, &suite, &args.dtypes, &mut table, &path);
    }
    let max_shared = info.shared_per_block_optin;
    eprintln!("matmul: tuning on {}", backend.describe());
    for &dtype in &args.dtypes {
        for shape in &args.shapes {
            let problem = Problem::new(shape.m, shape.n, shape.k, dtype);
            let class = ShapeClass::of(&problem);
            let sets: Vec<Inputs> = (0..2)
                .map(|s| {
                    Ok(Inputs {
                        a: AnyMatrix::generate(
                            dtype,
                            shape.m,
                            shape.k,
                            Init::Random { seed: 2 * s },
                        )?,
                        b: AnyMatrix::generate(
                            dtype,
                            shape.k,
                            shape.n,
                            Init::Random { seed: 2 * s + 1 },
                        )?,
                    })
                })
                .collect::<matmul::Result<_>>()?;
            for kernel in &kernels {
                if !kernel.supports(dtype) {
                    continue;
                }
                let all = search::candidates(kernel, dtype, max_shared);
                let mut tried: Vec<matmul::Tiling> = Vec::new();
                let mut best: Option<(matmul::Tiling, f64)> = None;
                let mut default_rate = 0.0;
                for pass in 0..2 {
                    let batch: Vec<matmul::Tiling> = match (pass, best) {
                        (0, _) => search::first_pass(
                            &all,
                            args.max_candidates,
                            &table,
                            kernel.name,
                            dtype,
                            class,
                        ),
                        (_, Some((b, _))) => {
                            search::spread(&search::neighbours(&b, &all), args.max_candidates)
                        }
                        _ => Vec::new(),
                    };
                    for tiling in batch
                        .into_iter()
                        .filter(|t| !tried.contains(t))
                        .collect::<Vec<_>>()
                    {
                        let first = tried.is_empty();
                        tried.push(tiling);
                        let opts = RunOptions::tiling(tiling);
                        let verdict = backend
                            .compile_info(kernel, dtype, &opts)
                            .map_err(|e| e.to_string())
                            .and_then(|ci| {
                                if ci.spills() {
                                    Err(format!("spills ({} registers)", ci.registers))
                                } else {
                                    Ok(ci)
                                }
                            })
                            .and_then(|_| {
                                backend
                                    .check(kernel, &problem, opts)
                                    .map_err(|e| e.to_string())
                            })
                            .and_then(|_| verify(&backend, kernel, dtype, opts))
                            .and_then(|_| {
                                median_seconds(&backend, kernel, &problem, &sets, args.iters, opts)
                            });
                        match verdict {
                            Ok(secs) => {
                                let rate = problem.flops() / secs / 1e9;
                                if first {
                                    default_rate = rate;
                                }
                                eprintln!(
                                    "  {} {dtype} {} {tiling}: {:.1} {}",
                                    kernel.name,
                                    problem.shape_label(),
                                    rate / 1e3,
                                    if dtype.is_integer() {
                                        "TOPS"
                                    } else {
                                        "TFLOP/s"
                                    }
                                );
                                if best.is_none_or(|(_, r)| rate > r) {
                                    best = Some((tiling, rate));
                                }
                            }
                            Err(why) => eprintln!(
                                "  {} {dtype} {} {tiling}: skipped: {why}",
                                kernel.name,
                                problem.shape_label()
                            ),
                        }
                    }
                }
                if let Some((tiling, rate)) = best {
                    println!(
                        "{:<12} {:<4} {:<6} {:<16} best {:<32} {:>7.2} T/s (default {:>7.2}, {} of {} candidates tried)",
                        kernel.name,
                        dtype.name(),
                        class.name(),
                        problem.shape_label(),
                        tiling.to_string(),
                        rate / 1e3,
                        default_rate / 1e3,
                        tried.len(),
                        all.len()
                    );
                    table.insert(TuneEntry {
                        kernel: kernel.name.to_string(),
                        dtype,
                        class,
                        shape: problem.shape_label(),
                        tiling,
                        rate_gops: rate,
                        default_rate_gops: default_rate,
                    });
                    // Saved after every winner: an interrupted tune keeps what it found.
                    table.save(&path)?;
                }
            }
        }
    }
    eprintln!("matmul: tune table written to {}", path.display());
    Ok(())
}

/// `matmul tune --suite`: for each case × dtype, the model's top candidates ([`measure::TOP`])
/// are verified (each kernel and tiling once, on an awkward shape) and timed on the case's
/// shape; the fastest becomes the choice for the case's shape bucket, saved after each case.
fn tune_suite(
    backend: &CudaBackend,
    suite: &matmul_bench::suite::Suite,
    dtypes: &[DType],
    table: &mut TuneTable,
    path: &Path,
) -> CliResult {
    use matmul::dispatch::measure;
    eprintln!(
        "matmul: measuring auto's top {} candidates on {} cases of {} on {}",
        measure::TOP,
        suite.cases.len(),
        suite.file,
        backend.describe()
    );
    let mut verified: Vec<(&'static str, Option<matmul::Tiling>, DType)> = Vec::new();
    for &dtype in dtypes {
        for case in &suite.cases {
            let problem = case.problem(dtype, matmul::COut::Accumulator);
            let candidates = measure::candidates(backend, &problem, Some(table), measure::TOP)?;
            // A wrong kernel is never timed: each candidate is verified once, and one that fails
            // ends the tune as a failed check.
            for c in &candidates {
                let key = (c.kernel.name, c.tiling, dtype);
                if !verified.contains(&key) {
                    verify(backend, c.kernel, dtype, c.options()).map_err(|why| {
                        CliError::failure(format!(
                            "{} {dtype} ({}) failed verification: {why}",
                            c.kernel.name,
                            c.tiling
                                .map_or("its registry tiling".into(), |t| t.to_string())
                        ))
                    })?;
                    verified.push(key);
                }
            }
            match measure::fastest(backend, &problem, &candidates) {
                Ok(choice) => {
                    let timed: Vec<String> = choice
                        .timed
                        .iter()
                        .map(|(n, s)| format!("{n} {:.1} us", s * 1e6))
                        .collect();
                    println!(
                        "{:<24} {:<4} {}",
                        problem.shape_label(),
                        dtype.name(),
                        timed.join(" | ")
                    );
                    table.insert_choice(choice);
                    table.save(path)?;
                }
                Err(e) => eprintln!("  {problem}: {e}"),
            }
        }
    }
    eprintln!("matmul: measured choices written to {}", path.display());
    Ok(())
}
