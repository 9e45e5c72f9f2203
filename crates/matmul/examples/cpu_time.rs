//! The fast CPU path's rate per second of CPU time, which other processes sharing the cores do
//! not change as they change wall-clock time (they take turns on the cores, not work from us).
//! Run it with one thread: scripts/cpu-vs-openblas.py `--cpu-time` does, beside OpenBLAS's
//! single-threaded rate measured the same way.
//!
//! ```sh
//! RAYON_NUM_THREADS=1 cargo run --release -p matmul --example cpu_time -- f32 1024 10
//! ```
//!
//! Arguments: dtype (f32 or u32), size n (an n³ product), timed calls (after one untimed). Prints
//! one line of JSON: the best and median rate over the calls, in G(FL)OP per CPU-second of all
//! the process's threads (CLOCK_PROCESS_CPUTIME_ID). rayon's idle workers may spin briefly, which
//! counts: with more than one thread the figure is a lower bound.

use std::process::ExitCode;

use matmul::cpu::fast;
use matmul::{AnyMatrix, DType, Init, Problem};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cpu_time: {e}");
            ExitCode::FAILURE
        }
    }
}

/// CPU time of every thread of this process so far, nanoseconds (CLOCK_PROCESS_CPUTIME_ID,
/// which counts a running thread's time up to now, unlike /proc's per-thread counters).
fn cpu_ns() -> Result<u64, String> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) } != 0 {
        return Err("clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed".into());
    }
    Ok(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    // The copy of the u32 kernel to time, as the `matmul` command takes it from its environment.
    matmul::config::set(matmul::Config {
        cpu_u32_isa: std::env::var("MATMUL_CPU_U32_ISA").ok(),
        ..Default::default()
    });
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: cpu_time f32|u32 N CALLS";
    let dtype: DType = args.first().ok_or(usage)?.parse()?;
    if !matches!(dtype, DType::F32 | DType::U32) {
        return Err(format!("{dtype}: f32 or u32").into());
    }
    let n: usize = args.get(1).ok_or(usage)?.parse()?;
    let calls: usize = args.get(2).ok_or(usage)?.parse()?;
    if n == 0 || calls == 0 {
        return Err(usage.into());
    }
    let problem = Problem::square(n, dtype);
    let a = AnyMatrix::generate(dtype, n, n, Init::Random { seed: 1 })?;
    let b = AnyMatrix::generate(dtype, n, n, Init::Random { seed: 2 })?;
    std::hint::black_box(fast::matmul(&problem, &a, &b)?);
    let mut seconds = Vec::with_capacity(calls);
    for _ in 0..calls {
        let start = cpu_ns()?;
        std::hint::black_box(fast::matmul(&problem, &a, &b)?);
        seconds.push((cpu_ns()? - start) as f64 * 1e-9);
    }
    seconds.sort_by(f64::total_cmp);
    let rate = |s: f64| problem.flops() / s.max(1e-12) / 1e9;
    println!(
        "{{\"dtype\": \"{dtype}\", \"n\": {n}, \"calls\": {calls}, \"threads\": {}, \"best\": {:.2}, \"median\": {:.2}}}",
        rayon::current_num_threads(),
        rate(seconds[0]),
        rate(seconds[calls / 2])
    );
    Ok(())
}
