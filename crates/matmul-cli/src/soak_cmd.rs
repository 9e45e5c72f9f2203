//! `matmul soak`: judge cases and bench-like runs in a loop for a set time, every result
//! verified, with launches, failures and memory (device and host) counted.
//!
//! The work is every kernel of the backend for each dtype asked that can run each of a set of
//! problems (awkward shapes with all four op(A)/op(B) combinations spread over them, C in the
//! input type too for 16-bit dtypes, and a few large shapes, which one-thread-per-row kernels
//! skip), plus judge triples through [`judge::case_signature`] on every u32 kernel. Each round
//! runs all of it in a new order. A product's C comes back from [`Backend::run`], which poisons
//! C before the launch, and is compared with the CPU reference (computed once per problem, on
//! first use; u32 bit for bit); a judge case's signature with the reference's. A quarter of the
//! products, a different quarter each round, are also timed first as `bench` times them
//! ([`Backend::time`]: a warm-up and three timed launches, every time finite and positive).

use std::time::{Duration, Instant};

use clap::Args;
use matmul::cpu::reference;
use matmul::judge::{self, Generator};
use matmul::registry::Geometry;
use matmul::{
    open_backend, verify, AnyMatrix, Backend, BackendChoice, BackendKind, COut, CudaBackend, DType,
    Init, Inputs, KernelSpec, Op, Problem, RunOptions, KERNELS,
};

use crate::cli_error::{CliError, CliResult};

/// `matmul soak`'s arguments.
#[derive(Args)]
pub struct SoakArgs {
    /// How long to run, in seconds; the launch in progress at the end finishes (at least one
    /// runs).
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,
    /// auto (CUDA, else wgpu on a hardware adapter, else CPU), cpu, cuda or wgpu.
    #[arg(long, default_value = "auto")]
    backend: BackendChoice,
    /// Input dtypes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "u32,f32,bf16")]
    dtypes: Vec<DType>,
    /// Awkward shapes and small judge cases only (always so on the CPU backend, whose kernels
    /// would spend minutes on the large ones).
    #[arg(long)]
    small: bool,
    /// Seed of the inputs and of each round's order.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Awkward shapes: degenerate, a long K, tile edges ±1, k = 1, a single row or column of C,
/// rows that are 16-byte multiples with partial tiles (what TMA kernels take). Each gets one of
/// the four op combinations, in turn.
const SMALL: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (1, 1, 300),
    (2, 3, 5000),
    (3, 5, 7),
    (17, 33, 65),
    (15, 17, 16),
    (63, 65, 64),
    (255, 257, 1),
    (129, 127, 131),
    (266, 265, 264),
    (1, 300, 70),
    (300, 1, 70),
    (136, 264, 72),
    (136, 263, 72),
    (264, 520, 200),
];

/// Large shapes with their ops: more tiles than a persistent grid has blocks, and partial tiles.
const LARGE: &[(usize, usize, usize, Op, Op)] = &[
    (1024, 1024, 1024, Op::N, Op::N),
    (1024, 1024, 1024, Op::T, Op::T),
    (2048, 1536, 1024, Op::N, Op::T),
    (4104, 1544, 264, Op::T, Op::N),
];

/// Judge triples `N S1 S2`: small, then large ones (left out with --small).
const JUDGE_SMALL: &str = "1 0 0\n7 1 2\n33 5 6\n100 123 456\n257 4294967295 1\n";
const JUDGE_LARGE: &str = "1024 2 3\n1500 7 11\n";

const OPS: [(Op, Op); 4] = [
    (Op::N, Op::N),
    (Op::N, Op::T),
    (Op::T, Op::N),
    (Op::T, Op::T),
];

/// At most this many failures are printed in full (all are counted).
const SHOWN_FAILURES: usize = 20;

/// Progress is printed this often.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// The backend the soak runs on; a CUDA one is kept as such for its memory figures.
enum Device {
    Cuda(Box<CudaBackend>),
    Other(Box<dyn Backend>),
}

