//! Running a benchmark: for every dtype × shape × kernel, check it can run, verify it, time it.

use matmul::{
    AnyMatrix, Backend, COut, DType, Init, Inputs, KernelSpec, Op, Precision, Problem, RunOptions,
    Shape,
};

use crate::ceilings::{datasheet, Ceilings};
use crate::check::Reference;
use crate::report::{
    Baselines, KernelFile, Record, Report, Settings, Status, Timing, INT8_CEILING, SCHEMA_VERSION,
};
use crate::stats::Stats;
use crate::suite::Suite;
use crate::system::SystemInfo;

mod precompile;
use crate::fmt::parse_size;
pub use crate::plan::{BenchKernel, PlanEntry};
pub use precompile::{precompile, CompileUnit};

/// Timed launches when neither `iters` nor `min_time` is given.
pub const DEFAULT_ITERS: usize = 10;

/// A kernel from outside the registry that a run verifies and times as it does its own: a
/// kernel file of the user's (`matmul bench --kernel-file`). Its record is named by
/// [`ExternalKernel::name`] and placed under its dtype's roof.
pub trait ExternalKernel {
    /// The record's kernel name (`file:mine.cu`), unlike any registry name.
    fn name(&self) -> &str;
    /// Where it comes from and how it is launched, for the record's `kernel_file`.
    fn file(&self) -> KernelFile;
    /// Whether it can run `problem`; an error skips the case, saying why.
    fn check(&self, problem: &Problem) -> matmul::Result<()>;
    /// One launch on (`a`, `b`), returning C.
    fn run(&self, problem: &Problem, a: &AnyMatrix, b: &AnyMatrix) -> matmul::Result<AnyMatrix>;
    /// `iters` timed launches after `warmup` untimed ones, launch i on `inputs[i % len]`:
    /// seconds each.
    fn time(
        &self,
        problem: &Problem,
        inputs: &[Inputs],
        warmup: usize,
        iters: usize,
    ) -> matmul::Result<Vec<f64>>;
}

/// The run's external kernel, shared (a `BenchConfig` is cloned).
#[derive(Clone)]
pub struct External(pub std::sync::Arc<dyn ExternalKernel>);

impl std::fmt::Debug for External {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "External({})", self.0.name())
    }
}

/// What to measure and how.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The kernels to run; within a problem, in this order (rotated per round).
    pub kernels: Vec<BenchKernel>,
    /// The dtypes to run every shape in.
    pub dtypes: Vec<DType>,
    /// The shapes (m × n × k) to run.
    pub shapes: Vec<Shape>,
    /// Operand transpositions to run each shape with (default: only N·N).
    pub ops: Vec<(Op, Op)>,
    /// A suite whose cases (each with its own transpositions and tags) replace `shapes` × `ops`.
    pub suite: Option<Suite>,
    /// Set (to a signal number, or any non-zero value) to stop the run after the case in
    /// progress: the report then holds the cases finished so far and says it is partial
    /// ([`Report::partial`]). The CLI sets it on SIGINT and SIGTERM.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
    /// Cases whose m·n·k is above this are skipped, saying so (a size budget, as the CPU's for a
    /// suite made for GPUs); None: no limit.
    pub max_mnk: Option<u64>,
    /// C's type (default: the accumulator, f32 or u32).
    pub c: COut,
    /// How `auto` may compute f32 products (default: accurate, 3xTF32 included).
    pub precision: Precision,
    /// Untimed launches before the timed ones.
    pub warmup: usize,
    /// Timed launches: exactly this many, or at least this many when `min_time` is also set.
    pub iters: Option<usize>,
    /// Keep timing until the timed launches add up to this many seconds (capped by `max_iters`).
    pub min_time: Option<f64>,
    /// The most timed launches of a case (all rounds together) that `min_time` may ask for; an
    /// `iters` above it is timed in full.
    pub max_iters: usize,
    /// The rotating input sets must together exceed this many bytes (pass 2 × the GPU's L2, or
    /// [`default_cpu_cache_bytes`] on the CPU).
    pub cache_bytes: usize,
    /// At most this many input sets.
    pub max_input_sets: usize,
    /// Ratio baselines; `None` picks [`Baselines::for_backend`].
    pub baselines: Option<Baselines>,
    /// Verify in full when m·n·k ≤ this, else by sampling.
    pub verify_full_limit: u64,
    /// Random entries of a sampled verification (plus the last row, last column and corners).
    pub verify_samples: usize,
    /// Seed of the inputs (set s uses seeds derived from `seed` and s).
    pub seed: u64,
    /// Ceilings measured for this device (the CPU: [`crate::ceilings::measure_cpu`]).
    pub measured_ceilings: Option<Ceilings>,
    /// Datasheet ceilings; `None` looks the device up by `Backend::describe()`.
    pub datasheet: Option<Ceilings>,
    /// GPU details for the report (name, SMs, clocks, driver, CUDA and NVRTC versions).
    pub gpu_info: Option<serde_json::Value>,
    /// Seconds one kernel × problem may spend in timed launches before its iteration count is
    /// cut (to no fewer than one); None: no limit.
    pub max_case_seconds: Option<f64>,
    /// Tilings found by `matmul tune` for this device (None: every kernel's registry default).
    pub tuned: Option<matmul::tune::TuneTable>,
    /// `auto` measures its top candidates on the first case of each shape bucket that neither
    /// `tuned` nor an earlier case has a measured choice for ([`matmul::dispatch::measure`]);
    /// what it measured is in [`BenchConfig::measured`].
    pub autotune: bool,
    /// The choices `autotune` measured in this run (shared by the clones of this config).
    pub measured: std::sync::Arc<std::sync::Mutex<Vec<matmul::tune::MeasuredChoice>>>,
    /// One tiling for every SIMT-ladder kernel of the run (overrides `tuned`).
    pub tiling: Option<matmul::Tiling>,
    /// Limits the run to these kernel × dtype pairs (each up to its size): the cases of
    /// `kernels` × problems that no entry admits are left out before the run, without a record
    /// (`bench --quick`'s handful of representative kernels). None: every case.
    pub plan: Option<Vec<PlanEntry>>,
    /// Timing rounds per problem. With R > 1 every kernel that verified is timed R times, each
    /// time for `min_time` / R seconds (or `iters` / R launches, rounded up), in an order rotated
    /// by one kernel each round; its statistics pool every round. Clock and temperature drift over
    /// a run then falls on every kernel of a problem alike instead of on whichever ran last, which
    /// is what a ratio to the vendor library needs (lab/notebook.md, "Measuring small
    /// differences").
    pub rounds: usize,
    /// The kernel [`BenchKernel::External`] runs (None: that kernel has no case).
    pub external: Option<External>,
    /// Products per case: above 1, every case is a strided batch of this many products (A, B
    /// and C contiguous), run by a [`matmul::Plan`] (one launch where the kernel takes a batch:
    /// `Plan::one_launch`; cuBLAS: `cublasGemmStridedBatchedEx`) and timed as a whole.
    pub batch: usize,
}

