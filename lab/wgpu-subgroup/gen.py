# Lab: variants of the f32 register-tiled WGSL kernel (kernels/wgsl/regtile.wgsl) as user kernels
# (docs/own-kernels.md), so one `matmul bench --kernel-file` each times them beside wgpu-regtile:
#   base   the registry kernel as a user kernel (bounds-checked, so compare the variants with it)
#   db     two workgroup stages, one barrier per k-block instead of two (16.5 KiB of workgroup memory)
#   shfl   B's second half through a subgroup shuffle: the two rows of invocations in a subgroup of
#          32 read one vec4 of B each from workgroup memory and swap them (subgroupShuffleXor 16),
#          one LDS.128 + four shuffles in place of two LDS.128 (needs Features::SUBGROUP, 32 lanes)
# python3 gen.py OUTDIR   (run from the repository root)
import sys, os
src = open("crates/matmul/kernels/wgsl/regtile.wgsl").read()
head = """const BM: u32 = 128u;
const BN: u32 = 128u;
const TM: u32 = 8u;
const TN: u32 = 8u;
const BK: u32 = 8u;
fn ld_a(i: u32) -> T { return a[i]; }
fn ld_b(i: u32) -> T { return b[i]; }
"""
def sub(text, old, new):
    assert old in text, old
    return text.replace(old, new)

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
open(f"{out}/base.wgsl", "w").write(head + src)

db = sub(src, "var<workgroup> As: array<vec4<T>, BK * AS4>;", "var<workgroup> As: array<vec4<T>, 2u * BK * AS4>;")
db = sub(db, "var<workgroup> Bs: array<vec4<T>, BK * BS4>;", "var<workgroup> Bs: array<vec4<T>, 2u * BK * BS4>;")
db = sub(db, "        As[(tid % BK) * AS4 + tid / BK] = na;\n        Bs[tid] = nb;",
         "        let sa = ((k0 / BK) & 1u) * BK * AS4;\n        let sb = ((k0 / BK) & 1u) * BK * BS4;\n"
         "        As[sa + (tid % BK) * AS4 + tid / BK] = na;\n        Bs[sb + tid] = nb;")
for x in ("l * AS4 + ty]", "l * AS4 + HALF_A4 + ty]"):
    db = sub(db, "As[" + x, "As[sa + " + x)
for x in ("l * BS4 + tx]", "l * BS4 + HALF_B4 + tx]"):
    db = sub(db, "Bs[" + x, "Bs[sb + " + x)
db = sub(db, "        }\n        workgroupBarrier();\n    }", "        }\n    }")
open(f"{out}/db.wgsl", "w").write(head + db)

sh = head + src  # naga 30 takes subgroup builtins without `enable subgroups;` (it rejects the directive)
sh = sub(sh, "            let b0 = Bs[l * BS4 + tx];\n            let b1 = Bs[l * BS4 + HALF_B4 + tx];",
         "            let mine = Bs[l * BS4 + hi * HALF_B4 + tx];\n"
         "            let other = subgroupShuffleXor(mine, 16u);\n"
         "            let b0 = select(mine, other, hi == 1u);\n"
         "            let b1 = select(other, mine, hi == 1u);")
sh = sub(sh, "    let tid = ty * TX + tx;\n", "    let tid = ty * TX + tx;\n    let hi = ty & 1u;\n")
open(f"{out}/shfl.wgsl", "w").write(sh)
