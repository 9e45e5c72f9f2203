from typing import Any, Literal, Optional, TypeVar

import numpy as np
import numpy.typing as npt

__version__: str

_A = TypeVar("_A", bound=npt.NDArray[Any])

def gemm(
    a: _A,
    b: _A,
    *,
    kernel: str = "auto",
    backend: Optional[Literal["auto", "cpu", "cuda", "wgpu"]] = None,
    transpose_a: bool = False,
    transpose_b: bool = False,
    alpha: float = 1.0,
    beta: float = 0.0,
    out: Optional[_A] = None,
    verify: bool = False,
) -> _A:
    """C = alpha·op(A)·op(B) + beta·C on 2-D arrays of float32, uint32 (wrapping), float16 or
    bfloat16 (ml_dtypes); C has the inputs' dtype. op(X) is X, or X.T with transpose_*. `out`
    (C-contiguous, m×n, the inputs' dtype) receives C and is returned; beta ≠ 0 needs it (its
    contents are C's old value). `kernel`: a registry name (`kernels()`), a seed alias or "auto".
    `backend`: "auto" (CUDA if present, else the CPU), "cpu", "cuda" or "wgpu". `verify` compares
    with the CPU reference (slow for large products) and raises RuntimeError on a mismatch. Any
    strides and orders are accepted; A and B are copied once on the host. The GIL is released
    while the product runs."""

def kernels() -> list[dict[str, Any]]:
    """The kernel registry: name, aliases, backend, dtypes, summary, origin."""

def devices() -> list[dict[str, Any]]:
    """The backends this machine can open: the CPU always, CUDA devices, wgpu adapters; each with
    its description, or with the reason it cannot be opened."""
