#!/usr/bin/env bash
# Builds lab/cutlass-sgemm.cu (CUTLASS's SIMT SGEMM beside cuBLAS: a yardstick for
# docs/kernels.md, not part of the library) here, without a GPU or a CUDA install: nvcc, its
# headers, cuBLAS and CUTLASS's headers come from PyPI wheels pinned to the GPU hosts' CUDA 13.0,
# installed into .venv-cutlass/ (ignored by git). The binary goes to dist/cutlass/cutlass-sgemm
# (statically linked CUDA runtime; libcublas.so.13 from the GPU host).
#
# Usage (repo root): lab/cutlass-build.sh
# Then on the GPU host: `run` with carry ["dist/cutlass"] and `dist/cutlass/cutlass-sgemm 3 4096 8192`.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$PWD/.venv-cutlass
wheels=(
    'nvidia-cutlass==4.2.0.0'
    'nvidia-cuda-nvcc==13.0.88' 'nvidia-nvvm==13.0.88' 'nvidia-cuda-crt==13.0.88'
    'nvidia-cuda-runtime==13.0.96' 'nvidia-cuda-cccl==13.0.85' 'nvidia-cublas==13.0.2.14'
)
if [[ ! -x $venv/nvidia/cu13/bin/nvcc ]]; then
    echo "== installing ${wheels[*]} into $venv"
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$venv" "${wheels[@]}"
fi
cuda=$venv/nvidia/cu13
cutlass=$venv/cutlass_library/source/include
[[ -d $cutlass/cutlass ]] || { echo "no CUTLASS headers under $cutlass" >&2; exit 1; }
# The cuBLAS wheel ships only the versioned library; the linker wants the plain name.
[[ -e $cuda/lib/libcublas.so ]] || ln -s libcublas.so.13 "$cuda/lib/libcublas.so"
mkdir -p dist/cutlass
echo "== nvcc (5 CUTLASS instantiations: ~30 s)"
PATH=$cuda/bin:$PATH nvcc -O3 -std=c++17 -arch=sm_90a --expt-relaxed-constexpr \
    -I"$cutlass" -I"$cuda/include" -I"$cuda/include/cccl" -L"$cuda/lib" \
    lab/cutlass-sgemm.cu -lcublas -o dist/cutlass/cutlass-sgemm 2> >(grep -v "warning #20013\|^ *\(std::\|{std::\|pad_\)\|^ *\^\|^$\|Remark: The warnings" >&2)
echo "== built dist/cutlass/cutlass-sgemm"
