#!/usr/bin/env python3
"""Timing-only variants of multistage's cubin: the main loop's FFMAs with register fields rewritten.

A question the source cannot ask (docs/kernels.md, "What the SASS costs: patched cubins"): does
ptxas's register allocation in the FFMA stream cost issue slots? Two static features have been
blamed for our dispatch stalls (0.25 per instruction against cuBLAS's 0.10): FFMAs that write a
register other than the accumulator they read (D != C), and FFMAs whose three register-file reads
fall in one of two banks (register mod 2, with the operand reuse cache). No source change or
ptxas option removes either, so this script removes them in the binary and leaves everything
else, every instruction, control code and address, as ptxas emitted it:

  same      the cubin as compiled (the control: the patching round trip must not change the time)
  dc        every loop FFMA writes the accumulator it reads (D := C), except where another
            instruction writes that register soon after (soon_written)
  bank      every loop FFMA whose register-file reads fall in one bank reads C from the other
            bank instead (C := C ^ 1; D unchanged, so D != C grows by as many)
  dc_bank   both: D := C first, then the read moved
  four      every loop FFMA whose C read shares a bank of four (register mod 4) with its A or B
            read (those not from the reuse cache) reads C from a 4-aligned neighbour in a free
            bank instead; D unchanged
  bank_four bank, then four
  reuse2    the A and B reuse flags of every loop FFMA set for two cache entries per operand
            slot, one per bank (two_entry_flags): the model cuBLAS's SGEMM loop fits. If the
            hardware caches that way and checks the register, this variant is also correct
  reuse2_bank  reuse2 and bank
  blocked   the loop's FFMAs re-ordered for that cache in 2×2 blocks, 128 at a time
            (blocked_order; data dependences ignored), then flagged as reuse2
  blocked_noreuse  the same order with no A or B reuse flags (what the flags are worth)
  blocked_next  the same order flagged only for the next instruction, as ptxas flags
  sched     the loop's FFMAs re-ordered for that cache within the data dependences and the loads'
            barriers (scheduled_order), flagged as reuse2: the sums stay exact
  sched_noreuse  the same order with no A or B reuse flags

Measured 2026-11-25 (docs): dc no change, bank +1.7 %, four -7 %, reuse2 no change and bit-exact;
every blocked variant stops with "illegal instruction"; sched is bit-exact, +1 % over the
FFMA_ORDER=1 build (+3 % over the row-order build), sched_noreuse -30 %.

Only FFMA register fields inside the main loop change, so the variants compute wrong sums (that
is the point of leaving ptxas's data flow alone) but should not fault: `bank` changes a read
only, and `dc` makes an FFMA write the register of the accumulator it reads, which holds a float
at that point; where another instruction writes that register soon after (an address, maybe),
the FFMA is left alone. Their output is garbage and their times are the answer; the tests and
the bench never load them. `lab/cubin-time.cu` times them on the GPU host beside
the unpatched cubin and cuBLAS.

Usage: LD_LIBRARY_PATH=<nvrtc lib dir> lab/sass-patch.py OUTDIR TILING [f32] [NAME=VALUE ...]
  e.g. lab/sass-patch.py dist/gpu/patched 128x256x16/8x4/w64x64n2/s3/p4 f32
Writes OUTDIR/multistage-<variant>.cubin and OUTDIR/launch.txt (tiling, grid rule, threads, dynamic
shared bytes) and prints each variant's loop figures (sass-loop.py's operand_banks).
Needs nvdisasm on PATH (or NVDISASM). SASS_PATCH_DEBUG=1 prints where scheduled_order's walk got
stuck; SASS_PATCH_LOOKAHEAD=0 turns its one-step lookahead off (the order measured first).
"""
import importlib.util
import os
import re
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("sass_loop", os.path.join(HERE, "sass-loop.py"))
sass_loop = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sass_loop)

REUSE_A = 58  # bits of the second word: the reuse flags of operand slots A, B, C (checked below)
FFMA_RRR = 0x223  # opcode bits [0, 12) of FFMA Rd, Ra, Rb, Rc (checked against nvdisasm below)


def text_section(cubin, func):
    """(file offset, size) of .text.<func> in an ELF64 cubin."""
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names = sections[shstrndx][4]
    for name, _, _, _, offset, size, *_ in sections:
        end = cubin.index(b"\0", names + name)
        if cubin[names + name:end].decode() == f".text.{func}":
            return offset, size
    sys.exit(f"no .text.{func} in the cubin")


