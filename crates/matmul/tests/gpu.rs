//! Every CUDA kernel of the registry (cuBLAS included) × each of its dtypes × awkward shapes ×
//! all four op(A)/op(B) combinations, on the GPU, against `cpu::reference` through
//! `verify::compare` (u32 also bit for bit). Plus the Mojo puzzle configurations (TILE 3), tile
//! overrides, the poisoning of C, timing, and errors that must not be panics.
//!
//! The tests that need a GPU are `#[ignore]`d, so that without one `cargo test` counts them as
//! ignored, with the reason, not as passed; built with MATMUL_REQUIRE_GPU=1 (build.rs) they are
//! not. Run with `--include-ignored` and no GPU, each prints `SKIP: <reason>` and passes, unless
//! MATMUL_REQUIRE_GPU=1 (then it fails); scripts/gpu-check.sh passes `--include-ignored`.
//! MATMUL_TEST_SMALL=1 keeps only small shapes, =tiny five of them (for compute-sanitizer runs).
//! `--nocapture` prints one RESULT line per kernel and dtype.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use matmul::cpu::reference;
use matmul::cuda::{self, CudaBackend};
use matmul::matrix::{POISON_BF16, POISON_F16, POISON_F32, POISON_U32};
use matmul::registry::{Constraint, Geometry, KERNELS};
use matmul::verify::{compare, compare_inputs};

#[path = "support/views.rs"]
mod views;
use matmul::{
    open_backend, AnyMatrix, Backend, BackendChoice, BackendKind, COut, DType, Init, Inputs,
    KernelSpec, Op, Problem, RunOptions,
};

const OPS: [(Op, Op); 4] = [
    (Op::N, Op::N),
    (Op::N, Op::T),
    (Op::T, Op::N),
    (Op::T, Op::T),
];

/// (m, n, k): degenerate, a long K with m = n = 1, a K whose packed row needs more than 48 KiB of
/// shared memory (rowpack / elepack opt in), odd, the 16-tile edge ±1, the 64 edge ±1, k = 1 with
/// a wide C, non-square, the SIMT ladder's 128 and 256 edges ±1 with K off its 4-element
/// vectors, a single row or column of C, shapes whose stored rows are 16-byte multiples (what
/// TMA needs) with partial tiles on every side and an odd number of 128-row tiles (a cluster's
/// second block past the edge), one large square for the faster kernels, one with more tiles
/// than a persistent grid has blocks, and one whose persistent blocks take several tiles of more
/// k-blocks than stages (a pipeline's phase tracking across tiles: a ping-pong build that lost
/// track passed every other shape, lab/notebook.md 15n), with partial tiles on every side and
/// TMA-legal rows in every layout.
const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (1, 1, 300),
    (1, 1, 20000),
    (2, 3, 20000),
    (3, 5, 7),
    (3, 5, 1100),
    (17, 33, 65),
    (15, 15, 15),
    (16, 16, 16),
    (17, 17, 17),
    (15, 17, 16),
    (63, 63, 63),
    (64, 64, 64),
    (65, 65, 65),
    (63, 65, 64),
    (255, 257, 1),
    (266, 265, 264),
    (129, 127, 131),
    (257, 255, 33),
    (1, 300, 70),
    (300, 1, 70),
    (8, 8, 8),
    (136, 264, 72),
    (136, 263, 72),
    (264, 520, 200),
    (1024, 1024, 1024),
    (3072, 2048, 64),
    (4104, 1544, 264),
];

/// The small-M kernel's own shapes (`Constraint::SmallM`), added to [`SHAPES`] for it: M = 1, 3,
/// 16, 17, 63 and 64 (row groups of 8 full, partial and single), N and K off multiples of 8 and of
/// the 4- and 8-element vectors, N below one column block (8, 16 and 32 lanes) and across several,
/// K within one chunk of 256, across chunks, and long enough to split into many pieces (1×64×100000:
/// one column block, K in 391 pieces; 48×48×100000: six row groups), a wide N that fills the
/// machine unsplit.
const SMALL_M_SHAPES: &[(usize, usize, usize)] = &[
    (1, 64, 100_000),
    (48, 48, 100_000),
    (1, 4099, 1031),
    (3, 1001, 777),
    (16, 4096, 1024),
    (17, 257, 2049),
    (63, 129, 513),
    (64, 200, 4104),
    (64, 7, 9),
    (2, 33, 5000),
    (8, 8200, 264),
    (1, 1, 100_000),
];

fn env_is(name: &str, value: &str) -> bool {
    std::env::var(name).as_deref() == Ok(value)
}

/// MATMUL_TEST_SMALL=1: shapes up to m·n·k = 300 000; =tiny: five shapes with several K-slices
/// and edges on every side, N·N and T·T only (racecheck's cost grows with shared-memory traffic).
fn small_only() -> bool {
    env_is("MATMUL_TEST_SMALL", "1") || tiny_only()
}

fn tiny_only() -> bool {
    env_is("MATMUL_TEST_SMALL", "tiny")
}

/// (64, 64, 64) is the one whose stored rows are 16-byte multiples, so the TMA kernels run too;
/// (3, 5, 1100) the one long enough in K for the split-K kernels to split it.
const TINY: &[(usize, usize, usize)] = &[
    (3, 5, 7),
    (3, 5, 1100),
    (17, 33, 65),
    (65, 65, 65),
    (63, 65, 64),
    (64, 64, 64),
];

/// Set in the child process that [`a_faulting_kernel_loses_the_context_cleanly`] starts: the
/// child runs the fault itself.
const FAULT_CHILD: &str = "MATMUL_TEST_FAULT_CHILD";

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

/// The device, or None after printing SKIP (a failure under MATMUL_REQUIRE_GPU=1).
fn gpu() -> Option<CudaBackend> {
    use_the_scripts_cache();
    match CudaBackend::new(0) {
        Ok(b) => Some(b),
        Err(e) => {
            if env_is("MATMUL_REQUIRE_GPU", "1") {
                panic!("MATMUL_REQUIRE_GPU=1 but there is no usable GPU: {e}");
            }
            println!("SKIP: {e}");
            None
        }
    }
}

/// Inputs and the reference result of one problem, computed once per test binary.
struct Case {
    a: AnyMatrix,
    b: AnyMatrix,
    want: AnyMatrix,
}

type CaseCell = Arc<OnceLock<Arc<Case>>>;

fn case(problem: &Problem) -> Arc<Case> {
    static CASES: OnceLock<Mutex<HashMap<Problem, CaseCell>>> = OnceLock::new();
    let cell = CASES
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(*problem)
        .or_default()
        .clone();
    cell.get_or_init(|| {
        let op_code = (problem.op_a == Op::T) as u64 * 2 + (problem.op_b == Op::T) as u64;
        let seed = (problem.m as u64 * 1_000_003 + problem.n as u64 * 1009 + problem.k as u64) * 4
            + op_code;
        let (ar, ac) = problem.a_stored();
        let (br, bc) = problem.b_stored();
        let a = AnyMatrix::generate(problem.dtype, ar, ac, Init::Random { seed }).unwrap();
        let b = AnyMatrix::generate(
            problem.dtype,
            br,
            bc,
            Init::Random {
                seed: seed ^ 0x5555,
            },
        )
        .unwrap();
        let want = reference::matmul(problem, &a, &b).unwrap();
        Arc::new(Case { a, b, want })
    })
    .clone()
}

/// The shapes `kernel` is tested on: all but the large one for one-thread-per-row kernels (a
/// thread walks all of N·K there); under MATMUL_TEST_SMALL only small ones.
fn shapes_for(kernel: &KernelSpec) -> Vec<(usize, usize, usize)> {
    let per_row = matches!(
        kernel.cuda_source().map(|s| s.geometry),
        Some(Geometry::RowPerThread { .. })
    );
    let small_m = kernel.constraints.contains(&Constraint::SmallM);
    SHAPES
        .iter()
        .chain(SMALL_M_SHAPES.iter().filter(|_| small_m))
        .copied()
        .filter(|&(m, n, k)| {
            let large = m * n * k > 20_000_000;
            let small = m * n * k <= 300_000;
            !(large && per_row)
                && (!small_only() || small)
                && (!tiny_only() || TINY.contains(&(m, n, k)))
        })
        .collect()
}

/// The large shape runs with N·N and T·T only (its reference is the costly part).
fn ops_for(m: usize, n: usize, k: usize) -> &'static [(Op, Op)] {
    if m * n * k > 20_000_000 || tiny_only() {
        &[(Op::N, Op::N), (Op::T, Op::T)]
    } else {
        &OPS
    }
}

/// The rule `can_run` must give for a shape this kernel cannot run, or None if it must run it.
fn expected_refusal(
    kernel: &KernelSpec,
    problem: &Problem,
    backend: &CudaBackend,
    opts: &RunOptions,
) -> Option<&'static str> {
    for c in kernel.constraints {
        match c {
            Constraint::FitsOneBlock => {
                let tpb = kernel.tile(opts).unwrap_or(0) as usize;
                if problem.m.max(problem.n).max(problem.k) > tpb {
                    return Some("must cover the matrix");
                }
            }
            Constraint::KFitsSharedMemory => {
                let limit = backend.limits().unwrap().max_shared_per_block;
                if problem.k * problem.dtype.input_bytes() > limit {
                    return Some("shared memory");
                }
            }
            Constraint::Sm90a => {
                if !backend.limits().unwrap().sm90a {
                    return Some("needs sm_90a");
                }
            }
            Constraint::TcTf32Layout => {
                if problem.op_a == Op::T && problem.op_b == Op::N {
                    return Some("op(A)=N or op(B)=T");
                }
            }
            Constraint::SmallM => {
                if problem.m > 64 {
                    return Some("m must be at most 64");
                }
            }
        }
    }
    None
}

