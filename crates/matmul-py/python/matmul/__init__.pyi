from os import PathLike
from typing import Any, Literal, Optional, Protocol, Sequence, TypeVar, Union, overload

import numpy as np
import numpy.typing as npt

__version__: str

_A = TypeVar("_A", bound=npt.NDArray[Any])
_O = TypeVar("_O")

class SupportsDLPack(Protocol):
    """An object that speaks DLPack: a torch, CuPy or JAX tensor, a numpy array, a DeviceArray."""
    def __dlpack__(self, *, stream: Optional[int] = ..., **kwargs: Any) -> Any: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...

_Operand = Union[npt.NDArray[Any], "DeviceArray", SupportsDLPack]

@overload
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
    precision: Literal["accurate", "strict"] = "accurate",
) -> _A: ...
@overload
def gemm(
    a: _Operand,
    b: _Operand,
    *,
    kernel: str = "auto",
    backend: Optional[Literal["auto", "cpu", "cuda", "wgpu"]] = None,
    transpose_a: bool = False,
    transpose_b: bool = False,
    alpha: float = 1.0,
    beta: float = 0.0,
    out: None = None,
    verify: bool = False,
    precision: Literal["accurate", "strict"] = "accurate",
) -> "DeviceArray": ...
@overload
def gemm(
    a: _Operand,
    b: _Operand,
    *,
    kernel: str = "auto",
    backend: Optional[Literal["auto", "cpu", "cuda", "wgpu"]] = None,
    transpose_a: bool = False,
    transpose_b: bool = False,
    alpha: float = 1.0,
    beta: float = 0.0,
    out: _O,
    verify: bool = False,
    precision: Literal["accurate", "strict"] = "accurate",
) -> _O:
    """C = alpha·op(A)·op(B) + beta·C on 2-D arrays of float32, uint32 (wrapping), float16 or
    bfloat16 (ml_dtypes); C has the inputs' dtype. op(X) is X, or X.T with transpose_*. `out`
    (C-contiguous, m×n, the inputs' dtype) receives C and is returned; beta ≠ 0 needs it (its
    contents are C's old value). `kernel`: a registry name (`kernels()`), a seed alias or "auto".
    `backend`: "auto" (CUDA if present, else the CPU), "cpu", "cuda" or "wgpu". `precision`
    (float32): "accurate" (SGEMM's accuracy and special values by the fastest method, FP32
    emulated on Hopper's tf32 tensor cores included) or "strict" (IEEE FMA kernels). `verify` compares
    with the CPU reference (slow for large products) and raises RuntimeError on a mismatch. numpy
    inputs of any strides and orders are accepted and copied once on the host, giving a numpy C.
    A DeviceArray or a CUDA tensor (`__dlpack__`: torch, CuPy) among the operands runs on its
    backend without a copy and gives a DeviceArray there (numpy operands are uploaded to it);
    `out` may then be a DeviceArray or a CUDA tensor, written in place. The GIL is released
    while the product runs."""

def kernels() -> list[dict[str, Any]]:
    """The kernel registry: name, aliases, backend, dtypes, summary, origin."""

def devices() -> list[dict[str, Any]]:
    """The backends this machine can open: the CPU always, CUDA devices, wgpu adapters; each with
    its description, or with the reason it cannot be opened."""

_DType = Literal["float32", "tf32", "uint32", "float16", "bfloat16"]

class DeviceArray:
    """A matrix held by a backend (device memory on CUDA). It speaks DLPack: on CUDA
    `torch.from_dlpack(x)` shares its memory; a host one exports a copy."""
    @property
    def shape(self) -> tuple[int, int]: ...
    @property
    def dtype(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def data_ptr(self) -> int:
        """The device address of the first element (CUDA only; ValueError elsewhere)."""
    def numpy(self) -> npt.NDArray[Any]:
        """A numpy copy, after the work enqueued before on the backend."""
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[tuple[int, int]] = None,
        dl_device: Optional[tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """The DLPack capsule. CUDA: its own memory, after the backend's stream is synchronized
        (unless stream == -1). Host: a copy (copy=False raises BufferError)."""
    def __dlpack_device__(self) -> tuple[int, int]:
        """(2, 0) on CUDA, (1, 0) on the host."""

def to_device(array: _Operand, backend: Optional[str] = None) -> DeviceArray:
    """A 2-D array (float32, uint32, float16, bfloat16) on the backend: numpy arrays, host
    tensors and DeviceArrays are copied there; a CUDA tensor bound for CUDA is shared."""

def from_dlpack(x: SupportsDLPack) -> DeviceArray:
    """A DLPack tensor as a DeviceArray: CUDA memory without a copy (row-major tensors only; it
    stays alive while the DeviceArray does), host memory copied once onto the CPU backend."""

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
        column_major: bool = False,
        precision: Literal["accurate", "strict"] = "accurate",
    ) -> None:
        """column_major: A, B and C column-major (BLAS's storage), run as the row-major C^T = op(B)^T·op(A)^T
        over the same bytes; a column-major r×c matrix is the row-major c×r array of the same elements."""
    @property
    def kernel(self) -> str: ...
    @property
    def one_launch(self) -> bool:
        """Whether a run of the batch is one launch rather than one per product."""
    def run(self, a: _Operand, b: _Operand, c: _Operand) -> None:
        """Enqueues the product (done on return on the CPU; on CUDA, after synchronize()).
        DeviceArrays and CUDA tensors are used in place; numpy operands are uploaded each run
        (a numpy C is written back, which waits for the product)."""
    def synchronize(self) -> None: ...

def signature(n: int, s1: int, s2: int, *, kernel: str = "auto", backend: Optional[str] = None) -> int:
    """The Judge Girl CUDA-MATMUL signature of one case (N S1 S2), C computed by `kernel`."""

def judge(text: str, *, kernel: str = "auto", backend: Optional[str] = None) -> list[int]:
    """The signatures of every case of judge input `text` (`N S1 S2` triples), as ./test.sh prints them.

    Bad input raises ValueError naming the line and the token; Ctrl-C stops between cases.
    """

def puzzle(name: str, *, backend: Optional[Literal["cuda", "wgpu"]] = None) -> dict[str, Any]:
    """Runs a Mojo GPU puzzle (naive, single-block, tiled, idiomatic-tiled, p14-naive, p14-tiled) at TPB 3.

    Returns name, kernel, backend, out, expected (row-major lists) and passed (exact match).
    CUDA by default; backend="wgpu" runs the WGSL twin.
    """

def bench(
    sizes: Optional[Sequence[Union[int, tuple[int, int, int]]]] = None,
    *,
    kernels: str = "all",
    dtypes: Optional[Sequence[str]] = None,
    backend: Optional[Literal["auto", "cpu", "cuda", "wgpu"]] = None,
    quick: bool = False,
    min_time: Optional[float] = None,
    out: Union[str, "PathLike[str]", None] = None,
    ceilings: bool = True,
) -> list[dict[str, Any]]:
    """`matmul bench` from Python: every kernel × dtype × size verified and timed on one backend,
    the report files written to `out` (results.json, results.csv, roofline.svg, ladder.svg,
    report.md, report.html), the cases returned as dicts with results.json's fields. Ctrl-C
    stops it after the case in progress, writes the finished cases (marked partial) and raises
    KeyboardInterrupt."""
