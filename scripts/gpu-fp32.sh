#!/usr/bin/env bash
# FP32 accuracy on tensor cores (issue 40), run on the GPU host from the repo root over a bundle made
# by scripts/gpu-bundle.sh (dist/gpu/), in about 3–4 minutes of an H100. Steps, each logged to
# $OUT/fp32/<step>.log:
#   1. test-gpu_fp32: at 2048³ uniform [−1, 1), the error in u = 2⁻²⁴ (|C − C_f64| / (|A|·|B|),
#      max and mean) of cuBLAS SGEMM, multistage-raster, TF32 (cuBLAS, wgmma-tf32) and every
#      3xTF32 kernel (mma-sync-3xtf32), asserting the 3xTF32 ones within 2× SGEMM's max
#      (RESULT lines); test-gpu's sweep of mma-sync-3xtf32 (awkward shapes × op(A)/op(B), C
#      poisoned);
#   2. compute-sanitizer memcheck over that sweep on small shapes (MATMUL_TEST_SMALL=1);
#   3. `matmul bench` of the 3xTF32 kernels, wgmma-tf32 (dtype tf32), multistage-raster and cuBLAS
#      (f32 and tf32) at 2048, 4096, 8192: rates and the error columns side by side.
# Prints a PASS/FAIL table last and exits non-zero if any step failed.
# Environment: OUT (log directory; default dist/gpu/logs), FP32_KERNELS (default: every *3xtf32
# kernel of the bundled registry), FP32_SIZES (default 2048,4096,8192).
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

kernels=${FP32_KERNELS:-$("$bin" list 2>/dev/null | awk '$1 ~ /3xtf32$/ {print $1}' | paste -sd, -)}
[[ -n $kernels ]] || kernels=mma-sync-3xtf32
echo "3xTF32 kernels: $kernels"
sweeps=()
IFS=, read -ra names <<<"$kernels"
for k in "${names[@]}"; do sweeps+=("sweep_${k//-/_}"); done

step test-gpu-fp32-accuracy 180 "$here/bin/test-gpu_fp32" --include-ignored --nocapture
grep -h "^RESULT\|^test .*\(ok\|FAILED\)$" "$out/test-gpu-fp32-accuracy.log"
step test-gpu-fp32-sweep 300 "$here/bin/test-gpu" --include-ignored --nocapture "${sweeps[@]}" \
    every_cuda_kernel_has_a_sweep
grep -h "^test .*\(ok\|FAILED\)$" "$out/test-gpu-fp32-sweep.log"

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n1)
if [[ -n $sanitizer ]]; then
    MATMUL_TEST_SMALL=1 step sanitizer-memcheck-fp32 300 "$sanitizer" --tool memcheck --error-exitcode 99 \
        "$here/bin/test-gpu" --include-ignored --test-threads 4 "${sweeps[@]}"
    grep -h "ERROR SUMMARY" "$out/sanitizer-memcheck-fp32.log" | sort | uniq -c
else
    results+=("FAIL  compute-sanitizer not found")
fi

step bench-fp32 240 "$bin" bench --kernels "$kernels,wgmma-tf32,multistage-raster,cublas" --dtypes f32,tf32 \
    --sizes "${FP32_SIZES:-2048,4096,8192}" --no-ceilings --out "$out/report"
grep -v "^\s*$" "$out/bench-fp32.log" | tail -n 40

summary gpu-fp32
