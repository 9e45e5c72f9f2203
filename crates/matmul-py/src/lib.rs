//! Python bindings of the `matmul` library (module `matmul._matmul`, re-exported by the `matmul`
//! package): `gemm` on numpy arrays through a plan ([`matmul::Plan`]), the registry and the
//! backends as dicts. Bad input raises `ValueError`, device failures `RuntimeError`
//! ([`matmul::Error::is_bad_input`]); the GIL is released while a product runs. DLPack in and
//! out is [`dlpack`]; `bench` is [`bench`].

mod bench;
mod dlpack;

use std::sync::OnceLock;

use matmul::{
    AnyMatrix, Backend, COut, CpuBackend, CudaBackend, Element, Matrix, Op, Precision, Problem,
    Scale, WgpuBackend,
};
use numpy::{PyArray2, PyReadonlyArray2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A library error as the Python exception its kind calls for.
pub(crate) fn py_err(e: matmul::Error) -> PyErr {
    if e.is_bad_input() {
        PyValueError::new_err(e.to_string())
    } else {
        PyRuntimeError::new_err(e.to_string())
    }
}

/// A backend opened once for the process, or why it could not be (the message, and whether it
/// was bad input, and which backend).
type Opened<B> = Result<B, (String, bool)>;

static CUDA: OnceLock<Opened<CudaBackend>> = OnceLock::new();
static WGPU: OnceLock<Opened<WgpuBackend>> = OnceLock::new();
static CPU: CpuBackend = CpuBackend;

/// The backend in `slot`, opened by `open` the first time; a failure is kept and given again
/// (as `failed` makes it from the first one's message).
fn opened<B>(
    slot: &'static OnceLock<Opened<B>>,
    open: impl FnOnce() -> matmul::Result<B>,
    failed: fn(String) -> matmul::Error,
) -> matmul::Result<&'static B> {
    slot.get_or_init(|| open().map_err(|e| (e.to_string(), e.is_bad_input())))
        .as_ref()
        .map_err(|(message, input)| {
            if *input {
                matmul::Error::Invalid(message.clone())
            } else {
                failed(message.clone())
            }
        })
}

/// A CUDA backend that did not open.
fn cuda_failed(message: String) -> matmul::Error {
    matmul::Error::Cuda {
        context: "opening the backend".into(),
        message,
    }
}

/// A wgpu backend that did not open.
fn wgpu_failed(message: String) -> matmul::Error {
    matmul::Error::Wgpu {
        context: "opening the backend".into(),
        message,
    }
}

/// The backend `name` names (None or "auto": CUDA when a device opens, else the CPU).
fn backend(name: Option<&str>) -> matmul::Result<&'static (dyn Backend + Sync)> {
    match name.unwrap_or("auto") {
        "cpu" => Ok(&CPU),
        "cuda" => Ok(opened(&CUDA, || CudaBackend::new(0), cuda_failed)?),
        "wgpu" => Ok(opened(&WGPU, WgpuBackend::new, wgpu_failed)?),
        "auto" => Ok(match opened(&CUDA, || CudaBackend::new(0), cuda_failed) {
            Ok(cuda) => cuda,
            Err(_) => &CPU,
        }),
        other => Err(matmul::Error::Invalid(format!(
            "backend {other:?}: use \"auto\", \"cpu\", \"cuda\" or \"wgpu\""
        ))),
    }
}

/// A 2-D array's elements as a row-major matrix (any strides or order; one copy).
fn matrix<T: Element + numpy::Element>(a: &PyReadonlyArray2<'_, T>) -> matmul::Result<Matrix<T>> {
    let view = a.as_array();
    let (rows, cols) = view.dim();
    let data = match view.as_slice() {
        Some(contiguous) => contiguous.to_vec(),
        None => view.iter().copied().collect(),
    };
    Matrix::from_vec(rows, cols, data)
}

/// What `gemm` computes, parsed from its arguments.
struct Call<'a> {
    kernel: &'a str,
    backend: Option<&'a str>,
    precision: Precision,
    ops: (Op, Op),
    scale: Scale,
    verify: bool,
}

/// Checks C against the CPU reference of α·op(A)·op(B) + β·C0 (host copies), as `verify=True`
/// asks: a mismatch is [`matmul::Error::Mismatch`].
fn verify(
    call: &Call<'_>,
    problem: &Problem,
    kernel: &str,
    a: &AnyMatrix,
    b: &AnyMatrix,
    c0: Option<AnyMatrix>,
    c: &AnyMatrix,
) -> matmul::Result<()> {
    let (dtype, m, n) = (a.dtype(), problem.m, problem.n);
    let want = if call.scale.is_plain() {
        matmul::cpu::reference::matmul(problem, a, b)?
    } else {
        let wide = matmul::cpu::reference::matmul(&problem.with_c(COut::Accumulator), a, b)?;
        let mut want = match c0 {
            Some(c) => c,
            None => CpuBackend.download(&CpuBackend.alloc_zeroed(dtype, m, n)?)?,
        };
        call.scale.apply_host(&wide, &mut want)?;
        want
    };
    let v = matmul::verify::compare(problem, c, &want);
    if !v.passed {
        return Err(matmul::Error::Mismatch {
            kernel: kernel.to_string(),
            problem: problem.to_string(),
            detail: format!(
                "rel. Frobenius error {:.3e} (tolerance {:.1e}), {} mismatches",
                v.rel_frobenius, v.tolerance, v.mismatches
            ),
        });
    }
    Ok(())
}

