//! Bring your own kernel (docs/own-kernels.md): `matmul run --kernel-file`, `matmul bench
//! --kernel-file` and `matmul new-kernel`. A kernel written in Rust (`.rs`, docs/rust-kernels.md)
//! is generated into CUDA C++ or WGSL for the backend that runs it when the file is read.
//!
//! A user's kernel never runs in the process the user started: that process re-executes itself
//! (the same arguments, [`CHILD_ENV`] set) and supervises the child. The child compiles,
//! verifies and times the kernel; around every wait on the user's kernel it arms a watchdog
//! through a pipe (`arm SECONDS WHAT` / `disarm` lines on the descriptor [`CHILD_ENV`] names), and
//! the parent kills it when an armed wait outlives its limit. A faulting kernel's CUDA context
//! (a sticky error) dies with the child; an endless loop is stopped by the kill. The child's exit
//! status is the command's; a child killed by a signal is a failure (exit 1) that says so.

use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Args;
use matmul::user::{Expr, Lang, UserKernel};
use matmul::verify;
use matmul::{AnyMatrix, Backend, BackendChoice, DType, Init, Inputs, Op, Problem};

use crate::cli_error::{CliError, CliResult};

/// Set in the child: the number of the pipe's write end for the watchdog's lines.
pub const CHILD_ENV: &str = "MATMUL_BYOK_CHILD_FD";

/// The shapes `--check-shapes` runs (m, n, k): degenerate, odd, tile edges ±1, k = 1, three-sided
/// partial tiles.
pub const CHECK_SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (3, 5, 7),
    (17, 33, 65),
    (1, 300, 70),
    (255, 257, 1),
    (63, 65, 64),
    (129, 127, 131),
    (266, 265, 264),
];

/// The options of a kernel of your own (flattened into `run` and `bench`).
#[derive(Args, Clone, Default)]
pub struct UserKernelArgs {
    /// A kernel of your own: a .cu (CUDA C++, NVRTC) or .wgsl (wgpu) file with the ABI of
    /// docs/own-kernels.md, or a .rs file in the Rust subset of docs/rust-kernels.md (generated
    /// for the backend: CUDA when a device is present, else wgpu; --backend picks); run in a child
    /// process under a watchdog.
    #[arg(long, value_name = "PATH")]
    pub kernel_file: Option<String>,
    /// Its entry point (default: the file's stem, `-` as `_`, for .cu; `main` for .wgsl; a .rs
    /// kernel's is its function).
    #[arg(long, requires = "kernel_file")]
    pub entry: Option<String>,
    /// A define for the kernel file, repeatable: NVRTC's -D for .cu, `const NAME = VALUE;` for
    /// .wgsl; integer ones can be used in --grid, --block and --shared.
    #[arg(short = 'D', value_name = "NAME=VALUE", requires = "kernel_file")]
    pub define: Vec<String>,
    /// Blocks (.cu) or workgroups (.wgsl) along x[,y[,z]]: expressions of M, N, K and integer
    /// defines with + - * / % ( ) ceil floor cdiv min max (default: cdiv(N,16),cdiv(M,16); for
    /// .rs, cdiv(N,X),cdiv(M,Y) of its #[kernel(X, Y)], docs/rust-kernels.md).
    #[arg(long, requires = "kernel_file")]
    pub grid: Option<String>,
    /// Threads per block x[,y[,z]] (.cu only; WGSL sets @workgroup_size in the shader, a .rs
    /// kernel's attribute sets both; default 16,16).
    #[arg(long, requires = "kernel_file")]
    pub block: Option<String>,
    /// Dynamic shared memory in bytes, an expression (.cu only; default 0).
    #[arg(long, requires = "kernel_file")]
    pub shared: Option<String>,
    /// Zero C before each launch (a kernel that accumulates into C) instead of poisoning it.
    #[arg(long, requires = "kernel_file")]
    pub zero_c: bool,
    /// Seconds any one wait on the kernel may take before the watchdog kills it (default: at
    /// least 10, or 5× a slow kernel's expected time).
    #[arg(long, requires = "kernel_file", value_parser = positive_seconds)]
    pub timeout: Option<f64>,
    /// Also verify the kernel on awkward shapes (1×1×1, 3×5×7, 17×33×65, 129×127×131, ...).
    #[arg(long, requires = "kernel_file")]
    pub check_shapes: bool,
}

fn positive_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 86400.0 => Ok(v),
        _ => Err(format!(
            "`{s}`: a number of seconds, above 0 and at most 86400"
        )),
    }
}

/// True in the supervised child.
pub fn in_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// Whether `args` name a kernel written in Rust (a `.rs` file), which `--backend` may place.
pub fn is_rust(args: &UserKernelArgs) -> bool {
    args.kernel_file
        .as_deref()
        .is_some_and(|p| Lang::of_path(p).ok() == Some(Lang::Rust))
}

