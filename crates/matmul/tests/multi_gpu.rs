//! The multi-GPU layouts (cuda/multi.rs) against the CPU reference, on every GPU of the host
//! (and on 2 when there are more), awkward shapes (uneven shards, odd strides), f32, u32 (exact:
//! NCCL's u32 sum wraps like the kernels), bf16 (C in f32 and in bf16), f16 and tf32.
//!
//! `#[ignore]`d unless built with MATMUL_REQUIRE_GPU=1. At run time a host with fewer than 2
//! GPUs or without NCCL prints SKIP, unless MATMUL_REQUIRE_MULTI_GPU=1 (scripts/gpu-nccl.sh),
//! which turns that into a failure. The tests take a lock: one communicator set at a time.
//!
//! `refuses_cleanly_without_gpus_or_nccl` runs everywhere: no GPU or no NCCL is an error, never
//! a panic.

use std::sync::Mutex;

use matmul::cpu::reference;
use matmul::cuda::list_devices;
use matmul::nccl;
use matmul::nccl::multi::{self, Layout, MultiOptions};
use matmul::verify::compare_inputs;
use matmul::{AnyMatrix, COut, DType, Init, Problem};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn env_is(name: &str, value: &str) -> bool {
    std::env::var(name).as_deref() == Ok(value)
}

/// The compiled-kernel cache and the NCCL library the GPU-host scripts name
/// (`MATMUL_CACHE_DIR`, `MATMUL_NCCL_LIB`, which the `matmul` command reads): this test program
/// fills the library's config as the command does, once.
fn use_the_scripts_config() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        matmul::config::set(matmul::Config {
            cache_dir: var("MATMUL_CACHE_DIR").map(Into::into),
            nccl_lib: var("MATMUL_NCCL_LIB").map(Into::into),
            ..Default::default()
        });
    });
}

/// The GPU counts to test (all of them, and 2 when there are more), or None after SKIP.
fn gpu_counts() -> Option<Vec<usize>> {
    use_the_scripts_config();
    let found = list_devices().map(|d| d.len()).unwrap_or(0);
    let why = if found < 2 {
        Some(format!("{found} GPU(s); the multi-GPU tests need 2"))
    } else {
        nccl::library().err().map(|e| e.to_string())
    };
    if let Some(why) = why {
        if env_is("MATMUL_REQUIRE_MULTI_GPU", "1") {
            panic!("MATMUL_REQUIRE_MULTI_GPU=1 but: {why}");
        }
        println!("SKIP: {why}");
        return None;
    }
    let mut counts = vec![found];
    if found > 2 {
        counts.push(2);
    }
    Some(counts)
}

/// Shapes with uneven shards for 2, 3 and 4 GPUs and rows that are not 16-byte multiples.
const SHAPES: &[(usize, usize, usize)] = &[(129, 67, 75), (257, 130, 301), (8, 9, 7)];

fn check_layout(layout: Layout, dtypes: &[(DType, COut)], kernel: &str, pieces: Option<usize>) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(counts) = gpu_counts() else { return };
    for &gpus in &counts {
        for &(dtype, c_out) in dtypes {
            for &(m, n, k) in SHAPES {
                let problem = Problem::new(m, n, k, dtype).with_c(c_out);
                let seed = (m * 1_000_003 + n * 1009 + k) as u64;
                let a = AnyMatrix::generate(dtype, m, k, Init::Random { seed }).unwrap();
                let b = AnyMatrix::generate(dtype, k, n, Init::Random { seed: seed + 1 }).unwrap();
                let want = reference::matmul(&problem, &a, &b).unwrap();
                let mut opts = MultiOptions::new(gpus, layout);
                opts.kernel = kernel.into();
                opts.pieces = pieces;
                let got = multi::multi_gemm(&problem, &a, &b, &opts)
                    .unwrap_or_else(|e| panic!("{} on {gpus} GPUs, {problem}: {e}", layout.name()));
                let verdict = compare_inputs(&problem, &a, &b, &got.c, &want);
                println!(
                    "RESULT multi {} gpus={gpus} kernel={} {problem}: {}",
                    layout.name(),
                    got.kernel.name,
                    if verdict.passed { "ok" } else { "MISMATCH" }
                );
                assert!(
                    verdict.passed,
                    "{} on {gpus} GPUs with {}, {problem}: {verdict:?}",
                    layout.name(),
                    got.kernel.name
                );
                if dtype == DType::U32 {
                    assert_eq!(got.c.to_f64_vec(), want.to_f64_vec(), "u32 must be exact");
                }
            }
        }
    }
}

