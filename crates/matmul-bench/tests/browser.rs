//! report.html in a real browser: headless Chromium loads the page of a run with one result, one
//! with hundreds (synthesized through the report model), one with failures and skipped cases, and
//! the suite run of record, and the test checks the DOM it dumps after the scripts ran: no script
//! or console error (the page records them in the root's `data-errors`), every chart canvas drawn
//! on (`data-pixels`, counted by the page from the canvas), the table's row count. A screenshot of
//! each page is saved under target/tmp/browser/.
//!
//! The tests are `#[ignore]`d unless built with CI=true or MATMUL_REQUIRE_BROWSER=1 (build.rs), so
//! that without Chromium `cargo test` counts them as ignored, not passed. Under either variable at
//! run time a missing browser fails them (CI installs it: .ci/run); run with `--include-ignored`
//! and neither, a missing browser is skipped, saying so. The browser: $MATMUL_CHROMIUM, else the first of chromium,
//! chromium-browser, google-chrome on the PATH.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use matmul::cpu::CpuBackend;
use matmul::registry::BackendKind;
use matmul::{DType, Problem, Shape};
use matmul_bench::{
    datasheet, measure_cpu, run, write_reports, BenchConfig, CpuCeilingOptions, Report, Status,
};

/// Whether the browser tests must run: CI=true or MATMUL_REQUIRE_BROWSER=1.
fn required() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
        || std::env::var("MATMUL_REQUIRE_BROWSER").as_deref() == Ok("1")
}

/// The browser to run, or None (after saying why) when the test is to be skipped.
fn chromium() -> Option<String> {
    let candidates: Vec<String> = match std::env::var("MATMUL_CHROMIUM") {
        Ok(c) if !c.is_empty() => vec![c],
        _ => ["chromium", "chromium-browser", "google-chrome"]
            .map(String::from)
            .to_vec(),
    };
    for c in &candidates {
        let ok = Command::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return Some(c.clone());
        }
    }
    let why = format!(
        "no headless browser: none of {} runs (apt-get install chromium, or set MATMUL_CHROMIUM)",
        candidates.join(", ")
    );
    if required() {
        panic!("CI=true or MATMUL_REQUIRE_BROWSER=1: {why}");
    }
    eprintln!("SKIPPED: {why}");
    None
}

/// Where the pages and screenshots go: target/tmp/browser/.
fn out_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `browser` on `page` with `args`; stdout and stderr. Killed after a minute.
fn headless(browser: &str, page: &Path, args: &[&str], tag: &str) -> (String, String) {
    let profile = out_dir().join(format!("profile-{tag}-{}", std::process::id()));
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the browser starts");
    // Read both pipes on threads, so a full one cannot stall the browser.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut so, &mut s).ok();
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut se, &mut s).ok();
        s
    });
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{browser} on {} ran past a minute", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_dir_all(&profile);
    (out.join().unwrap(), err.join().unwrap())
}

/// The value of attribute `name` on the first element that has it, in `dom`.
fn attr<'a>(dom: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = dom.find(&key)? + key.len();
    Some(&dom[start..start + dom[start..].find('"')?])
}

/// Every value of attribute `name` in `dom`.
fn attrs<'a>(dom: &'a str, name: &str) -> Vec<&'a str> {
    let key = format!(" {name}=\"");
    dom.match_indices(&key)
        .filter_map(|(i, _)| {
            let start = i + key.len();
            Some(&dom[start..start + dom[start..].find('"')?])
        })
        .collect()
}

/// What the browser made of a page.
#[derive(Debug)]
struct Loaded {
    errors: String,
    console: Vec<String>,
    ready: bool,
    charts_drawn: usize,
    canvases: usize,
    pixels: Vec<usize>,
    rows: usize,
    shown: Option<usize>,
}