impl BenchConfig {
    /// Every kernel × dtype × shape (N·N) with the default settings: warmup 3, timing until
    /// 0.25 s, inputs rotated past 64 MiB, full verification up to m·n·k = 2^27.
    /// Add [`BenchKernel::Auto`] to `kernels` afterwards to run `auto` too.
    pub fn new(kernels: Vec<&'static KernelSpec>, dtypes: Vec<DType>, shapes: Vec<Shape>) -> Self {
        BenchConfig {
            kernels: kernels.into_iter().map(Into::into).collect(),
            dtypes,
            shapes,
            ops: vec![(Op::N, Op::N)],
            suite: None,
            stop: None,
            max_mnk: None,
            c: COut::Accumulator,
            precision: Precision::Accurate,
            warmup: 3,
            iters: None,
            min_time: Some(0.25),
            max_iters: 1000,
            cache_bytes: 64 << 20,
            max_input_sets: 16,
            baselines: None,
            verify_full_limit: 1 << 27,
            verify_samples: 256,
            seed: 0x5EED,
            measured_ceilings: None,
            datasheet: None,
            gpu_info: None,
            max_case_seconds: None,
            tuned: None,
            autotune: false,
            measured: Default::default(),
            tiling: None,
            plan: None,
            rounds: 1,
            external: None,
            batch: 1,
        }
    }

    /// What one timing round of a case gets, after `warmup` untimed launches: the whole budget,
    /// or with R rounds its R-th part (launches first, seconds, and the cap on launches).
    fn round_budget(&self, warmup: usize) -> Launches {
        let r = self.rounds.max(1);
        let first = match (self.iters, self.min_time) {
            (Some(i), _) => i,
            (None, Some(_)) => 1,
            (None, None) => DEFAULT_ITERS,
        };
        let max_iters = self
            .max_iters
            .max(self.iters.unwrap_or(0))
            .div_ceil(r)
            .max(1);
        Launches {
            warmup,
            first: first.div_ceil(r).clamp(1, max_iters),
            min_time: self.min_time.map(|t| t / r as f64),
            max_iters,
        }
    }

    /// The options `kernel` runs `problem` with: `tiling` for a SIMT-ladder kernel when given,
    /// else a tiling from `tuned` when one matches (the kernel, the dtype and the shape's
    /// class), else the registry's defaults.
    pub fn options_for(&self, kernel: &KernelSpec, problem: &Problem) -> RunOptions {
        let tuned = || self.tuned.as_ref()?.lookup(kernel.name, problem);
        match self.tiling.or_else(tuned) {
            Some(tiling) if kernel.tiling(&RunOptions::default()).is_some() => {
                RunOptions::tiling(tiling)
            }
            _ => RunOptions::default(),
        }
    }

    /// Sets what a CUDA device decides: input sets rotated past twice its L2 cache, and its
    /// details (name, SMs, clocks, versions) for the report.
    pub fn use_cuda_device(&mut self, info: &matmul::cuda::DeviceInfo) {
        self.cache_bytes = 2 * info.l2_bytes.max(1);
        self.gpu_info = serde_json::to_value(info).ok();
    }

