# Sourced by every gpu-*.sh that runs on the GPU host: CUDA's libraries on the library path, the
# ncu binary, and (gpu-check.sh, gpu-bench.sh) named steps run with a time limit, each logged to
# $out/NAME.log, with a PASS/FAIL summary at the end (`step` needs `out` set by the caller).
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