impl Device {
    fn open(choice: BackendChoice) -> CliResult<Device> {
        Ok(match choice {
            BackendChoice::Cuda => Device::Cuda(Box::new(CudaBackend::new(0)?)),
            BackendChoice::Auto => match CudaBackend::new(0) {
                Ok(b) => Device::Cuda(Box::new(b)),
                Err(_) => {
                    let (b, why) = open_backend(BackendChoice::Auto)?;
                    if let Some(why) = why {
                        eprintln!("matmul: not on CUDA: {why}");
                    }
                    Device::Other(b)
                }
            },
            other => Device::Other(open_backend(other)?.0),
        })
    }

    fn backend(&self) -> &dyn Backend {
        match self {
            Device::Cuda(b) => b.as_ref(),
            Device::Other(b) => b.as_ref(),
        }
    }

    /// Device memory in use (total − free, every process's), when the backend can tell (not
    /// after a lost context).
    fn used(&self) -> Option<u64> {
        match self {
            Device::Cuda(b) => b
                .memory()
                .ok()
                .map(|(free, total)| total.saturating_sub(free)),
            Device::Other(_) => None,
        }
    }
}

/// Device memory in use and this process's resident set, at one moment.
#[derive(Clone, Copy)]
struct Memory {
    device: Option<u64>,
    host: Option<u64>,
}

impl Memory {
    fn now(device: &Device) -> Memory {
        Memory {
            device: device.used(),
            host: host_rss(),
        }
    }
}

/// This process's resident set size in bytes (Linux: VmRSS of /proc/self/status).
fn host_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("n/a".into(), |b| {
        format!("{:.0}", b as f64 / (1u64 << 20) as f64)
    })
}

/// `b − a` in MiB with its sign, or n/a.
fn growth(a: Option<u64>, b: Option<u64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:+.1}", (b as f64 - a as f64) / (1u64 << 20) as f64),
        _ => "n/a".into(),
    }
}

/// One problem with its inputs and, once first needed, its reference C.
struct Product {
    problem: Problem,
    inputs: Inputs,
    reference: Option<AnyMatrix>,
}

/// One judge case and, once first needed, the reference's signature.
struct JudgeCase {
    case: judge::Case,
    want: Option<u32>,
}

/// One unit of work of a round.
#[derive(Clone, Copy)]
enum Job {
    Product {
        product: usize,
        kernel: &'static KernelSpec,
    },
    Judge {
        case: usize,
        kernel: &'static KernelSpec,
    },
}

impl Job {
    fn kernel(&self) -> &'static KernelSpec {
        match *self {
            Job::Product { kernel, .. } | Job::Judge { kernel, .. } => kernel,
        }
    }
}

/// Counts per kernel.
#[derive(Default, Clone, Copy)]
struct Counts {
    runs: u64,
    timed: u64,
    judge: u64,
    launches: u64,
    failures: u64,
}

/// The soak's problems for `dtypes`: every small shape (ops in turn; 16-bit dtypes also with C
/// in the input type), then, unless `small`, the large ones.
fn problems(dtypes: &[DType], small: bool) -> Vec<Problem> {
    let mut out = Vec::new();
    for &dtype in dtypes {
        for (i, &(m, n, k)) in SMALL.iter().enumerate() {
            let (op_a, op_b) = OPS[i % OPS.len()];
            let p = Problem::new(m, n, k, dtype).with_ops(op_a, op_b);
            out.push(p);
            if dtype.is_16_bit() {
                out.push(p.with_c(COut::Input));
            }
        }
        if !small {
            for &(m, n, k, op_a, op_b) in LARGE {
                out.push(Problem::new(m, n, k, dtype).with_ops(op_a, op_b));
            }
        }
    }
    out
}

/// Beyond this many multiply-adds a problem is large: one-thread-per-row kernels skip it (a
/// thread walks all of N·K there, for seconds), as the GPU tests do.
const LARGE_MACS: usize = 20_000_000;

/// Whether `kernel` takes `problem` in the soak: the backend's, for its dtype, allowed by its
/// rules on this device, and not a one-thread-per-row kernel on a large problem.
fn takes(backend: &dyn Backend, kernel: &KernelSpec, problem: &Problem) -> bool {
    let per_row = matches!(
        kernel.cuda_source().map(|s| s.geometry),
        Some(Geometry::RowPerThread { .. })
    );
    let large = problem.m * problem.n * problem.k > LARGE_MACS;
    kernel.backend == backend.kind()
        && kernel.supports(problem.dtype)
        && !(per_row && large)
        && backend
            .check(kernel, problem, RunOptions::default())
            .is_ok()
}