/// C = α·op(A)·op(B) + β·C0 on `backend`, through a plan; verified against the CPU reference
/// when asked. C has the inputs' dtype.
fn run(
    call: &Call<'_>,
    a: AnyMatrix,
    b: AnyMatrix,
    c0: Option<AnyMatrix>,
) -> matmul::Result<AnyMatrix> {
    let dtype = a.dtype();
    let (op_a, op_b) = call.ops;
    let problem = Problem::from_stored(
        dtype,
        (a.rows(), a.cols()),
        (b.rows(), b.cols()),
        op_a,
        op_b,
    )?
    .with_c(COut::for_types(dtype, dtype)?)
    .with_precision(call.precision);
    let (m, n) = (problem.m, problem.n);
    let backend = backend(call.backend)?;
    let plan = matmul::Plan::builder(backend, problem)
        .kernel(call.kernel)
        .alpha(call.scale.alpha)
        .beta(call.scale.beta)
        .build()?;
    if !call.verify {
        // The matrices are given up: the CPU backend holds and returns them without a copy.
        let (da, db) = (backend.upload_owned(a)?, backend.upload_owned(b)?);
        let mut dc = match c0 {
            Some(c) => backend.upload_owned(c)?,
            None => backend.alloc_zeroed(dtype, m, n)?,
        };
        plan.run_data(&da, &db, &mut dc)?;
        return backend.download_owned(dc);
    }
    let (da, db) = (backend.upload(&a)?, backend.upload(&b)?);
    let mut dc = match &c0 {
        Some(c) => backend.upload(c)?,
        None => backend.alloc_zeroed(dtype, m, n)?,
    };
    plan.run_data(&da, &db, &mut dc)?;
    let c = backend.download(&dc)?;
    verify(call, &problem, plan.kernel().name, &a, &b, c0, &c)?;
    Ok(c)
}

/// C = alpha·op(A)·op(B) + beta·C on 2-D arrays of float32, uint32 (wrapping), float16 or
/// bfloat16 (ml_dtypes); C has the inputs' dtype. op(X) is X, or X.T with transpose_*.
///
/// A and B are numpy arrays, DeviceArrays, or objects with `__dlpack__` (torch, CuPy, JAX):
/// numpy inputs give a numpy C; a DeviceArray or a CUDA tensor among them runs on its backend
/// without copying it and gives a DeviceArray on that backend (a numpy operand is uploaded
/// there), which `torch.from_dlpack` takes without a copy. `out` (m×n, the inputs' dtype,
/// writable: a numpy array, a DeviceArray or a CUDA tensor) receives C and is returned; beta !=
/// 0 needs it (its contents are C's old value). `kernel`: a registry name (`kernels()`), a seed
/// alias or "auto". `backend`: "auto" (the device inputs' backend, else CUDA if present, else
/// the CPU), "cpu", "cuda" or "wgpu". `precision` (float32 only): "accurate" (SGEMM's accuracy
/// and special values by the fastest method, FP32 emulated on Hopper's tf32 tensor cores
/// included) or "strict" (IEEE FMA kernels only). `verify` compares with the CPU reference (slow for large
/// products) and raises RuntimeError on a mismatch. numpy inputs of any strides and orders are
/// accepted and copied once on the host. The GIL is released while the product runs. Bad input
/// raises ValueError, device failures RuntimeError.
#[pyfunction]
#[pyo3(signature = (a, b, *, kernel = "auto", backend = None, transpose_a = false, transpose_b = false, alpha = 1.0, beta = 0.0, out = None, verify = false, precision = "accurate"))]
#[allow(clippy::too_many_arguments)]
fn gemm<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    kernel: &str,
    backend: Option<&str>,
    transpose_a: bool,
    transpose_b: bool,
    alpha: f64,
    beta: f64,
    out: Option<&Bound<'py, PyAny>>,
    verify: bool,
    precision: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let call = Call {
        kernel,
        backend,
        precision: precision.parse().map_err(py_err)?,
        ops: (Op::from_flag(transpose_a), Op::from_flag(transpose_b)),
        scale: Scale { alpha, beta },
        verify,
    };
    if call.scale.beta != 0.0 && out.is_none() {
        return Err(PyValueError::new_err(
            "beta != 0 needs out= (C's old value)",
        ));
    }
    if let Some(c) = gemm_in_place(py, &call, a, b, out)? {
        return Ok(c);
    }
    let out_on_host = out.is_none_or(is_numpy);
    match (operand(a)?, operand(b)?) {
        (Operand::Host(am), Operand::Host(bm)) if out_on_host => gemm_host(py, &call, am, bm, out),
        (oa, ob) => gemm_device(py, &call, oa, ob, out),
    }
}

/// `gemm` on two C-contiguous numpy arrays of one dtype, α = 1, β = 0, no `out`, no `verify`:
/// the library's one call on views of the arrays' own memory (`matmul::Gemm` on `MatRef`s: the
/// CPU's fast kernel reads f32 in place, CUDA uploads from it), C moved into a new numpy array.
/// None where the call is not of that kind (the general path then copies the inputs once).
fn gemm_in_place<'py>(
    py: Python<'py>,
    call: &Call<'_>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    fn typed<'py, T: Element + numpy::Element>(
        py: Python<'py>,
        call: &Call<'_>,
        a: &Bound<'py, PyAny>,
        b: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let (Ok(a), Ok(b)) = (
            a.extract::<PyReadonlyArray2<'py, T>>(),
            b.extract::<PyReadonlyArray2<'py, T>>(),
        ) else {
            return Ok(None);
        };
        let (Ok(sa), Ok(sb)) = (a.as_slice(), b.as_slice()) else {
            return Ok(None); // not C-contiguous
        };
        let (da, db) = (a.as_array().dim(), b.as_array().dim());
        let backend = backend(call.backend).map_err(py_err)?;
        let c = py
            .detach(|| {
                let (va, vb) = (
                    matmul::MatRef::new(sa, da.0, da.1)?,
                    matmul::MatRef::new(sb, db.0, db.1)?,
                );
                matmul::Gemm::new(va, vb)
                    .transpose_a(call.ops.0 == Op::T)
                    .transpose_b(call.ops.1 == Op::T)
                    .kernel(call.kernel)
                    .precision(call.precision)
                    .on(backend)
                    .run()
            })
            .map_err(py_err)?;
        any_to_py(py, AnyMatrix::from(c)).map(Some)
    }
    if !call.scale.is_plain() || out.is_some() || call.verify || !is_numpy(a) || !is_numpy(b) {
        return Ok(None);
    }
    let dtype_of =
        |x: &Bound<'py, PyAny>| -> PyResult<String> { x.getattr("dtype")?.str()?.extract() };
    let dtype = dtype_of(a)?;
    if dtype != dtype_of(b)? {
        return Ok(None); // the general path names the mismatch
    }
    match dtype.as_str() {
        "float32" => typed::<f32>(py, call, a, b),
        "uint32" => typed::<u32>(py, call, a, b),
        "float16" => typed::<half::f16>(py, call, a, b),
        _ => Ok(None),
    }
}

