#!/usr/bin/env bash
# The multi-GPU check and short bench (NCCL), run on a host with 2+ GPUs from a bundle made by
# scripts/gpu-bundle.sh (dist/gpu/: bin/matmul, bin/test-lib, bin/test-multi_gpu):
#   1. diagnostics: nvidia-smi -L and topo -m, the driver; where libnccl.so.2 is (ldconfig -p,
#      /usr/lib/<arch>-linux-gnu, the CUDA directories, a python nvidia-nccl wheel, then a
#      time-boxed find), exported as MATMUL_NCCL_LIB with its directory on LD_LIBRARY_PATH;
#   2. test-lib's NCCL test (opens it by soname, prints the version, makes a unique id);
#   3. `matmul multi --check` (every layout, f32/u32/bf16, vs the CPU reference; NCCL_DEBUG=INFO
#      for the init and transport lines);
#   4. the bench: `matmul multi` f32 at 8192 and 16384, bf16 at 16384 (1-GPU run beside it);
#   5. the one-process-per-GPU form: one `matmul multi --check --rank R` process per GPU;
#   6. test-multi_gpu, one test per step (every layout × dtype on awkward shapes, on all GPUs
#      and on 2).
# Every step is time-boxed and logged to $OUT/<step>.log; the script goes on past a failure and
# ends with a PASS/FAIL table (exit 1 if any failed). The whole run stays under GPU_NCCL_BUDGET
# seconds (default 560): a step gets at most what is left.
#
# Environment: OUT (default dist/gpu/logs), GPU_NCCL_BUDGET, GPUS (default: every GPU),
# NCCL_DEBUG (default WARN), MATMUL_NCCL_LIB (skips the search).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/logs}
mkdir -p "$out"
budget=${GPU_NCCL_BUDGET:-560}
t0=$(date +%s)
source "$here/gpu-steps.sh"
export RUST_BACKTRACE=1 MATMUL_REQUIRE_MULTI_GPU=1 MATMUL_NCCL_TIMEOUT_S=${MATMUL_NCCL_TIMEOUT_S:-120}
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export MATMUL_CACHE_DIR=$cache

# bstep NAME LIMIT COMMAND...: `step` with the limit cut to what is left of the budget.
bstep() {
    local name=$1 limit=$2 left
    shift 2
    left=$((budget - ($(date +%s) - t0)))
    if ((left < 10)); then
        results+=("FAIL  $name (not run: the ${budget}s budget is spent)")
        return
    fi
    ((limit > left)) && limit=$left
    step "$name" "$limit" "$@"
}

echo "== diagnostics ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
{
    nvidia-smi -L
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv
    timeout 20 nvidia-smi topo -m
    echo "NCCL_DEBUG=$NCCL_DEBUG LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    cat "$here/MANIFEST" 2>/dev/null | head -n 3
} 2>&1 | tee "$out/diagnostics.log"
gpus=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')}
if [[ -z ${GPUS:-} && -n ${CUDA_VISIBLE_DEVICES:-} ]]; then
    visible=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
    ((visible < gpus)) && gpus=$visible
    echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
fi
if ((gpus < 2)); then
    echo "only $gpus GPU(s) seen; running with 2 so that the library says what is missing"
    gpus=2
fi
echo "GPUs: $gpus"

