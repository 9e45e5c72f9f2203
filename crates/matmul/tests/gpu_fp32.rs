//! FP32 accuracy on the GPU: the error of each f32-input kernel against the exact
//! product, e = |C − C_f64| / (|A|·|B|) element-wise in units of f32's u = 2⁻²⁴
//! (`matmul::verify::ErrorStats`), side by side with cuBLAS SGEMM on the same inputs. These are
//! the numbers the FP32-emulating tensor-core kernel (3xTF32, `wgmma-3xtf32`) must match: at most
//! SGEMM's max error on every distribution, and SGEMM's class (NaN, ±∞, ±0, finite) on every
//! element with special inputs. Ignored unless built with
//! MATMUL_REQUIRE_GPU=1 (build.rs), as tests/gpu.rs; on the GPU host:
//! `dist/gpu/bin/test-gpu_fp32 --include-ignored --nocapture`.

use matmul::cpu::reference;
use matmul::matrix::SplitMix64;
use matmul::verify::ErrorStats;
use matmul::{AnyMatrix, Backend, CudaBackend, DType, Init, Matrix, Problem, RunOptions};

/// The compiled-kernel cache the GPU-host scripts share between their steps (`MATMUL_CACHE_DIR`,
/// which the `matmul` command reads): this test program fills the library's config as the
/// command does, once.
fn use_the_scripts_cache() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Some(dir) = std::env::var_os("MATMUL_CACHE_DIR").filter(|d| !d.is_empty()) {
            matmul::config::set(matmul::Config {
                cache_dir: Some(dir.into()),
                ..Default::default()
            });
        }
    });
}

fn gpu() -> Option<CudaBackend> {
    use_the_scripts_cache();
    match CudaBackend::new(0) {
        Ok(b) => Some(b),
        Err(e) => {
            if std::env::var("MATMUL_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("MATMUL_REQUIRE_GPU=1 but there is no usable GPU: {e}");
            }
            println!("SKIP: {e}");
            None
        }
    }
}

/// The last row, the last column and `samples` random positions of an m×n C.
fn positions(m: usize, n: usize, samples: usize) -> Vec<(usize, usize)> {
    let mut rng = SplitMix64::new(40);
    let mut pos: Vec<(usize, usize)> = (0..samples)
        .map(|_| {
            (
                (rng.next_u64() % m as u64) as usize,
                (rng.next_u64() % n as u64) as usize,
            )
        })
        .collect();
    pos.extend((0..n).map(|j| (m - 1, j)));
    pos.extend((0..m).map(|i| (i, n - 1)));
    pos.sort_unstable();
    pos.dedup();
    pos
}

/// The error of `kernel` on `dtype` (f32 or tf32: both read the f32 inputs `a`, `b`), or why it
/// could not run.
fn error_of(
    backend: &CudaBackend,
    kernel: &str,
    dtype: DType,
    (m, n, k): (usize, usize, usize),
    (a, b): (&AnyMatrix, &AnyMatrix),
    pos: &[(usize, usize)],
    (exact, size): (&[f64], &[f64]),
) -> Result<ErrorStats, String> {
    let spec = matmul::find(kernel).map_err(|e| format!("{kernel}: {e}"))?;
    let problem = Problem::new(m, n, k, dtype);
    let c = backend
        .run(spec, &problem, a, b, RunOptions::default())
        .map_err(|e| format!("{kernel} {dtype}: {e}"))?;
    let got: Vec<f64> = pos
        .iter()
        .map(|&(i, j)| c.get(i, j).unwrap_or(f64::NAN))
        .collect();
    Ok(ErrorStats::measure(&problem, &got, exact, size))
}