/// xorshift64*: the rounds' order, reproducible from --seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

/// What one job did: launches made, and a failure description if it failed.
struct Outcome {
    launches: u64,
    timed: bool,
    failure: Option<String>,
    lost: bool,
}

/// Runs one product job (timed first when `timed`) and verifies C.
fn run_product(
    backend: &dyn Backend,
    product: &mut Product,
    kernel: &KernelSpec,
    timed: bool,
) -> Outcome {
    let opts = RunOptions::default();
    let problem = product.problem;
    let mut out = Outcome {
        launches: 0,
        timed,
        failure: None,
        lost: false,
    };
    let fail = |out: &mut Outcome, e: String| {
        out.failure = Some(format!("{} {problem}: {e}", kernel.name));
    };
    if product.reference.is_none() {
        match reference::matmul(&problem, &product.inputs.a, &product.inputs.b) {
            Ok(r) => product.reference = Some(r),
            Err(e) => {
                fail(&mut out, format!("the CPU reference failed: {e}"));
                return out;
            }
        }
    }
    let want = product.reference.as_ref().expect("computed above");
    if timed {
        const WARMUP: usize = 1;
        const ITERS: usize = 3;
        match backend.time(
            kernel,
            &problem,
            std::slice::from_ref(&product.inputs),
            WARMUP,
            ITERS,
            opts,
        ) {
            Ok(times) => {
                out.launches += (WARMUP + ITERS) as u64;
                if times.len() != ITERS || times.iter().any(|t| !t.is_finite() || *t <= 0.0) {
                    fail(
                        &mut out,
                        format!("timing gave {times:?} for {ITERS} launches"),
                    );
                    return out;
                }
            }
            Err(e) => {
                out.lost = matches!(e, matmul::Error::ContextLost { .. });
                fail(&mut out, format!("timing failed: {e}"));
                return out;
            }
        }
    }
    let (a, b) = (&product.inputs.a, &product.inputs.b);
    match backend.run(kernel, &problem, a, b, opts) {
        Ok(c) => {
            out.launches += 1;
            let v = verify::compare_inputs(&problem, a, b, &c, want);
            if !v.passed {
                fail(
                    &mut out,
                    format!(
                        "C differs from the CPU reference: rel. Frobenius error {:.3e} (tolerance {:.1e}), {} mismatches, worst at {:?}",
                        v.rel_frobenius, v.tolerance, v.mismatches, v.worst
                    ),
                );
            } else if problem.dtype == DType::U32 && &c != want {
                fail(&mut out, "the u32 C is not bit-exact".into());
            }
        }
        Err(e) => {
            out.lost = matches!(e, matmul::Error::ContextLost { .. });
            fail(&mut out, format!("run failed: {e}"));
        }
    }
    out
}

/// Runs one judge case and compares its signature with the reference's.
fn run_judge(backend: &dyn Backend, case: &mut JudgeCase, kernel: &KernelSpec) -> Outcome {
    let c = case.case;
    let mut out = Outcome {
        launches: 0,
        timed: false,
        failure: None,
        lost: false,
    };
    let label = format!("{} judge `{} {} {}`", kernel.name, c.n, c.s1, c.s2);
    if case.want.is_none() {
        let want = judge::inputs(&c, Generator::Judge).and_then(|(a, b)| {
            let p = Problem::square(c.n as usize, DType::U32);
            match reference::matmul(&p, &AnyMatrix::U32(a), &AnyMatrix::U32(b))? {
                AnyMatrix::U32(r) => Ok(judge::signature(&r.data)),
                _ => unreachable!("a u32 problem's reference is u32"),
            }
        });
        match want {
            Ok(w) => case.want = Some(w),
            Err(e) => {
                out.failure = Some(format!("{label}: the CPU reference failed: {e}"));
                return out;
            }
        }
    }
    let want = case.want.expect("computed above");
    match judge::case_signature(backend, kernel, &c, Generator::Judge) {
        Ok(got) => {
            out.launches = 1;
            if got != want {
                out.failure = Some(format!(
                    "{label}: signature {got}, the reference's is {want}"
                ));
            }
        }
        Err(e) => {
            out.lost = matches!(e, matmul::Error::ContextLost { .. });
            out.failure = Some(format!("{label}: {e}"));
        }
    }
    out
}

