#!/usr/bin/env bash
# Kernels of your own on the GPU host (issue 41, docs/own-kernels.md), over a bundle made by
# scripts/gpu-bundle.sh (dist/gpu/, with kernels/ = examples/kernels/): the CUDA examples verified
# (--check-shapes) and benched beside our best kernel and cuBLAS, then the deliberately broken
# kernels, each with its message and exit status, and the expected status beside it:
#   syntax.cu   2  NVRTC's log naming syntax.cu(10)
#   oob.cu      1  CUDA_ERROR_ILLEGAL_ADDRESS, from the child process
#   endless.cu  1  the watchdog killed it (--timeout 5)
#   wrong.cu    1  check FAIL
# the judge vectors through naive.cu (PASS), `new-kernel`'s stub (compiles, check FAIL),
# and last a run that shows the GPU still works. Each command is cut at 60 s (`timeout`): a cut
# prints rc=124, which is a failure of the watchdog. Under 3 minutes on an H100.
# Usage (GPU host, repo root): dist/gpu/gpu-byok.sh        Environment: MATMUL_BIN.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/gpu-steps.sh"
bin=${MATMUL_BIN:-$here/bin/matmul}
k=$here/kernels
fails=0
# check EXPECTED_RC PATTERN COMMAND...: runs it, prints its output and rc; counts it failed
# unless the rc is EXPECTED_RC and the output matches PATTERN (grep -E).
check() {
    local want=$1 pattern=$2 start rc log
    shift 2
    echo "== matmul ${*}"
    start=$(date +%s%N)
    log=$(timeout 60 "$bin" "$@" 2>&1)
    rc=$?
    echo "$log"
    echo "-> rc=$rc (expected $want, output matching /$pattern/), $((($(date +%s%N) - start) / 1000000)) ms"
    echo
    if [[ $rc != "$want" ]] || ! grep -Eq -- "$pattern" <<<"$log"; then
        echo "!! unexpected"
        fails=$((fails + 1))
    fi
}
tiled=(-D TILE=16 --block TILE,TILE --grid "cdiv(N,TILE),cdiv(M,TILE)" --shared "2*TILE*TILE*4")
check 0 "shape +266x265x264 +PASS" run --kernel-file "$k/naive.cu" -m 500 -n 300 -k 200 --check-shapes
check 0 "shape +266x265x264 +PASS" run --kernel-file "$k/naive.cu" --dtype u32 --transpose-a -m 65 -n 31 -k 129 --check-shapes
check 0 "shape +266x265x264 +PASS" run --kernel-file "$k/tiled.cu" "${tiled[@]}" -m 500 -n 300 -k 200 --check-shapes
check 0 "shape +266x265x264 +PASS" run --kernel-file "$k/tiled.cu" "${tiled[@]}" --dtype u32 --transpose-b -m 129 -n 127 -k 131 --check-shapes
check 0 "cublas" bench --kernel-file "$k/naive.cu" --sizes 1024,4096
check 0 "cublas" bench --kernel-file "$k/tiled.cu" "${tiled[@]}" --sizes 1024,4096
check 0 "cublas" bench --kernel-file "$k/tiled.cu" "${tiled[@]}" --dtypes u32 --sizes 2048 --kernels tiled,warptile
check 0 "^PASS" judge --kernel-file "$k/naive.cu" "$here/tests/data/public.in"
stub=$(mktemp -d)
"$bin" new-kernel mine --dir "$stub" >/dev/null
check 1 "check +FAIL" run --kernel-file "$stub/mine.cu" -m 100 -n 120 -k 70
check 2 "syntax.cu\(10\): error" run --kernel-file "$k/broken/syntax.cu" -m 64 -n 64 -k 64
check 1 "ILLEGAL_ADDRESS|illegal memory access" run --kernel-file "$k/broken/oob.cu" -m 64 -n 64 -k 64
check 1 "the watchdog killed it" run --kernel-file "$k/broken/endless.cu" -m 64 -n 64 -k 64 --timeout 5
check 1 "check +FAIL" run --kernel-file "$k/broken/wrong.cu" -m 64 -n 64 -k 64
check 0 "check +PASS" run --kernel-file "$k/naive.cu" -m 64 -n 64 -k 64
echo "== $fails command(s) with an unexpected exit status"
((fails == 0))
