# Lab: the cooperative-matrix WGSL variants measured on the H200 (docs/wgpu.md, lab/notebook.md).
# python3 gen.py DIR writes them; to time one, register it beside wgpu-coopmat on a scratch branch
# (WgslShape::CoopMat; the vec-/scalar- ones bind A and B as array<vec4<u32>>) and bench it.
import sys
def accs(fm, fn):
    return [(i,j) for i in range(fm) for j in range(fn)]

def decl(fm, fn):
    return "\n".join(f"    var c{i}{j}: coop_mat16x16<f32, C>;" for i,j in accs(fm,fn))

def store_direct(fm, fn):
    out=[]
    for i,j in accs(fm,fn):
        out.append(f"    let ci{i}{j} = (row0 + wr + {16*i}u) * cn + col0 + wc + {16*j}u;")
        out.append(f"    coopStoreT(c{i}{j}, &c[ci{i}{j}], cn);")
    return "\n".join(out)

def mma_block(fm, fn, aload, bload):
    # aload(i) -> expr, bload(j) -> expr
    out=[]
    for i in range(fm):
        out.append(f"            let a{i} = {aload(i)};")
    for j in range(fn):
        out.append(f"            let b{j} = {bload(j)};")
        for i in range(fm):
            out.append(f"            c{i}{j} = coopMultiplyAdd(a{i}, b{j}, c{i}{j});")
    return "\n".join(out)

def direct(wm, wn):
    fm, fn = wm//16, wn//16
    return f"""// LAB: fragments straight from global memory (no workgroup staging). Only N.N, whole tiles.
const WM: u32 = {wm}u;
const WN: u32 = {wn}u;
const WARPS: u32 = (BM / WM) * (BN / WN);
const THREADS: u32 = WARPS * 32u;

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {{
    let row0 = wg.y * BM;
    let col0 = wg.x * BN;
    let warp = li / 32u;
    let cn = p.n;
    let wr = (warp / (BN / WN)) * WM;
    let wc = (warp % (BN / WN)) * WN;
{decl(fm,fn)}
    for (var l = 0u; l < p.k; l += 16u) {{
{mma_block(fm, fn, lambda i: f"coopLoadT<coop_mat16x16<T, A>>(&a[(row0 + wr + {16*i}u) * p.a_rs + l], p.a_rs)", lambda j: f"coopLoadT<coop_mat16x16<T, B>>(&b[l * p.b_rs + col0 + wc + {16*j}u], p.b_rs)")}
    }}
{store_direct(fm,fn)}
}}
"""

