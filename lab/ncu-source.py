#!/usr/bin/env python3
"""Where a kernel's warps stall, per SASS instruction, from Nsight Compute's source page.

Reads the CSV that `ncu -i REPORT --page source --csv --print-source sass` writes for a report
taken with the SourceCounters section (lab/gpu-ncu-source.sh makes one on the GPU host) and
prints, per kernel:
  - every stall reason's samples per issued instruction (the "selected" samples), as ncu's Warp
    State table, but from the per-instruction sampling;
  - for the largest reasons, which opcodes the stalled warps were waiting to issue;
  - shared-memory (L1) wavefronts per opcode against ncu's ideal (bank conflicts, and the extra
    wavefronts of copies that touch several cache lines);
  - the hottest straight-line region (the instructions executed most often: the main loop), in
    bins of BIN instructions: the chosen reasons per 1,000 issued, and the non-FFMA opcodes of
    each bin, so a stall can be placed next to the barrier, the copies or the loop's top.

Usage: lab/ncu-source.py CSV [--bin N] [--reasons dispatch,no_inst,short_sb]
       (reasons: ncu's column names without the stall_ prefix: barrier, dispatch, long_sb, math,
       mio, no_inst, not_selected, short_sb, wait, ...)
docs/kernels.md, "Per-instruction stall sampling" shows what it found for multistage and cuBLAS.
"""
import collections
import csv
import signal
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def opcode(source):
    words = source.split()
    if not words:
        return "?"
    return words[1] if words[0].startswith("@") and len(words) > 1 else words[0]


def load(path):
    """The rows of the source page, as dicts; a CSV without the page's header is an error."""
    try:
        rows = list(csv.reader(open(path, newline="")))
    except OSError as e:
        sys.exit(f"{path}: {e.strerror}")
    for i, row in enumerate(rows):
        if "Source" in row and "Instructions Executed" in row:
            header = row
            data = [dict(zip(header, r)) for r in rows[i + 1:] if len(r) == len(header)]
            if not data:
                sys.exit(f"{path}: the source page has a header and no instructions")
            return data
    sys.exit(f"{path}: no source-page header (a 'Source' and an 'Instructions Executed' column); "
             "export with `ncu -i REPORT --page source --csv --print-source sass`")


def report(rows, bin_size, reasons):
    stall_cols = [c for c in rows[0] if c.startswith("stall_") and "Not Issued" not in c]
    if "stall_selected" not in stall_cols:
        sys.exit("no warp-state sampling columns (stall_*): profile with --section SourceCounters")
    unknown = [x for x in reasons if f"stall_{x}" not in stall_cols]
    if unknown:
        sys.exit(f"--reasons {','.join(unknown)}: not in this CSV; one of "
                 + ", ".join(c[6:] for c in stall_cols))
    issued = sum(number(r["stall_selected"]) for r in rows) or 1.0
    totals = {c: sum(number(r[c]) for r in rows) / issued for c in stall_cols}
    print(f"{len(rows)} instructions, {int(issued)} issuing samples")
    print("stall samples per issued instruction: " + ", ".join(
        f"{c[6:]} {v:.3f}" for c, v in sorted(totals.items(), key=lambda kv: -kv[1]) if v >= 0.005))
    for c, v in sorted(totals.items(), key=lambda kv: -kv[1]):
        if c in ("stall_selected", "stall_not_selected") or v < 0.01:
            continue
        by = collections.Counter()
        for r in rows:
            by[opcode(r["Source"])] += number(r[c]) / issued
        print(f"  {c[6:]:<12} by opcode: " + ", ".join(f"{k} {x:.3f}" for k, x in by.most_common(5)))
    waves = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for r in rows:
        w = waves[opcode(r["Source"])]
        w[0] += number(r.get("Instructions Executed", "0"))
        w[1] += number(r.get("L1 Wavefronts Shared", "0"))
        w[2] += number(r.get("L1 Wavefronts Shared Ideal", "0"))
    print("shared-memory wavefronts (per executed instruction, ideal):")
    for op, (n, w, ideal) in sorted(waves.items(), key=lambda kv: -kv[1][1])[:5]:
        if w:
            print(f"  {op:<22} {w / 1e6:9.1f} M  {w / max(n, 1):5.2f} per instruction (ideal {ideal / max(n, 1):.2f})")
    executed = [number(r["Instructions Executed"]) for r in rows]
    counts = collections.Counter(e for e in executed if e > 0)
    if not counts:
        return
    hot = max(counts, key=lambda e: (counts[e] * e, e))
    where = [i for i, e in enumerate(executed) if e == hot]
    lo, hi = where[0], where[-1]
    print(f"hottest region: instructions {lo}..{hi} ({hi - lo + 1}, {len(where)} executed {int(hot)} times each); "
          f"per 1,000 issued: {', '.join(reasons)}")
    cols = [f"stall_{x}" for x in reasons]
    for start in range(lo, hi + 1, bin_size):
        part = rows[start:min(start + bin_size, hi + 1)]
        values = " ".join(f"{sum(number(r[c]) for r in part) / issued * 1000:7.2f}" for c in cols)
        ops = collections.Counter(opcode(r["Source"]) for r in part)
        others = " ".join(f"{k}:{v}" for k, v in ops.items() if k not in ("FFMA", "IMAD"))
        print(f"  +{start - lo:<5} {values}  {others[:100]}")


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        sys.exit(__doc__)
    bin_size, reasons, paths = 100, ["dispatch", "no_inst", "short_sb"], []
    while args:
        a = args.pop(0)
        if a == "--bin" and args:
            value = args.pop(0)
            if not value.isdigit() or int(value) < 1:
                sys.exit(f"--bin {value}: must be a whole number of instructions, at least 1")
            bin_size = int(value)
        elif a == "--reasons" and args:
            reasons = args.pop(0).split(",")
        elif a.startswith("--"):
            sys.exit(f"{a}: unknown option or missing value\n{__doc__}")
        else:
            paths.append(a)
    for path in paths:
        print(f"== {path}")
        report(load(path), bin_size, reasons)


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quietly end when piped into head
    main()