echo "== locating libnccl.so.2"
{
    arch=$(uname -m)
    found=()
    [[ -n ${MATMUL_NCCL_LIB:-} && -e $MATMUL_NCCL_LIB ]] && found+=("$MATMUL_NCCL_LIB")
    while read -r p; do found+=("$p"); done < <(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / {print $NF}')
    for p in /usr/lib/"$arch"-linux-gnu/libnccl.so.2 /usr/local/cuda/lib64/libnccl.so.2 \
        /usr/local/cuda/targets/*-linux/lib/libnccl.so.2 /usr/local/cuda-*/lib64/libnccl.so.2 \
        /usr/local/cuda-*/targets/*-linux/lib/libnccl.so.2 /opt/nvidia/*/lib*/libnccl.so.2; do
        [[ -e $p ]] && found+=("$p")
    done
    for py in python3 python; do
        command -v "$py" >/dev/null || continue
        p=$(timeout 20 "$py" -c 'import nvidia.nccl, os; d = os.path.join(list(nvidia.nccl.__path__)[0], "lib"); print(os.path.join(d, "libnccl.so.2"))' 2>/dev/null)
        [[ -n $p && -e $p ]] && found+=("$p")
        for sp in $(timeout 20 "$py" -c 'import site, sys; print(" ".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))' 2>/dev/null); do
            [[ -e $sp/nvidia/nccl/lib/libnccl.so.2 ]] && found+=("$sp/nvidia/nccl/lib/libnccl.so.2")
        done
    done
    if ((${#found[@]} == 0)); then
        echo "not in the usual places; searching / (30 s at most)"
        while read -r p; do found+=("$p"); done < <(timeout 30 find / -xdev -name 'libnccl.so.2*' -not -path '*/proc/*' 2>/dev/null | head -n 5)
    fi
    echo "candidates:"
    printf '  %s\n' "${found[@]}" | awk '!seen[$0]++'
    printf '%s\n' "${found[@]}" | awk '!seen[$0]++' | xargs -r ls -lL 2>/dev/null
} 2>&1 | tee "$out/nccl-locate.log"
nccl=$(sed -n 's/^  \(\/.*libnccl\.so\.2.*\)$/\1/p' "$out/nccl-locate.log" | head -n 1)
if [[ -n $nccl ]]; then
    nccl=$(readlink -f "$nccl")
    export MATMUL_NCCL_LIB=$nccl
    export LD_LIBRARY_PATH=$(dirname "$nccl")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    echo "using NCCL: $nccl"
    # The version string compiled into the library.
    grep -a -o -m 1 'NCCL version [0-9.+a-z]*' "$nccl" 2>/dev/null | head -n 1
else
    echo "libnccl.so.2 NOT FOUND: the NCCL steps will fail with the library's own message"
    results+=("FAIL  nccl-locate (no libnccl.so.2 found)")
fi

if [[ -x $here/bin/test-lib ]]; then
    bstep nccl-load 60 "$here/bin/test-lib" nccl --nocapture
    grep -h "^NCCL" "$out/nccl-load.log"
fi

if [[ -x $here/bin/matmul ]]; then
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P bstep cli-check 120 "$here/bin/matmul" multi --check \
        --gpus "$gpus" --dtypes f32,u32,bf16
    grep -v "NCCL INFO" "$out/cli-check.log" | tail -n 20
    if ((${#results[@]})) && [[ ${results[-1]} == FAIL* ]]; then
        # Diagnosis for one attempt: the same check without NCCL's direct access to user buffers.
        NCCL_P2P_DIRECT_DISABLE=1 bstep cli-check-nodirect 90 "$here/bin/matmul" multi --check \
            --gpus "$gpus" --dtypes f32,u32,bf16
        tail -n 12 "$out/cli-check-nodirect.log"
    fi
    grep -h "NCCL INFO.*\(NCCL version\|via P2P\|via SHM\|via NET\|Channel 00\)" "$out/cli-check.log" | head -n 8
    bstep bench-f32 180 "$here/bin/matmul" multi --gpus "$gpus" --dtypes f32 --sizes 8192,16384 --warmup 1 --iters 3
    grep -v "^RESULT" "$out/bench-f32.log"
    bstep bench-bf16 90 "$here/bin/matmul" multi --gpus "$gpus" --dtypes bf16 --sizes 16384 --warmup 2 --iters 5
    grep -v "^RESULT" "$out/bench-bf16.log"
    # The one-process-per-GPU form (as across hosts): one process per rank, the NCCL unique id
    # through a file; each rank checks its blocks of C.
    ids=$(mktemp -d)
    MP_BIN=$here/bin/matmul MP_WORLD=$gpus MP_IDS=$ids MP_OUT=$out bstep multiproc 90 bash -c '
        for ((r = 0; r < MP_WORLD; r++)); do
            "$MP_BIN" multi --check --rank $r --world "$MP_WORLD" --device $r --id-file "$MP_IDS/id" \
                --dtypes f32,u32,bf16 >"$MP_OUT/multiproc-rank$r.log" 2>&1 &
        done
        rc=0
        for job in $(jobs -p); do wait "$job" || rc=1; done
        cat "$MP_OUT"/multiproc-rank*.log
        exit $rc'
    grep -h "^rank\|matmul:" "$out"/multiproc-rank*.log 2>/dev/null | head -n 24
    rm -rf "$ids"
else
    results+=("FAIL  no bin/matmul in the bundle")
fi

if [[ -x $here/bin/test-multi_gpu ]]; then
    for t in row_split_matches ag_gemm_matches gemm_rs_matches_the gemm_rs_in_pieces layouts_with_cublas timing_reports refuses_cleanly; do
        bstep "multi-$t" 120 "$here/bin/test-multi_gpu" --include-ignored --test-threads 1 --nocapture "$t"
        grep -h "MISMATCH\|panicked\|test result" "$out/multi-$t.log" | head -n 5
    done
else
    results+=("FAIL  no bin/test-multi_gpu in the bundle")
fi

echo "total: $(($(date +%s) - t0)) s"
summary gpu-nccl
