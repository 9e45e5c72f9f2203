//! One GEMM across several GPUs over NCCL (matmul::nccl::multi), reached through `matmul run
//! --gpus N` (each layout run once and checked against the CPU reference), `matmul run --rank R
//! --world W --id-file F | --master HOST:PORT` or `--launched` (one process per GPU) and `matmul
//! bench --gpus N` (timed beside the
//! 1-GPU run of the same GEMM, C compared with the 1-GPU C, a multi.json/multi.md report).
//! [`GpuArgs`] and [`RankArgs`] are the options `run` and `bench` flatten in; [`Plan`] is what
//! they hand over after their own arguments are parsed.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use matmul::cpu::reference;
use matmul::nccl::multi::{self, Layout, MultiOptions};
use matmul::verify;
use matmul::{AnyMatrix, COut, DType, Init, Problem, Shape};
use matmul_bench::multi::{MultiCase, MultiRun};

use crate::cli_error::{CliError, CliResult};

/// The multi-GPU options of `run` and `bench`.
#[derive(Args, Clone, Debug, Default)]
pub struct GpuArgs {
    /// One GEMM over N GPUs of this host (devices 0..N, N ≥ 2) through NCCL (docs/multi-gpu.md).
    #[arg(long, help_heading = "Multi-GPU")]
    pub gpus: Option<usize>,
    /// With --gpus or --rank: comma-separated layouts, row-split (B replicated, no
    /// communication), ag-gemm (AllGather of A's row shards overlapped with the products),
    /// gemm-rs (K split, partial products reduce-scattered as they finish), `all`, or `auto`
    /// (--gpus only: the placement, one GPU included, that a model of compute and the host's
    /// measured link picks). Default: `auto` for run, `all,auto` for bench (auto's row beside
    /// the layouts it chose among), `all` for --rank.
    #[arg(long, help_heading = "Multi-GPU")]
    pub layout: Option<String>,
    /// With --gpus: gemm-rs's row pieces per GPU's shard of C (default: up to 4 of at least
    /// 1024 rows).
    #[arg(long, help_heading = "Multi-GPU")]
    pub pieces: Option<usize>,
}

/// `run`'s one-process-per-GPU options (each process checks its own blocks of C).
#[derive(Args, Clone, Debug, Default)]
pub struct RankArgs {
    /// One process per GPU: this process's rank (with --world, and --id-file or --master).
    /// Start one process per rank, on this host or others.
    #[arg(
        long,
        requires = "world",
        conflicts_with = "gpus",
        help_heading = "Multi-GPU"
    )]
    pub rank: Option<usize>,
    /// One process per GPU: the number of processes.
    #[arg(long, requires = "rank", help_heading = "Multi-GPU")]
    pub world: Option<usize>,
    /// One process per GPU, started by a launcher: the rank, the world, the device and rank
    /// 0's address from its variables (torchrun's RANK, WORLD_SIZE, LOCAL_RANK; Slurm's
    /// SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID; Open MPI's OMPI_COMM_WORLD_*; MPICH's PMI_*;
    /// MASTER_ADDR and MASTER_PORT under any). --rank, --world, --device, --master override.
    #[arg(long, conflicts_with = "gpus", help_heading = "Multi-GPU")]
    pub launched: bool,
    /// One process per GPU: where rank 0 writes the NCCL unique id for the others (a path every
    /// rank sees, absent before the run; layout i uses PATH.i).
    #[arg(long, conflicts_with = "master", help_heading = "Multi-GPU")]
    pub id_file: Option<PathBuf>,
    /// One process per GPU: rank 0's HOST:PORT, where it serves the NCCL unique id over TCP and
    /// the other ranks fetch it (docs/multi-gpu.md); with --launched, MASTER_ADDR:MASTER_PORT.
    #[arg(long, help_heading = "Multi-GPU")]
    pub master: Option<String>,
    /// Rank 0 with --master: listen on this ADDR:PORT instead of the master address (an
    /// interface of this host; the port the others connect to).
    #[arg(long, help_heading = "Multi-GPU")]
    pub bind: Option<String>,
    /// One process per GPU: this process's CUDA device (default: the launcher's local rank,
    /// else the rank modulo the devices of this host).
    #[arg(long, help_heading = "Multi-GPU")]
    pub device: Option<usize>,
}

