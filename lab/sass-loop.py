#!/usr/bin/env python3
"""SASS figures of multistage's straight-line N·N main loop, without a GPU.

Compiles crates/matmul/kernels/13_multistage.cu (after simt_tile.cuh and tile_order.cuh, with the
registry's prelude) through NVRTC by ctypes for sm_90a, disassembles it with nvdisasm, finds the
main loop (the backward branch whose body holds a barrier, at least 256 FMAs and the fewest
branches: the N·N copy of the loop) and prints, per trip (one BK slice): instructions, FMA share,
the sum of the control codes' stall counts (cycles one warp needs to issue the trip, scoreboard
waits aside), where the LDGSTS sit relative to the barrier, how far the first k-step's shared loads
are from their first use, and the shortest load-to-use distances. Figures for docs/kernels.md,
"Main-loop variants from the SASS".

Also the loop FFMAs' operand-reuse and register-bank figures (operand_banks).

Usage: LD_LIBRARY_PATH=<nvrtc lib dir> lab/sass-loop.py TILING [f32|u32] [NAME=VALUE ...]
  e.g. lab/sass-loop.py 128x256x32/8x4/w64x64n1/s3/p4 f32 FRAG_PREFETCH=1 COPY_PARTS=4
       lab/sass-loop.py --sass FILE [FUNCTION]   the same figures for a `cuobjdump -sass` listing
       (e.g. cuBLAS's SGEMM kernel from libcublasLt.so; BK=<k-steps per trip> for the first-k-step line)
Environment: SASS_KERNEL (multistage, the default, multistage-tail (add SPLIT_TAIL_PIECES=1) or
  simt-tma: its N·N loop), SASS_LOOP (which N·N
  copy of the loop, in address order, where there are several; default 0), NVRTC_EXTRA (more
  NVRTC options, e.g. "--ptxas-options=--register-usage-level=10"), NVDISASM (default: nvdisasm on
  PATH), MATMUL_SASS_OUT (keep the .cubin/.sass there).
"""
import collections
import ctypes
import os
import re
import signal
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
KERNELS = os.path.join(ROOT, "crates/matmul/kernels")
PRELUDE = "typedef unsigned int matmul_u32;\ntypedef unsigned short matmul_u16;\n"


def tiling_defines(text):
    """BMxBNxBK/TMxTN[/wWMxWNnWNITER][/sSTAGES][/pPAD][/bMIN_BLOCKS][/rMAX_REGISTERS][/oPTXAS_LEVEL]
    -> -D values (registry.rs; PTXAS_LEVEL is taken out by compile_cubin as an NVRTC option)."""
    parts = text.split("/")
    bm, bn, bk = map(int, parts[0].split("x"))
    tm, tn = map(int, parts[1].split("x"))
    d = dict(BM=bm, BN=bn, BK=bk, TM=tm, TN=tn, WM=0, WN=0, WNITER=1, STAGES=1, PAD=0, MIN_BLOCKS=1)
    for p in parts[2:]:
        if p[0] == "w":
            d["WM"], d["WN"], d["WNITER"] = map(int, re.match(r"w(\d+)x(\d+)n(\d+)", p).groups())
        else:
            d[{"s": "STAGES", "p": "PAD", "b": "MIN_BLOCKS", "r": "MAXNREG", "o": "PTXAS_LEVEL"}[p[0]]] = int(p[1:])
    d["THREADS"] = (bm // d["WM"]) * (bn // d["WN"]) * 32
    return d


# The kernels this script compiles (SASS_KERNEL): their files in the registry's order, and the
# function. simt-tma's entry dispatches to four layout instantiations; the source is rewritten
# (NN_ONLY) to keep only the N·N one, so that its loop is the only candidate.
SOURCES = {
    "multistage": (("simt_tile.cuh", "tile_order.cuh", "13_multistage.cu"), "multistage"),
    # The split tail's entry (with SPLIT_TAIL_PIECES=1 among the defines).
    "multistage-tail": (("simt_tile.cuh", "tile_order.cuh", "13_multistage.cu"), "multistage_tail"),
    "simt-tma": (("simt_tile.cuh", "tile_order.cuh", "hopper.cuh", "17_simt_tma.cu"), "simt_tma"),
}
NN_ONLY = ("const bool a_rows = a_cs == 1, b_rows = b_rs == 1;", "const bool a_rows = true, b_rows = false;")


def compile_cubin(defines, kernel="multistage", arch="sm_90a"):
    nv = ctypes.CDLL("libnvrtc.so.13")
    files, _ = SOURCES[kernel]
    text = "".join(f'#line 1 "{f}"\n' + open(os.path.join(KERNELS, f)).read() + "\n" for f in files)
    if kernel == "simt-tma":
        assert NN_ONLY[0] in text, "17_simt_tma.cu's layout dispatch changed; update NN_ONLY"
        text = text.replace(*NN_ONLY)
    prog = ctypes.c_void_p()
    assert nv.nvrtcCreateProgram(ctypes.byref(prog), (PRELUDE + text).encode(), files[-1].encode(), 0, None, None) == 0
    opts = [f"--gpu-architecture={arch}", "--ptxas-options=-v", "--std=c++17", "--no-cache"]
    defines = dict(defines)
    if "PTXAS_LEVEL" in defines:
        opts.append(f"--ptxas-options=-O{defines.pop('PTXAS_LEVEL')}")
    opts += [f"-D{k}={v}" for k, v in defines.items()]
    opts += os.environ.get("NVRTC_EXTRA", "").split()
    status = nv.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts]))
    n = ctypes.c_size_t()
    nv.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    log = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetProgramLog(prog, log)
    log = log.value.decode()
    if status != 0:
        sys.exit(log)
    nv.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    cubin = ctypes.create_string_buffer(n.value)
    nv.nvrtcGetCUBIN(prog, cubin)
    return cubin.raw, log


