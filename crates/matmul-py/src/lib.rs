//! Python bindings of the `matmul` library (module `matmul._matmul`, re-exported by the `matmul`
//! package): `gemm` on numpy arrays through a plan ([`matmul::Plan`]), the registry and the
//! backends as dicts. Bad input raises `ValueError`, device failures `RuntimeError`
//! ([`matmul::Error::is_bad_input`]); the GIL is released while a product runs.

use std::sync::OnceLock;

use matmul::{
    AnyMatrix, Backend, COut, CpuBackend, CudaBackend, Element, Matrix, Op, Problem, Scale,
    WgpuBackend,
};
use numpy::{PyArray2, PyReadonlyArray2};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A library error as the Python exception its kind calls for.
fn py_err(e: matmul::Error) -> PyErr {
    if e.is_bad_input() {
        PyValueError::new_err(e.to_string())
    } else {
        PyRuntimeError::new_err(e.to_string())
    }
}

/// A backend opened once for the process, or why it could not be (the message, and whether it
/// was bad input).
type Opened<B> = Result<B, (String, bool)>;

static CUDA: OnceLock<Opened<CudaBackend>> = OnceLock::new();
static WGPU: OnceLock<Opened<WgpuBackend>> = OnceLock::new();
static CPU: CpuBackend = CpuBackend;

fn opened<B>(
    slot: &'static OnceLock<Opened<B>>,
    open: impl FnOnce() -> matmul::Result<B>,
) -> matmul::Result<&'static B> {
    slot.get_or_init(|| open().map_err(|e| (e.to_string(), e.is_bad_input())))
        .as_ref()
        .map_err(|(message, input)| {
            if *input {
                matmul::Error::Invalid(message.clone())
            } else {
                matmul::Error::Cuda {
                    context: "opening the backend".into(),
                    message: message.clone(),
                }
            }
        })
}

/// The backend `name` names (None or "auto": CUDA when a device opens, else the CPU).
fn backend(name: Option<&str>) -> matmul::Result<&'static (dyn Backend + Sync)> {
    match name.unwrap_or("auto") {
        "cpu" => Ok(&CPU),
        "cuda" => Ok(opened(&CUDA, || CudaBackend::new(0))?),
        "wgpu" => Ok(opened(&WGPU, WgpuBackend::new)?),
        "auto" => Ok(match opened(&CUDA, || CudaBackend::new(0)) {
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
    Matrix::from_vec(rows, cols, view.iter().copied().collect())
}

/// What `gemm` computes, parsed from its arguments.
struct Call<'a> {
    kernel: &'a str,
    backend: Option<&'a str>,
    ops: (Op, Op),
    scale: Scale,
    verify: bool,
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
    .with_c(COut::for_types(dtype, dtype)?);
    let (m, n) = (problem.m, problem.n);
    let backend = backend(call.backend)?;
    let plan = matmul::Plan::builder(backend, problem)
        .kernel(call.kernel)
        .alpha(call.scale.alpha)
        .beta(call.scale.beta)
        .build()?;
    let (da, db) = (backend.upload(&a)?, backend.upload(&b)?);
    let mut dc = match &c0 {
        Some(c) => backend.upload(c)?,
        None => backend.alloc_zeroed(dtype, m, n)?,
    };
    plan.run_data(&da, &db, &mut dc)?;
    let c = backend.download(&dc)?;
    if call.verify {
        let want = if call.scale.is_plain() {
            matmul::cpu::reference::matmul(&problem, &a, &b)?
        } else {
            let wide = matmul::cpu::reference::matmul(&problem.with_c(COut::Accumulator), &a, &b)?;
            let mut want = match c0 {
                Some(c) => c,
                None => CpuBackend.download(&CpuBackend.alloc_zeroed(dtype, m, n)?)?,
            };
            call.scale.apply_host(&wide, &mut want)?;
            want
        };
        let v = matmul::verify::compare(&problem, &c, &want);
        if !v.passed {
            return Err(matmul::Error::Mismatch {
                kernel: plan.kernel().name.to_string(),
                problem: problem.to_string(),
                detail: format!(
                    "rel. Frobenius error {:.3e} (tolerance {:.1e}), {} mismatches",
                    v.rel_frobenius, v.tolerance, v.mismatches
                ),
            });
        }
    }
    Ok(c)
}

/// C = alpha·op(A)·op(B) + beta·C on 2-D arrays of float32, uint32 (wrapping), float16 or
/// bfloat16 (ml_dtypes); C has the inputs' dtype. op(X) is X, or X.T with transpose_*.
/// `out` (m×n, the inputs' dtype, writable) receives C and is returned; beta != 0 needs it
/// (its contents are C's old value). `kernel`: a registry name (`kernels()`), a seed alias or
/// "auto". `backend`: "auto" (CUDA if present, else the CPU), "cpu", "cuda" or "wgpu".
/// `verify` compares with the CPU reference (slow for large products) and raises RuntimeError
/// on a mismatch. Any strides and orders are accepted; A and B are copied once on the host.
/// The GIL is released while the product runs. Bad input raises ValueError, device failures
/// RuntimeError.
#[pyfunction]
#[pyo3(signature = (a, b, *, kernel = "auto", backend = None, transpose_a = false, transpose_b = false, alpha = 1.0, beta = 0.0, out = None, verify = false))]
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
) -> PyResult<Bound<'py, PyAny>> {
    let call = Call {
        kernel,
        backend,
        ops: (Op::from_flag(transpose_a), Op::from_flag(transpose_b)),
        scale: Scale { alpha, beta },
        verify,
    };
    let (am, bm) = (any_from_py(a)?, any_from_py(b)?);
    let same = |m: &AnyMatrix, what: &str| {
        if m.dtype() == am.dtype() {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!(
                "{what} must be a 2-D array of the same dtype as A ({}), not {}",
                am.dtype(),
                m.dtype()
            )))
        }
    };
    same(&bm, "B")?;
    if call.scale.beta != 0.0 && out.is_none() {
        return Err(PyValueError::new_err(
            "beta != 0 needs out= (C's old value)",
        ));
    }
    let c0 = match out {
        Some(o) if call.scale.beta != 0.0 => {
            let c0 = any_from_py(o)?;
            same(&c0, "out")?;
            Some(c0)
        }
        _ => None,
    };
    let c = py.detach(|| run(&call, am, bm, c0)).map_err(py_err)?;
    let (m, n) = (c.rows(), c.cols());
    let result = any_to_py(py, c)?;
    let Some(o) = out else {
        return Ok(result);
    };
    let shape: (usize, usize) = o
        .getattr("shape")?
        .extract()
        .map_err(|_| PyValueError::new_err("out must be a 2-D array"))?;
    if shape != (m, n) {
        return Err(PyValueError::new_err(format!(
            "out is {shape:?}; C is {m}x{n}"
        )));
    }
    let dtype_of =
        |x: &Bound<'py, PyAny>| -> PyResult<String> { x.getattr("dtype")?.str()?.extract() };
    let (o_dtype, r_dtype) = (dtype_of(o)?, dtype_of(&result)?);
    if o_dtype != r_dtype {
        return Err(PyValueError::new_err(format!(
            "out must be {r_dtype}, not {o_dtype}"
        )));
    }
    // numpy raises ValueError for a read-only out.
    o.set_item(py.Ellipsis(), result)?;
    Ok(o.clone())
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
    let dtype: String = obj.getattr("dtype")?.str()?.extract()?;
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

