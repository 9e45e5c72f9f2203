//! The fast CPU path against the reference, on awkward shapes, for every dtype and all four
//! op(A)/op(B) combinations; u32 bit for bit (random inputs, so the sums wrap), floats through
//! `verify::compare`. Also the public `Backend` API, and a check that `compare` can fail.
//!
//! Throughput (not asserted; run in release): `cargo test --release -p matmul --test cpu --
//! --ignored --nocapture`.

use matmul::cpu::{fast, reference, CpuBackend};
use matmul::verify::compare;
use matmul::{AnyMatrix, Backend, COut, DType, Init, Op, Problem, RunOptions};

#[path = "support/views.rs"]
mod views;

const OPS: [(Op, Op); 4] = [
    (Op::N, Op::N),
    (Op::N, Op::T),
    (Op::T, Op::N),
    (Op::T, Op::T),
];

/// (m, n, k): degenerate, odd, tile edge ±1 (the u32 kernel's MR = 4 or 8, NR = 16 or 32, KC = 256 or
/// 512, MC = 64), non-square. `u32_blocked`'s own tests run each of its copies.
const AWKWARD: [(usize, usize, usize); 8] = [
    (1, 1, 1),
    (1, 1, 300),
    (3, 5, 7),
    (17, 33, 65),
    (255, 1, 257),
    (1, 255, 257),
    (65, 17, 513),
    (266, 265, 264),
];

/// Seeded inputs for `problem`, stored as its ops say.
fn inputs(problem: &Problem, seed: u64) -> (AnyMatrix, AnyMatrix) {
    let (ar, ac) = problem.a_stored();
    let (br, bc) = problem.b_stored();
    let a = AnyMatrix::generate(problem.dtype, ar, ac, Init::Random { seed }).unwrap();
    let b = AnyMatrix::generate(problem.dtype, br, bc, Init::Random { seed: seed + 1 }).unwrap();
    (a, b)
}

/// Runs the fast path and the reference on one problem and asserts they agree.
fn check(problem: &Problem, seed: u64) {
    let (a, b) = inputs(problem, seed);
    let got = fast::matmul(problem, &a, &b).unwrap();
    let want = reference::matmul(problem, &a, &b).unwrap();
    assert_eq!(got.dtype(), want.dtype(), "{problem}");
    assert_eq!(
        (got.rows(), got.cols()),
        (problem.m, problem.n),
        "{problem}"
    );
    if problem.dtype == DType::U32 {
        assert!(got == want, "{problem}: u32 result is not bit-exact");
    } else {
        let verdict = compare(problem, &got, &want);
        assert!(verdict.passed, "{problem}: {verdict:?}");
    }
}

fn awkward_shapes(dtype: DType) {
    for (s, &(m, n, k)) in AWKWARD.iter().enumerate() {
        for (o, &(op_a, op_b)) in OPS.iter().enumerate() {
            let problem = Problem::new(m, n, k, dtype).with_ops(op_a, op_b);
            check(&problem, (s * 4 + o) as u64 * 2);
        }
    }
}

#[test]
fn awkward_shapes_f32() {
    awkward_shapes(DType::F32);
}

#[test]
fn awkward_shapes_u32() {
    awkward_shapes(DType::U32);
}

#[test]
fn awkward_shapes_tf32() {
    awkward_shapes(DType::Tf32);
}

#[test]
fn awkward_shapes_bf16() {
    awkward_shapes(DType::Bf16);
}

#[test]
fn awkward_shapes_f16() {
    awkward_shapes(DType::F16);
}

/// Every m, n, k in 0..12 (zero included: an empty C, or a depth-0 sum of zeros), every op.
#[test]
fn small_sweep_every_dtype() {
    for dtype in DType::ALL {
        for m in 0..12 {
            for n in 0..12 {
                for k in 0..12 {
                    for &(op_a, op_b) in &OPS {
                        let problem = Problem::new(m, n, k, dtype).with_ops(op_a, op_b);
                        check(&problem, (m * 144 + n * 12 + k) as u64);
                    }
                }
            }
        }
    }
}

