//! `matmul.bench`: the bench's runner and report files ([`matmul_bench::run`],
//! [`matmul_bench::write_reports`]) from Python, with the GIL released and Ctrl-C checked
//! between cases.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use matmul::{Backend, BackendKind, DType, Shape};
use matmul_bench::{defaults, BenchConfig, BenchKernel, CpuCeilingOptions, ProgressEvent};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

use crate::{cuda, py_err, CPU};

/// A bench run's configuration and backend, handed to the thread that runs without the GIL.
struct Run<'a>(&'a BenchConfig, &'a dyn Backend);

// SAFETY: the closure `detach` runs it in stays on this thread; the configuration holds no
// Python object and no external kernel (the only member that is not Sync), so nothing in it
// needs the GIL.
unsafe impl Send for Run<'_> {}

/// One size: n (an n×n×n product) or (m, n, k).
fn shape(x: &Bound<'_, PyAny>) -> PyResult<Shape> {
    if let Ok(n) = x.extract::<usize>() {
        return Ok(Shape { m: n, n, k: n });
    }
    let (m, n, k) = x.extract::<(usize, usize, usize)>().map_err(|_| {
        PyValueError::new_err("sizes: each is an integer n (n×n×n) or a tuple (m, n, k)")
    })?;
    Ok(Shape { m, n, k })
}

fn dtype(name: &str) -> PyResult<DType> {
    name.parse::<DType>().or_else(|_| crate::parse_dtype(name))
}

/// The backend kind a kernel list asks for (all its named kernels on one), if any.
fn kind_of(kernels: &str) -> PyResult<Option<BackendKind>> {
    let named = defaults::named_kernels(kernels).map_err(py_err)?;
    let mut kinds = named
        .unwrap_or_default()
        .into_iter()
        .filter_map(|k| match k {
            BenchKernel::Named(spec) => Some(spec.backend),
            BenchKernel::Int8Ceiling => Some(BackendKind::Cuda),
            BenchKernel::Auto | BenchKernel::External => None,
        });
    let first = kinds.next();
    if let Some(other) = kinds.find(|k| Some(*k) != first) {
        return Err(PyValueError::new_err(format!(
            "kernels: some run on {} and some on {other}; one bench runs on one backend",
            first.map(|k| k.to_string()).unwrap_or_default()
        )));
    }
    Ok(first)
}

