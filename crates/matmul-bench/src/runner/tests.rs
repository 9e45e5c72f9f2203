//! The runner's tests, over a fake backend.
use std::sync::Mutex;

use matmul::cpu::CpuBackend;
use matmul::registry::{BackendKind, DeviceLimits};

use super::*;
use crate::check::VerifyMethod;
use crate::tests::{check_xml, cpu_kernels, small_config};

#[test]
fn sizes_parse() {
    assert_eq!(parse_size("16384K"), Some(16 << 20));
    assert_eq!(parse_size("32M"), Some(32 << 20));
    assert_eq!(parse_size("512"), Some(512));
    assert_eq!(parse_size("x"), None);
    assert!(default_cpu_cache_bytes() >= 1 << 10);
}

#[test]
fn options_follow_the_override_then_the_tune_table() {
    let warptile = matmul::find("warptile").unwrap();
    let tiled = matmul::find("tiled").unwrap();
    let p = Problem::square(4096, DType::F32);
    let mut c = BenchConfig::new(vec![], vec![DType::F32], vec![]);
    assert_eq!(c.options_for(warptile, &p), RunOptions::default());
    let tuned = matmul::Tiling::block(64, 64, 16, 4, 4).warps(64, 32, 1);
    let mut table = matmul::tune::TuneTable::default();
    table.insert(matmul::tune::TuneEntry {
        kernel: "warptile".into(),
        dtype: DType::F32,
        class: matmul::tune::ShapeClass::of(&p),
        shape: p.shape_label(),
        tiling: tuned,
        rate_gops: 1.0,
        default_rate_gops: 1.0,
    });
    c.tuned = Some(table);
    assert_eq!(c.options_for(warptile, &p), RunOptions::tiling(tuned));
    assert_eq!(
        c.options_for(warptile, &Problem::square(512, DType::F32)),
        RunOptions::default()
    );
    let forced = matmul::Tiling::block(128, 128, 8, 8, 8);
    c.tiling = Some(forced);
    assert_eq!(c.options_for(warptile, &p), RunOptions::tiling(forced));
    assert_eq!(c.options_for(tiled, &p), RunOptions::default());
}

#[test]
fn round_budget_times_every_asked_launch() {
    let mut c = BenchConfig::new(vec![], vec![DType::F32], vec![]);
    c.iters = Some(5000);
    c.min_time = None;
    let b = c.round_budget(3);
    assert_eq!((b.first, b.max_iters), (5000, 5000));
    c.rounds = 30;
    let b = c.round_budget(3);
    assert_eq!((b.first, b.max_iters), (167, 167));
    // --min-time alone stops at max_iters, 1000 unless raised.
    c.iters = None;
    c.min_time = Some(5.0);
    c.rounds = 1;
    assert_eq!(c.round_budget(3).max_iters, 1000);
    c.max_iters = 100_000;
    assert_eq!(c.round_budget(3).max_iters, 100_000);
}

#[test]
fn problems_cross_dtypes_shapes_ops() {
    let mut c = BenchConfig::new(
        vec![],
        vec![DType::F32, DType::U32],
        vec![Shape { m: 2, n: 3, k: 4 }],
    );
    c.ops = vec![(Op::N, Op::N), (Op::T, Op::N)];
    let p = c.problems();
    assert_eq!(p.len(), 4);
    assert_eq!(
        p[1],
        Problem::new(2, 3, 4, DType::F32).with_ops(Op::T, Op::N)
    );
    assert_eq!(p[2].dtype, DType::U32);
}

/// A run that could only skip every case is refused before it starts, naming why.
#[test]
fn validate_refuses_a_run_that_nothing_could_run() {
    let cpu = matmul::find("cpu").unwrap();
    let wgmma = matmul::find("wgmma").unwrap();
    let shape = |m, n, k| Shape { m, n, k };
    let config = |kernels, dtypes, shapes| BenchConfig::new(kernels, dtypes, shapes);
    let err = |c: &BenchConfig| c.validate().unwrap_err().to_string();
    assert!(config(vec![cpu], vec![DType::F32], vec![shape(8, 8, 8)])
        .validate()
        .is_ok());
    assert_eq!(
        err(&config(vec![], vec![DType::F32], vec![shape(8, 8, 8)])),
        "no kernels to benchmark"
    );
    assert_eq!(
        err(&config(vec![cpu], vec![DType::F32], vec![shape(0, 4, 4)])),
        "bad shape `0x4x4` (expected MxNxK or N, positive integers)"
    );
    let huge = err(&config(
        vec![cpu],
        vec![DType::F32],
        vec![shape(1 << 20, 1 << 20, 1 << 20)],
    ));
    assert!(
        huge.contains("bytes of host memory") || huge.contains("too large"),
        "{huge}"
    );
    // A kernel without the dtype: nothing would run.
    let e = err(&config(
        vec![wgmma],
        vec![DType::U32],
        vec![shape(64, 64, 64)],
    ));
    assert!(
        e.starts_with("nothing would run") && e.contains("dtype u32 is not supported"),
        "{e}"
    );
    // ... but one case that runs is enough, and `auto` is left to the backend.
    assert!(
        config(vec![wgmma, cpu], vec![DType::U32], vec![shape(64, 64, 64)])
            .validate()
            .is_ok()
    );
    let mut auto = config(vec![], vec![DType::U32], vec![shape(64, 64, 64)]);
    auto.kernels.push(BenchKernel::Auto);
    assert!(auto.validate().is_ok());
    // Every case above the size budget.
    let mut c = config(vec![cpu], vec![DType::F32], vec![shape(64, 64, 64)]);
    c.max_mnk = Some(1000);
    assert!(err(&c).contains("size budget of 1000"), "{}", err(&c));
}