# An instruction line and a control-word line, the same in nvdisasm's and cuobjdump's listings.
INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;\s*/\* 0x[0-9a-f]{16} \*/")
CONTROL = re.compile(r"^\s*/\* (0x[0-9a-f]{16}) \*/\s*$")


def parse_sass(text, func="multistage"):
    """(instructions, control words, labels) of `func` from `nvdisasm -c -hex`."""
    ins, ctrl, labels, inside = [], [], {}, False
    for line in text.splitlines():
        if line.startswith(".text."):
            inside = line.strip().rstrip(":") == f".text.{func}"
            continue
        if not inside:
            continue
        if m := re.match(r"^(\.L_x_\d+):", line):
            labels[m.group(1)] = len(ins)
        elif m := INSTRUCTION.match(line):
            ins.append(m.group(2))
        elif m := CONTROL.match(line):
            ctrl.append(int(m.group(1), 16))
    assert len(ins) == len(ctrl), "unexpected nvdisasm layout"
    return ins, ctrl, labels


def parse_cuobjdump(text, func):
    """(instructions, control words, labels) of `func` from `cuobjdump -sass` output (a library's
    kernel, e.g. cuBLAS's), its branch targets rewritten as labels the way nvdisasm prints them."""
    ins, ctrl, addrs, inside = [], [], {}, False
    for line in text.splitlines():
        if "Function :" in line:
            inside = line.split("Function :")[1].strip() == func
            continue
        if not inside:
            continue
        if m := INSTRUCTION.match(line):
            addrs[int(m.group(1), 16)] = len(ins)
            ins.append(m.group(2))
        elif m := CONTROL.match(line):
            ctrl.append(int(m.group(1), 16))
    if not ins:
        sys.exit(f"no function {func} in the disassembly")
    labels = {}
    for i, s in enumerate(ins):
        if m := re.search(r"BRA\s+(?:!?U?P\d,\s*)?0x([0-9a-f]+)", s):
            target = int(m.group(1), 16)
            if target in addrs:
                labels[f".L_x_{target}"] = addrs[target]
                ins[i] = s[:m.start()] + f"BRA `(.L_x_{target})"
    assert len(ins) == len(ctrl), "unexpected cuobjdump layout"
    return ins, ctrl, labels


def register_file_reads(regs, cache):
    """The registers of an FMA's operand slots (A, B, C; None for a slot that is not a register)
    read from the register file: those the reuse cache does not serve, `cache` holding per slot
    the register the previous instruction marked .reuse there."""
    return [r for slot, r in enumerate(regs) if r is not None and cache[slot] != r]


