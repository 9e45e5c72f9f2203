//! scripts/gpu-steps.sh's verdict on a test executable, which every GPU-host script's test steps
//! go through (`test_step`): it reads cargo's counts, not the exit status alone, so a binary
//! that ran no test, or left tests ignored under a MATMUL_REQUIRE_* variable, fails the step.
//! The script is embedded and run by bash on sample outputs; no GPU needed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

const STEPS: &str = include_str!("../../../scripts/gpu-steps.sh");

/// A fresh directory holding gpu-steps.sh, one per call (the tests run in parallel).
fn dir(tag: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "gpu-steps-{tag}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("gpu-steps.sh"), STEPS).unwrap();
    d
}

/// Runs `script` in bash after sourcing gpu-steps.sh, with `out` = `d` and no MATMUL_REQUIRE_*
/// variable but those in `env`; its stdout.
fn bash(d: &Path, script: &str, env: &[(&str, &str)]) -> String {
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(format!("out=$1; source \"$1/gpu-steps.sh\"; {script}"))
        .arg("bash")
        .arg(d);
    for (k, _) in std::env::vars() {
        if k.starts_with("MATMUL_REQUIRE_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    let o = cmd.output().expect("bash runs");
    assert!(
        o.status.success(),
        "bash failed: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// test_verdict on a log holding `log`, exit status `rc`, with `why` (ignored on purpose) and
/// `env`.
fn verdict(log: &str, rc: i32, why: &str, env: &[(&str, &str)]) -> String {
    let d = dir("verdict");
    std::fs::write(d.join("t.log"), log).unwrap();
    let out = bash(
        &d,
        &format!("test_verdict \"$out/t.log\" {rc} '{why}'"),
        env,
    );
    let _ = std::fs::remove_dir_all(&d);
    out
}

const REQUIRE_GPU: &[(&str, &str)] = &[("MATMUL_REQUIRE_GPU", "1")];

fn result(passed: u32, failed: u32, ignored: u32, filtered: u32) -> String {
    let status = if failed > 0 { "FAILED" } else { "ok" };
    format!(
        "running {} tests\n\ntest result: {status}. {passed} passed; {failed} failed; \
         {ignored} ignored; 0 measured; {filtered} filtered out; finished in 0.01s\n\n",
        passed + failed + ignored
    )
}

#[test]
fn all_passed_is_a_pass_with_the_counts() {
    let log = result(5, 0, 0, 0);
    assert_eq!(verdict(&log, 0, "", &[]), "PASS 5 passed, 0 ignored");
    assert_eq!(
        verdict(&log, 0, "", REQUIRE_GPU),
        "PASS 5 passed, 0 ignored"
    );
}

#[test]
fn everything_ignored_fails_even_without_a_require_variable() {
    let log = result(0, 0, 3, 0);
    let v = verdict(&log, 0, "", REQUIRE_GPU);
    assert!(v.starts_with("FAIL 0 passed, 3 ignored"), "{v}");
    assert!(v.contains("ran no test"), "{v}");
    assert!(verdict(&log, 0, "", &[]).starts_with("FAIL"));
}

#[test]
fn ignored_tests_fail_under_a_require_variable_unless_meant() {
    let log = result(2, 0, 1, 0);
    let v = verdict(&log, 0, "", REQUIRE_GPU);
    assert_eq!(
        v,
        "FAIL 2 passed, 1 ignored: tests left ignored under MATMUL_REQUIRE_GPU=1"
    );
    let v = verdict(&log, 0, "", &[("MATMUL_REQUIRE_NVRTC", "1")]);
    assert!(
        v.starts_with("FAIL") && v.contains("MATMUL_REQUIRE_NVRTC=1"),
        "{v}"
    );
    assert_eq!(verdict(&log, 0, "", &[]), "PASS 2 passed, 1 ignored");
    assert_eq!(
        verdict(&log, 0, "gpu-nccl.sh runs them", REQUIRE_GPU),
        "PASS 2 passed, 1 ignored (gpu-nccl.sh runs them)"
    );
    // A REQUIRE variable set to anything but 1 requires nothing.
    assert!(verdict(&log, 0, "", &[("MATMUL_REQUIRE_GPU", "0")]).starts_with("PASS"));
}

#[test]
fn a_filter_that_matches_nothing_fails() {
    let v = verdict(&result(0, 0, 0, 40), 0, "", &[]);
    assert!(
        v.starts_with("FAIL 0 passed, 0 ignored") && v.contains("ran no test"),
        "{v}"
    );
}

#[test]
fn failures_crashes_and_timeouts_fail() {
    let v = verdict(&result(4, 1, 0, 0), 101, "", &[]);
    assert_eq!(v, "FAIL 4 passed, 1 failed, 0 ignored: exit 101");
    // No `test result` line: the binary crashed, or timed out (124), or was not a test binary.
    let v = verdict("running 3 tests\nSegmentation fault\n", 139, "", &[]);
    assert_eq!(v, "FAIL no test result (exit 139)");
    assert_eq!(verdict("", 124, "", &[]), "FAIL no test result (exit 124)");
    assert!(verdict("", 0, "", &[]).starts_with("FAIL no test result"));
}

#[test]
fn skip_lines_are_counted_and_several_results_summed() {
    let log = format!(
        "test a ... SKIP: no NCCL\nok\nSKIP: no GPU\n{}{}",
        result(3, 0, 0, 1),
        result(2, 0, 0, 0)
    );
    assert_eq!(
        verdict(&log, 0, "", &[]),
        "PASS 5 passed, 0 ignored, 2 SKIP line(s)"
    );
}

/// test_step end to end, on a stand-in test executable that echoes its arguments and prints
/// the counts it is told to: --include-ignored is added (unless --ignored-ok), and the table line
/// carries the counts.
#[test]
fn test_step_adds_include_ignored_and_records_the_counts() {
    let d = dir("step");
    let exe = d.join("test-fake");
    std::fs::write(
        &exe,
        "#!/usr/bin/env bash\necho \"args: $*\"\n\
         if [[ \" $* \" == *\" --include-ignored \"* ]]; then p=3 i=0; else p=1 i=3; fi\n\
         echo \"test result: ok. $p passed; 0 failed; $i ignored; 0 measured; 0 filtered out; finished in 0.00s\"\n",
    )
    .unwrap();
    let script = format!(
        "test_step test-fake 30 {exe} --nocapture >/dev/null; \
         test_step --ignored-ok 'elsewhere' test-kept 30 {exe} >/dev/null; \
         printf '%s\\n' \"${{results[@]}}\"; cat \"$out/test-fake.log\"",
        exe = exe.display()
    );
    let chmod = Command::new("chmod").arg("+x").arg(&exe).status().unwrap();
    assert!(chmod.success());
    let out = bash(&d, &script, REQUIRE_GPU);
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("PASS  test-fake (3 passed, 0 ignored; ") && lines[0].ends_with("s)"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("PASS  test-kept (1 passed, 3 ignored (elsewhere); "),
        "{out}"
    );
    assert_eq!(lines[2], "args: --nocapture --include-ignored", "{out}");
    let _ = std::fs::remove_dir_all(&d);
}