/// What [`TestBackend::run`] does with the CPU backend's result.
#[derive(Clone, Copy, PartialEq)]
enum RunMode {
    Correct,
    /// One element of the last row changed (the sampled check reads all of it).
    Corrupt,
    /// An error instead of a result.
    Error,
}

/// The CPU backend with switches: `run` per [`RunMode`]; `time` logs the kernels it timed and,
/// when `synthetic`, answers call c (1-based) with `iters` copies of c ms instead of timing, so
/// every round of a case has its own median.
struct TestBackend {
    mode: RunMode,
    synthetic: bool,
    /// When set, every launch of a kernel on a problem takes this many seconds.
    fixed: Option<fn(&str, &Problem) -> f64>,
    timed: Mutex<Vec<&'static str>>,
}

impl TestBackend {
    fn new(mode: RunMode, synthetic: bool) -> Self {
        TestBackend {
            mode,
            synthetic,
            fixed: None,
            timed: Default::default(),
        }
    }
}

impl Backend for TestBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }
    fn describe(&self) -> String {
        "test backend".into()
    }
    fn limits(&self) -> Option<DeviceLimits> {
        None
    }
    fn run(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
        opts: RunOptions,
    ) -> matmul::Result<AnyMatrix> {
        if self.mode == RunMode::Error {
            return Err(matmul::Error::Invalid("launch failed (simulated)".into()));
        }
        let mut c = CpuBackend.run(kernel, problem, a, b, opts)?;
        if self.mode == RunMode::Corrupt {
            match &mut c {
                AnyMatrix::F32(m) => m.data[(problem.m - 1) * problem.n + 1] += 1.0,
                AnyMatrix::U32(m) => m.data[(problem.m - 1) * problem.n + 1] ^= 4,
                _ => unreachable!(),
            }
        }
        Ok(c)
    }
    fn time(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        inputs: &[Inputs],
        warmup: usize,
        iters: usize,
        opts: RunOptions,
    ) -> matmul::Result<Vec<f64>> {
        let mut timed = self.timed.lock().unwrap();
        timed.push(kernel.name);
        if let Some(time) = self.fixed {
            return Ok(vec![time(kernel.name, problem); iters]);
        }
        if self.synthetic {
            return Ok(vec![timed.len() as f64 * 1e-3; iters]);
        }
        CpuBackend.time(kernel, problem, inputs, warmup, iters, opts)
    }
}