    /// The name `kernel`'s records take: [`BenchKernel::name`], or the external kernel's own.
    pub fn kernel_name<'a>(&'a self, kernel: &BenchKernel) -> &'a str {
        match (kernel, &self.external) {
            (BenchKernel::External, Some(e)) => e.0.name(),
            _ => kernel.name(),
        }
    }

    /// Whether `problem` is above the run's size budget (`max_mnk`), and skipped.
    fn over_budget(&self, problem: &Problem) -> bool {
        let mnk = problem.m as u128 * problem.n as u128 * problem.k as u128;
        self.max_mnk.is_some_and(|max| mnk > max as u128)
    }

    /// Checks what the configuration asks for before anything runs, so that a run that could
    /// only skip every case is an error naming why rather than a table of skips: at least one
    /// kernel, dtype and case within the size budget; every such problem at least 1 on each side
    /// and its buffers within this machine's memory; and, unless `auto` is among the kernels
    /// (its choice depends on the backend), some kernel whose rules that need no device (dtype,
    /// shape, options) accept some problem. The device's own rules are checked per case by
    /// [`run`].
    pub fn validate(&self) -> matmul::Result<()> {
        let invalid = |what: String| Err(matmul::Error::Invalid(what));
        if self.kernels.is_empty() {
            return invalid("no kernels to benchmark".into());
        }
        if self.dtypes.is_empty() {
            return invalid("no dtypes to benchmark".into());
        }
        if self.batch == 0 {
            return invalid("a batch holds at least 1 product (--batch)".into());
        }
        if self.batch > 1 && self.rounds > 1 {
            return invalid("--batch runs one timing round (leave out --rounds)".into());
        }
        let all = self.problems();
        if all.is_empty() {
            return invalid("no shapes to benchmark".into());
        }
        let problems: Vec<Problem> = all.into_iter().filter(|p| !self.over_budget(p)).collect();
        if problems.is_empty() {
            return invalid(format!(
                "every case is above the run's size budget of {} multiply-adds (--max-mnk)",
                self.max_mnk.unwrap_or(0)
            ));
        }
        for p in &problems {
            if p.m == 0 || p.n == 0 || p.k == 0 {
                return Err(matmul::Error::BadShape(p.shape_label()));
            }
            matmul::ensure_host_memory(p, p.host_bytes()?)?;
        }
        let named: Vec<&KernelSpec> = self
            .kernels
            .iter()
            .filter_map(|k| match k {
                BenchKernel::Named(spec) => Some(*spec),
                BenchKernel::Auto | BenchKernel::Int8Ceiling | BenchKernel::External => None,
            })
            .collect();
        if named.len() < self.kernels.len() {
            return Ok(());
        }
        let mut first = None;
        for p in &problems {
            for spec in &named {
                match spec.can_run(p, None, &self.options_for(spec, p)) {
                    Ok(()) => return Ok(()),
                    Err(e) => {
                        first.get_or_insert(e);
                    }
                }
            }
        }
        match first {
            Some(e) => invalid(format!(
                "nothing would run: no kernel of the run can run any of its problems (the first refusal: {e})"
            )),
            None => Ok(()),
        }
    }

    /// The problems run, in order: dtype, then shape, then ops (or dtype, then the suite's cases).
    pub fn problems(&self) -> Vec<Problem> {
        self.cases().into_iter().map(|(p, _)| p).collect()
    }

    /// Whether `kernel` runs `problem` at all: a registry kernel only in a dtype it supports (a
    /// pair that can never apply is left out before the run, without a record, rather than
    /// skipped), and only where [`BenchConfig::plan`], when set, admits it.
    pub fn applies(&self, kernel: BenchKernel, problem: &Problem) -> bool {
        let supported = match kernel {
            BenchKernel::Named(k) => k.supports(problem.dtype),
            BenchKernel::Auto => true,
            BenchKernel::Int8Ceiling => problem.dtype == DType::U32,
            BenchKernel::External => self.external.is_some(),
        };
        supported
            && self
                .plan
                .as_ref()
                .is_none_or(|plan| plan.iter().any(|e| e.admits(kernel.name(), problem)))
    }

    /// The cases a run has, in order: each problem (with its suite tags) and the kernels that
    /// run it ([`BenchConfig::applies`]); problems no kernel runs are left out.
    pub fn planned(&self) -> Vec<(Problem, Vec<String>, Vec<BenchKernel>)> {
        self.cases()
            .into_iter()
            .filter_map(|(p, tags)| {
                let kernels: Vec<BenchKernel> = self
                    .kernels
                    .iter()
                    .copied()
                    .filter(|&k| self.applies(k, &p))
                    .collect();
                (!kernels.is_empty()).then_some((p, tags, kernels))
            })
            .collect()
    }

    /// The problems run with the tags of their suite cases (none without a suite).
    fn cases(&self) -> Vec<(Problem, Vec<String>)> {
        let mut out = Vec::new();
        for &dtype in &self.dtypes {
            if let Some(suite) = &self.suite {
                for case in &suite.cases {
                    let p = case.problem(dtype, self.c).with_precision(self.precision);
                    out.push((p, case.tags.clone()));
                }
                continue;
            }
            for s in &self.shapes {
                for &(a, b) in &self.ops {
                    let p = Problem::new(s.m, s.n, s.k, dtype)
                        .with_ops(a, b)
                        .with_c(self.c)
                        .with_precision(self.precision);
                    out.push((p, Vec::new()));
                }
            }
        }
        out
    }

    /// With `autotune` on CUDA: the run's table with the choices measured so far, after measuring
    /// `problem`'s bucket if nothing has a choice for it yet. None otherwise.
    fn autotuned_table(
        &self,
        backend: &dyn Backend,
        problem: &Problem,
    ) -> matmul::Result<Option<matmul::tune::TuneTable>> {
        if !self.autotune || backend.kind() != matmul::registry::BackendKind::Cuda {
            return Ok(None);
        }
        let mut table = self.tuned.clone().unwrap_or_default();
        let mut measured = self.measured.lock().unwrap_or_else(|e| e.into_inner());
        for c in measured.iter() {
            table.insert_choice(c.clone());
        }
        if table.choice(problem, backend.limits().as_ref()).is_none() {
            let choice = matmul::dispatch::measure::measure(
                backend,
                problem,
                Some(&table),
                matmul::dispatch::measure::TOP,
            )?;
            measured.push(choice.clone());
            table.insert_choice(choice);
        }
        Ok(Some(table))
    }

    /// `kernel` made concrete for `problem`: the registry kernel and the options it runs with.
    /// `auto` asks `matmul::dispatch` with this run's tune table; `tiling`, when set, overrides
    /// the tiling it chose for a SIMT-ladder kernel, as `matmul run --tiling` does.
    fn resolve(
        &self,
        backend: &dyn Backend,
        kernel: BenchKernel,
        problem: &Problem,
    ) -> matmul::Result<Resolved> {
        match kernel {
            BenchKernel::Named(spec) => Ok(Resolved {
                spec: Some(spec),
                opts: self.options_for(spec, problem),
                auto: false,
                external: false,
            }),
            BenchKernel::Int8Ceiling | BenchKernel::External => Ok(Resolved {
                spec: None,
                opts: RunOptions::default(),
                auto: false,
                external: matches!(kernel, BenchKernel::External),
            }),
            BenchKernel::Auto => {
                let table = self.autotuned_table(backend, problem)?;
                let choice = matmul::dispatch::auto_with_table(
                    backend,
                    problem.dtype,
                    Some(problem),
                    table.as_ref().or(self.tuned.as_ref()),
                )?;
                let simt = choice.kernel.tiling(&RunOptions::default()).is_some();
                let tiling = self.tiling.filter(|_| simt).or(choice.tiling);
                Ok(Resolved {
                    spec: Some(choice.kernel),
                    opts: RunOptions {
                        tiling,
                        ..RunOptions::default()
                    },
                    auto: true,
                    external: false,
                })
            }
        }
    }
}

