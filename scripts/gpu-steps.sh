# Sourced by every gpu-*.sh that runs on the GPU host: CUDA's libraries on the library path, the
# ncu binary, and named steps run with a time limit, each logged to $out/NAME.log, with a PASS/FAIL
# summary at the end (`step` and `test_step` need `out` set by the caller). A test executable runs
# through `test_step`, which reads cargo's test counts: a run of no test, or (under a
# MATMUL_REQUIRE_* variable) one that left tests ignored, fails (crates/matmul-cli/tests/gpu_steps.rs
# tests it).
results=()

# CUDA's libraries (libnvrtc, libcublas) where the toolkit keeps them, ahead on LD_LIBRARY_PATH.
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/*-linux/lib /usr/local/cuda-13*/lib64; do
    [[ -d $d ]] && LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
done
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}

# find_ncu: sets `ncu` to Nsight Compute ($NCU, else ncu on PATH or under /usr/local/cuda), or fails.
find_ncu() {
    ncu=${NCU:-$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -n 1)}
    [[ -x $ncu ]] || { echo "ncu not found" >&2; return 1; }
}

# ncu_setup SCRIPT ARGS...: the common start of the one-launch ncu scripts (gpu-ncu.sh,
# gpu-ncu-source.sh): ARGS must be KERNEL DTYPE M N K [extra `matmul run` arguments] (otherwise the
# usage, exit 2); sets kernel dtype m n k, run_args (the extra arguments), out ($OUT, default
# $here/logs, created) and ncu.
ncu_setup() {
    local script=$1
    shift
    if (($# < 5)); then
        echo "usage: $script KERNEL DTYPE M N K [matmul run arguments]" >&2
        exit 2
    fi
    kernel=$1 dtype=$2 m=$3 n=$4 k=$5
    shift 5
    run_args=("$@")
    out=${OUT:-$here/logs}
    mkdir -p "$out"
    find_ncu || exit 1
}

# run_logged NAME TIMEOUT COMMAND...: runs COMMAND with a time limit, its output in $out/NAME.log;
# sets the caller's `rc` and `secs`.
run_logged() {
    local name=$1 limit=$2 start
    shift 2
    echo "== $name: $*"
    start=$(date +%s)
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    secs=$(($(date +%s) - start))
}

# step NAME TIMEOUT COMMAND...: runs, logs, records PASS/FAIL with the wall time; shows the
# log's tail on failure.
step() {
    local name=$1 limit=$2 rc secs
    shift 2
    run_logged "$name" "$limit" "$@"
    if [[ $rc == 0 ]]; then
        results+=("PASS  $name (${secs}s)")
    else
        results+=("FAIL  $name (exit $rc, ${secs}s; log $out/$name.log)")
        tail -n 40 "$out/$name.log"
    fi
}

# test_counts LOG: the sums over cargo's `test result: ok. 5 passed; 0 failed; 2 ignored; ...`
# lines in LOG, as "LINES PASSED FAILED IGNORED" (LINES: how many such lines there were).
test_counts() {
    awk '/^test result: / {
            n++
            for (i = 2; i <= NF; i++) {
                if ($i ~ /^passed;?$/) p += $(i - 1)
                else if ($i ~ /^failed;?$/) f += $(i - 1)
                else if ($i ~ /^ignored;?$/) g += $(i - 1)
            }
        }
        END { printf "%d %d %d %d\n", n, p, f, g }' "$1"
}

# required_by: the MATMUL_REQUIRE_* variables set to 1 here ("" if none), e.g.
# "MATMUL_REQUIRE_GPU=1 MATMUL_REQUIRE_NVRTC=1".
required_by() {
    local v list=()
    for v in $(compgen -v MATMUL_REQUIRE_); do
        [[ ${!v} == 1 ]] && list+=("$v=1")
    done
    echo "${list[*]}"
}

# test_verdict LOG RC [WHY]: the verdict on a test executable's run (exit status RC, output in
# LOG) from its counts, not its exit status alone: prints "PASS <counts>" or
# "FAIL <counts>: <why>". It fails when the executable exited non-zero, printed no `test result`
# line, ran no test (0 passed: everything ignored or filtered out), or, under a MATMUL_REQUIRE_*
# variable, left tests ignored, unless WHY is given (they are ignored on purpose; WHY says where
# they run). Lines printing `SKIP: ` (a test that returned early) are counted beside.
test_verdict() {
    local log=$1 rc=$2 why=${3:-} lines passed failed ignored skips counts req
    read -r lines passed failed ignored < <(test_counts "$log")
    skips=$(grep -c "SKIP: " "$log")
    counts="$passed passed, $ignored ignored"
    ((failed > 0)) && counts="$passed passed, $failed failed, $ignored ignored"
    ((ignored > 0)) && [[ -n $why ]] && counts+=" ($why)"
    ((skips > 0)) && counts+=", $skips SKIP line(s)"
    req=$(required_by)
    if ((lines == 0)); then
        echo "FAIL no test result (exit $rc)"
    elif [[ $rc != 0 ]]; then
        echo "FAIL $counts: exit $rc"
    elif ((failed > 0)); then
        echo "FAIL $counts: tests failed"
    elif ((passed == 0)); then
        echo "FAIL $counts: ran no test"
    elif ((ignored > 0)) && [[ -n $req && -z $why ]]; then
        echo "FAIL $counts: tests left ignored under $req"
    else
        echo "PASS $counts"
    fi
}

# test_step [--ignored-ok WHY] NAME TIMEOUT COMMAND...: `step` for a cargo test executable
# (COMMAND may wrap it, as compute-sanitizer does), judged by test_verdict. --include-ignored is
# added (the GPU tests are #[ignore]d in a bundle built without MATMUL_REQUIRE_GPU=1), unless
# --ignored-ok WHY leaves the ignored tests ignored on purpose. The PASS/FAIL line carries the
# counts: `PASS  test-gpu_fp32 (3 passed, 0 ignored; 41s)`.
test_step() {
    local why=""
    if [[ $1 == --ignored-ok ]]; then
        why=$2
        shift 2
    fi
    local name=$1 limit=$2 rc secs verdict
    shift 2
    local cmd=("$@")
    if [[ -z $why && " ${cmd[*]} " != *" --include-ignored "* && " ${cmd[*]} " != *" --ignored "* ]]; then
        cmd+=(--include-ignored)
    fi
    run_logged "$name" "$limit" "${cmd[@]}"
    verdict=$(test_verdict "$out/$name.log" "$rc" "$why")
    if [[ $verdict == PASS* ]]; then
        results+=("PASS  $name (${verdict#PASS }; ${secs}s)")
    else
        results+=("FAIL  $name (${verdict#FAIL }; ${secs}s; log $out/$name.log)")
        tail -n 40 "$out/$name.log"
    fi
}

# summary TITLE: prints every step's line; returns 1 if any failed.
summary() {
    echo
    echo "== $1 summary ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
    local r failed=0
    for r in "${results[@]}"; do
        echo "$r"
        [[ $r == FAIL* ]] && failed=1
    done
    return $failed
}
