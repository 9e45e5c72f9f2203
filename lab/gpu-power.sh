#!/usr/bin/env bash
# Sustained runs with the board's power and SM clock sampled, on the GPU host over a bundle from
# scripts/gpu-bundle.sh: for each "KERNEL DTYPE SHAPE" argument, one `matmul bench` process with 5 s of
# timed launches (the card reaches its power cap; --max-iters lifts the bench's 1000-launch cap, which
# until 2026-11-25 cut every launch shorter than 5 ms short of the 5 s), while nvidia-smi samples power.draw.average,
# power.draw.instant, clocks.sm and clocks_event_reasons.active every 50 ms. Prints, per run, the
# bench's median and rate, the medians over the samples above 250 W, and the most frequent
# limiter bitmasks (0x4 SW power cap, 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW
# power brake). Answers "does this kernel run at a lower clock than that one for the same power?",
# which the bench's --rounds 30 ratios (per-clock comparisons) do not (docs/kernels.md, "Sustained
# at the power cap").
#
# Usage (repo root): dist/gpu/gpu-power.sh [PASSES] "wgmma-tf32 tf32 8192" "cublas tf32 8192" ...
#   PASSES (default 2): the list is run that many times, in order, so ours and cuBLAS's alternate.
#   A fourth word, e.g. "wgmma bf16 4096 dist/wait1/bin/matmul", is the matmul binary that run uses
#   (a build of a variant: lab/README.md), so variants of one kernel can alternate too; a run
#   without one uses the bundle's bin/matmul.
# Environment: OUT (default dist/gpu/logs): power.txt and each run's bench log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() { echo 'usage: gpu-power.sh [PASSES] "KERNEL DTYPE SHAPE [BINARY]" ... (SHAPE: N or MxNxK)' >&2; exit 2; }
passes=2
[[ ${1:-} =~ ^[1-9][0-9]*$ ]] && { passes=$1; shift; }
(($# > 0)) || usage
for spec in "$@"; do
    read -r kernel dtype shape binary extra <<<"$spec"
    [[ -n $dtype && $shape =~ ^[1-9][0-9]*(x[1-9][0-9]*x[1-9][0-9]*)?$ && -z $extra ]] ||
        { echo "gpu-power.sh: bad argument '$spec'" >&2; usage; }
done
command -v nvidia-smi >/dev/null || { echo "gpu-power.sh: nvidia-smi not found" >&2; exit 1; }
out=${OUT:-$here/logs}
mkdir -p "$out"
source "$here/gpu-steps.sh"
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/power.txt"
for ((pass = 1; pass <= passes; pass++)); do
    for spec in "$@"; do
        read -r kernel dtype shape binary <<<"$spec"
        label=$kernel-$dtype-$shape${binary:+-$(basename "$(dirname "$(dirname "$binary")")")}-$pass
        nvidia-smi --query-gpu=power.draw.average,power.draw.instant,clocks.sm,clocks_event_reasons.active \
            --format=csv,noheader,nounits -lms 50 >"$out/smi.csv" 2>&1 &
        smi=$!
        timeout 120 "${binary:-$here/bin/matmul}" bench --no-ceilings --kernels "$kernel" --dtypes "$dtype" --shapes "$shape" \
            --min-time 5 --max-iters 1000000 --max-case-seconds 30 --out "$out/bench-tmp" >"$out/bench-$label.log" 2>&1
        rc=$?
        kill "$smi"
        wait "$smi" 2>/dev/null
        rate=$(grep -E "^$kernel " "$out/bench-$label.log" | head -n 1 | awk '{print $4 $5, $6, $7}')
        python3 - "$out/smi.csv" "$label" "${rate:-bench exit $rc}" <<'PY' | tee -a "$out/power.txt"
import collections, statistics, sys
path, label, rate = sys.argv[1:]
rows = [line.strip().split(", ") for line in open(path) if line.count(",") >= 3]
try:
    active = [(float(r[0]), float(r[1]), float(r[2]), r[3]) for r in rows if float(r[1]) > 250]
except ValueError:
    sys.exit(f"{label}: nvidia-smi gave {rows[:1]}")
if not active:
    sys.exit(f"{label:<32} {rate:<18} no samples above 250 W")
med = lambda i: statistics.median(a[i] for a in active)
reasons = ", ".join(f"{r} ×{n}" for r, n in collections.Counter(a[3] for a in active).most_common(2))
print(f"{label:<32} {rate:<18} average {med(0):4.0f} W, instant {med(1):4.0f} W, clock {med(2):5.0f} MHz; {reasons}; {len(active)} samples")
PY
        rm -rf "$out/bench-tmp" "$out/smi.csv"
    done
done
