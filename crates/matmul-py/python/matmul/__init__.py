"""GPU matrix multiplication: the kernels of the `matmul` Rust library on numpy arrays.

    >>> import numpy as np, matmul
    >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> b = np.ones((3, 2), dtype=np.float32)
    >>> matmul.gemm(a, b, backend="cpu")
    array([[ 3.,  3.],
           [12., 12.]], dtype=float32)

`gemm` runs on CUDA when a GPU is present (the first call opens it), else on the CPU; `kernels()`
lists the registry, `devices()` the backends. To multiply many times, keep the matrices on the
backend (`to_device`, `zeros`) and plan the product once (`Plan`; `run` then only enqueues on
CUDA, `synchronize()` waits, `DeviceArray.numpy()` copies back). Bad input raises ValueError, device failures
RuntimeError, with the library's messages.

DLPack both ways: `from_dlpack(x)` takes a torch/CuPy/JAX CUDA tensor without a copy (host arrays are
copied once), `gemm` and `Plan.run` take such tensors directly, and a DeviceArray exports
`__dlpack__`, so `torch.from_dlpack(matmul.gemm(x, w))` on CUDA never touches the host. `bench(...)`
runs the benchmark (`matmul bench`) and returns its cases as dicts; `judge(text)` gives the Judge Girl
signatures of a whole input, `puzzle(name)` runs a Mojo GPU puzzle against its expected output.
"""

from ._matmul import (
    DeviceArray,
    Plan,
    __version__,
    bench,
    devices,
    from_dlpack,
    gemm,
    judge,
    kernels,
    puzzle,
    signature,
    to_device,
    zeros,
)

__all__ = [
    "DeviceArray",
    "Plan",
    "__version__",
    "bench",
    "devices",
    "from_dlpack",
    "gemm",
    "judge",
    "kernels",
    "puzzle",
    "signature",
    "to_device",
    "zeros",
]