def fields(w0, w1):
    return (w0 >> 16) & 255, (w0 >> 24) & 255, (w0 >> 32) & 255, w1 & 255


def with_fields(w0, w1, d, c, a=None, b=None):
    w0 = (w0 & ~(255 << 16)) | (d << 16)
    if a is not None:
        w0 = (w0 & ~(0xFFFF << 24)) | (a << 24) | (b << 32)
    w1 = (w1 & ~255) | c
    return w0, w1


def blocked_order(ins, loop, window=128):
    """Timing only: the FFMAs of the loop, taken `window` FFMA slots at a time (a k-step's products
    at the 16×8 lane tile), re-ordered into 2×2 blocks, cuBLAS's order: the window's A registers
    paired one even with one odd, the same for B, and the blocks walked in a snake over (A pair,
    B pair), so each FFMA finds its A and B in a reuse cache of one register per bank per slot.
    The other instructions stay where they are and data dependences are ignored: the sums come
    out wrong. Returns {instruction index: (D, A, B, C)} for the FFMAs of the loop."""
    slots = [i for i in loop if ins[i].startswith("FFMA ")]
    order = {}
    for w in range(0, len(slots), window):
        positions = slots[w:w + window]
        todo = [sources(ins[i]) for i in positions]

        def pairs(slot):
            seen = list(dict.fromkeys(t[slot] for t in todo))
            even, odd = [r for r in seen if r % 2 == 0], [r for r in seen if r % 2]
            out = [(even[k], odd[k]) for k in range(min(len(even), len(odd)))]
            return out + [(r,) for r in even[len(out):] + odd[len(out):]]

        out, by_ab = [], {}
        for t in todo:
            by_ab.setdefault((t[1], t[2]), []).append(t)
        for n, pa in enumerate(pairs(1)):
            pbs = pairs(2)
            for pb in pbs if n % 2 == 0 else reversed(pbs):
                for a in pa:
                    for b in pb:
                        out += by_ab.pop((a, b), [])
        out += [t for rest in by_ab.values() for t in rest]
        order.update(zip(positions, map(tuple, out)))
    return order


WAIT_MASK = 52  # bits of the second word: the 6-bit mask of dependency barriers an instruction waits on
LOOKAHEAD = int(os.environ.get("SASS_PATCH_LOOKAHEAD", "1"))  # scheduled_order's one-step lookahead
GAP = 6  # instructions between an FFMA and one that reads its result (4 cycles of latency, with room)


def scheduled_order(ins, ctrl, loop):
    """_scheduled_order with each FFMA kept within `shift` instructions of its place, the widest
    shift whose greedy walk gets through."""
    for shift in (64, 32, 16, 8):
        order = _scheduled_order(ins, ctrl, loop, shift)
        if order:
            print(f"(scheduled with FFMAs moving up to {shift} instructions)")
            return order
    return {}


