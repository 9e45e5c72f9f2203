#!/usr/bin/env bash
# The user-facing checks and the benchmark, run on the GPU host from the repo root over a bundle
# made by scripts/gpu-bundle.sh (dist/gpu/):
#   1. ./test.sh X for the five seed-001 flags (the 104 judge cases on the GPU);
#   2. every `matmul puzzle` (exact match with the Mojo expectations);
#   3. `matmul bench` with the arguments given to this script (default: every kernel and dtype
#      at 1024, 2048, 4096), its report in $OUT/report.
# Prints a PASS/FAIL table last; exits non-zero if any step failed.
# Environment: OUT (default dist/gpu/logs), GPU_BENCH_TIMEOUT (seconds for the bench, default 420).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/logs}
mkdir -p "$out"
source "$here/gpu-steps.sh"
export MATMUL_BIN=$here/bin/matmul
bin=$MATMUL_BIN
for flag in TILING ELE ELEPACK ROW ROWPACK; do
    step "test.sh-$flag" 120 ./test.sh "$flag"
    tail -n 1 "$out/test.sh-$flag.log"
done
for p in naive single-block tiled idiomatic-tiled p14-naive p14-tiled; do
    step "puzzle-$p" 60 "$bin" puzzle "$p"
done
if [[ $# == 0 ]]; then set -- --sizes 1024,2048,4096; fi
step bench "${GPU_BENCH_TIMEOUT:-420}" "$bin" bench --out "$out/report" "$@"
cat "$out/bench.log" | grep -v "^\s*$" | tail -n 80
summary gpu-bench