def three_in_one_bank(rf):
    """Whether register-file reads `rf` are three, all in one bank of two (register mod 2)."""
    return len(rf) == 3 and len({r % 2 for r in rf}) == 1


def operand_banks(fmas):
    """Per FMA of the loop: operands served by the reuse cache (a register marked .reuse by the
    previous instruction in the same slot), and how often the register-file reads left fall into
    one bank: all three in one bank of two (bank = register mod 2; the Volta-era
    microbenchmarks' model) or two in one bank of four (mod 4, Maxwell's); and how often the FMA
    writes a register other than the accumulator it reads (D != C: ptxas moving accumulators).
    Models, not measurements: they only rank instruction streams against each other. Patched
    cubins measured them (docs/kernels.md, "What the SASS costs"): the three-in-one-bank FFMAs
    cost ~1.7 %, D != C nothing, and the mod-4 figure is no cost model."""
    cache, reused, same2, same4, moved = [None] * 3, 0, 0, 0, 0
    for s in fmas:
        all_ops = [o.strip().split(".")[0] for o in s.partition(" ")[2].split(",")]
        moved += len(all_ops) == 4 and all_ops[0] != all_ops[3]
        ops = [o.strip() for o in s.partition(" ")[2].split(",")][1:4]
        regs = [int(m.group(1)) if (m := re.match(r"R(\d+)", o)) else None for o in ops]
        rf = register_file_reads(regs, cache)
        reused += sum(r is not None for r in regs) - len(rf)
        same2 += three_in_one_bank(rf)
        same4 += any([r % 4 for r in rf].count(b) >= 2 for b in range(4))
        cache = [r if ".reuse" in o else None for r, o in zip(regs, ops)]
    n = max(1, len(fmas))
    return reused / n, 100 * same2 / n, 100 * same4 / n, 100 * moved / n


def decode(s):
    """(opcode, registers written, registers read); enough for LDS/FFMA/IMAD data flow."""
    s = re.sub(r"^@!?U?P[T0-9]\s+", "", s)
    opc, _, rest = s.partition(" ")
    ops = [o.strip() for o in rest.split(",")] if rest else []
    regs = lambda o: [int(x) for x in re.findall(r"\bR(\d+)\b", o)]
    if opc.split(".")[0] in ("LDGSTS", "STS", "STG", "BAR", "BRA", "ISETP", "DEPBAR", "EXIT") or not ops:
        return opc, [], [r for o in ops for r in regs(o)]
    width = {"64": 2, "128": 4}.get((re.search(r"\.(64|128)\b", opc) or [None, None])[1], 1)
    if ".WIDE" in opc:
        width = 2
    d = regs(ops[0].split()[0]) if not ops[0].startswith("RZ") else []
    return opc, [d[0] + i for i in range(width)] if d else [], [r for o in ops[1:] for r in regs(o)]


def find_loop(ins, labels, fma):
    """(first, last) instruction of the main loop: the backward branch whose body holds a barrier,
    at least 256 `fma`s and the fewest branches (the N·N copy of the loop)."""
    loops = []
    for i, s in enumerate(ins):
        m = re.search(r"BRA\s+`\((\.L_x_\d+)\)", s)
        if m and labels.get(m.group(1), i + 1) <= i:
            body = ins[labels[m.group(1)]:i + 1]
            if sum(decode(x)[0].startswith(fma) for x in body) >= 256 and any("BAR.SYNC" in x or "SYNCS.PHASECHK" in x for x in body):
                loops.append((sum("BRA" in x for x in body), labels[m.group(1)], i))
    # With several N·N copies (e.g. multistage's whole-tile and split-tail paths), SASS_LOOP=i picks
    # the i-th in address order (default 0).
    fewest = sorted(x for x in loops if x[0] == min(loops)[0])
    _, a, b = fewest[int(os.environ.get("SASS_LOOP", "0"))]
    return a, b