def _scheduled_order(ins, ctrl, loop, shift):
    """The loop's FFMAs re-ordered for a reuse cache of one register per bank per operand slot,
    within the data dependences: each FFMA's (D, A, B, C) may move to another FFMA's place (the
    places, their control codes and every other instruction stay), but not before the wait on the
    barrier of a load that writes one of its registers (or of a copy or store that reads its D),
    not across another instruction that writes one of its registers or reads its D, and at least
    GAP instructions after an FFMA whose result it reads
    or whose D it overwrites. The first and last 8 FFMAs keep their places (the back edge). A
    greedy walk over the places picks, among the FFMAs allowed there, one that must go now, else
    the one with the most operands in the cache, else the earliest. Unlike blocked_order the sums
    stay exact, so cubin-time.cu's check says whether the rules were enough. Returns {} when the
    walk gets stuck."""
    L = list(loop)
    slots = [i for i in L if ins[i].startswith("FFMA ")]
    slotset = set(slots)
    dec = {i: sass_loop.decode(ins[i]) for i in L}
    tup = {i: sources(ins[i]) for i in slots}
    waits = [i for i in L if (ctrl[i] >> WAIT_MASK) & 0x3F]
    written_in_loop = {r for i in L for r in dec[i][1]}

    def first_wait(bar, start, end):  # the first instruction in [start, end] waiting on barrier `bar`
        return next((w for w in waits if start <= w <= end and ctrl[w] >> (WAIT_MASK + bar) & 1), None)

    earliest, latest = {}, {}
    for t in slots:
        d, srcs = tup[t][0], set(tup[t][1:])
        touched = srcs | {d}
        lo, hi = L[0], L[-1]
        if not touched <= written_in_loop:  # loaded before the loop: its wait may be anywhere up to t
            lo = max([w for w in waits if w <= t], default=L[0])
        for k in L:
            if k in slotset:
                continue
            _, wr, rd = dec[k]
            writes, reads_d = bool(touched & set(wr)), d in rd
            if not (writes or reads_d):
                continue
            # A variable-latency access (a load's write, a store's or copy's read) is complete
            # only at the first wait on its barrier after it: in this trip if k < t, else (k's
            # access in the trip before) the first one from the loop's start.
            for bar, cond in (((ctrl[k] >> 46) & 7, writes), ((ctrl[k] >> 49) & 7, reads_d)):
                if cond and bar != 7:
                    w = first_wait(bar, k + 1, t) if k < t else first_wait(bar, L[0], t)
                    lo = max(lo, w if w is not None else (t if k < t else L[0]))
            if k < t:
                lo = max(lo, k + min(GAP, t - k))
            else:
                hi = min(hi, k - min(GAP, k - t))
        lo, hi = max(lo, t - shift), min(hi, t + shift)
        if t in slots[:8] or t in slots[-8:] or not lo <= t <= hi:
            lo = hi = t
        earliest[t], latest[t] = lo, hi
    # FFMA-to-FFMA order: u before t when t reads or overwrites u's D, or overwrites what u reads.
    preds = {t: [] for t in slots}
    last_writer, readers = {}, {}
    for t in slots:
        d, srcs = tup[t][0], tup[t][1:]
        for r in set(srcs) | {d}:
            if r in last_writer:  # no nearer than ptxas placed them, and no nearer than GAP if it did not
                preds[t].append((last_writer[r], min(GAP, t - last_writer[r])))
        for u in readers.get(d, []):
            preds[t].append((u, 1))
        for r in srcs:
            readers.setdefault(r, []).append(t)
        last_writer[d] = t
        readers[d] = []
    for t in reversed(slots):  # a deadline binds the FFMAs that must precede: pass it back
        for u, g in preds[t]:
            latest[u] = min(latest[u], latest[t] - g)
    placed, order, cache = {}, {}, [{}, {}]
    todo = list(slots)
    for n, s in enumerate(slots):
        nxt = slots[n + 1] if n + 1 < len(slots) else L[-1] + 1
        ready = [t for t in todo if earliest[t] <= s <= latest[t]
                 and all(u in placed and placed[u] + g <= s for u, g in preds[t])]
        must = [t for t in ready if latest[t] < nxt]
        if not ready or len(must) > 1:
            if os.environ.get("SASS_PATCH_DEBUG"):
                print(f"stuck at place {n} (instruction {s}): ready {ready}, must {must}, left {todo[:6]}",
                      [(t, earliest[t], latest[t], [(u, placed.get(u), g) for u, g in preds[t]]) for t in todo[:3]])
            return {}
        def hits(t, c):
            return sum(c[k].get(tup[t][k + 1] % 2) == tup[t][k + 1] for k in (0, 1))

        def score(t):  # operands in the cache now, and for the best next FFMA after this one
            after = [dict(c) for c in cache]
            for k in (0, 1):
                after[k][tup[t][k + 1] % 2] = tup[t][k + 1]
            nxt_hits = max((hits(u, after) for u in ready if u != t), default=0) if LOOKAHEAD else 0
            return (2 * hits(t, cache) + nxt_hits, -latest[t], -t)

        def feasible(p):  # every other FFMA left can still get a place by its deadline
            rest = sorted(latest[t] for t in todo if t != p)
            return all(n + 1 + q < len(slots) and slots[n + 1 + q] <= hi for q, hi in enumerate(rest))

        fits = [t for t in ready if feasible(t)]
        if not fits:
            if os.environ.get("SASS_PATCH_DEBUG"):
                print(f"no feasible pick at place {n} (instruction {s}):",
                      sorted((latest[t], t, earliest[t]) for t in ready)[:8], slots[n:n + 8])
            return {}
        pick = max(fits, key=score)
        todo.remove(pick)
        placed[pick], order[s] = s, tuple(tup[pick])
        for k in (0, 1):
            r = tup[pick][k + 1]
            cache[k][r % 2] = r
        for k in range(s + 1, nxt):  # instructions before the next place may overwrite cached registers
            for c in cache:
                for bank, r in list(c.items()):
                    if r in dec[k][1]:
                        del c[bank]
    return order


