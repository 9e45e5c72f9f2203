//! Test fixtures the modules' tests share (a small CPU configuration, a synthetic GPU-like
//! report, XML and CSV checkers) and the end-to-end test: a CPU benchmark written to disk as
//! every report file and read back.

use std::path::PathBuf;

use matmul::cpu::CpuBackend;
use matmul::registry::BackendKind;
use matmul::{DType, KernelSpec, Problem, Shape};

use crate::*;

/// A minimal XML well-formedness check: balanced tags, quoted attributes, known entities, one
/// root. Returns the number of elements.
pub(crate) fn check_xml(s: &str) -> Result<usize, String> {
    fn check_text(t: &str) -> Result<(), String> {
        let mut rest = t;
        while let Some(i) = rest.find('&') {
            let after = &rest[i + 1..];
            let end = after.find(';').ok_or("unterminated entity")?;
            let ent = &after[..end];
            let ok = matches!(ent, "amp" | "lt" | "gt" | "quot" | "apos")
                || ent.starts_with('#') && ent.len() > 1;
            if !ok {
                return Err(format!("unknown entity &{ent};"));
            }
            rest = &after[end + 1..];
        }
        Ok(())
    }
    let mut stack: Vec<String> = Vec::new();
    let (mut elements, mut roots) = (0usize, 0usize);
    let mut rest = s.trim_start();
    if rest.starts_with("<?xml") {
        rest = &rest[rest.find("?>").ok_or("unterminated declaration")? + 2..];
    }
    while let Some(i) = rest.find('<') {
        let text = &rest[..i];
        if stack.is_empty() && !text.trim().is_empty() {
            return Err(format!("text outside the root: {text:?}"));
        }
        check_text(text)?;
        rest = &rest[i..];
        if let Some(r) = rest.strip_prefix("<!--") {
            rest = &r[r.find("-->").ok_or("unterminated comment")? + 3..];
            continue;
        }
        // Find the tag's end, skipping quoted attribute values.
        let (mut quote, mut end) = (None, None);
        for (j, c) in rest.char_indices().skip(1) {
            match (quote, c) {
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '>') => {
                    end = Some(j);
                    break;
                }
                (None, '<') => return Err("'<' inside a tag".into()),
                _ => {}
            }
        }
        let end = end.ok_or("unterminated tag")?;
        let tag = &rest[1..end];
        rest = &rest[end + 1..];
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().ok_or(format!("stray </{name}>"))?;
            if open != name.trim() {
                return Err(format!("<{open}> closed by </{name}>"));
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let name: String = body.chars().take_while(|c| !c.is_whitespace()).collect();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || "-_:.".contains(c))
        {
            return Err(format!("bad element name in <{tag}>"));
        }
        // Attributes: name="value" pairs.
        let mut attrs = body[name.len()..].trim();
        while !attrs.is_empty() {
            let eq = attrs
                .find('=')
                .ok_or(format!("attribute without value in <{tag}>"))?;
            let q = attrs[eq + 1..].chars().next().ok_or("missing quote")?;
            if q != '"' && q != '\'' {
                return Err(format!("unquoted attribute in <{tag}>"));
            }
            let vstart = eq + 2;
            let vend = vstart + attrs[vstart..].find(q).ok_or("unterminated value")?;
            check_text(&attrs[vstart..vend])?;
            attrs = attrs[vend + 1..].trim_start();
        }
        elements += 1;
        if stack.is_empty() {
            roots += 1;
        }
        if !self_closing {
            stack.push(name);
        }
    }
    if !rest.trim().is_empty() {
        return Err("text after the root".into());
    }
    match (stack.is_empty(), roots) {
        (true, 1) => Ok(elements),
        (false, _) => Err(format!("unclosed <{}>", stack.join("> <"))),
        (_, n) => Err(format!("{n} root elements")),
    }
}

/// Parses RFC 4180 CSV (quoted fields may hold commas, quotes and newlines).
pub(crate) fn parse_csv(s: &str) -> Result<Vec<Vec<String>>, String> {
    let (mut rows, mut row, mut field) = (Vec::new(), Vec::new(), String::new());
    let mut chars = s.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, '"') => return Err("quote inside an unquoted field".into()),
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated quoted field".into());
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    Ok(rows)
}

fn temp_dir(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!("matmul-bench-{tag}-{}-{nanos}", std::process::id()))
}

pub(crate) fn cpu_kernels() -> Vec<&'static KernelSpec> {
    vec![
        matmul::find("cpu").unwrap(),
        matmul::find("cpu-reference").unwrap(),
    ]
}