/// Runs `kernel` on one problem and returns a failure description, or None if it verified.
fn verify(
    backend: &CudaBackend,
    kernel: &KernelSpec,
    problem: &Problem,
    opts: RunOptions,
) -> Option<String> {
    let label = format!("{} {} {problem}", kernel.name, opts.label());
    let c = case(problem);
    match backend.run(kernel, problem, &c.a, &c.b, opts) {
        Err(e) => Some(format!("{label}: error: {e}")),
        Ok(got) => {
            let v = compare_inputs(problem, &c.a, &c.b, &got, &c.want);
            if !v.passed {
                Some(format!("{label}: {v:?}"))
            } else if problem.dtype == DType::U32 && got != c.want {
                Some(format!("{label}: u32 result is not bit-exact"))
            } else {
                None
            }
        }
    }
}

/// One problem as the sweeps take it: `Ok(true)` if the kernel ran it and it verified, `Ok(false)`
/// if it was refused with the rule [`expected_refusal`] names, else a failure description (a
/// wrong result, an unexpected refusal, or a run that should have been refused).
fn run_or_refuse(
    backend: &CudaBackend,
    kernel: &KernelSpec,
    problem: &Problem,
    opts: RunOptions,
) -> Result<bool, String> {
    let label = format!("{} {} {problem}", kernel.name, opts.label());
    match (
        backend.check(kernel, problem, opts),
        expected_refusal(kernel, problem, backend, &opts),
    ) {
        (Ok(()), None) => verify(backend, kernel, problem, opts).map_or(Ok(true), Err),
        (Err(e), Some(rule)) if e.to_string().contains(rule) => Ok(false),
        (Err(e), _) => Err(format!("{label}: unexpected refusal: {e}")),
        (Ok(()), Some(rule)) => Err(format!("{label}: should be refused ({rule})")),
    }
}