def report(ins, ctrl, labels, fma, bk):
    a, b = find_loop(ins, labels, fma)
    body, dec, n = ins[a:b + 1], [decode(x) for x in ins[a:b + 1]], b + 1 - a
    fmas = [i for i, d in enumerate(dec) if d[0].startswith(fma)]
    lds = [i for i, d in enumerate(dec) if d[0].startswith("LDS") and not body[i].startswith("@!PT")]
    bar = next(i for i, x in enumerate(body) if "BAR.SYNC" in x or "SYNCS.PHASECHK" in x)
    rel = lambda i: (i - bar) % n  # position after the barrier, cyclic

    def first_use(i):  # instructions from LDS i to the first reader of what it loaded
        live = set(dec[i][1])
        for k in range(1, n):
            j = (i + k) % n
            if live & set(dec[j][2]):
                return k
            live -= set(dec[j][1])
            if not live:
                return None

    uses = sorted(u for u in map(first_use, lds) if u is not None)
    first_step = sorted(lds, key=rel)[:max(1, len(lds) // bk)]
    stall = sum((ctrl[a + i] >> 41) & 0xF for i in range(n))
    ldgsts = [rel(i) for i, d in enumerate(dec) if d[0].startswith("LDGSTS")]
    other = collections.Counter(d[0].split(".")[0] for i, d in enumerate(dec) if not d[0].startswith(fma))
    print(f"trip: {n} instructions, {len(fmas)} {fma} ({100 * len(fmas) / n:.1f} %), stall counts {stall} cycles, "
          f"barrier at {bar} ({n - bar} before the trip's end)")
    print(f"LDGSTS, instructions after the barrier: {sorted(ldgsts)}")
    print(f"first k-step's LDS at +{sorted(map(rel, first_step))}, first use {sorted(map(first_use, first_step))} later")
    print(f"LDS to first use: shortest {uses[:8]}, median {uses[len(uses) // 2]}, under 16: {sum(u < 16 for u in uses)}")
    print(f"other instructions: {dict(other.most_common(12))}")
    reused, same2, same4, moved = operand_banks([body[i] for i in fmas])
    print(f"{fma} operands from the reuse cache: {reused:.2f} per {fma}; register-file reads in one bank: "
          f"all three of two banks {same2:.1f} %, two of four banks {same4:.1f} %; "
          f"writing a register other than the accumulator read (D != C): {moved:.1f} %")


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    if sys.argv[1] == "--sass":
        text = open(sys.argv[2]).read()
        func = sys.argv[3] if len(sys.argv) > 3 else re.search(r"Function : (\S+)", text).group(1)
        print(func)
        report(*parse_cuobjdump(text, func), "FFMA", int(os.environ.get("BK", "8")))
        return
    tiling, dtype = sys.argv[1], (sys.argv[2:3] or ["f32"])[0]
    defines = tiling_defines(tiling)
    defines.update(ELEM={"f32": "float", "u32": "matmul_u32"}[dtype], **{f"IN_{dtype.upper()}": 1})
    defines.update(a.split("=", 1) for a in sys.argv[3:])
    kernel = os.environ.get("SASS_KERNEL", "multistage")
    if kernel not in SOURCES:
        sys.exit(f"SASS_KERNEL={kernel}: one of {', '.join(SOURCES)}")
    func = SOURCES[kernel][1]
    cubin, log = compile_cubin(defines, kernel)
    m = re.search(rf"Function properties for {func}.*?(\d+) bytes spill stores, (\d+) bytes spill loads.*?"
                  r"Used (\d+) registers", log, re.S)
    print(f"{kernel} {tiling} {dtype} {' '.join(sys.argv[3:])}: {m.group(3)} registers, spills {m.group(1)}/{m.group(2)} bytes")
    out = os.environ.get("MATMUL_SASS_OUT") or tempfile.mkdtemp()
    path = os.path.join(out, f"{func}.cubin")
    open(path, "wb").write(cubin)
    sass = subprocess.run([os.environ.get("NVDISASM", "nvdisasm"), "-c", "-hex", path],
                          capture_output=True, text=True, check=True).stdout
    open(path[:-6] + ".sass", "w").write(sass)
    report(*parse_sass(sass, func), "FFMA" if dtype == "f32" else "IMAD", defines["BK"])


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quietly end when piped into head
    main()