impl RankArgs {
    /// Whether the command runs as one rank of a one-process-per-GPU run.
    pub fn active(&self) -> bool {
        self.rank.is_some() || self.launched
    }

    /// This process's rank, world, device (if given or the launcher's local rank) and
    /// rendezvous: the options, over the launcher's variables (`var`) with --launched. Missing
    /// or contradictory values are input errors (status 2).
    pub fn resolve(
        &self,
        var: &dyn Fn(&str) -> Option<String>,
    ) -> CliResult<(usize, usize, Option<usize>, multi::Rendezvous)> {
        let launch = if self.launched {
            let found = matmul::nccl::rendezvous::Launch::from_vars(var)
                .map_err(|e| CliError::input(e.to_string()))?;
            Some(found.ok_or_else(|| {
                CliError::input(
                    "--launched: no launcher's variables (RANK and WORLD_SIZE, SLURM_PROCID and \
                     SLURM_NTASKS, OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE, or PMI_RANK \
                     and PMI_SIZE) are set",
                )
            })?)
        } else {
            None
        };
        let rank = self.rank.or(launch.as_ref().map(|l| l.rank));
        let world = self.world.or(launch.as_ref().map(|l| l.world));
        let (Some(rank), Some(world)) = (rank, world) else {
            return Err(CliError::input(
                "one process per GPU needs --rank and --world",
            ));
        };
        if world < 2 || rank >= world {
            return Err(CliError::input(format!(
                "--rank {rank} --world {world}: the world must be at least 2 and the rank below it"
            )));
        }
        let device = self.device.or(launch.as_ref().and_then(|l| l.local_rank));
        let master = self
            .master
            .clone()
            .or(launch.as_ref().and_then(|l| l.master.clone()));
        let rendezvous =
            match (&self.id_file, master) {
                (Some(path), _) => multi::Rendezvous::File(path.clone()),
                (None, Some(master)) => multi::Rendezvous::Tcp {
                    master,
                    bind: self.bind.clone(),
                },
                (None, None) => return Err(CliError::input(
                    "one process per GPU needs a rendezvous: --id-file PATH (a file every rank \
                     sees) or --master HOST:PORT (rank 0 serves the id over TCP; with \
                     --launched, MASTER_ADDR and MASTER_PORT)",
                )),
            };
        if self.bind.is_some() && !matches!(rendezvous, multi::Rendezvous::Tcp { .. }) {
            return Err(CliError::input(
                "--bind applies to --master (a TCP rendezvous)",
            ));
        }
        Ok((rank, world, device, rendezvous))
    }
}

impl GpuArgs {
    /// Whether `--gpus` routes the command here.
    pub fn active(&self) -> bool {
        self.gpus.is_some()
    }

    /// Refuses the multi-GPU-only options on a one-GPU command (status 2).
    pub fn refuse_without_gpus(&self) -> CliResult {
        let given = [
            (self.layout.is_some(), "--layout"),
            (self.pieces.is_some(), "--pieces"),
        ];
        match given.iter().find(|(g, _)| *g) {
            Some((_, opt)) => Err(CliError::input(format!(
                "{opt} applies to a multi-GPU product: add --gpus N"
            ))),
            None => Ok(()),
        }
    }
}

/// What `run` or `bench` asks of the multi-GPU path, their own arguments parsed.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The multi-GPU options.
    pub gpu: GpuArgs,
    /// The dtypes.
    pub dtypes: Vec<DType>,
    /// The shapes.
    pub shapes: Vec<Shape>,
    /// The local kernel (a registry name or `auto`).
    pub kernel: String,
    /// C's type.
    pub c_dtype: COut,
    /// How A and B are filled (`run`'s --init/--seed; `bench`: seeded per shape).
    pub init: Option<(Init, Init)>,
    /// `run`: check against the CPU reference.
    pub check: bool,
    /// `bench`: untimed and timed runs.
    pub warmup: usize,
    /// See `warmup`.
    pub iters: usize,
    /// `bench`: where multi.json and multi.md go.
    pub out: Option<PathBuf>,
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