/// `gemm` on numpy arrays: a numpy C (or `out`).
fn gemm_host<'py>(
    py: Python<'py>,
    call: &Call<'_>,
    am: AnyMatrix,
    bm: AnyMatrix,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    same_dtype(am.dtype(), bm.dtype(), "B")?;
    let c0 = match out {
        Some(o) if call.scale.beta != 0.0 => {
            let c0 = any_from_py(o)?;
            same_dtype(am.dtype(), c0.dtype(), "out")?;
            Some(c0)
        }
        _ => None,
    };
    let c = py.detach(|| run(call, am, bm, c0)).map_err(py_err)?;
    let result = any_to_py(py, c)?;
    match out {
        None => Ok(result),
        Some(o) => {
            write_back(o, &result)?;
            Ok(o.clone())
        }
    }
}

/// ValueError unless `found` is A's dtype `a`.
fn same_dtype(a: matmul::DType, found: matmul::DType, what: &str) -> PyResult<()> {
    if a == found {
        Ok(())
    } else {
        Err(PyValueError::new_err(format!(
            "{what} must be a 2-D array of the same dtype as A ({a}), not {found}"
        )))
    }
}

/// Writes the numpy array `result` into `o` (a writable array of its shape and dtype).
fn write_back(o: &Bound<'_, PyAny>, result: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = o.py();
    let shape_of = |x: &Bound<'_, PyAny>| -> PyResult<(usize, usize)> {
        x.getattr("shape")?
            .extract()
            .map_err(|_| PyValueError::new_err("out must be a 2-D array"))
    };
    let (shape, want) = (shape_of(o)?, shape_of(result)?);
    if shape != want {
        return Err(PyValueError::new_err(format!(
            "out is {shape:?}; C is {}x{}",
            want.0, want.1
        )));
    }
    let dtype_of =
        |x: &Bound<'_, PyAny>| -> PyResult<String> { x.getattr("dtype")?.str()?.extract() };
    let (o_dtype, r_dtype) = (dtype_of(o)?, dtype_of(result)?);
    if !o_dtype.ends_with(&r_dtype) {
        return Err(PyValueError::new_err(format!(
            "out must be {r_dtype}, not {o_dtype}"
        )));
    }
    // numpy raises ValueError for a read-only out.
    o.set_item(py.Ellipsis(), result)
}

/// `gemm` with a DeviceArray or a DLPack tensor among its operands: runs on their backend, C a
/// DeviceArray there (or `out`).
fn gemm_device<'py>(
    py: Python<'py>,
    call: &Call<'_>,
    oa: Operand<'py>,
    ob: Operand<'py>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let oc = match out {
        Some(o) if !is_numpy(o) => Some(operand_mut(o)?),
        _ => None,
    };
    // The backend: the device operands' (all one), else the one named.
    let mut held: Option<(&'static (dyn Backend + Sync), String)> = None;
    let held_by = [oa.held(), ob.held(), oc.as_ref().and_then(OperandMut::held)];
    for (b, name) in held_by.into_iter().flatten() {
        match &held {
            Some((_, first)) if *first != name => {
                return Err(PyValueError::new_err(format!(
                    "the operands are held by different backends ({first} and {name})"
                )))
            }
            Some(_) => {}
            None => held = Some((b, name)),
        }
    }
    let (backend, name) = match held {
        Some((b, name)) => {
            if let Some(asked) = call.backend.filter(|x| *x != "auto" && *x != name) {
                return Err(PyValueError::new_err(format!(
                    "backend={asked:?}, but the operands are held by the {name} backend"
                )));
            }
            (b, name)
        }
        None => backend_named(call.backend).map_err(py_err)?,
    };
    let (ra, rb) = (oa.resolve(py, backend)?, ob.resolve(py, backend)?);
    let (da, db) = (ra.data(), rb.data());
    let dtype = da.dtype();
    same_dtype(dtype, db.dtype(), "B")?;
    let (op_a, op_b) = call.ops;
    let problem = Problem::from_stored(dtype, da.shape(), db.shape(), op_a, op_b)
        .and_then(|p| Ok(p.with_c(COut::for_types(dtype, dtype)?)))
        .map_err(py_err)?
        .with_precision(call.precision);
    let (m, n) = (problem.m, problem.n);
    let plan = py
        .detach(|| {
            matmul::Plan::builder(backend, problem)
                .kernel(call.kernel)
                .alpha(call.scale.alpha)
                .beta(call.scale.beta)
                .build()
        })
        .map_err(py_err)?;
    // A numpy out: uploaded (its old value is C's), written back after the product.
    let host_out = match out {
        Some(o) if is_numpy(o) => {
            let c0 = any_from_py(o)?;
            same_dtype(dtype, c0.dtype(), "out")?;
            Some((o, c0))
        }
        _ => None,
    };
    // The host copies `verify` compares, taken before C is written.
    let hosts = if call.verify {
        let beta = call.scale.beta != 0.0;
        let held_c0 = oc.as_ref().filter(|_| beta).map(OperandMut::data);
        let host_c0 = host_out.as_ref().filter(|_| beta).map(|(_, c0)| c0.clone());
        Some(
            py.detach(|| -> matmul::Result<_> {
                let c0 = match held_c0 {
                    Some(c) => Some(backend.download(c)?),
                    None => host_c0,
                };
                Ok((backend.download(da)?, backend.download(db)?, c0))
            })
            .map_err(py_err)?,
        )
    } else {
        None
    };
    let check = |c: &matmul::DeviceData| -> PyResult<()> {
        if let Some((ha, hb, hc0)) = &hosts {
            py.detach(|| {
                let hc = backend.download(c)?;
                verify(call, &problem, plan.kernel().name, ha, hb, hc0.clone(), &hc)
            })
            .map_err(py_err)?;
        }
        Ok(())
    };
    if let Some(mut c) = oc {
        let dc = c.data_mut()?;
        dc.expect("out", dtype, (m, n)).map_err(py_err)?;
        py.detach(|| plan.run_data(da, db, dc)).map_err(py_err)?;
        check(dc)?;
        return Ok(out.expect("C from out").clone());
    }
    let mut dc = match &host_out {
        Some((_, c0)) => py.detach(|| backend.upload(c0)),
        None => py.detach(|| backend.alloc_zeroed(dtype, m, n)),
    }
    .map_err(py_err)?;
    dc.expect("out", dtype, (m, n)).map_err(py_err)?;
    py.detach(|| plan.run_data(da, db, &mut dc))
        .map_err(py_err)?;
    check(&dc)?;
    if let Some((o, _)) = host_out {
        let c = py.detach(|| backend.download(&dc)).map_err(py_err)?;
        write_back(o, &any_to_py(py, c)?)?;
        return Ok(o.clone());
    }
    let arr = DeviceArray {
        data: dc,
        backend,
        backend_name: name,
        read_only: false,
    };
    Ok(Bound::new(py, arr)?.into_any())
}