pub(crate) fn small_config(kernels: Vec<&'static KernelSpec>) -> BenchConfig {
    let mut c = BenchConfig::new(
        kernels,
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
    c.warmup = 1;
    c.iters = Some(3);
    c.min_time = None;
    c.cache_bytes = 64 << 10;
    c
}

pub(crate) fn synthetic_report() -> Report {
    let mut config = small_config(cpu_kernels());
    config.dtypes = vec![DType::F32];
    config.shapes = vec![Shape { m: 8, n: 8, k: 8 }];
    let mut report = run(&CpuBackend, &config, &mut |_| {});
    // Make it look like a GPU run: many kernels and dtypes, datasheet and measured ceilings.
    let template = report.records[0].clone();
    let mut records = Vec::new();
    let kernels = ["naive", "tiled", "tiled-async", "cublas", "row", "ele"];
    for (ki, k) in kernels.iter().enumerate() {
        for (di, dtype) in [DType::F32, DType::U32, DType::Tf32, DType::Bf16]
            .iter()
            .enumerate()
        {
            for (si, n) in [1024usize, 4096].iter().enumerate() {
                let mut r = template.clone();
                r.kernel = k.to_string();
                r.dtype = *dtype;
                r.problem = Problem::square(*n, *dtype);
                r.shape = r.problem.shape_label();
                r.flops = r.problem.flops();
                r.min_bytes = r.problem.min_bytes();
                r.intensity_model = 0.25 * (1 + ki * 8) as f64;
                r.model_bytes = r.flops / r.intensity_model;
                // Rotated past the cache, as on a GPU.
                let t = r.timing.as_mut().unwrap();
                t.input_set_bytes = (2 * n * n * dtype.input_bytes()) as u64;
                t.input_sets = (100u64 << 20).div_ceil(t.input_set_bytes).clamp(1, 16) as usize;
                r.rate_gops = Some(1_000.0 * (1 + ki + di + si) as f64);
                r.rate_unit = format!("{}/s", dtype.rate_unit());
                r.reason = Some("note, with \"quotes\"\nand a newline".into());
                records.push(r);
            }
        }
    }
    report.records = records;
    report.settings.cache_bytes = 100 << 20;
    report.baselines = Baselines::for_backend(BackendKind::Cuda);
    report.system.device = "NVIDIA H100 80GB HBM3 <test> & co".into();
    report.system.gpu = Some(serde_json::json!({"name": "H100", "sms": 132}));
    let measured = Ceilings {
        device: "H100".into(),
        memory_bandwidth_gbs: Some(3_000.0),
        fp32_gflops: Some(60_000.0),
        int32_gops: None,
        tensor: vec![("bf16".into(), 800_000.0)],
        source: "measured: test".into(),
    };
    report.apply_ceilings(Some(measured), datasheet("NVIDIA H100 80GB HBM3"));
    report.compute_ratios();
    report
}

#[test]
fn cpu_end_to_end_writes_every_report() {
    let mut config = small_config(cpu_kernels());
    // One kernel the CPU cannot run, to exercise the SKIPPED path.
    config.kernels.push(matmul::find("naive").unwrap().into());
    config.measured_ceilings = Some(measure_cpu(&CpuCeilingOptions::quick()));
    let mut events = (0usize, 0usize, 0usize);
    let report = run(&CpuBackend, &config, &mut |e| match e {
        ProgressEvent::Planned { total } => events.0 = total,
        ProgressEvent::Finished { .. } => events.1 += 1,
        ProgressEvent::Timing { input_sets, .. } => {
            assert!(input_sets >= 1);
            events.2 += 1
        }
        ProgressEvent::Started { .. } => {}
    });
    assert_eq!(events, (12, 12, 8));
    assert_eq!(report.records.len(), 12);
    for r in &report.records {
        if r.kernel == "naive" {
            assert_eq!(r.status, Status::Skipped, "{r:?}");
            assert!(
                r.reason
                    .as_deref()
                    .unwrap()
                    .contains("not available on the cpu backend"),
                "{:?}",
                r.reason
            );
            assert!(r.timing.is_none() && r.verification.is_none());
            continue;
        }
        assert_eq!(r.status, Status::Ok, "{r:?}");
        let t = r.timing.as_ref().unwrap();
        assert_eq!((t.warmup, t.iters, t.stats.count), (1, 3, 3));
        assert!(t.input_sets > 1, "64 KiB of cache needs several sets");
        assert!(r.verification.as_ref().unwrap().passed);
        assert!(r.rate_gops.unwrap() > 0.0);
        assert!(r.roof.as_ref().unwrap().percent.unwrap() > 0.0);
        assert_eq!(r.vs_cublas, None, "no cuBLAS on the CPU");
        assert!(
            r.vs_naive.unwrap() > 0.0,
            "cpu-reference is the CPU's naive baseline"
        );
        if r.kernel == "cpu-reference" {
            assert_eq!(r.vs_naive, Some(1.0));
        }
    }
    let u32_rec = report
        .records
        .iter()
        .find(|r| r.dtype == DType::U32)
        .unwrap();
    assert_eq!(u32_rec.rate_unit, "OP/s");
    assert_eq!(
        u32_rec.roof.as_ref().unwrap().compute_roof.as_deref(),
        Some("int32")
    );

    let table = report.table();
    println!("{table}");
    assert_eq!(table.lines().filter(|l| l.ends_with(" OK")).count(), 8);
    assert!(
        table.contains("skipped 4 cases, e.g. naive f32 (2x): ")
            && table.contains("(and 1 more kernel × dtype pair(s): report.md lists them)"),
        "{table}"
    );
    assert_eq!(
        table.lines().filter(|l| l.starts_with("skipped")).count(),
        1
    );

    let dir = temp_dir("e2e");
    let files = write_reports(&report, &dir).unwrap();
    for p in [
        &files.json,
        &files.csv,
        &files.svg,
        &files.ladder,
        &files.markdown,
        &files.html,
    ] {
        assert!(p.exists(), "{} missing", p.display());
    }
    let back = Report::from_json(&std::fs::read_to_string(&files.json).unwrap()).unwrap();
    assert_eq!(back, report);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files.json).unwrap()).unwrap();
    assert_eq!(json["schema_version"], SCHEMA_VERSION);
    assert_eq!(json["records"][0]["status"], "OK");

    let csv = parse_csv(&std::fs::read_to_string(&files.csv).unwrap()).unwrap();
    assert_eq!(csv.len(), 1 + report.records.len());
    assert!(csv.iter().all(|r| r.len() == csv[0].len()));

    let svg = std::fs::read_to_string(&files.svg).unwrap();
    check_xml(&svg).unwrap();
    assert_eq!(
        svg.matches(r#"class="point""#).count(),
        4,
        "cpu, cpu-reference × f32, u32"
    );

    let md = std::fs::read_to_string(&files.markdown).unwrap();
    println!("{md}");
    assert!(md.contains("| kernel | dtype | shape | median (ms) |"));
    assert!(md.contains("![roofline](roofline.svg)"));
    assert!(md.contains("## Ceilings"));
    let results = &md[md.find("## Results").unwrap()..];
    assert_eq!(
        results.lines().filter(|l| l.starts_with("| cpu")).count(),
        8
    );
    assert!(
        md.contains("## Ladder\n\n### f32\n\n| kernel | 32³ | 17x33x65 |"),
        "{md}"
    );
    assert!(md.contains("![ladder](ladder.svg)"));
    let html = std::fs::read_to_string(&files.html).unwrap();
    assert!(html.contains("<canvas") && html.trim_end().ends_with("</html>"));
    assert_eq!(
        html.matches("<table").count(),
        html.matches("</table>").count()
    );
    let tbody = &html[html.find("<tbody>").unwrap()..html.find("</tbody>").unwrap()];
    assert_eq!(tbody.matches("<tr ").count(), report.records.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every point of `report` at or under its roof, and its roofline drawn without overlaps.
fn assert_under_roofs_and_drawn_cleanly(report: &Report, what: &str) {
    let ok: Vec<&Record> = report
        .records
        .iter()
        .filter(|r| r.status == Status::Ok)
        .collect();
    assert!(!ok.is_empty(), "{what}: no OK record");
    for r in &ok {
        let b = r
            .roof
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: {} {} {} has no roof", r.kernel, r.dtype, r.shape));
        let p = b.percent.unwrap();
        assert!(
            p > 0.0 && p <= 100.0,
            "{what}: {} {} {} at {p:.1}% of {} (intensity {:.3} {}, in cache: {})",
            r.kernel,
            r.dtype,
            r.shape,
            b.roof,
            b.intensity,
            b.bytes.name(),
            b.in_cache
        );
        if r.measured_bytes.is_none() {
            assert_eq!(
                b.intensity,
                r.flops / r.min_bytes,
                "{what}: compulsory intensity"
            );
        }
    }
    assert!(report.above_roof().is_empty());
    let (title, subtitle) = report.roofline_titles();
    let (canvas, w, h) =
        crate::roofline::draw(&title, &subtitle, &report.roofs(), &report.plot_points());
    canvas
        .check_layout(w, h)
        .unwrap_or_else(|e| panic!("{what}: roofline: {e}"));
    let (canvas, w, h) = crate::report::ladder_layout(&report.ladder_svg());
    canvas
        .check_layout(w, h)
        .unwrap_or_else(|e| panic!("{what}: ladder: {e}"));
}

/// The H100 runs of record under bench/baselines, read as `record::load` reads them: every
/// point at or under its roof, and every roofline drawn without overlaps.
#[test]
fn runs_of_record_never_rise_above_their_roof() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bench/baselines");
    let mut runs = 0;
    for device in std::fs::read_dir(&root).unwrap() {
        let device = device.unwrap().path();
        if !device.is_dir() {
            continue;
        }
        for run in std::fs::read_dir(&device).unwrap() {
            let json = run.unwrap().path().join("results.json");
            if !json.exists() {
                continue;
            }
            let report = crate::record::load(&json).unwrap();
            assert_eq!(report.schema_version, SCHEMA_VERSION);
            assert_under_roofs_and_drawn_cleanly(&report, &json.display().to_string());
            runs += 1;
        }
    }
    assert!(
        runs >= 4,
        "found {runs} runs of record under {}",
        root.display()
    );
}
