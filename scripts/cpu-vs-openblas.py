#!/usr/bin/env python3
"""Our CPU backend beside OpenBLAS (through numpy), same machine, same run, back to back.

    scripts/cpu-vs-openblas.py [--sizes 1024,2048] [--rounds 5] [--min-time 0.5] [--bin PATH]

For each round and each size it times `matmul bench --backend cpu --kernels cpu` (f32 and u32;
again for u32 with every narrower copy of the u32 kernel, MATMUL_CPU_U32_ISA=...) and numpy's
float32 `a @ b` (OpenBLAS sgemm), alternating which goes first. Each figure is a median over
its launches (2·n³ / median time); the table gives, per size, the median over the rounds and the
best round, and the ratio of ours to OpenBLAS for each. On a machine others share, trust the
best-round columns least affected by them, and compare only figures from one run.

numpy comes from PyPI into a throwaway venv, target/cpu-vs-openblas-venv, made on first use
(with threadpoolctl, to name OpenBLAS's version, kernel and threads). The matmul binary is
$MATMUL_BIN, else target/release/matmul (build it first: cargo build --release).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "target" / "cpu-vs-openblas-venv"


def ensure_numpy():
    """Re-runs this script inside the venv (made on first use) unless numpy is importable."""
    try:
        import numpy  # noqa: F401
        import threadpoolctl  # noqa: F401
        return
    except ImportError:
        pass
    python = VENV / "bin" / "python"
    if Path(sys.prefix).resolve() == VENV.resolve():
        sys.exit("numpy is missing from the venv " + str(VENV) + ": delete it and rerun")
    if not python.exists():
        print(f"making {VENV} with numpy from PyPI ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "numpy", "threadpoolctl"],
            check=True,
        )
    os.execv(str(python), [str(python), __file__, *sys.argv[1:]])


def ours(binary, n, dtypes, min_time, env=None):
    """{dtype: GFLOP/s (GOP/s)} of `matmul bench --kernels cpu` at n³, from the median launch."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            str(binary), "bench", "--backend", "cpu", "--kernels", "cpu",
            "--dtypes", ",".join(dtypes), "--sizes", str(n), "--no-ceilings",
            "--min-time", str(min_time), "--out", out,
        ]
        run = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
        if run.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({run.returncode}):\n{run.stderr}")
        report = json.loads(Path(out, "results.json").read_text())
    rates = {}
    for r in report["records"]:
        if r["status"] != "OK":
            sys.exit(f"matmul bench: {r['dtype']} {r['shape']} is {r['status']}: {r.get('reason')}")
        rates[r["dtype"]] = r["rate_gops"]
    return rates, report["system"]


def openblas(n, min_time):
    """GFLOP/s of numpy float32 a @ b at n³ from the median call (3 warm-up calls, then calls
    until min_time has passed, at least 3), inputs uniform in [-1, 1)."""
    import numpy as np

    rng = np.random.default_rng(n)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    for _ in range(3):
        a @ b
    times, start = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < min_time:
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    return 2 * n**3 / statistics.median(times) / 1e9


def fmt(x):
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def main():
    ensure_numpy()
    import numpy as np
    import threadpoolctl

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1024,2048", help="square sizes, comma-separated")
    p.add_argument("--rounds", type=int, default=5, help="rounds over every size (default 5)")
    p.add_argument("--min-time", type=float, default=0.5, help="seconds of timed calls per figure")
    p.add_argument("--bin", default=os.environ.get("MATMUL_BIN", ROOT / "target/release/matmul"))
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    binary = Path(args.bin)
    if not binary.exists():
        sys.exit(f"{binary} is missing: cargo build --release (or set MATMUL_BIN)")

    # The copies of the u32 kernel this CPU runs, widest first (the first is the default).
    isas = [i for i in ("avx512", "avx2", "portable")
            if subprocess.run([str(binary), "run", "--backend", "cpu", "--dtype", "u32",
                               "-m", "1", "-n", "1", "-k", "1"],
                              capture_output=True, env={**os.environ, "MATMUL_CPU_U32_ISA": i}
                              ).returncode == 0]
    narrower = [i for i in isas[1:] if i != "portable"]

    blas = next((b for b in threadpoolctl.threadpool_info() if b["user_api"] == "blas"), {})
    rows = {n: {"f32": [], "blas": [], "u32": [], **{i: [] for i in narrower}} for n in sizes}
    system = None
    for r in range(args.rounds):
        for n in sizes:
            first_ours = (r + sizes.index(n)) % 2 == 0
            if not first_ours:
                rows[n]["blas"].append(openblas(n, args.min_time))
            rates, system = ours(binary, n, ["f32", "u32"], args.min_time)
            rows[n]["f32"].append(rates["f32"])
            rows[n]["u32"].append(rates["u32"])
            for isa in narrower:
                rates, _ = ours(binary, n, ["u32"], args.min_time, {"MATMUL_CPU_U32_ISA": isa})
                rows[n][isa].append(rates["u32"])
            if first_ours:
                rows[n]["blas"].append(openblas(n, args.min_time))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

    commit = (system.get("git_commit") or "?")[:7] + ("+dirty" if system.get("git_dirty") else "")
    print(f"machine: {system.get('cpu_model')}, {system.get('cpu_threads')} threads; "
          f"date {time.strftime('%Y-%m-%d')}; matmul {commit} ({binary})")
    print(f"OpenBLAS: numpy {np.__version__}, OpenBLAS {blas.get('version')} "
          f"({blas.get('architecture')} kernels, {blas.get('num_threads')} threads)")
    print(f"{args.rounds} rounds, {args.min_time} s of calls per figure; "
          "each cell: median over rounds / best round")
    head = ["size", "f32 ours GFLOP/s", "f32 OpenBLAS GFLOP/s", "ours / OpenBLAS",
            f"u32 ours GOP/s ({isas[0]})"] + [f"u32 {i} copy GOP/s" for i in narrower]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for n in sizes:
        row = rows[n]
        med = {k: statistics.median(v) for k, v in row.items()}
        best = {k: max(v) for k, v in row.items()}
        cells = [
            f"{n}³",
            f"{fmt(med['f32'])} / {fmt(best['f32'])}",
            f"{fmt(med['blas'])} / {fmt(best['blas'])}",
            f"{med['f32'] / med['blas']:.2f}× / {best['f32'] / best['blas']:.2f}×",
            f"{fmt(med['u32'])} / {fmt(best['u32'])}",
        ] + [f"{fmt(med[i])} / {fmt(best[i])}" for i in narrower]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
