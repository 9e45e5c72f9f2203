//! The search space of `matmul tune`: which kernels it tunes, their candidate tilings, the
//! first pass (an even spread plus the table's incumbents) and the second (one knob away from the
//! first pass's winner). The timing loop itself is the CLI's (`matmul tune`); the table it fills
//! is [`super::tune`].

use crate::backend::RunOptions;
use crate::dtype::DType;
use crate::registry::{Geometry, KernelSpec, Tiling, KERNELS};

use super::tune::{ShapeClass, TuneEntry, TuneTable};

/// The kernels `matmul tune` searches by default: the BlockTile rungs from warp tiling up.
pub fn tunable_kernels() -> Vec<&'static KernelSpec> {
    KERNELS
        .iter()
        .filter(|k| matches!(k.cuda_source().map(|s| s.geometry), Some(Geometry::BlockTile { tiling }) if tiling.warp_tiled()))
        .collect()
}

/// The candidate tilings of `kernel` for `dtype` that pass [`KernelSpec::check_tiling`] and fit
/// in `max_shared` bytes of shared memory, the registry default first. The space: block tiles
/// 32–256 on each side (32: the short and narrow classes' thin tiles), BK 8/16/32 (12/20/28 for
/// a TMA SIMT kernel), thread tiles 4×4 to 8×8,
/// warp tiles that give 32 lanes whole sub-tiles, 2–4 stages where the kernel pipelines, the
/// kernel's own padding, 1 or 2 blocks per SM.
pub fn candidates(kernel: &KernelSpec, dtype: DType, max_shared: usize) -> Vec<Tiling> {
    let Some(Geometry::BlockTile { tiling: base }) = kernel.cuda_source().map(|s| s.geometry)
    else {
        return Vec::new();
    };
    let fits = |t: &Tiling| {
        kernel.check_tiling(t).is_ok()
            && kernel
                .tile_shared_bytes(dtype, &RunOptions::tiling(*t))
                .is_some_and(|(_, bytes)| bytes <= max_shared)
            && t.registers_estimate() <= t.register_cap()
    };
    // A TMA SIMT kernel reads rows of BK elements along K: BK/4 odd (registry::TMA_TILING_RULE).
    let bks: &[u32] = if kernel.tma_tiles() {
        &[12, 20, 28]
    } else {
        &[8, 16, 32]
    };
    let stages: &[u32] = if base.stages > 1 { &[2, 3, 4] } else { &[1] };
    // (WM, WN, WNITER): the warp tiles of a warp-tiled kernel, else "no warp tiling".
    let warps: Vec<(u32, u32, u32)> = if base.warp_tiled() {
        let shapes = [(32, 64), (64, 32), (64, 64), (32, 32), (64, 128), (128, 64)];
        shapes
            .iter()
            .flat_map(|&(wm, wn)| [1, 2, 4].map(|wniter| (wm, wn, wniter)))
            .collect()
    } else {
        vec![(0, 0, 1)]
    };
    let mut out = vec![base];
    for bm in [32, 64, 128, 256] {
        for bn in [32, 64, 128, 256] {
            for &bk in bks {
                for (tm, tn) in [(4, 4), (8, 4), (4, 8), (8, 8)] {
                    for &(wm, wn, wniter) in &warps {
                        for &stages in stages {
                            for min_blocks in [1, 2] {
                                let t = Tiling {
                                    bm,
                                    bn,
                                    bk,
                                    tm,
                                    tn,
                                    wm,
                                    wn,
                                    wniter,
                                    stages,
                                    pad: base.pad,
                                    min_blocks,
                                    ..base.default_build()
                                };
                                if fits(&t) && !out.contains(&t) {
                                    out.push(t);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// At most `n` of `candidates`, evenly spread over the list, the first (the default) always
/// included: what one `matmul tune` run times when the space is larger than its budget.
pub fn spread(candidates: &[Tiling], n: usize) -> Vec<Tiling> {
    if candidates.len() <= n {
        return candidates.to_vec();
    }
    let mut out: Vec<Tiling> = (0..n)
        .map(|i| candidates[i * candidates.len() / n])
        .collect();
    out.dedup();
    out
}

/// The first pass of `matmul tune` for `kernel` on `dtype` × `class`: the spread of `all` (at most
/// `n`, the default first), then the incumbent in `table` for that kernel, dtype and class (so a
/// short search never replaces it with something slower), then what the other kernels won there,
/// at 2 or 3 stages where this kernel pipelines. Only members of `all` and builds of them
/// ([`Tiling::build_variants`]: a register cap, ptxas's level) are returned, each once.
pub fn first_pass(
    all: &[Tiling],
    n: usize,
    table: &TuneTable,
    kernel: &str,
    dtype: DType,
    class: ShapeClass,
) -> Vec<Tiling> {
    let mut out = spread(all, n);
    let mut add = |t: Tiling| {
        if all.contains(&t.default_build()) && !out.contains(&t) {
            out.push(t);
        }
    };
    let here = |e: &&TuneEntry| e.dtype == dtype && e.class == class;
    for e in table
        .entries
        .iter()
        .filter(here)
        .filter(|e| e.kernel == kernel)
    {
        add(e.tiling);
    }
    let pipelined = all.first().is_some_and(|t| t.stages > 1);
    for e in table
        .entries
        .iter()
        .filter(here)
        .filter(|e| e.kernel != kernel)
    {
        for stages in [2, 3] {
            add(Tiling {
                stages: if pipelined { stages } else { 1 },
                ..e.tiling
            });
        }
    }
    out
}

/// The candidates one step from `best`: those that differ from it in exactly one knob (the
/// block tile's M, N or K, the thread tile, the warp tile, stages, padding, blocks per SM), built
/// as `best` is built where they allow it, after the other builds of `best` itself
/// ([`Tiling::build_variants`]). The
/// second pass of `matmul tune` times these: a local search around the spread's winner.
pub fn neighbours(best: &Tiling, candidates: &[Tiling]) -> Vec<Tiling> {
    let knobs = |t: &Tiling| {
        [
            t.bm,
            t.bn,
            t.bk,
            t.tm * 1000 + t.tn,
            (t.wm * 1000 + t.wn) * 10 + t.wniter,
            t.stages,
            t.pad,
            t.min_blocks,
        ]
    };
    let b = knobs(best);
    let as_best = |t: &Tiling| {
        let built = t.with_build(best.max_registers, best.ptxas_level);
        if built.check().is_ok() {
            built
        } else {
            *t
        }
    };
    let mut out = best.build_variants();
    for t in candidates
        .iter()
        .filter(|t| knobs(t).iter().zip(&b).filter(|(x, y)| x != y).count() == 1)
        .map(as_best)
    {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::tune::builtin_tables;

    #[test]
    fn candidates_all_pass_the_rules() {
        for k in KERNELS {
            if let Some(Geometry::BlockTile { tiling }) = k.cuda_source().map(|s| s.geometry) {
                assert!(
                    k.check_tiling(&tiling).is_ok(),
                    "{}: default {tiling}: {:?}",
                    k.name,
                    k.check_tiling(&tiling)
                );
                let c = candidates(k, DType::F32, 227 << 10);
                println!("{}: {} candidates", k.name, c.len());
                assert_eq!(c[0], tiling);
                let few = spread(&c, 20);
                assert_eq!((few.len(), few[0]), (20, tiling));
                let near = neighbours(&tiling, &c);
                assert!(near
                    .iter()
                    .all(|t| *t != tiling && c.contains(&t.default_build())));
                assert!(tiling.build_variants().iter().all(|t| near.contains(t)));
                assert!(c.iter().all(|t| k.check_tiling(t).is_ok()));
            }
        }
    }

    #[test]
    fn first_pass_keeps_every_incumbent() {
        // A short search must time the table's own winner for each kernel × dtype × class, so it
        // can only replace it with something faster (a 1024 warptile tune with 8 candidates once
        // wrote a 20 TFLOP/s tiling over the 28 TFLOP/s incumbent it never tried).
        for table in builtin_tables() {
            for e in &table.entries {
                let k = crate::registry::find(&e.kernel).unwrap();
                let all = candidates(k, e.dtype, 227 << 10);
                let pass = first_pass(&all, 1, &table, &e.kernel, e.dtype, e.class);
                assert!(
                    pass.contains(&e.tiling),
                    "{} {} {}: {}",
                    e.kernel,
                    e.dtype,
                    e.class.name(),
                    e.tiling
                );
                assert_eq!(pass[0], all[0], "the default first");
                assert!(pass.iter().all(|t| all.contains(&t.default_build())));
                assert!(
                    pass.iter().enumerate().all(|(i, t)| !pass[..i].contains(t)),
                    "each candidate once"
                );
            }
        }
    }

    #[test]
    fn tiling_text_round_trips() {
        for s in [
            "128x128x8/8x8",
            "128x128x16/8x4/w64x32n2/s3/p4",
            "64x64x8/8x1",
            "128x256x16/8x4/w64x64n2/s3/p4/r244/o1",
        ] {
            let t: Tiling = s.parse().unwrap();
            assert_eq!(t.to_string(), s);
        }
        for bad in ["128x128/8x8", "axbxc/1x1", "128x128x8/8x8/q3", "128x128x8"] {
            assert!(bad.parse::<Tiling>().is_err(), "{bad}");
        }
    }

    /// The build knobs: written only where not the default, checked against the cap MIN_BLOCKS
    /// leaves and ptxas's levels, and passed on as a define and an NVRTC option.
    #[test]
    fn build_knobs_are_checked_and_compiled_in() {
        let t: Tiling = "128x256x16/8x4/w64x64n2/s3/p4".parse().unwrap();
        assert_eq!(
            (t.max_registers, t.ptxas_level, t.register_cap()),
            (0, 3, 255)
        );
        assert!(t.nvrtc_options().is_empty());
        assert!(!t.defines().iter().any(|(k, _)| k == "MAXNREG"));
        let built = t.with_build(244, 1);
        assert_eq!(built.register_cap(), 244);
        assert_eq!(built.nvrtc_options(), ["--ptxas-options=-O1"]);
        assert!(built.defines().contains(&("MAXNREG".into(), "244".into())));
        assert_eq!(built.default_build(), t);
        assert!(t.build_variants().contains(&built) && !t.build_variants().contains(&t));
        for (bad, says) in [
            (
                "128x256x16/8x4/w64x64n2/s3/p4/r16",
                "register cap r16 must be 32 to 255",
            ),
            (
                "128x128x16/4x4/w64x32n2/s3/p4/b2/r200",
                "register cap r200 must be 32 to 128",
            ),
            (
                "128x256x16/8x4/w64x64n2/s3/p4/o4",
                "ptxas level o4 must be 0 to 3",
            ),
        ] {
            let e = bad.parse::<Tiling>().unwrap().check().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // At two blocks of 256 threads per SM the cap is already 128: no register-cap builds.
        let two: Tiling = "128x128x16/4x4/w64x32n2/s3/p4/b2".parse().unwrap();
        assert_eq!(two.build_variants(), [two.with_build(0, 1)]);
        // A JSON tune entry written before the knobs existed reads as the default build.
        let old = r#"{"bm":128,"bn":256,"bk":16,"tm":8,"tn":4,"wm":64,"wn":64,"wniter":2,"stages":3,"pad":4}"#;
        assert_eq!(serde_json::from_str::<Tiling>(old).unwrap(), t);
    }
}