const ALL_DTYPES: &[(DType, COut)] = &[
    (DType::F32, COut::Accumulator),
    (DType::U32, COut::Accumulator),
    (DType::Bf16, COut::Accumulator),
    (DType::Bf16, COut::Input),
    (DType::F16, COut::Accumulator),
    (DType::Tf32, COut::Accumulator),
];

#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs 2 CUDA GPUs and NCCL: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn row_split_matches_the_reference() {
    check_layout(Layout::RowSplit, ALL_DTYPES, "auto", None);
}

#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs 2 CUDA GPUs and NCCL: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn ag_gemm_matches_the_reference() {
    check_layout(Layout::AgGemm, ALL_DTYPES, "auto", None);
}

#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs 2 CUDA GPUs and NCCL: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn gemm_rs_matches_the_reference() {
    check_layout(Layout::GemmRs, ALL_DTYPES, "auto", None);
}

/// Several pieces per shard: reductions overlapping the next piece's product.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs 2 CUDA GPUs and NCCL: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn gemm_rs_in_pieces_matches_the_reference() {
    let dtypes = &[
        (DType::F32, COut::Accumulator),
        (DType::U32, COut::Accumulator),
    ];
    check_layout(Layout::GemmRs, dtypes, "auto", Some(3));
}

/// cuBLAS as the local product.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs 2 CUDA GPUs and NCCL: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn layouts_with_cublas_match_the_reference() {
    let dtypes = &[
        (DType::F32, COut::Accumulator),
        (DType::Bf16, COut::Accumulator),
    ];
    for layout in Layout::ALL {
        check_layout(layout, dtypes, "cublas", None);
    }
}

/// A large enough product to overlap for real, timed once: the three modes give positive times.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs 2 CUDA GPUs and NCCL: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn timing_reports_every_mode() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some(counts) = gpu_counts() else { return };
    let problem = Problem::new(2048, 2048, 2048, DType::Bf16);
    let a = AnyMatrix::generate(DType::Bf16, 2048, 2048, Init::Random { seed: 1 }).unwrap();
    let b = AnyMatrix::generate(DType::Bf16, 2048, 2048, Init::Random { seed: 2 }).unwrap();
    for layout in Layout::ALL {
        let t = multi::multi_time(
            &problem,
            &a,
            &b,
            &MultiOptions::new(counts[0], layout),
            1,
            3,
        )
        .unwrap();
        assert_eq!(t.overlapped.len(), 3);
        assert!(t.overlapped.iter().chain(&t.compute).all(|&s| s > 0.0));
        if layout != Layout::RowSplit {
            assert!(t.comm.iter().all(|&s| s > 0.0));
        }
    }
}

/// Without 2 GPUs or without NCCL, a clear error, never a panic.
#[test]
fn refuses_cleanly_without_gpus_or_nccl() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let found = list_devices().map(|d| d.len()).unwrap_or(0);
    let nccl_found = nccl::library().is_ok();
    if found >= 2 && nccl_found {
        println!("SKIP: this host has {found} GPUs and NCCL");
        return;
    }
    let problem = Problem::new(64, 64, 64, DType::F32);
    let a = AnyMatrix::generate(DType::F32, 64, 64, Init::Random { seed: 1 }).unwrap();
    let err = multi::multi_gemm(&problem, &a, &a, &MultiOptions::new(2, Layout::AgGemm))
        .expect_err("no 2 GPUs with NCCL here");
    println!("refused: {err}");
    if found >= 2 {
        assert!(err.to_string().contains("libnccl.so.2"), "{err}");
    }
    if !nccl_found {
        let e = nccl::library().unwrap_err().to_string();
        assert!(e.contains("libnccl.so.2"), "{e}");
    }
}
