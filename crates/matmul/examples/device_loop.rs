//! A plan run many times on matrices kept on the backend, as a solver or an inference loop
//! would, timed against the same kernel as `matmul bench` times it (CUDA events on the device;
//! the wall clock on the CPU); then the one-call path (`Gemm::run`: upload, run, download) and the
//! round trip of the operands alone (upload A and B, download C), to show what a call off the
//! device costs; on CUDA the same from and into page-locked host matrices
//! (`CudaBackend::pinned`, `Gemm::run_into`), which the link copies at its full rate. On a GPU:
//! 1024³ bf16 and 4096³ f32; on the CPU (no GPU, or `--cpu`): 256³ f32.
//!
//! ```sh
//! cargo run --release -p matmul --example device_loop [-- --cpu] [-- --iters N]
//! ```

use std::time::Instant;

use matmul::{
    open_backend, AnyMatrix, Backend, BackendChoice, DType, DeviceMatrix, Init, Inputs, Matrix,
    Plan, Problem,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let choice = if args.iter().any(|a| a == "--cpu") {
        BackendChoice::Cpu
    } else {
        BackendChoice::Auto
    };
    let iters: usize = match args.iter().position(|a| a == "--iters") {
        Some(i) => args.get(i + 1).ok_or("--iters takes a number")?.parse()?,
        None => 1000,
    };
    let (backend, why) = open_backend(choice)?;
    if let Some(why) = why {
        eprintln!("device_loop: {why}");
    }
    println!("{}", backend.describe());
    let problems = match backend.kind() {
        matmul::BackendKind::Cuda => vec![
            Problem::new(1024, 1024, 1024, DType::Bf16),
            Problem::new(4096, 4096, 4096, DType::F32),
        ],
        _ => vec![Problem::new(256, 256, 256, DType::F32)],
    };
    let iters = if backend.kind() == matmul::BackendKind::Cuda {
        iters
    } else {
        iters.min(20)
    };
    // Page-locked matrices are the CUDA backend's: open it as such too (the same device).
    let cuda = match backend.kind() {
        matmul::BackendKind::Cuda => Some(matmul::CudaBackend::new(0)?),
        _ => None,
    };
    for p in problems {
        match p.dtype {
            DType::Bf16 => run::<half::bf16>(&*backend, cuda.as_ref(), p, iters)?,
            _ => run::<f32>(&*backend, cuda.as_ref(), p, iters)?,
        }
    }
    Ok(())
}