#[test]
fn a_wrong_or_erroring_kernel_is_failed_and_not_timed() {
    for error in [false, true] {
        let mode = if error {
            RunMode::Error
        } else {
            RunMode::Corrupt
        };
        let backend = TestBackend::new(mode, false);
        let mut config = small_config(cpu_kernels());
        config.verify_full_limit = if error { 1 << 27 } else { 0 }; // exercise the sampled check too
        let report = run(&backend, &config, &mut |_| {});
        assert!(
            backend.timed.lock().unwrap().is_empty(),
            "a failed kernel must not be timed"
        );
        assert_eq!(report.records.len(), 8);
        for r in &report.records {
            assert_eq!(r.status, Status::Failed, "{r:?}");
            assert!(r.timing.is_none() && r.rate_gops.is_none() && r.vs_naive.is_none());
            let reason = r.reason.as_deref().unwrap();
            if error {
                assert!(reason.contains("simulated"), "{reason}");
                assert!(r.verification.is_none());
            } else {
                assert!(reason.starts_with("verification FAILED"), "{reason}");
                let v = r.verification.as_ref().unwrap();
                assert!(!v.passed && v.mismatches >= 1);
                assert_eq!(v.method, VerifyMethod::Sampled);
            }
        }
        let table = report.table();
        assert_eq!(
            table.lines().filter(|l| l.starts_with("FAILED ")).count(),
            8
        );
        assert!(check_xml(&report.roofline_svg()).is_ok());
        assert_eq!(report.roofline_svg().matches(r#"class="point""#).count(), 0);
    }
}

#[test]
fn large_products_are_verified_by_sampling() {
    let mut config = small_config(cpu_kernels());
    config.shapes = vec![Shape {
        m: 17,
        n: 33,
        k: 65,
    }];
    config.verify_full_limit = 17 * 33 * 65 - 1;
    config.verify_samples = 16;
    let report = run(&CpuBackend, &config, &mut |_| {});
    assert_eq!(report.records.len(), 4);
    for r in &report.records {
        assert_eq!(r.status, Status::Ok, "{r:?}");
        let v = r.verification.as_ref().unwrap();
        assert_eq!(v.method, VerifyMethod::Sampled);
        // 16 random entries at most, plus the last row (33) and column (17) sharing a corner.
        assert!(
            v.checked >= 33 + 17 - 1 && v.checked <= 33 + 17 + 16 + 3,
            "{v:?}"
        );
    }
}

#[test]
fn rounds_interleave_the_kernels_and_pool_their_samples() {
    let backend = TestBackend::new(RunMode::Correct, true);
    let mut config = small_config(cpu_kernels());
    config.dtypes = vec![DType::F32];
    config.shapes.truncate(1);
    config.iters = Some(6);
    config.rounds = 3;
    let report = run(&backend, &config, &mut |_| {});
    // Round 1 in registry order, then rotated by one kernel per round.
    assert_eq!(
        *backend.timed.lock().unwrap(),
        [
            "cpu",
            "cpu-reference",
            "cpu-reference",
            "cpu",
            "cpu",
            "cpu-reference"
        ]
    );
    assert_eq!(report.settings.rounds, 3);
    assert_eq!(report.records.len(), 2);
    for (r, calls) in report
        .records
        .iter()
        .zip([[1.0, 4.0, 5.0], [2.0, 3.0, 6.0]])
    {
        assert_eq!(r.status, Status::Ok, "{r:?}");
        let t = r.timing.as_ref().unwrap();
        // iters 6 over 3 rounds: 2 launches a round, each round's own time.
        assert_eq!(t.iters, 6);
        let medians: Vec<f64> = calls.iter().map(|c| c * 1e-3).collect();
        assert_eq!(t.round_medians_s, medians, "{}", r.kernel);
        // The statistics pool every round: the median of six samples, two of each round.
        assert!((t.stats.median - medians[1]).abs() < 1e-12, "{}", r.kernel);
        assert!((r.rate_gops.unwrap() - r.flops / medians[1] / 1e9).abs() < 1e-6);
    }
    // The table's spread: (5 − 1) / 4 for `cpu`, (6 − 2) / 3 for `cpu-reference`.
    let table = report.table();
    assert!(
        table.lines().next().unwrap().trim_end().ends_with("spread"),
        "{table}"
    );
    assert!(table.contains("100%") && table.contains("133%"), "{table}");
    // One round: no per-round medians in the record.
    config.rounds = 1;
    let single = run(&backend, &config, &mut |_| {});
    assert!(single
        .records
        .iter()
        .all(|r| r.timing.as_ref().unwrap().round_medians_s.is_empty()));
    assert!(!single.table().contains("spread"));
}

/// `auto` runs the library's choice (on the CPU: `cpu`) per suite case and is recorded as
/// `auto` with its choice and the case's tags; the summary takes geometric means and worst
/// cases against the baseline, overall and per tag.
#[test]
fn auto_and_a_suite_are_recorded_and_summarised() {
    let mut backend = TestBackend::new(RunMode::Correct, false);
    // Ours takes m ms, the baseline 8 ms: ratios 8/m.
    backend.fixed = Some(|kernel, p| match kernel {
        "cpu-reference" => 8e-3,
        _ => p.m as f64 * 1e-3,
    });
    let suite = crate::suite::Suite::parse(
        "mini",
        "mini.txt",
        "8 square\n16x8x4 --transpose-a small-m # ratio 0.5\n32x4x2 square small-m\n",
    )
    .unwrap();
    let mut config = small_config(vec![matmul::find("cpu-reference").unwrap()]);
    config.kernels.insert(0, BenchKernel::Auto);
    config.dtypes = vec![DType::F32];
    config.suite = Some(suite);
    config.rounds = 2;
    config.baselines = Some(Baselines {
        vendor: Some("cpu-reference".into()),
        naive: None,
    });
    assert_eq!(config.problems().len(), 3);
    let report = run(&backend, &config, &mut |_| {});
    assert_eq!(report.suite.as_deref(), Some("mini"));
    assert_eq!(report.records.len(), 6);
    let auto: Vec<&Record> = report
        .records
        .iter()
        .filter(|r| r.kernel == "auto")
        .collect();
    assert_eq!(auto.len(), 3);
    for r in &auto {
        assert_eq!(r.status, Status::Ok, "{r:?}");
        assert_eq!(
            (r.chosen.as_deref(), r.tiling.as_deref()),
            (Some("cpu"), None)
        );
        assert_eq!(r.label(), "auto (cpu)");
        assert_eq!(r.vs_cublas, Some(8.0 / r.problem.m as f64));
    }
    assert_eq!(auto[1].problem.op_a, Op::T);
    assert_eq!(auto[1].tags, ["small-m"]);
    assert_eq!(
        report.records[1].tags,
        ["square"],
        "the baseline's record too"
    );

    let summary = report.summary().unwrap();
    assert_eq!(summary.baseline, "cpu-reference");
    assert_eq!(summary.tags, ["square", "small-m"]);
    assert_eq!(summary.rows.len(), 1);
    let row = &summary.rows[0];
    assert_eq!((row.dtype, row.kernel.as_str()), (DType::F32, "auto"));
    let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-9;
    assert!(close(row.all.geomean, (1.0f64 * 0.5 * 0.25).cbrt()));
    assert_eq!(row.all.worst, Some((0.25, "32x4x2".to_string())));
    assert!(close(row.by_tag[0].geomean, 0.5));
    assert!(close(row.by_tag[1].geomean, (0.5f64 * 0.25).sqrt()));
    assert_eq!(row.by_tag[1].cases, 2);

    let json = report.to_json().unwrap();
    assert!(json.contains("\"chosen\": \"cpu\"") && json.contains("\"suite\": \"mini\""));
    assert_eq!(Report::from_json(&json).unwrap(), report);
    let table = report.table();
    assert!(table.contains("auto (cpu)"), "{table}");
    let summary_line = table.lines().find(|l| l.starts_with("f32")).unwrap_or("");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("dtype") && l.contains("worst case")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("f32") && l.contains("0.50×")),
        "{summary_line}\n{table}"
    );
    let md = report.to_markdown("roofline.svg");
    assert!(md.contains("## Suite summary"), "{md}");
    assert!(
        md.contains("| f32 | auto | 3 | 0.50× | 0.25× | 32x4x2 | 0.50× (0.25×) | 0.35× (0.25×) |"),
        "{md}"
    );
    let html = report.to_html();
    assert!(html.contains("<h2>Suite summary</h2>") && html.contains("<td>32x4x2</td>"));

    // A kernel that was not timed on a problem the baseline timed is counted as missing.
    let mut failed = report.clone();
    failed.records[2].status = Status::Failed;
    let row = failed.summary().unwrap().rows.remove(0);
    assert_eq!((row.all.cases, row.all.missing), (2, 1));
    assert_eq!(row.all.cases_text(), "2 of 3");
    assert_eq!(row.by_tag[1].missing, 1);

    // A size budget skips the larger cases for every kernel, saying why; a case the baseline
    // did not time does not count.
    config.max_mnk = Some(300);
    let report = run(&backend, &config, &mut |_| {});
    let skipped: Vec<&Record> = report
        .records
        .iter()
        .filter(|r| r.status == Status::Skipped)
        .collect();
    assert_eq!(skipped.len(), 4, "8³ and 16·8·4 are 512, 32·4·2 is 256");
    assert!(skipped[0].reason.as_deref().unwrap().contains("--max-mnk"));
    let row = report.summary().unwrap().rows.remove(0);
    assert_eq!((row.all.cases, row.all.missing), (1, 0));
}