/// The comparison must be able to fail: corrupt one element of a correct result.
#[test]
fn a_corrupted_element_fails_verification() {
    for dtype in DType::ALL {
        let problem = Problem::new(17, 33, 65, dtype).with_ops(Op::T, Op::N);
        let (a, b) = inputs(&problem, 11);
        let want = reference::matmul(&problem, &a, &b).unwrap();
        let mut got = fast::matmul(&problem, &a, &b).unwrap();
        assert!(compare(&problem, &got, &want).passed, "{problem}");
        match &mut got {
            AnyMatrix::U32(c) => c.data[5 * 33 + 7] ^= 1,
            AnyMatrix::F32(c) => c.data[5 * 33 + 7] += 1.0,
            other => panic!("unexpected output type {}", other.dtype()),
        }
        let verdict = compare(&problem, &got, &want);
        assert!(!verdict.passed, "{problem}: corruption not detected");
        assert_eq!(verdict.worst, Some((5, 7)), "{problem}");
    }
}

/// The same checks through the public API: `find("cpu")` and `Backend::run`.
#[test]
fn backend_runs_the_fast_kernel() {
    let kernel = matmul::find("cpu").unwrap();
    let backend = CpuBackend;
    for dtype in DType::ALL {
        for &(op_a, op_b) in &OPS {
            let problem = Problem::new(70, 45, 300, dtype).with_ops(op_a, op_b);
            let (a, b) = inputs(&problem, 3);
            let got = backend
                .run(kernel, &problem, &a, &b, RunOptions::default())
                .unwrap();
            let want = reference::matmul(&problem, &a, &b).unwrap();
            let verdict = compare(&problem, &got, &want);
            assert!(verdict.passed, "{problem}: {verdict:?}");
            if dtype == DType::U32 {
                assert!(got == want, "{problem}: u32 result is not bit-exact");
            }
        }
    }
}

/// C in the input dtype: bf16/f16 C from both CPU kernels, within the tolerance (which then
/// includes C's rounding), and a corrupted element of it still fails.
#[test]
fn c_in_the_input_dtype() {
    let backend = CpuBackend;
    for dtype in [DType::Bf16, DType::F16] {
        for &(op_a, op_b) in &OPS {
            let problem = Problem::new(33, 17, 130, dtype)
                .with_ops(op_a, op_b)
                .with_c(COut::Input);
            let (a, b) = inputs(&problem, 5);
            let want = reference::matmul(&problem, &a, &b).unwrap();
            assert_eq!(want.dtype(), dtype, "{problem}");
            for name in ["cpu", "cpu-reference"] {
                let kernel = matmul::find(name).unwrap();
                let got = backend
                    .run(kernel, &problem, &a, &b, RunOptions::default())
                    .unwrap();
                assert_eq!(got.dtype(), dtype, "{name} {problem}");
                let verdict = compare(&problem, &got, &want);
                assert!(verdict.passed, "{name} {problem}: {verdict:?}");
            }
            // The f32 result rounded by hand is what the reference returns.
            let wide = reference::matmul(&problem.with_c(COut::Accumulator), &a, &b).unwrap();
            assert_eq!(wide.into_c_dtype(&problem), want, "{problem}");
            let mut bad = want.clone();
            match &mut bad {
                AnyMatrix::Bf16(c) => c.data[40] = half::bf16::from_f32(c.data[40].to_f32() + 16.0),
                AnyMatrix::F16(c) => c.data[40] = half::f16::from_f32(c.data[40].to_f32() + 16.0),
                other => panic!("unexpected output type {}", other.dtype()),
            }
            assert!(!compare(&problem, &bad, &want).passed, "{problem}");
        }
    }
}

