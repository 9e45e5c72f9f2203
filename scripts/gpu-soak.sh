#!/usr/bin/env bash
# The reliability run on the GPU host (issue 42, docs/reliability.md), over a bundle made by
# scripts/gpu-bundle.sh (dist/gpu/), from the repo root:
#   fault  test-gpu's a_faulting_kernel_loses_the_context_cleanly (examples/kernels/broken/oob.cu
#          writes past C: the error names the kernel, shape and ILLEGAL_ADDRESS; the next run is
#          refused as ContextLost);
#   soak   `matmul soak --backend cuda --seconds $SOAK_SECONDS` (default 300): every CUDA kernel
#          for u32, f32 and bf16 on awkward and large shapes and judge triples, in rounds, each
#          result verified; a fresh kernel cache, so round 1 includes the NVRTC compiles.
# Each step logs to $OUT/<step>.log; printed: the fault line, the soak's progress, failures,
# kernels (name:launches), memory table and RESULT line, then a PASS/FAIL table (exit 1 if any
# step failed). About SOAK_SECONDS + 1 min on an H100.
# Environment: OUT (log directory; default dist/gpu/logs), SOAK_SECONDS, MATMUL_BIN.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/logs}
mkdir -p "$out"
seconds=${SOAK_SECONDS:-300}
bin=${MATMUL_BIN:-$here/bin/matmul}
export MATMUL_REQUIRE_GPU=1 MATMUL_REQUIRE_NVRTC=1 RUST_BACKTRACE=1
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export MATMUL_CACHE_DIR=$cache

source "$here/gpu-steps.sh"

nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader 2>&1 | head -n 2

# The fault: its own process, since a fault leaves the context unusable until the process ends.
test_step fault 120 "$here/bin/test-gpu" --include-ignored --exact a_faulting_kernel_loses_the_context_cleanly --nocapture
grep -h "^RESULT fault\|^test result" "$out/fault.log"

step soak $((seconds + 240)) "$bin" soak --backend cuda --seconds "$seconds"
log=$out/soak.log
grep -h "^soak:\|^ *[0-9]* s: round\|^FAIL\|^the CUDA context\|^matmul:" "$log"
# The per-kernel table as name:launches(failures when any), several to a line.
awk '/^kernel  *runs/ {t=1; next} /^memory/ {t=0} t && NF == 6 {printf "%s:%s%s\n", $1, $5, ($6 > 0 ? "(" $6 " failed)" : "")}' "$log" |
    paste -sd' ' | fold -s -w 110
grep -h -A2 "^memory (MiB)" "$log"
grep -h "^RESULT soak" "$log"

summary gpu-soak
