#!/usr/bin/env bash
# The byte-split (u8x4) kernels' GPU check, run on the GPU host from the repo root over a bundle
# made by scripts/gpu-bundle.sh (dist/gpu/), in about 3–4 minutes of an H100. Steps, each logged
# to $OUT/int8/<step>.log:
#   1. test-gpu: the u8x4 sweeps (every awkward shape × op(A)/op(B), u32 bit for bit, C
#      poisoned), K = 70,000 (the s32 wrap: all-0xFFFFFFFF and random inputs), 17921×257 (more
#      tiles than SMs: the persistent wgmma-u8x4-tma walks several per block) and the 104 public
#      judge vectors;
#   2. compute-sanitizer memcheck over the same tests on small shapes (MATMUL_TEST_SMALL=1), and
#      racecheck over the sweeps on the tiny set (the kernels compile at first use: NVRTC on the host);
#   3. `matmul signature` and `matmul judge` through each u8x4 kernel on the public vectors;
#   4. `matmul bench` of the u8x4 kernels against multistage-raster (IMAD) and cuBLAS (which has
#      no u32 GEMM: bench leaves it out of u32 cases) at 1024, 4096, 8192.
# Prints a PASS/FAIL table last and exits non-zero if any step failed.
# Environment: OUT (log directory; default dist/gpu/logs/int8), INT8_KERNELS (default: every
# u8x4 kernel of the bundled registry), INT8_SIZES (default 1024,4096,8192).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/logs}/int8
mkdir -p "$out"
bin=$here/bin/matmul
data=$here/tests/data
[[ -d $data ]] || data=$(cd "$here/../.." 2>/dev/null && pwd)/tests/data
export MATMUL_REQUIRE_GPU=1 MATMUL_REQUIRE_NVRTC=1 RUST_BACKTRACE=1
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export MATMUL_CACHE_DIR=$cache
source "$here/gpu-steps.sh"

# The u8x4 kernels of this build (`matmul list` rows whose name ends in -u8x4 or -u8x4-tma).
kernels=${INT8_KERNELS:-$("$bin" list 2>/dev/null | awk '$1 ~ /-u8x4(-tma)?$/ {print $1}' | paste -sd, -)}
[[ -n $kernels ]] || kernels=mma-u8x4
echo "u8x4 kernels: $kernels"

# (libtest filters are substrings: `u8x4` takes every u8x4 test, the wgmma-u8x4-tma sweep included.)
tests=(u8x4 every_cuda_kernel_has_a_sweep)
step test-gpu-u8x4 300 "$here/bin/test-gpu" --include-ignored --nocapture "${tests[@]}"
grep -h "^RESULT\|^test .*\(ok\|FAILED\)$" "$out/test-gpu-u8x4.log"

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n1)
if [[ -n $sanitizer ]]; then
    MATMUL_TEST_SMALL=1 step sanitizer-memcheck-u8x4 300 "$sanitizer" --tool memcheck --error-exitcode 99 \
        "$here/bin/test-gpu" --include-ignored --test-threads 4 sweep_mma_u8x4 sweep_wgmma_u8x4 u8x4_wraps u8x4_many
    grep -h "ERROR SUMMARY" "$out/sanitizer-memcheck-u8x4.log" | sort | uniq -c
    MATMUL_TEST_SMALL=tiny step sanitizer-racecheck-u8x4 300 "$sanitizer" --tool racecheck --error-exitcode 99 \
        "$here/bin/test-gpu" --include-ignored --test-threads 4 sweep_mma_u8x4 sweep_wgmma_u8x4
    grep -h "RACECHECK SUMMARY\|ERROR SUMMARY" "$out/sanitizer-racecheck-u8x4.log" | sort | uniq -c
else
    results+=("FAIL  compute-sanitizer not found")
fi

IFS=, read -ra names <<<"$kernels"
for k in "${names[@]}"; do
    # stdout alone (the signatures) to its own file; the step log keeps stderr.
    step "signature-$k" 120 bash -c '"$0" signature --kernel "$1" --backend cuda "$2" >"$3"' \
        "$bin" "$k" "$data/public.in" "$out/signature-$k.out"
    if diff <(tr -s ' \n' '\n' <"$out/signature-$k.out" | grep -v '^$') \
        <(tr -s ' \n' '\n' <"$data/public.out" | grep -v '^$') >/dev/null; then
        results+=("PASS  signature-$k = public.out")
    else
        results+=("FAIL  signature-$k differs from public.out ($out/signature-$k.out)")
    fi
    step "judge-$k" 120 "$bin" judge --kernel "$k" --backend cuda "$data/public.in"
    tail -n 2 "$out/judge-$k.log"
done

step bench-u8x4 240 "$bin" bench --kernels "$kernels,multistage-raster,cublas" --dtypes u32 \
    --sizes "${INT8_SIZES:-1024,4096,8192}" --no-ceilings --out "$out/report"
grep -v "^\s*$" "$out/bench-u8x4.log" | tail -n 40

summary gpu-int8