def staged(wm, wn, mode):
    vec = mode != "scalar"
    fm, fn = wm//16, wn//16
    # global A,B as array<vec4<u32>> (8 halves each). workgroup as vec4<f16> (vec) or f16 (scalar)
    if vec:
        if mode == "u32":
            wdecl = """var<workgroup> As: array<vec4<u32>, 2u * BM * AST / 8u>;
var<workgroup> Bs: array<vec4<u32>, 2u * BK * BST / 8u>;"""
            def st(arr, base, g):
                return f"        {arr}[({base}) / 8u] = {g};"
        else:
            wdecl = """var<workgroup> As: array<vec4<f16>, 2u * BM * AST / 4u>;
var<workgroup> Bs: array<vec4<f16>, 2u * BK * BST / 4u>;"""
            def st(arr, base, g):
                return (f"        {arr}[({base}) / 4u] = vec4<f16>(vec2<f16>(unpack2x16float({g}.x)), vec2<f16>(unpack2x16float({g}.y)));\n"
                        f"        {arr}[({base}) / 4u + 1u] = vec4<f16>(vec2<f16>(unpack2x16float({g}.z)), vec2<f16>(unpack2x16float({g}.w)));")
        q = 8 if mode == "u32" else 4
        aload = lambda i: f"coopLoadT<coop_mat16x16<T, A>>(&As[(sa + (wr + {16*i}u) * AST + kk) / {q}u], AST / {q}u)"
        bload = lambda j: f"coopLoadT<coop_mat16x16<T, B>>(&Bs[(sb + kk * BST + wc + {16*j}u) / {q}u], BST / {q}u)"
    else:
        wdecl = """var<workgroup> As: array<f16, 2u * BM * AST>;
var<workgroup> Bs: array<f16, 2u * BK * BST>;"""
        def st(arr, base, g):
            lines=[]
            for q,comp in enumerate("xyzw"):
                lines.append(f"        let h{arr}{q} = unpack2x16float({g}.{comp});")
                lines.append(f"        {arr}[({base}) + {2*q}u] = f16(h{arr}{q}.x);")
                lines.append(f"        {arr}[({base}) + {2*q+1}u] = f16(h{arr}{q}.y);")
            return "\n".join(lines)
        aload = lambda i: f"coopLoadT<coop_mat16x16<T, A>>(&As[sa + (wr + {16*i}u) * AST + kk], AST)"
        bload = lambda j: f"coopLoadT<coop_mat16x16<T, B>>(&Bs[sb + kk * BST + wc + {16*j}u], BST)"
    return f"""// LAB: A and B read as vec4<u32> (8 halves), prefetched into registers, two workgroup stages,
// one barrier per k-block. Only N.N, whole tiles, K % BK == 0, rows a multiple of 8 halves.
const WM: u32 = {wm}u;
const WN: u32 = {wn}u;
const WARPS: u32 = (BM / WM) * (BN / WN);
const THREADS: u32 = WARPS * 32u;
const AST: u32 = BK + 8u;   // padded row strides in halves
const BST: u32 = BN + 8u;
const AV: u32 = BM * BK / 8u;   // vec4<u32> per A tile
const BV: u32 = BK * BN / 8u;
const AR: u32 = AV / THREADS;   // per invocation
const BR: u32 = BV / THREADS;
{wdecl}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) li: u32) {{
    let row0 = wg.y * BM;
    let col0 = wg.x * BN;
    let warp = li / 32u;
    let cn = p.n;
    let wr = (warp / (BN / WN)) * WM;
    let wc = (warp % (BN / WN)) * WN;
    let arv = p.a_rs / 8u;
    let brv = p.b_rs / 8u;
{decl(fm,fn)}
    var ga: array<vec4<u32>, AR>;
    var gb: array<vec4<u32>, BR>;
    for (var r = 0u; r < AR; r++) {{
        let e = li + r * THREADS;
        ga[r] = a[(row0 + e / (BK / 8u)) * arv + e % (BK / 8u)];
    }}
    for (var r = 0u; r < BR; r++) {{
        let e = li + r * THREADS;
        gb[r] = b[(e / (BN / 8u)) * brv + col0 / 8u + e % (BN / 8u)];
    }}
    for (var r = 0u; r < AR; r++) {{
        let e = li + r * THREADS;
        let g = ga[r];
{st("As", "(e / (BK / 8u)) * AST + (e % (BK / 8u)) * 8u", "g")}
    }}
    for (var r = 0u; r < BR; r++) {{
        let e = li + r * THREADS;
        let g = gb[r];
{st("Bs", "(e / (BN / 8u)) * BST + (e % (BN / 8u)) * 8u", "g")}
    }}
    workgroupBarrier();
    let nk = p.k / BK;
    for (var kb = 0u; kb < nk; kb++) {{
        let cur = kb & 1u;
        let more = kb + 1u < nk;
        if (more) {{
            let l0 = (kb + 1u) * BK;
            for (var r = 0u; r < AR; r++) {{
                let e = li + r * THREADS;
                ga[r] = a[(row0 + e / (BK / 8u)) * arv + l0 / 8u + e % (BK / 8u)];
            }}
            for (var r = 0u; r < BR; r++) {{
                let e = li + r * THREADS;
                gb[r] = b[(l0 + e / (BN / 8u)) * brv + col0 / 8u + e % (BN / 8u)];
            }}
        }}
        let sa = cur * BM * AST;
        let sb = cur * BK * BST;
        for (var kk = 0u; kk < BK; kk += 16u) {{
{mma_block(fm, fn, aload, bload)}
        }}
        if (more) {{
            let na = (1u - cur) * BM * AST;
            let nb = (1u - cur) * BK * BST;
            for (var r = 0u; r < AR; r++) {{
                let e = li + r * THREADS;
                let g = ga[r];
{st("As", "na + (e / (BK / 8u)) * AST + (e % (BK / 8u)) * 8u", "g")}
            }}
            for (var r = 0u; r < BR; r++) {{
                let e = li + r * THREADS;
                let g = gb[r];
{st("Bs", "nb + (e / (BN / 8u)) * BST + (e % (BN / 8u)) * 8u", "g")}
            }}
        }}
        workgroupBarrier();
    }}
{store_direct(fm,fn)}
}}
"""
import os
d = sys.argv[1]
open(f"{d}/direct.wgsl","w").write(direct(32,64))
open(f"{d}/vec-32x64.wgsl","w").write(staged(32,64,"vecf16"))
open(f"{d}/vec-64x64.wgsl","w").write(staged(64,64,"vecf16"))
open(f"{d}/vec-u32-32x64.wgsl","w").write(staged(32,64,"u32"))
open(f"{d}/vec-u32-64x64.wgsl","w").write(staged(64,64,"u32"))
open(f"{d}/scalar-32x64.wgsl","w").write(staged(32,64,"scalar"))
open(f"{d}/scalar-64x64.wgsl","w").write(staged(64,64,"scalar"))