/// A kernel of the run made concrete for one problem.
struct Resolved {
    /// The registry kernel that runs; None for [`BenchKernel::Int8Ceiling`] and
    /// [`BenchKernel::External`].
    spec: Option<&'static KernelSpec>,
    /// Its options.
    opts: RunOptions,
    /// Whether `auto` chose it (the record is then named `auto`).
    auto: bool,
    /// Whether it is [`BenchConfig::external`].
    external: bool,
}

/// Twice the largest CPU cache the OS reports (Linux sysfs), else 64 MiB.
pub fn default_cpu_cache_bytes() -> usize {
    let largest = (0..8)
        .filter_map(|i| {
            let path = format!("/sys/devices/system/cpu/cpu0/cache/index{i}/size");
            parse_size(std::fs::read_to_string(path).ok()?.trim())
        })
        .max();
    largest.map_or(64 << 20, |b| 2 * b)
}

/// What [`run`] reports while it works (drive a progress bar from it).
#[derive(Debug, Clone, Copy)]
pub enum ProgressEvent<'a> {
    /// Before anything runs: the number of kernel × problem cases.
    Planned {
        /// Kernel × problem cases to run.
        total: usize,
    },
    /// Case `index` (0-based) starts: checks, then verification.
    Started {
        /// The case, 0-based.
        index: usize,
        /// Cases in the run.
        total: usize,
        /// The kernel's registry name.
        kernel: &'a str,
        /// The problem it runs.
        problem: &'a Problem,
    },
    /// Case `index` verified and is being timed.
    Timing {
        /// The case, 0-based.
        index: usize,
        /// Input sets rotated among.
        input_sets: usize,
        /// Untimed launches before the timed ones.
        warmup: usize,
    },
    /// Case `index` is done, whatever its status.
    Finished {
        /// The case, 0-based.
        index: usize,
        /// Cases in the run.
        total: usize,
        /// What the case gave.
        record: &'a Record,
    },
}

/// Input sets for one problem, generated on first use and shared by every kernel.
struct InputCache {
    problem: Problem,
    sets: Vec<Inputs>,
    error: Option<String>,
    /// The expected C for set 0, computed for the first kernel that gets that far.
    reference: Option<Reference>,
}

impl InputCache {
    fn new(problem: Problem) -> Self {
        InputCache {
            problem,
            sets: Vec::new(),
            error: None,
            reference: None,
        }
    }

    fn set_bytes(&self) -> usize {
        let p = &self.problem;
        (p.m * p.k + p.k * p.n) * p.dtype.input_bytes()
    }

    /// Makes sure at least `count` sets exist; an error is remembered and returned.
    fn ensure(&mut self, count: usize, seed: u64) -> Result<(), String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let p = self.problem;
        while self.sets.len() < count {
            let s = self.sets.len() as u64;
            let base = seed ^ s.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let (ar, ac) = p.a_stored();
            let (br, bc) = p.b_stored();
            let made =
                AnyMatrix::generate(p.dtype, ar, ac, Init::Random { seed: base }).and_then(|a| {
                    AnyMatrix::generate(p.dtype, br, bc, Init::Random { seed: base ^ 1 })
                        .map(|b| Inputs { a, b })
                });
            match made {
                Ok(set) => self.sets.push(set),
                Err(e) if self.sets.is_empty() => {
                    let e = format!("cannot generate inputs: {e}");
                    self.error = Some(e.clone());
                    return Err(e);
                }
                // Fewer sets than wished for: time with what fits.
                Err(_) => break,
            }
        }
        Ok(())
    }
}

