//! NVRTC compiles every CUDA kernel of the registry × each of its dtypes for Hopper (sm_90a) and
//! Ampere (sm_80; the sm_90a-only wgmma kernel for Hopper alone), at the registry's tile and at the puzzles' TILE 3, the SIMT ladder at its
//! default tiling and three of `matmul tune`'s candidates (a split-tail kernel's tail build too,
//! 13_multistage.cu; a batched kernel's batched build too); any compile error, or a spill at a
//! kernel's registry default (a spilling tune candidate is only reported), fails. Needs libnvrtc only (no driver, no GPU): CI installs the PyPI wheel
//! `nvidia-cuda-nvrtc==13.0.*` and puts its `nvidia/cu13/lib` on LD_LIBRARY_PATH.
//!
//! The tests are `#[ignore]`d unless built with MATMUL_REQUIRE_NVRTC=1 (build.rs; `.ci/run` sets
//! it), so that without libnvrtc `cargo test` counts them as ignored, not passed. Run with
//! `--include-ignored` and no libnvrtc, each prints `SKIP: <reason>` and passes, unless
//! MATMUL_REQUIRE_NVRTC=1 (then it fails); scripts/gpu-check.sh passes `--include-ignored`.
//! `--nocapture` prints the ptxas table (registers, spills, shared memory, stack per kernel).

use matmul::cuda::compile::{self, Build, DiskCache};
use matmul::registry::{Geometry, KERNELS};
use matmul::{tune, DType, Error, KernelSpec, RunOptions, Tiling, Types};
use rayon::prelude::*;

const ARCHS: [&str; 2] = ["sm_90a", "sm_80"];

/// Whether NVRTC is here; prints SKIP (or fails under MATMUL_REQUIRE_NVRTC=1) when it is not.
fn nvrtc_or_skip() -> bool {
    match compile::nvrtc_version() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var("MATMUL_REQUIRE_NVRTC").as_deref() == Ok("1") {
                panic!("MATMUL_REQUIRE_NVRTC=1 but NVRTC is unavailable: {e}");
            }
            println!("SKIP: {e}");
            false
        }
    }
}