/// The kernel registry, one dict per kernel.
#[pyfunction]
fn kernels(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    matmul::KERNELS
        .iter()
        .map(|k| {
            let d = PyDict::new(py);
            d.set_item("name", k.name)?;
            d.set_item("aliases", k.aliases.to_vec())?;
            d.set_item("backend", k.backend.to_string())?;
            d.set_item(
                "dtypes",
                k.dtypes.iter().map(|t| t.name()).collect::<Vec<_>>(),
            )?;
            d.set_item("summary", k.summary)?;
            d.set_item("origin", k.origin)?;
            Ok(d)
        })
        .collect()
}

/// The backends: the CPU, CUDA device 0 and the wgpu adapter, each with its description or the
/// reason it cannot be opened.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut out = Vec::new();
    for name in ["cpu", "cuda", "wgpu"] {
        let d = PyDict::new(py);
        d.set_item("backend", name)?;
        match py.detach(|| backend(Some(name)).map(|b| b.describe())) {
            Ok(description) => {
                d.set_item("available", true)?;
                d.set_item("description", description)?;
            }
            Err(e) => {
                d.set_item("available", false)?;
                d.set_item("error", e.to_string())?;
            }
        }
        out.push(d);
    }
    Ok(out)
}

/// A numpy array's elements as an untyped row-major matrix (one copy).
fn any_from_py(obj: &Bound<'_, PyAny>) -> PyResult<AnyMatrix> {
    fn typed<T: Element + numpy::Element>(obj: &Bound<'_, PyAny>) -> PyResult<AnyMatrix> {
        let a: PyReadonlyArray2<'_, T> = obj
            .extract()
            .map_err(|_| PyValueError::new_err("expected a 2-D array"))?;
        Ok(AnyMatrix::from(matrix(&a).map_err(py_err)?))
    }
    let dtype: String = obj
        .getattr("dtype")
        .and_then(|d| d.str()?.extract())
        .map_err(|_| {
            PyValueError::new_err(
                "expected a 2-D array: numpy, a DeviceArray or an object with __dlpack__",
            )
        })?;
    match dtype.as_str() {
        "float32" => typed::<f32>(obj),
        "uint32" => typed::<u32>(obj),
        "float16" => typed::<half::f16>(obj),
        "bfloat16" => typed::<half::bf16>(obj),
        other => Err(PyValueError::new_err(format!(
            "dtype {other}: matmul takes float32, uint32, float16 or bfloat16 (ml_dtypes) arrays"
        ))),
    }
}

/// An untyped matrix as a new numpy array.
fn any_to_py(py: Python<'_>, m: AnyMatrix) -> PyResult<Bound<'_, PyAny>> {
    fn typed<T: Element + numpy::Element>(
        py: Python<'_>,
        m: Matrix<T>,
    ) -> PyResult<Bound<'_, PyAny>> {
        let arr = numpy::ndarray::Array2::from_shape_vec((m.rows, m.cols), m.data)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(PyArray2::from_owned_array(py, arr).into_any())
    }
    match m {
        AnyMatrix::F32(x) => typed(py, x),
        AnyMatrix::U32(x) => typed(py, x),
        AnyMatrix::F16(x) => typed(py, x),
        AnyMatrix::Bf16(x) => typed(py, x),
    }
}

/// An operand as given: host elements (a numpy array, or a host DLPack tensor, copied), a
/// DeviceArray, or a CUDA DLPack tensor wrapped without a copy.
enum Operand<'py> {
    Host(AnyMatrix),
    Held(PyRef<'py, DeviceArray>),
    Wrapped(DeviceArray),
}

/// An operand on the backend that runs the product.
enum Resolved<'py> {
    Uploaded(matmul::DeviceData),
    Held(PyRef<'py, DeviceArray>),
    Wrapped(DeviceArray),
}

impl Resolved<'_> {
    fn data(&self) -> &matmul::DeviceData {
        match self {
            Resolved::Uploaded(d) => d,
            Resolved::Held(a) => &a.data,
            Resolved::Wrapped(a) => &a.data,
        }
    }
}

impl<'py> Operand<'py> {
    /// The backend holding it, and its name (None for host elements).
    fn held(&self) -> Option<(&'static (dyn Backend + Sync), String)> {
        match self {
            Operand::Host(_) => None,
            Operand::Held(a) => Some((a.backend, a.backend_name.clone())),
            Operand::Wrapped(a) => Some((a.backend, a.backend_name.clone())),
        }
    }

