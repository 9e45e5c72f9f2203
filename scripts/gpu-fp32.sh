#!/usr/bin/env bash
# The FP32-emulating (3xTF32) kernel's GPU check (wgmma-3xtf32; any other *3xtf32 kernel too), run on the GPU host from the repo root over a
# bundle made by scripts/gpu-bundle.sh (dist/gpu/), in about 5–8 minutes of an H100 (12 at most: the
# steps' time limits; a step that hangs ends the run). Steps, each logged to $OUT/fp32/<step>.log:
#   1. test-gpu_fp32: the accuracy tables (tests/gpu_fp32.rs): every 3xtf32 kernel, cuBLAS SGEMM
#      and cuBLAS TF32 against the f64 reference on uniform, exponent-spread, cancellation,
#      all-positive, K = 65,536, 1×1×20000, outlier, row-scaled and K = 2^20 inputs (each at most
#      SGEMM's error), and the special-value case (every element SGEMM's class: NaN, ±inf, ±0);
#   2. test-gpu: the GPU sweeps of the 3xtf32 kernels (awkward shapes × op(A)/op(B), C poisoned);
#   3. compute-sanitizer memcheck over those sweeps on small shapes (MATMUL_TEST_SMALL=1);
#   4. `matmul bench` of the 3xtf32 kernels against cuBLAS SGEMM (f32) and cuBLAS TF32 (tf32) at
#      FP32_SIZES (default 2048,4096,8192), with the error column.
# Prints the RESULT lines and a PASS/FAIL table last; exits non-zero if any step failed.
# Environment: OUT (log directory; default dist/gpu/logs/fp32), FP32_KERNELS (default: every
# 3xtf32 kernel of the bundled registry), FP32_SIZES, FP32_ROUNDS (bench rounds, default 3).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/logs}/fp32
mkdir -p "$out"
bin=$here/bin/matmul
export MATMUL_REQUIRE_GPU=1 MATMUL_REQUIRE_NVRTC=1 RUST_BACKTRACE=1
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export MATMUL_CACHE_DIR=$cache
source "$here/gpu-steps.sh"

kernels=${FP32_KERNELS:-$("$bin" list 2>/dev/null | awk '$1 ~ /3xtf32/ {print $1}' | paste -sd, -)}
[[ -n $kernels ]] || kernels=wgmma-3xtf32
echo "3xtf32 kernels: $kernels"
IFS=, read -ra names <<<"$kernels"
# libtest filters (substrings) for their sweeps (tests/gpu.rs sweep_<name with _>).
sweeps=()
for k in "${names[@]}"; do sweeps+=("sweep_${k//-/_}"); done

"$bin" list --verbose --kernels "$kernels" 2>&1 | sed -n '/^ptxas/,$p' >"$out/ptxas.txt"
cat "$out/ptxas.txt"

# hung: whether the last step ran out of time (a kernel that deadlocks would hang every later step
# too, so the rest is skipped and the run stays within its budget).
hung() { [[ ${results[-1]} == *"exit 124"* ]]; }

test_step test-gpu_fp32 180 "$here/bin/test-gpu_fp32" --include-ignored --nocapture --test-threads 1
grep -h "^RESULT\|^test .*\(ok\|FAILED\)$" "$out/test-gpu_fp32.log"
hung && { summary gpu-fp32; exit 1; }

test_step test-gpu-sweep-3xtf32 150 "$here/bin/test-gpu" --include-ignored --nocapture "${sweeps[@]}"
grep -h "^test .*\(ok\|FAILED\)$" "$out/test-gpu-sweep-3xtf32.log"
hung && { summary gpu-fp32; exit 1; }

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n1)
if [[ -n $sanitizer ]]; then
    MATMUL_TEST_SMALL=1 test_step sanitizer-memcheck-3xtf32 150 "$sanitizer" --tool memcheck --error-exitcode 99 \
        "$here/bin/test-gpu" --include-ignored --test-threads 4 "${sweeps[@]}"
    grep -h "ERROR SUMMARY" "$out/sanitizer-memcheck-3xtf32.log" | sort | uniq -c
else
    results+=("FAIL  compute-sanitizer not found")
fi

# f32: the 3xtf32 kernels and cuBLAS SGEMM; tf32: cuBLAS TF32 (the 3xtf32 kernels are f32 only,
# bench leaves them out of tf32 cases).
step bench-fp32 240 "$bin" bench --kernels "$kernels,cublas" --dtypes f32,tf32 \
    --sizes "${FP32_SIZES:-2048,4096,8192}" --rounds "${FP32_ROUNDS:-3}" --no-ceilings --out "$out/report"
grep -v "^\s*$" "$out/bench-fp32.log" | tail -n 40

summary gpu-fp32