/// The layouts `--layout` names, and whether it asks for `auto`: `default` when absent, every
/// layout for `all`.
fn layouts(spec: Option<&str>, default: &str) -> Result<(Vec<Layout>, bool), CliError> {
    let spec = spec.unwrap_or(default);
    let mut fixed = Vec::new();
    let mut auto = false;
    for name in spec.split(',').map(str::trim) {
        if name.eq_ignore_ascii_case("auto") {
            auto = true;
        } else if name.eq_ignore_ascii_case("all") {
            fixed.extend(Layout::ALL);
        } else {
            fixed.push(Layout::parse(name)?);
        }
    }
    fixed.dedup();
    Ok((fixed, auto))
}

/// The problems of a plan: dtype × shape.
fn problems(plan: &Plan) -> Vec<Problem> {
    let mut out = Vec::new();
    for &dtype in &plan.dtypes {
        for shape in &plan.shapes {
            out.push(Problem::new(shape.m, shape.n, shape.k, dtype).with_c(plan.c_dtype));
        }
    }
    out
}

/// The cases of a plan over `gpus` ranks: dtype × shape × layout (`fixed`), each checked for
/// splitting (status 2 before any device is opened).
fn cases_of(
    plan: &Plan,
    gpus: usize,
    fixed: &[Layout],
) -> Result<Vec<(Problem, MultiOptions)>, CliError> {
    if gpus < 2 {
        return Err(CliError::input(format!(
            "--gpus {gpus}: a multi-GPU product needs at least 2 (leave --gpus out for one GPU)"
        )));
    }
    let mut cases = Vec::new();
    for problem in problems(plan) {
        for &layout in fixed {
            let mut opts = MultiOptions::new(gpus, layout);
            opts.kernel = plan.kernel.clone();
            opts.pieces = plan.gpu.pieces;
            multi::check(&problem, &opts)?;
            cases.push((problem, opts));
        }
    }
    Ok(cases)
}

/// Every layout's cases (the one-process-per-GPU form checks them all unless told; it takes no
/// `auto`, which needs every GPU of the run in one process).
fn cases(plan: &Plan, gpus: usize) -> Result<Vec<(Problem, MultiOptions)>, CliError> {
    let (fixed, auto) = layouts(plan.gpu.layout.as_deref(), "all")?;
    if auto {
        return Err(CliError::input(
            "--layout auto applies to --gpus N (one process for every GPU); with --rank, name \
             the layouts",
        ));
    }
    cases_of(plan, gpus, &fixed)
}

/// A and B of `problem`: the plan's fill, else seeded by the shape.
fn inputs(plan: &Plan, problem: &Problem) -> CliResult<(AnyMatrix, AnyMatrix)> {
    let (ia, ib) = plan.init.unwrap_or_else(|| {
        let seed = (problem.m * 1_000_003 + problem.n * 1009 + problem.k) as u64;
        (Init::Random { seed }, Init::Random { seed: seed + 1 })
    });
    Ok((
        AnyMatrix::generate(problem.dtype, problem.m, problem.k, ia)?,
        AnyMatrix::generate(problem.dtype, problem.k, problem.n, ib)?,
    ))
}

/// Devices and NCCL present (status 1 naming what is missing); prints NCCL's version.
fn environment(gpus: usize) -> CliResult<String> {
    let nccl = multi::check_environment(gpus)?;
    let version = nccl
        .version()
        .map(|(a, b, c)| format!("{a}.{b}.{c}"))
        .unwrap_or_else(|e| format!("unknown ({e})"));
    let line = format!("NCCL {version} from {}", nccl.found);
    eprintln!("{line}");
    Ok(line)
}