#[test]
fn pairs_that_never_apply_and_cases_outside_the_plan_leave_no_record() {
    let naive = matmul::find("naive").unwrap();
    let mut config = small_config(vec![matmul::find("cpu").unwrap(), naive]);
    config.dtypes = vec![DType::F32, DType::Bf16];
    let mut planned = 0;
    let report = run(&CpuBackend, &config, &mut |e| {
        if let ProgressEvent::Planned { total } = e {
            planned = total;
        }
    });
    // naive has no bf16: those pairs are left out; naive f32 is a case, skipped on the CPU.
    let kernels: Vec<(&str, DType)> = report
        .records
        .iter()
        .map(|r| (r.kernel.as_str(), r.dtype))
        .collect();
    assert_eq!(planned, 6);
    assert_eq!(report.records.len(), 6, "{kernels:?}");
    assert!(!kernels.contains(&("naive", DType::Bf16)));
    assert_eq!(
        report
            .table()
            .lines()
            .filter(|l| l.starts_with("skipped"))
            .count(),
        1
    );

    // A plan: cpu f32 up to 32³ only.
    config.plan = Some(vec![PlanEntry {
        kernel: "cpu",
        dtype: DType::F32,
        max_mnk: Some(32 * 32 * 32),
    }]);
    let report = run(&CpuBackend, &config, &mut |_| {});
    let cases: Vec<(&str, DType, &str)> = report
        .records
        .iter()
        .map(|r| (r.kernel.as_str(), r.dtype, r.shape.as_str()))
        .collect();
    assert_eq!(cases, [("cpu", DType::F32, "32x32x32")]);
    assert_eq!(report.records[0].status, Status::Ok);
}