    /// On `backend`: host elements uploaded (one copy), device ones as they are.
    fn resolve(
        self,
        py: Python<'_>,
        backend: &'static (dyn Backend + Sync),
    ) -> PyResult<Resolved<'py>> {
        Ok(match self {
            Operand::Host(m) => {
                Resolved::Uploaded(py.detach(|| backend.upload(&m)).map_err(py_err)?)
            }
            Operand::Held(a) => Resolved::Held(a),
            Operand::Wrapped(a) => Resolved::Wrapped(a),
        })
    }
}

/// An output operand: a DeviceArray, or a CUDA DLPack tensor written in place.
enum OperandMut<'py> {
    Held(PyRefMut<'py, DeviceArray>),
    Wrapped(DeviceArray),
}

impl OperandMut<'_> {
    fn array(&self) -> &DeviceArray {
        match self {
            OperandMut::Held(a) => a,
            OperandMut::Wrapped(a) => a,
        }
    }

    fn held(&self) -> Option<(&'static (dyn Backend + Sync), String)> {
        let a = self.array();
        Some((a.backend, a.backend_name.clone()))
    }

    fn data(&self) -> &matmul::DeviceData {
        &self.array().data
    }

    /// The matrix to write; ValueError when its producer marked it read-only.
    fn data_mut(&mut self) -> PyResult<&mut matmul::DeviceData> {
        let a = match self {
            OperandMut::Held(a) => &mut **a,
            OperandMut::Wrapped(a) => a,
        };
        if a.read_only {
            return Err(PyValueError::new_err(
                "C is read-only (its DLPack producer says so)",
            ));
        }
        Ok(&mut a.data)
    }
}

/// Whether `obj` is a numpy array.
fn is_numpy(obj: &Bound<'_, PyAny>) -> bool {
    obj.cast::<numpy::PyUntypedArray>().is_ok()
}

/// `obj` as an operand: a DeviceArray, a numpy array (copied once, row-major), or an object
/// with `__dlpack__` (CUDA memory wrapped; host memory copied).
fn operand<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Operand<'py>> {
    if let Ok(a) = obj.cast::<DeviceArray>() {
        return Ok(Operand::Held(a.try_borrow().map_err(|_| {
            PyValueError::new_err("a DeviceArray is both an input and out")
        })?));
    }
    if is_numpy(obj) || !dlpack::speaks_dlpack(obj) {
        return Ok(Operand::Host(any_from_py(obj)?));
    }
    Ok(match import(obj)? {
        Imported::Host(m) => Operand::Host(m),
        Imported::Device(a) => Operand::Wrapped(a),
    })
}

/// `obj` as an output: a DeviceArray, or a CUDA DLPack tensor.
fn operand_mut<'py>(obj: &Bound<'py, PyAny>) -> PyResult<OperandMut<'py>> {
    if let Ok(a) = obj.cast::<DeviceArray>() {
        return Ok(OperandMut::Held(a.try_borrow_mut().map_err(|_| {
            PyValueError::new_err("a DeviceArray is both an input and out")
        })?));
    }
    let bad = || PyValueError::new_err("out is a numpy array, a DeviceArray or a CUDA tensor");
    if !dlpack::speaks_dlpack(obj) {
        return Err(bad());
    }
    match import(obj)? {
        Imported::Device(a) => Ok(OperandMut::Wrapped(a)),
        Imported::Host(_) => Err(bad()),
    }
}

/// A DLPack tensor taken in: CUDA memory as a DeviceArray of the CUDA backend (no copy), or host
/// elements (one copy).
enum Imported {
    Host(AnyMatrix),
    Device(DeviceArray),
}

/// The CUDA backend, opened (RuntimeError without a device).
fn cuda() -> PyResult<&'static CudaBackend> {
    opened(&CUDA, || CudaBackend::new(0), cuda_failed).map_err(py_err)
}

/// Takes `obj`'s DLPack tensor. CUDA memory is wrapped without a copy: `__dlpack__` gets the
/// backend's stream (the producer orders its pending work before that stream's), the tensor
/// must be row-major without gaps, and it stays alive while the DeviceArray does. Host memory
/// (numpy, torch CPU) is copied once into a row-major matrix, any strides accepted.
fn import(obj: &Bound<'_, PyAny>) -> PyResult<Imported> {
    let (kind, id) = dlpack::device_of(obj)?;
    if kind == dlpack::DEVICE_CUDA || kind == dlpack::DEVICE_CUDA_MANAGED {
        let cuda = cuda()?;
        if id as usize != cuda.info().ordinal {
            return Err(PyValueError::new_err(format!(
                "the tensor is on cuda:{id}; matmul uses cuda:{}",
                cuda.info().ordinal
            )));
        }
        let stream = cuda.stream().cu_stream() as usize;
        let taken = dlpack::take(obj, Some(stream))?;
        let d = dlpack::describe(&taken)?;
        if !d.row_major() {
            return Err(PyValueError::new_err(format!(
                "a {}x{} CUDA tensor with strides {:?}: matmul takes row-major (C-contiguous) \
                 device memory without copying it; call .contiguous() first",
                d.rows, d.cols, d.strides
            )));
        }
        let read_only = taken.read_only();
        // SAFETY: the producer's tensor holds rows·cols row-major elements at `address` on this
        // device (checked again by the backend) until `taken` is dropped, which the matrix does
        // after the stream's work on it.
        let data =
            unsafe { cuda.wrap_external(d.address, d.dtype, (d.rows, d.cols), Box::new(taken)) }
                .map_err(py_err)?;
        return Ok(Imported::Device(DeviceArray {
            data,
            backend: cuda,
            backend_name: "cuda".into(),
            read_only,
        }));
    }
    let taken = dlpack::take(obj, None)?;
    let d = dlpack::describe(&taken)?;
    Ok(Imported::Host(dlpack::copy_host(&taken, &d)?))
}

/// A matrix held by a backend (device memory on CUDA): `to_device`, `zeros`, `from_dlpack`,
/// `gemm`'s result on device inputs, `Plan.run`'s operands; `numpy()` copies it back. It speaks
/// DLPack: `torch.from_dlpack(x)` shares a CUDA DeviceArray's memory; a host one is exported
/// as a copy.
#[pyclass(module = "matmul")]
struct DeviceArray {
    data: matmul::DeviceData,
    backend: &'static (dyn Backend + Sync),
    backend_name: String,
    /// Imported from a DLPack producer that marked it read-only: never written.
    read_only: bool,
}