/// Reads the kernel file and builds the kernel for `dtype` on `backend` (a `.rs` kernel is
/// generated here for CUDA or wgpu: `auto` is CUDA when the driver reports a device, else wgpu);
/// every problem with the command line (an unreadable file, a bad extension, expression or
/// define, a Rust kernel outside the subset: `file.rs:LINE:COL: message`) is an input error
/// (exit 2).
pub fn build(args: &UserKernelArgs, dtype: DType, backend: BackendChoice) -> CliResult<UserKernel> {
    let path = args
        .kernel_file
        .clone()
        .ok_or_else(|| CliError::input("--kernel-file is missing"))?;
    let lang = Lang::of_path(&path)?;
    let text = std::fs::read_to_string(&path).map_err(|e| {
        CliError::input(format!(
            "--kernel-file {}: {e}",
            matmul::error::quoted(&path)
        ))
    })?;
    let fits = matches!(
        (lang, backend),
        (_, BackendChoice::Auto)
            | (Lang::Cuda, BackendChoice::Cuda)
            | (Lang::Wgsl, BackendChoice::Wgpu)
            | (Lang::Rust, BackendChoice::Cuda | BackendChoice::Wgpu)
    );
    if !fits {
        return Err(CliError::input(format!(
            "--backend {} does not go with a {} kernel (a .cu file runs on CUDA, a .wgsl file on wgpu, a .rs file on either)",
            backend.name(),
            lang.name()
        )));
    }
    if lang == Lang::Wgsl && (args.block.is_some() || args.shared.is_some()) {
        return Err(CliError::input(
            "--block and --shared apply to .cu kernels: a WGSL kernel sets @workgroup_size and declares var<workgroup> itself",
        ));
    }
    let mut defines: Vec<(String, String)> = Vec::new();
    for d in &args.define {
        let (k, v) = d.split_once('=').unwrap_or((d.as_str(), "1"));
        defines.push((k.trim().to_string(), v.trim().to_string()));
    }
    let (entry, grid, block) = match lang {
        Lang::Rust => {
            let given = [
                (args.entry.is_some(), "--entry"),
                (args.block.is_some(), "--block"),
                (args.shared.is_some(), "--shared"),
            ];
            if let Some((_, opt)) = given.iter().find(|(g, _)| *g) {
                return Err(CliError::input(format!(
                    "{opt} does not apply to a .rs kernel: its #[kernel(X, Y)] attribute sets the block, its function is the entry, its shared arrays are static (docs/rust-kernels.md)"
                )));
            }
            let g = matmul::user::generate_rust(&path, &text)?;
            // The constants it names, at their defaults unless -D gives them.
            for (name, value) in matmul::user::RUST_CONSTANTS {
                if g.constants.iter().any(|c| c == name) && !defines.iter().any(|(k, _)| k == name)
                {
                    defines.push((name.to_string(), value.to_string()));
                }
            }
            let (grid, block) = matmul::user::rust_launch(&g);
            (g.name, args.grid.clone().unwrap_or(grid), block)
        }
        _ => {
            let entry = match (&args.entry, lang) {
                (Some(e), _) => e.clone(),
                (None, Lang::Wgsl) => "main".to_string(),
                (None, _) => std::path::Path::new(&path)
                    .file_stem()
                    .map(|s| s.to_string_lossy().replace('-', "_"))
                    .unwrap_or_default(),
            };
            let grid = args
                .grid
                .clone()
                .unwrap_or_else(|| DEFAULT_GRID.to_string());
            (entry, grid, args.block.clone().unwrap_or("16,16".into()))
        }
    };
    let dims = |what: &str, text: &str| {
        Expr::parse_dims(text).map_err(|why| CliError::input(format!("{what} `{text}`: {why}")))
    };
    let kernel = UserKernel {
        path,
        text,
        lang,
        entry,
        dtype,
        defines,
        grid: dims("--grid", &grid)?,
        block: dims("--block", &block)?,
        shared: Expr::parse(args.shared.as_deref().unwrap_or("0")).map_err(|why| {
            CliError::input(format!(
                "--shared `{}`: {why}",
                args.shared.as_deref().unwrap_or("")
            ))
        })?,
        zero_c: args.zero_c,
    };
    kernel.validate()?;
    if lang != Lang::Rust {
        return Ok(kernel);
    }
    let target = match backend {
        BackendChoice::Cuda => Lang::Cuda,
        BackendChoice::Wgpu => Lang::Wgsl,
        _ if matmul::cuda::list_devices().is_ok_and(|d| !d.is_empty()) => Lang::Cuda,
        _ => Lang::Wgsl,
    };
    Ok(kernel.generated_for(target)?)
}

/// The grid of a .cu or .wgsl kernel when --grid is not given: one 16×16 block per 16×16 tile of C.
const DEFAULT_GRID: &str = "cdiv(N,16),cdiv(M,16)";