/// The error column over a CPU bench: the CPU backend's f32 kernel errs by a few u of f32
/// (|C − C_f64| / (|A|·|B|) in units of 2⁻²⁴), a result with one element off by 1.0 by far
/// more, u32 is exact; the tables, the JSON and the CSV carry it.
#[test]
fn the_error_column_measures_every_kernel() {
    let cpu = matmul::find("cpu").unwrap();
    let mut config = small_config(vec![cpu]);
    config.shapes = vec![Shape {
        m: 48,
        n: 40,
        k: 1024,
    }];
    let error_of = |report: &Report, dtype: DType| {
        let r = report.records.iter().find(|r| r.dtype == dtype).unwrap();
        r.verification.as_ref().unwrap().error.clone().unwrap()
    };
    let report = run(&CpuBackend, &config, &mut |_| {});
    let f32_error = error_of(&report, DType::F32);
    let max = f32_error.max_u.unwrap();
    eprintln!("cpu f32 48x40x1024: {f32_error:?}");
    assert_eq!(f32_error.unit_log2, Some(-24));
    assert_eq!((f32_error.elements, f32_error.wrong), (48 * 40, 0));
    // Above the exact result's single rounding (≤ 0.5 u), far below the k·u bound.
    assert!(max > 0.5 && max < 16.0, "{f32_error:?}");
    assert!(f32_error.mean_u.unwrap() < max);
    let u32_error = error_of(&report, DType::U32);
    assert_eq!(u32_error, matmul::verify::ErrorStats::exact(0, 48 * 40));

    // One element off by 1.0: a failed verification, and an error to match.
    config.verify_full_limit = 0; // the sampled check measures it too
    let corrupt = run(
        &TestBackend::new(RunMode::Corrupt, false),
        &config,
        &mut |_| {},
    );
    let bad = error_of(&corrupt, DType::F32);
    assert!(bad.max_u.unwrap() > 1000.0 * max, "{bad:?}");
    assert_eq!(error_of(&corrupt, DType::U32).wrong, 1);

    // The text table and report.md show it, the JSON and the CSV keep it.
    let table = report.table();
    let header = table.lines().next().unwrap();
    assert!(
        header.contains("max err") && header.contains("mean err"),
        "{table}"
    );
    assert!(table.contains("|A|·|B|"), "{table}");
    assert!(report
        .to_markdown("roofline.svg")
        .contains("| max err (u) | mean err (u) |"));
    assert!(report.to_html().contains(">max err (u)</th>"));
    let back = Report::from_json(&report.to_json().unwrap()).unwrap();
    assert_eq!(error_of(&back, DType::F32), f32_error);
    // A file written before the error column reads back without it, its tables without the
    // columns.
    let mut old: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
    for r in old["records"].as_array_mut().unwrap() {
        r["verification"].as_object_mut().unwrap().remove("error");
    }
    let old = Report::from_json(&old.to_string()).unwrap();
    assert!(old
        .records
        .iter()
        .all(|r| r.verification.as_ref().unwrap().error.is_none()));
    assert!(!old.to_markdown("roofline.svg").contains("max err"));
    let csv = crate::tests::parse_csv(&report.to_csv()).unwrap();
    let col = csv[0].iter().position(|h| h == "error_max_u").unwrap();
    let row = csv.iter().find(|r| r.contains(&"f32".to_string())).unwrap();
    assert_eq!(row[col].parse::<f64>().unwrap(), max);
}

/// A CUDA-kind backend that runs every kernel by the CPU reference and answers timings with
/// fixed medians: multistage-raster 1 ms, other kernels 0.1 ms, the int8 ceiling 5 µs.
struct FakeCuda;

impl Backend for FakeCuda {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }
    fn describe(&self) -> String {
        "fake cuda".into()
    }
    fn limits(&self) -> Option<DeviceLimits> {
        None
    }
    fn run(
        &self,
        _kernel: &KernelSpec,
        problem: &Problem,
        a: &AnyMatrix,
        b: &AnyMatrix,
        opts: RunOptions,
    ) -> matmul::Result<AnyMatrix> {
        CpuBackend.run(matmul::find("cpu-reference")?, problem, a, b, opts)
    }
    fn time(
        &self,
        kernel: &KernelSpec,
        _problem: &Problem,
        _inputs: &[Inputs],
        _warmup: usize,
        iters: usize,
        _opts: RunOptions,
    ) -> matmul::Result<Vec<f64>> {
        let t = if kernel.name == crate::report::IMAD_KERNEL {
            1e-3
        } else {
            1e-4
        };
        Ok(vec![t; iters])
    }
    fn time_int8_ceiling(
        &self,
        (m, n, k): (usize, usize, usize),
        sets: usize,
        _warmup: usize,
        iters: usize,
    ) -> matmul::Result<Vec<f64>> {
        assert!(m * n * k > 0 && sets >= 1);
        Ok(vec![5e-6; iters])
    }
}