#[pymethods]
impl DeviceArray {
    /// (rows, cols).
    #[getter]
    fn shape(&self) -> (usize, usize) {
        self.data.shape()
    }

    /// The element type's numpy name.
    #[getter]
    fn dtype(&self) -> &'static str {
        numpy_name(self.data.dtype())
    }

    /// The backend that holds it.
    #[getter]
    fn backend(&self) -> &str {
        &self.backend_name
    }

    /// The device address of the first element (CUDA only), as torch's `data_ptr()`.
    #[getter]
    fn data_ptr(&self) -> PyResult<u64> {
        self.backend.data_ptr(&self.data).map_err(py_err)
    }

    /// A numpy copy, after the work enqueued before on the backend.
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let m = py
            .detach(|| self.backend.download(&self.data))
            .map_err(py_err)?;
        any_to_py(py, m)
    }

    /// (DLPack device type, device id): (2, ordinal) on CUDA, (1, 0) on the host.
    fn __dlpack_device__(&self) -> (i32, i32) {
        if self.backend.kind() == matmul::BackendKind::Cuda {
            (dlpack::DEVICE_CUDA, 0)
        } else {
            (dlpack::DEVICE_CPU, 0)
        }
    }

    /// The DLPack capsule (versioned when `max_version` is at least 1.0). CUDA: the device
    /// memory itself, kept alive by the capsule; the backend's stream is synchronized first
    /// unless `stream` is -1, so the consumer's stream sees the finished product. Host: a copy
    /// (a later Plan.run may replace the matrix), flagged IS_COPIED; `copy=False` refuses.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<isize>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let me = slf.borrow();
        let device = me.__dlpack_device__();
        if dl_device.is_some_and(|d| d != device) {
            return Err(pyo3::exceptions::PyBufferError::new_err(format!(
                "dl_device {dl_device:?}: this DeviceArray is on {device:?} and exports no copy elsewhere"
            )));
        }
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        let (rows, cols) = me.data.shape();
        let dtype = me.data.dtype();
        let export = if device.0 == dlpack::DEVICE_CUDA {
            if copy == Some(true) {
                return Err(pyo3::exceptions::PyBufferError::new_err(
                    "copy=True: a CUDA DeviceArray exports its own memory (copy on the consumer's side)",
                ));
            }
            if stream != Some(-1) {
                let backend = me.backend;
                py.detach(|| backend.synchronize()).map_err(py_err)?;
            }
            dlpack::Export {
                dtype,
                rows,
                cols,
                device,
                address: me.backend.data_ptr(&me.data).map_err(py_err)?,
                owner: Some(slf.clone().into_any().unbind()),
                copy: None,
            }
        } else {
            if copy == Some(false) {
                return Err(pyo3::exceptions::PyBufferError::new_err(
                    "copy=False: a host DeviceArray exports a copy (a plan may replace its matrix)",
                ));
            }
            let (backend, data) = (me.backend, &me.data);
            let mut m = py.detach(|| backend.download(data)).map_err(py_err)?;
            let address = matmul::with_matrix!(&mut m, x => x.data.as_mut_ptr() as u64);
            dlpack::Export {
                dtype,
                rows,
                cols,
                device,
                address,
                owner: None,
                copy: Some(m),
            }
        };
        drop(me);
        dlpack::capsule(py, export, versioned)
    }

    fn __repr__(&self) -> String {
        let (r, c) = self.data.shape();
        format!(
            "DeviceArray({r}x{c} {} on {})",
            self.dtype(),
            self.backend_name
        )
    }
}

fn numpy_name(dtype: matmul::DType) -> &'static str {
    match dtype {
        matmul::DType::U32 => "uint32",
        matmul::DType::F16 => "float16",
        matmul::DType::Bf16 => "bfloat16",
        _ => "float32",
    }
}

/// The backend `name` names, and its name as `devices()` gives it.
fn backend_named(name: Option<&str>) -> matmul::Result<(&'static (dyn Backend + Sync), String)> {
    let b = backend(name)?;
    Ok((b, b.kind().to_string()))
}

/// to_device(array, backend=None) -> DeviceArray
///
/// A 2-D array on `backend` ("auto": the array's own device if it is a DeviceArray or a CUDA
/// tensor, else CUDA if present, else the CPU). A numpy array (float32, uint32, float16,
/// bfloat16) or a host DLPack tensor is copied there; a CUDA tensor (torch, CuPy) bound for
/// CUDA is shared without a copy (as `from_dlpack`); a DeviceArray is copied.
#[pyfunction]
#[pyo3(signature = (array, backend = None))]
fn to_device(
    py: Python<'_>,
    array: &Bound<'_, PyAny>,
    backend: Option<&str>,
) -> PyResult<DeviceArray> {
    let op = operand(array)?;
    let (b, name) = match (op.held(), backend) {
        (Some(held), None | Some("auto")) => held,
        _ => backend_named(backend).map_err(py_err)?,
    };
    let m = match op {
        Operand::Wrapped(a) if a.backend_name == name => return Ok(a),
        Operand::Host(m) => m,
        Operand::Held(a) => {
            let (backend, data) = (a.backend, &a.data);
            py.detach(|| backend.download(data)).map_err(py_err)?
        }
        Operand::Wrapped(a) => py.detach(|| a.backend.download(&a.data)).map_err(py_err)?,
    };
    let data = py.detach(|| b.upload(&m)).map_err(py_err)?;
    Ok(DeviceArray {
        data,
        backend: b,
        backend_name: name,
        read_only: false,
    })
}