fn load(browser: &str, page: &Path, tag: &str) -> Loaded {
    let (dom, log) = headless(browser, page, &["--dump-dom"], tag);
    assert!(
        dom.contains("</html>"),
        "{tag}: no DOM dumped; stderr:\n{log}"
    );
    let root = &dom[dom.find("<html").unwrap()..];
    let root = &root[..root.find('>').unwrap()];
    // The results table's body (the browser gives the other tables a <tbody> too).
    let tbody = dom.find("id=\"results-table\"").map_or("", |t| {
        let s = t + dom[t..].find("<tbody>").unwrap_or(0);
        &dom[s..s + dom[s..].find("</tbody>").unwrap_or(0)]
    });
    Loaded {
        errors: attr(root, "data-errors").unwrap_or("missing").to_string(),
        // Chromium logs what the page's console printed; errors and uncaught exceptions count.
        console: log
            .lines()
            .filter(|l| l.contains("CONSOLE") && (l.contains("Uncaught") || l.contains("rror")))
            .map(String::from)
            .collect(),
        ready: attr(root, "data-ready") == Some("1"),
        charts_drawn: attr(root, "data-charts")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        canvases: dom.matches("<canvas").count(),
        pixels: attrs(&dom, "data-pixels")
            .iter()
            .map(|v| v.parse().unwrap())
            .collect(),
        rows: tbody.matches("<tr ").count(),
        shown: attr(&dom, "data-shown").and_then(|v| v.parse().ok()),
    }
}

/// Writes `report`'s files, loads its report.html, checks it and screenshots it; returns the
/// number of charts drawn.
fn check_in_browser(browser: &str, report: &Report, tag: &str) -> usize {
    let dir = out_dir().join(tag);
    let files = write_reports(report, &dir).unwrap();
    let html = std::fs::read_to_string(&files.html).unwrap();
    let expected_charts = html.matches("data-chart=\"").count();
    let page = load(browser, &files.html, tag);
    assert_eq!(page.errors, "[]", "{tag}: script errors: {page:?}");
    assert!(
        page.console.is_empty(),
        "{tag}: console errors: {:?}",
        page.console
    );
    assert!(
        page.ready,
        "{tag}: the page's script did not finish: {page:?}"
    );
    assert_eq!(page.canvases, expected_charts, "{tag}: {page:?}");
    assert_eq!(page.charts_drawn, expected_charts, "{tag}: {page:?}");
    assert_eq!(page.pixels.len(), expected_charts, "{tag}: {page:?}");
    // A chart with its axes, labels and bars covers thousands of pixels; a blank canvas none.
    assert!(
        page.pixels.iter().all(|&p| p > 2000),
        "{tag}: a chart canvas is (nearly) empty: {:?}",
        page.pixels
    );
    assert_eq!(page.rows, report.records.len(), "{tag}: table rows");
    assert_eq!(page.shown, Some(report.records.len()), "{tag}: rows shown");
    let shot = out_dir().join(format!("{tag}.png"));
    let _ = std::fs::remove_file(&shot);
    headless(
        browser,
        &files.html,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400",
        ],
        &format!("{tag}-shot"),
    );
    let size = std::fs::metadata(&shot).map_or(0, |m| m.len());
    assert!(
        size > 10_000,
        "{tag}: screenshot {} missing or blank",
        shot.display()
    );
    println!(
        "{tag}: {} charts drawn, screenshot {}",
        page.charts_drawn,
        shot.display()
    );
    page.charts_drawn
}

/// A quick CPU configuration.
fn cpu_config(kernels: &[&str], dtypes: Vec<DType>, shapes: Vec<Shape>) -> BenchConfig {
    let kernels = kernels
        .iter()
        .map(|k| matmul::find(k).unwrap())
        .collect::<Vec<_>>();
    let mut c = BenchConfig::new(kernels, dtypes, shapes);
    c.warmup = 1;
    c.iters = Some(3);
    c.min_time = None;
    c.cache_bytes = 64 << 10;
    c
}

#[test]
#[cfg_attr(
    not(matmul_require_browser),
    ignore = "needs Chromium: MATMUL_REQUIRE_BROWSER=1 cargo test, or -- --include-ignored"
)]
fn one_result() {
    let Some(browser) = chromium() else { return };
    let mut config = cpu_config(
        &["cpu"],
        vec![DType::F32],
        vec![Shape {
            m: 64,
            n: 64,
            k: 64,
        }],
    );
    config.measured_ceilings = Some(measure_cpu(&CpuCeilingOptions::quick()));
    let report = run(&CpuBackend, &config, &mut |_| {});
    assert_eq!(report.records.len(), 1);
    // A ladder and the roofline.
    assert_eq!(check_in_browser(&browser, &report, "one-result"), 2);
}