#[test]
fn the_int8_ceiling_row_is_timed_not_verified_and_gives_the_u32_ratios() {
    let kernels = crate::defaults::select_kernels(
        "mma-u8x4,multistage-raster,cublaslt-int8",
        BackendKind::Cuda,
        false,
    )
    .unwrap();
    assert!(matches!(kernels[2], BenchKernel::Int8Ceiling));
    let mut c = small_config(vec![]);
    c.kernels = kernels;
    c.shapes = vec![Shape {
        m: 64,
        n: 64,
        k: 64,
    }];
    // u32 only: f32 has no int8 ceiling row (and no byte-split kernel).
    let planned = c.planned();
    let f32_kernels: Vec<&str> = planned
        .iter()
        .filter(|(p, _, _)| p.dtype == DType::F32)
        .flat_map(|(_, _, k)| k.iter().map(BenchKernel::name))
        .collect();
    assert_eq!(f32_kernels, ["multistage-raster"]);
    let report = run(&FakeCuda, &c, &mut |_| {});
    let find = |k: &str| {
        report
            .records
            .iter()
            .find(|r| r.kernel == k && r.dtype == DType::U32)
            .unwrap_or_else(|| panic!("{k}"))
    };
    let int8 = find("cublaslt-int8");
    assert_eq!(int8.status, Status::Ok, "{:?}", int8.reason);
    assert!(int8.verification.is_none() && int8.is_int8_ceiling());
    assert_eq!(
        (int8.vs_int8_ceiling, int8.vs_imad, int8.vs_naive),
        (None, None, None)
    );
    let ours = find("mma-u8x4");
    assert!(ours.verification.as_ref().is_some_and(|v| v.passed));
    // 10 × 5 µs / 100 µs and 1 ms / 100 µs.
    let near = |x: Option<f64>, want: f64| x.is_some_and(|x| (x - want).abs() < 1e-9);
    assert!(
        near(ours.vs_int8_ceiling, 0.5),
        "{:?}",
        ours.vs_int8_ceiling
    );
    assert!(near(ours.vs_imad, 10.0), "{:?}", ours.vs_imad);
    assert!(near(find("multistage-raster").vs_imad, 1.0));
    assert!(near(find("multistage-raster").vs_int8_ceiling, 0.05));
    let table = report.table();
    assert!(
        table.contains("vs int8/10") && table.contains("vs IMAD"),
        "{table}"
    );
    assert!(
        table.contains("50.0%") && table.contains("10.0x"),
        "{table}"
    );
    let csv = report.to_csv();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let row = csv
        .lines()
        .find(|l| l.starts_with("mma-u8x4,"))
        .unwrap()
        .split(',')
        .collect::<Vec<_>>();
    assert_eq!(
        (row[col("vs_int8_ceiling")], row[col("vs_imad")]),
        ("0.5", "10"),
        "{csv}"
    );
    let md = report.to_markdown("roofline.svg");
    assert!(
        md.contains("int8 ceiling: not a u32 product, not verified"),
        "{md}"
    );
    // The ceiling row sits under the int8 roof, not above the int32 one.
    assert!(report.above_roof().iter().all(|r| !r.is_int8_ceiling()));
    // On another backend the name is refused.
    let e = crate::defaults::select_kernels("cublaslt-int8", BackendKind::Cpu, false).unwrap_err();
    assert!(e.to_string().contains("runs on the cuda backend"), "{e}");
}

/// The record of `kernel` (registry name) made the `auto` row that chose it, at `n`³ and `rate`
/// G(FL)OP/s, its roof recomputed under `report`'s ceilings.
fn as_auto(report: &mut Report, kernel: &str, n: usize, rate: f64) -> Record {
    let i = report
        .records
        .iter()
        .position(|r| r.kernel == kernel)
        .unwrap_or_else(|| panic!("{kernel}"));
    let r = &mut report.records[i];
    assert_eq!(r.status, Status::Ok, "{kernel}: {:?}", r.reason);
    r.chosen = Some(std::mem::replace(&mut r.kernel, "auto".into()));
    r.problem = Problem::square(n, r.dtype);
    r.shape = r.problem.shape_label();
    r.flops = r.problem.flops();
    r.min_bytes = r.problem.min_bytes();
    r.rate_gops = Some(rate);
    report.recompute_roofs();
    report.records[i].clone()
}