/// bench(sizes=None, *, kernels="all", dtypes=None, backend=None, quick=False, min_time=None,
/// out=None, ceilings=True) -> list[dict]
///
/// `matmul bench` from Python: every kernel × dtype × size verified and timed on one backend,
/// the report files written to `out` (default target/matmul-report: results.json, results.csv,
/// roofline.svg, ladder.svg, report.md, report.html), and the cases returned, one dict per
/// case with results.json's fields. `sizes`: integers n (n×n×n) or (m, n, k) tuples (default: the backend's, as the
/// CLI's). `kernels`: "all", or comma-separated names, aliases, "auto". `dtypes`: names as
/// "float32"/"f32", "uint32", "tf32", "bfloat16", "float16" (default: the backend's).
/// `backend`: "auto" (the named kernels' backend, else CUDA if present, else the CPU), "cpu",
/// "cuda" or "wgpu". `quick`: short timings, small sizes and on the GPU a handful of kernels.
/// `min_time`: seconds of timed launches per case. `ceilings=False` skips measuring the
/// machine's limits. The GIL is released while it runs; Ctrl-C stops it after the case in
/// progress, writes the report of the finished cases (marked partial) and raises
/// KeyboardInterrupt.
#[pyfunction]
#[pyo3(signature = (sizes = None, *, kernels = "all", dtypes = None, backend = None, quick = false, min_time = None, out = None, ceilings = true))]
#[allow(clippy::too_many_arguments)]
pub fn bench<'py>(
    py: Python<'py>,
    sizes: Option<Vec<Bound<'py, PyAny>>>,
    kernels: &str,
    dtypes: Option<Vec<String>>,
    backend: Option<&str>,
    quick: bool,
    min_time: Option<f64>,
    out: Option<PathBuf>,
    ceilings: bool,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let out = out.unwrap_or_else(|| PathBuf::from("target/matmul-report"));
    let asked = kind_of(kernels)?;
    let kind = match (backend.unwrap_or("auto"), asked) {
        ("auto", Some(k)) => k,
        ("auto", None) => crate::backend(None).map_err(py_err)?.kind(),
        (name, k) => {
            let b = crate::backend(Some(name)).map_err(py_err)?.kind();
            if let Some(k) = k.filter(|k| *k != b) {
                return Err(PyValueError::new_err(format!(
                    "kernels run on the {k} backend, not on {name}"
                )));
            }
            b
        }
    };
    let name = kind.to_string();
    let b: &'static (dyn Backend + Sync) = match kind {
        BackendKind::Cpu => &CPU,
        _ => crate::backend(Some(&name)).map_err(py_err)?,
    };
    let dtypes = match dtypes {
        None => defaults::dtypes(kind),
        Some(names) => names.iter().map(|n| dtype(n)).collect::<PyResult<_>>()?,
    };
    let shapes: Vec<Shape> = match sizes {
        None => defaults::sizes(kind, quick)
            .into_iter()
            .map(|n| Shape { m: n, n, k: n })
            .collect(),
        Some(list) => list.iter().map(shape).collect::<PyResult<_>>()?,
    };
    if shapes.iter().any(|s| s.m == 0 || s.n == 0 || s.k == 0) {
        return Err(PyValueError::new_err("sizes are at least 1"));
    }
    if min_time.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
        return Err(PyValueError::new_err(
            "min_time is a number of seconds above 0",
        ));
    }
    let mut config = BenchConfig::new(Vec::new(), dtypes, shapes);
    config.kernels = defaults::select_kernels(kernels, kind, quick).map_err(py_err)?;
    if quick && kernels.eq_ignore_ascii_case("all") {
        config.plan = defaults::quick_plan(kind);
    }
    config.min_time = match (min_time, quick) {
        (Some(t), _) => Some(t),
        (None, true) => Some(defaults::QUICK_MIN_TIME),
        (None, false) => config.min_time,
    };
    config.max_case_seconds = Some(5.0);
    config.validate().map_err(py_err)?;
    if out.exists() && !out.is_dir() {
        return Err(PyValueError::new_err(format!(
            "out {}: is a file; it names the report's directory",
            out.display()
        )));
    }
    matmul_bench::prepare_report_dir(&out).map_err(|e| {
        PyValueError::new_err(format!(
            "out {}: cannot write the report there: {e}",
            out.display()
        ))
    })?;
    match kind {
        BackendKind::Cpu => {
            config.cache_bytes = matmul_bench::default_cpu_cache_bytes();
            if ceilings {
                let opts = if quick {
                    CpuCeilingOptions::quick()
                } else {
                    CpuCeilingOptions::default()
                };
                config.measured_ceilings = Some(py.detach(|| matmul_bench::measure_cpu(&opts)));
            }
        }
        BackendKind::Cuda => {
            let cuda = cuda()?;
            config.use_cuda_device(cuda.info());
            if let Some((_, table)) = matmul::dispatch::tune::load_table(cuda.info()).found {
                config.tuned = Some(table);
            }
            if ceilings {
                config.measured_ceilings = Some(
                    py.detach(|| matmul_bench::measure_gpu(cuda, quick))
                        .map_err(py_err)?,
                );
            }
            let units = config.compile_units(b);
            if units.len() > 1 {
                py.detach(|| matmul_bench::precompile(&units, cuda.arch(), &|| ()));
            }
        }
        BackendKind::Wgpu => {}
    }
    let stop = Arc::new(AtomicUsize::new(0));
    config.stop = Some(stop.clone());
    let interrupted: Mutex<Option<PyErr>> = Mutex::new(None);
    let run = Run(&config, b);
    let report = py.detach(|| {
        let run = run;
        let Run(config, backend) = run;
        matmul_bench::run(backend, config, &mut |event| {
            // Between cases: Python's signal handlers (Ctrl-C is KeyboardInterrupt) stop the run
            // after the case in progress.
            if let ProgressEvent::Started { .. } | ProgressEvent::Finished { .. } = event {
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    *interrupted.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    stop.store(2, Ordering::SeqCst);
                }
            }
        })
    });
    matmul_bench::write_reports(&report, &out).map_err(|e| {
        PyRuntimeError::new_err(format!("cannot write the report to {}: {e}", out.display()))
    })?;
    if let Some(e) = interrupted.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let json = serde_json::to_string(&report.records)
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    let loads = py.import("json")?.getattr("loads")?;
    loads.call1((json,))?.extract()
}
