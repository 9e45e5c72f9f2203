"""What a call from Python costs (issue figures for docs/python.md), on the GPU host.

A Plan run on device arrays at 1024³ bf16 against the kernel's own time (`matmul.bench`, CUDA events)
and against torch.matmul on the same CUDA tensors; on the CPU backend (`--cpu`), `matmul.gemm` on numpy f32
at 2048² against a plan on matrices the backend already holds (the library's path without Python's).

    PYTHONPATH=<wheel dir> python3 lab/py-plan-overhead.py [--cpu]
"""

import sys
import time

import numpy as np

import matmul


def per_call(f, sync, n):
    f()
    sync()
    start = time.perf_counter()
    for _ in range(n):
        f()
    sync()
    return (time.perf_counter() - start) / n


def gpu():
    import torch

    n, calls = 1024, 2000
    x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(n, n, device="cuda", dtype=torch.float32)
    a, b, dc = matmul.from_dlpack(x), matmul.from_dlpack(w), matmul.from_dlpack(c)
    plan = matmul.Plan(n, n, n, "bfloat16", backend="cuda")
    ours = per_call(lambda: plan.run(a, b, dc), plan.synchronize, calls)
    out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    theirs = per_call(lambda: torch.matmul(x, w, out=out), torch.cuda.synchronize, calls)
    rows = matmul.bench([n], kernels=f"{plan.kernel},cublas", dtypes=["bf16"], backend="cuda",
                        min_time=0.2, ceilings=False, out="/tmp/py-plan-overhead")
    kernel = {r["kernel"]: r["timing"]["stats"]["median"] for r in rows if r.get("timing")}
    k = kernel[plan.kernel]
    print(f"bf16 {n}³: Plan.run {ours * 1e6:.1f} µs per call ({plan.kernel}; its kernel {k * 1e6:.1f} µs in bench: "
          f"{(ours - k) * 1e6:+.1f} µs); torch.matmul {theirs * 1e6:.1f} µs per call "
          f"(cuBLAS's kernel {kernel.get('cublas', float('nan')) * 1e6:.1f} µs in bench)")


def cpu():
    n = 2048
    a = np.random.rand(n, n).astype(np.float32)
    b = np.random.rand(n, n).astype(np.float32)
    best = lambda f: min(per_call(f, lambda: None, 3) for _ in range(3))  # noqa: E731
    t = best(lambda: matmul.gemm(a, b, backend="cpu"))
    # The library's own path with nothing of Python's: a plan on matrices the backend holds.
    da, db = matmul.to_device(a, "cpu"), matmul.to_device(b, "cpu")
    dc, plan = matmul.zeros((n, n), backend="cpu"), matmul.Plan(n, n, n, backend="cpu")
    r = best(lambda: plan.run(da, db, dc))
    print(f"f32 {n}² on the CPU backend: matmul.gemm {t * 1e3:.1f} ms per call, a plan on held matrices "
          f"{r * 1e3:.1f} ms ({t / r:.3f}×; best of 3 × 3)")


if __name__ == "__main__":
    cpu() if "--cpu" in sys.argv else gpu()
