//! `matmul multi`: one GEMM across several GPUs over NCCL (matmul::cuda::multi), checked against
//! the CPU reference (`--check`) or timed beside the 1-GPU run of the same GEMM.

use clap::Args;
use matmul::cpu::reference;
use matmul::cuda::multi::{self, Layout, MultiOptions};
use matmul::verify;
use matmul::{AnyMatrix, COut, DType, Init, Problem, Shape};

use crate::cli_error::{CliError, CliResult};

/// `matmul multi`'s arguments.
#[derive(Args)]
pub struct MultiArgs {
    /// GPUs to use (devices 0..N), at least 2.
    #[arg(long, default_value_t = 2)]
    gpus: usize,
    /// Comma-separated layouts: row-split (B replicated, no communication), ag-gemm (AllGather
    /// of A's row shards overlapped with the products), gemm-rs (K split, partial products
    /// reduce-scattered as they finish), or `all`.
    #[arg(long, default_value = "all")]
    layout: String,
    /// Comma-separated dtypes.
    #[arg(long, value_delimiter = ',', default_value = "f32")]
    dtypes: Vec<DType>,
    /// Square sizes, comma-separated.
    #[arg(long, value_delimiter = ',', conflicts_with = "shapes")]
    sizes: Vec<usize>,
    /// Shapes MxNxK, comma-separated.
    #[arg(long, value_delimiter = ',')]
    shapes: Vec<Shape>,
    /// The local kernel (registry name or `auto`, chosen for the whole problem).
    #[arg(long, default_value = "auto")]
    kernel: String,
    /// C's type: `f32` (the accumulator; u32 for u32) or `input` (bf16 C for bf16).
    #[arg(long, default_value = "f32")]
    c_dtype: COut,
    /// gemm-rs: row pieces per GPU's shard of C (default: up to 4 of at least 1024 rows).
    #[arg(long)]
    pieces: Option<usize>,
    /// Check C against the CPU reference instead of timing (keep the sizes small).
    #[arg(long)]
    check: bool,
    /// Untimed runs before timing.
    #[arg(long, default_value_t = 2)]
    warmup: usize,
    /// Timed runs of each mode (overlapped, compute only, communication only).
    #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    iters: usize,
    /// Skip the 1-GPU run (no scaling efficiency then).
    #[arg(long)]
    no_baseline: bool,
    /// One process per GPU: this process's rank (with --world and --id-file; --check only).
    /// Start one process per rank, on this host or others; `--gpus` is then ignored.
    #[arg(long, requires_all = ["world", "id_file"])]
    rank: Option<usize>,
    /// One process per GPU: the number of processes.
    #[arg(long, requires = "rank")]
    world: Option<usize>,
    /// One process per GPU: where rank 0 writes the NCCL unique id for the others (a path every
    /// rank sees, absent before the run; each case uses PATH.<case number>).
    #[arg(long, requires = "rank")]
    id_file: Option<std::path::PathBuf>,
    /// One process per GPU: this process's CUDA device (default: LOCAL_RANK, else the rank
    /// modulo the devices of this host).
    #[arg(long, requires = "rank")]
    device: Option<usize>,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Runs `matmul multi`.
pub fn multi(args: MultiArgs) -> CliResult {
    if let Some(rank) = args.rank {
        return process(&args, rank);
    }
    if args.gpus < 2 {
        return Err(CliError::input(format!(
            "--gpus {}: a multi-GPU product needs at least 2",
            args.gpus
        )));
    }
    let layouts = if args.layout.eq_ignore_ascii_case("all") {
        Layout::ALL.to_vec()
    } else {
        args.layout
            .split(',')
            .map(|s| Layout::parse(s.trim()))
            .collect::<Result<Vec<_>, _>>()?
    };
    let shapes: Vec<Shape> = if !args.shapes.is_empty() {
        args.shapes.clone()
    } else if !args.sizes.is_empty() {
        args.sizes
            .iter()
            .map(|&n| Shape { m: n, n, k: n })
            .collect()
    } else if args.check {
        vec![
            Shape {
                m: 257,
                n: 130,
                k: 301,
            },
            Shape {
                m: 1024,
                n: 1024,
                k: 1024,
            },
        ]
    } else {
        vec![Shape {
            m: 8192,
            n: 8192,
            k: 8192,
        }]
    };
    if let Some(bad) = args.sizes.iter().find(|&&n| n == 0) {
        return Err(CliError::input(format!("size {bad} must be positive")));
    }
    // Input errors first, before any device is opened.
    let mut cases = Vec::new();
    for &dtype in &args.dtypes {
        for shape in &shapes {
            let problem = Problem::new(shape.m, shape.n, shape.k, dtype).with_c(args.c_dtype);
            for &layout in &layouts {
                let mut opts = MultiOptions::new(args.gpus, layout);
                opts.kernel = args.kernel.clone();
                opts.pieces = args.pieces;
                multi::check(&problem, &opts)?;
                cases.push((problem, opts));
            }
        }
    }
    let nccl = multi::check_environment(args.gpus)?;
    {
        let version = nccl
            .version()
            .map(|(a, b, c)| format!("{a}.{b}.{c}"))
            .unwrap_or_else(|e| format!("unknown ({e})"));
        eprintln!("NCCL {version} from {}", nccl.found);
    }
    let mut failed = 0;
    let mut inputs: Option<(Problem, AnyMatrix, AnyMatrix, Option<f64>)> = None;
    let mut header = !args.check;
    for (problem, opts) in &cases {
        let same = inputs.as_ref().is_some_and(|(p, ..)| p == problem);
        if !same {
            let seed = (problem.m * 1_000_003 + problem.n * 1009 + problem.k) as u64;
            let a =
                AnyMatrix::generate(problem.dtype, problem.m, problem.k, Init::Random { seed })?;
            let b = AnyMatrix::generate(
                problem.dtype,
                problem.k,
                problem.n,
                Init::Random { seed: seed + 1 },
            )?;
            let base = if args.check || args.no_baseline {
                None
            } else {
                let (_, t) =
                    multi::single_gpu_time(problem, &a, &b, &args.kernel, args.warmup, args.iters)?;
                Some(median(&t))
            };
            inputs = Some((*problem, a, b, base));
        }
        let (_, a, b, base) = inputs.as_ref().expect("set above");
        let layout = opts.layout.name();
        if args.check {
            let got = match multi::multi_gemm(problem, a, b, opts) {
                Ok(got) => got,
                Err(e) => {
                    eprintln!("matmul: {layout} {} {problem}: {e}", problem.dtype);
                    failed += 1;
                    continue;
                }
            };
            let want = reference::matmul(problem, a, b)?;
            let v = verify::compare_inputs(problem, a, b, &got.c, &want);
            println!(
                "{layout:<10} {} gpus={} kernel={} {problem}: {} (rel. Frobenius {:.2e}, max |err| {:.3e}, {} mismatches)",
                problem.dtype,
                opts.gpus,
                got.kernel.name,
                if v.passed { "ok" } else { "MISMATCH" },
                v.rel_frobenius,
                v.max_abs_err,
                v.mismatches
            );
            failed += usize::from(!v.passed);
            continue;
        }
        let t = match multi::multi_time(problem, a, b, opts, args.warmup, args.iters) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("matmul: {layout} {} {problem}: {e}", problem.dtype);
                failed += 1;
                continue;
            }
        };
        let (full, compute, comm) = (median(&t.overlapped), median(&t.compute), median(&t.comm));
        let flops = problem.flops();
        let rate = |s: f64| flops / s / 1e12;
        let g = opts.gpus as f64;
        let (one_ms, one_rate, eff) = match base {
            Some(t1) => (
                format!("{:.3}", t1 * 1e3),
                format!("{:.1}", rate(*t1)),
                format!("{:.1}%", 100.0 * t1 / (g * full)),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let exposed = full - compute;
        let hidden = if comm > 0.0 {
            format!(
                "{:.0}%",
                (100.0 * (compute + comm - full) / comm).clamp(0.0, 100.0)
            )
        } else {
            "-".into()
        };
        let shape = format!("{}x{}x{}", problem.m, problem.n, problem.k);
        if header {
            println!(
                "{:<10} {:<5} {:<17} {:<22} {:>9} {:>8} | {:>9} {:>8} {:>8} {:>6} | {:>9} {:>8} {:>8} {:>7}",
                "layout", "dtype", "shape", "kernel", "1-GPU ms", "TFLOP/s", "N-GPU ms", "TFLOP/s",
                "per-GPU", "eff", "compute", "comm", "exposed", "hidden"
            );
            header = false;
        }
        println!(
            "{layout:<10} {:<5} {shape:<17} {:<22} {one_ms:>9} {one_rate:>8} | {:>9.3} {:>8.1} {:>8.1} {eff:>6} | {:>9.3} {:>8.3} {:>8.3} {hidden:>7}",
            problem.dtype.to_string(),
            t.kernel.name,
            full * 1e3,
            rate(full),
            rate(full) / g,
            compute * 1e3,
            comm * 1e3,
            exposed * 1e3,
        );
        println!(
            "RESULT multi layout={layout} gpus={} dtype={} m={} n={} k={} kernel={} one_gpu_s={} overlapped_s={full:.6} compute_s={compute:.6} comm_s={comm:.6} exposed_s={exposed:.6} devices=\"{}\"",
            opts.gpus,
            problem.dtype,
            problem.m,
            problem.n,
            problem.k,
            t.kernel.name,
            base.map_or("-".into(), |s| format!("{s:.6}")),
            t.devices.join(" | ")
        );
    }
    if failed > 0 {
        let what = if args.check {
            "failed or differ from the reference"
        } else {
            "failed"
        };
        return Err(CliError::failure(format!(
            "{failed} of {} multi-GPU case(s) {what}",
            cases.len()
        )));
    }
    Ok(())
}

/// The cases of a run: dtype × shape × layout, each checked for splitting over `gpus`.
fn cases(args: &MultiArgs, gpus: usize) -> Result<Vec<(Problem, MultiOptions)>, CliError> {
    let layouts = if args.layout.eq_ignore_ascii_case("all") {
        Layout::ALL.to_vec()
    } else {
        args.layout
            .split(',')
            .map(|s| Layout::parse(s.trim()))
            .collect::<Result<Vec<_>, _>>()?
    };
    let shapes: Vec<Shape> = if !args.shapes.is_empty() {
        args.shapes.clone()
    } else if !args.sizes.is_empty() {
        args.sizes
            .iter()
            .map(|&n| Shape { m: n, n, k: n })
            .collect()
    } else {
        vec![Shape {
            m: 257,
            n: 130,
            k: 301,
        }]
    };
    if let Some(bad) = args.sizes.iter().find(|&&n| n == 0) {
        return Err(CliError::input(format!("size {bad} must be positive")));
    }
    let mut cases = Vec::new();
    for &dtype in &args.dtypes {
        for shape in &shapes {
            let problem = Problem::new(shape.m, shape.n, shape.k, dtype).with_c(args.c_dtype);
            for &layout in &layouts {
                let mut opts = MultiOptions::new(gpus, layout);
                opts.kernel = args.kernel.clone();
                opts.pieces = args.pieces;
                multi::check(&problem, &opts)?;
                cases.push((problem, opts));
            }
        }
    }
    Ok(cases)
}

/// One rank of a one-process-per-GPU run: every case checked on this rank's blocks of C (the
/// rest of C is taken from the reference, so only this rank's blocks can differ). A watchdog
/// ends the process (status 1, naming the rank) when a case outlives the timeout, as a peer
/// that never joins would leave NCCL's initialization waiting.
fn process(args: &MultiArgs, rank: usize) -> CliResult {
    let world = args.world.expect("clap requires --world with --rank");
    let id_file = args
        .id_file
        .clone()
        .expect("clap requires --id-file with --rank");
    if !args.check {
        return Err(CliError::input(
            "the one-process-per-GPU form (--rank) checks only: add --check",
        ));
    }
    if world < 2 || rank >= world {
        return Err(CliError::input(format!(
            "--rank {rank} --world {world}: the world must be at least 2 and the rank below it"
        )));
    }
    let cases = cases(args, world)?;
    let devices = matmul::cuda::list_devices()?.len();
    if devices == 0 {
        return Err(CliError::failure("no CUDA device on this host"));
    }
    let device = args
        .device
        .or_else(|| {
            std::env::var("LOCAL_RANK")
                .ok()
                .and_then(|s| s.parse().ok())
        })
        .unwrap_or(rank % devices);
    let nccl = matmul::cuda::nccl::library()?;
    eprintln!(
        "rank {rank}/{world}: device {device}, NCCL from {}",
        nccl.found
    );
    let mut failed = 0;
    for (i, (problem, opts)) in cases.iter().enumerate() {
        let seed = (problem.m * 1_000_003 + problem.n * 1009 + problem.k) as u64;
        let a = AnyMatrix::generate(problem.dtype, problem.m, problem.k, Init::Random { seed })?;
        let b = AnyMatrix::generate(
            problem.dtype,
            problem.k,
            problem.n,
            Init::Random { seed: seed + 1 },
        )?;
        let pr = multi::ProcessRank {
            rank,
            world,
            device,
            id_file: std::path::PathBuf::from(format!("{}.{i}", id_file.display())),
        };
        let layout = opts.layout.name();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let limit = opts.timeout + std::time::Duration::from_secs(30);
        let watchdog = std::thread::spawn(move || {
            if done_rx.recv_timeout(limit) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                eprintln!(
                    "matmul: rank {rank} of {world}: {layout} did not finish within {limit:?} \
                     (a peer that failed or never started?); exiting"
                );
                std::process::exit(1);
            }
        });
        let result = multi::multi_gemm_process(problem, &a, &b, opts, &pr);
        let _ = done_tx.send(());
        let _ = watchdog.join();
        let out = match result {
            Ok(out) => out,
            Err(e) => {
                eprintln!(
                    "matmul: rank {rank}: {layout} {} {problem}: {e}",
                    problem.dtype
                );
                failed += 1;
                continue;
            }
        };
        let want = reference::matmul(problem, &a, &b)?;
        let mut got = want.clone();
        for (rows, cols, block) in &out.blocks {
            let (bw, n) = (cols.len(), problem.n);
            let src = block.to_f64_vec();
            place(&mut got, &src, rows.clone(), cols.start, bw, n);
        }
        let v = verify::compare_inputs(problem, &a, &b, &got, &want);
        println!(
            "rank {rank}/{world} {layout:<10} {} kernel={} {problem}: {} ({} block(s), max |err| {:.3e}, {} mismatches)",
            problem.dtype,
            out.kernel.name,
            if v.passed { "ok" } else { "MISMATCH" },
            out.blocks.len(),
            v.max_abs_err,
            v.mismatches
        );
        failed += usize::from(!v.passed);
    }
    if failed > 0 {
        return Err(CliError::failure(format!(
            "rank {rank}: {failed} of {} case(s) failed or differ from the reference",
            cases.len()
        )));
    }
    Ok(())
}

/// Writes a rows × `width` block (values as f64, exact for every element type) into `c` at
/// (rows.start, col), `c` having `n` columns.
fn place(
    c: &mut AnyMatrix,
    src: &[f64],
    rows: std::ops::Range<usize>,
    col: usize,
    width: usize,
    n: usize,
) {
    fn put<T: matmul::Element>(
        d: &mut [T],
        src: &[f64],
        rows: std::ops::Range<usize>,
        col: usize,
        width: usize,
        n: usize,
    ) {
        for (i, row) in rows.enumerate() {
            for j in 0..width {
                d[row * n + col + j] = T::from_f64(src[i * width + j]);
            }
        }
    }
    match c {
        AnyMatrix::F32(m) => put(&mut m.data, src, rows, col, width, n),
        AnyMatrix::U32(m) => put(&mut m.data, src, rows, col, width, n),
        AnyMatrix::F16(m) => put(&mut m.data, src, rows, col, width, n),
        AnyMatrix::Bf16(m) => put(&mut m.data, src, rows, col, width, n),
    }
}
