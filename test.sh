#!/usr/bin/env bash
# Seed 001's test script: `./test.sh X`, X in TILING, ELE, ELEPACK, ROW, ROWPACK, or the exact
# u32 kernels on the int8 tensor cores, MMA-U8X4 and WGMMA-U8X4 (anything else means ROW, as the seed's script
# does). Builds with cargo (or uses $MATMUL_BIN / dist/gpu/bin/matmul
# on a host without Rust), runs every stored judge case through kernel X on the GPU, and compares
# with the official outputs. The exit status tells.
set -euo pipefail
cd "$(dirname "$0")"
flag=$(printf '%s' "${1:-ROW}" | tr '[:lower:]' '[:upper:]')
case "$flag" in
  TILING|ELE|ELEPACK|ROW|ROWPACK|MMA-U8X4|WGMMA-U8X4) ;;
  *) echo "test.sh: unknown version '${1:-}', using ROW (as the seed's script does)" >&2; flag=ROW ;;
esac
if [ -n "${MATMUL_BIN:-}" ]; then
  bin=$MATMUL_BIN
elif command -v cargo >/dev/null 2>&1; then
  cargo build --release --quiet --bin matmul
  bin=target/release/matmul
elif [ -x dist/gpu/bin/matmul ]; then
  bin=dist/gpu/bin/matmul
else
  echo "test.sh: no cargo and no prebuilt dist/gpu/bin/matmul (run scripts/gpu-bundle.sh where Rust is installed)" >&2
  exit 2
fi
exec "$bin" judge --kernel "$flag" --backend cuda tests/data/public.in
