#!/usr/bin/env bash
# The GPU check, run on the GPU host from the repo root, over a bundle made by
# scripts/gpu-bundle.sh (dist/gpu/). Steps, each logged to $OUT/<step>.log:
#   1. nvidia-smi summary;
#   2. every bundled test executable with MATMUL_REQUIRE_GPU=1 and MATMUL_REQUIRE_NVRTC=1 (a
#      missing GPU or NVRTC fails instead of skipping);
#   3. compute-sanitizer memcheck and racecheck over the GPU tests, on small shapes
#      (MATMUL_TEST_SMALL=1); more tools with GPU_CHECK_TOOLS="memcheck racecheck synccheck ...".
# Prints a PASS/FAIL table last and exits non-zero if any step failed.
#
# Environment: OUT (log directory; default dist/gpu/logs), GPU_CHECK_TIMEOUT (seconds per step,
# default 300), GPU_CHECK_TOOLS, GPU_CHECK_SKIP_SANITIZER=1.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/logs}
mkdir -p "$out"
limit=${GPU_CHECK_TIMEOUT:-300}
tools=${GPU_CHECK_TOOLS:-memcheck racecheck}

export MATMUL_REQUIRE_GPU=1 MATMUL_REQUIRE_NVRTC=1 RUST_BACKTRACE=1
# A fresh CUBIN cache for this check, shared by its steps.
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export MATMUL_CACHE_DIR=$cache

source "$here/gpu-steps.sh"

step nvidia-smi "$limit" nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,temperature.gpu,power.limit --format=csv
cat "$out/nvidia-smi.log"

tests=()
for exe in "$here"/bin/test-*; do
    [[ -x $exe ]] && tests+=("$exe")
done
if [[ ${#tests[@]} == 0 ]]; then
    results+=("FAIL  no test executables in $here/bin (run scripts/gpu-bundle.sh)")
fi
for exe in "${tests[@]}"; do
    step "$(basename "$exe")" "$limit" "$exe" --nocapture
done
if [[ -x $here/bin/matmul ]]; then
    step cli-devices "$limit" "$here/bin/matmul" devices
    cat "$out/cli-devices.log"
fi
# What the sweeps and the compile table printed.
grep -h "^RESULT\|^SKIP" "$out"/test-*.log 2>/dev/null
grep -h -A60 "^kernel  *dtype" "$out"/test-compile.log 2>/dev/null | grep "sm_90a" || true

if [[ ${GPU_CHECK_SKIP_SANITIZER:-0} != 1 ]]; then
    sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n1)
    if [[ -z $sanitizer ]]; then
        results+=("FAIL  compute-sanitizer not found")
    elif [[ ! -x $here/bin/test-gpu ]]; then
        results+=("FAIL  no bin/test-gpu for the sanitizer")
    else
        for tool in $tools; do
            # The sweeps, puzzles, tile overrides and poisoning; small shapes only. racecheck
            # and synccheck only matter where a kernel shares memory between threads (and
            # leave cuBLAS to NVIDIA).
            case $tool in
                memcheck | initcheck) filter=(--skip timing) ;;
                *) filter=(sweep_rowpack sweep_elepack sweep_single_block sweep_tiled puzzle tile_overrides
                    sweep_blocktile sweep_vectorized sweep_warptile sweep_multistage sweep_simt_tma sweep_mma_sync
                    sweep_wgmma) ;;
            esac
            # memcheck: small shapes; the shared-memory tools: the tiny set (racecheck's cost
            # grows with shared-memory traffic, and the big SIMT tiles have a lot of it).
            size=1
            [[ $tool == memcheck || $tool == initcheck ]] || size=tiny
            MATMUL_TEST_SMALL=$size step "sanitizer-$tool" "$limit" "$sanitizer" --tool "$tool" --error-exitcode 99 \
                "$here/bin/test-gpu" --test-threads 4 "${filter[@]}"
            grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|hazard" "$out/sanitizer-$tool.log" | sort | uniq -c | head -n 5
        done
    fi
fi

summary gpu-check
