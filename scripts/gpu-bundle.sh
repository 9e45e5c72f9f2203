#!/usr/bin/env bash
# Builds everything the GPU host needs, here (no GPU, no CUDA needed), into dist/gpu/ (flat):
#   bin/matmul            the CLI release binary (when the workspace builds it)
#   bin/test-<name>       the matmul crate's release test executables (lib, cpu, gpu, compile, ...)
#   bin/device_loop, bin/batched  the library's plan examples (examples/), run by hand
#   wheels/, python-tests/ the Python package's abi3 wheel, when target/wheels has one (build it with
#                         maturin: crates/matmul-py), and its pytest files
#   tests/data/           judge vectors and puzzle expectations
#   gpu-check.sh          the check of record: tests, kernel compiles, compute-sanitizer
#   gpu-bench.sh          ./test.sh, the puzzles and `matmul bench`
#   gpu-steps.sh          the step runner both of them source
#   gpu-wgpu.sh           the wgpu backend on NVIDIA's Vulkan driver: tests, judge, puzzles, bench
#   gpu-nccl.sh           the multi-GPU layouts over NCCL (2+ GPUs): locate libnccl.so.2, check, bench
#   gpu-byok.sh, kernels/ kernels of your own: examples/kernels/ run, benched and broken on purpose
#   gpu-soak.sh           the reliability run: the injected fault and `matmul soak` (300 s)
#   lib/libvulkan.so.1    the Vulkan loader (this machine's, from apt's libvulkan1), for wgpu: the
#                         GPU host has NVIDIA's Vulkan driver but no loader
#   lab tools             everything in lab/ that runs on the GPU host (gpu-ab.sh and ab-specs/,
#                         gpu-ncu*.sh, gpu-power.sh, the *.py summarizers, the *.cu/*.c harnesses
#                         built there with nvcc/gcc); not a contract, see lab/README.md
#   MANIFEST              commit, date, and what was bundled
# The GPU host needs the NVIDIA driver and CUDA 13 libraries (libnvrtc, libcublas), and
# compute-sanitizer for the sanitizer part; no Rust, no network. docs/gpu-host.md has the routine.
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
cargo build --release -p matmul --examples
for example in device_loop batched; do
    cp "$target_dir/release/examples/$example" "$out/bin/$example"
done
wheel=$(compgen -G "target/wheels/matmul-*-abi3-*.whl" | head -n 1 || true)
if [[ -n $wheel ]]; then
    mkdir -p "$out/wheels" "$out/python-tests"
    cp "$wheel" "$out/wheels/"
    cp crates/matmul-py/tests/*.py "$out/python-tests/"
else
    echo "note: no Python wheel in target/wheels (crates/matmul-py: maturin build --release -o ../../target/wheels)" >&2
fi
cp -r tests/data "$out/tests/data"
cp scripts/gpu-check.sh scripts/gpu-bench.sh scripts/gpu-steps.sh scripts/gpu-wgpu.sh scripts/gpu-int8.sh \
    scripts/gpu-fp32.sh scripts/gpu-nccl.sh scripts/gpu-byok.sh scripts/gpu-soak.sh "$out/"
cp -r examples/kernels "$out/kernels"
# The Vulkan loader for the wgpu backend (it needs only libc and libm).
loader=$({ ldconfig -p 2>/dev/null || true; } | awk '/libvulkan\.so\.1 .*x86-64/ {print $NF; exit}')
if [[ -n $loader ]]; then
    mkdir -p "$out/lib"
    cp -L "$loader" "$out/lib/libvulkan.so.1"
else
    echo "note: no libvulkan.so.1 here (apt-get install libvulkan1); bundling without the Vulkan loader" >&2
fi
# The lab's GPU-host tools, flat beside them (they source gpu-steps.sh from their own directory).
cp lab/gpu-*.sh lab/*.py lab/*.cu lab/*.c "$out/"
cp -r lab/ab-specs "$out/"
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
echo "== bundle ready: $out (on the GPU host, from the repo root: dist/gpu/gpu-check.sh)"
