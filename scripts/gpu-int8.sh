#!/usr/bin/env bash
# The byte-split (u8x4) kernels' GPU check and run of record, run on the GPU host from the repo
# root over a bundle made by scripts/gpu-bundle.sh (dist/gpu/), in about 5–7 minutes of an H100.
# Steps, each logged to $OUT/int8/<step>.log:
#   1. test-gpu: the u8x4 sweeps (every awkward shape × op(A)/op(B), u32 bit for bit, C
#      poisoned), K = 70,000 (the s32 wrap: all-0xFFFFFFFF and random inputs), 17921×257 (more
#      tiles than SMs: the persistent wgmma-u8x4-tma walks several per block) and the 104 public
#      judge vectors;
#   2. test-gpu_int8: cuBLASLt's int8 GEMM (the bench's `cublaslt-int8` ceiling row) against a
#      CPU i32 reference, C poisoned; then the byte-split pre-pass timed alone against the whole
#      product at 2048..16384 (`PREPASS` lines: its share is the most that splitting on the fly
#      could save);
#   3. compute-sanitizer memcheck over the u8x4 tests on small shapes (MATMUL_TEST_SMALL=1), and
#      racecheck over the sweeps on the tiny set (the kernels compile at first use: NVRTC on the
#      host); INT8_SANITIZER=0 leaves this step out;
#   4. `matmul signature` and `matmul judge` through each u8x4 kernel on the public vectors;
#   5. the bench of record: `matmul bench --dtypes u32` of the u8x4 kernels, multistage-raster
#      (IMAD) and cublaslt-int8 (cuBLASLt's s8 GEMM of the same m, n, k: the ceiling, ÷ 10 for
#      a u32 product; not a u32 kernel, not verified) at 1024..16384; its report (results.json,
#      report.md, ...) goes to $OUT/report-int8 (bench/baselines/<gpu>/int8/ takes it).
# Prints the u32 table, the PREPASS lines and a PASS/FAIL table last; exits non-zero if any step
# failed. Environment: OUT (log directory; default dist/gpu/logs), INT8_KERNELS (the u8x4 kernels
# of steps 3-4; default: every u8x4 kernel of the bundled registry), INT8_BENCH_KERNELS (step 5's
# --kernels), INT8_SIZES (default 1024,2048,4096,8192,16384), MATMUL_PREPASS_SIZES (step 2's
# sizes, default 2048,4096,8192,16384), INT8_SANITIZER (0: skip step 3).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
logs=${OUT:-$here/logs}
out=$logs/int8
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
test_step test-gpu-u8x4 300 "$here/bin/test-gpu" --include-ignored --nocapture "${tests[@]}"
grep -h "^RESULT\|^test .*\(ok\|FAILED\)$" "$out/test-gpu-u8x4.log"

# cuBLASLt's int8 GEMM checked, then the pre-pass's share of the product (one test at a time:
# the timings must not share the GPU).
test_step test-gpu-int8 240 "$here/bin/test-gpu_int8" --include-ignored --nocapture --test-threads 1
grep -h "^RESULT\|^PREPASS\|^test .*\(ok\|FAILED\)$" "$out/test-gpu-int8.log"

sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n1)
if [[ ${INT8_SANITIZER:-1} == 0 ]]; then
    echo "(compute-sanitizer left out: INT8_SANITIZER=0)"
elif [[ -n $sanitizer ]]; then
    MATMUL_TEST_SMALL=1 test_step sanitizer-memcheck-u8x4 300 "$sanitizer" --tool memcheck --error-exitcode 99 \
        "$here/bin/test-gpu" --include-ignored --test-threads 4 sweep_mma_u8x4 sweep_wgmma_u8x4 u8x4_wraps u8x4_many
    grep -h "ERROR SUMMARY" "$out/sanitizer-memcheck-u8x4.log" | sort | uniq -c
    MATMUL_TEST_SMALL=tiny test_step sanitizer-racecheck-u8x4 300 "$sanitizer" --tool racecheck --error-exitcode 99 \
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

# The run of record. --max-case-seconds caps the slow IMAD kernel at 16384 (275 ms a launch).
bench_kernels=${INT8_BENCH_KERNELS:-wgmma-u8x4-tma,wgmma-u8x4,mma-u8x4,multistage-raster,cublaslt-int8}
step bench-u8x4 360 "$bin" bench --kernels "$bench_kernels" --dtypes u32 \
    --sizes "${INT8_SIZES:-1024,2048,4096,8192,16384}" --no-ceilings --max-case-seconds 3 \
    --out "$logs/report-int8"
# The table's rows and its u32-ratio caption, without the error-column caption.
grep -E "^(kernel |wgmma|mma|multistage|cublaslt|u32 rows|FAILED)" "$out/bench-u8x4.log" | cut -c1-240
ls "$logs/report-int8" 2>/dev/null | paste -sd' ' | sed 's/^/report-int8: /'

summary gpu-int8
