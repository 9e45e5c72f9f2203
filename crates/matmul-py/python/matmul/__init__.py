"""GPU matrix multiplication: the kernels of the `matmul` Rust library on numpy arrays.

    >>> import numpy as np, matmul
    >>> a = np.arange(6, dtype=np.float32).reshape(2, 3)
    >>> b = np.ones((3, 2), dtype=np.float32)
    >>> matmul.gemm(a, b, backend="cpu")
    array([[ 3.,  3.],
           [12., 12.]], dtype=float32)

`gemm` runs on CUDA when a GPU is present (the first call opens it), else on the CPU; `kernels()`
lists the registry, `devices()` the backends. Bad input raises ValueError, device failures
RuntimeError, with the library's messages.
"""

from ._matmul import __version__, devices, gemm, kernels

__all__ = ["__version__", "devices", "gemm", "kernels"]
