#!/usr/bin/env python3
"""Our best kernel against cuBLAS in a `matmul bench` results.json, by three statistics of the
launch times: the median (what the bench reports), the mean, and the fastest launch.

Why (docs/kernels.md, "The run of 2026-11-25 12:22 UTC"): on a power-capped H100 the launches of
every kernel at 4096 and up split into an unthrottled mode and one 10–19 % slower, and the median
lands wherever the share of slow launches puts it. The fastest launches compare two kernels at the
same (unthrottled) clock; the mean is the sustained rate. The JSON keeps every sample
(`timing.samples_s`), so this needs no GPU.

Usage: lab/bench-modes.py RESULTS.json [--baseline cublas]
Prints, per dtype, shape and ops, the ratio of cuBLAS's time to the best of ours for each
statistic (each its own best kernel; above 1: ours is faster), the kernel with the best median,
and the slow mode's size (90th percentile over the fastest launch) of that kernel and of cuBLAS.
"""
import argparse
import json
import sys


def summary(timing):
    """The bench's own statistics of a record's launches (`timing.stats`), and the 90th
    percentile, which it does not keep, from the samples."""
    stats, s = timing["stats"], sorted(timing["samples_s"])
    return {
        "median": stats["median"],
        "mean": stats["mean"],
        "fastest": stats["min"],
        "p90": s[min(len(s) - 1, int(0.9 * len(s)))],
        "n": stats["count"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--baseline", default="cublas")
    args = ap.parse_args()
    cases = {}  # (dtype, shape, ops, C) -> {kernel: summary}
    try:
        with open(args.results) as f:
            records = json.load(f)["records"]
        for r in records:
            if r.get("status") != "OK" or not r.get("timing", {}).get("samples_s"):
                continue
            p = r["problem"]
            key = (p["dtype"], r["shape"], p["op_a"] + p["op_b"], p["c"])
            cases.setdefault(key, {})[r["kernel"]] = summary(r["timing"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        sys.exit(f"{args.results}: not a matmul bench results.json ({type(e).__name__}: {e})")
    print(f"{'dtype':<5} {'shape':<18} {'ops':<3} {'ours (best median)':<18} "
          f"{'median':>7} {'mean':>7} {'fastest':>8} {'p90/fastest ours':>17} {'baseline':>9}  launches")
    found = False
    for key in sorted(cases):
        kernels = cases[key]
        base = kernels.get(args.baseline)
        ours = {k: v for k, v in kernels.items() if k != args.baseline}
        if base is None or not ours:
            continue
        found = True
        name, best = min(ours.items(), key=lambda kv: kv[1]["median"])
        ratio = {stat: base[stat] / min(v[stat] for v in ours.values()) for stat in ("median", "mean", "fastest")}
        dtype, shape, ops, _ = key
        print(f"{dtype:<5} {shape:<18} {ops:<3} {name:<18} {ratio['median']:6.3f}× {ratio['mean']:6.3f}× "
              f"{ratio['fastest']:7.3f}× {best['p90'] / best['fastest']:17.3f} "
              f"{base['p90'] / base['fastest']:9.3f}  {best['n']}/{base['n']}")
    if not found:
        sys.exit(f"no case in {args.results} has both {args.baseline} and another kernel")


if __name__ == "__main__":
    main()