/// A private, empty cache directory for one test.
fn temp_cache(tag: &str) -> (std::path::PathBuf, DiskCache) {
    let dir =
        std::env::temp_dir().join(format!("matmul-compile-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let cache = DiskCache::at(&dir);
    assert!(cache.dir().is_some(), "cannot create {}", dir.display());
    (dir, cache)
}

fn cuda_kernels() -> impl Iterator<Item = &'static KernelSpec> {
    KERNELS.iter().filter(|k| k.cuda_source().is_some())
}

/// The variants to compile: the registry's, 3 for 2-D tile kernels, and for the SIMT ladder its
/// default tiles under a register cap and ptxas -O1, then a small, a deep and the largest of
/// `matmul tune`'s candidates (the templates must hold for all).
fn variants(kernel: &KernelSpec, dtype: DType) -> Vec<RunOptions> {
    match kernel.cuda_source().map(|s| s.geometry) {
        Some(Geometry::Tile2d { tile: 3 }) | Some(Geometry::SingleBlock { tpb: 3 }) => {
            vec![RunOptions::default()]
        }
        Some(Geometry::Tile2d { .. }) | Some(Geometry::SingleBlock { .. }) => {
            vec![RunOptions::default(), RunOptions::tile(3)]
        }
        Some(Geometry::BlockTile { .. }) => {
            let c = tune::candidates(kernel, dtype, 227 << 10);
            let pick = |f: &dyn Fn(&Tiling) -> u64| c.iter().skip(1).max_by_key(|t| f(t)).copied();
            // The default tiles under both build knobs: every kernel's __maxnreg__ path.
            let built = c[0].with_build(c[0].launch_bounds_cap() - 8, 1);
            let mut out = vec![RunOptions::default(), RunOptions::tiling(built)];
            for t in [
                pick(&|t| u64::MAX - (t.bm * t.bn) as u64),
                pick(&|t| (t.bk * t.stages) as u64),
                pick(&|t| t.shared_elems()),
            ]
            .into_iter()
            .flatten()
            {
                if !out.contains(&RunOptions::tiling(t)) {
                    out.push(RunOptions::tiling(t));
                }
            }
            out
        }
        _ => vec![RunOptions::default()],
    }
}

/// The builds of `kernel` for `dtype`: C in the accumulator type, and C in `dtype` itself where
/// the kernel writes 16-bit C.
fn c_types(kernel: &KernelSpec, dtype: DType) -> Vec<(DType, Types)> {
    let mut out = vec![(dtype, Types::from(dtype))];
    if dtype.is_16_bit() && kernel.writes_narrow_c() {
        out.push((
            dtype,
            Types {
                input: dtype,
                c: dtype,
            },
        ));
    }
    out
}

#[test]
#[cfg_attr(
    not(matmul_require_nvrtc),
    ignore = "needs libnvrtc: MATMUL_REQUIRE_NVRTC=1 cargo test, or -- --include-ignored"
)]
fn every_kernel_compiles_without_spills() {
    if !nvrtc_or_skip() {
        return;
    }
    let (dir, cache) = temp_cache("all");
    let version = compile::nvrtc_version().unwrap();
    println!("NVRTC {}.{}", version.0, version.1);
    println!(
        "{:<14} {:<5} {:<28} {:<7} {:>5} {:>5} {:>6} {:>6} {:>6}",
        "kernel", "dtype", "tile", "arch", "regs", "bars", "smem", "stack", "spill"
    );
    // Every (kernel, types, options, arch), compiled in parallel (NVRTC compiles distinct
    // programs concurrently; the disk cache writes each entry through a temporary file and a
    // rename), then checked and printed in order: one at a time this took 424 s on the H100 host.
    let mut jobs = Vec::new();
    for kernel in cuda_kernels() {
        for (dtype, types) in kernel.dtypes.iter().flat_map(|&d| c_types(kernel, d)) {
            for opts in variants(kernel, dtype) {
                for arch in ARCHS {
                    // wgmma, setmaxnreg and TMA exist on sm_90a alone
                    if kernel.compiles_for(arch) {
                        jobs.push((kernel, types, opts, arch, Build::Main));
                        // and the split-tail build of a kernel that has one
                        if kernel.tail_entry_point().is_some() {
                            jobs.push((kernel, types, opts, arch, Build::Tail));
                        }
                        // and the batched build of a kernel that has one
                        if kernel.cuda_source().is_some_and(|s| s.batched) {
                            jobs.push((kernel, types, opts, arch, Build::Batched));
                        }
                    }
                }
            }
        }
    }
    let compiled: Vec<_> = jobs
        .par_iter()
        .map(|(kernel, types, opts, arch, build)| {
            compile::compile_build_with_cache(kernel, *types, opts, arch, &cache, *build)
        })
        .collect();
    let count = jobs.len();
    let mut failures = Vec::new();
    for ((kernel, types, opts, arch, build), compiled) in jobs.iter().zip(compiled) {
        let name = build.name(kernel);
        let label = format!("{name} {types} {} {arch}", opts.label());
        let compiled = match compiled {
            Ok(c) => c,
            Err(e) => {
                failures.push(format!("{label}: {e}"));
                continue;
            }
        };
        let entry = build.entry_point(kernel).expect("a build the kernel has");
        let Some(info) = compiled.function(&entry) else {
            failures.push(format!(
                "{label}: ptxas reported nothing for `{entry}`:\n{}",
                compiled.log
            ));
            continue;
        };
        println!(
            "{:<14} {:<5} {:<28} {:<7} {:>5} {:>5} {:>6} {:>6} {:>3}/{:<3}",
            name,
            types.to_string(),
            kernel
                .tile(opts)
                .map(|t| t.to_string())
                .or(kernel.tiling(opts).map(|t| t.to_string()))
                .or(kernel.tc_tile().map(|t| t.to_string()))
                .unwrap_or("-".to_string()),
            arch,
            info.registers,
            info.barriers,
            info.shared_bytes,
            info.stack_frame_bytes,
            info.spill_store_bytes,
            info.spill_load_bytes
        );
        if compiled.spills() {
            if *opts == RunOptions::default() {
                failures.push(format!(
                    "{label}: spills registers: {:?}",
                    compiled.functions
                ));
            } else {
                // A candidate that spills is one `matmul tune` skips, not an error.
                println!("  (spills: tune skips this candidate)");
            }
        }
        // ptxas serializes a kernel's wgmmas (each waits for the last) when it sees a register
        // an in-flight wgmma reads rewritten: correct, and slow.
        if compiled.log.contains("instructions are serialized") {
            failures.push(format!(
                "{label}: ptxas serialized the wgmmas:\n{}",
                compiled.log
            ));
        }
        if info.registers == 0 {
            failures.push(format!(
                "{label}: ptxas reported 0 registers:\n{}",
                compiled.log
            ));
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    assert!(count > 0, "the registry has no CUDA kernels");
    assert!(
        failures.is_empty(),
        "{} of {count} compilations failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[cfg_attr(
    not(matmul_require_nvrtc),
    ignore = "needs libnvrtc: MATMUL_REQUIRE_NVRTC=1 cargo test, or -- --include-ignored"
)]
fn disk_cache_hits_and_survives_corruption() {
    if !nvrtc_or_skip() {
        return;
    }
    let (dir, cache) = temp_cache("cache");
    let kernel = matmul::find("tiled").unwrap();
    let first =
        compile::compile_with_cache(kernel, DType::F32, &RunOptions::tile(5), "sm_90a", &cache)
            .unwrap();
    assert!(!first.from_disk_cache);
    let second =
        compile::compile_with_cache(kernel, DType::F32, &RunOptions::tile(5), "sm_90a", &cache)
            .unwrap();
    assert!(
        second.from_disk_cache,
        "second compile missed the disk cache"
    );
    assert_eq!(first.cubin, second.cubin);
    assert_eq!(first.functions, second.functions);
    // A different define is a different entry.
    let other =
        compile::compile_with_cache(kernel, DType::U32, &RunOptions::tile(5), "sm_90a", &cache)
            .unwrap();
    assert_ne!(other.key, first.key);
    // Corrupt every CUBIN: the next compile must notice and recompile, not fail.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cubin") {
            std::fs::write(&path, b"garbage").unwrap();
        }
    }
    let third =
        compile::compile_with_cache(kernel, DType::F32, &RunOptions::tile(5), "sm_90a", &cache)
            .unwrap();
    assert!(!third.from_disk_cache, "a corrupt entry was used");
    assert_eq!(third.cubin, first.cubin);
    // Cut every CUBIN short behind its intact ELF header: the seal in the log catches it.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cubin") {
            let bytes = std::fs::read(&path).unwrap();
            std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
        }
    }
    let cut =
        compile::compile_with_cache(kernel, DType::F32, &RunOptions::tile(5), "sm_90a", &cache)
            .unwrap();
    assert!(!cut.from_disk_cache, "a truncated entry was used");
    assert_eq!(cut.cubin, first.cubin);
    // And the rewritten entry is good again.
    let fourth =
        compile::compile_with_cache(kernel, DType::F32, &RunOptions::tile(5), "sm_90a", &cache)
            .unwrap();
    assert!(fourth.from_disk_cache);
    // A cache that cannot exist only disables caching.
    let none = DiskCache::at("/proc/no/such/dir");
    assert!(
        compile::compile_with_cache(kernel, DType::F32, &RunOptions::tile(5), "sm_90a", &none)
            .is_ok()
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
#[cfg_attr(
    not(matmul_require_nvrtc),
    ignore = "needs libnvrtc: MATMUL_REQUIRE_NVRTC=1 cargo test, or -- --include-ignored"
)]
fn compile_errors_carry_the_nvrtc_log() {
    if !nvrtc_or_skip() {
        return;
    }
    let bad = "extern \"C\" __global__ void broken(float* x) { x[0] = undeclared_name; }\n";
    match compile::compile_source("broken.cu", bad, &[], "sm_90a", &DiskCache::disabled()) {
        Err(Error::Compile {
            kernel,
            options,
            log,
        }) => {
            assert_eq!(kernel, "broken.cu");
            assert!(options.contains("sm_90a"), "{options}");
            assert!(log.contains("undeclared_name"), "{log}");
            assert!(
                log.contains("broken.cu(1)"),
                "error positions must be the file's own: {log}"
            );
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
    // A dtype the kernel does not take is refused before NVRTC runs.
    let tiled = matmul::find("tiled").unwrap();
    assert!(compile::compile(tiled, DType::Bf16, &RunOptions::default(), "sm_90a").is_err());
    assert!(compile::compile(tiled, DType::F32, &RunOptions::tile(0), "sm_90a").is_err());
}

#[test]
#[cfg_attr(
    not(matmul_require_nvrtc),
    ignore = "needs libnvrtc: MATMUL_REQUIRE_NVRTC=1 cargo test, or -- --include-ignored"
)]
fn nvrtc_supports_the_targets() {
    if !nvrtc_or_skip() {
        return;
    }
    let archs = compile::supported_archs().unwrap();
    println!("NVRTC archs: {archs:?}");
    assert!(archs.contains(&90) && archs.contains(&80), "{archs:?}");
}

