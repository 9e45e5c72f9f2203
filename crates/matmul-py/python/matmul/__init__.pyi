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

_DType = Literal["float32", "tf32", "uint32", "float16", "bfloat16"]

class DeviceArray:
    """A matrix held by a backend (device memory on CUDA)."""
    @property
    def shape(self) -> tuple[int, int]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def backend(self) -> str: ...
    def numpy(self) -> npt.NDArray[Any]:
        """A numpy copy, after the work enqueued before on the backend."""

def to_device(array: npt.NDArray[Any], backend: Optional[str] = None) -> DeviceArray:
    """Copies a 2-D array (float32, uint32, float16, bfloat16) to the backend."""

def zeros(shape: tuple[int, int], dtype: _DType = "float32", backend: Optional[str] = None) -> DeviceArray:
    """A matrix of zeros on the backend."""

class Plan:
    """C = alpha·op(A)·op(B) + beta·C planned once, run many times on DeviceArrays."""
    def __init__(
        self,
        m: int,
        n: int,
        k: int,
        dtype: _DType = "float32",
        *,
        kernel: str = "auto",
        backend: Optional[str] = None,
        transpose_a: bool = False,
        transpose_b: bool = False,
        alpha: float = 1.0,
        beta: float = 0.0,
        c_dtype: Optional[_DType] = None,
        batch: Optional[int | tuple[int, int, int, int]] = None,
    ) -> None: ...
    @property
    def kernel(self) -> str: ...
    def run(self, a: DeviceArray, b: DeviceArray, c: DeviceArray) -> None:
        """Enqueues the product (done on return on the CPU; on CUDA, after synchronize())."""
    def synchronize(self) -> None: ...

def signature(n: int, s1: int, s2: int, *, kernel: str = "auto", backend: Optional[str] = None) -> int:
    """The Judge Girl CUDA-MATMUL signature of one case (N S1 S2), C computed by `kernel`."""
