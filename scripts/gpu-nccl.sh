#!/usr/bin/env bash
# The multi-GPU check and bench of record (NCCL), on a host with 2+ GPUs, from a bundle made by
# scripts/gpu-bundle.sh (dist/gpu/: bin/matmul, bin/test-lib, bin/test-multi_gpu):
#
#   dist/gpu/gpu-nccl.sh [GPUS]      GPUS: 2 or 4 (default: every GPU; fewer → devices 0..GPUS-1)
#
#   1. diagnostics (nvidia-smi -L, topo -m); libnccl.so.2 located (ldconfig, CUDA and system
#      directories, a python nvidia-nccl wheel, a time-boxed find), exported as MATMUL_NCCL_LIB;
#   2. nccl-load: test-lib's NCCL test (opens it by soname, version, unique id);
#   3. tests: test-multi_gpu, every layout × dtype on awkward shapes vs the CPU reference, on
#      GPUS and on 2, cuBLAS as the local kernel, an NCCL CTA limit, timing modes;
#   4. check: `matmul run --gpus GPUS --layout all,auto` every layout and auto's pick × f32/u32/bf16
#      on awkward shapes;
#      (7, the bench, runs next, then 5, 6 and 8)
#   5. multiproc: one `matmul run --rank R` process per GPU (the unique id through a file), each
#      checking its blocks of C, f32/u32/bf16;
#   6. rank-fails: the same with one rank on a device that does not exist: every process must
#      exit 1 in bounded time, the others naming their rank (MATMUL_NCCL_TIMEOUT_S=5);
#   7. bench: `matmul bench --gpus GPUS` at 8192 and 16384, f32, u32, bf16, every layout, beside
#      the 1-GPU run, C compared with the 1-GPU C (u32 bit for bit); the run of record goes to
#      $OUT/baselines/<device>/multi-<GPUS>gpu/ (multi.json, multi.md);
#   8. ctas-*, only with CTAS_AB set (e.g. "8 16"): gemm-rs bf16 16384 with NCCL limited to that
#      many CTAs per collective (NCCL's own `NCCL_MAX_CTAS`), against the bench's unlimited gemm-rs bf16
#      line (on 4x H200 no limit paid: docs/multi-gpu.md).
# Every step is time-boxed and logged to $OUT/<step>.log; the script goes on past a failure and
# ends with a PASS/FAIL table (exit 1 if any failed). The whole run stays under GPU_NCCL_BUDGET
# seconds (default 540): a step gets at most what is left.
#
# Environment: OUT (default dist/gpu/logs), GPU_NCCL_BUDGET, CTAS_AB, NCCL_DEBUG (default WARN),
# MATMUL_NCCL_LIB (skips the search).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/logs}
mkdir -p "$out"
budget=${GPU_NCCL_BUDGET:-540}
t0=$(date +%s)
source "$here/gpu-steps.sh"
export RUST_BACKTRACE=1 MATMUL_REQUIRE_MULTI_GPU=1 MATMUL_NCCL_TIMEOUT_S=${MATMUL_NCCL_TIMEOUT_S:-120}
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
export MATMUL_CACHE_DIR=$cache

# bstep [--test] NAME LIMIT COMMAND...: `step` (with --test: `test_step`, for a test executable,
# judged by its counts) with the limit cut to what is left of the budget.
bstep() {
    local run=step
    [[ $1 == --test ]] && run=test_step && shift
    local name=$1 limit=$2 left
    shift 2
    left=$((budget - ($(date +%s) - t0)))
    if ((left < 10)); then
        results+=("FAIL  $name (not run: the ${budget}s budget is spent)")
        return
    fi
    ((limit > left)) && limit=$left
    "$run" "$name" "$limit" "$@"
}

echo "== diagnostics ($(date -u +%Y-%m-%dT%H:%M:%SZ))"
{
    nvidia-smi -L
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm --format=csv
    timeout 20 nvidia-smi topo -m
    echo "NCCL_DEBUG=$NCCL_DEBUG LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    cat "$here/MANIFEST" 2>/dev/null | head -n 3
} 2>&1 | tee "$out/diagnostics.log"
host_gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [[ -n ${CUDA_VISIBLE_DEVICES:-} ]]; then
    visible=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
    ((visible < host_gpus)) && host_gpus=$visible
    echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"
fi
gpus=${1:-${GPUS:-$host_gpus}}
if ! [[ $gpus =~ ^[0-9]+$ ]] || ((gpus < 2)); then
    echo "usage: $0 [GPUS]  (GPUS ≥ 2; this host shows $host_gpus)" >&2
    exit 2
fi
if ((gpus > host_gpus)); then
    echo "asked for $gpus GPUs, this host shows $host_gpus: the steps will say what is missing"
elif ((gpus < host_gpus)) && [[ -z ${CUDA_VISIBLE_DEVICES:-} ]]; then
    export CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((gpus - 1)))
    echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES (the first $gpus of $host_gpus)"
fi
device=$(nvidia-smi -i 0 --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 |
    tr 'A-Z' 'a-z' | sed 's/^nvidia //; s/[^a-z0-9]\{1,\}/-/g; s/^-//; s/-$//')
device=${device:-unknown}
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
    bstep --test nccl-load 60 "$here/bin/test-lib" nccl --nocapture
    grep -h "^NCCL" "$out/nccl-load.log"
fi