/// The whole sweep for one kernel: every dtype, shape and op combination.
fn sweep(name: &str) {
    let Some(backend) = gpu() else { return };
    let kernel = matmul::find(name).unwrap();
    assert_eq!(kernel.backend, BackendKind::Cuda);
    let opts = RunOptions::default();
    let mut failures = Vec::new();
    // Each dtype with C in the accumulator type, and 16-bit dtypes also with C in the input
    // dtype where the kernel writes it.
    let runs = kernel.dtypes.iter().flat_map(|&d| {
        let narrow = d.is_16_bit() && kernel.writes_narrow_c();
        [(d, COut::Accumulator)]
            .into_iter()
            .chain(narrow.then_some((d, COut::Input)))
    });
    for (dtype, c_out) in runs {
        let (mut passed, mut refused) = (0, 0);
        for (m, n, k) in shapes_for(kernel) {
            for &(op_a, op_b) in ops_for(m, n, k) {
                let problem = Problem::new(m, n, k, dtype)
                    .with_ops(op_a, op_b)
                    .with_c(c_out);
                match run_or_refuse(&backend, kernel, &problem, opts) {
                    Ok(true) => passed += 1,
                    Ok(false) => refused += 1,
                    Err(f) => failures.push(f),
                }
            }
        }
        let types = Problem::new(1, 1, 1, dtype)
            .with_c(c_out)
            .types()
            .to_string();
        println!("RESULT {name:<14} {types:<5} {passed:>4} passed {refused:>3} refused (expected)");
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

macro_rules! kernel_tests {
    ($($test:ident => $name:literal),* $(,)?) => {
        $(
            #[test]
            #[cfg_attr(not(matmul_require_gpu), ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored")]
            fn $test() {
                sweep($name);
            }
        )*
        /// Adding a CUDA kernel to the registry must add it here.
        #[test]
        fn every_cuda_kernel_has_a_sweep() {
            let covered = [$($name),*];
            for k in KERNELS.iter().filter(|k| k.backend == BackendKind::Cuda) {
                assert!(covered.contains(&k.name), "no GPU sweep for `{}`: add it to kernel_tests!", k.name);
            }
        }
    };
}

kernel_tests! {
    sweep_row_global => "row-global",
    sweep_row => "row",
    sweep_rowpack => "rowpack",
    sweep_ele => "ele",
    sweep_elepack => "elepack",
    sweep_naive => "naive",
    sweep_single_block => "single-block",
    sweep_tiled => "tiled",
    sweep_tiled_async => "tiled-async",
    sweep_row_rs => "row@rs",
    sweep_ele_rs => "ele@rs",
    sweep_naive_rs => "naive@rs",
    sweep_tiled_rs => "tiled@rs",
    sweep_blocktile_1d => "blocktile-1d",
    sweep_blocktile_2d => "blocktile-2d",
    sweep_vectorized => "vectorized",
    sweep_vectorized_padded => "vectorized-padded",
    sweep_warptile => "warptile",
    sweep_multistage => "multistage",
    sweep_multistage_raster => "multistage-raster",
    sweep_simt_tma => "simt-tma",
    sweep_mma_sync => "mma-sync",
    sweep_mma_sync_wide => "mma-sync-wide",
    sweep_wgmma => "wgmma",
    sweep_wgmma_n128 => "wgmma-n128",
    sweep_wgmma_n64 => "wgmma-n64",
    sweep_wgmma_cluster => "wgmma-cluster",
    sweep_wgmma_tf32 => "wgmma-tf32",
    sweep_wgmma_tf32_cluster => "wgmma-tf32-cluster",
    sweep_wgmma_3xtf32 => "wgmma-3xtf32",
    sweep_mma_u8x4 => "mma-u8x4",
    sweep_wgmma_u8x4 => "wgmma-u8x4",
    sweep_wgmma_u8x4_tma => "wgmma-u8x4-tma",
    sweep_decode => "decode",
    sweep_cublas => "cublas",
}

/// The byte-split kernels (families u8x4 and u8x4-tma: exact u32 on the int8 tensor cores).
fn u8x4_kernels() -> impl Iterator<Item = &'static KernelSpec> {
    KERNELS.iter().filter(|k| k.is_byte_split())
}

/// The byte-split kernels on problems of more tiles than an H100 has SMs (17921×257: 141 × 2
/// tiles of 128×256, 282 of 128×128), so that a persistent block walks several tiles and its
/// producer runs into the next tile while its consumers store the last; edges on both sides,
/// N·N and T·T, C poisoned, bit for bit against the CPU reference.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn u8x4_many_tiles_per_block() {
    let Some(backend) = gpu() else { return };
    let (m, n, k) = if small_only() {
        (17_921, 257, 33)
    } else {
        (17_921, 257, 130)
    };
    let mut failures = Vec::new();
    let mut ran = 0;
    for kernel in u8x4_kernels() {
        for (op_a, op_b) in [(Op::N, Op::N), (Op::T, Op::T)] {
            let problem = Problem::new(m, n, k, DType::U32).with_ops(op_a, op_b);
            if backend
                .check(kernel, &problem, RunOptions::default())
                .is_err()
            {
                assert!(
                    kernel.constraints.contains(&Constraint::Sm90a),
                    "{}",
                    kernel.name
                );
                continue;
            }
            let (ar, ac) = problem.a_stored();
            let (br, bc) = problem.b_stored();
            let a = AnyMatrix::generate(DType::U32, ar, ac, Init::Random { seed: 11 }).unwrap();
            let b = AnyMatrix::generate(DType::U32, br, bc, Init::Random { seed: 12 }).unwrap();
            let want = reference::matmul(&problem, &a, &b).unwrap();
            ran += 1;
            match backend.run(kernel, &problem, &a, &b, RunOptions::default()) {
                Ok(got) if got == want => {}
                Ok(got) => {
                    let (g, w) = (got.as_u32().unwrap(), want.as_u32().unwrap());
                    let bad = g.data.iter().zip(&w.data).filter(|(x, y)| x != y).count();
                    let first = g.data.iter().zip(&w.data).position(|(x, y)| x != y);
                    failures.push(format!(
                        "{} {problem}: {bad} of {} elements differ (first at {first:?})",
                        kernel.name,
                        w.data.len()
                    ));
                }
                Err(e) => failures.push(format!("{} {problem}: {e}", kernel.name)),
            }
        }
    }
    println!("RESULT u8x4-many-tiles {ran} runs");
    assert!(ran > 0, "no byte-split kernel ran");
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The byte-split kernels at K = 70,000, past the 66,051 where a sum of u8·u8 products first
/// overflows 32 bits: their s32 accumulators must wrap (mma without .satfinite), and the shifted
/// total must still be the wrapping u32 product, bit for bit. All-0xFFFFFFFF inputs (every byte
/// 255, every accumulator wrapping; C = k mod 2^32 everywhere) and random ones, every op(A)/op(B),
/// a single output, a block with partial tiles on both sides, and six tiles that the TMA kernel
/// splits over K (partial slabs summed mod 2^32), C poisoned first (`run`).
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn u8x4_wraps_exactly_past_k_66051() {
    let Some(backend) = gpu() else { return };
    let k = 70_000;
    let shapes: &[(usize, usize)] = if small_only() {
        &[(3, 5)]
    } else {
        &[(1, 1), (3, 5), (130, 70), (260, 300)]
    };
    let mut failures = Vec::new();
    let mut ran = 0;
    for kernel in u8x4_kernels() {
        for &(m, n) in shapes {
            for &(op_a, op_b) in &OPS {
                let problem = Problem::new(m, n, k, DType::U32).with_ops(op_a, op_b);
                if let Err(e) = backend.check(kernel, &problem, RunOptions::default()) {
                    // Only the Hopper kernels may be refused, and only off Hopper.
                    assert!(
                        kernel.constraints.contains(&Constraint::Sm90a)
                            && !backend.limits().unwrap().sm90a,
                        "{}: {e}",
                        kernel.name
                    );
                    continue;
                }
                let (ar, ac) = problem.a_stored();
                let (br, bc) = problem.b_stored();
                let ones = |r, c| AnyMatrix::U32(matmul::Matrix::filled(r, c, u32::MAX).unwrap());
                let seed =
                    (m * 31 + n) as u64 * 4 + (op_a == Op::T) as u64 * 2 + (op_b == Op::T) as u64;
                let random = |r, c, s| {
                    AnyMatrix::generate(DType::U32, r, c, Init::Random { seed: s }).unwrap()
                };
                for (what, a, b) in [
                    ("all 0xFFFFFFFF", ones(ar, ac), ones(br, bc)),
                    ("random", random(ar, ac, seed), random(br, bc, seed ^ 0x77)),
                    (
                        "0xFFFFFFFF · random",
                        ones(ar, ac),
                        random(br, bc, seed ^ 0x99),
                    ),
                ] {
                    let want = reference::matmul(&problem, &a, &b).unwrap();
                    if what == "all 0xFFFFFFFF" {
                        // k·(2^32 − 1)^2 ≡ k (mod 2^32): the reference agrees with the arithmetic.
                        let w = want.as_u32().unwrap();
                        assert!(w.data.iter().all(|&v| v == k as u32), "reference");
                    }
                    ran += 1;
                    match backend.run(kernel, &problem, &a, &b, RunOptions::default()) {
                        Ok(got) if got == want => {}
                        Ok(got) => {
                            let (g, w) = (got.as_u32().unwrap(), want.as_u32().unwrap());
                            let bad = g.data.iter().zip(&w.data).filter(|(x, y)| x != y).count();
                            let first = g.data.iter().zip(&w.data).position(|(x, y)| x != y);
                            failures.push(format!(
                                "{} {problem} {what}: {bad} of {} elements differ (first at {first:?}: got {:#x}, want {:#x})",
                                kernel.name,
                                w.data.len(),
                                first.map_or(0, |i| g.data[i]),
                                first.map_or(0, |i| w.data[i]),
                            ));
                        }
                        Err(e) => failures.push(format!("{} {problem} {what}: {e}", kernel.name)),
                    }
                }
            }
        }
    }
    println!("RESULT u8x4-wrap {ran} runs");
    assert!(ran > 0, "no byte-split kernel ran");
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The byte-split kernels through the judge: every one of the 104 public Judge Girl cases'
/// signatures matches tests/data/public.out (`matmul signature --kernel <it>`'s path), and the
/// judge's kernel name selects it.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn u8x4_judge_vectors() {
    use matmul::compat::judge;
    let Some(backend) = gpu() else { return };
    let input = include_str!("../../../tests/data/public.in");
    let expected: Vec<u32> = include_str!("../../../tests/data/public.out")
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    for kernel in u8x4_kernels() {
        if kernel.constraints.contains(&Constraint::Sm90a) && !backend.limits().unwrap().sm90a {
            continue;
        }
        let sel = judge::select(&kernel.name.to_uppercase(), BackendChoice::Cuda).unwrap();
        assert_eq!(sel.kernel.name, kernel.name);
        let mut n = 0;
        for (case, want) in judge::parse_cases(input).zip(&expected) {
            let case = case.unwrap();
            let got = judge::case_signature(&backend, kernel, &case, judge::Generator::Judge)
                .unwrap_or_else(|e| panic!("{} case {n}: {e}", kernel.name));
            assert_eq!(got, *want, "{} case {n}: {case:?}", kernel.name);
            n += 1;
        }
        assert_eq!(n, expected.len());
        println!("RESULT judge {n} cases on {}", kernel.name);
    }
}

/// The kernels written once in Rust through the seeds' contracts on CUDA: the 104 public Judge
/// Girl cases on each (u32, tests/data/public.out), and the six Mojo puzzles on the generated
/// twin of each puzzle's kernel, at its TPB (exact outputs).
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn rs_kernels_pass_the_judge_vectors_and_the_puzzles() {
    use matmul::compat::judge;
    use matmul::compat::puzzles::{config, PuzzleName};
    let Some(backend) = gpu() else { return };
    let input = include_str!("../../../tests/data/public.in");
    let expected: Vec<u32> = include_str!("../../../tests/data/public.out")
        .split_whitespace()
        .map(|v| v.parse().unwrap())
        .collect();
    let generated: Vec<&KernelSpec> = KERNELS
        .iter()
        .filter(|k| k.backend == BackendKind::Cuda && k.name.ends_with("@rs"))
        .collect();
    assert!(generated.len() >= 4, "the @rs kernels: {generated:?}");
    for kernel in &generated {
        let mut n = 0;
        for (case, want) in judge::parse_cases(input).zip(&expected) {
            let case = case.unwrap();
            let got = judge::case_signature(&backend, kernel, &case, judge::Generator::Judge)
                .unwrap_or_else(|e| panic!("{} case {n}: {e}", kernel.name));
            assert_eq!(got, *want, "{} case {n}: {case:?}", kernel.name);
            n += 1;
        }
        assert_eq!(n, expected.len());
        println!("RESULT judge {n} cases on {}", kernel.name);
    }
    let mut puzzles = 0;
    for name in PuzzleName::ALL {
        let p = config(name);
        let Ok(kernel) = matmul::find(&format!("{}@rs", p.kernel)) else {
            continue;
        };
        let got = p
            .run_kernel(kernel, &backend)
            .unwrap_or_else(|e| panic!("{name:?} on {}: {e}", kernel.name));
        assert_eq!(got, p.expected().unwrap(), "{name:?} on {}", kernel.name);
        puzzles += 1;
    }
    assert!(puzzles >= 4, "puzzles through @rs kernels: {puzzles}");
    println!("RESULT puzzles {puzzles} through @rs kernels");
}

/// Tile overrides (RunOptions.tile): every 2-D tile kernel at several TILEs, single-block at
/// larger TPBs, and the refusals of TILEs a block cannot hold.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn tile_overrides() {
    let Some(backend) = gpu() else { return };
    let mut failures = Vec::new();
    let mut ran = 0;
    for kernel in KERNELS.iter().filter(|k| k.cuda_source().is_some()) {
        let Some(geometry) = kernel.cuda_source().map(|s| s.geometry) else {
            continue;
        };
        let (tiles, shapes): (&[u32], &[(usize, usize, usize)]) = match geometry {
            Geometry::Tile2d { .. } => (&[1, 3, 8, 32], &[(3, 5, 7), (17, 33, 65), (40, 31, 33)]),
            Geometry::SingleBlock { .. } => (
                &[2, 16, 32],
                &[(2, 2, 2), (5, 7, 3), (16, 15, 16), (32, 32, 32)],
            ),
            _ => continue,
        };
        for &dtype in kernel.dtypes {
            for &tile in tiles {
                for &(m, n, k) in shapes {
                    for &(op_a, op_b) in &[(Op::N, Op::N), (Op::T, Op::T)] {
                        let problem = Problem::new(m, n, k, dtype).with_ops(op_a, op_b);
                        let opts = RunOptions::tile(tile);
                        let expected = expected_refusal(kernel, &problem, &backend, &opts);
                        match (backend.check(kernel, &problem, opts), expected) {
                            (Ok(()), None) => {
                                ran += 1;
                                failures.extend(verify(&backend, kernel, &problem, opts));
                            }
                            (Err(e), Some(rule)) if e.to_string().contains(rule) => {}
                            (r, _) => failures.push(format!(
                                "{} tile {tile} {problem}: check gave {r:?}, expected {expected:?}",
                                kernel.name
                            )),
                        }
                    }
                }
            }
            // More threads than a block can have, and a zero tile: errors, not launches or panics.
            let problem = Problem::new(8, 8, 8, dtype);
            for tile in [0, 33] {
                let c = case(&problem);
                match backend.run(kernel, &problem, &c.a, &c.b, RunOptions::tile(tile)) {
                    Err(matmul::Error::Unsupported(u)) => {
                        assert!(u.rule.contains("TILE") || u.rule.contains("threads"), "{u}")
                    }
                    other => failures.push(format!(
                        "{} tile {tile}: expected a refusal, got {other:?}",
                        kernel.name
                    )),
                }
            }
        }
    }
    println!("RESULT tile-overrides {ran} runs");
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The split tail (13_multistage.cu, `multistage_tail`): shapes whose last tiles the backend
/// computes in pieces drawn from a queue on this device, at the registry's tiling and every tiling
/// of the built-in tune tables, f32 and u32, against the reference with C poisoned first. Each
/// problem runs twice on one backend: the second run reuses the workspace, whose queue and counts
/// the first must have left at zero (a stale queue skips pieces, whose tiles stay poisoned). Each
/// kernel must split at least one of them, or the test would test nothing.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn split_tail() {
    let Some(backend) = gpu() else { return };
    // The plan splits problems of two waves or more of tiles at least cuda::TAIL_MIN_SLICES long,
    // which at the ★ tilings' 128×256 means m·n·k of 35·10⁹ and more: too slow for the reference
    // here, so both kernels also run at multistage's registry tiling, 128×128. 2100×2100×4100:
    // 289 = 2·132 + 25 tiles of it, edge tiles on two sides, K's last slice partial, tail tiles in
    // 2 pieces; 2100×2100×2100: pieces of one whole tile (132 slices). Under MATMUL_TEST_SMALL
    // (compute-sanitizer) the first alone, at that tiling alone, and under =tiny (racecheck) f32
    // N·N alone, once, and for `multistage` alone (the two kernels' tails are the same code).
    // 130×70×8200: split-K (launch.rs, simt_split_k), two tiles (a partial one on each side) of
    // 513 slices (the last one partial), each in pieces of its own slabs summed by
    // multistage_reduce; 1×300×5001: one row, pieces whose k ranges end mid-slice.
    let shapes: &[(usize, usize, usize)] = if small_only() {
        &[(2100, 2100, 4100), (130, 70, 8200)]
    } else {
        &[
            (2100, 2100, 4100),
            (2100, 2100, 2100),
            (130, 70, 8200),
            (1, 300, 5001),
        ]
    };
    let square: matmul::Tiling = "128x128x16/4x4/w64x32n2/s3/p4".parse().unwrap();
    let mut failures = Vec::new();
    let kernels = KERNELS.iter().filter(|k| k.tail_entry_point().is_some());
    for kernel in kernels.take(if tiny_only() { 1 } else { usize::MAX }) {
        let (mut split, mut split_k) = (0, 0);
        let dtypes = if tiny_only() {
            &[DType::F32][..]
        } else {
            kernel.dtypes
        };
        for &dtype in dtypes {
            let mut options = vec![RunOptions::tiling(square)];
            for e in matmul::tune::builtin_tables()
                .into_iter()
                .flat_map(|t| t.entries)
                .filter(|e| e.kernel == kernel.name && e.dtype == dtype)
                .map(|e| e.tiling)
                .chain([kernel
                    .tiling(&RunOptions::default())
                    .expect("a SIMT kernel")])
                .filter(|_| !small_only())
            {
                if !options.contains(&RunOptions::tiling(e)) {
                    options.push(RunOptions::tiling(e));
                }
            }
            for opts in options {
                for &(m, n, k) in shapes {
                    for &(op_a, op_b) in &ops_for(m, n, k)[..if tiny_only() { 1 } else { 2 }] {
                        let problem = Problem::new(m, n, k, dtype).with_ops(op_a, op_b);
                        let label = format!("{} {} {problem}", kernel.name, opts.label());
                        match backend.tail_split(kernel, &problem, opts) {
                            Ok(Some(_)) => split += 1,
                            Ok(None) => {}
                            Err(e) => failures.push(format!("{label}: planning the split: {e}")),
                        }
                        match backend.split_k_plan(kernel, &problem, opts) {
                            Ok(1) => {}
                            Ok(_) => split_k += 1,
                            Err(e) => failures.push(format!("{label}: planning split-K: {e}")),
                        }
                        for _ in 0..if tiny_only() { 1 } else { 2 } {
                            failures.extend(verify(&backend, kernel, &problem, opts));
                        }
                    }
                }
            }
        }
        println!(
            "RESULT {:<17} {split} problems split their tail, {split_k} split-K",
            kernel.name
        );
        if split == 0 || split_k == 0 {
            failures.push(format!(
                "{}: no shape split its tail ({split}) or split K ({split_k}) on this device",
                kernel.name
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Staged operands of the SIMT kernels that read 16-byte rows (launch.rs,
/// staged_simt_operands): rows that are not 16-byte multiples copied into padded rows, and in a
/// product of 2^30 FLOPs or more a transposed operand copied transposed (13_multistage.cu's
/// `multistage_transpose`), every op combination, f32 and u32, against the reference with C
/// poisoned first. 1031×1021×517 has no stored row of a 16-byte multiple; 1028×1020×520 has all.
/// Under MATMUL_TEST_SMALL (compute-sanitizer): 1031×1021×517 alone, f32.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn staged_operands() {
    let Some(backend) = gpu() else { return };
    let kernel = matmul::registry::find("multistage-raster").unwrap();
    let shapes: &[(usize, usize, usize)] = if small_only() {
        &[(1031, 1021, 517)]
    } else {
        &[(1031, 1021, 517), (1028, 1020, 520)]
    };
    let dtypes: &[DType] = if small_only() {
        &[DType::F32]
    } else {
        &[DType::F32, DType::U32]
    };
    let mut failures = Vec::new();
    for &dtype in dtypes {
        for &(m, n, k) in shapes {
            for &(op_a, op_b) in &OPS {
                let problem = Problem::new(m, n, k, dtype).with_ops(op_a, op_b);
                assert!(
                    problem.flops() >= (1u64 << 30) as f64,
                    "{problem} stages no transpose"
                );
                failures.extend(verify(&backend, kernel, &problem, RunOptions::default()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A kernel that faults (examples/kernels/broken/oob.cu: a write far past C, run through the
/// library, not the CLI's child) is an error naming the kernel, the shape and CUDA's illegal
/// address, and leaves the backend lost: the next run, of a registry kernel, fails at once with
/// the same fault rather than hanging or returning a wrong C.
///
/// A fault loses the CUDA context of the whole process, and every test of this file shares it:
/// so the fault happens in a child process (this test binary again, running this test alone,
/// marked by [`FAULT_CHILD`]) and the test asserts on the child's exit and output. Run in the
/// same process, it failed every GPU test after it.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn a_faulting_kernel_loses_the_context_cleanly() {
    if std::env::var_os(FAULT_CHILD).is_none() {
        if gpu().is_none() {
            return;
        }
        let name = "a_faulting_kernel_loses_the_context_cleanly";
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--include-ignored", "--nocapture"])
            .args(["--test-threads", "1"])
            .env(FAULT_CHILD, "1")
            .output()
            .expect("the test binary runs again");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for line in text.lines().filter(|l| l.starts_with("RESULT")) {
            println!("{line}");
        }
        assert!(out.status.success(), "the faulting child failed:\n{text}");
        assert!(
            text.contains("RESULT fault:") && text.contains("1 passed"),
            "the child did not run the fault:\n{text}"
        );
        return;
    }
    let Some(backend) = gpu() else {
        panic!("{FAULT_CHILD} is set but there is no GPU")
    };
    // Embedded: the bundled test binary runs on a GPU host that has no checkout at the build
    // machine's path.
    let e = |s: &str| matmul::user::Expr::parse(s).unwrap();
    let kernel = matmul::user::UserKernel {
        path: "examples/kernels/broken/oob.cu".into(),
        text: include_str!("../../../examples/kernels/broken/oob.cu").into(),
        lang: matmul::user::Lang::Cuda,
        entry: "oob".into(),
        dtype: DType::F32,
        defines: Vec::new(),
        grid: [e("cdiv(N, 16)"), e("cdiv(M, 16)"), e("1")],
        block: [e("16"), e("16"), e("1")],
        shared: e("0"),
        zero_c: false,
    };
    let problem = Problem::new(64, 48, 32, DType::F32);
    let c = case(&problem);
    let err = backend
        .user_run(&kernel, &problem, &c.a, &c.b)
        .expect_err("an out-of-bounds write must fail")
        .to_string();
    println!("RESULT fault: {err}");
    for part in ["context is lost", "oob", "64x48x32", "ILLEGAL_ADDRESS"] {
        assert!(err.contains(part), "`{part}` missing from: {err}");
    }
    let naive = matmul::registry::find("naive").unwrap();
    let again = backend
        .run(naive, &problem, &c.a, &c.b, RunOptions::default())
        .expect_err("a lost context must refuse the next run");
    assert!(
        matches!(again, matmul::Error::ContextLost { .. }),
        "{again}"
    );
}

/// Tiling overrides (RunOptions.tiling, what `matmul tune` searches): every SIMT-ladder kernel at
/// a spread of its tune candidates and at every tiling of the built-in tune tables, on awkward
/// shapes, and a refusal for a broken tiling.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn tiling_overrides() {
    let Some(backend) = gpu() else { return };
    let max_shared = backend.limits().unwrap().max_shared_per_block;
    let mut failures = Vec::new();
    let (mut ran, mut refused) = (0, 0);
    // Awkward shapes; the last has every stored row a multiple of 16 bytes (NN and TT), so the
    // TMA kernel runs partial tiles too.
    let shapes: &[(usize, usize, usize)] =
        &[(3, 5, 7), (129, 65, 37), (257, 300, 64), (132, 260, 68)];
    for kernel in KERNELS {
        let Some(Geometry::BlockTile { .. }) = kernel.cuda_source().map(|s| s.geometry) else {
            continue;
        };
        for &dtype in kernel.dtypes {
            let all = matmul::tune::candidates(kernel, dtype, max_shared);
            // A deterministic spread of the candidates (the default first).
            let count = if small_only() { 3 } else { 8 };
            let mut tilings = matmul::tune::spread(&all, count);
            // And every tiling the built-in tune tables would run this kernel with.
            for e in matmul::tune::builtin_tables()
                .into_iter()
                .flat_map(|t| t.entries)
            {
                if e.kernel == kernel.name && e.dtype == dtype && !tilings.contains(&e.tiling) {
                    tilings.push(e.tiling);
                }
            }
            // And a tiling for a code path no candidate reaches: multistage's copy of A by row
            // chunks of 4 k (BK 12 with the row stride 8 mod 16 words that PAD 8 gives;
            // 13_multistage.cu, RowChunkCopy), where every candidate and table entry takes 8.
            let chunks_of_4: matmul::Tiling = "128x256x12/8x4/w64x64n2/s3/p8".parse().unwrap();
            if kernel.name.starts_with("multistage") && kernel.check_tiling(&chunks_of_4).is_ok() {
                tilings.push(chunks_of_4);
            }
            // And the default tiles under both build knobs (a register cap, ptxas -O1), so every
            // kernel's __maxnreg__ path runs, whatever the tables hold.
            let default = all[0];
            let built = default.with_build(default.launch_bounds_cap() - 8, 1);
            if !tilings.contains(&built) {
                tilings.push(built);
            }
            for tiling in tilings {
                let opts = RunOptions::tiling(tiling);
                for &(m, n, k) in shapes {
                    for &(op_a, op_b) in &[(Op::N, Op::N), (Op::T, Op::T)] {
                        let problem = Problem::new(m, n, k, dtype).with_ops(op_a, op_b);
                        // A shape the kernel refuses must be refused with its rule; every other
                        // must verify.
                        match run_or_refuse(&backend, kernel, &problem, opts) {
                            Ok(true) => ran += 1,
                            Ok(false) => refused += 1,
                            Err(f) => failures.push(f),
                        }
                    }
                }
            }
            let broken = matmul::Tiling::block(128, 128, 8, 7, 8);
            let problem = Problem::new(8, 8, 8, dtype);
            match backend.check(kernel, &problem, RunOptions::tiling(broken)) {
                Err(matmul::Error::Unsupported(u)) if u.rule.contains("TM") => {}
                other => failures.push(format!(
                    "{} tiling {broken}: expected a refusal naming TM, got {other:?}",
                    kernel.name
                )),
            }
        }
    }
    println!("RESULT tiling-overrides {ran} runs, {refused} refused (expected)");
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The expected output list of the puzzle line starting with `prefix`.
fn puzzle_expected(prefix: &str) -> Vec<f64> {
    let text = include_str!("../../../tests/data/puzzles_expected.txt");
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line in puzzles_expected.txt"));
    let list = &line[line.rfind('[').unwrap() + 1..line.rfind(']').unwrap()];
    list.split(',').map(|v| v.trim().parse().unwrap()).collect()
}

/// Mojo puzzle p16: A[i] = i, B[i] = 2i; tiled / idiomatic-tiled at TILE 3 on 9×9, naive and
/// single-block (TPB 3) on 2×2. Exact, in f32 and u32.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn puzzle_configurations() {
    let Some(backend) = gpu() else { return };
    let runs: [(&str, usize, Option<u32>, &str); 4] = [
        ("tiled", 9, Some(3), "p16 --tiled"),
        ("tiled-async", 9, Some(3), "p16 --tiled"),
        ("single-block", 2, Some(3), "p16 --naive"),
        ("naive", 2, None, "p16 --naive"),
    ];
    for (name, size, tile, line) in runs {
        let kernel = matmul::find(name).unwrap();
        let want = puzzle_expected(line);
        for dtype in [DType::F32, DType::U32] {
            let problem = Problem::square(size, dtype);
            let a = AnyMatrix::generate(dtype, size, size, Init::Arange { scale: 1 }).unwrap();
            let b = AnyMatrix::generate(dtype, size, size, Init::Arange { scale: 2 }).unwrap();
            let got = backend
                .run(kernel, &problem, &a, &b, RunOptions { tile, tiling: None })
                .unwrap_or_else(|e| panic!("{name} {problem}: {e}"));
            assert_eq!(got.to_f64_vec(), want, "{name} tile {tile:?} {problem}");
        }
    }
}

/// C is poisoned before every launch, and a poisoned C fails verification.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn output_is_poisoned_before_the_launch() {
    let Some(backend) = gpu() else { return };
    for (dtype, c_out) in [
        (DType::F32, COut::Accumulator),
        (DType::U32, COut::Accumulator),
        (DType::Bf16, COut::Input),
        (DType::F16, COut::Input),
    ] {
        let problem = Problem::new(17, 33, 65, dtype).with_c(c_out);
        let poisoned = backend.poisoned_output(&problem).unwrap();
        match &poisoned {
            AnyMatrix::F32(c) => {
                assert!(c.data.iter().all(|v| v.to_bits() == POISON_F32.to_bits()))
            }
            AnyMatrix::U32(c) => assert!(c.data.iter().all(|&v| v == POISON_U32)),
            AnyMatrix::Bf16(c) => {
                assert!(c.data.iter().all(|v| v.to_bits() == POISON_BF16.to_bits()))
            }
            AnyMatrix::F16(c) => {
                assert!(c.data.iter().all(|v| v.to_bits() == POISON_F16.to_bits()))
            }
        }
        assert_eq!(poisoned.dtype(), problem.c_dtype());
        let verdict = compare(&problem, &poisoned, &case(&problem).want);
        assert!(
            !verdict.passed,
            "an untouched poisoned C passed verification: {verdict:?}"
        );
    }
}

/// `Gemm::autotune`: the first product of a shape bucket the table has no choice for times the
/// model's top candidates and keeps the fastest in the class's table on disk (the check's cache
/// directory); the product is right (verified), and a second call runs the kept choice.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn autotune_measures_a_bucket_once_and_keeps_it() {
    let Some(backend) = gpu() else { return };
    let id = matmul::Backend::identity(&backend).expect("a CUDA device has an identity");
    let a =
        matmul::Matrix::<f32>::from_fn(777, 3333, |i, j| ((i * 7 + j) % 13) as f32 - 6.0).unwrap();
    let b =
        matmul::Matrix::<f32>::from_fn(3333, 555, |i, j| ((i + 3 * j) % 11) as f32 - 5.0).unwrap();
    let problem = Problem::new(777, 555, 3333, DType::F32);
    let first = matmul::Gemm::new(&a, &b)
        .on(&backend)
        .autotune(true)
        .verify(true)
        .run_detailed()
        .unwrap();
    assert!(first.verdict.is_some_and(|v| v.passed));
    let lookup = matmul::dispatch::tune::table_for(&id);
    let (source, table) = lookup.found.expect("the measured choice was saved");
    let kept = table
        .choice(&problem, matmul::Backend::limits(&backend).as_ref())
        .unwrap_or_else(|| panic!("no choice for {problem} in {source}"));
    assert_eq!(kept.0.name, first.kernel.name);
    let second = matmul::Gemm::new(&a, &b)
        .on(&backend)
        .autotune(true)
        .run_detailed()
        .unwrap();
    assert_eq!(second.kernel.name, first.kernel.name);
    assert_eq!(second.c, first.c);
    println!(
        "RESULT autotune {problem}: {} (kept in {source})",
        first.kernel.name
    );
}

/// Plans on device buffers: each kernel family (a SIMT rung with split-K, wgmma with split-K,
/// the byte split with split-K, decode, mma.sync, cuBLAS) with α = 1, β = 0 on a C poisoned with
/// NaN / 0xDEADBEEF (never read), and with α, β ≠ (1, 0) on a pre-filled C; run twice on the
/// same buffers (operands reused) and once on new ones; every result against the CPU reference.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn plans_run_on_device_buffers() {
    use matmul::{DeviceMatrix, Plan, Scale};
    let Some(backend) = gpu() else { return };
    let sm90a = backend.limits().unwrap().sm90a;
    let cases: &[(&str, Problem)] = &[
        (
            "multistage-raster",
            Problem::new(64, 64, 20_000, DType::F32),
        ),
        (
            "multistage-raster",
            Problem::new(129, 127, 131, DType::U32).with_ops(Op::T, Op::N),
        ),
        (
            "wgmma",
            Problem::new(136, 264, 4096, DType::Bf16).with_c(COut::Input),
        ),
        ("wgmma-tf32", Problem::new(136, 264, 2048, DType::Tf32)),
        ("wgmma-u8x4-tma", Problem::new(130, 70, 5000, DType::U32)),
        (
            "decode",
            Problem::new(3, 1001, 777, DType::F16).with_ops(Op::N, Op::T),
        ),
        ("mma-sync", Problem::new(65, 65, 65, DType::F16)),
        (
            "cublas",
            Problem::new(100, 60, 70, DType::F32).with_ops(Op::T, Op::T),
        ),
        ("auto", Problem::new(257, 255, 33, DType::Bf16)),
    ];
    let mut ran = 0;
    for &(name, p) in cases {
        if name.starts_with("wgmma") && !sm90a {
            continue;
        }
        let (ar, ac) = p.a_stored();
        let (br, bc) = p.b_stored();
        let a = AnyMatrix::generate(p.dtype, ar, ac, Init::Random { seed: 31 }).unwrap();
        let b = AnyMatrix::generate(p.dtype, br, bc, Init::Random { seed: 32 }).unwrap();
        let want = reference::matmul(&p, &a, &b).unwrap();
        let wide = reference::matmul(&p.with_c(COut::Accumulator), &a, &b).unwrap();
        for scale in [
            Scale::ONE,
            Scale {
                alpha: 3.0,
                beta: 2.0,
            },
        ] {
            let plan = Plan::builder(&backend, p)
                .kernel(name)
                .alpha(scale.alpha)
                .beta(scale.beta)
                .build();
            let plan = plan.unwrap_or_else(|e| panic!("{name} {p}: {e}"));
            let da = backend.upload(&a).unwrap();
            let db = backend.upload(&b).unwrap();
            // C before: the poison (β = 0 must not read it), or values β scales.
            let before = if scale.is_plain() {
                backend.poisoned_output(&p).unwrap()
            } else {
                AnyMatrix::generate(p.c_dtype(), p.m, p.n, Init::Random { seed: 33 }).unwrap()
            };
            let mut expect = before.clone();
            if scale.is_plain() {
                expect = want.clone();
            } else {
                scale.apply_host(&wide, &mut expect).unwrap();
            }
            for fresh in [false, false, true] {
                let mut dc = backend.upload(&before).unwrap();
                let (da2, db2);
                let (ua, ub) = if fresh {
                    da2 = backend.upload(&a).unwrap();
                    db2 = backend.upload(&b).unwrap();
                    (&da2, &db2)
                } else {
                    (&da, &db)
                };
                plan.run_data(ua, ub, &mut dc).unwrap();
                backend.synchronize().unwrap();
                let got = backend.download(&dc).unwrap();
                let v = compare(&p, &got, &expect);
                assert!(
                    v.passed,
                    "{name} {p} α={} β={}: {v:?}",
                    scale.alpha, scale.beta
                );
                ran += 1;
            }
        }
        let _ = DeviceMatrix::<f32>::zeros(&backend, 1, 1).unwrap();
    }
    println!("RESULT plans {ran} runs");
    assert!(ran > 0);
}

/// The one-call API on CUDA on borrowed blocks of bigger matrices (rows with gaps: one 2D copy
/// each to the device, no host copy) and on whole matrices, against the CPU reference: f32, u32
/// and bf16 with transposes.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn one_call_on_borrowed_blocks() {
    use matmul::{Gemm, MatRef};
    let Some(backend) = gpu() else { return };
    let mut ran = 0;
    for (dtype, (ta, tb)) in [
        (DType::F32, (false, false)),
        (DType::U32, (true, false)),
        (DType::Bf16, (false, true)),
    ] {
        let big = AnyMatrix::generate(dtype, 300, 260, Init::Random { seed: 7 }).unwrap();
        let (m, n, k) = (130, 77, 191);
        let (ar, ac) = if ta { (k, m) } else { (m, k) };
        let (br, bc) = if tb { (n, k) } else { (k, n) };
        fn check<T: matmul::Element>(
            backend: &CudaBackend,
            big: &matmul::Matrix<T>,
            (ar, ac, br, bc): (usize, usize, usize, usize),
            (ta, tb): (bool, bool),
        ) -> usize {
            let view = MatRef::from(big);
            let (a, b) = (
                view.block(5, 3, ar, ac).unwrap(),
                view.block(40, 60, br, bc).unwrap(),
            );
            let mut ran = 0;
            for (a, b) in [
                (a, b),
                (MatRef::from(&a.to_matrix()), MatRef::from(&b.to_matrix())),
            ] {
                let gemm = || Gemm::new(a, b).transpose_a(ta).transpose_b(tb).on(backend);
                let got = gemm().run_as::<T>().unwrap_or_else(|e| panic!("{e}"));
                let checked = gemm()
                    .verify(true)
                    .run_as::<T>()
                    .unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(
                    got,
                    checked,
                    "{}: the plan path and the verified path",
                    T::STORAGE
                );
                ran += 1;
            }
            ran
        }
        let shapes = (ar, ac, br, bc);
        ran += match &big {
            AnyMatrix::F32(x) => check(&backend, x, shapes, (ta, tb)),
            AnyMatrix::U32(x) => check(&backend, x, shapes, (ta, tb)),
            AnyMatrix::Bf16(x) => check(&backend, x, shapes, (ta, tb)),
            AnyMatrix::F16(x) => check(&backend, x, shapes, (ta, tb)),
        };
    }
    println!("RESULT one call on borrowed blocks: {ran} products");
    assert_eq!(ran, 6);
}

/// The one-call API on CUDA from and into page-locked host matrices (asynchronous copies: each
/// waited for before its borrow ends) and into a block of a bigger pageable C (rows with gaps),
/// against the same product returned as a new matrix; and a DeviceMatrix downloaded into a
/// pinned matrix.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn one_call_into_pinned_and_strided_c() {
    use matmul::{DeviceMatrix, Gemm, MatMut, Matrix};
    let Some(backend) = gpu() else { return };
    let (m, n, k) = (257, 130, 515);
    let random = |r, c, seed| {
        let x = AnyMatrix::generate(DType::F32, r, c, Init::Random { seed }).unwrap();
        Matrix::<f32>::try_from(x).ok().unwrap()
    };
    let (a, b) = (random(m, k, 81), random(k, n, 82));
    let want = Gemm::new(&a, &b).on(&backend).run().unwrap();
    let mut pa = backend.pinned::<f32>(m, k).unwrap();
    let mut pb = backend.pinned::<f32>(k, n).unwrap();
    let mut pc = backend.pinned::<f32>(m, n).unwrap();
    pc.as_mut_slice().fill(f32::NAN);
    pa.as_mut_slice().copy_from_slice(&a.data);
    pb.as_mut_slice().copy_from_slice(&b.data);
    for round in 0..3 {
        Gemm::new(pa.as_ref(), pb.as_ref())
            .on(&backend)
            .run_into(pc.as_mut())
            .unwrap();
        assert_eq!(pc.as_slice(), &want.data[..], "pinned round {round}");
        // Overwriting the pinned inputs right after the call must not reach the next product.
        pa.as_mut_slice().copy_from_slice(&a.data);
    }
    // Into a block of a bigger pageable buffer: the gaps untouched.
    let stride = n + 7;
    let mut big = vec![-1.0f32; m * stride];
    Gemm::new(&a, &b)
        .on(&backend)
        .run_into(MatMut::with_stride(&mut big, m, n, stride).unwrap())
        .unwrap();
    for i in 0..m {
        assert_eq!(
            &big[i * stride..i * stride + n],
            &want.data[i * n..(i + 1) * n]
        );
        assert!(big[i * stride + n..(i + 1) * stride]
            .iter()
            .all(|x| *x == -1.0));
    }
    // The wrong shape of C is an error naming it.
    let mut small = Matrix::<f32>::zeros(m, n - 1).unwrap();
    let e = Gemm::new(&a, &b)
        .on(&backend)
        .run_into(&mut small)
        .unwrap_err();
    assert!(e.to_string().contains('C'), "{e}");
    // A device matrix into a pinned one.
    let d = DeviceMatrix::upload(&backend, &want).unwrap();
    pc.as_mut_slice().fill(0.0);
    backend.download_into(d.data(), pc.as_mut().into()).unwrap();
    assert_eq!(pc.as_slice(), &want.data[..]);
    println!("RESULT one call into pinned and strided C: {m}x{n}x{k}");
}

/// Plans on views of bigger device matrices (A, B and C blocks at offsets: copied to the plan's
/// workspaces and C's block back, on the stream): SIMT, wgmma, int8 tensor-core, decode and cuBLAS
/// kernels, α = 1, β = 0 and α, β ≠ (1, 0) on a pre-filled C, awkward shapes; C outside the view
/// untouched (tests/support/views.rs).
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn plans_on_views() {
    use half::{bf16, f16};
    use matmul::Scale;
    let Some(backend) = gpu() else { return };
    let sm90a = backend.limits().unwrap().sm90a;
    let scaled = Scale {
        alpha: 3.0,
        beta: 2.0,
    };
    let mut ran = 0;
    for scale in [Scale::ONE, scaled] {
        let f32p = Problem::new(129, 67, 131, DType::F32);
        views::check_views::<f32, f32>(&backend, "multistage-raster", f32p, scale);
        let tt = Problem::new(100, 64, 72, DType::F32).with_ops(Op::T, Op::T);
        views::check_views::<f32, f32>(&backend, "cublas", tt, scale);
        let u = Problem::new(130, 70, 300, DType::U32).with_ops(Op::N, Op::T);
        views::check_views::<u32, u32>(&backend, "auto", u, scale);
        let dec = Problem::new(3, 1001, 776, DType::F16).with_ops(Op::N, Op::T);
        views::check_views::<f16, f32>(&backend, "decode", dec, scale);
        ran += 4;
        if sm90a {
            let w = Problem::new(136, 264, 512, DType::Bf16)
                .with_ops(Op::T, Op::N)
                .with_c(COut::Input);
            views::check_views::<bf16, bf16>(&backend, "wgmma", w, scale);
            let i8 = Problem::new(130, 70, 3000, DType::U32);
            views::check_views::<u32, u32>(&backend, "wgmma-u8x4-tma", i8, scale);
            ran += 2;
        }
    }
    println!("RESULT plans on views: {ran} cases");
    assert!(ran >= 8);
}

/// Strided batches on device buffers: three products with gaps between the matrices (strides
/// of 16-byte multiples) and, for some, one B shared by all (stride 0), with α = 1, β = 0 (one
/// launch for the batch where the kernel has a batched build: asserted) and with α, β ≠ (1, 0)
/// on a pre-filled C (one launch per product); each product against the CPU reference and the
/// gaps of C untouched.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn batched_plans_on_device_buffers() {
    use matmul::{Batch, Plan, Scale};
    let Some(backend) = gpu() else { return };
    let sm90a = backend.limits().unwrap().sm90a;
    let cases: &[(&str, Problem, bool)] = &[
        (
            "multistage-raster",
            Problem::new(129, 127, 131, DType::F32),
            false,
        ),
        (
            "wgmma",
            Problem::new(136, 264, 512, DType::Bf16).with_c(COut::Input),
            true,
        ),
        (
            "wgmma-u8x4-tma",
            Problem::new(130, 70, 3000, DType::U32),
            false,
        ),
        (
            "decode",
            Problem::new(3, 1001, 776, DType::F16).with_ops(Op::N, Op::T),
            true,
        ),
        (
            "cublas",
            Problem::new(100, 64, 72, DType::F32).with_ops(Op::T, Op::T),
            false,
        ),
        ("auto", Problem::new(256, 256, 64, DType::Bf16), false),
        (
            "multistage",
            Problem::new(67, 45, 93, DType::U32).with_ops(Op::T, Op::N),
            false,
        ),
        (
            "wgmma-n64",
            Problem::new(200, 136, 200, DType::F16).with_ops(Op::T, Op::T),
            false,
        ),
        (
            "wgmma-n128",
            Problem::new(72, 520, 136, DType::Bf16).with_ops(Op::N, Op::T),
            true,
        ),
        ("auto", Problem::new(64, 64, 64, DType::F32), true),
    ];
    let mut ran = 0;
    let mut one_launch = 0;
    let plain = Scale {
        alpha: 1.0,
        beta: 0.0,
    };
    let scaled = Scale {
        alpha: 3.0,
        beta: 2.0,
    };
    for (&(name, p, shared_b), scale) in cases.iter().flat_map(|c| [(c, plain), (c, scaled)]) {
        if name.starts_with("wgmma") && !sm90a {
            continue;
        }
        let size = |(r, c): (usize, usize)| r * c;
        let (a_len, b_len, c_len) = (size(p.a_stored()), size(p.b_stored()), p.m * p.n);
        let gap = |len: usize| (len + 8).next_multiple_of(8);
        let batch = Batch {
            count: 3,
            stride_a: gap(a_len),
            stride_b: if shared_b { 0 } else { gap(b_len) },
            stride_c: gap(c_len),
        };
        let buf =
            |dtype, len, seed| AnyMatrix::generate(dtype, 1, len, Init::Random { seed }).unwrap();
        let storage = if p.dtype == DType::Tf32 {
            DType::F32
        } else {
            p.dtype
        };
        let a = buf(storage, batch.need(batch.stride_a, a_len).unwrap(), 41);
        let b = buf(storage, batch.need(batch.stride_b, b_len).unwrap(), 42);
        let c0 = buf(p.c_dtype(), batch.need(batch.stride_c, c_len).unwrap(), 43);
        let plan = Plan::builder(&backend, p)
            .kernel(name)
            .batch(batch)
            .alpha(scale.alpha)
            .beta(scale.beta)
            .build()
            .unwrap_or_else(|e| panic!("{name} {p}: {e}"));
        let batched_build = plan.kernel().cuda_source().is_some_and(|s| s.batched);
        assert_eq!(
            plan.one_launch(),
            scale == plain && (batched_build || plan.kernel().name == "cublas"),
            "{name} ({}) {p} α={}: one launch",
            plan.kernel().name,
            scale.alpha
        );
        one_launch += plan.one_launch() as usize;
        let (da, db) = (backend.upload(&a).unwrap(), backend.upload(&b).unwrap());
        let mut dc = backend.upload(&c0).unwrap();
        plan.run_data(&da, &db, &mut dc).unwrap();
        backend.synchronize().unwrap();
        let got = backend.download(&dc).unwrap();
        let piece = |m: &AnyMatrix, at: usize, (r, c): (usize, usize)| -> AnyMatrix {
            let cut = |len| at..at + len;
            match m {
                AnyMatrix::F32(x) => matmul::Matrix::from_vec(r, c, x.data[cut(r * c)].to_vec())
                    .unwrap()
                    .into(),
                AnyMatrix::U32(x) => matmul::Matrix::from_vec(r, c, x.data[cut(r * c)].to_vec())
                    .unwrap()
                    .into(),
                AnyMatrix::F16(x) => matmul::Matrix::from_vec(r, c, x.data[cut(r * c)].to_vec())
                    .unwrap()
                    .into(),
                AnyMatrix::Bf16(x) => matmul::Matrix::from_vec(r, c, x.data[cut(r * c)].to_vec())
                    .unwrap()
                    .into(),
            }
        };
        for i in 0..batch.count {
            let ai = piece(&a, i * batch.stride_a, p.a_stored());
            let bi = piece(&b, i * batch.stride_b, p.b_stored());
            let wide = reference::matmul(&p.with_c(COut::Accumulator), &ai, &bi).unwrap();
            let mut expect = piece(&c0, i * batch.stride_c, (p.m, p.n));
            scale.apply_host(&wide, &mut expect).unwrap();
            let gi = piece(&got, i * batch.stride_c, (p.m, p.n));
            let v = compare(&p, &gi, &expect);
            assert!(v.passed, "{name} {p} product {i}: {v:?}");
            // The gap after each C but the last is untouched.
            if i + 1 < batch.count {
                let gap = i * batch.stride_c + c_len;
                assert_eq!(
                    got.to_f64_vec()[gap..gap + 8],
                    c0.to_f64_vec()[gap..gap + 8],
                    "{name}: C's gap {i}"
                );
            }
            ran += 1;
        }
    }
    println!("RESULT batched plans {ran} products, {one_launch} plans in one launch");
    assert!(ran > 0);
    assert!(
        one_launch >= if sm90a { 6 } else { 3 },
        "{one_launch} plans in one launch"
    );
}

/// `time` returns one positive duration per timed launch, rotating input sets, for a compiled
/// kernel, an accumulating one (C re-zeroed outside the timed region) and cuBLAS.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn timing_returns_one_duration_per_launch() {
    let Some(backend) = gpu() else { return };
    for (name, dtype, n) in [
        ("tiled", DType::F32, 256),
        ("row-global", DType::U32, 64),
        ("cublas", DType::Bf16, 512),
    ] {
        let kernel = matmul::find(name).unwrap();
        let problem = Problem::square(n, dtype);
        let sets: Vec<Inputs> = (0..3)
            .map(|s| Inputs {
                a: AnyMatrix::generate(dtype, n, n, Init::Random { seed: s }).unwrap(),
                b: AnyMatrix::generate(dtype, n, n, Init::Random { seed: s + 10 }).unwrap(),
            })
            .collect();
        let times = backend
            .time(kernel, &problem, &sets, 2, 7, RunOptions::default())
            .unwrap();
        assert_eq!(times.len(), 7, "{name}");
        assert!(
            times.iter().all(|&t| t > 0.0 && t < 10.0),
            "{name}: {times:?}"
        );
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        println!(
            "RESULT time {name} {problem}: median {:.1} us",
            sorted[3] * 1e6
        );
        assert!(backend
            .time(kernel, &problem, &[], 0, 1, RunOptions::default())
            .is_err());
    }
    // The backend still computes correctly after timing.
    let problem = Problem::square(64, DType::F32);
    assert!(verify(
        &backend,
        matmul::find("tiled").unwrap(),
        &problem,
        RunOptions::default()
    )
    .is_none());
}

/// Bad calls are errors, never panics, and leave the backend usable.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn bad_calls_are_errors() {
    let Some(backend) = gpu() else { return };
    let opts = RunOptions::default();
    let problem = Problem::new(4, 5, 6, DType::F32).with_ops(Op::N, Op::T);
    let c = case(&problem);
    let tiled = matmul::find("tiled").unwrap();
    // A CPU kernel on the CUDA backend.
    assert!(backend
        .run(matmul::find("cpu").unwrap(), &problem, &c.a, &c.b, opts)
        .is_err());
    // Operands swapped (wrong stored shapes), and the wrong element type.
    assert!(backend.run(tiled, &problem, &c.b, &c.a, opts).is_err());
    let a_u32 = AnyMatrix::generate(DType::U32, 4, 6, Init::Random { seed: 1 }).unwrap();
    assert!(backend.run(tiled, &problem, &a_u32, &c.b, opts).is_err());
    // A dtype the kernel does not take.
    let bf = Problem::new(4, 5, 6, DType::Bf16);
    let cb = case(&bf);
    assert!(backend.run(tiled, &bf, &cb.a, &cb.b, opts).is_err());
    // A packed K beyond the device's shared memory: refused by can_run with the rule.
    let huge_k = Problem::new(1, 1, 1 << 20, DType::U32);
    for name in ["rowpack", "elepack"] {
        let e = backend
            .check(matmul::find(name).unwrap(), &huge_k, opts)
            .unwrap_err();
        assert!(e.to_string().contains("shared memory"), "{e}");
    }
    // With all but 1 GiB of the device taken, a problem whose C is 1 GiB is refused before any
    // allocation, naming the memory, by run and by time alike; freed, the device runs again.
    let (free, _) = backend.context().mem_get_info().unwrap();
    let hog = unsafe { backend.stream().alloc::<u8>(free - (1 << 30)) }.unwrap();
    let wide = Problem::new(16_384, 16_384, 2, DType::F32);
    let a = AnyMatrix::generate(DType::F32, 16_384, 2, Init::Random { seed: 1 }).unwrap();
    let b = AnyMatrix::generate(DType::F32, 2, 16_384, Init::Random { seed: 2 }).unwrap();
    let e = backend.run(tiled, &wide, &a, &b, opts).unwrap_err();
    assert!(matches!(e, matmul::Error::DeviceMemory { .. }), "{e}");
    assert!(e.to_string().contains("of device memory"), "{e}");
    let sets = [matmul::Inputs { a, b }];
    let e = backend.time(tiled, &wide, &sets, 0, 1, opts).unwrap_err();
    assert!(matches!(e, matmul::Error::DeviceMemory { .. }), "{e}");
    drop(hog);
    // Still usable.
    assert!(verify(&backend, tiled, &problem, opts).is_none());
}

/// The device description and limits are plausible.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn device_properties() {
    let Some(backend) = gpu() else { return };
    let info = backend.info();
    println!("RESULT device {}", backend.describe());
    println!("{info:#?}");
    assert!(info.sm_count > 0 && info.max_threads_per_block >= 1024);
    assert!(info.arch.starts_with("sm_"));
    assert!(
        info.shared_per_block_optin >= info.shared_per_block && info.shared_per_block >= 48 * 1024
    );
    assert!(info.total_memory_bytes > 0 && info.l2_bytes > 0);
    assert_eq!(
        backend.limits().unwrap().max_shared_per_block,
        info.shared_per_block_optin
    );
    let all = cuda::list_devices().unwrap();
    assert!(all.iter().any(|d| d.name == info.name && d.ordinal == 0));
    let info = backend
        .compile_info(
            matmul::find("tiled").unwrap(),
            DType::F32,
            &RunOptions::default(),
        )
        .unwrap();
    assert!(info.registers > 0 && !info.spills(), "{info:?}");
}

/// `open_backend(Auto)` picks CUDA when it works and otherwise falls back to the CPU with the
/// reason: never a panic (this one also runs on machines without a GPU).
#[test]
fn auto_backend_falls_back_without_panicking() {
    let direct = CudaBackend::new(0);
    let (backend, reason) = open_backend(BackendChoice::Auto).expect("Auto always opens a backend");
    match direct {
        Ok(_) => {
            assert_eq!(backend.kind(), BackendKind::Cuda);
            assert!(reason.is_none());
        }
        Err(e) => {
            // Then wgpu on a hardware adapter, else the CPU (a software adapter is skipped).
            assert_ne!(backend.kind(), BackendKind::Cuda);
            let reason = reason.expect("the fallback says why");
            assert!(reason.starts_with(&e.to_string()), "{reason}");
            println!("fell back to {}: {reason}", backend.kind());
            assert!(open_backend(BackendChoice::Cuda).is_err());
            match cuda::list_devices() {
                Ok(list) => assert!(list.is_empty()),
                Err(e) => println!("list_devices: {e}"),
            }
        }
    }
}

/// MATMUL_REQUIRE_GPU=1 promises that the GPU tests ran. A binary built without it (the GPU
/// bundle's: scripts/gpu-bundle.sh) has them ignored: run without `--include-ignored`, it fails
/// here rather than passing with every GPU test ignored.
#[test]
fn require_gpu_includes_the_ignored_gpu_tests() {
    let included = std::env::args().any(|a| a == "--include-ignored" || a == "--ignored");
    assert!(
        !env_is("MATMUL_REQUIRE_GPU", "1") || cfg!(matmul_require_gpu) || included,
        "MATMUL_REQUIRE_GPU=1, but this test binary was built without it, so its GPU tests are \
         ignored: pass --include-ignored"
    );
}

// ---- wgmma-tf32 -------------------------------------------------------------------------------

/// The op combinations wgmma-tf32 runs (op(A) = T with op(B) = N is refused: no K-major operand).
const TF32_OPS: [(Op, Op); 3] = [(Op::N, Op::N), (Op::N, Op::T), (Op::T, Op::T)];

/// The wgmma-tf32 kernel, or None (SKIP printed) when the device is not sm_90a.
fn tf32_kernel(backend: &CudaBackend) -> Option<&'static KernelSpec> {
    if !backend.limits().unwrap().sm90a {
        println!(
            "SKIP: wgmma-tf32 needs sm_90a; this device is {}",
            backend.arch()
        );
        return None;
    }
    Some(matmul::find("wgmma-tf32").unwrap())
}