#[test]
#[cfg_attr(
    not(matmul_require_browser),
    ignore = "needs Chromium: MATMUL_REQUIRE_BROWSER=1 cargo test, or -- --include-ignored"
)]
fn failures_and_skips() {
    let Some(browser) = chromium() else { return };
    // naive is a CUDA kernel: skipped on the CPU.
    let config = cpu_config(
        &["cpu", "cpu-reference", "naive"],
        vec![DType::F32, DType::U32],
        vec![
            Shape {
                m: 32,
                n: 32,
                k: 32,
            },
            Shape {
                m: 17,
                n: 33,
                k: 65,
            },
        ],
    );
    let mut report = run(&CpuBackend, &config, &mut |_| {});
    assert!(report.records.iter().any(|r| r.status == Status::Skipped));
    let r = report
        .records
        .iter_mut()
        .find(|r| r.kernel == "cpu" && r.dtype == DType::F32)
        .unwrap();
    r.status = Status::Failed;
    r.timing = None;
    r.rate_gops = None;
    r.reason = Some("3 mismatches </script><b>not markup</b> & co".into());
    report.compute_ratios();
    report.recompute_roofs();
    let drawn = check_in_browser(&browser, &report, "failures-and-skips");
    assert!(drawn >= 3, "f32 and u32 ladders and the roofline");
    let html = std::fs::read_to_string(out_dir().join("failures-and-skips/report.html")).unwrap();
    assert!(html.contains("&lt;/script&gt;&lt;b&gt;not markup"));
}

#[test]
#[cfg_attr(
    not(matmul_require_browser),
    ignore = "needs Chromium: MATMUL_REQUIRE_BROWSER=1 cargo test, or -- --include-ignored"
)]
fn the_table_sorts_and_filters() {
    let Some(browser) = chromium() else { return };
    let config = cpu_config(
        &["cpu", "cpu-reference", "naive"],
        vec![DType::F32, DType::U32],
        vec![
            Shape {
                m: 32,
                n: 32,
                k: 32,
            },
            Shape {
                m: 17,
                n: 33,
                k: 65,
            },
        ],
    );
    let report = run(&CpuBackend, &config, &mut |_| {});
    let dir = out_dir().join("table");
    let files = write_reports(&report, &dir).unwrap();
    // A script run after the page's: click the rate header twice (ascending, then descending),
    // then filter to the skipped rows, and record what the table shows.
    let probe = r#"<script>
(function () {
  var root = document.documentElement, t = document.getElementById("results-table");
  var heads = Array.prototype.slice.call(t.tHead.rows[0].cells);
  var col = heads.findIndex(function (h) { return h.textContent === "rate"; });
  var values = function () {
    return Array.prototype.map.call(t.tBodies[0].rows, function (r) { return r.cells[col].getAttribute("data-v"); }).join(" ");
  };
  heads[col].click(); root.setAttribute("data-asc", values());
  heads[col].click(); root.setAttribute("data-desc", values());
  var s = document.getElementById("filter-status"); s.value = "SKIPPED"; s.dispatchEvent(new Event("change"));
  root.setAttribute("data-skipped-shown", t.getAttribute("data-shown"));
  var f = document.getElementById("filter"); s.value = ""; f.value = "cpu-reference"; f.dispatchEvent(new Event("input"));
  root.setAttribute("data-text-shown", t.getAttribute("data-shown"));
})();
</script>
</body>"#;
    let html = std::fs::read_to_string(&files.html).unwrap();
    std::fs::write(&files.html, html.replacen("</body>", probe, 1)).unwrap();
    let (dom, log) = headless(&browser, &files.html, &["--dump-dom"], "table");
    let root = &dom[dom.find("<html").unwrap()..];
    let root = &root[..root.find('>').unwrap()];
    assert_eq!(attr(root, "data-errors"), Some("[]"), "{log}");
    let parse = |name: &str| -> Vec<Option<f64>> {
        attr(root, name)
            .unwrap_or_else(|| panic!("{name} missing: {root}"))
            .split(' ')
            .map(|v| v.parse().ok())
            .collect()
    };
    let rates: Vec<f64> = report.records.iter().filter_map(|r| r.rate_gops).collect();
    let (asc, desc) = (parse("data-asc"), parse("data-desc"));
    assert_eq!(asc.len(), report.records.len());
    let timed = |v: &[Option<f64>]| v.iter().flatten().copied().collect::<Vec<f64>>();
    let mut sorted = rates.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(timed(&asc), sorted, "ascending, blanks last");
    sorted.reverse();
    assert_eq!(timed(&desc), sorted, "descending, blanks last");
    assert!(asc[rates.len()..].iter().all(Option::is_none));
    let count = |s: Status| report.records.iter().filter(|r| r.status == s).count();
    assert_eq!(
        attr(root, "data-skipped-shown"),
        Some(count(Status::Skipped).to_string().as_str())
    );
    let reference = report
        .records
        .iter()
        .filter(|r| r.kernel == "cpu-reference")
        .count();
    assert_eq!(
        attr(root, "data-text-shown"),
        Some(reference.to_string().as_str())
    );
}

