//! `matmul report`: re-rendering a saved results.json and comparing two runs, from the run of
//! record under bench/baselines/ (no device needed), and every unusable input named, status 2.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use matmul_bench::Report;

fn matmul(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_matmul"))
        .args(args)
        .output()
        .expect("the matmul binary starts")
}

fn suite_run() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../bench/baselines/h100-80gb-hbm3/suite/results.json")
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("matmul-report-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn load(path: &Path) -> Report {
    Report::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_saved_run_renders_every_file_again() {
    let out = temp_dir("render");
    let o = matmul(&[
        "report",
        suite_run().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let original = load(&suite_run());
    for f in [
        "results.json",
        "results.csv",
        "roofline.svg",
        "ladder.svg",
        "report.md",
        "report.html",
    ] {
        assert!(out.join(f).is_file(), "{f} not written");
    }
    assert_eq!(load(&out.join("results.json")), original);
    // The same roofline as the run of record's, drawn from the same model.
    let committed = suite_run().with_file_name("roofline.svg");
    assert_eq!(
        std::fs::read_to_string(out.join("roofline.svg")).unwrap(),
        std::fs::read_to_string(committed).unwrap()
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let tbody = &html[html.find("<tbody>").unwrap()..html.find("</tbody>").unwrap()];
    assert_eq!(tbody.matches("<tr ").count(), original.records.len());
    assert!(
        html.contains("data-chart=\"shapes\""),
        "a suite run has its rate per case"
    );
    assert!(text(&o.stdout).contains("auto"), "the table on stdout");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn by_default_the_files_go_beside_results_and_it_is_left_as_it_is() {
    let dir = temp_dir("beside");
    let results = dir.join("results.json");
    std::fs::copy(suite_run(), &results).unwrap();
    let before = std::fs::read(&results).unwrap();
    let o = matmul(&["report", results.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read(&results).unwrap(),
        before,
        "the input is not rewritten"
    );
    assert!(dir.join("report.html").is_file() && dir.join("roofline.svg").is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn compare_gives_per_case_ratios_and_their_geomean() {
    let dir = temp_dir("compare");
    // B: the run of record with `auto` twice as slow on f32, cuBLAS unchanged.
    let mut b = load(&suite_run());
    for r in b
        .records
        .iter_mut()
        .filter(|r| r.kernel == "auto" && r.dtype == matmul::DType::F32)
    {
        if let Some(t) = r.timing.as_mut() {
            t.stats.median *= 2.0;
        }
        r.rate_gops = r.rate_gops.map(|x| x / 2.0);
    }
    let b_path = dir.join("b.json");
    std::fs::write(&b_path, b.to_json().unwrap()).unwrap();
    let out = dir.join("out");
    let o = matmul(&[
        "report",
        suite_run().to_str().unwrap(),
        "--compare",
        b_path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let md = text(&o.stdout);
    assert!(md.contains("| f32 | auto | 49 | 2.00× | 2.00× |"), "{md}");
    assert!(md.contains("| f32 | cublas | 49 | 1.00× | 1.00× |"), "{md}");
    assert!(md.contains("geometric mean"), "{md}");
    assert_eq!(std::fs::read_to_string(out.join("compare.md")).unwrap(), md);
    let html = std::fs::read_to_string(out.join("compare.html")).unwrap();
    let tbody = &html[html.find("<tbody>").unwrap()..html.find("</tbody>").unwrap()];
    let cases = b.records.len();
    assert_eq!(tbody.matches("<tr ").count(), cases);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unusable_input_is_status_2_naming_the_file() {
    let dir = temp_dir("bad");
    let write = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        p.to_str().unwrap().to_string()
    };
    let missing = dir.join("missing.json").to_str().unwrap().to_string();
    let not_json = write("not.json", "{ nope");
    let future = write("future.json", r#"{"schema_version": 9}"#);
    let other = write("other.json", r#"{"schema_version": 2, "records": []}"#);
    let array = write("array.json", "[1, 2]");
    let good = suite_run().to_str().unwrap().to_string();
    let file_out = write("out-file", "");
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (vec![&missing], &missing, "cannot read"),
        (vec![&not_json], &not_json, "not JSON"),
        (vec![&future], &future, "schema_version 9"),
        (vec![&other], &other, "does not fit the results.json schema"),
        (vec![&array], &array, "no schema_version"),
        (vec![&good, "--compare", &not_json], &not_json, "not JSON"),
        (vec![&good, "--out", &file_out], &file_out, "is a file"),
    ];
    for (args, file, why) in cases {
        let mut full = vec!["report"];
        full.extend(args.iter().copied());
        let o = matmul(&full);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{full:?}: {err}");
        assert!(
            err.lines()
                .any(|l| l.starts_with("matmul: ") && l.contains(file) && l.contains(why)),
            "{full:?}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
