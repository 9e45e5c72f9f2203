//! The int8 measurements beside the byte-split kernels (issue 37), on the GPU: cuBLASLt's int8
//! GEMM (the bench's `cublaslt-int8` ceiling row) checked once against a CPU i32 reference, and
//! the byte-split pre-pass timed alone against the whole product, the most that splitting on the
//! fly could save. Ignored unless built with MATMUL_REQUIRE_GPU=1 (build.rs), as tests/gpu.rs; on
//! the GPU host: `dist/gpu/bin/test-gpu_int8 --include-ignored --nocapture` (scripts/gpu-int8.sh).
//! `MATMUL_PREPASS_SIZES` (comma-separated n, default 2048,4096,8192,16384) sets the sizes of
//! the pre-pass timing; `MATMUL_TEST_SMALL=1` keeps it to 2048.

use matmul::matrix::SplitMix64;
use matmul::{AnyMatrix, Backend, CudaBackend, DType, Init, Inputs, Problem, RunOptions};

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

fn random_i8(len: usize, seed: u64) -> Vec<i8> {
    let mut rng = SplitMix64::new(seed);
    (0..len).map(|_| rng.next_u64() as u8 as i8).collect()
}

/// C = A·B in i32 with A m×k and B given as Bᵀ (n×k), both row-major.
fn reference(m: usize, n: usize, k: usize, a: &[i8], bt: &[i8]) -> Vec<i32> {
    let mut c = vec![0i32; m * n];
    for i in 0..m {
        for j in 0..n {
            let (ra, rb) = (&a[i * k..][..k], &bt[j * k..][..k]);
            c[i * n + j] = ra.iter().zip(rb).map(|(&x, &y)| x as i32 * y as i32).sum();
        }
    }
    c
}

/// cuBLASLt's int8 GEMM (s8·s8 → s32, the TN layout) equals the CPU's i32 product bit for bit on
/// shapes with edges against every tile (m odd, n and k multiples of 4 but not of 8 or 16), on
/// the extremes (-128 and 127 everywhere: k·128² stays within i32 at these k), with C poisoned
/// before the call; a shape its leading dimensions refuse is an error naming the rule.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn cublaslt_int8_matches_the_cpu() {
    let Some(backend) = gpu() else { return };
    let mut failures = Vec::new();
    for (m, n, k) in [
        (1, 4, 4),
        (3, 12, 20),
        (67, 36, 132),
        (129, 260, 516),
        (256, 256, 1024),
    ] {
        let cases: [(&str, Vec<i8>, Vec<i8>); 3] = [
            ("random", random_i8(m * k, 1), random_i8(n * k, 2)),
            ("-128s", vec![-128; m * k], vec![-128; n * k]),
            ("127 x -128", vec![127; m * k], vec![-128; n * k]),
        ];
        for (what, a, bt) in cases {
            let want = reference(m, n, k, &a, &bt);
            match backend.cublaslt_int8((m, n, k), &a, &bt) {
                Ok(got) if got == want => {}
                Ok(got) => {
                    let bad = got.iter().zip(&want).filter(|(g, w)| g != w).count();
                    let first = got.iter().zip(&want).position(|(g, w)| g != w).unwrap();
                    failures.push(format!(
                        "{m}x{n}x{k} {what}: {bad} of {} wrong, first at {first}: got {:#x}, want {:#x}",
                        m * n,
                        got[first],
                        want[first]
                    ));
                }
                Err(e) => failures.push(format!("{m}x{n}x{k} {what}: {e}")),
            }
        }
    }
    let refused = backend.cublaslt_int8((4, 5, 8), &[0; 32], &[0; 40]);
    match refused {
        Err(e) if e.to_string().contains("multiples of 4") => {}
        other => failures.push(format!("n = 5 should be refused by rule, got {other:?}")),
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // And the timing entry point runs and gives positive times.
    let t = backend
        .time_cublaslt_int8((256, 256, 1024), 2, 1, 3)
        .unwrap();
    assert!(
        t.len() == 3 && t.iter().all(|&s| s > 0.0 && s.is_finite()),
        "{t:?}"
    );
    println!("RESULT cuBLASLt int8 matches the CPU i32 reference on 5 shapes x 3 inputs");
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The byte-split pre-pass (`u8x4_split`, writing A's and Bᵀ's byte planes) timed alone against
/// the whole product of the fastest byte-split kernel this device runs (wgmma-u8x4-tma on sm_90a,
/// else mma-u8x4), n³ at 2048..16384, inputs rotated past twice the L2 as the bench does. Prints
/// one `PREPASS` line per size: the pre-pass's share of the product is the most that splitting on
/// the fly (from the shared tiles, no planes) could save, and `on-the-fly bound` the u32 rate the
/// product would reach if the pre-pass cost nothing. Asserts only what must hold: both times
/// positive, the pre-pass shorter than the product that contains it.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn u8x4_prepass_share_of_the_product() {
    let Some(backend) = gpu() else { return };
    let sizes: Vec<usize> = match std::env::var("MATMUL_PREPASS_SIZES") {
        Ok(s) => s
            .split(',')
            .map(|x| x.trim().parse().expect("MATMUL_PREPASS_SIZES: sizes"))
            .collect(),
        Err(_) if std::env::var("MATMUL_TEST_SMALL").is_ok() => vec![2048],
        Err(_) => vec![2048, 4096, 8192, 16384],
    };
    let name = if backend.arch() == "sm_90a" {
        "wgmma-u8x4-tma"
    } else {
        "mma-u8x4"
    };
    let kernel = matmul::find(name).unwrap();
    let l2 = backend.info().l2_bytes.max(1);
    println!(
        "PREPASS kernel     n   sets   prepass_ms   product_ms   share   product_TOPS   on-the-fly bound TOPS"
    );
    for n in sizes {
        let problem = Problem::square(n, DType::U32);
        let set_bytes = 2 * n * n * 4;
        let sets = (2 * l2).div_ceil(set_bytes).clamp(1, 8);
        let inputs: Vec<Inputs> = (0..sets as u64)
            .map(|s| Inputs {
                a: AnyMatrix::generate(DType::U32, n, n, Init::Random { seed: 2 * s }).unwrap(),
                b: AnyMatrix::generate(DType::U32, n, n, Init::Random { seed: 2 * s + 1 }).unwrap(),
            })
            .collect();
        let iters = if n >= 16384 { 6 } else { 20 };
        let prepass = backend
            .time_byte_split_prepass(kernel, &problem, &inputs, 3, iters)
            .unwrap_or_else(|e| panic!("{name} pre-pass at {n}: {e}"));
        let product = backend
            .time(kernel, &problem, &inputs, 3, iters, RunOptions::default())
            .unwrap_or_else(|e| panic!("{name} at {n}: {e}"));
        let (p, t) = (median(prepass), median(product));
        assert!(p > 0.0 && t > 0.0, "{name} at {n}: times {p} {t}");
        assert!(
            p < t,
            "{name} at {n}: the pre-pass ({p} s) outlasts the product ({t} s)"
        );
        let tops = |s: f64| problem.flops() / s / 1e12;
        println!(
            "PREPASS {name} {n:>6} {sets:>4} {:>12.3} {:>12.3} {:>6.1}% {:>14.1} {:>23.1}",
            p * 1e3,
            t * 1e3,
            100.0 * p / t,
            tops(t),
            tops(t - p)
        );
    }
}