#[test]
#[cfg_attr(
    not(matmul_require_browser),
    ignore = "needs Chromium: MATMUL_REQUIRE_BROWSER=1 cargo test, or -- --include-ignored"
)]
fn hovering_shows_kernel_shape_rate_ratio_and_verification() {
    let Some(browser) = chromium() else { return };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/baselines/h100-80gb-hbm3/suite/results.json");
    let report = matmul_bench::record::load(&path).unwrap();
    let dir = out_dir().join("hover");
    let files = write_reports(&report, &dir).unwrap();
    // After the page's script: activate the first point of every dataset that has points (the
    // roofs of the roofline have none) in every chart, as a hover does, and record the tooltip.
    let probe = r#"<script>
(function () {
  var tips = [];
  window.__charts.forEach(function (chart) {
    chart.data.datasets.forEach(function (ds, d) {
      var meta = chart.getDatasetMeta(d);
      var i = ds.data.findIndex(function (v) { return v !== null && (typeof v !== "object" || v.tip); });
      if (i < 0 || !meta.data[i] || ds.type === "line") return;
      var el = meta.data[i];
      chart.tooltip.setActiveElements([{ datasetIndex: d, index: i }], { x: el.x, y: el.y });
      chart.update();
      var lines = [];
      chart.tooltip.body.forEach(function (b) { lines = lines.concat(b.lines); });
      tips.push(lines.join(" | "));
    });
  });
  document.documentElement.setAttribute("data-tips", JSON.stringify(tips));
})();
</script>
</body>"#;
    let html = std::fs::read_to_string(&files.html).unwrap();
    std::fs::write(&files.html, html.replacen("</body>", probe, 1)).unwrap();
    let (dom, log) = headless(&browser, &files.html, &["--dump-dom"], "hover");
    let root = &dom[dom.find("<html").unwrap()..];
    let root = &root[..root.find('>').unwrap()];
    assert_eq!(attr(root, "data-errors"), Some("[]"), "{log}");
    let tips: Vec<String> = serde_json::from_str(
        &attr(root, "data-tips")
            .expect("the probe ran")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">"),
    )
    .unwrap();
    // Ladders (a dataset each), the roofline (a dataset per dtype), rate per case (two each).
    assert!(tips.len() >= 10, "{tips:?}");
    for t in &tips {
        assert!(t.contains("verification: ok"), "{t}");
        assert!(t.contains("FLOP/s") || t.contains("OP/s"), "a rate: {t}");
        assert!(t.contains("auto") || t.contains("cublas"), "a kernel: {t}");
        assert!(t.contains('x'), "a shape: {t}");
    }
    assert!(
        tips.iter().any(|t| t.contains("% of cuBLAS")),
        "a ratio: {tips:?}"
    );
}