/// `matmul run --gpus N`: the product in the placement `--layout auto` (the default) picks, or
/// in each layout named, run once (the time includes uploads, NCCL's setup and the download, as
/// `run`'s does) and, when `plan.check`, compared with the CPU reference.
pub fn run(plan: &Plan) -> CliResult {
    let gpus = plan.gpu.gpus.unwrap_or(0);
    let (fixed, auto) = layouts(plan.gpu.layout.as_deref(), "auto")?;
    let fixed_cases = cases_of(plan, gpus, &fixed)?;
    let problems = problems(plan);
    // Inputs (and the reference) before any device: a range error is the input's fault.
    let mut prepared: Option<(Problem, AnyMatrix, AnyMatrix, Option<AnyMatrix>)> = None;
    if let Some(problem) = problems.first() {
        let (a, b) = inputs(plan, problem)?;
        let want = if plan.check {
            let r = reference::matmul(problem, &a, &b)?;
            verify::check_range(problem, &a, &b, &r)?;
            Some(r)
        } else {
            None
        };
        prepared = Some((*problem, a, b, want));
    }
    environment(gpus)?;
    // Per problem: auto's pick (when asked), then the layouts named.
    let mut runs: Vec<(Problem, Option<MultiOptions>, String)> = Vec::new();
    for problem in &problems {
        if auto {
            let timeout = MultiOptions::new(gpus, Layout::RowSplit).timeout;
            let (pick, link) = multi::auto_placement(problem, gpus, plan.gpu.pieces, timeout)?;
            eprintln!(
                "matmul: auto {} {problem}: {} (model: {:.3} ms; the link {:.1} GB/s, {:.1} µs a transfer)",
                problem.dtype,
                pick.placement.name(),
                pick.seconds * 1e3,
                link.bytes_per_s / 1e9,
                link.latency_s * 1e6
            );
            let label = format!("auto→{}", pick.placement.name());
            let opts = match pick.placement {
                matmul::nccl::layout::Placement::OneGpu => None,
                matmul::nccl::layout::Placement::Split(layout) => {
                    let mut o = MultiOptions::new(gpus, layout);
                    o.kernel = plan.kernel.clone();
                    o.pieces = plan.gpu.pieces;
                    Some(o)
                }
            };
            runs.push((*problem, opts, label));
        }
        for (p, opts) in fixed_cases.iter().filter(|(p, _)| p == problem) {
            runs.push((*p, Some(opts.clone()), opts.layout.name().to_string()));
        }
    }
    let mut failed = 0;
    for (problem, opts, layout) in &runs {
        if prepared.as_ref().is_none_or(|(p, ..)| p != problem) {
            let (a, b) = inputs(plan, problem)?;
            let want = if plan.check {
                Some(reference::matmul(problem, &a, &b)?)
            } else {
                None
            };
            prepared = Some((*problem, a, b, want));
        }
        let (_, a, b, want) = prepared.as_ref().expect("set above");
        let start = Instant::now();
        let got = match opts {
            Some(opts) => multi::multi_gemm(problem, a, b, opts).map(|g| (g.c, g.kernel.name)),
            None => single_gpu_c(problem, a, b, &plan.kernel).map(|c| (c, plan.kernel.as_str())),
        };
        let (c, kernel) = match got {
            Ok(got) => got,
            Err(e) => {
                eprintln!("matmul: {layout} {} {problem}: {e}", problem.dtype);
                failed += 1;
                continue;
            }
        };
        let secs = start.elapsed().as_secs_f64();
        let verdict = match want {
            Some(want) => {
                let v = verify::compare_inputs(problem, a, b, &c, want);
                failed += usize::from(!v.passed);
                format!(
                    "{} (rel. Frobenius {:.2e}, max |err| {:.3e}, {} mismatches)",
                    if v.passed { "PASS" } else { "FAIL" },
                    v.rel_frobenius,
                    v.max_abs_err,
                    v.mismatches
                )
            }
            None => "skipped (m·n·k > 2^28; pass --check to force it)".into(),
        };
        let used = opts.as_ref().map_or(1, |o| o.gpus);
        println!(
            "{layout:<10} {} gpus={used} kernel={kernel} {problem}: {:.3} ms (one call, with transfers and NCCL setup), check {verdict}",
            problem.dtype,
            secs * 1e3,
        );
    }
    if failed > 0 {
        return Err(CliError::failure(format!(
            "{failed} of {} multi-GPU case(s) failed or differ from the reference",
            runs.len()
        )));
    }
    Ok(())
}