def soon_written(ins, loop, i, reg, window=24):
    """Whether an instruction other than an FFMA or a shared load writes `reg` within `window`
    instructions after instruction i (cyclically in the loop). A fixed-latency ALU write there
    could land before the patched FFMA's own write to `reg` (ptxas had no reason to keep them
    apart), and `reg` may then hold an address: such FFMAs are left alone. A shared load (the
    usual next writer: ptxas hands a dead accumulator's register to the next fragment) returns
    tens of cycles after an FFMA's few."""
    n = len(loop)
    for k in range(1, window + 1):
        s = ins[loop[(loop.index(i) + k) % n]]
        opc, written, _ = sass_loop.decode(s)
        if not opc.startswith(("FFMA", "LDS")) and reg in written:
            return True
    return False


def other_bank4(regs, cache):
    """C's register, or one of its 4-aligned neighbours whose bank (register mod 4) none of the
    other register-file reads (those not served by the reuse cache) uses, if C's bank is taken."""
    a, b, c = regs
    taken = {r % 4 for r in sass_loop.register_file_reads((a, b, None), cache)}
    if c % 4 not in taken:
        return c
    free = [r for r in range(4) if r not in taken]
    return (c & ~3) | free[0]


def sources(s):
    """(D, A, B, C) register numbers of an FFMA's listing text."""
    return [int(o.strip().split(".")[0][1:]) for o in s[5:].split(",")]


def two_entry_flags(ins, loop):
    """Reuse flags for the A and B slots of every loop FFMA under the model cuBLAS's SGEMM loop is
    written for: each operand slot caches one register per bank (register mod 2), so a flagged
    register stays available until the slot next reads a register of the same bank. A slot's
    register is flagged when that next same-bank read in the slot is the same register and nothing
    writes it in between. {instruction index: (flag A, flag B)}."""
    ffma = [i for i in loop if ins[i].startswith("FFMA ")]
    written = {i: set(sass_loop.decode(ins[i])[1]) for i in loop}
    flags = {}
    for n, i in enumerate(ffma):
        pair = []
        for slot in (1, 2):
            r, keep = sources(ins[i])[slot], False
            for j in ffma[n + 1:]:
                rj = sources(ins[j])[slot]
                if rj % 2 == r % 2:
                    keep = rj == r and not any(r in written[k] for k in range(i, j))
                    break
            pair.append(keep)
        flags[i] = tuple(pair)
    return flags


def two_entry_reads(texts):
    """Register-file reads per FFMA under two_entry_flags's model (the ptxas flags as listed)."""
    cache, reads, n = [{}, {}, {}], 0, 0
    for s in texts:
        if not s.startswith("FFMA "):
            continue
        ops = [o.strip() for o in s[5:].split(",")][1:]
        regs = sources(s)[1:]
        reads += sum(cache[slot].get(r % 2) != r for slot, r in enumerate(regs))
        for slot, (r, o) in enumerate(zip(regs, ops)):
            if ".reuse" in o:
                cache[slot][r % 2] = r
        n += 1
    return reads / max(1, n)


