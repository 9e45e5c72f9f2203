//! Multiplies two f32 matrices with the library, says which kernel ran where, and verifies the
//! result against the CPU reference.
//!
//! ```sh
//! cargo run --release -p matmul --example multiply                 # 512³, the `auto` kernel
//! cargo run --release -p matmul --example multiply -- 1000 700 300 tiled
//! ```
//!
//! Arguments: M N K (default 512 512 512) and a kernel name or seed alias (default `auto`). The
//! backend is CUDA when a device is present, else the CPU.

use std::process::ExitCode;
use std::time::Instant;

use matmul::{Gemm, Matrix};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("multiply: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let size = |i: usize| -> Result<usize, String> {
        match args.get(i) {
            None => Ok(512),
            Some(s) => s
                .parse()
                .map_err(|_| format!("`{s}` is not a size (usage: multiply [M N K [KERNEL]])")),
        }
    };
    let (m, n, k) = (size(0)?, size(1)?, size(2)?);
    let kernel = args.get(3).map_or("auto", String::as_str);

    // Inputs with a pattern, so that a wrong element would show.
    let a = Matrix::<f32>::from_fn(m, k, |i, j| ((i * 7 + j * 3) % 13) as f32 / 13.0 - 0.5)?;
    let b = Matrix::<f32>::from_fn(k, n, |i, j| ((i * 5 + j * 11) % 17) as f32 / 17.0 - 0.5)?;

    let start = Instant::now();
    let out = Gemm::new(&a, &b)
        .kernel(kernel)
        .verify(true)
        .run_detailed()?;
    let secs = start.elapsed().as_secs_f64();

    for note in &out.notes {
        println!("note     {note}");
    }
    println!("kernel   {}", out.kernel.name);
    println!("backend  {}", out.backend);
    if let Some(tiling) = out.tiling {
        println!("tiling   {tiling}");
    }
    println!("problem  {}", out.problem);
    println!(
        "time     {:.3} ms (one call: transfers, any compilation and the check included)",
        secs * 1e3
    );
    if let Some(v) = &out.verdict {
        println!(
            "check    PASS: rel. Frobenius error {:.3e} (tolerance {:.1e})",
            v.rel_frobenius, v.tolerance
        );
    }
    if let Some(c00) = out.c.get(0, 0) {
        println!("C[0][0]  {c00}");
    }
    Ok(())
}