/// 2048³, uniform [−1, 1): cuBLAS SGEMM's error is a few u (at most k u); TF32 (inputs rounded
/// to 10 mantissa bits) is hundreds of times larger; an FP32-emulating kernel
/// (every 3xTF32 kernel of the build) must stay within SGEMM's max error. Prints every
/// kernel's max and mean error in u.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn fp32_accuracy_against_sgemm() {
    let Some(backend) = gpu() else { return };
    let (m, n, k) = (2048, 2048, 2048);
    let a = AnyMatrix::generate(DType::F32, m, k, Init::Random { seed: 401 }).unwrap();
    let b = AnyMatrix::generate(DType::F32, k, n, Init::Random { seed: 402 }).unwrap();
    let pos = positions(m, n, 8192);
    let problem = Problem::new(m, n, k, DType::F32);
    let (exact, size) = reference::products_f64(&problem, &a, &b, Some(&pos)).unwrap();
    let run = |kernel: &str, dtype: DType| {
        error_of(
            &backend,
            kernel,
            dtype,
            (m, n, k),
            (&a, &b),
            &pos,
            (&exact, &size),
        )
    };
    let show = |name: &str, e: &Result<ErrorStats, String>| {
        match e {
        Ok(e) => println!(
            "RESULT fp32-accuracy {m}x{n}x{k} uniform: {name} max {:?} u, mean {:?} u over {} elements",
            e.max_u, e.mean_u, e.elements
        ),
        Err(why) => println!("RESULT fp32-accuracy {m}x{n}x{k} uniform: {name} did not run: {why}"),
    }
    };

    let sgemm = run("cublas", DType::F32);
    show("cublas f32", &sgemm);
    let sgemm_max = sgemm
        .expect("cuBLAS SGEMM runs")
        .max_u
        .expect("SGEMM's error is finite");
    // Any summation order of k f32 products errs by at most about k u.
    assert!(
        sgemm_max > 0.0 && sgemm_max < k as f64,
        "SGEMM max {sgemm_max} u"
    );

    let mut failures = Vec::new();
    for (name, dtype) in [
        ("multistage-raster", DType::F32),
        ("cublas", DType::Tf32),
        ("wgmma-tf32", DType::Tf32),
    ] {
        let e = run(name, dtype);
        show(&format!("{name} {dtype}"), &e);
        if let (Ok(e), DType::Tf32) = (&e, dtype) {
            // TF32 is what the emulation fixes: it must show clearly above SGEMM here, or this
            // test cannot tell an emulation from plain TF32.
            match e.max_u {
                Some(x) if x > 16.0 * sgemm_max => {}
                other => failures.push(format!(
                    "{name} tf32 max {other:?} u is not far above SGEMM's {sgemm_max} u"
                )),
            }
        }
    }

    // Every FP32-emulating kernel of this build (3xTF32): within SGEMM's max error.
    for kernel in emulated() {
        let e = run(kernel.name, DType::F32);
        show(&format!("{} f32", kernel.name), &e);
        match e {
            Ok(e) => match e.max_u {
                Some(x) if x <= bound(sgemm_max) => {}
                other => failures.push(format!(
                    "{}: max {other:?} u above SGEMM's {sgemm_max} u",
                    kernel.name
                )),
            },
            Err(why) => failures.push(why),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every FP32-emulating kernel of this build (3xTF32: `KernelSpec::is_tf32x3`).
fn emulated() -> impl Iterator<Item = &'static matmul::KernelSpec> {
    matmul::KERNELS.iter().filter(|k| k.is_tf32x3())
}

/// An f32 matrix of `rows`×`cols` from `f(rng, row, col)`.
fn matrix(
    rows: usize,
    cols: usize,
    seed: u64,
    f: impl Fn(&mut SplitMix64, usize, usize) -> f32,
) -> AnyMatrix {
    let mut rng = SplitMix64::new(seed);
    let mut data = Vec::with_capacity(rows * cols);
    for i in 0..rows {
        for j in 0..cols {
            data.push(f(&mut rng, i, j));
        }
    }
    AnyMatrix::from(Matrix::from_vec(rows, cols, data).unwrap())
}

/// A uniform [−1, 1) element.
fn uniform(rng: &mut SplitMix64) -> f32 {
    rng.next_signed_unit() as f32
}

/// A random sign times a uniform [1, 2) mantissa times 2^e, e uniform in −20..=20.
fn spread(rng: &mut SplitMix64) -> f32 {
    let m = 1.0 + (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let e = (rng.next_u64() % 41) as i32 - 20;
    let s = if rng.next_u64() & 1 == 0 { 1.0 } else { -1.0 };
    (s * m * 2f64.powi(e)) as f32
}

/// One case of the distribution table: name, shape, A and B.
struct Case {
    name: &'static str,
    shape: (usize, usize, usize),
    a: AnyMatrix,
    b: AnyMatrix,
}

/// An approximately normal element (the sum of four uniforms, variance 4/3), times 2¹² for
/// about one element in a hundred (outliers).
fn normal_with_outliers(rng: &mut SplitMix64) -> f32 {
    let x: f32 = (0..4).map(|_| uniform(rng)).sum();
    if rng.next_u64().is_multiple_of(100) {
        x * 4096.0
    } else {
        x
    }
}

/// The input distributions: uniform [−1, 1); exponents spread over 2⁻²⁰..2²⁰; heavy
/// cancellation (the second half of K repeats the first with B negated and A perturbed by 2⁻¹⁰
/// relative, so C is ~2⁻¹⁰ of |A|·|B|); all-positive [0, 1) (every truncation of a sum errs the
/// same way); long K (65,536) and 1×1×20000 skinny shapes; normal inputs with 1 % outliers 2¹²
/// larger; rows of A and columns of B scaled by 2⁻²⁰..2²⁰ (every element of C of its own scale);
/// an all-positive K of 2²⁰.
fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let n = 2048;
    let case = |name, shape, a, b| Case { name, shape, a, b };
    out.push(case(
        "uniform",
        (n, n, n),
        matrix(n, n, 1, |r, _, _| uniform(r)),
        matrix(n, n, 2, |r, _, _| uniform(r)),
    ));
    out.push(case(
        "exp-spread",
        (n, n, n),
        matrix(n, n, 3, |r, _, _| spread(r)),
        matrix(n, n, 4, |r, _, _| spread(r)),
    ));
    // Cancellation: A = [X, X·(1 + 2⁻¹⁰·E)], B = [Y; −Y].
    let half = n / 2;
    let x = matrix(n, half, 5, |r, _, _| uniform(r));
    let y = matrix(half, n, 6, |r, _, _| uniform(r));
    let (xs, ys) = (x.as_f32().unwrap().clone(), y.as_f32().unwrap().clone());
    out.push(case(
        "cancellation",
        (n, n, n),
        matrix(n, n, 7, |r, i, l| {
            let v = xs.get(i, l % half).unwrap();
            if l < half {
                v
            } else {
                v * (1.0 + uniform(r) / 1024.0)
            }
        }),
        matrix(n, n, 8, |_, l, j| {
            let v = ys.get(l % half, j).unwrap();
            if l < half {
                v
            } else {
                -v
            }
        }),
    ));
    out.push(case(
        "positive",
        (n, n, n),
        matrix(n, n, 9, |r, _, _| uniform(r).abs()),
        matrix(n, n, 10, |r, _, _| uniform(r).abs()),
    ));
    let (m, nn, k) = (64, 64, 65536);
    out.push(case(
        "long-k",
        (m, nn, k),
        matrix(m, k, 11, |r, _, _| uniform(r)),
        matrix(k, nn, 12, |r, _, _| uniform(r)),
    ));
    out.push(case(
        "long-k-positive",
        (m, nn, k),
        matrix(m, k, 13, |r, _, _| uniform(r).abs()),
        matrix(k, nn, 14, |r, _, _| uniform(r).abs()),
    ));
    let k = 20000;
    out.push(case(
        "1x1-uniform",
        (1, 1, k),
        matrix(1, k, 15, |r, _, _| uniform(r)),
        matrix(k, 1, 16, |r, _, _| uniform(r)),
    ));
    out.push(case(
        "1x1-positive",
        (1, 1, k),
        matrix(1, k, 17, |r, _, _| uniform(r).abs()),
        matrix(k, 1, 18, |r, _, _| uniform(r).abs()),
    ));
    out.push(case(
        "outliers",
        (n, n, n),
        matrix(n, n, 19, |r, _, _| normal_with_outliers(r)),
        matrix(n, n, 20, |r, _, _| normal_with_outliers(r)),
    ));
    let scale = |i: usize| 2f32.powi((i % 41) as i32 - 20);
    out.push(case(
        "row-scales",
        (n, n, n),
        matrix(n, n, 23, |r, i, _| uniform(r) * scale(i)),
        matrix(n, n, 24, |r, _, j| uniform(r) * scale(j * 7)),
    ));
    let (m, nn, k) = (8, 8, 1 << 20);
    out.push(case(
        "k-2^20-positive",
        (m, nn, k),
        matrix(m, k, 25, |r, _, _| uniform(r).abs()),
        matrix(k, nn, 26, |r, _, _| uniform(r).abs()),
    ));
    out
}

/// An emulating kernel's bound on a case: SGEMM's max error, or 1 u where SGEMM's is below it
/// (on a one-element C SGEMM may happen to round exactly).
fn bound(sgemm_max: f64) -> f64 {
    sgemm_max.max(1.0)
}

/// The distribution table: for each case, cuBLAS SGEMM, cuBLAS TF32 and every 3xTF32 kernel
/// against the f64 reference (max and mean error in u, at sampled positions of C, all of a small
/// C), one line per kernel × case. An emulating kernel passes a case where its max error is at
/// most SGEMM's ([`bound`]).
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn fp32_emulation_distributions() {
    let Some(backend) = gpu() else { return };
    let mut failures = Vec::new();
    println!("RESULT fp32-table case shape kernel: max u, mean u (SGEMM max u)");
    for case in cases() {
        let (m, n, k) = case.shape;
        let pos = if m * n <= 8192 {
            (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect()
        } else {
            positions(m, n, 8192)
        };
        let problem = Problem::new(m, n, k, DType::F32);
        let (exact, size) =
            reference::products_f64(&problem, &case.a, &case.b, Some(&pos)).unwrap();
        let run = |kernel: &str, dtype: DType| {
            error_of(
                &backend,
                kernel,
                dtype,
                (m, n, k),
                (&case.a, &case.b),
                &pos,
                (&exact, &size),
            )
        };
        let fmt = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.2}"));
        let sgemm = run("cublas", DType::F32);
        let sgemm_max = sgemm.as_ref().ok().and_then(|e| e.max_u);
        let line =
            |name: &str, e: &Result<ErrorStats, String>| match e {
                Ok(e) => println!(
                "RESULT fp32-table {:<16} {m}x{n}x{k} {name:<20} max {:>8} mean {:>8} (SGEMM {}){}",
                case.name,
                fmt(e.max_u),
                fmt(e.mean_u),
                fmt(sgemm_max),
                if e.wrong > 0 { format!(" {} not finite", e.wrong) } else { String::new() }
            ),
                Err(why) => println!(
                    "RESULT fp32-table {:<16} {m}x{n}x{k} {name:<20} did not run: {why}",
                    case.name
                ),
            };
        line("cublas-f32", &sgemm);
        line("cublas-tf32", &run("cublas", DType::Tf32));
        let Some(sgemm_max) = sgemm_max else {
            failures.push(format!("{}: SGEMM's error is not finite", case.name));
            continue;
        };
        for kernel in emulated() {
            let e = run(kernel.name, DType::F32);
            line(kernel.name, &e);
            match e {
                Ok(e) => match e.max_u {
                    Some(x) if x <= bound(sgemm_max) => {}
                    other => failures.push(format!(
                        "{} {}: max {other:?} u above SGEMM's {sgemm_max} u",
                        kernel.name, case.name
                    )),
                },
                Err(why) => failures.push(why),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Subnormal, infinite, NaN, signed-zero and near-overflow inputs: each 3xTF32 kernel's C
/// against cuBLAS SGEMM's on the same inputs, element by element over a 64×64×256 C. The class
/// of every element must be SGEMM's (NaN, +∞, −∞, +0, −0, other finite), and the finite
/// elements' error against the f64 reference within SGEMM's ([`bound`]).
/// A holds +∞ at (0, 5), NaN at (1, 7), a row of subnormals (row 2, ~1e-39), a row of −0 (row
/// 3), and row 10 zero but for 3·10³⁸ at (10, 11) (its tf32 rounding overflows: the split must
/// keep it finite); B holds −∞ at (9, 3), 0 at (5, 6) (so C(0, 6) = ∞·0 = NaN), a column of
/// subnormals (column 4) and one of −0 (column 8).
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn fp32_emulation_specials() {
    let Some(backend) = gpu() else { return };
    let (m, n, k) = (64, 64, 256);
    let a = matrix(m, k, 21, |r, i, l| match (i, l) {
        (0, 5) => f32::INFINITY,
        (1, 7) => f32::NAN,
        (2, _) => uniform(r) * 1e-39,
        (3, _) => -0.0,
        (10, 11) => 3.0e38,
        (10, _) => 0.0,
        _ => uniform(r),
    });
    let b = matrix(k, n, 22, |r, l, j| match (l, j) {
        (9, 3) => f32::NEG_INFINITY,
        (5, 6) => 0.0,
        (_, 4) => uniform(r) * 1e-39,
        (_, 8) => -0.0,
        _ => uniform(r),
    });
    let problem = Problem::new(m, n, k, DType::F32);
    let pos: Vec<(usize, usize)> = (0..m).flat_map(|i| (0..n).map(move |j| (i, j))).collect();
    let (exact, size) = reference::products_f64(&problem, &a, &b, Some(&pos)).unwrap();
    let c_of = |kernel: &str| -> Result<Vec<f64>, String> {
        let spec = matmul::find(kernel).map_err(|e| format!("{kernel}: {e}"))?;
        let c = backend
            .run(spec, &problem, &a, &b, RunOptions::default())
            .map_err(|e| format!("{kernel}: {e}"))?;
        Ok(pos
            .iter()
            .map(|&(i, j)| c.get(i, j).unwrap_or(f64::NAN))
            .collect())
    };
    // The error of the elements whose exact value and size are finite and nonzero.
    let finite_error = |c: &[f64]| -> f64 {
        let u = 2f64.powi(-24);
        c.iter()
            .zip(&exact)
            .zip(&size)
            .filter(|((_, r), s)| r.is_finite() && s.is_finite() && **s > 0.0)
            .map(|((x, r), s)| (x - r).abs() / s / u)
            .fold(0.0, f64::max)
    };
    let sgemm = c_of("cublas").expect("cuBLAS SGEMM runs");
    let sgemm_max = finite_error(&sgemm);
    let specials = |c: &[f64]| c.iter().filter(|x| !x.is_finite()).count();
    println!(
        "RESULT fp32-specials 64x64x256 cublas-f32 max {sgemm_max:.2} u on finite elements, {} NaN/inf elements",
        specials(&sgemm)
    );
    let mut failures = Vec::new();
    for kernel in emulated() {
        let c = match c_of(kernel.name) {
            Ok(c) => c,
            Err(why) => {
                failures.push(why);
                continue;
            }
        };
        let class = |x: f64| match x {
            x if x.is_nan() => "NaN".to_string(),
            x if x.is_infinite() || x == 0.0 => format!("{x}"),
            _ => "finite".to_string(),
        };
        let mismatched: Vec<String> = pos
            .iter()
            .zip(c.iter().zip(&sgemm))
            .filter(|(_, (x, y))| class(**x) != class(**y))
            .map(|(&(i, j), (x, y))| format!("C({i},{j}) {x} vs SGEMM {y}"))
            .collect();
        let e = finite_error(&c);
        println!(
            "RESULT fp32-specials 64x64x256 {} max {e:.2} u on finite elements, {} NaN/inf elements, {} differences from SGEMM's class{}",
            kernel.name,
            specials(&c),
            mismatched.len(),
            mismatched.first().map_or(String::new(), |f| format!(" (first: {f})"))
        );
        if !mismatched.is_empty() {
            failures.push(format!(
                "{}: {} elements' class (NaN, ±inf, ±0, finite) differs from SGEMM's",
                kernel.name,
                mismatched.len()
            ));
        }
        if e.is_nan() || e > bound(sgemm_max) {
            failures.push(format!(
                "{}: finite max {e} u above SGEMM's {sgemm_max} u",
                kernel.name
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