/// An `auto` row is placed by the kernel it chose: a byte-split choice (`wgmma-u8x4-tma`) under
/// the int8/10 roof, with no "above roof" warning in any rendering, where under int32 the same
/// rate (386 % of the IMAD peak, as measured on an H100) is flagged; a 3xTF32 choice under tf32/3.
#[test]
fn auto_rows_take_the_roof_of_the_kernel_that_ran() {
    let mut c = small_config(vec![
        matmul::find("wgmma-u8x4-tma").unwrap(),
        matmul::find("wgmma-3xtf32").unwrap(),
    ]);
    c.shapes = vec![Shape {
        m: 256,
        n: 256,
        k: 256,
    }];
    c.datasheet = crate::ceilings::datasheet("NVIDIA H100 80GB HBM3");
    let mut report = run(&FakeCuda, &c, &mut |_| {});
    let rate = 3.86 * 33_500.0;
    let u32_auto = as_auto(&mut report, "wgmma-u8x4-tma", 8192, rate);
    let b = u32_auto.roof.as_ref().unwrap();
    assert_eq!(u32_auto.ran_kernel(), "wgmma-u8x4-tma");
    assert_eq!(
        (b.roof.as_str(), b.compute_roof.as_deref()),
        ("int8/10", Some("int8/10"))
    );
    assert!((b.bound_gops - 197_890.0).abs() < 1e-6, "{}", b.bound_gops);
    assert!(!b.above_roof(), "{:?}", b.percent);
    let f32_auto = as_auto(&mut report, "wgmma-3xtf32", 8192, 87_000.0);
    let b = f32_auto.roof.as_ref().unwrap();
    assert_eq!(b.compute_roof.as_deref(), Some("tf32/3"));
    assert!(!b.above_roof(), "{:?}", b.percent);

    // Nothing above its roof, in any rendering; the roofline draws the int8/10 roof (in OP/s).
    assert!(report.above_roof().is_empty());
    let warning = "⚠ above roof";
    assert!(!report.table().contains(warning), "{}", report.table());
    assert!(!report.to_markdown("roofline.svg").contains(warning));
    assert!(!report.to_html().contains(warning));
    let svg = report.roofline_svg();
    check_xml(&svg).unwrap();
    assert!(!svg.contains(warning));
    assert!(
        svg.contains("int8/10 198 TOP/s") && svg.contains("tf32/3 "),
        "{svg}"
    );
    assert!(!svg.contains(">int32 ") && !svg.contains(">fp32 "), "{svg}");
    let csv = crate::tests::parse_csv(&report.to_csv()).unwrap();
    let col = |name: &str| csv[0].iter().position(|h| h == name).unwrap();
    let u32_row = csv.iter().find(|r| r[col("dtype")] == "u32").unwrap();
    assert_eq!(
        (
            u32_row[col("kernel")].as_str(),
            u32_row[col("roof")].as_str()
        ),
        ("auto", "int8/10")
    );
    assert!(u32_row[col("roof_percent")].parse::<f64>().unwrap() < 100.0);

    // The same row taken for the IMAD kernel it did not run is "above the roof".
    let mut wrong = report.clone();
    for r in &mut wrong.records {
        r.chosen = None;
    }
    wrong.recompute_roofs();
    let above: Vec<&str> = wrong.above_roof().iter().map(|r| r.dtype.name()).collect();
    assert_eq!(above, ["f32", "u32"]);
}

/// A kernel of the user's own: verified and run by the CPU reference (or wrongly), timed at 0.2
/// ms, refusing problems with m above 1000.
struct UserFile {
    wrong: bool,
    timed: std::sync::atomic::AtomicUsize,
}

impl ExternalKernel for UserFile {
    fn name(&self) -> &str {
        "file:mine.cu"
    }
    fn file(&self) -> KernelFile {
        KernelFile {
            path: "kernels/mine.cu".into(),
            lang: "cuda".into(),
            entry: "mine".into(),
            options: vec!["-D".into(), "TILE=16".into()],
        }
    }
    fn check(&self, problem: &Problem) -> matmul::Result<()> {
        match problem.m {
            m if m > 1000 => Err(matmul::Error::Invalid("m above 1000".into())),
            _ => Ok(()),
        }
    }
    fn run(&self, problem: &Problem, a: &AnyMatrix, b: &AnyMatrix) -> matmul::Result<AnyMatrix> {
        let reference = matmul::find("cpu-reference")?;
        let c = CpuBackend.run(reference, problem, a, b, RunOptions::default())?;
        Ok(if self.wrong {
            AnyMatrix::generate(
                problem.dtype,
                problem.m,
                problem.n,
                Init::Random { seed: 99 },
            )?
        } else {
            c
        })
    }
    fn time(
        &self,
        _problem: &Problem,
        inputs: &[Inputs],
        _warmup: usize,
        iters: usize,
    ) -> matmul::Result<Vec<f64>> {
        assert!(!self.wrong, "a wrong kernel is never timed");
        assert!(!inputs.is_empty());
        self.timed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(vec![2e-4; iters])
    }
}