/// Runs every kernel × dtype × shape × ops case of `config` that applies
/// ([`BenchConfig::planned`]) on `backend` and returns the report (ratios and roofs filled in).
/// Never panics on a kernel's failure: it is recorded.
pub fn run(
    backend: &dyn Backend,
    config: &BenchConfig,
    progress: &mut dyn FnMut(ProgressEvent<'_>),
) -> Report {
    let cases = config.planned();
    let total = cases.iter().map(|(_, _, k)| k.len()).sum();
    progress(ProgressEvent::Planned { total });
    let mut records = Vec::with_capacity(total);
    let mut index = 0;
    let stopped = || {
        config
            .stop
            .as_ref()
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst) != 0)
    };
    let mut partial = None;
    'cases: for (problem, tags, kernels) in &cases {
        let mut cache = InputCache::new(*problem);
        let first = records.len();
        let resolved: Vec<matmul::Result<Resolved>> = kernels
            .iter()
            .map(|&k| config.resolve(backend, k, problem))
            .collect();
        for (i, (kernel, res)) in kernels.iter().zip(&resolved).enumerate() {
            if stopped() {
                // A problem's records are finished only after its last round: drop the
                // unfinished ones of a multi-round run.
                if config.rounds > 1 {
                    records.truncate(first);
                }
                partial = Some(format!(
                    "interrupted: {} of {total} cases finished",
                    records.len()
                ));
                break 'cases;
            }
            progress(ProgressEvent::Started {
                index: index + i,
                total,
                kernel: config.kernel_name(kernel),
                problem,
            });
            let mut record = match res {
                Ok(r) => bench_one(backend, config, r, &mut cache, index + i, progress),
                Err(e) => Record::unresolved(
                    config.kernel_name(kernel),
                    &backend.kind().to_string(),
                    problem,
                    format!("choosing the kernel: {e}"),
                ),
            };
            record.tags = tags.clone();
            if config.rounds <= 1 {
                progress(ProgressEvent::Finished {
                    index: index + i,
                    total,
                    record: &record,
                });
            }
            records.push(record);
        }
        if config.rounds > 1 {
            // The records of this problem are round 1; they are finished after the last round.
            let round = &mut records[first..];
            more_rounds(backend, config, &cache, &resolved, round);
            for (i, record) in round.iter().enumerate() {
                progress(ProgressEvent::Finished {
                    index: index + i,
                    total,
                    record,
                });
            }
        }
        index += kernels.len();
    }
    let describe = backend.describe();
    let mut report = Report {
        schema_version: SCHEMA_VERSION,
        system: SystemInfo::collect(
            &describe,
            &backend.kind().to_string(),
            config.gpu_info.clone(),
        ),
        settings: Settings {
            warmup: config.warmup,
            iters: config.iters,
            min_time_s: config.min_time,
            max_iters: config.max_iters,
            cache_bytes: config.cache_bytes as u64,
            max_input_sets: config.max_input_sets,
            verify_full_limit: config.verify_full_limit,
            verify_samples: config.verify_samples,
            seed: config.seed,
            rounds: config.rounds.max(1),
        },
        suite: config.suite.as_ref().map(|s| s.name.clone()),
        baselines: config
            .baselines
            .clone()
            .unwrap_or_else(|| Baselines::for_backend(backend.kind())),
        ceilings: Default::default(),
        records,
        partial,
    };
    let sheet = config.datasheet.clone().or_else(|| datasheet(&describe));
    report.apply_ceilings(config.measured_ceilings.clone(), sheet);
    report.compute_ratios();
    report
}

