//! A strided batch of products through one plan, as attention's per-head products are: Q·Kᵀ for
//! `heads` heads of `seq`×`dim` (B transposed, as K is stored), checked against each product
//! computed alone, then timed. On a GPU: 32 heads of 2048×2048×128 bf16 (f32 C); on the CPU (no
//! GPU, or `--cpu`): 4 heads of 64×64×32.
//!
//! ```sh
//! cargo run --release -p matmul --example batched [-- --cpu]
//! ```

use std::time::Instant;

use matmul::{
    open_backend, AnyMatrix, Backend, BackendChoice, BackendKind, Batch, DType, DeviceMatrix, Init,
    Matrix, Op, Plan, Problem,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cpu = std::env::args().any(|a| a == "--cpu");
    let choice = if cpu {
        BackendChoice::Cpu
    } else {
        BackendChoice::Auto
    };
    let (backend, why) = open_backend(choice)?;
    if let Some(why) = why {
        eprintln!("batched: {why}");
    }
    println!("{}", backend.describe());
    let (heads, seq, dim, dtype) = match backend.kind() {
        BackendKind::Cuda => (32, 2048, 128, DType::Bf16),
        _ => (4, 64, 32, DType::F32),
    };
    // S_h = Q_h · K_hᵀ: Q and K are heads × seq × dim, stored head after head.
    let p = Problem::new(seq, seq, dim, dtype).with_ops(Op::N, Op::T);
    let batch = Batch::contiguous(heads, &p);
    let gen = |seed| AnyMatrix::generate(dtype, heads * seq, dim, Init::Random { seed });
    let (q, k) = (gen(1)?, gen(2)?);
    let (dq, dk) = (backend.upload(&q)?, backend.upload(&k)?);
    let mut ds = DeviceMatrix::<f32>::zeros(&*backend, heads * seq, seq)?;
    let plan = Plan::builder(&*backend, p).batch(batch).build()?;
    plan.run_data(&dq, &dk, ds_data(&mut ds))?;
    backend.synchronize()?;
    check(&*backend, &plan, &q, &k, &ds)?;
    let runs = if backend.kind() == BackendKind::Cuda {
        20
    } else {
        2
    };
    let start = Instant::now();
    for _ in 0..runs {
        plan.run_data(&dq, &dk, ds_data(&mut ds))?;
    }
    backend.synchronize()?;
    let per_batch = start.elapsed().as_secs_f64() / runs as f64;
    let flops = heads as f64 * p.flops();
    println!(
        "{heads} × {p} ({}): {:.3} ms per batch, {:.1} TFLOP/s",
        plan.kernel().name,
        per_batch * 1e3,
        flops / per_batch / 1e12
    );
    Ok(())
}

/// The untyped handle of `m`, for `Plan::run_data` (the operands here are untyped uploads).
fn ds_data(m: &mut DeviceMatrix<f32>) -> &mut matmul::DeviceData {
    m.data_mut()
}

/// Every head's product against the one computed alone on the CPU (the first two heads).
fn check(
    backend: &dyn Backend,
    plan: &Plan,
    q: &AnyMatrix,
    k: &AnyMatrix,
    s: &DeviceMatrix<f32>,
) -> Result<(), Box<dyn std::error::Error>> {
    let p = *plan.problem();
    let got = s.download(backend)?;
    let (seq, dim) = (p.m, p.k);
    let slice = |m: &AnyMatrix, h: usize| -> Result<AnyMatrix, matmul::Error> {
        let v: Vec<f64> = m.to_f64_vec()[h * seq * dim..(h + 1) * seq * dim].to_vec();
        Ok(match m.dtype() {
            DType::Bf16 => Matrix::from_vec(
                seq,
                dim,
                v.iter().map(|&x| half::bf16::from_f64(x)).collect(),
            )?
            .into(),
            _ => Matrix::from_vec(seq, dim, v.iter().map(|&x| x as f32).collect())?.into(),
        })
    };
    for h in 0..2.min(plan.batch().count) {
        let want = matmul::cpu::reference::matmul(&p, &slice(q, h)?, &slice(k, h)?)?;
        let gh: AnyMatrix = Matrix::from_vec(
            seq,
            seq,
            got.data[h * seq * seq..(h + 1) * seq * seq].to_vec(),
        )?
        .into();
        let v = matmul::verify::compare(&p, &gh, &want);
        if !v.passed {
            return Err(format!("head {h}: {v:?}").into());
        }
    }
    println!("heads 0 and 1 match the CPU reference");
    Ok(())
}