/// The 1-GPU C of `problem` (device 0, the kernel `kernel` picks for the whole problem).
fn single_gpu_c(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    kernel: &str,
) -> matmul::Result<AnyMatrix> {
    let sel = matmul::dispatch::select(
        kernel,
        matmul::BackendChoice::Cuda,
        problem.dtype,
        Some(problem),
    )?;
    let opts = matmul::RunOptions {
        tiling: sel.tiling,
        ..Default::default()
    };
    sel.backend.run(sel.kernel, problem, a, b, opts)
}

/// The multi-GPU C against the 1-GPU C: u32 bit for bit, floats within the reference
/// tolerance (a different summation order).
fn against_one_gpu(problem: &Problem, got: &AnyMatrix, one: &AnyMatrix) -> (bool, String) {
    if let (AnyMatrix::U32(g), AnyMatrix::U32(o)) = (got, one) {
        let wrong = g.data.iter().zip(&o.data).filter(|(x, y)| x != y).count()
            + g.data.len().abs_diff(o.data.len());
        return if wrong == 0 {
            (true, "exact".into())
        } else {
            (false, format!("MISMATCH ({wrong} elements differ)"))
        };
    }
    let v = verify::compare(problem, got, one);
    if v.passed {
        (true, format!("ok ({:.1e})", v.rel_frobenius))
    } else {
        (
            false,
            format!(
                "MISMATCH (rel. Frobenius {:.2e}, {} mismatches)",
                v.rel_frobenius, v.mismatches
            ),
        )
    }
}