/// Wrong shapes and wrong element types are errors, never panics.
#[test]
fn wrong_inputs_are_errors() {
    let kernel = matmul::find("cpu").unwrap();
    let backend = CpuBackend;
    let problem = Problem::new(4, 5, 6, DType::F32).with_ops(Op::N, Op::T);
    let (a, b) = inputs(&problem, 1);
    let opts = RunOptions::default();
    // B stored k×n although op_b = T wants n×k.
    let b_untransposed = AnyMatrix::generate(DType::F32, 6, 5, Init::Random { seed: 1 }).unwrap();
    assert!(backend
        .run(kernel, &problem, &a, &b_untransposed, opts)
        .is_err());
    assert!(fast::matmul(&problem, &a, &b_untransposed).is_err());
    // Operands swapped.
    assert!(backend.run(kernel, &problem, &b, &a, opts).is_err());
    // u32 storage for an f32 problem.
    let a_u32 = AnyMatrix::generate(DType::U32, 4, 6, Init::Random { seed: 1 }).unwrap();
    assert!(backend.run(kernel, &problem, &a_u32, &b, opts).is_err());
    assert!(fast::matmul(&problem, &a_u32, &b).is_err());
    // A matrix whose data disagrees with its shape (the fields are public).
    let mut short = a.clone();
    if let AnyMatrix::F32(m) = &mut short {
        m.data.pop();
    }
    assert!(fast::matmul(&problem, &short, &b).is_err());
    // A zero-sized problem is refused by the backend, before any work.
    let empty = Problem::new(0, 5, 6, DType::F32);
    let (ea, eb) = inputs(&empty, 1);
    assert!(backend.run(kernel, &empty, &ea, &eb, opts).is_err());
}

// ---- Throughput (ignored: run in release with --ignored --nocapture; nothing is asserted) ----

/// Best and median rate (G(FL)OP/s) of `runs` timed calls after one warm-up call.
fn rate(dtype: DType, n: usize, runs: usize) -> (f64, f64) {
    let problem = Problem::square(n, dtype);
    let (a, b) = inputs(&problem, 42);
    std::hint::black_box(fast::matmul(&problem, &a, &b).unwrap());
    let mut secs: Vec<f64> = (0..runs)
        .map(|_| {
            let start = std::time::Instant::now();
            std::hint::black_box(fast::matmul(&problem, &a, &b).unwrap());
            start.elapsed().as_secs_f64()
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    let g = |s: f64| problem.flops() / s / 1e9;
    (g(secs[0]), g(secs[secs.len() / 2]))
}

#[test]
#[ignore = "throughput measurement; run in release with --ignored --nocapture"]
fn throughput() {
    println!("rayon threads: {}", rayon::current_num_threads());
    for (dtype, n, runs) in [
        (DType::F32, 2048, 9),
        (DType::U32, 1024, 9),
        (DType::U32, 2048, 3),
        (DType::Bf16, 2048, 5),
        (DType::F16, 2048, 5),
    ] {
        let (best, median) = rate(dtype, n, runs);
        println!(
            "{dtype} n={n}: best {best:.1} G{unit}/s, median {median:.1} G{unit}/s ({runs} runs)",
            unit = dtype.rate_unit()
        );
    }
}

/// Plans on views of bigger matrices on the CPU backend: f32, u32 and bf16 (bf16 C), every op
/// pair, α = 1, β = 0 and α, β ≠ (1, 0) on a pre-filled C; outside C's view nothing changes.
#[test]
fn plans_on_views() {
    use half::bf16;
    use matmul::Scale;
    let cpu = CpuBackend;
    let mut ran = 0;
    for (op_a, op_b) in [
        (Op::N, Op::N),
        (Op::T, Op::N),
        (Op::N, Op::T),
        (Op::T, Op::T),
    ] {
        for scale in [
            Scale::ONE,
            Scale {
                alpha: 2.0,
                beta: -0.5,
            },
        ] {
            let p = |d| Problem::new(7, 5, 9, d).with_ops(op_a, op_b);
            views::check_views::<f32, f32>(&cpu, "auto", p(DType::F32), scale);
            views::check_views::<u32, u32>(&cpu, "auto", p(DType::U32), Scale::ONE);
            let pb = p(DType::Bf16).with_c(COut::Input);
            views::check_views::<bf16, bf16>(&cpu, "auto", pb, scale);
            ran += 3;
        }
    }
    assert_eq!(ran, 24);
}
