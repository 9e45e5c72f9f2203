#!/usr/bin/env bash
# L2 traffic by source, with Nsight Compute, on the GPU host over a bundle from
# scripts/gpu-bundle.sh: for each "KERNEL DTYPE SIZE" argument, one launch of `matmul run` (N·N,
# SIZE³) profiled with every lts__t_{sectors,requests}_src{unit,node}_* metric this ncu knows for
# gh100 (which SMs, the other L2 partition over the fabric, or the GPC asked for which sectors, hit
# or miss), the bytes the crossbar delivered to the SMs and took from them, and the TMA
# instruction counts. Prints metric, unit and value per kernel; keeps each report as
# $OUT/l2-KERNEL-DTYPE-SIZE.txt. ncu locks the SM clock, so durations here are not the bench's.
#
# Usage (repo root): dist/gpu/gpu-ncu-l2.sh "wgmma bf16 2048" "cublas bf16 2048" ...
# Environment: OUT (default dist/gpu/logs), NCU (default: ncu on PATH or under /usr/local/cuda).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { echo 'usage: gpu-ncu-l2.sh "KERNEL DTYPE SIZE" ... (SIZE a positive integer)' >&2; exit 2; }
(($# > 0)) || usage
for spec in "$@"; do
    read -r kernel dtype size extra <<<"$spec"
    [[ -n $dtype && $size =~ ^[1-9][0-9]*$ && -z $extra ]] || { echo "gpu-ncu-l2.sh: bad argument '$spec'" >&2; usage; }
done
out=${OUT:-$here/logs}
mkdir -p "$out"
source "$here/gpu-steps.sh"
find_ncu || exit 1
"$ncu" --query-metrics --chip gh100 >"$out/ncu-metrics.txt" 2>&1
metrics=$(grep -oE "^(lts__t_(sectors|requests|bytes)_src(unit|node)_[a-z0-9_]+|lts__t_sectors_(lookup_hit|lookup_miss|op_read|op_write)|l1tex__m_xbar2l1tex_read_bytes|l1tex__m_l1tex2xbar_write_bytes|smsp__inst_executed_op_tma[a-z_]*)\b" \
    "$out/ncu-metrics.txt" | sort -u | sed 's/$/.sum/' | paste -sd, -)
[[ -n $metrics ]] || { echo "no L2 source metrics in ncu --query-metrics" >&2; exit 1; }
rc=0
for spec in "$@"; do
    read -r kernel dtype size <<<"$spec"
    report=$out/l2-$kernel-$dtype-$size.txt
    echo "=== $kernel $dtype $size"
    "$ncu" --metrics "$metrics,gpu__time_duration.sum" --launch-count 1 \
        "$here/bin/matmul" run --kernel "$kernel" --dtype "$dtype" -m "$size" -n "$size" -k "$size" --no-check \
        >"$report" 2>&1 || rc=1
    grep -E "^\s+(lts|l1tex|smsp|gpu)__" "$report" | grep -v " 0$" | awk '{print $1, $(NF-1), $NF}'
done
exit $rc
