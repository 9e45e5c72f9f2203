# Sourced by gpu-check.sh and gpu-bench.sh: run named steps with a time limit, log each to
# $out/NAME.log, and print a PASS/FAIL summary at the end. Needs `out` set by the caller.
results=()

# step NAME TIMEOUT COMMAND...: runs, logs, records PASS/FAIL with the wall time; shows the
# log's tail on failure.
step() {
    local name=$1 limit=$2 start rc
    shift 2
    echo "== $name: $*"
    start=$(date +%s)
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    local secs=$(($(date +%s) - start))
    if [[ $rc == 0 ]]; then
        results+=("PASS  $name (${secs}s)")
    else
        results+=("FAIL  $name (exit $rc, ${secs}s; log $out/$name.log)")
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
