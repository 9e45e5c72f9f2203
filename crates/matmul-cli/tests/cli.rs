//! The `matmul` binary end to end: stdout carries exactly the signatures, exit statuses are
//! 0 / 1 / 2, and every bad input is named on stderr. CPU backend throughout (works without a GPU).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn matmul(args: &[&str], stdin: &str) -> Output {
    matmul_env(args, stdin, &[])
}

fn matmul_env(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_matmul"))
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the matmul binary starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(name)
}

/// Exit status 2, and on stderr one line, `matmul: ...` (ours) or `error: ...` (clap's), that
/// names what is wrong (contains `needle`); returns stderr.
#[track_caller]
fn bad_input(args: &[&str], stdin: &str, needle: &str) -> String {
    let out = matmul(args, stdin);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.lines()
            .any(|l| (l.starts_with("matmul: ") || l.starts_with("error: ")) && l.contains(needle)),
        "{args:?}: no line of stderr names {needle:?}:\n{err}"
    );
    err
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("matmul-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn signatures_of_every_official_case_on_the_cpu() {
    let out = matmul(
        &[
            "signature",
            "--backend",
            "cpu",
            data("public.in").to_str().unwrap(),
        ],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = std::fs::read_to_string(data("public.out")).unwrap();
    assert_eq!(
        stdout(&out),
        expected,
        "stdout must be exactly one signature per line"
    );
}

#[test]
fn known_values_from_stdin_with_any_whitespace_and_no_final_newline() {
    let out = matmul(
        &["signature", "--backend", "cpu"],
        "2\t2 5\n\n  64 1\n2 1024 2 3",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "573770929\n3376147904\n3864859904\n");
}

#[test]
fn the_mask_generator_differs_only_off_powers_of_two() {
    let judge = matmul(
        &["signature", "--backend", "cpu"],
        "64 1 2\n3 13721 15710\n",
    );
    let mask = matmul(
        &["signature", "--backend", "cpu", "--generator", "mask"],
        "64 1 2\n3 13721 15710\n",
    );
    let (j, m) = (stdout(&judge), stdout(&mask));
    let (j, m): (Vec<_>, Vec<_>) = (j.lines().collect(), m.lines().collect());
    assert_eq!(j[0], m[0]);
    assert_ne!(j[1], m[1]);
}

#[test]
fn bad_input_names_line_token_and_rule_and_keeps_earlier_results() {
    let cases: &[(&str, &str)] = &[
        (
            "2 2 5\n3 abc 1\n",
            "line 2: `abc`: S1 is not a non-negative integer",
        ),
        (
            "2 2 5\n3 1",
            "line 2: incomplete case: expected S2 after `3 1`",
        ),
        ("2 2 5\n-4 1 1\n", "line 2: `-4`: N must not be negative"),
        ("2 2 5\n0 1 1\n", "line 2: `0`: N must be at least 1"),
        (
            "2 2 5\n65536 1 1\n",
            "line 2: `65536`: N must be at most 65535",
        ),
        (
            "2 2 5\n4 1 4294967296\n",
            "line 2: `4294967296`: S2 must be at most 4294967295",
        ),
        (
            "2 2 5\n4 1 2.5\n",
            "line 2: `2.5`: S2 is not a non-negative integer",
        ),
    ];
    for (input, message) in cases {
        let out = matmul(&["signature", "--backend", "cpu"], input);
        assert_eq!(out.status.code(), Some(2), "input {input:?}");
        assert_eq!(
            stdout(&out),
            "573770929\n",
            "the valid case before the error still prints"
        );
        assert!(
            stderr(&out).contains(message),
            "input {input:?}: stderr {:?} lacks {message:?}",
            stderr(&out)
        );
    }
}

#[test]
fn a_size_that_cannot_fit_is_refused_before_allocating() {
    // 3 · 4096² · 4 bytes ≈ 201 MB against a 100 MB limit (the same path as MemAvailable).
    let out = matmul_env(
        &["signature", "--backend", "cpu"],
        "4096 1 1\n",
        &[("MATMUL_MAX_HOST_BYTES", "100000000")],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("bytes of host memory"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_missing_file_and_an_unknown_kernel_are_input_errors() {
    let out = matmul(&["signature", "/no/such/file.in"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("cannot read /no/such/file.in"));
    let out = matmul(&["signature", "--kernel", "quantum"], "2 2 5\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown kernel `quantum`"));
    let out = matmul(&["signature", "--kernel", "cublas"], "2 2 5\n");
    assert_ne!(out.status.code(), Some(0));
}

/// A bad token of 2 MB (or 100 kB on the command line) comes back cut to 64 characters, with
/// its length, not whole.
#[test]
fn long_bad_tokens_are_cut_in_messages() {
    let token = "7".repeat(2_000_000);
    let err = bad_input(
        &["signature", "--backend", "cpu"],
        &format!("2 2 5\n{token} 1 1\n"),
        &format!(
            "line 2: `{}…` (2000000 bytes): N must be at most",
            &token[..64]
        ),
    );
    assert!(err.len() < 300, "{err}");
    let value = "x".repeat(100_000);
    for args in [
        vec!["run", "--dtype", &value, "-m", "1", "-n", "1", "-k", "1"],
        vec!["bench", "--backend", "cpu", "--shapes", &value],
        vec!["bench", "--backend", "cpu", "--kernels", &value],
        vec!["bench", "--backend", "cpu", "--min-time", &value],
        vec![
            "run", "--kernel", "cpu", "--tiling", &value, "-m", "1", "-n", "1", "-k", "1",
        ],
    ] {
        let err = bad_input(&args, "", "(100000 bytes)");
        assert!(err.len() < 600, "{}: {err}", args[..2].join(" "));
    }
    let dir = temp_dir("judge-long");
    std::fs::write(dir.join("t.in"), "2 2 5\n").unwrap();
    std::fs::write(dir.join("t.out"), format!("{value}\n")).unwrap();
    let input = dir.join("t.in");
    let err = bad_input(
        &["judge", "--kernel", "cpu", input.to_str().unwrap()],
        "",
        "line 1: `xxxx",
    );
    assert!(
        err.contains("(100000 bytes) is not a u32 signature"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A judge file saved with a UTF-8 byte-order mark (as Windows editors write) reads as without.
#[test]
fn a_byte_order_mark_at_the_start_is_accepted() {
    let out = matmul(&["signature", "--backend", "cpu"], "\u{feff}2 2 5\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "573770929\n");
    let dir = temp_dir("judge-bom");
    std::fs::write(dir.join("t.in"), "\u{feff}2 2 5\n64 1 2\n").unwrap();
    std::fs::write(dir.join("t.out"), "\u{feff}573770929\n3376147904\n").unwrap();
    let input = dir.join("t.in");
    let out = matmul(&["judge", "--kernel", "cpu", input.to_str().unwrap()], "");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).starts_with("PASS "), "{}", stdout(&out));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn judge_passes_the_official_cases_and_reports_the_first_difference() {
    let out = matmul(
        &[
            "judge",
            "--kernel",
            "cpu",
            data("public.in").to_str().unwrap(),
        ],
        "",
    );
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).starts_with("PASS "), "{}", stdout(&out));

    let dir = temp_dir("judge");
    std::fs::write(dir.join("t.in"), "2 2 5\n3 13721 15710\n64 1 2\n").unwrap();
    std::fs::write(dir.join("t.out"), "573770929\n2887358614\n3376147904\n").unwrap();
    let out = matmul(
        &[
            "judge",
            "--kernel",
            "cpu",
            dir.join("t.in").to_str().unwrap(),
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(text.starts_with("FAIL "), "{text}");
    assert!(text.contains("case 2 (line 2: 3 13721 15710): expected 2887358614, got 2887358615; 1 of 3 cases differ"), "{text}");
}

#[test]
fn run_checks_every_dtype_against_the_reference() {
    for dtype in ["f32", "u32", "tf32", "bf16", "f16"] {
        let out = matmul(
            &[
                "run",
                "--kernel",
                "cpu",
                "--dtype",
                dtype,
                "-m",
                "17",
                "-n",
                "33",
                "-k",
                "65",
                "--transpose-b",
            ],
            "",
        );
        assert!(
            out.status.success(),
            "{dtype}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(
            stdout(&out).contains("check    PASS"),
            "{dtype}: {}",
            stdout(&out)
        );
    }
    let out = matmul(
        &[
            "run", "--kernel", "cpu", "--dtype", "u32", "-m", "64", "-n", "64", "-k", "64",
            "--init", "judge", "--seed", "1",
        ],
        "",
    );
    assert!(
        stdout(&out).contains("signature 3376147904"),
        "{}",
        stdout(&out)
    );
}

/// Inputs beyond the dtype's range (f16's 65504) leave the reference itself infinite: that is
/// the input's fault, said so with the dtype and its largest finite value, status 2, before any
/// kernel runs (before, "cpu does not match the CPU reference, rel. error inf", status 1).
#[test]
fn out_of_range_inputs_are_blamed_not_the_kernel() {
    fn run<'a>(extra: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec![
            "run", "--kernel", "cpu", "--dtype", "f16", "--init", "arange",
        ];
        args.extend_from_slice(extra);
        args
    }
    let err = bad_input(
        &run(&["-m", "300", "-n", "300", "-k", "300"]),
        "",
        "the inputs are out of f16's range: A holds values that round to ±inf or NaN in f16 (the largest finite f16 is 65504)",
    );
    assert!(
        err.contains("--init arange fills A with 0 to 89999"),
        "{err}"
    );
    assert!(!err.contains("does not match"), "{err}");
    bad_input(
        &run(&["-m", "100", "-n", "100", "-k", "100", "--c-dtype", "input"]),
        "",
        "the inputs are too large for C in f16: the exact sums of the reference round to ±inf or NaN in f16 (the largest finite f16 is 65504)",
    );
    // The same inputs with C in f32 fit, and pass.
    let out = matmul(&run(&["-m", "100", "-n", "100", "-k", "100"]), "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("check    PASS"), "{}", stdout(&out));
}

#[test]
fn run_rejects_bad_arguments_with_status_2() {
    let bad: &[&[&str]] = &[
        &["run", "--dtype", "f64", "-m", "2", "-n", "2", "-k", "2"],
        &["run", "--kernel", "cpu", "-m", "0", "-n", "2", "-k", "2"],
        &[
            "run", "--kernel", "cpu", "--dtype", "f32", "--init", "judge", "-m", "4", "-n", "4",
            "-k", "4",
        ],
        &["run", "--kernel", "cpu", "-m", "x", "-n", "2", "-k", "2"],
        &["bench", "--backend", "cpu", "--rounds", "0"],
        &["bench", "--backend", "cpu", "--iters", "0"],
        &["bench", "--backend", "cpu", "--min-time", "nan"],
        &["bench", "--backend", "cpu", "--min-time=-1"],
        &["bench", "--backend", "cpu", "--max-case-seconds", "0"],
        &["bench", "--backend", "cpu", "--max-iters", "0"],
        &["tune", "--iters", "0"],
        &["tune", "--max-candidates", "0"],
    ];
    for args in bad {
        let out = matmul(args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(!stderr(&out).is_empty());
    }
}

/// The exit-status contract's bad inputs: status 2 and a one-line message naming what is wrong,
/// decided before any device is opened (so the same on a machine with a GPU and without).
#[test]
fn bad_input_is_status_2_naming_what_is_wrong() {
    let cases: &[(&[&str], &str)] = &[
        // Nothing would run because of the input.
        (&["bench", "--sizes", "0"], "`0` is not a size"),
        (
            &["bench", "--backend", "cpu", "--shapes", "0x4x4"],
            "bad shape `0x4x4`",
        ),
        (
            &["bench", "--backend", "cpu", "--kernels", "cpu", "--sizes", "99999999"],
            "f32 99999999x99999999x99999999 needs",
        ),
        (
            &["bench", "--kernels", "wgmma", "--dtypes", "u32", "--sizes", "64"],
            "nothing would run: no kernel of the run can run any of its problems (the first refusal: kernel `wgmma` cannot run u32 64x64x64: dtype u32 is not supported",
        ),
        (
            &["bench", "--backend", "cpu", "--kernels", "cpu", "--sizes", "64", "--max-mnk", "100"],
            "every case is above the run's size budget of 100",
        ),
        // Kernels and backends that do not go together.
        (
            &["bench", "--backend", "cpu", "--kernels", "tiled"],
            "--kernels: `tiled` runs on the cuda backend, not on the cpu backend --backend names",
        ),
        (
            &["bench", "--kernels", "cpu,tiled"],
            "`cpu` runs on the cpu backend and `tiled` on cuda; one bench runs on one backend",
        ),
        (
            &["run", "--backend", "cpu", "--kernel", "tiled", "-m", "4", "-n", "4", "-k", "4"],
            "kernel `tiled` runs on the cuda backend, not on the cpu backend asked for",
        ),
        // Options that do not apply to the kernel.
        (
            &["run", "--kernel", "cpu", "--tiling", "64x64x8/8x8", "-m", "4", "-n", "4", "-k", "4"],
            "--tiling applies to the SIMT-ladder kernels (blocktile-1d, ",
        ),
        (
            &["run", "--kernel", "cpu", "--autotune", "-m", "4", "-n", "4", "-k", "4"],
            "--autotune applies to --kernel auto (it measures auto's candidates); `cpu` is named",
        ),
        (
            &["run", "--kernel", "cpu", "--tile", "0", "-m", "4", "-n", "4", "-k", "4"],
            "--tile applies to the kernels with a TILE or TPB (naive, single-block, tiled, tiled-async, naive@rs, tiled@rs, wgpu-naive, wgpu-single-block, wgpu-tiled, wgpu-naive@rs, wgpu-tiled@rs); `cpu` has none",
        ),
        (
            &["run", "--kernel", "tiled", "--tile", "0", "-m", "4", "-n", "4", "-k", "4"],
            "kernel `tiled` cannot run f32 4x4x4: TILE 0 needs 0 threads per block; TILE must be 1 to 32",
        ),
        (
            &["bench", "--backend", "cpu", "--tiling", "64x64x8/8x8"],
            "--tiling applies to the SIMT-ladder kernels",
        ),
        (
            &["list", "--kernels", "nope"],
            "unknown kernel `nope` (see `matmul list`)",
        ),
        (
            &["list", "--kernels", "tiled"],
            "--kernels applies to --verbose's ptxas report; add --verbose",
        ),
        (
            &["list", "--tiling", "64x64x8/8x8"],
            "--tiling applies to --verbose's ptxas report",
        ),
        (
            &["list", "--verbose", "--kernels", "tiled", "--tiling", "64x64x8/8x8"],
            "none of --kernels has a tiling",
        ),
        (&["list", "--json", "--verbose"], "--json prints the registry only"),
        (
            &["list", "--verbose", "--arch", "sm90"],
            "--arch `sm90`: expected sm_XY or sm_XYa",
        ),
        // tune checks its input before it looks for a device.
        (&["tune", "--kernels", "nope"], "unknown kernel `nope`"),
        (
            &["tune", "--kernels", "tiled"],
            "kernel `tiled` has no tiling to tune",
        ),
        (
            &["tune", "--kernels", "warptile", "--dtypes", "bf16"],
            "kernel `warptile` runs none of the dtypes asked for (it runs f32, u32)",
        ),
        (&["tune", "--shapes", "0"], "bad shape `0`"),
        (
            &["tune", "--suite", "no-such-suite"],
            "no suite `no-such-suite`: not a built-in suite",
        ),
    ];
    for (args, needle) in cases {
        bad_input(args, "", needle);
    }
}

/// `--out` is checked before anything is timed: a file, or a path where no directory can be
/// made, is refused (before, the whole run was timed and its results lost); an existing report
/// directory is reused. tune's `--out` is checked before the device is looked for.
#[test]
fn out_paths_are_checked_before_the_run() {
    let dir = temp_dir("out-check");
    let file = dir.join("a-file");
    std::fs::write(&file, "keep me").unwrap();
    let bench = |out: &str| {
        vec![
            "bench",
            "--backend",
            "cpu",
            "--kernels",
            "cpu",
            "--dtypes",
            "f32",
            "--shapes",
            "8",
            "--no-ceilings",
            "--iters",
            "2",
            "--out",
            out,
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let f = file.to_str().unwrap().to_string();
    let args = bench(&f);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let err = bad_input(
        &args,
        "",
        &format!("--out {f}: is a file; --out names the report's directory"),
    );
    assert!(!err.contains("measuring"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
    let under = format!("{f}/report");
    let args = bench(&under);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    bad_input(
        &args,
        "",
        &format!("--out {under}: cannot write the report there"),
    );
    // A directory with an earlier report: replaced.
    let report = dir.join("report");
    let r = report.to_str().unwrap().to_string();
    for _ in 0..2 {
        let args = bench(&r);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = matmul(&args, "");
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert!(report.join("results.json").is_file());
    // tune: a directory as the table's file, before any device.
    let d = dir.to_str().unwrap();
    bad_input(
        &["tune", "--out", d],
        "",
        &format!("--out {d}: is a directory"),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CUDA kernel, `--backend cuda`, `tune` and `puzzle` on a machine without a usable GPU are a
/// runtime condition, status 1, in every subcommand alike (CUDA_VISIBLE_DEVICES="" hides any
/// GPU, so this holds on a GPU host too); bad input beside it is still status 2.
#[test]
fn no_gpu_is_status_1_in_every_subcommand() {
    let public = data("public.in");
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "--kernel", "tiled", "-m", "4", "-n", "4", "-k", "4"],
            "kernel `tiled` needs a CUDA device",
        ),
        (
            &[
                "bench",
                "--kernels",
                "tiled",
                "--sizes",
                "8",
                "--no-ceilings",
            ],
            "kernel `tiled` needs a CUDA device",
        ),
        (
            &[
                "bench",
                "--backend",
                "cuda",
                "--sizes",
                "8",
                "--no-ceilings",
            ],
            "no CUDA device",
        ),
        (&["tune"], "tuning needs a CUDA device"),
        (
            &["soak", "--backend", "cuda", "--seconds", "1"],
            "no CUDA device",
        ),
        (&["puzzle", "tiled"], "kernel `tiled` needs a CUDA device"),
        (
            &["signature", "--kernel", "TILING", public.to_str().unwrap()],
            "kernel `tiled` needs a CUDA device",
        ),
        (
            &["judge", "--kernel", "TILING", public.to_str().unwrap()],
            "kernel `tiled` needs a CUDA device",
        ),
    ];
    let hidden = [("CUDA_VISIBLE_DEVICES", "")];
    for (args, needle) in cases {
        let out = matmul_env(args, "", &hidden);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.lines().last().unwrap_or("").starts_with("matmul: ") && err.contains(needle),
            "{args:?}: {err}"
        );
    }
    // Bad input is found first: status 2 whatever the device.
    let dir = temp_dir("judge-bad-first");
    std::fs::write(dir.join("t.in"), "2 2 x\n").unwrap();
    std::fs::write(dir.join("t.out"), "1\n").unwrap();
    let input = dir.join("t.in");
    for args in [
        vec!["judge", "--kernel", "TILING", input.to_str().unwrap()],
        vec!["bench", "--kernels", "tiled", "--sizes", "99999999"],
        vec![
            "run", "--kernel", "tiled", "--tile", "64", "-m", "4", "-n", "4", "-k", "4",
        ],
    ] {
        let out = matmul_env(&args, "", &hidden);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bench_times_as_many_launches_as_asked() {
    // --iters above the 1000 launches that --min-time stops at (before 2026-11-25 it was cut to
    // 1000 without a word), and --min-time with a raised --max-iters.
    let out_dir = temp_dir("bench-iters");
    let timed = |extra: &[&str]| -> u64 {
        let dir = out_dir.to_str().unwrap();
        let mut args = vec![
            "bench",
            "--backend",
            "cpu",
            "--kernels",
            "cpu",
            "--dtypes",
            "f32",
            "--shapes",
            "8x8x8",
            "--no-ceilings",
            "--out",
            dir,
        ];
        args.extend_from_slice(extra);
        let out = matmul(&args, "");
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join("results.json")).unwrap())
                .unwrap();
        json["records"][0]["timing"]["iters"].as_u64().unwrap()
    };
    assert_eq!(timed(&["--iters", "1500"]), 1500);
    assert_eq!(timed(&["--min-time", "1", "--max-iters", "1200"]), 1200);
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn bench_suite_errors_name_the_suite_file_line_and_token() {
    let out = matmul(&["bench", "--backend", "cpu", "--suite", "nope"], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no suite `nope`: not a built-in suite (shapes, quick)"),
        "{err}"
    );
    let dir = temp_dir("bench-suite-bad");
    let file = dir.join("bad.txt");
    std::fs::write(&file, "# mine\n64 square\n32x32 square\n").unwrap();
    let path = file.to_str().unwrap();
    let out = matmul(&["bench", "--backend", "cpu", "--suite", path], "");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("{path}:3: `32x32` is not a shape")),
        "{}",
        stderr(&out)
    );
    std::fs::write(&file, "# nothing\n").unwrap();
    let out = matmul(&["bench", "--backend", "cpu", "--suite", path], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no cases"), "{}", stderr(&out));
    // A suite brings its own shapes.
    let out = matmul(
        &[
            "bench",
            "--backend",
            "cpu",
            "--suite",
            "quick",
            "--shapes",
            "8",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The built-in quick suite on the CPU: `auto` runs the CPU's kernel, the cases above the CPU's
/// size budget are skipped with the reason, and the report names the suite and the choice.
#[test]
fn bench_runs_the_quick_suite_on_the_cpu() {
    let dir = temp_dir("bench-suite-quick");
    let out = matmul(
        &[
            "bench",
            "--backend",
            "cpu",
            "--suite",
            "quick",
            "--kernels",
            "auto",
            "--dtypes",
            "f32",
            "--no-ceilings",
            "--warmup",
            "1",
            "--min-time",
            "0.01",
            "--out",
            dir.to_str().unwrap(),
        ],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(err.contains("suite `quick`"), "{err}");
    assert!(text.contains("auto (cpu)"), "{text}");
    assert!(text.contains("above the run's size budget"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["suite"], "quick");
    let records = json["records"].as_array().unwrap();
    assert_eq!(records.len(), 10);
    let ok: Vec<&serde_json::Value> = records.iter().filter(|r| r["status"] == "OK").collect();
    assert!(ok.len() >= 3, "{text}");
    for r in ok {
        assert_eq!(
            (&r["kernel"], &r["chosen"]),
            (&"auto".into(), &"cpu".into())
        );
        assert!(!r["tags"].as_array().unwrap().is_empty());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A suite from a file, against a baseline: the summary (geometric mean, worst case, per tag)
/// is printed and written to report.md.
#[test]
fn bench_summarises_a_suite_file_against_the_baseline() {
    let dir = temp_dir("bench-suite-file");
    let file = dir.join("tiny.txt");
    std::fs::write(
        &file,
        "16 square\n8x24x40 --transpose-b small-m transposed # a comment\n",
    )
    .unwrap();
    let out_dir = dir.join("report");
    let out = matmul(
        &[
            "bench",
            "--backend",
            "cpu",
            "--suite",
            file.to_str().unwrap(),
            "--kernels",
            "auto,cpu-reference",
            "--no-ceilings",
            "--iters",
            "3",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        "",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let header = text
        .lines()
        .find(|l| l.starts_with("dtype") && l.contains("worst case"))
        .unwrap_or_else(|| panic!("no summary in\n{text}"));
    for class in ["square", "small-m", "transposed"] {
        assert!(header.contains(class), "{header}");
    }
    for dtype in ["f32", "u32"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{dtype}    auto"))),
            "{text}"
        );
    }
    assert!(
        text.contains("Against cpu-reference over the suite"),
        "{text}"
    );
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(md.contains("## Suite summary"), "{md}");
    assert!(md.contains("| f32 | auto | 2 |"), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn list_shows_every_registry_kernel() {
    let out = matmul(&["list"], "");
    assert!(out.status.success());
    for k in matmul::KERNELS {
        assert!(
            stdout(&out).contains(k.name),
            "{} missing from `matmul list`",
            k.name
        );
    }
    let json = matmul(&["list", "--json"], "");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), matmul::KERNELS.len());
}

#[test]
fn devices_never_crash_without_a_gpu() {
    let out = matmul(&["devices"], "");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("cpu "));
    assert!(stdout(&out).contains("\ncuda "));
}

/// `matmul ... | head`: a reader that closes the pipe early ends the process by SIGPIPE, quietly,
/// as other Unix tools end (before, `list`, `run` and the rest panicked in `println!`). 20,000
/// signatures are more than a pipe holds, so a write after the close is certain.
#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_process_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_matmul"))
        .args(["signature", "--backend", "cpu"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("matmul starts");
    drop(child.stdout.take()); // the reader goes away before reading anything
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // The process may end before it has read all of this: a failed write is expected.
        let _ = stdin.write_all("2 1 2\n".repeat(20_000).as_bytes());
    });
    let out = child.wait_with_output().expect("matmul ends");
    writer.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.signal(),
        Some(SIGPIPE),
        "status {:?}, stderr: {stderr}",
        out.status
    );
}

/// SIGPIPE's number (13 on Linux, macOS and the BSDs).
#[cfg(unix)]
const SIGPIPE: i32 = 13;

/// SIGINT (then SIGTERM) in the middle of a bench: the run stops after the case in progress,
/// writes the report of the cases finished, marked partial, and exits 128 + the signal.
#[cfg(unix)]
#[test]
fn an_interrupted_bench_writes_a_partial_report() {
    for (signal, name, code) in [(libc::SIGINT, "int", 130), (libc::SIGTERM, "term", 143)] {
        let out = std::env::temp_dir().join(format!(
            "matmul-cli-interrupt-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&out);
        // Hundreds of cases, a few milliseconds each at least: far more than a second of work.
        let sizes: Vec<String> = (64..=512).step_by(8).map(|n| n.to_string()).collect();
        let child = Command::new(env!("CARGO_BIN_EXE_matmul"))
            .args([
                "bench",
                "--backend",
                "cpu",
                "--kernels",
                "cpu,cpu-reference",
                "--dtypes",
                "f32",
            ])
            .args([
                "--no-ceilings",
                "--min-time",
                "0.02",
                "--sizes",
                &sizes.join(","),
            ])
            .arg("--out")
            .arg(&out)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(code), "{}", stderr(&o));
        assert!(stderr(&o).contains("marked partial"), "{}", stderr(&o));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
                .unwrap();
        let partial = json["partial"].as_str().expect("a partial report");
        assert!(partial.starts_with("interrupted"), "{partial}");
        let records = json["records"].as_array().unwrap().len();
        assert!(
            records < 2 * sizes.len(),
            "{records} records: the run was not stopped"
        );
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(md.contains("Partial run"));
        let _ = std::fs::remove_dir_all(&out);
    }
}

/// `run --gpus`, `run --rank` and `bench --gpus`: bad input is status 2 before any device is
/// looked for (the rule named); no GPUs (or too few, or no NCCL) is status 1 with the reason,
/// never a panic.
#[test]
fn multi_gpu_refuses_bad_input_and_a_missing_environment() {
    let run = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut v = vec!["run", "-m", "64", "-n", "64", "-k", "64"];
        v.extend_from_slice(extra);
        v
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            run(&["--gpus", "1"]),
            "needs at least 2 (leave --gpus out for one GPU)",
        ),
        (vec!["bench", "--gpus", "0"], "needs at least 2"),
        (
            run(&["--gpus", "2", "--layout", "ring"]),
            "unknown layout `ring`",
        ),
        (
            vec![
                "run", "-m", "8", "-n", "8", "-k", "1", "--gpus", "2", "--layout", "gemm-rs",
            ],
            "K = 1 cannot be split over 2 GPUs (layout gemm-rs splits K into 2 parts",
        ),
        (
            vec![
                "bench", "--gpus", "4", "--layout", "ag-gemm", "--shapes", "64x3x64",
            ],
            "N = 3 cannot be split over 4 GPUs",
        ),
        (
            run(&["--gpus", "2", "--transpose-a"]),
            "does not apply to a multi-GPU product",
        ),
        (
            run(&["--gpus", "2", "--tile", "8"]),
            "--tile does not apply",
        ),
        (
            run(&["--gpus", "2", "--backend", "cpu"]),
            "--backend (other than cuda)",
        ),
        (
            run(&["--layout", "ag-gemm"]),
            "--layout applies to a multi-GPU product: add --gpus N",
        ),
        (
            vec!["bench", "--gpus", "2", "--suite", "shapes"],
            "--suite does not apply to `bench --gpus`",
        ),
        (
            vec!["bench", "--gpus", "2", "--kernels", "auto,cublas"],
            "times one local kernel",
        ),
        (
            vec!["bench", "--gpus", "2", "--kernels", "nope"],
            "unknown kernel `nope`",
        ),
        (
            run(&["--rank", "2", "--world", "2", "--id-file", "/x/id"]),
            "the rank below it",
        ),
        (
            run(&["--rank", "0"]),
            "the following required arguments were not provided",
        ),
        (
            run(&[
                "--rank",
                "0",
                "--world",
                "2",
                "--id-file",
                "/x/id",
                "--gpus",
                "2",
            ]),
            "cannot be used with",
        ),
    ];
    for (args, needle) in &cases {
        bad_input(args, "", needle);
    }
    // The rendezvous and the launcher's variables: status 2 naming what is missing or wrong.
    type EnvCase<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, &'a str);
    let env_cases: Vec<EnvCase> = vec![
        (
            run(&["--rank", "0", "--world", "2"]),
            vec![],
            "needs a rendezvous",
        ),
        (
            run(&["--launched"]),
            vec![("RANK", "1"), ("WORLD_SIZE", "2")],
            "needs a rendezvous",
        ),
        (
            run(&["--launched"]),
            vec![("RANK", "one"), ("WORLD_SIZE", "2")],
            "RANK=\"one\" is not a non-negative whole number",
        ),
        (
            run(&["--launched", "--master", "h:1"]),
            vec![("SLURM_PROCID", "4"), ("SLURM_NTASKS", "4")],
            "SLURM_PROCID=4 is not below SLURM_NTASKS=4",
        ),
        (
            run(&[
                "--rank",
                "0",
                "--world",
                "2",
                "--id-file",
                "/x/id",
                "--bind",
                "0.0.0.0:1",
            ]),
            vec![],
            "--bind applies to --master",
        ),
        (
            run(&[
                "--rank",
                "0",
                "--world",
                "2",
                "--id-file",
                "/x/id",
                "--master",
                "h:1",
            ]),
            vec![],
            "cannot be used with",
        ),
        (
            run(&[
                "--rank",
                "0",
                "--world",
                "2",
                "--id-file",
                "/x/id",
                "--layout",
                "auto",
            ]),
            vec![],
            "--layout auto applies to --gpus N",
        ),
    ];
    for (args, env, needle) in &env_cases {
        let out = matmul_env(args, "", env);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?} {env:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?} {env:?}: want `{needle}` in {err}"
        );
    }
    for args in [
        run(&["--gpus", "2"]),
        vec![
            "bench",
            "--gpus",
            "2",
            "--sizes",
            "64",
            "--out",
            "/dev/null/x",
        ],
        run(&[
            "--rank",
            "0",
            "--world",
            "2",
            "--id-file",
            "/nonexistent/id",
        ]),
    ] {
        let out = matmul_env(&args, "", &[("CUDA_VISIBLE_DEVICES", "")]);
        let err = stderr(&out);
        // Without GPUs: status 1 naming what is missing (--out's directory, unwritable, is
        // status 2 and comes first).
        let want = if args.contains(&"/dev/null/x") { 2 } else { 1 };
        assert_eq!(out.status.code(), Some(want), "{args:?}: {err}");
        assert!(
            err.lines().last().unwrap_or("").starts_with("matmul: "),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `matmul soak` on the CPU backend: every job verified, none failed, both CPU kernels ran
/// products and judge cases, and the summary line counts them; bad arguments are exit 2.
#[test]
fn a_short_cpu_soak_verifies_every_result() {
    let out = matmul(&["soak", "--backend", "cpu", "--seconds", "2"], "");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    let result = text
        .lines()
        .find(|l| l.starts_with("RESULT soak "))
        .unwrap_or_else(|| panic!("no RESULT line:\n{text}"));
    let field = |name: &str| -> String {
        result
            .split_whitespace()
            .find_map(|f| f.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {result}"))
            .to_string()
    };
    assert_eq!(field("failures"), "0", "{result}");
    assert_eq!(field("backend"), "cpu", "{result}");
    assert!(field("launches").parse::<u64>().unwrap() > 0, "{result}");
    assert!(field("judge_cases").parse::<u64>().unwrap() > 0, "{result}");
    assert!(
        field("host_rss_mib").split('/').next().unwrap() != "n/a" || !cfg!(target_os = "linux")
    );
    for kernel in ["cpu", "cpu-reference"] {
        let row = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(kernel))
            .unwrap_or_else(|| panic!("no row for {kernel}:\n{text}"));
        let cols: Vec<u64> = row
            .split_whitespace()
            .skip(1)
            .map(|c| c.parse().unwrap())
            .collect();
        // runs, timed, judge, launches, failures
        assert!(
            cols[0] > 0 && cols[2] > 0 && cols[3] >= cols[0] + cols[2],
            "{row}"
        );
        assert_eq!(cols[4], 0, "{row}");
    }
    bad_input(
        &["soak", "--seconds", "0"],
        "",
        "--seconds must be more than 0",
    );
    bad_input(
        &["soak", "--seconds", "inf"],
        "",
        "--seconds must be more than 0",
    );
    bad_input(&["soak", "--dtypes", "f64"], "", "unknown dtype `f64`");
}

/// Without XDG_RUNTIME_DIR (ssh logins, containers), probing adapters prints no window-system
/// noise: `devices` lists the backends and stderr stays empty of libwayland's complaint.
#[test]
fn devices_without_a_runtime_dir_are_quiet() {
    let out = Command::new(env!("CARGO_BIN_EXE_matmul"))
        .arg("devices")
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .expect("the matmul binary starts");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("cpu"), "{}", stdout(&out));
    assert!(
        !stderr(&out).contains("XDG_RUNTIME_DIR"),
        "window-system noise: {}",
        stderr(&out)
    );
}

/// `matmul show`: a kernel written once in Rust in its three forms (the Rust, the generated CUDA
/// with its -D parameters, the generated WGSL whole), a hand-written one in its own language;
/// asking a hand-written kernel for Rust, or a form it has not, is status 2 naming it.
#[test]
fn show_prints_the_source_each_backend_gets() {
    let out = matmul(&["show", "tiled@rs", "--lang", "rust"], "");
    assert!(out.status.success());
    let rust = String::from_utf8_lossy(&out.stdout);
    assert!(
        rust.contains("fn tiled(") && rust.contains("superstep();"),
        "{rust}"
    );
    let out = matmul(&["show", "tiled@rs"], "");
    let cuda = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        cuda.contains("-DTILE=16") && cuda.contains("__syncthreads();"),
        "{cuda}"
    );
    let out = matmul(&["show", "wgpu-tiled@rs", "--dtype", "u32"], "");
    let wgsl = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        wgsl.contains("alias T = u32;") && wgsl.contains("workgroupBarrier();"),
        "{wgsl}"
    );
    let out = matmul(&["show", "ELE"], "");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("__global__"));
    for args in [
        &["show", "wgmma", "--lang", "rust"][..],
        &["show", "naive", "--lang", "wgsl"],
        &["show", "wgmma", "--dtype", "u32"],
        &["show", "no-such-kernel"],
    ] {
        let out = matmul(args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!String::from_utf8_lossy(&out.stderr).is_empty(), "{args:?}");
    }
}
