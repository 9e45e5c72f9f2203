#!/usr/bin/env bash
# The GPU check, run on the GPU host from the repo root, over a bundle made by
# scripts/gpu-bundle.sh (dist/gpu/). Parts (arguments; default all three), each
# step logged to $OUT/<step>.log:
#   tests      nvidia-smi, then every bundled test executable but test-compile with
#              MATMUL_REQUIRE_GPU=1 and MATMUL_REQUIRE_NVRTC=1 (a missing GPU or NVRTC fails
#              instead of skipping) and --include-ignored (the bundle's GPU tests are #[ignore]d:
#              it is built without MATMUL_REQUIRE_GPU=1), and `matmul devices`. Each test step
#              is judged by its counts (gpu-steps.sh's test_step): it fails if the binary ran no
#              test or left tests ignored, and its line shows them, e.g. `PASS  test-gpu_fp32
#              (3 passed, 0 ignored; 41s)`; test-multi_gpu's and test-wgpu's hardware tests stay
#              ignored (counted) here: gpu-nccl.sh and gpu-wgpu.sh run them;
#   compile    test-compile: every kernel compiled by NVRTC for this GPU, ptxas's registers and
#              spills checked (in parallel);
#   sanitizer  compute-sanitizer memcheck and racecheck over the GPU tests, on small shapes
#              (MATMUL_TEST_SMALL=1); more tools with GPU_CHECK_TOOLS="memcheck racecheck synccheck ...".
# On an H100 the whole check takes ~9.3 min (test-gpu ~300 s, test-compile ~54 s, memcheck ~97 s,
# racecheck ~102 s): it fits one 10-minute device call, barely. With anything else in the same
# call, run the parts in two calls (`tests`, then `compile sanitizer`). The step limit
# (GPU_CHECK_TIMEOUT) is 420 s because test-gpu alone takes over 260 s.
# Prints a PASS/FAIL table last and exits non-zero if any step failed (2 for an unknown part).
#
# Environment: OUT (log directory; default dist/gpu/logs), GPU_CHECK_TIMEOUT (seconds per step,
# default 420; test-compile: GPU_CHECK_COMPILE_TIMEOUT, default 560), GPU_CHECK_TOOLS,
# GPU_CHECK_SKIP_SANITIZER=1 (drops the sanitizer part).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/logs}
mkdir -p "$out"
limit=${GPU_CHECK_TIMEOUT:-420}
compile_limit=${GPU_CHECK_COMPILE_TIMEOUT:-560}
tools=${GPU_CHECK_TOOLS:-memcheck racecheck}
parts=" ${*:-tests compile sanitizer} "
for part in $parts; do
    case $part in
        tests | compile | sanitizer) ;;
        *) echo "gpu-check.sh: unknown part '$part' (parts: tests, compile, sanitizer)" >&2; exit 2 ;;
    esac
done
[[ ${GPU_CHECK_SKIP_SANITIZER:-0} == 1 ]] && parts=${parts/ sanitizer / }
[[ -n ${parts// /} ]] || { echo "gpu-check.sh: nothing to run (only the sanitizer part, with GPU_CHECK_SKIP_SANITIZER=1)" >&2; exit 2; }
has() { [[ $parts == *" $1 "* ]]; }

export MATMUL_REQUIRE_GPU=1 MATMUL_REQUIRE_NVRTC=1 RUST_BACKTRACE=1
# A fresh CUBIN cache for this check, shared by its steps.
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export MATMUL_CACHE_DIR=$cache

source "$here/gpu-steps.sh"

if has tests; then
    step nvidia-smi "$limit" nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,temperature.gpu,power.limit --format=csv
    cat "$out/nvidia-smi.log"
fi

tests=()
for exe in "$here"/bin/test-*; do
    [[ -x $exe ]] || continue
    if [[ $(basename "$exe") == test-compile ]]; then has compile && tests+=("$exe"); else has tests && tests+=("$exe"); fi
done
if [[ ${#tests[@]} == 0 ]] && { has tests || has compile; }; then
    results+=("FAIL  no test executables in $here/bin (run scripts/gpu-bundle.sh)")
fi
for exe in "${tests[@]}"; do
    name=$(basename "$exe")
    step_limit=$limit
    [[ $name == test-compile ]] && step_limit=$compile_limit
    # test_step (gpu-steps.sh) adds --include-ignored (the bundle is built without the REQUIRE
    # variables, so its GPU, NVRTC and wgpu tests are #[ignore]d: crates/matmul/build.rs) and
    # fails a binary that ran no test or left tests ignored. Two sets need more than this check
    # sets up, and stay ignored here, counted in the table: the multi-GPU tests (2+ GPUs and NCCL
    # located: gpu-nccl.sh) and the wgpu tests (the Vulkan loader and libglvnd: gpu-wgpu.sh).
    why=()
    case $name in
        test-multi_gpu) why=(--ignored-ok "need 2+ GPUs and NCCL: gpu-nccl.sh runs them") ;;
        test-wgpu) why=(--ignored-ok "need a Vulkan adapter: gpu-wgpu.sh runs them") ;;
    esac
    test_step ${why[@]+"${why[@]}"} "$name" "$step_limit" "$exe" --nocapture
done
if has tests && [[ -x $here/bin/matmul ]]; then
    step cli-devices "$limit" "$here/bin/matmul" devices
    cat "$out/cli-devices.log"
fi
# What the sweeps and the compile table printed.
grep -h "^RESULT\|^SKIP" "$out"/test-*.log 2>/dev/null
has compile && { grep -h -A60 "^kernel  *dtype" "$out"/test-compile.log 2>/dev/null | grep "sm_90a" || true; }

if has sanitizer; then
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
                # The fault test's kernel writes out of bounds on purpose: the tool would report it.
                memcheck | initcheck) filter=(--skip timing --skip a_faulting_kernel) ;;
                *) filter=(sweep_rowpack sweep_elepack sweep_single_block sweep_tiled puzzle tile_overrides
                    sweep_blocktile sweep_vectorized sweep_warptile sweep_multistage split_tail sweep_simt_tma sweep_mma_sync
                    sweep_wgmma) ;;
            esac
            # memcheck: small shapes; the shared-memory tools: the tiny set (racecheck's cost
            # grows with shared-memory traffic, and the big SIMT tiles have a lot of it).
            size=1
            [[ $tool == memcheck || $tool == initcheck ]] || size=tiny
            MATMUL_TEST_SMALL=$size test_step "sanitizer-$tool" "$limit" "$sanitizer" --tool "$tool" --error-exitcode 99 \
                "$here/bin/test-gpu" --include-ignored --test-threads 4 "${filter[@]}"
            grep -h "ERROR SUMMARY\|RACECHECK SUMMARY\|hazard" "$out/sanitizer-$tool.log" | sort | uniq -c | head -n 5
        done
    fi
fi

summary gpu-check
