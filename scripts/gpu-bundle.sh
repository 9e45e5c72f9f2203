#!/usr/bin/env bash
# Builds everything the GPU host needs, here (no GPU, no CUDA needed), into dist/gpu/:
#   bin/matmul            the CLI release binary (when the workspace builds it)
#   bin/test-<name>       the matmul crate's test executables (release): lib (unit tests), cpu,
#                         gpu, compile, ...
#   tests/data/           judge vectors and puzzle expectations
#   gpu-check.sh          the check to run there, in parts that each fit a device call (see that file)
#   gpu-bench.sh          the user-facing checks and `matmul bench`
#   gpu-ab.sh             interleaved A/B benchmark of kernel variants (see that file)
#   ab-specs/             its variant lists
#   gpu-ncu.sh            Nsight Compute on one launch of a kernel (see that file)
#   gpu-ncu-l2.sh         Nsight Compute: L2 traffic by source for a few kernels (see that file)
#   gpu-ncu-source.sh     Nsight Compute: per-instruction stall sampling of one launch, summarized by
#                         ncu-source.py (see those files)
#   gpu-power.sh          sustained runs with the board's power, SM clock and clock limiters sampled
#   probe-summary.py      summarizes a wgmma timeline probe (PROBE=1, MATMUL_PROBE; see that file)
#   bench-modes.py        ours against cuBLAS in a results.json by median, mean and fastest launch
#   cubin-time.cu         times patched multistage cubins beside cuBLAS (built there with nvcc; the
#                         cubins come from scripts/sass-patch.py, e.g. into dist/gpu/patched)
#   epilogue-bandwidth.cu an SM's ways of writing a 128×256 f32 tile of C, timed alone (built there
#                         with nvcc; docs/kernels.md 15x)
#   cluster-placement.cu  where one-block-per-SM blocks and clusters land, and how many clusters fit
#                         (built there with nvcc; docs/kernels.md 15z)
#   tensormap-trace.c     a CUPTI injection library that prints every tensor map a process encodes
#                         and every launch (built there with gcc; docs/kernels.md 15za)
#   MANIFEST              commit, date, and what was bundled
# The GPU host needs the NVIDIA driver and CUDA 13 libraries (libnvrtc, libcublas), and
# compute-sanitizer for the sanitizer steps; no Rust, no network.
#
# Usage (repo root): scripts/gpu-bundle.sh      honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/dist/gpu
target_dir=${CARGO_TARGET_DIR:-$root/target}

echo "== building the matmul crate's tests (release)"
json=$(mktemp)
trap 'rm -f "$json"' EXIT
cargo test --release -p matmul --no-run --message-format=json >"$json"

echo "== building the CLI (release)"
cli_built=1
cargo build --release --workspace || {
    cli_built=0
    echo "warning: the workspace release build failed; bundling without bin/matmul" >&2
}

rm -rf "$out"
mkdir -p "$out/bin" "$out/tests"
# Each test target's executable, named after the target ("lib" for the unit tests).
python3 - "$json" "$out/bin" <<'PY'
import json, shutil, sys, os
src, dst = sys.argv[1], sys.argv[2]
seen = []
for line in open(src):
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") != "compiler-artifact" or not msg.get("executable"):
        continue
    if not msg.get("profile", {}).get("test"):
        continue
    target = msg["target"]
    name = "lib" if "lib" in target["kind"] else target["name"]
    path = os.path.join(dst, "test-" + name)
    shutil.copy2(msg["executable"], path)
    seen.append("test-" + name)
if not seen:
    sys.exit("no test executables found in cargo's output")
print("bundled:", " ".join(sorted(seen)))
PY
if [[ $cli_built == 1 && -x $target_dir/release/matmul ]]; then
    cp "$target_dir/release/matmul" "$out/bin/matmul"
else
    echo "note: no $target_dir/release/matmul; bundling without the CLI"
fi
cp -r tests/data "$out/tests/data"
cp scripts/gpu-check.sh scripts/gpu-bench.sh scripts/gpu-steps.sh scripts/gpu-ab.sh scripts/gpu-ncu.sh scripts/gpu-ncu-l2.sh \
    scripts/gpu-ncu-source.sh scripts/gpu-power.sh scripts/ncu-source.py scripts/probe-summary.py scripts/bench-modes.py scripts/cubin-time.cu scripts/epilogue-bandwidth.cu \
    scripts/cluster-placement.cu scripts/tensormap-trace.c "$out/"
cp -r scripts/ab-specs "$out/"
chmod +x "$out"/gpu-*.sh
# Smaller to carry: debug info is not needed on the GPU host (symbols stay for backtraces).
if command -v strip >/dev/null; then
    strip --strip-debug "$out"/bin/* 2>/dev/null || true
fi
{
    echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (dirty)')"
    echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm)"
    echo "rustc: $(rustc --version)"
    (cd "$out" && find . -type f ! -name MANIFEST | sort | xargs ls -l)
} >"$out/MANIFEST"
du -sh "$out"
echo "== bundle ready: $out (on the GPU host, from the repo root: dist/gpu/gpu-check.sh, ~9.3 min on an H100)"
