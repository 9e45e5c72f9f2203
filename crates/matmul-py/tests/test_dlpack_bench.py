"""DLPack in and out, and matmul.bench: against numpy on the CPU backend (CI); on CUDA with torch
when a GPU and torch are there (skipped without them, a failure under MATMUL_REQUIRE_GPU=1)."""

import _thread
import gc
import json
import os
import threading

import numpy as np
import pytest

import matmul

REQUIRE_GPU = os.environ.get("MATMUL_REQUIRE_GPU") == "1"


def rng(seed=0):
    return np.random.default_rng(seed)


class OnlyDlpack:
    """An object that speaks DLPack and nothing else (as a tensor of another library would)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kwargs):
        return self.a.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_from_dlpack_numpy_any_layout():
    r = rng(10)
    big = r.standard_normal((12, 15)).astype(np.float32)
    for a in (big, big[::2, ::3], np.asfortranarray(big), big[:, 3:7], big[::-1]):
        try:
            d = matmul.from_dlpack(a)
        except (BufferError, ValueError) as e:  # numpy refuses to export some strides (negative)
            assert "stride" in str(e).lower() or "dlpack" in str(e).lower()
            continue
        assert d.backend == "cpu" and d.shape == a.shape and d.dtype == "float32"
        np.testing.assert_array_equal(d.numpy(), a)
        np.testing.assert_array_equal(np.from_dlpack(d), a)
    u = r.integers(0, 2**32, size=(5, 4), dtype=np.uint32)
    np.testing.assert_array_equal(np.from_dlpack(matmul.from_dlpack(OnlyDlpack(u.T))), u.T)
    h = r.standard_normal((3, 8)).astype(np.float16)[:, ::2]
    np.testing.assert_array_equal(matmul.from_dlpack(h).numpy(), h)


def test_gemm_on_device_arrays_returns_a_device_array():
    r = rng(11)
    a = r.standard_normal((9, 7)).astype(np.float32)
    b = r.standard_normal((7, 5)).astype(np.float32)
    da, db = matmul.from_dlpack(a), matmul.to_device(b, backend="cpu")
    c = matmul.gemm(da, db, verify=True)
    assert isinstance(c, matmul.DeviceArray) and c.backend == "cpu" and c.shape == (9, 5)
    assert c.__dlpack_device__() == (1, 0)
    want = a.astype(np.float64) @ b
    np.testing.assert_allclose(np.from_dlpack(c), want, rtol=1e-5, atol=1e-5)
    # A numpy operand beside a DeviceArray is uploaded to its backend.
    np.testing.assert_allclose(matmul.gemm(da, b).numpy(), want, rtol=1e-5, atol=1e-5)
    # out= a DeviceArray, with beta reading its old value.
    out = matmul.to_device(np.ones((9, 5), dtype=np.float32), "cpu")
    assert matmul.gemm(da, db, alpha=2.0, beta=1.0, out=out, verify=True) is out
    np.testing.assert_allclose(out.numpy(), 2 * want + 1, rtol=1e-5, atol=1e-5)
    # out= a numpy array beside DeviceArray inputs: written back.
    nout = np.ones((9, 5), dtype=np.float32)
    assert matmul.gemm(da, db, beta=1.0, out=nout, verify=True) is nout
    np.testing.assert_allclose(nout, want + 1, rtol=1e-5, atol=1e-5)
    # An exported copy is the consumer's: a later run does not change it.
    snap = np.from_dlpack(out)
    matmul.gemm(da, db, out=out)
    np.testing.assert_allclose(snap, 2 * want + 1, rtol=1e-5, atol=1e-5)


def test_objects_with_dlpack_are_taken_by_gemm_to_device_and_plan():
    r = rng(12)
    a = r.standard_normal((6, 4)).astype(np.float32)
    b = r.standard_normal((4, 3)).astype(np.float32)
    want = a.astype(np.float64) @ b
    got = matmul.gemm(OnlyDlpack(a), OnlyDlpack(b), backend="cpu")
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    d = matmul.to_device(OnlyDlpack(np.asfortranarray(a)), backend="cpu")
    np.testing.assert_array_equal(d.numpy(), a)
    # Plan.run: numpy and DLPack operands, a numpy C written back.
    plan = matmul.Plan(6, 3, 4, backend="cpu")
    c = np.full((6, 3), np.nan, dtype=np.float32)
    plan.run(OnlyDlpack(a), b, c)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)
    dc = matmul.zeros((6, 3), backend="cpu")
    plan.run(matmul.from_dlpack(a), matmul.from_dlpack(b), dc)
    np.testing.assert_allclose(np.from_dlpack(dc), want, rtol=1e-5, atol=1e-5)


def test_dlpack_bad_input_is_value_error():
    with pytest.raises(ValueError, match="__dlpack__"):
        matmul.from_dlpack([[1.0, 2.0]])
    with pytest.raises(ValueError, match="dtype"):
        matmul.from_dlpack(np.ones((2, 2)))  # float64
    with pytest.raises(ValueError, match="2-D"):
        matmul.from_dlpack(np.ones((2, 2, 2), dtype=np.float32))
    with pytest.raises(ValueError, match="2-D"):
        matmul.gemm([[1.0]], [[1.0]], backend="cpu")
    da = matmul.to_device(np.ones((2, 3), dtype=np.float32), "cpu")
    with pytest.raises(ValueError, match="op\\(B\\)"):
        matmul.gemm(da, da)
    with pytest.raises(ValueError, match="same dtype"):
        matmul.gemm(da, matmul.zeros((3, 2), "uint32", "cpu"))
    with pytest.raises(ValueError, match="out"):
        matmul.gemm(da, matmul.zeros((3, 2), backend="cpu"), out=matmul.zeros((3, 3), backend="cpu"))
    with pytest.raises(ValueError):
        matmul.gemm(da, matmul.zeros((3, 2), backend="cpu"), backend="wgpu")
    with pytest.raises(BufferError):
        da.__dlpack__(copy=False)


def test_bench_returns_the_cases_and_writes_the_report(tmp_path):
    out = tmp_path / "report"
    cases = matmul.bench(
        [8, (8, 4, 16)], kernels="cpu", dtypes=["float32", "u32"], backend="cpu", min_time=0.01, out=str(out), ceilings=False
    )
    assert len(cases) == 4
    assert all(c["kernel"] == "cpu" and c["status"] == "OK" for c in cases), cases
    assert {c["shape"] for c in cases} == {"8x8x8", "8x4x16"}
    for f in ("results.json", "results.csv", "report.md", "report.html", "roofline.svg"):
        assert (out / f).exists(), f
    saved = json.loads((out / "results.json").read_text())
    assert saved["records"] == cases
    with pytest.raises(ValueError):
        matmul.bench([8], kernels="no-such-kernel", backend="cpu", out=str(out))
    with pytest.raises(ValueError):
        matmul.bench([0], kernels="cpu", backend="cpu", out=str(out))
    with pytest.raises(ValueError, match="dtype"):
        matmul.bench([8], kernels="cpu", dtypes=["float64"], backend="cpu", out=str(out))


def test_bench_ctrl_c_raises_keyboard_interrupt_between_cases(tmp_path):
    out = tmp_path / "report"
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            matmul.bench(list(range(128, 168)), kernels="cpu", dtypes=["f32"], backend="cpu", min_time=0.05, out=str(out), ceilings=False)
    finally:
        timer.cancel()
    saved = json.loads((out / "results.json").read_text())
    assert saved.get("partial", "").startswith("interrupted")
    assert 0 < len(saved["records"]) < 40


# --- CUDA -------------------------------------------------------------------------------------


def cuda_available():
    return any(d["backend"] == "cuda" and d["available"] for d in matmul.devices())


def torch_cuda():
    """torch with CUDA, or None (a failure under MATMUL_REQUIRE_GPU=1)."""
    try:
        import torch
    except ImportError:
        if REQUIRE_GPU:
            raise
        return None
    if not torch.cuda.is_available():
        assert not REQUIRE_GPU, "MATMUL_REQUIRE_GPU=1 but torch sees no CUDA device"
        return None
    return torch


needs_cuda = pytest.mark.skipif(
    not REQUIRE_GPU and not cuda_available(), reason="no CUDA device (MATMUL_REQUIRE_GPU=1 makes this a failure)"
)


@needs_cuda
def test_cuda_device_arrays_speak_dlpack():
    r = rng(20)
    a = r.standard_normal((65, 33)).astype(np.float32)
    b = r.standard_normal((33, 17)).astype(np.float32)
    c = matmul.gemm(matmul.to_device(a, "cuda"), matmul.to_device(b, "cuda"), verify=True)
    assert isinstance(c, matmul.DeviceArray) and c.backend == "cuda"
    assert c.__dlpack_device__() == (2, 0) and c.data_ptr > 0
    again = matmul.from_dlpack(c)  # our own capsule: the same memory
    assert again.data_ptr == c.data_ptr and again.backend == "cuda"
    np.testing.assert_allclose(again.numpy(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(
    not REQUIRE_GPU and (not cuda_available() or torch_cuda() is None),
    reason="no CUDA device or no torch with CUDA (MATMUL_REQUIRE_GPU=1 makes this a failure)",
)
def test_torch_cuda_round_trip_shares_memory():
    torch = torch_cuda()
    assert torch is not None
    torch.manual_seed(0)
    x = torch.randn(129, 257, device="cuda")
    w = torch.randn(257, 65, device="cuda")
    want = (x.double() @ w.double()).float()
    # In: the tensor's memory is the DeviceArray's.
    dx = matmul.from_dlpack(x)
    assert dx.backend == "cuda" and dx.shape == (129, 257) and dx.data_ptr == x.data_ptr()
    # gemm on CUDA tensors: a DeviceArray on the device, whose memory torch then shares.
    y = matmul.gemm(x, w)
    assert isinstance(y, matmul.DeviceArray) and y.backend == "cuda"
    t = torch.from_dlpack(y)
    assert t.is_cuda and t.data_ptr() == y.data_ptr and t.shape == (129, 65)
    torch.testing.assert_close(t, want, rtol=1e-3, atol=1e-3)
    # The capsule keeps the memory alive after the DeviceArray is gone.
    t2 = torch.from_dlpack(matmul.gemm(x, w))
    gc.collect()
    torch.testing.assert_close(t2, want, rtol=1e-3, atol=1e-3)
    # out= a torch tensor, written in place.
    out = torch.full((129, 65), float("nan"), device="cuda")
    assert matmul.gemm(x, w, out=out) is out
    torch.testing.assert_close(out, want, rtol=1e-3, atol=1e-3)
    # A plan run on torch tensors, C written in the tensor's memory.
    plan = matmul.Plan(129, 65, 257, backend="cuda", alpha=2.0)
    plan.run(x, w, out)
    plan.synchronize()
    torch.testing.assert_close(out, 2 * want, rtol=1e-3, atol=1e-3)
    # bf16 against torch.matmul.
    xb, wb = x.bfloat16(), w.bfloat16()
    yb = torch.from_dlpack(matmul.gemm(xb, wb))
    assert yb.dtype == torch.bfloat16
    torch.testing.assert_close(yb.float(), torch.matmul(xb, wb).float(), rtol=2e-2, atol=2e-1)
    # u32 against an exact reference.
    r = rng(21)
    a = r.integers(0, 2**32, size=(64, 48), dtype=np.uint32)
    b = r.integers(0, 2**32, size=(48, 32), dtype=np.uint32)
    cu = matmul.gemm(matmul.to_device(a, "cuda"), matmul.to_device(b, "cuda"))
    exact = ((a.astype(np.uint64) @ b.astype(np.uint64)) % 2**32).astype(np.uint32)
    np.testing.assert_array_equal(cu.numpy(), exact)
    if hasattr(torch, "uint32"):
        tu = torch.from_dlpack(cu)
        assert tu.data_ptr() == cu.data_ptr
        np.testing.assert_array_equal(tu.cpu().numpy(), exact)
    # A transposed (column-major) CUDA tensor is refused, not copied.
    with pytest.raises(ValueError, match="row-major"):
        matmul.from_dlpack(x.t())
