//! Kernels of your own (docs/own-kernels.md), end to end through the binary: the WGSL examples
//! verify on a wgpu adapter (lavapipe in CI), the broken ones give the right message and exit
//! status (a syntax error: naga's log with the file and line, exit 2; a wrong result: exit 1; an
//! endless loop: the watchdog, exit 1), and `new-kernel`'s stubs compile and fail verification.
//! The CUDA files compile with NVRTC alone; running them needs a GPU (scripts/gpu-byok.sh runs
//! the same on the GPU host). As in the matmul crate (its build.rs), the tests that need an
//! adapter, NVRTC or a GPU are `#[ignore]`d unless built with CI=true or MATMUL_REQUIRE_WGPU=1,
//! MATMUL_REQUIRE_NVRTC=1 or MATMUL_REQUIRE_GPU=1 respectively; run anyway without it, they fail.

use std::time::{Duration, Instant};

mod common;
use common::{ex, input_error, matmul, need_gpu, need_nvrtc, need_wgpu, temp_dir, text};

#[test]
#[cfg_attr(
    not(matmul_require_wgpu),
    ignore = "needs a wgpu adapter (lavapipe will do): MATMUL_REQUIRE_WGPU=1 cargo test, or -- --include-ignored"
)]
fn wgsl_examples_verify() {
    need_wgpu();
    let naive = ex("naive.wgsl");
    let tiled = ex("tiled.wgsl");
    let runs: Vec<Vec<&str>> = vec![
        vec![
            "--kernel-file",
            &naive,
            "-m",
            "100",
            "-n",
            "120",
            "-k",
            "70",
        ],
        vec![
            "--kernel-file",
            &naive,
            "--dtype",
            "u32",
            "--transpose-b",
            "-m",
            "33",
            "-n",
            "17",
            "-k",
            "65",
        ],
        vec![
            "--kernel-file",
            &tiled,
            "-D",
            "TILE=8",
            "--grid",
            "cdiv(N,TILE),cdiv(M,TILE)",
            "-m",
            "100",
            "-n",
            "120",
            "-k",
            "70",
        ],
        vec![
            "--kernel-file",
            &tiled,
            "-D",
            "TILE=16",
            "--grid",
            "cdiv(N,TILE),cdiv(M,TILE)",
            "--dtype",
            "u32",
            "--transpose-a",
            "-m",
            "65",
            "-n",
            "31",
            "-k",
            "129",
        ],
    ];
    for r in runs {
        let mut args = vec!["run", "--check-shapes"];
        args.extend(r.iter().copied());
        let o = matmul(&args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}\n{out}\n{err}");
        // The run's check and every shape of the sweep.
        assert_eq!(out.matches("PASS").count(), 9, "{out}");
        assert!(!out.contains("FAIL"), "{out}");
    }
}