/// A plan's α/β pass (kernels/scale.cu): its four entries compile for both targets without
/// spills or a stack frame.
#[test]
#[cfg_attr(
    not(matmul_require_nvrtc),
    ignore = "needs libnvrtc: MATMUL_REQUIRE_NVRTC=1 cargo test, or -- --include-ignored"
)]
fn plan_scale_kernels_compile() {
    if !nvrtc_or_skip() {
        return;
    }
    let (dir, cache) = temp_cache("scale");
    let text = include_str!("../kernels/scale.cu");
    for arch in ARCHS {
        let compiled = compile::compile_source("scale.cu", text, &[], arch, &cache).unwrap();
        for entry in ["scale_f32", "scale_u32", "scale_bf16", "scale_f16"] {
            let info = compiled
                .function(entry)
                .unwrap_or_else(|| panic!("{arch}: no `{entry}` in\n{}", compiled.log));
            assert!(info.registers > 0, "{arch} {entry}: {info:?}");
            assert_eq!(info.stack_frame_bytes, 0, "{arch} {entry}: {info:?}");
        }
        assert!(!compiled.spills(), "{arch}: {:?}", compiled.functions);
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Every batched build (`BATCHED=1`) compiles for each of its dtypes with the registers of its
/// one-product build and no spills: the batch's index arithmetic stays off the main loop.
#[test]
#[cfg_attr(
    not(matmul_require_nvrtc),
    ignore = "needs libnvrtc: MATMUL_REQUIRE_NVRTC=1 cargo test, or -- --include-ignored"
)]
fn batched_builds_compile_like_their_kernels() {
    if !nvrtc_or_skip() {
        return;
    }
    let (dir, cache) = temp_cache("batched");
    let mut built = 0;
    for kernel in cuda_kernels().filter(|k| k.cuda_source().is_some_and(|s| s.batched)) {
        for (_, types) in kernel.dtypes.iter().flat_map(|&d| c_types(kernel, d)) {
            for arch in ARCHS.iter().filter(|a| kernel.compiles_for(a)) {
                let opts = RunOptions::default();
                let build = |b| {
                    compile::compile_build_with_cache(kernel, types, &opts, arch, &cache, b)
                        .unwrap_or_else(|e| panic!("{} {types} {arch} {b:?}: {e}", kernel.name))
                };
                let (one, many) = (build(Build::Main), build(Build::Batched));
                let entry = kernel.entry_point();
                let (r1, rb) = (
                    one.function(&entry).expect("the entry").registers,
                    many.function(&entry).expect("the entry").registers,
                );
                println!(
                    "{} {types} {arch}: {r1} registers, batched {rb}",
                    kernel.name
                );
                assert!(
                    !many.spills(),
                    "{} {types} {arch}: {:?}",
                    kernel.name,
                    many.functions
                );
                assert!(
                    rb <= r1 + 8,
                    "{} {types} {arch}: batched {rb} registers against {r1}",
                    kernel.name
                );
                built += 1;
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
    assert!(built >= 6, "only {built} batched builds");
}

/// The environment variable that makes `processes_share_one_cache` a worker: the cache directory.
const CACHE_WORKER: &str = "MATMUL_TEST_CACHE_WORKER";

/// Processes sharing one fresh cache directory, all compiling the same kernels at the same time
/// (this test binary, re-run as workers): every one succeeds, they agree byte for byte, and no
/// temporary file is left behind.
#[test]
#[cfg_attr(
    not(matmul_require_nvrtc),
    ignore = "needs libnvrtc: MATMUL_REQUIRE_NVRTC=1 cargo test, or -- --include-ignored"
)]
fn processes_share_one_cache() {
    if !nvrtc_or_skip() {
        return;
    }
    let kernels = [
        ("tiled", DType::F32),
        ("warptile", DType::U32),
        ("mma-sync", DType::Bf16),
    ];
    if let Ok(dir) = std::env::var(CACHE_WORKER) {
        let cache = DiskCache::at(&dir);
        for (name, dtype) in kernels {
            let kernel = matmul::find(name).unwrap();
            let c = compile::compile_with_cache(
                kernel,
                dtype,
                &RunOptions::default(),
                "sm_90a",
                &cache,
            )
            .unwrap();
            println!("CUBIN {name} {:016x}", fnv(&c.cubin));
        }
        return;
    }
    let (dir, _) = temp_cache("processes");
    let exe = std::env::current_exe().unwrap();
    // All four start before any is waited for: they compile at the same time.
    let workers: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "processes_share_one_cache",
                    "--include-ignored",
                    "--nocapture",
                    "--test-threads",
                    "1",
                ])
                .env(CACHE_WORKER, &dir)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let workers: Vec<_> = workers
        .into_iter()
        .map(|w| w.wait_with_output().unwrap())
        .collect();
    let mut seen: Option<Vec<String>> = None;
    for out in workers {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "a worker failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<String> = stdout
            .lines()
            .filter_map(|l| l.find("CUBIN ").map(|i| l[i..].to_string()))
            .collect();
        assert_eq!(lines.len(), kernels.len(), "{stdout}");
        match &seen {
            None => seen = Some(lines),
            Some(first) => assert_eq!(first, &lines, "workers disagree"),
        }
    }
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.contains(".tmp")),
        "temporary files left: {names:?}"
    );
    assert_eq!(
        names.iter().filter(|n| n.ends_with(".cubin")).count(),
        kernels.len(),
        "{names:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// FNV-1a 64 of `bytes` (to compare CUBINs across processes in a line).
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// MATMUL_REQUIRE_NVRTC=1 promises that the compile tests ran. A binary built without it (the GPU
/// bundle's) has them ignored: run without `--include-ignored`, it fails here rather than passing
/// with every compile test ignored.
#[test]
fn require_nvrtc_includes_the_ignored_compile_tests() {
    let included = std::env::args().any(|a| a == "--include-ignored" || a == "--ignored");
    assert!(
        std::env::var("MATMUL_REQUIRE_NVRTC").as_deref() != Ok("1")
            || cfg!(matmul_require_nvrtc)
            || included,
        "MATMUL_REQUIRE_NVRTC=1, but this test binary was built without it, so its compile tests \
         are ignored: pass --include-ignored"
    );
}