/// The parent's side: re-executes this binary with the same arguments as a child, kills it
/// when an armed wait outlives its limit, and exits with the child's status.
pub fn supervise(kernel: &UserKernel) -> CliResult {
    let exe = std::env::current_exe()
        .map_err(|e| CliError::failure(format!("cannot find this program to re-run it: {e}")))?;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe() writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(CliError::failure(format!(
            "pipe: {}",
            std::io::Error::last_os_error()
        )));
    }
    let (rd, wr) = (fds[0], fds[1]);
    // The read end stays here only.
    // SAFETY: `rd` is ours; FD_CLOEXEC keeps it out of the child.
    unsafe { libc::fcntl(rd, libc::F_SETFD, libc::FD_CLOEXEC) };
    let spawned = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(CHILD_ENV, wr.to_string())
        .spawn();
    // SAFETY: `wr` is ours; the child has its copy.
    unsafe { libc::close(wr) };
    let mut child =
        spawned.map_err(|e| CliError::failure(format!("cannot start the child process: {e}")))?;
    // (deadline, limit in seconds, what is waited on)
    type Armed = Option<(Instant, f64, String)>;
    let armed: Arc<Mutex<Armed>> = Arc::new(Mutex::new(None));
    let a = armed.clone();
    std::thread::spawn(move || {
        // SAFETY: `rd` is a pipe's read end owned by this thread from here on.
        let file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(rd) };
        for line in BufReader::new(file).lines() {
            let Ok(line) = line else { break };
            let mut slot = a.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(rest) = line.strip_prefix("arm ") {
                let (secs, what) = rest.split_once(' ').unwrap_or((rest, "the kernel"));
                if let Ok(s) = secs.parse::<f64>() {
                    *slot = Some((
                        Instant::now() + Duration::from_secs_f64(s),
                        s,
                        what.to_string(),
                    ));
                }
            } else if line == "disarm" {
                *slot = None;
            }
        }
    });
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return child_status(kernel, status),
            Ok(None) => {}
            Err(e) => return Err(CliError::failure(format!("waiting for the child: {e}"))),
        }
        let expired = armed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|(deadline, _, _)| Instant::now() >= *deadline)
            .map(|(_, s, what)| (*s, what.clone()));
        if let Some((secs, what)) = expired {
            let _ = child.kill();
            let _ = child.wait();
            return Err(CliError::failure(format!(
                "{what} did not finish within {secs:.1} s: the watchdog killed it (an endless loop? --timeout SECONDS sets the limit)"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn child_status(kernel: &UserKernel, status: std::process::ExitStatus) -> CliResult {
    if let Some(code) = status.code() {
        // The child printed its own results and messages.
        std::process::exit(code);
    }
    use std::os::unix::process::ExitStatusExt;
    let sig = status.signal().unwrap_or(0);
    Err(CliError::failure(format!(
        "the process running {} died of signal {sig}{}",
        kernel.label(),
        match sig {
            libc::SIGSEGV => " (SIGSEGV)",
            libc::SIGABRT => " (SIGABRT)",
            libc::SIGKILL => " (SIGKILL)",
            libc::SIGBUS => " (SIGBUS)",
            _ => "",
        }
    )))
}

/// The child's side of the watchdog.
struct Watchdog {
    out: Option<std::fs::File>,
    timeout: Option<f64>,
}

impl Watchdog {
    fn new(timeout: Option<f64>) -> Watchdog {
        // The child does not outlive the command that supervises it.
        #[cfg(target_os = "linux")]
        // SAFETY: prctl with PR_SET_PDEATHSIG and a signal number has no memory effects.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        }
        let out = std::env::var(CHILD_ENV)
            .ok()
            .and_then(|v| v.parse::<i32>().ok())
            // SAFETY: the parent passed us this descriptor, a pipe's write end, for this alone.
            .map(|fd| unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) });
        Watchdog { out, timeout }
    }

    /// Arms the watchdog for `launches` launches of about `expected` seconds each.
    fn arm(&mut self, what: &str, expected: f64, launches: usize) {
        let secs = self
            .timeout
            .unwrap_or_else(|| (5.0 * expected * launches as f64).max(10.0));
        if let Some(out) = &mut self.out {
            let _ = writeln!(out, "arm {secs} {what}");
            let _ = out.flush();
        }
    }

    fn disarm(&mut self) {
        if let Some(out) = &mut self.out {
            let _ = writeln!(out, "disarm");
            let _ = out.flush();
        }
    }
}

/// A slow kernel's time for `problem` (for the watchdog's default): 100 GFLOP/s on CUDA,
/// 1 GFLOP/s on wgpu (lavapipe).
fn expected_seconds(kernel: &UserKernel, problem: &Problem) -> f64 {
    let rate = match kernel.lang {
        Lang::Cuda => 1e11,
        Lang::Wgsl | Lang::Rust => 1e9,
    };
    problem.flops() / rate
}

/// The device a user kernel runs on.
enum Device {
    Cuda(Box<matmul::CudaBackend>),
    Wgpu(Box<matmul::WgpuBackend>),
}

impl Device {
    fn open(kernel: &UserKernel) -> CliResult<Device> {
        Ok(match kernel.lang {
            Lang::Cuda => match matmul::CudaBackend::new(0) {
                Ok(b) => Device::Cuda(Box::new(b)),
                Err(e) => {
                    // No device: still say whether the file compiles (NVRTC alone, sm_80), so
                    // a compile error is reported as such wherever NVRTC is.
                    let compiled = matmul::cuda::compile_source(
                        &kernel.path,
                        &kernel.text,
                        &kernel.cuda_defines(),
                        "sm_80",
                        &matmul::cuda::DiskCache::configured(),
                    );
                    if let Err(c @ matmul::Error::Compile { .. }) = compiled {
                        return Err(CliError::input(c));
                    }
                    return Err(CliError::from(e));
                }
            },
            Lang::Wgsl => Device::Wgpu(Box::new(matmul::WgpuBackend::new()?)),
            Lang::Rust => {
                return Err(CliError::failure(format!(
                    "{}: a Rust kernel runs once generated for a backend",
                    kernel.path
                )))
            }
        })
    }

    fn describe(&self) -> String {
        match self {
            Device::Cuda(b) => b.describe(),
            Device::Wgpu(b) => b.describe(),
        }
    }

    /// Compiles the kernel: an error in the user's file is an input error (exit 2) with the
    /// compiler's log.
    fn compile(&self, kernel: &UserKernel) -> CliResult {
        let r = match self {
            Device::Cuda(b) => b.user_load(kernel),
            Device::Wgpu(b) => b.user_compile(kernel).map(|_| ()),
        };
        r.map_err(|e| match e {
            matmul::Error::Compile { .. } => CliError::input(e),
            matmul::Error::Wgpu { ref context, .. } if context.starts_with("compiling") => {
                // naga calls the module `wgsl`; its lines are the file's.
                CliError::input(
                    e.to_string()
                        .replace("┌─ wgsl:", &format!("┌─ {}:", kernel.path)),
                )
            }
            matmul::Error::Cuda { ref context, .. } if context.starts_with("finding") => {
                CliError::input(format!(
                    "{e} (--entry names the kernel's extern \"C\" __global__ function)"
                ))
            }
            e => CliError::from(e),
        })
    }

    fn run(
        &self,
        kernel: &UserKernel,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
    ) -> matmul::Result<AnyMatrix> {
        match self {
            Device::Cuda(d) => d.user_run(kernel, problem, a, b),
            Device::Wgpu(d) => d.user_run(kernel, problem, a, b),
        }
    }

    fn time(
        &self,
        kernel: &UserKernel,
        problem: &Problem,
        inputs: &[Inputs],
        warmup: usize,
        iters: usize,
    ) -> matmul::Result<Vec<f64>> {
        match self {
            Device::Cuda(d) => d.user_time(kernel, problem, inputs, warmup, iters),
            Device::Wgpu(d) => d.user_time(kernel, problem, inputs, warmup, iters),
        }
    }
}

/// In the child: ends the process with `r`'s status at once, without unwinding a CUDA context a
/// faulting kernel may have left broken.
fn finish(r: CliResult) -> ! {
    let _ = std::io::stdout().flush();
    match r {
        Ok(()) => std::process::exit(0),
        Err(e) => {
            eprintln!("matmul: {}", e.message);
            std::process::exit(e.code as i32)
        }
    }
}

fn random_inputs(problem: &Problem, seed: u64) -> CliResult<(AnyMatrix, AnyMatrix)> {
    let (ar, ac) = problem.a_stored();
    let (br, bc) = problem.b_stored();
    Ok((
        AnyMatrix::generate(problem.dtype, ar, ac, Init::Random { seed })?,
        AnyMatrix::generate(
            problem.dtype,
            br,
            bc,
            Init::Random {
                seed: seed.wrapping_add(1),
            },
        )?,
    ))
}

/// Runs the kernel once on `problem` under the watchdog and compares C with `reference`.
fn run_checked(
    dev: &Device,
    dog: &mut Watchdog,
    kernel: &UserKernel,
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    reference: Option<&AnyMatrix>,
) -> CliResult<(AnyMatrix, f64, Option<verify::Verdict>)> {
    dog.arm(
        &format!("{} on {problem}", kernel.label()),
        expected_seconds(kernel, problem),
        1,
    );
    let start = Instant::now();
    let c = dev.run(kernel, problem, a, b);
    let secs = start.elapsed().as_secs_f64();
    dog.disarm();
    let c = c?;
    let verdict = reference.map(|r| verify::compare_inputs(problem, a, b, &c, r));
    Ok((c, secs, verdict))
}

fn verdict_line(v: &verify::Verdict) -> String {
    format!(
        "{}: rel. Frobenius error {:.3e} (tolerance {:.1e}), max |error| {:.3e}, {} mismatches",
        if v.passed { "PASS" } else { "FAIL" },
        v.rel_frobenius,
        v.tolerance,
        v.max_abs_err,
        v.mismatches
    )
}

/// `matmul run --kernel-file`, in the child: compiles, runs once on `problem` (C poisoned),
/// checks against `reference`, and with `--check-shapes` sweeps [`CHECK_SHAPES`].
pub fn run_child(
    args: &UserKernelArgs,
    kernel: &UserKernel,
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    reference: Option<AnyMatrix>,
    seed: u64,
) -> ! {
    finish(run_inner(args, kernel, problem, a, b, reference, seed))
}

fn run_inner(
    args: &UserKernelArgs,
    kernel: &UserKernel,
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    reference: Option<AnyMatrix>,
    seed: u64,
) -> CliResult {
    kernel.check_problem(problem)?;
    let launch = kernel.launch(problem)?;
    let dev = Device::open(kernel)?;
    dev.compile(kernel)?;
    let mut dog = Watchdog::new(args.timeout);
    println!("kernel   {} on {}", kernel.label(), dev.describe());
    match kernel.lang {
        Lang::Cuda => println!(
            "launch   grid {:?}, block {:?}, {} bytes of dynamic shared memory{}",
            launch.grid,
            launch.block,
            launch.shared,
            if kernel.zero_c { ", C zeroed" } else { "" }
        ),
        Lang::Wgsl | Lang::Rust => println!(
            "launch   {:?} workgroups{}",
            launch.grid,
            if kernel.zero_c { ", C zeroed" } else { "" }
        ),
    }
    println!("problem  {problem}");
    let (c, secs, verdict) =
        run_checked(&dev, &mut dog, kernel, problem, a, b, reference.as_ref())?;
    println!(
        "time     {:.3} ms (one call, including transfers; `matmul bench --kernel-file` times it)",
        secs * 1e3
    );
    if let AnyMatrix::U32(c) = &c {
        println!("signature {}", matmul::judge::signature(&c.data));
    }
    let mut failed = Vec::new();
    match &verdict {
        Some(v) => {
            println!("check    {}", verdict_line(v));
            if !v.passed {
                failed.push(problem.to_string());
            }
        }
        None => println!("check    skipped (m·n·k > 2^28; pass --check to force it)"),
    }
    if args.check_shapes {
        for &(m, n, k) in CHECK_SHAPES {
            let p = Problem::new(m, n, k, problem.dtype).with_ops(problem.op_a, problem.op_b);
            let (a, b) = random_inputs(&p, seed)?;
            let r = matmul::cpu::reference::matmul(&p, &a, &b)?;
            kernel.launch(&p)?;
            let (_, _, v) = run_checked(&dev, &mut dog, kernel, &p, &a, &b, Some(&r))?;
            let v = v.expect("a reference was given");
            println!(
                "shape    {:<14} {}",
                format!("{m}x{n}x{k}"),
                verdict_line(&v)
            );
            if !v.passed {
                failed.push(format!("{m}x{n}x{k}"));
            }
        }
    }
    if !failed.is_empty() {
        return Err(CliError::failure(format!(
            "{} does not match the CPU reference on {} (C was poisoned: NaN / 0xDEADBEEF marks an element never written)",
            kernel.label(),
            failed.join(", ")
        )));
    }
    Ok(())
}

/// What `matmul bench --kernel-file` measures.
pub struct BenchPlan {
    /// The shapes (m, n, k).
    pub shapes: Vec<(usize, usize, usize)>,
    /// The dtype (f32 or u32).
    pub dtype: DType,
    /// op(A), op(B).
    pub ops: (Op, Op),
    /// Untimed launches first.
    pub warmup: usize,
    /// Timed launches (None: 50 on CUDA, 5 on wgpu).
    pub iters: Option<usize>,
    /// Our kernels named by --kernels (besides cuBLAS and `auto`'s choice), or none.
    pub kernels: Vec<String>,
    /// The report directory (`--out`), made ready by the parent.
    pub out: std::path::PathBuf,
    /// `--no-ceilings`: the CUDA device's ceilings are not measured (the datasheet's still apply).
    pub no_ceilings: bool,
    /// `--no-tuned`: `auto` chooses without the `matmul tune` table.
    pub no_tuned: bool,
}

/// `matmul bench --kernel-file`, in the child: per shape, the user's kernel verified and timed
/// beside our best kernel of the dtype (`auto`'s choice), cuBLAS (CUDA) and any --kernels, by
/// the bench's runner; one table, and the report files in `--out`.
pub fn bench_child(args: &UserKernelArgs, kernel: &UserKernel, plan: &BenchPlan) -> ! {
    finish(bench_inner(args, kernel, plan))
}

/// The name of the user's kernel in the report: `file:` and the file's name (`file:mine.cu`).
pub fn record_name(kernel: &UserKernel) -> String {
    let file = std::path::Path::new(&kernel.path)
        .file_name()
        .map_or_else(|| kernel.path.clone(), |f| f.to_string_lossy().into_owned());
    format!("{}{file}", matmul_bench::KERNEL_FILE_PREFIX)
}

/// The launch options of `args` in command-line form, for the report: those given, and the grid
/// `kernel` runs with.
fn launch_options(args: &UserKernelArgs, kernel: &UserKernel) -> Vec<String> {
    let mut out = Vec::new();
    for d in &args.define {
        out.extend(["-D".to_string(), d.clone()]);
    }
    let grid = args.grid.clone().unwrap_or_else(|| {
        let mut dims: Vec<String> = kernel.grid.iter().map(|e| e.to_string()).collect();
        while dims.len() > 1 && dims.last().is_some_and(|d| d == "1") {
            dims.pop();
        }
        dims.join(",")
    });
    out.extend(["--grid".to_string(), grid]);
    if let Some(b) = &args.block {
        out.extend(["--block".to_string(), b.clone()]);
    }
    if let Some(s) = &args.shared {
        out.extend(["--shared".to_string(), s.clone()]);
    }
    if args.zero_c {
        out.push("--zero-c".into());
    }
    out
}

/// The user's kernel as the bench's runner sees it: its device, under the watchdog.
struct UserRun {
    dev: Device,
    dog: Mutex<Watchdog>,
    kernel: UserKernel,
    name: String,
    file: matmul_bench::KernelFile,
}

impl UserRun {
    /// `f` under the watchdog, armed for `launches` launches on `problem` (`what` names them).
    fn watched<T>(
        &self,
        what: &str,
        problem: &Problem,
        launches: usize,
        f: impl FnOnce() -> T,
    ) -> T {
        let mut dog = self.dog.lock().unwrap_or_else(|p| p.into_inner());
        dog.arm(
            &format!("{what}{} on {problem}", self.kernel.label()),
            expected_seconds(&self.kernel, problem),
            launches,
        );
        let r = f();
        dog.disarm();
        r
    }
}

impl matmul_bench::ExternalKernel for UserRun {
    fn name(&self) -> &str {
        &self.name
    }

    fn file(&self) -> matmul_bench::KernelFile {
        self.file.clone()
    }

    fn check(&self, problem: &Problem) -> matmul::Result<()> {
        self.kernel.check_problem(problem)?;
        self.kernel.launch(problem).map(|_| ())
    }

    fn run(&self, problem: &Problem, a: &AnyMatrix, b: &AnyMatrix) -> matmul::Result<AnyMatrix> {
        self.watched("", problem, 1, || self.dev.run(&self.kernel, problem, a, b))
    }

    fn time(
        &self,
        problem: &Problem,
        inputs: &[Inputs],
        warmup: usize,
        iters: usize,
    ) -> matmul::Result<Vec<f64>> {
        self.watched("timing ", problem, warmup + iters, || {
            self.dev.time(&self.kernel, problem, inputs, warmup, iters)
        })
    }
}

fn bench_inner(args: &UserKernelArgs, kernel: &UserKernel, plan: &BenchPlan) -> CliResult {
    use matmul_bench::{BenchConfig, BenchKernel, Status};
    let dev = Device::open(kernel)?;
    dev.compile(kernel)?;
    let iters = plan.iters.unwrap_or(match kernel.lang {
        Lang::Cuda => 50,
        Lang::Wgsl | Lang::Rust => 5,
    });
    println!("device   {}", dev.describe());
    // The user's kernel first, then ours and the vendor's, on the same device.
    let mut kernels = vec![BenchKernel::External, BenchKernel::Auto];
    if matches!(dev, Device::Cuda(_)) {
        kernels.push(BenchKernel::Named(matmul::find("cublas")?));
    }
    for name in &plan.kernels {
        let k = if name.eq_ignore_ascii_case("auto") {
            continue;
        } else if name.eq_ignore_ascii_case(matmul_bench::INT8_CEILING) {
            BenchKernel::Int8Ceiling
        } else {
            BenchKernel::Named(matmul::find(name)?)
        };
        if !kernels.iter().any(|x| x.name() == k.name()) {
            kernels.push(k);
        }
    }
    let shapes = plan
        .shapes
        .iter()
        .map(|&(m, n, k)| matmul::Shape { m, n, k })
        .collect();
    let mut config = BenchConfig::new(Vec::new(), vec![plan.dtype], shapes);
    config.kernels = kernels;
    config.ops = vec![plan.ops];
    config.warmup = plan.warmup;
    config.iters = Some(iters);
    config.min_time = None;
    let label = kernel.label();
    let user = std::sync::Arc::new(UserRun {
        dev,
        dog: Mutex::new(Watchdog::new(args.timeout)),
        kernel: kernel.clone(),
        name: record_name(kernel),
        file: matmul_bench::KernelFile {
            path: kernel.path.clone(),
            // The file's language: `rust` for a .rs kernel, whichever code it was generated into.
            lang: Lang::of_path(&kernel.path)
                .unwrap_or(kernel.lang)
                .name()
                .into(),
            entry: kernel.entry.clone(),
            options: launch_options(args, kernel),
        },
    });
    config.external = Some(matmul_bench::External(user.clone()));
    let backend: &dyn Backend = match &user.dev {
        Device::Cuda(cuda) => {
            config.use_cuda_device(cuda.info());
            if !plan.no_tuned {
                let lookup = matmul::dispatch::tune::load_table(cuda.info());
                config.tuned = lookup.found.map(|(_, table)| table);
            }
            if !plan.no_ceilings {
                eprintln!(
                    "matmul: measuring GPU ceilings for the roofline (--no-ceilings skips it)..."
                );
                config.measured_ceilings = Some(matmul_bench::measure_gpu(cuda, false)?);
            }
            cuda.as_ref()
        }
        Device::Wgpu(w) => w.as_ref(),
    };
    let report = matmul_bench::run(backend, &config, &mut |_| {});

    println!(
        "{:<16} {:<34} {:>12} {:>12} {:>10}  check",
        "shape", "kernel", "median µs", "G/s", "vs cuBLAS"
    );
    let mut wrong = Vec::new();
    let mut failed = None;
    for r in &report.records {
        let p = &r.problem;
        let shape = format!("{}x{}x{}", p.m, p.n, p.k);
        let mine = r.kernel_file.is_some();
        let name = match &r.chosen {
            _ if mine => label.clone(),
            Some(c) => format!("{c} (our best)"),
            None => r.kernel.clone(),
        };
        let reason = r.reason.clone().unwrap_or_default();
        let note = match (&r.verification, r.status) {
            (Some(v), _) if mine => if v.passed { "PASS" } else { "FAIL" }.to_string(),
            (_, Status::Ok) => "ours".into(),
            (_, Status::Skipped) => format!("skipped: {reason}"),
            (_, Status::Failed) => format!("FAILED: {reason}"),
        };
        if mine && r.status == Status::Failed {
            match &r.verification {
                Some(v) if !v.passed => wrong.push(shape.clone()),
                _ => {
                    failed.get_or_insert(format!("{label} on {shape}: {reason}"));
                }
            }
        }
        let (us, rate, vs) = match r.median_s() {
            Some(t) => (
                format!("{:.2}", t * 1e6),
                r.rate_gops.map_or("-".into(), |g| format!("{g:.1}")),
                r.vs_cublas
                    .map_or("-".into(), |v| format!("{:.1}%", 100.0 * v)),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        println!("{shape:<16} {name:<34} {us:>12} {rate:>12} {vs:>10}  {note}");
    }
    let files = matmul_bench::write_reports(&report, &plan.out).map_err(|e| {
        CliError::failure(format!(
            "cannot write the report to {}: {e}",
            plan.out.display()
        ))
    })?;
    eprintln!(
        "matmul: report written to {} (and results.json, results.csv, roofline.svg, ladder.svg, report.html beside it)",
        files.markdown.display()
    );
    if let Some(why) = failed {
        return Err(CliError::failure(why));
    }
    if !wrong.is_empty() {
        return Err(CliError::failure(format!(
            "{label} does not match the CPU reference on {}",
            wrong.join(", ")
        )));
    }
    Ok(())
}

/// `matmul new-kernel`'s arguments.
#[derive(Args)]
pub struct NewKernelArgs {
    /// The kernel's name (an identifier): the file NAME.cu, NAME.wgsl or NAME.rs and, for CUDA and
    /// Rust, its entry.
    name: String,
    /// f32 or u32.
    #[arg(long, default_value = "f32")]
    dtype: DType,
    /// Write a WGSL stub instead of CUDA C++.
    #[arg(long, conflicts_with = "rust")]
    wgsl: bool,
    /// Write a stub in the Rust subset of docs/rust-kernels.md (generated for CUDA or wgpu when it
    /// runs) instead of CUDA C++.
    #[arg(long)]
    rust: bool,
    /// The directory to write it in.
    #[arg(long, default_value = ".")]
    dir: std::path::PathBuf,
    /// Overwrite an existing file.
    #[arg(long)]
    force: bool,
}

/// `matmul new-kernel`: writes a commented stub that compiles and fails verification (it writes
/// no element of C) until its body is filled in.
pub fn new_kernel(args: NewKernelArgs) -> CliResult {
    let ok = args
        .name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && args
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
        && args.name.len() <= 64;
    if !ok {
        return Err(CliError::input(format!(
            "new-kernel {}: the name must be an identifier (letters, digits, _)",
            matmul::error::quoted(&args.name)
        )));
    }
    if !matches!(args.dtype, DType::F32 | DType::U32) {
        return Err(CliError::input(format!(
            "--dtype {}: a kernel of your own takes f32 or u32",
            args.dtype
        )));
    }
    let lang = if args.rust {
        Lang::Rust
    } else if args.wgsl {
        Lang::Wgsl
    } else {
        Lang::Cuda
    };
    let ext = match lang {
        Lang::Cuda => "cu",
        Lang::Wgsl => "wgsl",
        Lang::Rust => "rs",
    };
    let path = args.dir.join(format!("{}.{ext}", args.name));
    if path.exists() && !args.force {
        return Err(CliError::input(format!(
            "{} exists (--force overwrites it)",
            path.display()
        )));
    }
    let text = stub(&args.name, args.dtype, lang);
    if lang == Lang::Rust {
        // A name the generated code takes for itself (`main`, `int`, ...) cannot name the kernel.
        matmul::user::generate_rust(&path.display().to_string(), &text).map_err(|e| {
            CliError::input(format!(
                "new-kernel {}: {e}",
                matmul::error::quoted(&args.name)
            ))
        })?;
    }
    std::fs::write(&path, text)
        .map_err(|e| CliError::input(format!("cannot write {}: {e}", path.display())))?;
    let p = path.display();
    println!("wrote    {p}");
    println!(
        "run      matmul run --kernel-file {p} --dtype {} -m 100 -n 120 -k 70 --check-shapes",
        args.dtype
    );
    println!("         (it fails until you fill in the body; docs/own-kernels.md has the ABI)");
    Ok(())
}

/// The text of a starter kernel in `lang`.
pub fn stub(name: &str, dtype: DType, lang: Lang) -> String {
    if lang == Lang::Rust {
        return format!(
            "// {name}: your matmul kernel in Rust, {dtype}: the subset of docs/rust-kernels.md, which matmul
// generates into CUDA C++ (on a CUDA device, or --backend cuda) or WGSL (--backend wgpu).
// Puzzle: C (M×N) = A (M×K) · B (K×N). Fill in the body.
//
// In scope, all u32: m, n, k (M, N, K); a_rs, a_cs, b_rs, b_cs, the operands' strides; TILE
// (-D TILE=..., 16 by default). Element (i, l) of A is a[i * a_rs + l * a_cs], element (l, j) of
// B is b[l * b_rs + j * b_cs] (the strides make --transpose-a/-b free: never assume a_cs == 1);
// C is dense: c[i * n + j].
// The subset: let, let mut, =, +=, -=, *=, if / else, for v in lo..hi, c[i] = e; integer
// literals, + - * / %, comparisons, &&, ||, !; a[i], b[i], zero() (T's zero); thread_x(),
// thread_y(), block_x(), block_y(), global_x(); let s = shared::<T>(LEN); and superstep() (a
// barrier). A value that reads an element or is zero() is of the element type T, else u32;
// mixing them is an error, reported at its line and column.
// Launch: #[kernel(X, Y)] is the block (workgroup) and the default grid cdiv(N,X),cdiv(M,Y), so
// thread (x, y) of the grid owns C[y][x]. C arrives poisoned (NaN / 0xDEADBEEF): write every
// element you own, and none past the edges.
// Run: matmul run --kernel-file {name}.rs --dtype {dtype} -m 100 -n 120 -k 70 --check-shapes

#[kernel(TILE, TILE)]
fn {name}(a: &[T], b: &[T], c: &mut [T]) {{
    let i = block_y() * TILE + thread_y(); // the row of C this thread owns
    let j = block_x() * TILE + thread_x(); // its column
    if i < m && j < n {{
        let mut acc = zero();
        // TODO: for l in 0..k, add A[i][l] * B[l][j] to acc; then store acc in c[i * n + j].
    }}
}}
"
        );
    }
    if lang == Lang::Wgsl {
        format!(
            "// {name}: your matmul kernel in WGSL, {dtype} (docs/own-kernels.md).
// Puzzle: C (M×N) = A (M×K) · B (K×N). Fill in the body of `main`.
//
// matmul appends the declarations this file uses (do not declare them):
//   alias T = f32 or u32 (the --dtype);
//   a: array<T> (A), b: array<T> (B), c: array<T> (C, read_write), p: Params (uniform);
//   p.m, p.n, p.k: M, N, K; p.a_rs, p.a_cs, p.b_rs, p.b_cs: the operands' strides;
//   every -D NAME=VALUE as `const NAME = VALUE;`.
// Indexing: element (i, l) of A is a[i * p.a_rs + l * p.a_cs], element (l, j) of B is
// b[l * p.b_rs + j * p.b_cs] (the strides make --transpose-a/-b free: never assume a_cs = 1);
// C is dense: c[i * p.n + j].
// Launch: `--grid` workgroups (default cdiv(N,16),cdiv(M,16)) of 16×16 invocations (below), so
// invocation gid = (x, y) owns C[y][x]. C arrives poisoned (NaN / 0xDEADBEEF): write every
// element you own, and none past the edges.
// Run: matmul run --kernel-file {name}.wgsl --dtype {dtype} -m 100 -n 120 -k 70 --check-shapes

@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let i = gid.y; // the row of C this invocation owns
    let j = gid.x; // its column
    if (i >= p.m || j >= p.n) {{
        return; // past the edge of C: nothing to do
    }}
    var acc = T(0);
    // TODO: for l in 0..p.k, add A[i][l] * B[l][j] to acc; then store acc in c[i * p.n + j].
}}
"
        )
    } else {
        format!(
            "// {name}: your matmul kernel in CUDA C++, {dtype} (docs/own-kernels.md).
// Puzzle: C (M×N) = A (M×K) · B (K×N). Fill in the body.
//
// ELEM is the element type, set by matmul: float (f32) or unsigned int (u32, wrapping).
// Indexing: element (i, l) of A is A[i * a_rs + l * a_cs], element (l, j) of B is
// B[l * b_rs + j * b_cs] (the strides make --transpose-a/-b free: never assume a_cs = 1);
// C is dense: C[i * N + j].
// Launch: the defaults of `matmul run --kernel-file` are --block 16,16 and
// --grid \"cdiv(N,16),cdiv(M,16)\", so thread (x, y) of the grid owns C[y][x]. Give your own
// with --grid/--block/--shared (expressions of M, N, K and -D defines). C arrives poisoned
// (NaN / 0xDEADBEEF): write every element you own, and none past the edges.
// Run: matmul run --kernel-file {name}.cu --dtype {dtype} -m 100 -n 120 -k 70 --check-shapes

extern \"C\" __global__ void {name}(const ELEM* __restrict__ A, const ELEM* __restrict__ B,
                                   ELEM* __restrict__ C, int M, int N, int K,
                                   int a_rs, int a_cs, int b_rs, int b_cs)
{{
    int row = blockIdx.y * blockDim.y + threadIdx.y;  // the row of C this thread owns
    int col = blockIdx.x * blockDim.x + threadIdx.x;  // its column
    if (row >= M || col >= N)
        return;  // past the edge of C: nothing to do
    ELEM sum = 0;
    // TODO: for l in 0..K, add A[row][l] * B[l][col] to sum; then store sum in C[row * N + col].
    (void)sum;
}}
"
        )
    }
}

/// A user's kernel opened in the child for a series of products (`matmul judge --kernel-file`).
pub struct Session {
    dev: Device,
    dog: Watchdog,
    kernel: UserKernel,
}

impl Session {
    /// Opens the device and compiles the kernel (a compile error is exit status 2).
    pub fn open(args: &UserKernelArgs, kernel: UserKernel) -> CliResult<Session> {
        let dev = Device::open(&kernel)?;
        dev.compile(&kernel)?;
        Ok(Session {
            dev,
            dog: Watchdog::new(args.timeout),
            kernel,
        })
    }

    /// The kernel and its device, for messages.
    pub fn describe(&self) -> String {
        format!("{} on {}", self.kernel.label(), self.dev.describe())
    }

    /// The judge's signature of C = A·B for `case`, on the user's u32 kernel, under the watchdog.
    pub fn case_signature(
        &mut self,
        case: &matmul::judge::Case,
        generator: matmul::judge::Generator,
    ) -> CliResult<u32> {
        let (a, b) = matmul::judge::inputs(case, generator)?;
        let n = case.n as usize;
        let problem = Problem::new(n, n, n, DType::U32);
        self.kernel.check_problem(&problem)?;
        self.kernel.launch(&problem)?;
        let (a, b) = (AnyMatrix::U32(a), AnyMatrix::U32(b));
        let (c, _, _) = run_checked(
            &self.dev,
            &mut self.dog,
            &self.kernel,
            &problem,
            &a,
            &b,
            None,
        )?;
        match c {
            AnyMatrix::U32(c) => Ok(matmul::judge::signature(&c.data)),
            _ => Err(CliError::failure("the kernel returned a C that is not u32")),
        }
    }
}

/// In the child: ends the process with `r`'s status (see [`finish`]).
pub fn finish_child(r: CliResult) -> ! {
    finish(r)
}