fn bench_one(
    backend: &dyn Backend,
    config: &BenchConfig,
    resolved: &Resolved,
    cache: &mut InputCache,
    index: usize,
    progress: &mut dyn FnMut(ProgressEvent<'_>),
) -> Record {
    let problem = cache.problem;
    let Some(kernel) = resolved.spec else {
        return match config.external.as_ref().filter(|_| resolved.external) {
            Some(ext) => bench_external(backend, config, &*ext.0, cache, index, progress),
            None => bench_int8_ceiling(backend, config, &problem, progress, index),
        };
    };
    let opts = resolved.opts;
    if config.batch > 1 {
        return bench_batched(backend, config, resolved, kernel, cache, index, progress);
    }
    let mut rec = Record::new(kernel, &problem, &opts, Status::Skipped);
    if resolved.auto {
        rec.chosen = Some(std::mem::replace(&mut rec.kernel, "auto".into()));
    }
    let check = || backend.check(kernel, &problem, opts);
    let run = |a: &AnyMatrix, b: &AnyMatrix| backend.run(kernel, &problem, a, b, opts);
    let time =
        |sets: &[Inputs], w: usize, n: usize| backend.time(kernel, &problem, sets, w, n, opts);
    verify_and_time(config, rec, cache, index, progress, &check, &run, &time)
}

/// The row of `kernel` on a strided batch of `config.batch` products of `cache.problem`
/// ([`BenchConfig::batch`]): A and B are input set 0's matrices repeated (contiguous), the plan
/// (for `auto`, `auto`'s choice for the batch: [`matmul::dispatch::auto_batched`]) is verified
/// on its last product and timed as a whole on the same buffers.
fn bench_batched(
    backend: &dyn Backend,
    config: &BenchConfig,
    resolved: &Resolved,
    kernel: &'static KernelSpec,
    cache: &mut InputCache,
    index: usize,
    progress: &mut dyn FnMut(ProgressEvent<'_>),
) -> Record {
    let problem = cache.problem;
    let count = config.batch;
    let opts = resolved.opts;
    let mut rec = Record::new(kernel, &problem, &opts, Status::Skipped).batched(count);
    let mut builder = matmul::Plan::builder(backend, problem).batch_count(count);
    builder = match (resolved.auto, opts.tiling) {
        (true, _) => builder,
        (false, Some(t)) => builder.kernel(kernel.name).tiling(t),
        (false, None) => builder.kernel(kernel.name),
    };
    let plan = match builder.build() {
        Ok(plan) => plan,
        Err(e) => {
            rec.reason = Some(e.to_string());
            return rec;
        }
    };
    if resolved.auto {
        rec.kernel = "auto".into();
        rec.chosen = Some(plan.kernel().name.to_string());
        rec.tiling = plan.tiling().map(|t| t.to_string());
    }
    let c_len = problem.m * problem.n;
    let buffers = |a: &AnyMatrix, b: &AnyMatrix| {
        let c = backend.alloc_zeroed(problem.c_dtype(), count * problem.m, problem.n)?;
        Ok::<_, matmul::Error>((
            backend.upload(&repeated(a, count)?)?,
            backend.upload(&repeated(b, count)?)?,
            c,
        ))
    };
    let run = |a: &AnyMatrix, b: &AnyMatrix| {
        let (da, db, mut dc) = buffers(a, b)?;
        plan.run_data(&da, &db, &mut dc)?;
        backend.synchronize()?;
        let all = backend.download(&dc)?;
        last_rows(&all, (count - 1) * c_len, (problem.m, problem.n))
    };
    let time = |sets: &[Inputs], w: usize, n: usize| {
        let set = sets
            .first()
            .ok_or_else(|| matmul::Error::Invalid("no input set".into()))?;
        let (da, db, mut dc) = buffers(&set.a, &set.b)?;
        plan.time(&da, &db, &mut dc, w, n)
    };
    // The batch is the working set: one input set, timed on the same buffers.
    let mut one_set = config.clone();
    one_set.max_input_sets = 1;
    verify_and_time(
        &one_set,
        rec,
        cache,
        index,
        progress,
        &|| Ok(()),
        &run,
        &time,
    )
}

/// `m`'s elements repeated `count` times, as one row (a batch's contiguous buffer).
fn repeated(m: &AnyMatrix, count: usize) -> matmul::Result<AnyMatrix> {
    fn rep<T: Clone>(data: &[T], count: usize) -> Vec<T> {
        let mut out = Vec::with_capacity(data.len() * count);
        for _ in 0..count {
            out.extend_from_slice(data);
        }
        out
    }
    let len = m.rows() * m.cols() * count;
    Ok(match m {
        AnyMatrix::F32(x) => matmul::Matrix::from_vec(1, len, rep(&x.data, count))?.into(),
        AnyMatrix::U32(x) => matmul::Matrix::from_vec(1, len, rep(&x.data, count))?.into(),
        AnyMatrix::F16(x) => matmul::Matrix::from_vec(1, len, rep(&x.data, count))?.into(),
        AnyMatrix::Bf16(x) => matmul::Matrix::from_vec(1, len, rep(&x.data, count))?.into(),
    })
}

/// The rows×cols matrix at element `at` of `m`'s data.
fn last_rows(m: &AnyMatrix, at: usize, (rows, cols): (usize, usize)) -> matmul::Result<AnyMatrix> {
    let cut = at..at + rows * cols;
    Ok(match m {
        AnyMatrix::F32(x) => matmul::Matrix::from_vec(rows, cols, x.data[cut].to_vec())?.into(),
        AnyMatrix::U32(x) => matmul::Matrix::from_vec(rows, cols, x.data[cut].to_vec())?.into(),
        AnyMatrix::F16(x) => matmul::Matrix::from_vec(rows, cols, x.data[cut].to_vec())?.into(),
        AnyMatrix::Bf16(x) => matmul::Matrix::from_vec(rows, cols, x.data[cut].to_vec())?.into(),
    })
}

/// The [`BenchKernel::External`] row of `cache.problem`: checked, verified and timed as
/// [`bench_one`] does a registry kernel, by the external kernel's own calls.
fn bench_external(
    backend: &dyn Backend,
    config: &BenchConfig,
    ext: &dyn ExternalKernel,
    cache: &mut InputCache,
    index: usize,
    progress: &mut dyn FnMut(ProgressEvent<'_>),
) -> Record {
    let problem = cache.problem;
    let rec = Record::kernel_file(
        ext.name(),
        &backend.kind().to_string(),
        &problem,
        ext.file(),
    );
    let check = || ext.check(&problem);
    let run = |a: &AnyMatrix, b: &AnyMatrix| ext.run(&problem, a, b);
    let time = |sets: &[Inputs], w: usize, n: usize| ext.time(&problem, sets, w, n);
    verify_and_time(config, rec, cache, index, progress, &check, &run, &time)
}

/// A kernel's one launch on (A, B).
type RunFn<'a> = dyn Fn(&AnyMatrix, &AnyMatrix) -> matmul::Result<AnyMatrix> + 'a;
/// A kernel's timed launches: (input sets, warm-up, timed launches) → seconds each.
type TimeFn<'a> = dyn Fn(&[Inputs], usize, usize) -> matmul::Result<Vec<f64>> + 'a;

/// The case of `rec` (a kernel on `cache.problem`): skipped when above the size budget, when
/// `check` refuses it or host memory is short; else run once on input set 0 and verified, and
/// only if right, timed on input sets rotated past the cache.
#[allow(clippy::too_many_arguments)]
fn verify_and_time(
    config: &BenchConfig,
    mut rec: Record,
    cache: &mut InputCache,
    index: usize,
    progress: &mut dyn FnMut(ProgressEvent<'_>),
    check: &dyn Fn() -> matmul::Result<()>,
    run: &RunFn<'_>,
    time: &TimeFn<'_>,
) -> Record {
    let problem = cache.problem;
    let skip = |mut rec: Record, why: String| {
        rec.status = Status::Skipped;
        rec.reason = Some(why);
        rec
    };
    let fail = |mut rec: Record, why: String| {
        rec.status = Status::Failed;
        rec.reason = Some(why);
        rec
    };
    if let Some(max) = config.max_mnk.filter(|_| config.over_budget(&problem)) {
        return skip(
            rec,
            format!("m·n·k above the run's size budget of {max} (--max-mnk)"),
        );
    }
    if let Err(e) = check() {
        return skip(rec, e.to_string());
    }
    let host = problem
        .host_bytes()
        .and_then(|b| matmul::ensure_host_memory(&problem, b));
    if let Err(e) = host {
        return skip(rec, e.to_string());
    }
    if let Err(e) = cache.ensure(1, config.seed) {
        return skip(rec, e);
    }

    // Verify before timing: a wrong kernel is never timed.
    let set0 = &cache.sets[0];
    let c = match run(&set0.a, &set0.b) {
        Ok(c) => c,
        Err(e) => return fail(rec, format!("run: {e}")),
    };
    if cache.reference.is_none() {
        match Reference::compute(
            &problem,
            &set0.a,
            &set0.b,
            config.verify_full_limit as u128,
            config.verify_samples,
            config.seed,
        ) {
            Ok(r) => cache.reference = Some(r),
            Err(e) => return fail(rec, format!("reference: {e}")),
        }
    }
    let verdict = cache
        .reference
        .as_ref()
        .map(|r| r.check(&problem, &c))
        .expect("computed above");
    drop(c);
    let passed = verdict.passed;
    let summary = verdict.summary();
    rec.verification = Some(verdict);
    if !passed {
        return fail(rec, format!("verification {summary}"));
    }

    // Rotate among enough input sets to exceed the cache.
    let set_bytes = cache.set_bytes().max(1);
    let mut wanted = config
        .cache_bytes
        .div_ceil(set_bytes)
        .clamp(1, config.max_input_sets.max(1));
    while wanted > 1
        && matmul::ensure_host_memory(&problem, wanted.saturating_mul(set_bytes)).is_err()
    {
        wanted -= 1;
    }
    if let Err(e) = cache.ensure(wanted, config.seed) {
        return fail(rec, e);
    }
    let sets = &cache.sets[..wanted.min(cache.sets.len())];
    progress(ProgressEvent::Timing {
        index,
        input_sets: sets.len(),
        warmup: config.warmup,
    });
    let time = |w: usize, n: usize| time(sets, w, n);
    let budget = config.round_budget(config.warmup);
    let timed = budgeted_launches(&time, budget, config.max_case_seconds);
    with_timing(rec, timed, sets.len(), set_bytes)
}

/// The [`BenchKernel::Int8Ceiling`] row of u32 `problem`: cuBLASLt's int8 GEMM of the same
/// m, n, k timed as [`bench_one`] times a kernel (warm-up, `min_time` or `iters`, the per-case
/// budget), its int8 input sets rotated past `cache_bytes`; no verification (it is not a u32
/// product: `CudaBackend::cublaslt_int8` is checked once by the GPU test tests/gpu_int8.rs).
fn bench_int8_ceiling(
    backend: &dyn Backend,
    config: &BenchConfig,
    problem: &Problem,
    progress: &mut dyn FnMut(ProgressEvent<'_>),
    index: usize,
) -> Record {
    let mut rec = Record::int8_ceiling(problem);
    let mut skip = |why: String| {
        rec.reason = Some(why);
        rec.clone()
    };
    if let Some(max) = config.max_mnk.filter(|_| config.over_budget(problem)) {
        return skip(format!(
            "m·n·k above the run's size budget of {max} (--max-mnk)"
        ));
    }
    if backend.kind() != matmul::BackendKind::Cuda {
        return skip(format!("{INT8_CEILING} runs on CUDA only"));
    }
    if let Some(rule) = matmul::cuda::cublaslt_int8_refusal(problem.m, problem.n, problem.k) {
        return skip(rule);
    }
    let (m, n, k) = (problem.m, problem.n, problem.k);
    let set_bytes = (m * k + n * k).max(1);
    let sets = config
        .cache_bytes
        .div_ceil(set_bytes)
        .clamp(1, config.max_input_sets.max(1));
    progress(ProgressEvent::Timing {
        index,
        input_sets: sets,
        warmup: config.warmup,
    });
    let time = |w: usize, i: usize| backend.time_int8_ceiling((m, n, k), sets, w, i);
    let budget = config.round_budget(config.warmup);
    let timed = budgeted_launches(&time, budget, config.max_case_seconds);
    with_timing(rec, timed, sets, set_bytes)
}

/// One case's launches: `budget`'s warm-up and timed launches of `time`, fewer where
/// `max_case_seconds` (`--max-case-seconds`) says a probe launch would overrun it (the seeds'
/// row-per-thread kernels at large n get fewer launches rather than hours; the count actually
/// timed is recorded). (Warm-up launches run, seconds per timed launch.)
fn budgeted_launches(
    time: &dyn Fn(usize, usize) -> matmul::Result<Vec<f64>>,
    mut launches: Launches,
    max_case_seconds: Option<f64>,
) -> matmul::Result<(usize, Vec<f64>)> {
    if let Some(seconds) = max_case_seconds {
        let per = time(0, 1)?.first().copied().unwrap_or(0.0).max(1e-9);
        if per * (launches.warmup + launches.first) as f64 > seconds {
            launches.warmup = launches.warmup.min(1);
            launches.first = ((seconds / per) as usize).clamp(1, launches.first);
        }
    }
    Ok((launches.warmup, timed_launches(time, launches)?))
}

/// `rec` with the timing of `timed` (warm-up launches, samples) over `input_sets` sets of
/// `set_bytes` each and the rates of its median: status Ok; or Failed, saying why.
fn with_timing(
    mut rec: Record,
    timed: matmul::Result<(usize, Vec<f64>)>,
    input_sets: usize,
    set_bytes: usize,
) -> Record {
    let failed = |mut rec: Record, why: String| {
        rec.status = Status::Failed;
        rec.reason = Some(why);
        rec
    };
    let (warmup, samples) = match timed {
        Ok(s) => s,
        Err(e) => return failed(rec, format!("timing: {e}")),
    };
    if unusable(&samples) {
        return failed(rec, UNUSABLE_TIME.into());
    }
    let Some(stats) = Stats::from_samples(&samples) else {
        return failed(rec, "timing returned no samples".into());
    };
    rec.timing = Some(Timing {
        warmup,
        iters: samples.len(),
        input_sets,
        input_set_bytes: set_bytes as u64,
        stats,
        samples_s: samples,
        round_medians_s: Vec::new(),
    });
    set_rates(&mut rec, stats.median);
    rec.status = Status::Ok;
    rec
}

const UNUSABLE_TIME: &str = "timing returned a negative or non-finite time";

fn unusable(samples: &[f64]) -> bool {
    samples.iter().any(|t| !t.is_finite() || *t < 0.0)
}

/// The rates of `rec` from its median launch time.
fn set_rates(rec: &mut Record, median: f64) {
    if median > 0.0 {
        rec.rate_gops = Some(rec.flops / median / 1e9);
        rec.bandwidth_gbs = Some(rec.min_bytes / median / 1e9);
    }
}

/// How one case's launches are timed: `first` timed launches after `warmup` untimed ones, then
/// more until they add up to `min_time` seconds, `max_iters` in all at most.
#[derive(Clone, Copy)]
struct Launches {
    warmup: usize,
    first: usize,
    min_time: Option<f64>,
    max_iters: usize,
}

/// `time(warmup, iters)` times one batch of launches (seconds each).
fn timed_launches(
    time: &dyn Fn(usize, usize) -> matmul::Result<Vec<f64>>,
    l: Launches,
) -> matmul::Result<Vec<f64>> {
    let mut samples = time(l.warmup, l.first)?;
    if let Some(min_time) = l.min_time {
        loop {
            let spent: f64 = samples.iter().sum();
            if spent >= min_time || samples.len() >= l.max_iters || samples.is_empty() {
                break;
            }
            let per = (spent / samples.len() as f64).max(1e-9);
            let more =
                (((min_time - spent) / per).ceil() as usize).clamp(1, l.max_iters - samples.len());
            samples.extend(time(0, more)?);
        }
    }
    Ok(samples)
}

/// Rounds 2.. of one problem's `records` (round 1, in kernel order): each round times the verified
/// kernels again in an order rotated by one kernel, then every record's statistics pool its rounds.
fn more_rounds(
    backend: &dyn Backend,
    config: &BenchConfig,
    cache: &InputCache,
    resolved: &[matmul::Result<Resolved>],
    records: &mut [Record],
) {
    let n = records.len();
    let first_round: Vec<usize> = records.iter_mut().map(start_rounds).collect();
    for r in 1..config.rounds {
        for j in 0..n {
            let i = (j + r) % n;
            if let (Status::Ok, Ok(kernel)) = (records[i].status, &resolved[i]) {
                time_round(
                    backend,
                    config,
                    kernel,
                    cache,
                    &mut records[i],
                    r,
                    first_round[i],
                );
            }
        }
    }
    for rec in records.iter_mut() {
        finish_rounds(rec);
    }
}

/// Round 1 of a multi-round case: its samples give the first round's median; returns how many
/// launches it timed (0 for a case that was not timed).
fn start_rounds(rec: &mut Record) -> usize {
    let Some(t) = rec.timing.as_mut() else {
        return 0;
    };
    t.round_medians_s = Stats::from_samples(&t.samples_s)
        .map(|s| vec![s.median])
        .unwrap_or_default();
    t.samples_s.len()
}

/// Round `r` (0-based) of a verified case: more samples with the same input sets and options.
fn time_round(
    backend: &dyn Backend,
    config: &BenchConfig,
    kernel: &Resolved,
    cache: &InputCache,
    rec: &mut Record,
    r: usize,
    first_round: usize,
) {
    let Some(timing) = rec.timing.as_ref() else {
        return;
    };
    let sets = &cache.sets[..timing.input_sets.min(cache.sets.len())];
    let (opts, spec) = (kernel.opts, kernel.spec);
    let external = config
        .external
        .as_ref()
        .filter(|_| kernel.external)
        .map(|e| &*e.0);
    // Warm-up as in round 1, which the per-case budget may have cut for a slow kernel, and no
    // more launches up front than round 1 timed.
    let mut launches = config.round_budget(timing.warmup);
    launches.first = launches.first.min(first_round.max(1));
    let p = &cache.problem;
    let int8_sets = timing.input_sets;
    let time = |w: usize, n: usize| match (spec, external) {
        (Some(k), _) => backend.time(k, p, sets, w, n, opts),
        (None, Some(ext)) => ext.time(p, sets, w, n),
        (None, None) => backend.time_int8_ceiling((p.m, p.n, p.k), int8_sets, w, n),
    };
    match timed_launches(&time, launches) {
        Ok(samples) => {
            let t = rec.timing.as_mut().expect("checked above");
            if let Some(s) = Stats::from_samples(&samples) {
                t.round_medians_s.push(s.median);
            }
            t.samples_s.extend(samples);
        }
        Err(e) => {
            rec.status = Status::Failed;
            rec.reason = Some(format!("timing (round {}): {e}", r + 1));
        }
    }
}

/// After the last round: statistics and rates over every round's samples.
fn finish_rounds(rec: &mut Record) {
    if rec.status != Status::Ok {
        return;
    }
    let Some(t) = rec.timing.as_mut() else { return };
    if unusable(&t.samples_s) {
        rec.status = Status::Failed;
        rec.reason = Some(UNUSABLE_TIME.into());
        return;
    }
    if let Some(stats) = Stats::from_samples(&t.samples_s) {
        t.stats = stats;
        t.iters = t.samples_s.len();
        set_rates(rec, stats.median);
    }
}

#[cfg(test)]
mod tests;