def patch(cubin, offset, loop, ins, ctrl, variant):
    """The cubin with `variant` applied to the FFMAs of instruction indices `loop`, and the
    patched loop's instruction texts (for the figures)."""
    out, texts = bytearray(cubin), []
    cache = [None] * 3
    order = blocked_order(ins, loop) if "blocked" in variant else {}
    if "sched" in variant:
        order = scheduled_order(ins, ctrl, loop)
        if not order:
            print(f"{variant}: the scheduling walk got stuck; the variant is the cubin as compiled")
    if order:
        ins = [f"FFMA R{order[i][0]}, R{order[i][1]}, R{order[i][2]}, R{order[i][3]}" if i in order else s
               for i, s in enumerate(ins)]
    flags = two_entry_flags(ins, loop) if "reuse2" in variant or order else {}
    if "next" in variant:  # ptxas's kind of flag: the same register in the same slot of the next instruction
        flags = {i: tuple(ins[i + 1].startswith("FFMA ") and sources(ins[i + 1])[k] == sources(ins[i])[k] for k in (1, 2))
                 for i in flags}
    for i in loop:
        at = offset + 16 * i
        w0, w1 = struct.unpack_from("<QQ", out, at)
        s = ins[i]
        if not s.startswith("FFMA ") or (w0 & 0xFFF) != FFMA_RRR:
            texts.append(s)
            continue
        d, a, b, c = fields(w0, w1)
        ops = [o.strip() for o in s[5:].split(",")]
        if i in order:
            d, a, b, c = order[i]
        else:
            assert [int(o.split(".")[0][1:]) for o in ops] == [d, a, b, c], f"encoding differs from the listing: {s}"
            assert [".reuse" in o for o in ops[1:]] == [bool(w1 >> (REUSE_A + k) & 1) for k in range(3)], \
                f"reuse bits differ from the listing: {s}"
        reuse = [bool(w1 >> (REUSE_A + k) & 1) for k in range(3)]
        if "dc" in variant and d != c and not soon_written(ins, loop, i, c):
            d = c
        if "bank" in variant and not reuse[2] and sass_loop.three_in_one_bank(
                sass_loop.register_file_reads((a, b, c), cache)):
            c ^= 1  # a read only: D keeps its register, whatever that was
        if "four" in variant and not reuse[2]:
            c = other_bank4((a, b, c), cache)
        if i in flags:
            reuse[0], reuse[1] = (False, False) if "noreuse" in variant else flags[i]
            w1 = (w1 & ~(3 << REUSE_A)) | (reuse[0] << REUSE_A) | (reuse[1] << REUSE_A + 1)
        cache = [r if flag else None for r, flag in zip((a, b, c), reuse)]
        struct.pack_into("<QQ", out, at, *with_fields(w0, w1, d, c, *((a, b) if order else ())))
        texts.append(f"FFMA R{d}, R{a}{'.reuse' * reuse[0]}, R{b}{'.reuse' * reuse[1]}, R{c}")
    return bytes(out), texts


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    outdir, tiling = sys.argv[1], sys.argv[2]
    dtype = (sys.argv[3:4] or ["f32"])[0]
    if dtype != "f32":
        sys.exit("only f32 (FFMA) is patched")
    defines = sass_loop.tiling_defines(tiling)
    defines.update(ELEM="float", IN_F32=1)
    defines.update(a.split("=", 1) for a in sys.argv[4:])
    cubin, log = sass_loop.compile_cubin(defines)
    os.makedirs(outdir, exist_ok=True)
    base = os.path.join(outdir, "multistage-same.cubin")
    open(base, "wb").write(cubin)
    sass = subprocess.run([os.environ.get("NVDISASM", "nvdisasm"), "-c", "-hex", base],
                          capture_output=True, text=True, check=True).stdout
    ins, ctrl, labels = sass_loop.parse_sass(sass)
    first, last = sass_loop.find_loop(ins, labels, "FFMA")
    offset, size = text_section(cubin, "multistage")
    assert size == 16 * len(ins), "the listing and the section differ in length"
    loop = range(first, last + 1)
    for variant in ("same", "dc", "bank", "dc_bank", "four", "bank_four", "reuse2", "reuse2_bank", "blocked", "blocked_noreuse", "blocked_next", "sched", "sched_noreuse"):
        patched, texts = patch(cubin, offset, loop, ins, ctrl, variant)
        open(os.path.join(outdir, f"multistage-{variant}.cubin"), "wb").write(patched)
        ffma = [t for t in texts if t.startswith("FFMA ")]
        reused, same2, same4, moved = sass_loop.operand_banks(ffma)
        changed = sum(x != y for x, y in zip(texts, (ins[i] for i in loop)))
        print(f"{variant:8} {len(ffma)} loop FFMAs, {changed} rewritten: reuse {reused:.2f}, "
              f"three reads in one bank of two {same2:.1f} %, two in one bank of four {same4:.1f} %, "
              f"D != C {moved:.1f} %, register-file reads per FFMA with two cache entries per slot "
              f"{two_entry_reads(texts):.2f}")
    t = defines
    shared = 4 * t["STAGES"] * t["BK"] * (t["BM"] + t["BN"] + 2 * t["PAD"])
    with open(os.path.join(outdir, "launch.txt"), "w") as f:
        f.write(f"tiling {tiling}\nbm {t['BM']}\nbn {t['BN']}\nthreads {t['THREADS']}\nshared {shared}\n")
    print(f"launch: grid (ceil(N/{t['BN']}), ceil(M/{t['BM']})), {t['THREADS']} threads, {shared} bytes of "
          f"dynamic shared memory")


if __name__ == "__main__":
    main()