/// Up to `limit` elements where `got` and `want` differ (NaN, e.g. an unwritten poisoned element,
/// included; the sign of a zero not), as "(row, col) got G want W", and the number of differing
/// elements: what to look at first when a fragment layout is wrong.
fn mismatches(got: &AnyMatrix, want: &AnyMatrix, limit: usize) -> (usize, Vec<String>) {
    let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
    let cols = want.cols().max(1);
    let bad: Vec<usize> = (0..w.len()).filter(|&i| g[i] != w[i]).collect();
    let shown = bad
        .iter()
        .take(limit)
        .map(|&i| format!("({}, {}) got {} want {}", i / cols, i % cols, g[i], w[i]))
        .collect();
    (bad.len(), shown)
}

/// Small integers in [-4, 4] are exact in tf32 and every sum is exact in f32, so wgmma-tf32 must
/// reproduce the reference bit for bit in each orientation (direct: op(B) = T; swapped: N·N), at
/// partial tiles on every side (the D tile is 128×256 direct, 256×128 of C swapped), K off the
/// 32-element stage, several tiles per persistent block, and the refused T·N layout. A wrong
/// fragment layout or epilogue mapping shows up here as a list of positions.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn wgmma_tf32_small_integers_are_exact() {
    let Some(backend) = gpu() else { return };
    let Some(kernel) = tf32_kernel(&backend) else {
        return;
    };
    let shapes: &[(usize, usize, usize)] = &[
        (64, 64, 64),
        (4, 4, 4),
        (8, 8, 36),
        (136, 264, 72),
        (264, 520, 200),
        (300, 260, 36),
        (1028, 516, 100),
        (4096, 4096, 64),
    ];
    let mut failures = Vec::new();
    let mut ran = 0;
    for &(m, n, k) in shapes {
        for (op_a, op_b) in OPS {
            let problem = Problem::new(m, n, k, DType::Tf32).with_ops(op_a, op_b);
            let check = backend.check(kernel, &problem, RunOptions::default());
            if !TF32_OPS.contains(&(op_a, op_b)) {
                match check {
                    Err(e) if e.to_string().contains("op(A)=N or op(B)=T") => {}
                    other => failures.push(format!(
                        "{problem}: expected the layout refusal, got {other:?}"
                    )),
                }
                continue;
            }
            if let Err(e) = check {
                failures.push(format!("{problem}: unexpected refusal: {e}"));
                continue;
            }
            let seed = (m * 31 + n * 7 + k) as u64;
            let (ar, ac) = problem.a_stored();
            let (br, bc) = problem.b_stored();
            let a = AnyMatrix::generate(DType::Tf32, ar, ac, Init::SmallInt { seed }).unwrap();
            let b = AnyMatrix::generate(DType::Tf32, br, bc, Init::SmallInt { seed: seed + 1 })
                .unwrap();
            let want = reference::matmul(&problem, &a, &b).unwrap();
            ran += 1;
            match backend.run(kernel, &problem, &a, &b, RunOptions::default()) {
                Err(e) => failures.push(format!("{problem}: error: {e}")),
                Ok(got) => {
                    let (count, first) = mismatches(&got, &want, 8);
                    if count > 0 {
                        failures.push(format!(
                            "{problem}: {count} of {} elements differ; first: {}",
                            m * n,
                            first.join("; ")
                        ));
                    }
                }
            }
        }
    }
    println!("RESULT wgmma-tf32 exact {ran} runs");
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `v` (finite) rounded to tf32 (10 mantissa bits) to nearest, ties to even: cvt.rn.tf32.f32,
/// what `to_tf32` does on sm_90 (tf32.cuh), and what a TFLOAT32 tensor map's TMA copy does.
fn tf32_rn(v: f32) -> f32 {
    let bits = v.to_bits();
    let lsb = (bits >> 13) & 1;
    f32::from_bits(bits.wrapping_add(0xFFF + lsb) & 0xFFFF_E000)
}

