#!/usr/bin/env bash
# The wgpu backend on the GPU host (issue 39), over a bundle made by scripts/gpu-bundle.sh
# (dist/gpu/): the NVIDIA Vulkan driver (its ICD ships with the driver) through the Vulkan loader
# the bundle carries (lib/libvulkan.so.1: the GPU host has none of its own), then
#   1. `matmul devices` (the adapter wgpu opens, its limits, whether timestamps time the kernels);
#   2. the wgpu tests (test-wgpu: every WGSL kernel × f32/u32 × awkward shapes, the judge vectors,
#      the puzzles) with MATMUL_REQUIRE_WGPU=1, so a missing adapter fails;
#   3. ./test.sh-style judge and the puzzles through --backend wgpu;
#   4. `matmul bench --backend wgpu` with the arguments given (default: f32 and u32 at 1024, 2048,
#      4096, 8192) over $WGPU_KERNELS (default wgpu-naive, wgpu-tiled, wgpu-regtile), its report
#      in $OUT/report-wgpu; then the same arguments on CUDA's multistage-raster and cuBLAS, in
#      $OUT/report-cuda, for the comparison (docs/wgpu.md has the run of record).
# Usage (GPU host, repo root; `run` with carry ["dist/gpu", ".gl"]): dist/gpu/gpu-wgpu.sh [matmul bench arguments]
# (sizes, dtypes: not --kernels, which $WGPU_KERNELS sets)
# Environment: OUT (default dist/gpu/logs), GPU_BENCH_TIMEOUT (seconds per bench, default 420).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/logs}
mkdir -p "$out"
source "$here/gpu-steps.sh"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# NVIDIA's Vulkan ICD loads through libglvnd, which the GPU host lacks: carry `.gl` (the device
# README's debs: libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2, downloaded into
# .gl/ in the repo root) and they are unpacked here (2026-11-27: without them, no adapter).
if compgen -G ".gl/*.deb" >/dev/null; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    export __EGL_VENDOR_LIBRARY_FILENAMES=${__EGL_VENDOR_LIBRARY_FILENAMES:-/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json}
fi
if [[ -z ${VK_DRIVER_FILES:-} ]]; then
    for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
        /etc/vulkan/icd.d/nvidia_icd.json; do
        [[ -f $icd ]] && export VK_DRIVER_FILES=$icd && break
    done
fi
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
export MATMUL_REQUIRE_WGPU=1 WGPU_BACKEND=${WGPU_BACKEND:-vulkan}
bin=$here/bin/matmul
step devices 60 "$bin" devices
cat "$out/devices.log"
test_step test-wgpu 600 "$here/bin/test-wgpu" --nocapture
grep RESULT "$out/test-wgpu.log"
step judge-wgpu 120 "$bin" judge --backend wgpu --kernel TILING "$here/tests/data/public.in"
for p in naive single-block tiled idiomatic-tiled p14-naive p14-tiled; do
    step "puzzle-wgpu-$p" 60 "$bin" puzzle --backend wgpu "$p"
done
if [[ $# == 0 ]]; then set -- --dtypes f32,u32 --sizes 1024,2048,4096,8192; fi
step bench-wgpu "${GPU_BENCH_TIMEOUT:-420}" "$bin" bench --backend wgpu \
    --kernels "${WGPU_KERNELS:-wgpu-naive,wgpu-tiled,wgpu-regtile}" --out "$out/report-wgpu" "$@"
grep -E "^(kernel|wgpu)" "$out/bench-wgpu.log"
# The same shapes on CUDA: cuBLAS and the SIMT kernel that wgpu-regtile is the twin of.
step bench-cuda "${GPU_BENCH_TIMEOUT:-420}" "$bin" bench --kernels multistage-raster,cublas --no-ceilings \
    --out "$out/report-cuda" "$@"
grep -E "^(kernel|multi|cublas)" "$out/bench-cuda.log"
summary gpu-wgpu
