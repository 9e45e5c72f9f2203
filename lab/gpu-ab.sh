#!/usr/bin/env bash
# Interleaved A/B benchmark on the GPU host, for differences of a few percent: an H100's clock
# drifts with its temperature and power draw, so two back-to-back `matmul bench` runs of the same
# kernel differ by up to ±5 % (docs/kernels.md, "Measuring small differences"), and a variant run
# once after another proves nothing. This runs every variant once per round, in an order rotated
# each round, and prints each (shape, ops, dtype, kernel, variant)'s TFLOP/s per round and their mean.
#
# Usage (repo root, over a bundle from scripts/gpu-bundle.sh):
#   dist/gpu/gpu-ab.sh ROUNDS SPEC_FILE
# Each non-empty, non-# line of SPEC_FILE is one variant:
#   LABEL | MATMUL BINARY | matmul bench arguments
# The binary is a build of the variant (the product reads no kernel defines or NVRTC options from
# the environment: a variant is the source with a #define's default or the tiling's options edited,
# built into its own binary, lab/README.md); empty: the bundle's bin/matmul. e.g.
#   base   |                      | --kernels wgmma,cublas --dtypes bf16 --shapes 4096,8192
#   wait0  | dist/wait0/bin/matmul | --kernels wgmma --dtypes bf16 --shapes 4096,8192
# Spec files written before (ab-specs/) name MATMUL_KERNEL_DEFINES in the second column: build a
# binary with those defines as the kernel's defaults and name it there instead.
# Environment: OUT (default dist/gpu/logs/ab) for the per-run reports and ab.tsv.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:?usage: gpu-ab.sh ROUNDS SPEC_FILE}
spec=${2:?usage: gpu-ab.sh ROUNDS SPEC_FILE}
out=${OUT:-$here/logs}/ab
mkdir -p "$out"
source "$here/gpu-steps.sh"
# Compiled variants are cached across rounds (and removed at the end).
export MATMUL_CACHE_DIR=${MATMUL_CACHE_DIR:-$(mktemp -d)}
trap 'rm -rf "$MATMUL_CACHE_DIR"' EXIT

mapfile -t lines < <(grep -v '^\s*\(#\|$\)' "$spec")
count=${#lines[@]}
((count > 0)) || { echo "no variants in $spec" >&2; exit 2; }
for ((r = 1; r <= rounds; r++)); do
    for ((i = 0; i < count; i++)); do
        line=${lines[$(((i + r - 1) % count))]}
        IFS='|' read -r label binary args <<<"$line"
        label=$(echo "$label" | xargs) binary=$(echo "$binary" | xargs)
        echo "== round $r: $label${binary:+ ($binary)}"
        # shellcheck disable=SC2086 # the arguments are words by design
        timeout 300 "${binary:-$here/bin/matmul}" bench --no-ceilings \
            --out "$out/$label-$r" $args >"$out/$label-$r.log" 2>&1 ||
            { echo "   failed: $(tail -n 3 "$out/$label-$r.log")"; continue; }
    done
done
python3 - "$out" "$rounds" <<'PY'
import collections, json, os, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rates = collections.defaultdict(dict)  # (shape, ops, dtype, kernel, label) -> {round: TFLOP/s}
for name in sorted(os.listdir(out)):
    path = os.path.join(out, name, "results.json")
    if not os.path.isfile(path):
        continue
    label, r = name.rsplit("-", 1)
    for rec in json.load(open(path))["records"]:
        if rec["status"] != "OK":
            continue
        p = rec["problem"]
        t = rec["timing"]["stats"]["median"]
        key = (rec["shape"], p["op_a"] + p["op_b"], str(p["dtype"]), rec["kernel"], label)
        rates[key][int(r)] = 2 * p["m"] * p["n"] * p["k"] / t / 1e12
with open(os.path.join(out, "ab.tsv"), "w") as f:
    print("shape\tops\tdtype\tkernel\tvariant\t" + "\t".join(f"r{i}" for i in range(1, rounds + 1)) + "\tmean", file=f)
    print(f"{'shape':<20} {'ops':<3} {'dtype':<5} {'kernel':<16} {'variant':<10} " + " ".join(f"{'r' + str(i):>6}" for i in range(1, rounds + 1)) + "    mean")
    for key in sorted(rates):
        xs = rates[key]
        vals = [xs.get(i) for i in range(1, rounds + 1)]
        got = [v for v in vals if v is not None]
        mean = sum(got) / len(got)
        cells = " ".join(f"{v:6.0f}" if v is not None else "     -" for v in vals)
        print(f"{key[0]:<20} {key[1]:<3} {key[2]:<5} {key[3]:<16} {key[4]:<10} {cells}  {mean:6.1f}")
        print("\t".join(key) + "\t" + "\t".join(f"{v:.1f}" if v is not None else "" for v in vals) + f"\t{mean:.1f}", file=f)
PY