/// `v` truncated to tf32 (the low 13 bits dropped).
fn tf32_trunc(v: f32) -> f32 {
    f32::from_bits(v.to_bits() & 0xFFFF_E000)
}

fn map_f32(m: &AnyMatrix, f: fn(f32) -> f32) -> AnyMatrix {
    match m {
        AnyMatrix::F32(x) => AnyMatrix::F32(
            matmul::Matrix::from_vec(x.rows, x.cols, x.data.iter().map(|&v| f(v)).collect())
                .unwrap(),
        ),
        other => panic!("f32 storage expected, got {}", other.dtype()),
    }
}

/// The rounding of wgmma-tf32, measured: both operands are copied by TMA through TFLOAT32 maps,
/// which round each f32 to tf32 (nearest, ties to even), so the shared-memory operand S does not
/// reach the tensor cores as raw f32 bits, which they truncate (lab/notebook.md 16, 16c). The
/// result is compared with the f64 reference of the unrounded inputs (it must pass the tf32
/// check, like mma-sync and cuBLAS, printed beside it) and with CPU emulations whose register
/// operand is rounded to nearest even and whose shared-memory operand is truncated or rounded:
/// the result must sit clearly closer to one of them, and that one must be S rounded.
#[test]
#[cfg_attr(
    not(matmul_require_gpu),
    ignore = "needs a CUDA GPU: MATMUL_REQUIRE_GPU=1 cargo test, or -- --include-ignored"
)]
fn wgmma_tf32_rounding() {
    let Some(backend) = gpu() else { return };
    let Some(kernel) = tf32_kernel(&backend) else {
        return;
    };
    let (m, n, k) = if small_only() {
        (128, 256, 96)
    } else {
        (512, 768, 1024)
    };
    let mut failures = Vec::new();
    for (op_a, op_b) in TF32_OPS {
        let problem = Problem::new(m, n, k, DType::Tf32).with_ops(op_a, op_b);
        let c = case(&problem);
        let got = match backend.run(kernel, &problem, &c.a, &c.b, RunOptions::default()) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{problem}: error: {e}"));
                continue;
            }
        };
        let verdict = compare_inputs(&problem, &c.a, &c.b, &got, &c.want);
        if !verdict.passed {
            failures.push(format!("{problem}: fails the tf32 check: {verdict:?}"));
        }
        // The register operand R and the shared-memory operand S of this orientation.
        let direct = op_b == Op::T;
        let emulate = |s_round: fn(f32) -> f32| {
            let (a, b) = if direct {
                (map_f32(&c.a, tf32_rn), map_f32(&c.b, s_round))
            } else {
                (map_f32(&c.a, s_round), map_f32(&c.b, tf32_rn))
            };
            reference::matmul(&problem, &a, &b).unwrap()
        };
        let e_trunc = compare(&problem, &got, &emulate(tf32_trunc)).rel_frobenius;
        let e_rn = compare(&problem, &got, &emulate(tf32_rn)).rel_frobenius;
        let others: Vec<String> = ["mma-sync", "cublas"]
            .iter()
            .map(|name| {
                let other = matmul::find(name).unwrap();
                match backend.run(other, &problem, &c.a, &c.b, RunOptions::default()) {
                    Ok(o) => format!(
                        "{name} {:.2e}",
                        compare(&problem, &o, &c.want).rel_frobenius
                    ),
                    Err(e) => format!("{name} error: {e}"),
                }
            })
            .collect();
        let closer = if e_trunc < e_rn {
            "truncated"
        } else {
            "rounded"
        };
        println!(
            "RESULT tf32-rounding {problem}: wgmma-tf32 {:.2e} against the f64 reference; against emulations with S truncated {e_trunc:.2e}, S rounded {e_rn:.2e} (S is {closer}); {}",
            verdict.rel_frobenius,
            others.join(", ")
        );
        if e_trunc.min(e_rn) * 4.0 > e_trunc.max(e_rn) {
            failures.push(format!(
                "{problem}: neither emulation explains the result (S truncated {e_trunc:.2e}, S rounded {e_rn:.2e})"
            ));
        } else if e_trunc < e_rn {
            failures.push(format!(
                "{problem}: S reached the tensor cores truncated ({e_trunc:.2e} from that emulation, {e_rn:.2e} from S rounded): the tf32 tensor maps should round it"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failure(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}