#[test]
#[cfg_attr(
    not(matmul_require_browser),
    ignore = "needs Chromium: MATMUL_REQUIRE_BROWSER=1 cargo test, or -- --include-ignored"
)]
fn hundreds_of_results() {
    let Some(browser) = chromium() else { return };
    let config = cpu_config(&["cpu"], vec![DType::F32], vec![Shape { m: 8, n: 8, k: 8 }]);
    let mut report = run(&CpuBackend, &config, &mut |_| {});
    let template = report.records[0].clone();
    let kernels: Vec<&str> = matmul::KERNELS
        .iter()
        .filter(|k| k.backend == BackendKind::Cuda && k.name != "cublas")
        .map(|k| k.name)
        .take(8)
        .chain(["cublas"])
        .collect();
    let tags = ["square", "llm", "small-m"];
    let mut records = Vec::new();
    for (ki, kernel) in kernels.iter().enumerate() {
        for (di, dtype) in [DType::F32, DType::Bf16].into_iter().enumerate() {
            for si in 0..25usize {
                let shape = Shape {
                    m: 64 << (si % 7),
                    n: 128 << (si % 5),
                    k: 256 << (si % 4),
                };
                let mut r = template.clone();
                r.kernel = kernel.to_string();
                r.dtype = dtype;
                r.problem = Problem::new(shape.m, shape.n, shape.k, dtype);
                r.shape = r.problem.shape_label();
                r.flops = r.problem.flops();
                r.min_bytes = r.problem.min_bytes();
                r.tags = vec![tags[si % 3].to_string()];
                // A made-up rate that varies by kernel, dtype and shape; the median follows it.
                let rate = 1_000.0
                    * (1.0 + ki as f64)
                    * (1.0 + 9.0 * di as f64)
                    * (1.2 + (si as f64 * 0.7).sin());
                r.rate_gops = Some(rate);
                r.rate_unit = format!("{}/s", dtype.rate_unit());
                let t = r.timing.as_mut().unwrap();
                t.stats.median = r.flops / (rate * 1e9);
                t.input_set_bytes = r.min_bytes as u64;
                t.input_sets = 64;
                records.push(r);
            }
        }
    }
    report.records = records;
    report.suite = Some("synthetic".into());
    report.settings.cache_bytes = 50 << 20;
    report.baselines = matmul_bench::Baselines::for_backend(BackendKind::Cuda);
    report.system.device = "Synthetic GPU (hundreds of results)".into();
    report.apply_ceilings(None, datasheet("NVIDIA H100 80GB HBM3"));
    report.compute_ratios();
    assert!(report.records.len() >= 400);
    // Two ladders, the roofline, two rate-per-case charts.
    assert_eq!(check_in_browser(&browser, &report, "hundreds"), 5);
}

#[test]
#[cfg_attr(
    not(matmul_require_browser),
    ignore = "needs Chromium: MATMUL_REQUIRE_BROWSER=1 cargo test, or -- --include-ignored"
)]
fn the_suite_run_of_record() {
    let Some(browser) = chromium() else { return };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/baselines/h100-80gb-hbm3/suite/results.json");
    let report = matmul_bench::record::load(&path).unwrap();
    let dtypes = {
        let mut d: Vec<DType> = Vec::new();
        for r in report.records.iter().filter(|r| r.status == Status::Ok) {
            if !d.contains(&r.dtype) {
                d.push(r.dtype);
            }
        }
        d.len()
    };
    // A ladder and a rate-per-case chart per dtype, and the roofline.
    assert_eq!(
        check_in_browser(&browser, &report, "suite-of-record"),
        2 * dtypes + 1
    );
}

#[test]
#[cfg_attr(
    not(matmul_require_browser),
    ignore = "needs Chromium: MATMUL_REQUIRE_BROWSER=1 cargo test, or -- --include-ignored"
)]
fn a_broken_page_is_caught() {
    let Some(browser) = chromium() else { return };
    // The check itself: a page whose data block does not parse must show an error and no chart.
    let config = cpu_config(
        &["cpu"],
        vec![DType::F32],
        vec![Shape {
            m: 16,
            n: 16,
            k: 16,
        }],
    );
    let report = run(&CpuBackend, &config, &mut |_| {});
    let dir = out_dir().join("broken");
    let files = write_reports(&report, &dir).unwrap();
    let html = std::fs::read_to_string(&files.html).unwrap();
    let broken = html.replacen("id=\"report-data\">{", "id=\"report-data\">{,", 1);
    assert_ne!(broken, html);
    std::fs::write(&files.html, broken).unwrap();
    let page = load(&browser, &files.html, "broken");
    assert_ne!(page.errors, "[]", "{page:?}");
    assert!(
        !page.console.is_empty(),
        "the browser logs it too: {page:?}"
    );
    assert!(!page.ready && page.pixels.is_empty(), "{page:?}");
}

/// CI=true or MATMUL_REQUIRE_BROWSER=1 promises that the browser tests ran. A binary built
/// without either has them ignored: run without `--include-ignored`, it fails here rather than
/// passing with every browser test ignored.
#[test]
fn require_browser_includes_the_ignored_browser_tests() {
    let included = std::env::args().any(|a| a == "--include-ignored" || a == "--ignored");
    assert!(
        !required() || cfg!(matmul_require_browser) || included,
        "CI=true or MATMUL_REQUIRE_BROWSER=1, but this test binary was built without either, so \
         its browser tests are ignored: pass --include-ignored"
    );
}
