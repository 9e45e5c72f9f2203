#!/usr/bin/env bash
# Nsight Compute on one launch of a kernel, on the GPU host, over a bundle from
# scripts/gpu-bundle.sh: speed of light, compute and memory workload, warp stall reasons, launch
# and occupancy, plus tensor-pipe and shared-memory counters and every stall reason's cycles per
# issued instruction. Prints the lines that matter and keeps the full text in
# $OUT/ncu-KERNEL-DTYPE-SHAPE.txt.
#
# Usage (repo root): dist/gpu/gpu-ncu.sh KERNEL DTYPE M N K [extra `matmul run` arguments]
#   e.g. dist/gpu/gpu-ncu.sh wgmma bf16 8192 8192 8192
#        dist/gpu/gpu-ncu.sh cublas bf16 8192 8192 8192      (profiles cuBLAS's own kernel)
#        dist/gpu/gpu-ncu.sh multistage f32 4096 4096 4096
# ncu locks the SM clock to base by default, so durations here are not the bench's.
# Environment: OUT (default dist/gpu/logs), NCU (default: ncu on PATH or under /usr/local/cuda).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/gpu-steps.sh"
ncu_setup gpu-ncu.sh "$@"
# `matmul run` launches one product (C's poison is a memset, not a kernel), so the first kernel
# launched is the one to profile, ours or cuBLAS's (whose names, like nvjet_sm90_..., vary).
report=$out/ncu-$kernel-$dtype-${m}x${n}x${k}.txt
# Stall reasons per issued instruction (the WarpStateStats section shows only the top one).
stalls=
for r in barrier dispatch_stall long_scoreboard math_pipe_throttle mio_throttle no_instruction \
    not_selected short_scoreboard wait; do
    stalls+=,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio
done
"$ncu" --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy \
    --metrics sm__inst_executed_pipe_tensor_op_gmma.sum,sm__inst_executed_pipe_tensor_op_hmma.sum,sm__inst_executed_pipe_fma.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_bytes.sum,dram__bytes_read.sum,dram__bytes_write.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed_op_shared_ld.sum,sm__inst_executed.sum$stalls \
    --launch-count 1 \
    "$here/bin/matmul" run --kernel "$kernel" --dtype "$dtype" -m "$m" -n "$n" -k "$k" --no-check "${run_args[@]}" \
    >"$report" 2>&1
rc=$?
grep -E "^  [A-Za-z_].*\(|Duration|SM Frequency|Throughput|SM Busy|Issue Slots|Executed Ipc|Warp Cycles Per|No Eligible|Active Warps|Registers Per|Grid Size|Block Size|Cluster Size|Shared Memory Per|L2 Hit|Mem Busy|Stall|__" "$report" |
    grep -v "^ *----" | head -n 90
echo "(full report: $report; ncu exit $rc)"
exit $rc