/// `matmul soak`: checks the arguments, opens the backend, lists the jobs (every kernel of the
/// backend that its rules let run each problem), and runs rounds of them in a new order each
/// until `--seconds` have passed; prints progress every 30 s, the per-kernel counts and a
/// `RESULT soak` line. Any failure (an error, a wrong C or signature, a bad timing) is exit
/// status 1; a lost CUDA context ends the soak at once.
pub fn soak(args: SoakArgs) -> CliResult {
    if !(args.seconds.is_finite() && args.seconds > 0.0 && args.seconds <= 7.0 * 86400.0) {
        return Err(CliError::input(format!(
            "--seconds must be more than 0 and at most a week (604800); it is {}",
            args.seconds
        )));
    }
    if args.dtypes.is_empty() {
        return Err(CliError::input("--dtypes names no dtype"));
    }
    let device = Device::open(args.backend)?;
    let backend = device.backend();
    let small = args.small || backend.kind() == BackendKind::Cpu;

    let mut dtypes: Vec<DType> = Vec::new();
    for &d in &args.dtypes {
        if !dtypes.contains(&d) {
            dtypes.push(d);
        }
    }
    let mut products = Vec::new();
    let mut jobs = Vec::new();
    for problem in problems(&dtypes, small) {
        let kernels: Vec<_> = KERNELS
            .iter()
            .filter(|k| takes(backend, k, &problem))
            .collect();
        if kernels.is_empty() {
            continue;
        }
        let index = products.len();
        let seed = args.seed.wrapping_add(2 * index as u64);
        let (ar, ac) = problem.a_stored();
        let (br, bc) = problem.b_stored();
        let inputs = Inputs {
            a: AnyMatrix::generate(problem.dtype, ar, ac, Init::Random { seed })?,
            b: AnyMatrix::generate(
                problem.dtype,
                br,
                bc,
                Init::Random {
                    seed: seed.wrapping_add(1),
                },
            )?,
        };
        products.push(Product {
            problem,
            inputs,
            reference: None,
        });
        jobs.extend(kernels.into_iter().map(|kernel| Job::Product {
            product: index,
            kernel,
        }));
    }
    let mut judge_cases = Vec::new();
    if dtypes.contains(&DType::U32) {
        let text = if small {
            JUDGE_SMALL.to_string()
        } else {
            format!("{JUDGE_SMALL}{JUDGE_LARGE}")
        };
        for case in judge::parse_cases(&text) {
            let case = case.expect("the built-in judge triples parse");
            let problem = Problem::square(case.n as usize, DType::U32);
            let index = judge_cases.len();
            let kernels: Vec<_> = KERNELS
                .iter()
                .filter(|k| takes(backend, k, &problem))
                .collect();
            jobs.extend(kernels.into_iter().map(|kernel| Job::Judge {
                case: index,
                kernel,
            }));
            judge_cases.push(JudgeCase { case, want: None });
        }
    }
    if jobs.is_empty() {
        return Err(CliError::input(format!(
            "no kernel of the {} backend runs a soak problem of {}",
            backend.kind(),
            dtypes
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut per_kernel: Vec<(&'static KernelSpec, Counts)> = Vec::new();
    for job in &jobs {
        if !per_kernel
            .iter()
            .any(|(k, _)| std::ptr::eq(*k, job.kernel()))
        {
            per_kernel.push((job.kernel(), Counts::default()));
        }
    }
    println!(
        "soak: {} s on {}; {} kernels, {} problems ({}), {} judge cases: {} jobs a round{}",
        args.seconds,
        backend.describe(),
        per_kernel.len(),
        products.len(),
        dtypes
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        judge_cases.len(),
        jobs.len(),
        if small { " (small shapes only)" } else { "" }
    );

    let start_mem = Memory::now(&device);
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(args.seconds);
    let mut rng = Rng((args.seed ^ 0x9e37_79b9_7f4a_7c15) | 1);
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    let (mut rounds, mut done_jobs, mut launches, mut failures) = (0u64, 0u64, 0u64, 0u64);
    let mut warm: Option<(Memory, f64)> = None;
    let mut next_progress = start + PROGRESS_EVERY;
    let mut lost = false;
    let mut first_failure = None;
    'soak: loop {
        rounds += 1;
        rng.shuffle(&mut order);
        for (position, &j) in order.iter().enumerate() {
            let job = jobs[j];
            let outcome = match job {
                Job::Product { product, kernel } => {
                    // A different quarter of the products is timed each round.
                    let timed = (j as u64 + rounds).is_multiple_of(4);
                    run_product(backend, &mut products[product], kernel, timed)
                }
                Job::Judge { case, kernel } => run_judge(backend, &mut judge_cases[case], kernel),
            };
            done_jobs += 1;
            launches += outcome.launches;
            let counts = &mut per_kernel
                .iter_mut()
                .find(|(k, _)| std::ptr::eq(*k, job.kernel()))
                .expect("every job's kernel is listed")
                .1;
            counts.launches += outcome.launches;
            match job {
                Job::Product { .. } => counts.runs += 1,
                Job::Judge { .. } => counts.judge += 1,
            }
            counts.timed += u64::from(outcome.timed);
            if let Some(f) = outcome.failure {
                failures += 1;
                counts.failures += 1;
                if failures as usize <= SHOWN_FAILURES {
                    println!("FAIL round {rounds}: {f}");
                }
                first_failure.get_or_insert(f);
            }
            if outcome.lost {
                lost = true;
                println!("the CUDA context is lost: the soak stops here");
                break 'soak;
            }
            let now = Instant::now();
            if now >= next_progress {
                let mem = Memory::now(&device);
                println!(
                    "{:6.0} s: round {rounds} ({} of {} jobs done), {launches} launches, {failures} failures, device {} MiB used, host RSS {} MiB",
                    (now - start).as_secs_f64(),
                    position + 1,
                    jobs.len(),
                    mib(mem.device),
                    mib(mem.host)
                );
                next_progress = now + PROGRESS_EVERY;
            }
            if now >= deadline {
                break 'soak;
            }
        }
        if warm.is_none() {
            warm = Some((Memory::now(&device), start.elapsed().as_secs_f64()));
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let end_mem = Memory::now(&device);

    println!("kernel                  runs  timed  judge  launches  failures");
    for (k, c) in &per_kernel {
        println!(
            "{:<22} {:>5} {:>6} {:>6} {:>9} {:>9}",
            k.name, c.runs, c.timed, c.judge, c.launches, c.failures
        );
    }
    let (warm_mem, first_round) = match warm {
        Some((m, s)) => (m, format!("{s:.1}")),
        None => (
            Memory {
                device: None,
                host: None,
            },
            "unfinished".into(),
        ),
    };
    println!(
        "memory (MiB)  start  after round 1  end  growth since round 1\n  device      {:>5}  {:>13}  {:>3}  {:>20}\n  host RSS    {:>5}  {:>13}  {:>3}  {:>20}",
        mib(start_mem.device),
        mib(warm_mem.device),
        mib(end_mem.device),
        growth(warm_mem.device, end_mem.device),
        mib(start_mem.host),
        mib(warm_mem.host),
        mib(end_mem.host),
        growth(warm_mem.host, end_mem.host),
    );
    println!(
        "RESULT soak backend={} seconds={secs:.1} rounds={rounds} first_round_s={first_round} jobs={done_jobs} launches={launches} failures={failures} kernels={} problems={} judge_cases={} device_used_mib={}/{}/{} host_rss_mib={}/{}/{} growth_since_round1_mib=device:{},host:{}",
        backend.kind(),
        per_kernel.len(),
        products.len(),
        judge_cases.len(),
        mib(start_mem.device),
        mib(warm_mem.device),
        mib(end_mem.device),
        mib(start_mem.host),
        mib(warm_mem.host),
        mib(end_mem.host),
        growth(warm_mem.device, end_mem.device),
        growth(warm_mem.host, end_mem.host),
    );
    if failures > 0 || lost {
        return Err(CliError::failure(format!(
            "{failures} of {done_jobs} jobs failed in the soak{}; the first: {}",
            if lost {
                " (the CUDA context was lost)"
            } else {
                ""
            },
            first_failure.unwrap_or_default()
        )));
    }
    Ok(())
}