if [[ -x $here/bin/test-multi_gpu ]]; then
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P bstep --test tests 150 "$here/bin/test-multi_gpu" \
        --include-ignored --test-threads 1 --nocapture
    grep -h "^test \|test result" "$out/tests.log" | grep -v " ok$" | head -n 12
    grep -c "^RESULT multi.*: ok" "$out/tests.log" | sed 's/^/checked cases ok: /'
    grep -h "NCCL INFO.*\(NCCL version\|via P2P\|via SHM\|via NET\)" "$out/tests.log" | sort -u | head -n 4
else
    results+=("FAIL  no bin/test-multi_gpu in the bundle")
fi

if [[ -x $here/bin/matmul ]]; then
    mm=$here/bin/matmul
    # 4. The CLI check: every layout × dtype on shapes with uneven shards and odd row lengths.
    cat >"$cache/check.sh" <<'EOF'
rc=0
for d in f32 u32 bf16; do
    for s in "257 130 301" "1031 517 773" "1024 1024 1024"; do
        set -- $s
        "$CK_BIN" run --gpus "$CK_GPUS" --layout all,auto --dtype $d -m $1 -n $2 -k $3 --check || rc=1
    done
done
exit $rc
EOF
    CK_BIN=$mm CK_GPUS=$gpus bstep check 90 bash "$cache/check.sh"
    grep -c "check PASS" "$out/check.log" | sed 's/^/check: PASS lines: /'
    grep -h "check FAIL\|^matmul:" "$out/check.log" | head -n 6

    # 7. The bench of record (before 5 and 6, so that it gets its time).
    rec=$out/baselines/$device/multi-${gpus}gpu
    bstep bench 300 "$mm" bench --gpus "$gpus" --dtypes f32,u32,bf16 --sizes 8192,16384 \
        --warmup 1 --iters 5 --out "$rec"
    grep -v "^NCCL\|^wrote" "$out/bench.log" | cut -c1-170
    # 5. One process per GPU, as across hosts.
    # Each process checks its blocks of C; one per rank, the unique id through a file.
    cat >"$cache/multiproc.sh" <<'EOF'
ids=$(mktemp -d); rc=0
for d in f32 u32 bf16; do
    pids=()
    for ((r = 0; r < MP_WORLD; r++)); do
        dev=$r; ((r == MP_BAD)) && dev=99
        timeout -k 5 $((MATMUL_NCCL_TIMEOUT_S + 45)) "$MP_BIN" run --rank $r --world "$MP_WORLD" \
            --device $dev --id-file "$ids/$d" --dtype $d -m 333 -n 131 -k 517 \
            >"$MP_OUT/$MP_NAME-$d-rank$r.log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    ((MP_BAD >= 0)) && break
done
rm -rf "$ids"
grep -h "^matmul:" "$MP_OUT/$MP_NAME"-*-rank*.log
exit $rc
EOF
    multiproc() { # NAME LIMIT BAD_RANK(-1: none) TIMEOUT_S
        MP_BIN=$mm MP_WORLD=$gpus MP_OUT=$out MP_NAME=$1 MP_BAD=$3 MATMUL_NCCL_TIMEOUT_S=$4 \
            bstep "$1" "$2" bash "$cache/multiproc.sh"
    }
    multiproc multiproc 90 -1 120
    grep -h "^rank.* ok \|MISMATCH\|^matmul:" "$out"/multiproc-*-rank*.log 2>/dev/null | grep -c " ok " |
        sed "s/^/multiproc: ok lines (want $((3 * 3 * gpus))): /"
    grep -h "MISMATCH\|^matmul:" "$out"/multiproc-*-rank*.log 2>/dev/null | head -n 6
    # 6. One rank fails (device 99): every process must end, status 1, in bounded time.
    multiproc rank-fails-run 70 1 5
    # Pass: every rank ended with an error naming its rank, the healthy ones after starting
    # (their device and NCCL opened: they waited for the failed peer and gave up).
    fails=0 named=0 started=0
    for ((r = 0; r < gpus; r++)); do
        f=$out/rank-fails-run-f32-rank$r.log
        grep -q "^matmul:" "$f" 2>/dev/null && fails=$((fails + 1))
        grep -q "^matmul: .*rank $r" "$f" 2>/dev/null && named=$((named + 1))
        ((r != 1)) && grep -q "^rank $r/$gpus: device $r" "$f" 2>/dev/null && started=$((started + 1))
    done
    grep -h "^matmul:" "$out"/rank-fails-run-f32-rank*.log 2>/dev/null | cut -c1-200 | head -n "$gpus"
    last=${results[-1]}
    if [[ $last == FAIL*"exit 1,"* ]] && ((fails == gpus && named == gpus && started == gpus - 1)); then
        results[-1]="PASS  rank-fails (every rank exited 1 naming its rank, ${last#*exit 1, }"
    else
        results[-1]="FAIL  rank-fails ($fails of $gpus ranks ended with an error, $named named their rank, $started of $((gpus - 1)) healthy ones started; ${last#FAIL  })"
    fi

    # 8. NCCL's CTAs limited for gemm-rs bf16 (the reduce takes SMs from the products), on request:
    #    NCCL's own NCCL_MAX_CTAS, which it reads at communicator creation.
    for c in ${CTAS_AB:-}; do
        NCCL_MAX_CTAS=$c bstep "ctas-$c" 40 "$mm" bench --gpus "$gpus" --layout gemm-rs --dtypes bf16 --sizes 16384 \
            --warmup 1 --iters 5 --out "$out/ctas-$c"
        grep "^gemm-rs" "$out/ctas-$c.log" | sed "s/^/max-ctas $c: /" | cut -c1-170
    done
else
    results+=("FAIL  no bin/matmul in the bundle")
fi

echo "total: $(($(date +%s) - t0)) s"
summary gpu-nccl