/// `matmul bench --gpus N`: per dtype and shape, the 1-GPU run of the same GEMM, then per
/// layout the overlapped product, its compute alone and its communication alone (medians), C
/// compared with the 1-GPU C; the table on stdout, multi.json and multi.md in `plan.out`.
pub fn bench(plan: &Plan) -> CliResult {
    let gpus = plan.gpu.gpus.unwrap_or(0);
    // `auto` (in the default) measures every layout: its row is compared with them all.
    let (mut fixed, auto) = layouts(plan.gpu.layout.as_deref(), "all,auto")?;
    if auto {
        fixed = Layout::ALL.to_vec();
    }
    let cases = cases_of(plan, gpus, &fixed)?;
    if let Some(out) = &plan.out {
        std::fs::create_dir_all(out)
            .map_err(|e| CliError::input(format!("--out {}: {e}", out.display())))?;
    }
    let nccl = environment(gpus)?;
    // The run's record as measured so far.
    let multi_run = |devices: &[String], records: &[MultiCase]| MultiRun {
        system: matmul_bench::SystemInfo::collect(&devices.join(" | "), "cuda", None),
        gpus,
        nccl: nccl.clone(),
        warmup: plan.warmup,
        iters: plan.iters,
        cases: records.to_vec(),
    };
    let mut failed = 0;
    let mut records = Vec::new();
    let mut devices = Vec::new();
    let mut inputs_of: Option<(Problem, AnyMatrix, AnyMatrix, f64, AnyMatrix)> = None;
    let mut header = true;
    for (problem, opts) in &cases {
        if inputs_of.as_ref().is_none_or(|(p, ..)| p != problem) {
            inputs_of = None; // free the last case's matrices first
            let (a, b) = inputs(plan, problem)?;
            let one = (|| -> matmul::Result<_> {
                let (_, t) =
                    multi::single_gpu_time(problem, &a, &b, &plan.kernel, plan.warmup, plan.iters)?;
                Ok((median(&t), single_gpu_c(problem, &a, &b, &plan.kernel)?))
            })();
            match one {
                Ok((t1, c1)) => inputs_of = Some((*problem, a, b, t1, c1)),
                Err(e) => {
                    eprintln!("matmul: 1-GPU {} {problem}: {e}", problem.dtype);
                    failed += 1;
                    continue;
                }
            }
        }
        let Some((_, a, b, t1, one_c)) = inputs_of.as_ref() else {
            failed += 1;
            continue;
        };
        let layout = opts.layout.name();
        let timed = multi::multi_time(problem, a, b, opts, plan.warmup, plan.iters)
            .and_then(|t| Ok((t, multi::multi_gemm(problem, a, b, opts)?)));
        let (t, got) = match timed {
            Ok(x) => x,
            Err(e) => {
                eprintln!("matmul: {layout} {} {problem}: {e}", problem.dtype);
                failed += 1;
                continue;
            }
        };
        let (ok, check) = against_one_gpu(problem, &got.c, one_c);
        failed += usize::from(!ok);
        if devices.is_empty() {
            devices = t.devices.clone();
        }
        let mut case = MultiCase::new(
            layout,
            &problem.dtype.to_string(),
            (problem.m, problem.n, problem.k),
            t.kernel.name,
            gpus,
            Some(*t1),
            (median(&t.overlapped), median(&t.compute), median(&t.comm)),
        );
        case.check = Some(check);
        if header {
            println!(
                "{:<10} {:<5} {:<17} {:<16} {:>9} | {:>9} {:>8} {:>8} {:>6} | {:>8} {:>8} {:>8} {:>6} | check",
                "layout", "dtype", "shape", "kernel", "1-GPU ms", "N-GPU ms", "TFLOP/s",
                "per-GPU", "eff", "compute", "comm", "exposed", "hidden"
            );
            header = false;
        }
        let pct = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.1}%", 100.0 * v));
        println!(
            "{layout:<10} {:<5} {:<17} {:<16} {:>9.3} | {:>9.3} {:>8.1} {:>8.1} {:>6} | {:>8.3} {:>8.3} {:>8.3} {:>6} | {}",
            case.dtype,
            format!("{}x{}x{}", case.m, case.n, case.k),
            case.kernel,
            t1 * 1e3,
            case.overlapped_s * 1e3,
            case.aggregate_tflops,
            case.per_gpu_tflops,
            pct(case.efficiency),
            case.compute_s * 1e3,
            case.comm_s * 1e3,
            case.exposed_s * 1e3,
            pct(case.hidden()),
            case.check.as_deref().unwrap_or("-"),
        );
        records.push(case);
        // Written after every case: a run cut short (a time limit) keeps what it measured.
        if let Some(out) = &plan.out {
            multi_run(&devices, &records)
                .write(out)
                .map_err(|e| CliError::failure(format!("writing {}: {e}", out.display())))?;
        }
    }
    if auto && !records.is_empty() {
        let timeout = MultiOptions::new(gpus, Layout::RowSplit).timeout;
        let mut rows = Vec::new();
        for problem in problems(plan) {
            let same = |c: &&MultiCase| {
                (c.dtype.as_str(), c.m, c.n, c.k)
                    == (
                        problem.dtype.to_string().as_str(),
                        problem.m,
                        problem.n,
                        problem.k,
                    )
            };
            let Some(any) = records.iter().find(same) else {
                continue;
            };
            let pick = match multi::auto_placement(&problem, gpus, plan.gpu.pieces, timeout) {
                Ok((pick, _)) => pick.placement,
                Err(e) => {
                    eprintln!("matmul: auto {} {problem}: {e}", problem.dtype);
                    failed += 1;
                    continue;
                }
            };
            let mut row = match pick {
                matmul::nccl::layout::Placement::OneGpu => {
                    let t1 = any.one_gpu_s.unwrap_or(f64::NAN);
                    let shape = (any.m, any.n, any.k);
                    MultiCase::new(
                        "auto",
                        &any.dtype,
                        shape,
                        &any.kernel,
                        1,
                        Some(t1),
                        (t1, t1, 0.0),
                    )
                }
                matmul::nccl::layout::Placement::Split(layout) => {
                    match records
                        .iter()
                        .filter(same)
                        .find(|c| c.layout == layout.name())
                    {
                        Some(c) => MultiCase {
                            layout: "auto".into(),
                            ..c.clone()
                        },
                        None => continue,
                    }
                }
            };
            row.chosen = Some(pick.name().to_string());
            rows.push(row);
        }
        for row in &rows {
            println!(
                "auto       {:<5} {:<17} chose {:<10} {:>9.3} ms",
                row.dtype,
                format!("{}x{}x{}", row.m, row.n, row.k),
                row.chosen.as_deref().unwrap_or("?"),
                row.overlapped_s * 1e3
            );
        }
        records.extend(rows);
        let run = multi_run(&devices, &records);
        if let Some(summary) = run.auto_summary() {
            println!("{summary}");
        }
        if let Some(out) = &plan.out {
            run.write(out)
                .map_err(|e| CliError::failure(format!("writing {}: {e}", out.display())))?;
        }
    }
    if let (Some(out), false) = (&plan.out, records.is_empty()) {
        eprintln!(
            "wrote {} and {}",
            out.join(matmul_bench::multi::JSON).display(),
            out.join(matmul_bench::multi::MARKDOWN).display()
        );
    }
    if failed > 0 {
        return Err(CliError::failure(format!(
            "{failed} of {} multi-GPU case(s) failed or differ from the 1-GPU C",
            cases.len()
        )));
    }
    Ok(())
}

