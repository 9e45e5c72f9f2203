#!/usr/bin/env bash
# Nsight Compute's per-instruction warp-state sampling of one launch, on the GPU host, over a bundle
# from scripts/gpu-bundle.sh: profiles `matmul run` with the SourceCounters section, exports the
# source page (one row per SASS instruction: stall samples by reason, executions, shared-memory
# wavefronts) as $OUT/ncu-source-KERNEL-DTYPE-MxNxK.csv and prints ncu-source.py's summary of it.
# The CSV (~2 MB) comes back for a closer look here: lab/ncu-source.py CSV --bin 50.
#
# Usage (repo root): dist/gpu/gpu-ncu-source.sh KERNEL DTYPE M N K [extra `matmul run` arguments]
#   e.g. dist/gpu/gpu-ncu-source.sh multistage f32 4096 4096 4096   (the tuned tiling, as bench)
#        dist/gpu/gpu-ncu-source.sh cublas f32 4096 4096 4096       (cuBLAS's own kernel)
# Environment: OUT (default dist/gpu/logs), NCU (default: ncu on PATH or under /usr/local/cuda),
#   SAMPLING_INTERVAL (ncu's --warp-sampling-interval: auto, or 0..31 for one sample per 2^(5+n) cycles;
#   for a 2048³ bf16 launch of ~30 µs, auto gave 118 issuing samples and 0 about 2,200).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/gpu-steps.sh"
ncu_setup gpu-ncu-source.sh "$@"
name=ncu-source-$kernel-$dtype-${m}x${n}x${k}
rep=$(mktemp -d)/$name
# `matmul run` launches one product, so the first kernel is the one to profile (gpu-ncu.sh).
"$ncu" --section WarpStateStats --section SourceCounters --section LaunchStats --launch-count 1 -f -o "$rep" \
    --warp-sampling-interval "${SAMPLING_INTERVAL:-auto}" \
    "$here/bin/matmul" run --kernel "$kernel" --dtype "$dtype" -m "$m" -n "$n" -k "$k" --no-check "${run_args[@]}" \
    >"$out/$name.log" 2>&1 || { echo "ncu failed:"; tail -n 5 "$out/$name.log"; exit 1; }
grep -E "^(kernel|tiling) " "$out/$name.log"
"$ncu" -i "$rep.ncu-rep" --page source --csv --print-source sass >"$out/$name.csv" ||
    { echo "exporting the source page failed"; exit 1; }
python3 "$here/ncu-source.py" "$out/$name.csv" --bin 200