/// Plans `p` once, runs it `iters` times on the same device matrices and waits once, then times
/// the same kernel as the bench does; prints both per call.
fn run<T: matmul::Element>(
    backend: &dyn Backend,
    cuda: Option<&matmul::CudaBackend>,
    p: Problem,
    iters: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let input = |rows, cols, seed| -> Result<Matrix<T>, Box<dyn std::error::Error>> {
        let m = AnyMatrix::generate(p.dtype, rows, cols, Init::Random { seed })?;
        Matrix::<T>::try_from(m).map_err(|_| "generated the wrong element type".into())
    };
    let (a, b) = (input(p.m, p.k, 1)?, input(p.k, p.n, 2)?);
    let plan = Plan::builder(backend, p).build()?;
    let (da, db) = (
        DeviceMatrix::upload(backend, &a)?,
        DeviceMatrix::upload(backend, &b)?,
    );
    let mut dc = DeviceMatrix::<f32>::zeros(backend, p.m, p.n)?;
    // One run first: compilation and the operands' tensor maps are made once per buffer set.
    plan.run(&da, &db, &mut dc)?;
    backend.synchronize()?;
    let start = Instant::now();
    for _ in 0..iters {
        plan.run(&da, &db, &mut dc)?;
    }
    backend.synchronize()?;
    let per_call = start.elapsed().as_secs_f64() / iters as f64;
    let opts = matmul::RunOptions {
        tile: None,
        tiling: plan.tiling(),
    };
    let inputs = [Inputs {
        a: AnyMatrix::from(a),
        b: AnyMatrix::from(b),
    }];
    let mut kernel = backend.time(plan.kernel(), &p, &inputs, 3, iters.min(50), opts)?;
    kernel.sort_by(f64::total_cmp);
    let median = kernel[kernel.len() / 2];
    println!(
        "{p}: {} — plan {:.1} µs per call over {iters} calls, kernel {:.1} µs (bench's median): {:+.1} µs ({:+.1} %)",
        plan.kernel().name,
        per_call * 1e6,
        median * 1e6,
        (per_call - median) * 1e6,
        (per_call / median - 1.0) * 100.0
    );
    // Off the device: the one-call path, and the transfers it cannot avoid.
    let Inputs { a, b } = inputs.into_iter().next().expect("one input set");
    let (a, b) = (
        Matrix::<T>::try_from(a).map_err(|_| "A's type")?,
        Matrix::<T>::try_from(b).map_err(|_| "B's type")?,
    );
    let calls = 3;
    let start = Instant::now();
    for _ in 0..calls {
        matmul::Gemm::new(&a, &b).on(backend).run_as::<f32>()?;
    }
    let one_call = start.elapsed().as_secs_f64() / calls as f64;
    let start = Instant::now();
    for _ in 0..calls {
        let (ua, ub) = (
            DeviceMatrix::upload(backend, &a)?,
            DeviceMatrix::upload(backend, &b)?,
        );
        backend.synchronize()?;
        dc.download(backend)?;
        drop((ua, ub));
    }
    let transfers = start.elapsed().as_secs_f64() / calls as f64;
    // Each transfer alone, the best of `calls`: an upload of A, a download of C.
    let best = |f: &mut dyn FnMut() -> matmul::Result<()>| -> matmul::Result<f64> {
        let mut best = f64::INFINITY;
        for _ in 0..calls {
            let start = Instant::now();
            f()?;
            best = best.min(start.elapsed().as_secs_f64());
        }
        Ok(best)
    };
    let up = best(&mut || {
        let ua = DeviceMatrix::upload(backend, &a)?;
        backend.synchronize()?;
        drop(ua);
        Ok(())
    })?;
    let down = best(&mut || dc.download(backend).map(drop))?;
    let gb = |bytes: usize, s: f64| bytes as f64 / s / 1e9;
    println!(
        "{p}: upload of A {:.2} ms ({:.1} GB/s), download of C {:.2} ms ({:.1} GB/s)",
        up * 1e3,
        gb(a.data.len() * std::mem::size_of::<T>(), up),
        down * 1e3,
        gb(p.m * p.n * 4, down)
    );
    println!(
        "{p}: one call (upload, run, download) {:.1} ms; the transfers alone {:.1} ms; kernel + transfers {:.1} ms ({:.2}x)",
        one_call * 1e3,
        transfers * 1e3,
        (median + transfers) * 1e3,
        one_call / (median + transfers)
    );
    if let Some(cuda) = cuda {
        pinned(cuda, p, &a, &b, median, calls)?;
    }
    Ok(())
}

/// The one-call path from and into page-locked host matrices, against the kernel plus the same
/// transfers alone.
fn pinned<T: matmul::Element>(
    cuda: &matmul::CudaBackend,
    p: Problem,
    a: &Matrix<T>,
    b: &Matrix<T>,
    kernel: f64,
    calls: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut pa = cuda.pinned::<T>(a.rows, a.cols)?;
    let mut pb = cuda.pinned::<T>(b.rows, b.cols)?;
    let mut pc = cuda.pinned::<f32>(p.m, p.n)?;
    pa.as_mut_slice().copy_from_slice(&a.data);
    pb.as_mut_slice().copy_from_slice(&b.data);
    let call = |pc: &mut matmul::cuda::PinnedMatrix<f32>| {
        matmul::Gemm::new(pa.as_ref(), pb.as_ref())
            .on(cuda)
            .run_into(pc.as_mut())
    };
    call(&mut pc)?;
    let start = Instant::now();
    for _ in 0..calls {
        call(&mut pc)?;
    }
    let one_call = start.elapsed().as_secs_f64() / calls as f64;
    let d = DeviceMatrix::upload(cuda, &Matrix::<f32>::zeros(p.m, p.n)?)?;
    let start = Instant::now();
    for _ in 0..calls {
        let ua = DeviceMatrix::upload_ref(cuda, pa.as_ref())?;
        let ub = DeviceMatrix::upload_ref(cuda, pb.as_ref())?;
        cuda.download_into(d.data(), pc.as_mut().into())?;
        drop((ua, ub));
    }
    let transfers = start.elapsed().as_secs_f64() / calls as f64;
    let bytes = (a.data.len() + b.data.len()) * std::mem::size_of::<T>() + p.m * p.n * 4;
    println!(
        "{p}: one call from and into page-locked memory {:.1} ms; its transfers alone {:.1} ms ({:.1} GB/s); kernel + transfers {:.1} ms ({:.2}x)",
        one_call * 1e3,
        transfers * 1e3,
        bytes as f64 / transfers / 1e9,
        (kernel + transfers) * 1e3,
        one_call / (kernel + transfers)
    );
    Ok(())
}