/// A matrix held by a backend (device memory on CUDA): `to_device`, `zeros`, `Plan.run`'s
/// operands; `numpy()` copies it back.
#[pyclass(unsendable, module = "matmul")]
struct DeviceArray {
    data: matmul::DeviceData,
    backend: &'static (dyn Backend + Sync),
    backend_name: String,
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

    /// A numpy copy, after the work enqueued before on the backend.
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let m = py
            .detach(|| self.backend.download(&self.data))
            .map_err(py_err)?;
        any_to_py(py, m)
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
/// Copies a 2-D numpy array (float32, uint32, float16, bfloat16) to `backend` ("auto": CUDA if
/// present, else the CPU).
#[pyfunction]
#[pyo3(signature = (array, backend = None))]
fn to_device(
    py: Python<'_>,
    array: &Bound<'_, PyAny>,
    backend: Option<&str>,
) -> PyResult<DeviceArray> {
    let m = any_from_py(array)?;
    let (b, name) = backend_named(backend).map_err(py_err)?;
    let data = py.detach(|| b.upload(&m)).map_err(py_err)?;
    Ok(DeviceArray {
        data,
        backend: b,
        backend_name: name,
    })
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
/// transpose_b=False, alpha=1.0, beta=0.0, c_dtype=None, batch=None)
///
/// C = alpha·op(A)·op(B) + beta·C planned once (kernel chosen and compiled, workspaces made) and
/// run many times on DeviceArrays of its backend. `c_dtype`: the inputs' dtype for 16-bit
/// inputs, else the accumulator's (default: float32 for float32/tf32/16-bit, uint32 for uint32).
/// `batch`: a count of products stored one after another, or (count, stride_a, stride_b,
/// stride_c) in elements. On CUDA `run` only enqueues; `synchronize()` waits.
#[pyclass(unsendable, module = "matmul", name = "Plan")]
struct PyPlan {
    inner: matmul::Plan<'static>,
    backend: &'static (dyn Backend + Sync),
}

#[pymethods]
impl PyPlan {
    #[new]
    #[pyo3(signature = (m, n, k, dtype = "float32", *, kernel = "auto", backend = None, transpose_a = false, transpose_b = false, alpha = 1.0, beta = 0.0, c_dtype = None, batch = None))]
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
    ) -> PyResult<PyPlan> {
        let dtype = parse_dtype(dtype)?;
        let c_out = match c_dtype.map(parse_dtype).transpose()? {
            None => COut::Accumulator,
            Some(c) => COut::for_types(dtype, c).map_err(py_err)?,
        };
        let problem = Problem::new(m, n, k, dtype)
            .with_ops(Op::from_flag(transpose_a), Op::from_flag(transpose_b))
            .with_c(c_out);
        let mut builder = {
            let (b, _) = backend_named(backend).map_err(py_err)?;
            matmul::Plan::builder(b, problem)
                .kernel(kernel)
                .alpha(alpha)
                .beta(beta)
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

    /// Enqueues C = alpha·op(A)·op(B) + beta·C on DeviceArrays of the plan's backend.
    fn run(
        &self,
        py: Python<'_>,
        a: &DeviceArray,
        b: &DeviceArray,
        mut c: PyRefMut<'_, DeviceArray>,
    ) -> PyResult<()> {
        let inner = &self.inner;
        let c_data = &mut c.data;
        py.detach(|| inner.run_data(&a.data, &b.data, c_data))
            .map_err(py_err)
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

#[pymodule]
fn _matmul(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<DeviceArray>()?;
    m.add_class::<PyPlan>()?;
    m.add_function(wrap_pyfunction!(to_device, m)?)?;
    m.add_function(wrap_pyfunction!(signature, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(gemm, m)?)?;
    m.add_function(wrap_pyfunction!(kernels, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    Ok(())
}
