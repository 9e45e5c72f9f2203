#!/usr/bin/env bash
# snapshot.sh OUT.tsv [REV]: one "label<TAB>md5" line per kernel configuration (src/main.rs lists
# them), the md5 of its SASS as `nvdisasm -c` prints it (instructions only: no line tables, so
# comment edits do not count). Sources: the working tree, or with REV that commit's (this tool
# copied in). The SASS text itself goes to OUT.sass/ for diffs. compare.sh compares two snapshots.
# SASS_FILTER=word,word keeps the configurations whose label contains a word (a quick check);
# SASS_KEEP=1 keeps the CUBINs in OUT.cubin/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(realpath -m "$1")
rev=${2:-}
nvdisasm=${NVDISASM:-/tmp/nvdis/nvidia/cu13/bin/nvdisasm}
if [ ! -x "$nvdisasm" ]; then
    echo "no nvdisasm at $nvdisasm: pip install --target /tmp/nvdis nvidia-cuda-nvdisasm (or set NVDISASM)" >&2
    exit 1
fi
src=$root
if [ -n "$rev" ]; then
    src=$(mktemp -d /tmp/sass-identity-src.XXXXXX)
    git -C "$root" archive "$rev" | tar -x -C "$src"
    rm -rf "$src/lab/sass-identity" && mkdir -p "$src/lab/sass-identity"
    cp -r "$here/Cargo.toml" "$here/Cargo.lock" "$here/src" "$src/lab/sass-identity/"
fi
lib=$(ls "$root"/.venv-nvrtc/nvidia/*/lib/libnvrtc.so.* 2>/dev/null | head -1 || true)
[ -n "$lib" ] && export LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unset MATMUL_KERNEL_DEFINES MATMUL_NVRTC_OPTIONS
cubins=$(mktemp -d /tmp/sass-identity-cubins.XXXXXX)
CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target} \
    cargo run --release --quiet --manifest-path "$src/lab/sass-identity/Cargo.toml" -- "$cubins"
rm -rf "${out%.tsv}.sass" && mkdir -p "${out%.tsv}.sass"
for f in "$cubins"/*.cubin; do
    name=$(basename "$f" .cubin)
    "$nvdisasm" -c "$f" > "${out%.tsv}.sass/$name.sass"
    printf '%s\t%s\n' "$name" "$(md5sum < "${out%.tsv}.sass/$name.sass" | cut -d' ' -f1)"
done | sort > "$out"
if [ -n "${SASS_KEEP:-}" ]; then rm -rf "${out%.tsv}.cubin" && mv "$cubins" "${out%.tsv}.cubin"; else rm -rf "$cubins"; fi
[ -n "$rev" ] && rm -rf "$src"
echo "$(wc -l < "$out") configurations -> $out"