/// A kernel file is a row like ours: checked, verified, timed on rotated inputs, held against
/// cuBLAS and placed under its dtype's roof, in results.json (with its file), results.csv,
/// report.md, report.html and the roofline; a wrong one fails verification and is not timed, and one
/// that refuses a problem is skipped.
#[test]
fn a_kernel_file_is_a_row_like_ours() {
    let user = std::sync::Arc::new(UserFile {
        wrong: false,
        timed: Default::default(),
    });
    let mut c = small_config(vec![matmul::find("cublas").unwrap()]);
    c.kernels.insert(0, BenchKernel::External);
    c.external = Some(External(user.clone()));
    c.dtypes = vec![DType::F32, DType::U32];
    c.shapes = vec![
        Shape {
            m: 64,
            n: 64,
            k: 64,
        },
        Shape {
            m: 2048,
            n: 8,
            k: 8,
        },
    ];
    c.datasheet = crate::ceilings::datasheet("NVIDIA H100 80GB HBM3");
    let report = run(&FakeCuda, &c, &mut |_| {});
    let mine: Vec<&Record> = report
        .records
        .iter()
        .filter(|r| r.kernel == "file:mine.cu")
        .collect();
    assert_eq!(mine.len(), 4, "f32 and u32 × two shapes");
    for r in &mine {
        assert_eq!(r.backend, "cuda");
        assert_eq!(r.kernel_file.as_ref().unwrap().entry, "mine");
        if r.problem.m > 1000 {
            assert_eq!(r.status, Status::Skipped);
            assert_eq!(r.reason.as_deref(), Some("m above 1000"));
            continue;
        }
        assert_eq!(r.status, Status::Ok, "{:?}", r.reason);
        assert!(r.verification.as_ref().unwrap().passed);
        let t = r.timing.as_ref().unwrap();
        assert_eq!((t.iters, t.stats.median), (3, 2e-4));
        assert!(t.input_sets > 1, "rotated past the cache");
        assert_eq!(r.model_bytes, r.min_bytes);
        // cuBLAS (the fake's 0.1 ms) / 0.2 ms; cuBLAS has no u32.
        let vs = (r.dtype == DType::F32).then_some(0.5);
        assert_eq!(r.vs_cublas, vs);
        let roof = r.roof.as_ref().unwrap().compute_roof.as_deref();
        let own = if r.dtype == DType::F32 {
            "fp32"
        } else {
            "int32"
        };
        assert_eq!(roof, Some(own));
    }
    assert_eq!(user.timed.load(std::sync::atomic::Ordering::Relaxed), 2);
    // Every file shows it.
    let back = Report::from_json(&report.to_json().unwrap()).unwrap();
    assert_eq!(back, report);
    let json: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
    assert_eq!(json["records"][0]["kernel_file"]["path"], "kernels/mine.cu");
    assert!(
        json["records"][1].get("kernel_file").is_none(),
        "ours have none"
    );
    let csv = crate::tests::parse_csv(&report.to_csv()).unwrap();
    let col = csv[0].iter().position(|h| h == "kernel_file").unwrap();
    assert_eq!(csv[1][0], "file:mine.cu");
    assert_eq!(csv[1][col], "kernels/mine.cu");
    assert_eq!(csv[2][col], "");
    let md = report.to_markdown("roofline.svg");
    assert!(md.contains("| file:mine.cu | f32 | 64x64x64 |"), "{md}");
    assert!(report.to_html().contains("file:mine.cu"));
    let points = report.plot_points();
    assert!(points
        .iter()
        .any(|p| p.kernel == "file:mine.cu" && p.dtype == DType::U32));
    let svg = report.roofline_svg();
    check_xml(&svg).unwrap();
    assert!(svg.contains("file:mine.cu f32 64³"), "{svg}");

    // A wrong kernel fails verification and is never timed.
    c.external = Some(External(std::sync::Arc::new(UserFile {
        wrong: true,
        timed: Default::default(),
    })));
    c.dtypes = vec![DType::U32];
    let report = run(&FakeCuda, &c, &mut |_| {});
    let r = &report.records[0];
    assert_eq!(
        (r.kernel.as_str(), r.status),
        ("file:mine.cu", Status::Failed)
    );
    assert!(
        r.reason.as_deref().unwrap().starts_with("verification"),
        "{:?}",
        r.reason
    );
    assert!(r.timing.is_none() && r.roof.as_ref().unwrap().percent.is_none());
}