/// from_dlpack(x) -> DeviceArray
///
/// An object with `__dlpack__` (a torch, CuPy or JAX tensor, a numpy array, a DeviceArray) as
/// a DeviceArray. CUDA memory is taken without a copy (row-major tensors only; the tensor stays
/// alive while the DeviceArray does, and writes through Plan.run or gemm's out show in it);
/// host memory is copied once onto the CPU backend (any strides).
#[pyfunction]
fn from_dlpack(x: &Bound<'_, PyAny>) -> PyResult<DeviceArray> {
    if !dlpack::speaks_dlpack(x) {
        return Err(PyValueError::new_err(
            "from_dlpack takes an object with __dlpack__ and __dlpack_device__",
        ));
    }
    match import(x)? {
        Imported::Device(a) => Ok(a),
        Imported::Host(m) => Ok(DeviceArray {
            data: CPU.upload(&m).map_err(py_err)?,
            backend: &CPU,
            backend_name: CPU.kind().to_string(),
            read_only: false,
        }),
    }
}

/// zeros(shape, dtype="float32", backend=None) -> DeviceArray
#[pyfunction]
#[pyo3(signature = (shape, dtype = "float32", backend = None))]
fn zeros(shape: (usize, usize), dtype: &str, backend: Option<&str>) -> PyResult<DeviceArray> {
    let dtype = parse_dtype(dtype)?;
    let (b, name) = backend_named(backend).map_err(py_err)?;
    let data = b.alloc_zeroed(dtype, shape.0, shape.1).map_err(py_err)?;
    Ok(DeviceArray {
        data,
        backend: b,
        backend_name: name,
        read_only: false,
    })
}

fn parse_dtype(name: &str) -> PyResult<matmul::DType> {
    match name {
        "float32" | "f32" => Ok(matmul::DType::F32),
        "tf32" => Ok(matmul::DType::Tf32),
        "uint32" | "u32" => Ok(matmul::DType::U32),
        "float16" | "f16" => Ok(matmul::DType::F16),
        "bfloat16" | "bf16" => Ok(matmul::DType::Bf16),
        other => Err(PyValueError::new_err(format!(
            "dtype {other:?}: float32, tf32, uint32, float16 or bfloat16"
        ))),
    }
}

/// Plan(m, n, k, dtype="float32", *, kernel="auto", backend=None, transpose_a=False,
/// transpose_b=False, alpha=1.0, beta=0.0, c_dtype=None, batch=None, column_major=False,
/// precision="accurate")
///
/// C = alpha·op(A)·op(B) + beta·C planned once (kernel chosen and compiled, workspaces made) and
/// run many times on DeviceArrays of its backend. `c_dtype`: the inputs' dtype for 16-bit
/// inputs, else the accumulator's (default: float32 for float32/tf32/16-bit, uint32 for uint32).
/// `batch`: a count of products stored one after another, or (count, stride_a, stride_b,
/// stride_c) in elements. `precision`: as `gemm`'s. On CUDA `run` only enqueues; `synchronize()` waits.
#[pyclass(unsendable, module = "matmul", name = "Plan")]
struct PyPlan {
    inner: matmul::Plan<'static>,
    backend: &'static (dyn Backend + Sync),
}

#[pymethods]
impl PyPlan {
    #[new]
    #[pyo3(signature = (m, n, k, dtype = "float32", *, kernel = "auto", backend = None, transpose_a = false, transpose_b = false, alpha = 1.0, beta = 0.0, c_dtype = None, batch = None, column_major = false, precision = "accurate"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        m: usize,
        n: usize,
        k: usize,
        dtype: &str,
        kernel: &str,
        backend: Option<&str>,
        transpose_a: bool,
        transpose_b: bool,
        alpha: f64,
        beta: f64,
        c_dtype: Option<&str>,
        batch: Option<&Bound<'_, PyAny>>,
        column_major: bool,
        precision: &str,
    ) -> PyResult<PyPlan> {
        let dtype = parse_dtype(dtype)?;
        let c_out = match c_dtype.map(parse_dtype).transpose()? {
            None => COut::Accumulator,
            Some(c) => COut::for_types(dtype, c).map_err(py_err)?,
        };
        let problem = Problem::new(m, n, k, dtype)
            .with_ops(Op::from_flag(transpose_a), Op::from_flag(transpose_b))
            .with_c(c_out)
            .with_precision(precision.parse().map_err(py_err)?);
        let mut builder = {
            let (b, _) = backend_named(backend).map_err(py_err)?;
            matmul::Plan::builder(b, problem)
                .kernel(kernel)
                .alpha(alpha)
                .beta(beta)
                .column_major(column_major)
        };
        if let Some(batch) = batch {
            builder = match batch.extract::<usize>() {
                Ok(count) => builder.batch_count(count),
                Err(_) => {
                    let (count, stride_a, stride_b, stride_c): (usize, usize, usize, usize) =
                        batch.extract().map_err(|_| {
                            PyValueError::new_err(
                                "batch is a count or (count, stride_a, stride_b, stride_c)",
                            )
                        })?;
                    builder.batch(matmul::Batch {
                        count,
                        stride_a,
                        stride_b,
                        stride_c,
                    })
                }
            };
        }
        let (b, _) = backend_named(backend).map_err(py_err)?;
        let inner = py.detach(|| builder.build()).map_err(py_err)?;
        Ok(PyPlan { inner, backend: b })
    }

    /// Enqueues C = alpha·op(A)·op(B) + beta·C on the plan's backend. Operands are
    /// DeviceArrays of that backend, CUDA tensors (`__dlpack__`, used in place: C is written in
    /// the tensor's memory) or numpy arrays (uploaded each run; a numpy C is written back, which
    /// waits for the product).
    fn run(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
        c: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let backend = self.backend;
        let (ra, rb) = (
            operand(a)?.resolve(py, backend)?,
            operand(b)?.resolve(py, backend)?,
        );
        let (da, db) = (ra.data(), rb.data());
        let inner = &self.inner;
        if is_numpy(c) {
            let c0 = any_from_py(c)?;
            let m = py
                .detach(|| -> matmul::Result<AnyMatrix> {
                    let mut dc = backend.upload(&c0)?;
                    inner.run_data(da, db, &mut dc)?;
                    backend.download(&dc)
                })
                .map_err(py_err)?;
            return write_back(c, &any_to_py(py, m)?);
        }
        let mut oc = operand_mut(c)?;
        let dc = oc.data_mut()?;
        py.detach(|| inner.run_data(da, db, dc)).map_err(py_err)
    }

    /// Whether a run of the plan's batch is one launch (a batched kernel build or cuBLAS's
    /// strided batched GEMM) rather than one launch per product.
    #[getter]
    fn one_launch(&self) -> bool {
        self.inner.one_launch()
    }

    /// Waits for the work enqueued on the plan's backend.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.backend.synchronize()).map_err(py_err)
    }

    /// The kernel the plan runs.
    #[getter]
    fn kernel(&self) -> &'static str {
        self.inner.kernel().name
    }

    fn __repr__(&self) -> String {
        format!(
            "Plan({} with {})",
            self.inner.problem(),
            self.inner.kernel().name
        )
    }
}

