#!/usr/bin/env python3
"""Our CPU backend beside OpenBLAS (through numpy), same machine, same run, back to back.

    scripts/cpu-vs-openblas.py [--sizes 1024,2048] [--rounds 5] [--min-time 0.5] [--bin PATH]
                               [--cpu-time]

For each round and each size it times `matmul bench --backend cpu --kernels cpu` (f32 and u32;
again for u32 with every narrower copy of the u32 kernel, MATMUL_CPU_U32_ISA=...) and numpy's
float32 `a @ b` (OpenBLAS sgemm), alternating which goes first. Each figure is a median over
its launches (2·n³ / median time); the table gives, per size, the median over the rounds and the
best round, and the ratio of ours to OpenBLAS for each. On a machine others share, trust the
best-round columns least affected by them, and compare only figures from one run.

With --cpu-time, a second table: both on one thread, each rate per second of CPU time (ours
from crates/matmul/examples/cpu_time.rs, numpy's from time.process_time() with
OPENBLAS_NUM_THREADS=1), which other processes on the machine do not change: they take turns on
the cores, and wall-clock figures then follow whoever got more turns.

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


def calls_for(n):
    """Timed calls per CPU-time figure: about 8 at 1024³, at least 3."""
    return max(3, min(20, round(8 * (1024 / n) ** 3)))


def ours_cpu_time(example, dtype, n, env=None):
    """Our one-thread rate per CPU-second (median call) from examples/cpu_time."""
    run = subprocess.run(
        [str(example), dtype, str(n), str(calls_for(n))], capture_output=True, text=True,
        env={**os.environ, "RAYON_NUM_THREADS": "1", **(env or {})},
    )
    if run.returncode != 0:
        sys.exit(f"{example} failed: {run.stderr}")
    return json.loads(run.stdout)["median"]


NUMPY_CPU_TIME = """
import json, sys, time
import numpy as np
n, calls = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(n)
a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
a @ b
s = []
for _ in range(calls):
    t = time.process_time()
    a @ b
    s.append(time.process_time() - t)
s.sort()
print(json.dumps({"median": 2 * n**3 / max(s[len(s) // 2], 1e-12) / 1e9}))
"""


def openblas_cpu_time(n):
    """OpenBLAS's one-thread rate per CPU-second (median call), numpy in a fresh process."""
    run = subprocess.run(
        [sys.executable, "-c", NUMPY_CPU_TIME, str(n), str(calls_for(n))],
        capture_output=True, text=True, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
    )
    if run.returncode != 0:
        sys.exit(f"numpy (one thread) failed: {run.stderr}")
    return json.loads(run.stdout)["median"]


def load_average():
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


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
    p.add_argument("--cpu-time", action="store_true",
                   help="also one thread each, rates per CPU-second (needs "
                        "cargo build --release -p matmul --example cpu_time)")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    binary = Path(args.bin)
    if not binary.exists():
        sys.exit(f"{binary} is missing: cargo build --release (or set MATMUL_BIN)")
    example = binary.parent / "examples" / "cpu_time"
    if args.cpu_time and not example.exists():
        sys.exit(f"{example} is missing: cargo build --release -p matmul --example cpu_time")

    # The copies of the u32 kernel this CPU runs, widest first (the first is the default).
    isas = [i for i in ("avx512", "avx2", "portable")
            if subprocess.run([str(binary), "run", "--backend", "cpu", "--dtype", "u32",
                               "-m", "1", "-n", "1", "-k", "1"],
                              capture_output=True, env={**os.environ, "MATMUL_CPU_U32_ISA": i}
                              ).returncode == 0]
    narrower = [i for i in isas[1:] if i != "portable"]

    blas = next((b for b in threadpoolctl.threadpool_info() if b["user_api"] == "blas"), {})
    rows = {n: {"f32": [], "blas": [], "u32": [], **{i: [] for i in narrower}} for n in sizes}
    cpu = {n: {"f32": [], "blas": [], "u32": [], **{i: [] for i in narrower}} for n in sizes}
    system = None
    load_before = load_average()
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
            if args.cpu_time:
                cpu[n]["blas"].append(openblas_cpu_time(n))
                cpu[n]["f32"].append(ours_cpu_time(example, "f32", n))
                cpu[n]["u32"].append(ours_cpu_time(example, "u32", n))
                for isa in narrower:
                    cpu[n][isa].append(
                        ours_cpu_time(example, "u32", n, {"MATMUL_CPU_U32_ISA": isa}))
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)

    commit = (system.get("git_commit") or "?")[:7] + ("+dirty" if system.get("git_dirty") else "")
    print(f"machine: {system.get('cpu_model')}, {system.get('cpu_threads')} threads; "
          f"date {time.strftime('%Y-%m-%d')}; matmul {commit} ({binary})")
    print(f"OpenBLAS: numpy {np.__version__}, OpenBLAS {blas.get('version')} "
          f"({blas.get('architecture')} kernels, {blas.get('num_threads')} threads)")
    print(f"{args.rounds} rounds, {args.min_time} s of calls per figure; load average "
          f"{load_before} before, {load_average()} after")
    head = ["size", "f32 ours GFLOP/s", "f32 OpenBLAS GFLOP/s", "ours / OpenBLAS",
            f"u32 ours GOP/s ({isas[0]})"] + [f"u32 {i} copy GOP/s" for i in narrower]

    def table(title, data):
        print(f"\n{title}; each cell: median over rounds / best round\n")
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for n in sizes:
            med = {k: statistics.median(v) for k, v in data[n].items()}
            best = {k: max(v) for k, v in data[n].items()}
            cells = [
                f"{n}³",
                f"{fmt(med['f32'])} / {fmt(best['f32'])}",
                f"{fmt(med['blas'])} / {fmt(best['blas'])}",
                f"{med['f32'] / med['blas']:.2f}× / {best['f32'] / best['blas']:.2f}×",
                f"{fmt(med['u32'])} / {fmt(best['u32'])}",
            ] + [f"{fmt(med[i])} / {fmt(best[i])}" for i in narrower]
            print("| " + " | ".join(cells) + " |")

    table(f"All {system.get('cpu_threads')} threads, wall clock (matmul bench; numpy a @ b), "
          "rate from the median call", rows)
    if args.cpu_time:
        table("One thread each, per second of CPU time, rate from the median call", cpu)


if __name__ == "__main__":
    main()