/// `matmul run --rank R --world W --id-file F` (or `--master HOST:PORT`, or `--launched`): one
/// rank of a one-process-per-GPU run, every layout checked on this rank's blocks of C (the
/// rest of C is taken from the reference, so only this rank's blocks can differ). A watchdog
/// ends the process (status 1, naming the rank) when a case outlives the timeout, as a peer
/// that never joins would leave NCCL's initialization waiting.
pub fn process(plan: &Plan, ranks: &RankArgs) -> CliResult {
    let (rank, world, device, rendezvous) = ranks.resolve(&|k| std::env::var(k).ok())?;
    // Every error names this process's rank: the launcher's logs interleave them.
    rank_process(plan, rank, world, device, &rendezvous).map_err(|mut e| {
        if !e.message.starts_with("rank ") && !e.message.starts_with("--rank") {
            e.message = format!("rank {rank} of {world}: {}", e.message);
        }
        e
    })
}

fn rank_process(
    plan: &Plan,
    rank: usize,
    world: usize,
    device: Option<usize>,
    rendezvous: &multi::Rendezvous,
) -> CliResult {
    let cases = cases(plan, world)?;
    let devices = matmul::cuda::list_devices()?.len();
    if devices == 0 {
        return Err(CliError::failure("no CUDA device on this host"));
    }
    let device = device.unwrap_or(rank % devices);
    let nccl = matmul::nccl::library()?;
    eprintln!(
        "rank {rank}/{world}: device {device}, NCCL from {}",
        nccl.found
    );
    let mut failed = 0;
    for (i, (problem, opts)) in cases.iter().enumerate() {
        let (a, b) = inputs(plan, problem)?;
        let pr = multi::ProcessRank {
            rank,
            world,
            device,
            rendezvous: rendezvous.clone(),
            round: i as u32,
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
                exit_now(1);
            }
        });
        let result = multi::multi_gemm_process(problem, &a, &b, opts, &pr, &mut |m| {
            eprintln!("matmul: {m}")
        });
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

/// Ends the process at once with `code`, without running exit handlers: the main thread may be
/// inside NCCL (ncclCommInitRank waiting for a peer), and `exit`'s handlers tear down the CUDA
/// and NCCL state under it (a failing-rank run on 4 H200s ended one process with a segmentation
/// fault that way instead of status 1).
fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: _exit ends the process immediately; nothing runs after it.
    unsafe { libc::_exit(code) }
}