/// signature(n, s1, s2, *, kernel="auto", backend=None) -> int
///
/// The Judge Girl CUDA-MATMUL signature of one case: A and B of side n from the judge's
/// generator with seeds s1 and s2, C = A·B in wrapping u32 by `kernel` (a registry name or a
/// seed alias such as "TILING"; "auto" picks one), then the judge's u32 hash of C.
#[pyfunction]
#[pyo3(signature = (n, s1, s2, *, kernel = "auto", backend = None))]
fn signature(
    py: Python<'_>,
    n: u32,
    s1: u32,
    s2: u32,
    kernel: &str,
    backend: Option<&str>,
) -> PyResult<u32> {
    use matmul::judge;
    let b = self::backend(backend).map_err(py_err)?;
    let spec = match matmul::dispatch::choose(kernel, b, matmul::DType::U32, None) {
        Ok(choice) => choice.kernel,
        Err(e) => return Err(py_err(e)),
    };
    if !spec.supports(matmul::DType::U32) {
        return Err(PyValueError::new_err(format!(
            "kernel `{}` has no u32 version; the judge's arithmetic is u32",
            spec.name
        )));
    }
    let case = judge::Case { line: 1, n, s1, s2 };
    py.detach(|| judge::case_signature(b, spec, &case, judge::Generator::Judge))
        .map_err(py_err)
}

/// judge(text, *, kernel="auto", backend=None) -> list[int]
///
/// The Judge Girl CUDA-MATMUL signatures of every case of `text` (judge input: `N S1 S2`
/// triples separated by any whitespace), in order, as `./test.sh` prints them. Bad input raises
/// ValueError naming the line and the token; the GIL is released while the cases run.
#[pyfunction]
#[pyo3(signature = (text, *, kernel = "auto", backend = None))]
fn judge(py: Python<'_>, text: &str, kernel: &str, backend: Option<&str>) -> PyResult<Vec<u32>> {
    use matmul::judge;
    let cases: Vec<judge::Case> = judge::parse_cases(text)
        .collect::<Result<_, _>>()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let b = self::backend(backend).map_err(py_err)?;
    let spec = matmul::dispatch::choose(kernel, b, matmul::DType::U32, None)
        .map_err(py_err)?
        .kernel;
    if !spec.supports(matmul::DType::U32) {
        return Err(PyValueError::new_err(format!(
            "kernel `{}` has no u32 version; the judge's arithmetic is u32",
            spec.name
        )));
    }
    let mut out = Vec::with_capacity(cases.len());
    for case in &cases {
        let sig = py
            .detach(|| judge::case_signature(b, spec, case, judge::Generator::Judge))
            .map_err(py_err)?;
        out.push(sig);
        py.check_signals()?;
    }
    Ok(out)
}

/// puzzle(name, *, backend=None) -> dict
///
/// Runs one of the Mojo GPU puzzles (`naive`, `single-block`, `tiled`, `idiomatic-tiled`,
/// `p14-naive`, `p14-tiled`) by its kernel at TPB 3 on CUDA (default) or, with
/// `backend="wgpu"`, by its WGSL twin: a dict with `name`, `kernel`, `backend`,
/// `out` and `expected` (C row-major, lists of floats) and `passed` (out == expected exactly).
#[pyfunction]
#[pyo3(signature = (name, *, backend = None))]
fn puzzle<'py>(py: Python<'py>, name: &str, backend: Option<&str>) -> PyResult<Bound<'py, PyDict>> {
    use matmul::compat::puzzles::{config, PuzzleName};
    let which: PuzzleName = name.parse().map_err(py_err)?;
    let p = config(which);
    // The puzzles' kernels are CUDA's (and their WGSL twins'): CUDA unless wgpu is asked for.
    let b = self::backend(Some(backend.unwrap_or("cuda"))).map_err(py_err)?;
    let mut spec = matmul::find(p.kernel).map_err(py_err)?;
    if b.kind() == matmul::BackendKind::Wgpu {
        spec = matmul::registry::wgpu_twin(spec).ok_or_else(|| {
            PyValueError::new_err(format!("kernel `{}` has no wgpu twin", spec.name))
        })?;
    }
    let (out, expected) = py
        .detach(|| Ok::<_, matmul::Error>((p.run_kernel(spec, b)?, p.expected()?)))
        .map_err(py_err)?;
    let d = PyDict::new(py);
    d.set_item("name", which.name())?;
    d.set_item("kernel", spec.name)?;
    d.set_item("backend", b.kind().to_string())?;
    d.set_item("passed", out == expected)?;
    d.set_item("out", out)?;
    d.set_item("expected", expected)?;
    Ok(d)
}

#[pymodule]
fn _matmul(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<DeviceArray>()?;
    m.add_class::<PyPlan>()?;
    m.add_function(wrap_pyfunction!(to_device, m)?)?;
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(bench::bench, m)?)?;
    m.add_function(wrap_pyfunction!(signature, m)?)?;
    m.add_function(wrap_pyfunction!(judge, m)?)?;
    m.add_function(wrap_pyfunction!(puzzle, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(gemm, m)?)?;
    m.add_function(wrap_pyfunction!(kernels, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    Ok(())
}
