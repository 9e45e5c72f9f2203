//! Compiles every kernel configuration the project uses to CUBIN with the crate's NVRTC path and
//! writes each to OUT_DIR/<label>.cubin: the compile test's set (every CUDA kernel × dtype × C
//! type × variant × arch × build, tests/compile.rs), every tiling of the built-in tune tables,
//! and ceilings.cu. Usage: sass-identity OUT_DIR; with
//! $SASS_FILTER set, only the configurations whose label contains one of its comma-separated words.
use matmul::cuda::compile::{self, Build, DiskCache};
use matmul::registry::{Geometry, KERNELS};
use matmul::{tune, DType, KernelSpec, RunOptions, Tiling, Types};
use rayon::prelude::*;

const ARCHS: [&str; 2] = ["sm_90a", "sm_80"];

/// tests/compile.rs's `variants`.
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

fn c_types(kernel: &KernelSpec, dtype: DType) -> Vec<Types> {
    let mut out = vec![Types::from(dtype)];
    if dtype.is_16_bit() && kernel.writes_narrow_c() {
        out.push(Types {
            input: dtype,
            c: dtype,
        });
    }
    out
}

enum Job {
    Registry(&'static KernelSpec, Types, RunOptions, &'static str, Build),
    Ceilings(&'static str),
}

fn label(job: &Job) -> String {
    let raw = match job {
        Job::Registry(k, t, o, arch, b) => {
            format!(
                "{}.{}.{}.{}",
                b.name(k),
                t,
                if o.label().is_empty() {
                    "default".into()
                } else {
                    o.label()
                },
                arch
            )
        }
        Job::Ceilings(arch) => format!("ceilings.{arch}"),
    };
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn main() {
    let out = std::path::PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: sass-identity OUT_DIR"),
    );
    std::fs::create_dir_all(&out).unwrap();
    let mut jobs = Vec::new();
    let mut push = |kernel: &'static KernelSpec, dtype: DType, opts: RunOptions| {
        for types in c_types(kernel, dtype) {
            for arch in ARCHS {
                if kernel.compiles_for(arch) {
                    jobs.push(Job::Registry(kernel, types, opts, arch, Build::Main));
                    if kernel.tail_entry_point().is_some() {
                        jobs.push(Job::Registry(kernel, types, opts, arch, Build::Tail));
                    }
                }
            }
        }
    };
    for kernel in KERNELS.iter().filter(|k| k.cuda_source().is_some()) {
        for &dtype in kernel.dtypes {
            for opts in variants(kernel, dtype) {
                push(kernel, dtype, opts);
            }
        }
    }
    for table in tune::builtin_tables() {
        for e in &table.entries {
            let kernel = matmul::find(&e.kernel).expect("a tune entry names a registry kernel");
            push(kernel, e.dtype, RunOptions::tiling(e.tiling));
        }
    }
    for arch in ARCHS {
        jobs.push(Job::Ceilings(arch));
    }
    let mut seen = std::collections::HashSet::new();
    jobs.retain(|j| seen.insert(label(j)));
    if let Ok(filter) = std::env::var("SASS_FILTER") {
        jobs.retain(|j| filter.split(',').any(|w| label(j).contains(w)));
    }
    let failures: Vec<String> = jobs
        .par_iter()
        .filter_map(|job| {
            let none = DiskCache::disabled();
            let compiled = match job {
                Job::Registry(k, t, o, arch, b) => {
                    compile::compile_build_with_cache(k, *t, o, arch, &none, *b)
                }
                Job::Ceilings(arch) => compile::compile_source(
                    "ceilings.cu",
                    include_str!("../../../crates/matmul/kernels/ceilings.cu"),
                    &[("CHAINS".to_string(), "8".to_string())],
                    arch,
                    &none,
                ),
            };
            match compiled {
                Ok(c) => {
                    std::fs::write(out.join(format!("{}.cubin", label(job))), &c.cubin).unwrap();
                    None
                }
                Err(e) => Some(format!("{}: {e}", label(job))),
            }
        })
        .collect();
    println!("{} configurations, {} failed", jobs.len(), failures.len());
    for f in &failures {
        eprintln!("FAILED {f}");
    }
    if !failures.is_empty() {
        std::process::exit(1);
    }
}
