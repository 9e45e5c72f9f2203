#!/usr/bin/env python3
"""Summarizes a wgmma timeline probe (docs/kernels.md 15l) from `matmul bench` stderr.

Run on the GPU host, over a bundle:
  MATMUL_KERNEL_DEFINES=PROBE=1 MATMUL_PROBE=wgmma_probe dist/gpu/bin/matmul bench --no-ceilings \
      --kernels wgmma --dtypes bf16 --shapes 2048 2> probe.err
  python3 dist/gpu/probe-summary.py probe.err
The host prints the array as `probe wgmma_probe INDEX VALUE` lines; each block's row holds the
points of 15_wgmma.cu's `ProbePoint`, in SM clock cycles since its entry (the entry itself in
%globaltimer ns, and the SM's id). Prints min / median / max of each point over the blocks that
ran, and the median length of each phase.
"""
import re
import statistics
import sys

# 15_wgmma.cu's ProbePoint, in order.
POINTS = ["entry_ns", "first_copy", "first_stage", "mainloop_end", "stores_issued", "stores_done",
          "exit", "sm", "barriers", "synced", "producer_regs", "consumer_regs", "prefetched",
          "first_tile"]


def main(path):
    words = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"probe \S+ (\d+) (\d+)$", line.strip())
            if m:
                words[int(m.group(1))] = int(m.group(2))
    if not words:
        sys.exit(f"{path}: no `probe` lines (was the kernel built with PROBE=1 and MATMUL_PROBE set?)")
    n = len(POINTS)
    if len(words) % n:
        sys.exit(f"{path}: {len(words)} words, not a multiple of the {n} points of a block")
    rows = [[words[n * b + p] for p in range(n)] for b in range(len(words) // n)]
    rows = [r for r in rows if r[0]]  # blocks of this launch (a row of zeros: no such block)
    if not rows:
        sys.exit(f"{path}: every row is empty")
    col = {name: i for i, name in enumerate(POINTS)}
    print(f"blocks {len(rows)}; entry spread {max(r[0] for r in rows) - min(r[0] for r in rows)} ns")
    print(f"{'point (cycles since entry)':<28} {'min':>8} {'median':>8} {'max':>8}")
    order = ["barriers", "synced", "producer_regs", "consumer_regs", "prefetched", "first_tile",
             "first_copy", "first_stage", "mainloop_end", "stores_issued", "stores_done", "exit"]
    for name in order:
        v = sorted(r[col[name]] for r in rows)
        print(f"{name:<28} {v[0]:>8} {v[len(v) // 2]:>8} {v[-1]:>8}")
    phases = [("start: entry -> first copy", None, "first_copy"),
              ("fill: first copy -> first stage", "first_copy", "first_stage"),
              ("main loop", "first_stage", "mainloop_end"),
              ("epilogue: -> stores issued", "mainloop_end", "stores_issued"),
              ("drain: -> stores done", "stores_issued", "stores_done"),
              ("exit", "stores_done", "exit")]
    print("median phases (cycles):")
    for label, a, b in phases:
        print(f"  {label:<32} {statistics.median(r[col[b]] - (r[col[a]] if a else 0) for r in rows):>8.0f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: probe-summary.py STDERR_FILE")
    main(sys.argv[1])