#[test]
#[cfg_attr(
    not(matmul_require_wgpu),
    ignore = "needs a wgpu adapter (lavapipe will do): MATMUL_REQUIRE_WGPU=1 cargo test, or -- --include-ignored"
)]
fn wgsl_bench_places_the_kernel_beside_ours() {
    need_wgpu();
    let f = ex("tiled.wgsl");
    let dir = temp_dir("bench");
    let out_dir = dir.to_string_lossy().into_owned();
    let o = matmul(&[
        "bench",
        "--kernel-file",
        &f,
        "-D",
        "TILE=8",
        "--grid",
        "cdiv(N,TILE),cdiv(M,TILE)",
        "--sizes",
        "64",
        "--iters",
        "2",
        "--warmup",
        "1",
        "--kernels",
        "wgpu-naive",
        "--out",
        &out_dir,
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("64x64x64")).collect();
    assert_eq!(rows.len(), 3, "{out}");
    assert!(
        rows[0].contains("main (tiled.wgsl)") && rows[0].ends_with("PASS"),
        "{out}"
    );
    assert!(
        rows[1].contains("(our best)") && rows[2].contains("wgpu-naive"),
        "{out}"
    );
    // A row like ours in every report file: results.json (with its file and launch), the CSV,
    // report.md, report.html and the roofline.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    let mine = &json["records"][0];
    assert_eq!(mine["kernel"], "file:tiled.wgsl", "{mine}");
    assert_eq!(mine["status"], "OK", "{mine}");
    assert_eq!(mine["verification"]["passed"], true, "{mine}");
    assert!(mine["rate_gops"].as_f64().unwrap() > 0.0, "{mine}");
    assert_eq!(mine["kernel_file"]["path"], f.as_str(), "{mine}");
    assert_eq!(mine["kernel_file"]["lang"], "wgsl", "{mine}");
    assert_eq!(
        mine["kernel_file"]["options"],
        serde_json::json!(["-D", "TILE=8", "--grid", "cdiv(N,TILE),cdiv(M,TILE)"])
    );
    assert_eq!(json["records"][1]["kernel"], "auto");
    let csv = std::fs::read_to_string(dir.join("results.csv")).unwrap();
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with("file:tiled.wgsl,wgpu,f32,64,64,64,"),
        "{csv}"
    );
    for file in ["report.md", "report.html", "roofline.svg"] {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(text.contains("file:tiled.wgsl"), "{file}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    let o = matmul(&["bench", "--kernel-file", &f, "--suite", "shapes"]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
}

#[test]
#[cfg_attr(
    not(matmul_require_wgpu),
    ignore = "needs a wgpu adapter (lavapipe will do): MATMUL_REQUIRE_WGPU=1 cargo test, or -- --include-ignored"
)]
fn judge_runs_a_users_u32_kernel() {
    need_wgpu();
    let cases =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/public.in");
    let cases = cases.to_string_lossy().into_owned();
    // A generous watchdog: lavapipe on a loaded CI machine runs the 1024³ case slowly.
    let o = matmul(&[
        "judge",
        "--kernel-file",
        &ex("naive.wgsl"),
        "--timeout",
        "120",
        &cases,
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(
        out.starts_with("PASS") && out.contains("main (naive.wgsl)"),
        "{out}"
    );
    let o = matmul(&[
        "judge",
        "--kernel-file",
        &ex("broken/wrong.wgsl"),
        "--timeout",
        "120",
        &cases,
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(out.starts_with("FAIL"), "{out}");
}

#[test]
#[cfg_attr(
    not(matmul_require_wgpu),
    ignore = "needs a wgpu adapter (lavapipe will do): MATMUL_REQUIRE_WGPU=1 cargo test, or -- --include-ignored"
)]
fn wgsl_syntax_error_shows_naga_log_exit_2() {
    need_wgpu();
    let f = ex("broken/syntax.wgsl");
    let err = input_error(&["run", "--kernel-file", &f, "-m", "8", "-n", "8", "-k", "8"]);
    assert!(err.contains("syntax.wgsl:7:5"), "{err}");
    assert!(err.contains("expected `;`"), "{err}");
}

#[test]
#[cfg_attr(
    not(matmul_require_wgpu),
    ignore = "needs a wgpu adapter (lavapipe will do): MATMUL_REQUIRE_WGPU=1 cargo test, or -- --include-ignored"
)]
fn wgsl_wrong_result_fails_verification_exit_1() {
    need_wgpu();
    let f = ex("broken/wrong.wgsl");
    let o = matmul(&[
        "run",
        "--kernel-file",
        &f,
        "-m",
        "20",
        "-n",
        "30",
        "-k",
        "10",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(out.contains("check    FAIL"), "{out}");
    assert!(err.contains("does not match the CPU reference"), "{err}");
}

#[test]
#[cfg_attr(
    not(matmul_require_wgpu),
    ignore = "needs a wgpu adapter (lavapipe will do): MATMUL_REQUIRE_WGPU=1 cargo test, or -- --include-ignored"
)]
fn wgsl_endless_loop_is_stopped_by_the_watchdog() {
    need_wgpu();
    let f = ex("broken/endless.wgsl");
    let start = Instant::now();
    // llvmpipe ends any loop after 65535 iterations per invocation: a large grid keeps it busy.
    let o = matmul(&[
        "run",
        "--kernel-file",
        &f,
        "-m",
        "10",
        "-n",
        "10",
        "-k",
        "10",
        "--grid",
        "4096,4096",
        "--timeout",
        "2",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(err.contains("the watchdog killed it"), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn bad_command_lines_are_input_errors() {
    let naive = ex("naive.wgsl");
    for (args, want) in [
        (
            vec!["--kernel-file", "/nonexistent/x.cu"],
            "/nonexistent/x.cu",
        ),
        (
            vec!["--kernel-file", "x.txt"],
            ".cu (CUDA C++), .wgsl (WGSL) or .rs",
        ),
        (
            vec!["--kernel-file", &naive, "--grid", "N +"],
            "--grid `N +`",
        ),
        (
            vec!["--kernel-file", &naive, "--grid", "cdiv(N,X)"],
            "unknown variable `X`",
        ),
        (
            vec!["--kernel-file", &naive, "--grid", "N/3"],
            "not a whole number",
        ),
        (
            vec!["--kernel-file", &naive, "--block", "16,16"],
            "--block and --shared apply to .cu",
        ),
        (
            vec!["--kernel-file", &naive, "-D", "A B=1"],
            "not an identifier",
        ),
        (
            vec!["--kernel-file", &naive, "-D", "T2=1", "-D", "T2=2"],
            "-D T2 is given twice",
        ),
        (
            vec!["--kernel-file", &naive, "--dtype", "bf16"],
            "f32 or u32",
        ),
    ] {
        let mut a = vec!["run", "-m", "8", "-n", "8", "-k", "8"];
        a.extend(args.iter().copied());
        let err = input_error(&a);
        assert!(err.contains(want), "{a:?}: {err}");
    }
}

#[test]
#[cfg_attr(
    not(matmul_require_wgpu),
    ignore = "needs a wgpu adapter (lavapipe will do): MATMUL_REQUIRE_WGPU=1 cargo test, or -- --include-ignored"
)]
fn new_kernel_wgsl_stub_compiles_and_fails_until_filled_in() {
    let dir = temp_dir("wgsl");
    let d = dir.to_string_lossy().into_owned();
    let o = matmul(&["new-kernel", "mine", "--wgsl", "--dir", &d]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let again = matmul(&["new-kernel", "mine", "--wgsl", "--dir", &d]);
    assert_eq!(again.status.code(), Some(2), "an existing file is kept");
    assert_eq!(
        matmul(&["new-kernel", "no-t ok", "--dir", &d])
            .status
            .code(),
        Some(2)
    );
    need_wgpu();
    let f = dir.join("mine.wgsl").to_string_lossy().into_owned();
    let o = matmul(&[
        "run",
        "--kernel-file",
        &f,
        "-m",
        "20",
        "-n",
        "30",
        "-k",
        "10",
    ]);
    let (out, err) = text(&o);
    // It compiled (a launch line and a check), and failed: C is still the poison.
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        out.contains("check    FAIL") && out.contains("600 mismatches"),
        "{out}"
    );
    // Filled in, it passes.
    let filled = std::fs::read_to_string(&f).unwrap().replace(
        "    // TODO:",
        "    for (var l = 0u; l < p.k; l++) { acc += a[i * p.a_rs + l * p.a_cs] * b[l * p.b_rs + j * p.b_cs]; }\n    c[i * p.n + j] = acc;\n    // TODO:",
    );
    std::fs::write(&f, filled).unwrap();
    let o = matmul(&[
        "run",
        "--kernel-file",
        &f,
        "-m",
        "20",
        "-n",
        "30",
        "-k",
        "10",
        "--check-shapes",
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every CUDA file here (the examples, the broken ones but the syntax error, and the stub)
/// compiles with NVRTC; the syntax error's log names its file and line.
#[test]
#[cfg_attr(
    not(matmul_require_nvrtc),
    ignore = "needs libnvrtc: MATMUL_REQUIRE_NVRTC=1 cargo test, or -- --include-ignored"
)]
fn cuda_files_compile_with_nvrtc() {
    need_nvrtc();
    let dir = temp_dir("cu");
    let d = dir.to_string_lossy().into_owned();
    assert_eq!(
        matmul(&["new-kernel", "mine", "--dir", &d]).status.code(),
        Some(0)
    );
    let stub = dir.join("mine.cu").to_string_lossy().into_owned();
    let cache = matmul::cuda::DiskCache::disabled();
    for (file, defines) in [
        (ex("naive.cu"), vec![]),
        (ex("tiled.cu"), vec![("TILE", "16")]),
        (ex("broken/oob.cu"), vec![]),
        (ex("broken/endless.cu"), vec![]),
        (ex("broken/wrong.cu"), vec![]),
        (stub.clone(), vec![]),
    ] {
        for elem in ["float", "matmul_u32"] {
            let mut defs = vec![("ELEM".to_string(), elem.to_string())];
            defs.extend(defines.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            let text = std::fs::read_to_string(&file).unwrap();
            let c = matmul::cuda::compile_source(&file, &text, &defs, "sm_90a", &cache);
            assert!(c.is_ok(), "{file} ({elem}): {}", c.err().unwrap());
        }
    }
    // Without a GPU, `run` still reports the compile error (exit 2) with NVRTC's log.
    let f = ex("broken/syntax.cu");
    let err = input_error(&["run", "--kernel-file", &f, "-m", "8", "-n", "8", "-k", "8"]);
    assert!(
        err.contains("syntax.cu(10): error: expected a \";\""),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored (scripts/gpu-byok.sh runs the same)"
)]
fn cuda_examples_verify_and_time() {
    need_gpu();
    let (naive, tiled) = (ex("naive.cu"), ex("tiled.cu"));
    let out_dir = temp_dir("cuda-bench").to_string_lossy().into_owned();
    for args in [
        vec![
            "run",
            "--kernel-file",
            &naive,
            "-m",
            "500",
            "-n",
            "300",
            "-k",
            "200",
            "--check-shapes",
        ],
        vec![
            "run",
            "--kernel-file",
            &naive,
            "--dtype",
            "u32",
            "--transpose-a",
            "-m",
            "65",
            "-n",
            "31",
            "-k",
            "129",
            "--check-shapes",
        ],
        vec![
            "run",
            "--kernel-file",
            &tiled,
            "-D",
            "TILE=16",
            "--block",
            "TILE,TILE",
            "--grid",
            "cdiv(N,TILE),cdiv(M,TILE)",
            "--shared",
            "2*TILE*TILE*4",
            "-m",
            "500",
            "-n",
            "300",
            "-k",
            "200",
            "--check-shapes",
        ],
        vec![
            "bench",
            "--kernel-file",
            &tiled,
            "-D",
            "TILE=16",
            "--block",
            "TILE,TILE",
            "--grid",
            "cdiv(N,TILE),cdiv(M,TILE)",
            "--shared",
            "2*TILE*TILE*4",
            "--sizes",
            "1024",
            "--out",
            &out_dir,
        ],
    ] {
        let o = matmul(&args);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(0), "{args:?}\n{out}\n{err}");
        assert!(!out.contains("FAIL"), "{out}");
    }
}

#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored (scripts/gpu-byok.sh runs the same)"
)]
fn cuda_broken_kernels_fail_cleanly() {
    need_gpu();
    for (file, code, want) in [
        ("broken/syntax.cu", 2, "syntax.cu(10)"),
        ("broken/oob.cu", 1, "ILLEGAL_ADDRESS"), // cudarc: DriverError(CUDA_ERROR_ILLEGAL_ADDRESS, ...)
        ("broken/endless.cu", 1, "the watchdog killed it"),
        ("broken/wrong.cu", 1, "does not match the CPU reference"),
    ] {
        let f = ex(file);
        let start = Instant::now();
        let o = matmul(&[
            "run",
            "--kernel-file",
            &f,
            "-m",
            "64",
            "-n",
            "64",
            "-k",
            "64",
            "--timeout",
            "5",
        ]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(code), "{file}\n{out}\n{err}");
        assert!(err.contains(want), "{file}: {err}");
        assert!(start.elapsed() < Duration::from_secs(60), "{file}");
    }
    // `new-kernel`'s stub compiles and fails verification.
    let dir = temp_dir("gpu-stub");
    let d = dir.to_string_lossy().into_owned();
    assert_eq!(
        matmul(&["new-kernel", "mine", "--dir", &d]).status.code(),
        Some(0)
    );
    let stub = dir.join("mine.cu").to_string_lossy().into_owned();
    let o = matmul(&[
        "run",
        "--kernel-file",
        &stub,
        "-m",
        "20",
        "-n",
        "30",
        "-k",
        "10",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        out.contains("check    FAIL") && out.contains("600 mismatches"),
        "{out}"
    );
    // The device is still usable afterwards.
    let o = matmul(&[
        "run",
        "--kernel-file",
        &ex("naive.cu"),
        "-m",
        "64",
        "-n",
        "64",
        "-k",
        "64",
    ]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
}
