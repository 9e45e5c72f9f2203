//! Tile-parameter tuning for the SIMT ladder: the search space of a BlockTile kernel, the table
//! of winners (per device × kernel × dtype × shape class), and where that table lives on disk.
//!
//! `matmul tune` fills the table by timing every candidate that [`Tiling::check`] and the device
//! accept, after verifying it; `--kernel auto` and `matmul bench` read it. The file is JSON in the
//! user's cache directory (the NVRTC cache's directory, see `cuda::compile::DiskCache`), one table
//! per device name and driver version: a new driver or another GPU starts from the defaults.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::backend::RunOptions;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::problem::Problem;
use crate::registry::{DeviceLimits, Geometry, KernelSpec, Tiling, KERNELS};

/// Shapes are tuned by class: the best tiling for 1024² is not the best for 8192².
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum ShapeClass {
    /// min(m, n) < 1536: too few 128×128 tiles to fill 132 SMs; smaller tiles win.
    Small,
    /// min(m, n) < 6144.
    Medium,
    Large,
}

impl ShapeClass {
    pub fn of(problem: &Problem) -> ShapeClass {
        match problem.m.min(problem.n) {
            x if x < 1536 => ShapeClass::Small,
            x if x < 6144 => ShapeClass::Medium,
            _ => ShapeClass::Large,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            ShapeClass::Small => "small",
            ShapeClass::Medium => "medium",
            ShapeClass::Large => "large",
        }
    }
}

/// One winner: the best verified tiling of `kernel` for `dtype` on shapes of `class`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneEntry {
    pub kernel: String,
    pub dtype: DType,
    pub class: ShapeClass,
    /// The shape it was measured on (e.g. "4096x4096x4096").
    pub shape: String,
    pub tiling: Tiling,
    /// Its measured rate, 10^9 FLOP/s or OP/s.
    pub rate_gops: f64,
    /// The registry default's rate on the same shape, for comparison.
    pub default_rate_gops: f64,
}

/// The winners for one device and driver.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TuneTable {
    pub device: String,
    pub driver: String,
    pub date: String,
    pub entries: Vec<TuneEntry>,
}

impl TuneTable {
    /// The tuned tiling of `kernel` for `problem`'s dtype and class, if any.
    pub fn lookup(&self, kernel: &str, problem: &Problem) -> Option<Tiling> {
        let class = ShapeClass::of(problem);
        self.entries
            .iter()
            .find(|e| e.kernel == kernel && e.dtype == problem.dtype && e.class == class)
            .map(|e| e.tiling)
    }

    /// Replaces any entry of the same kernel, dtype and class.
    pub fn insert(&mut self, entry: TuneEntry) {
        self.entries.retain(|e| {
            !(e.kernel == entry.kernel && e.dtype == entry.dtype && e.class == entry.class)
        });
        self.entries.push(entry);
        self.entries.sort_by(|a, b| {
            (&a.kernel, a.dtype.name(), a.class).cmp(&(&b.kernel, b.dtype.name(), b.class))
        });
    }

    /// The tuned tiling of `kernel` for `problem`, if the table has one and the kernel can run the
    /// problem with it on a device with `limits` (None: any): what `matmul run --kernel NAME` runs.
    pub fn runnable(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        limits: Option<&DeviceLimits>,
    ) -> Option<Tiling> {
        self.lookup(kernel.name, problem).filter(|t| {
            kernel
                .can_run(problem, limits, &RunOptions::tiling(*t))
                .is_ok()
        })
    }

    /// The fastest tuned (kernel, tiling) for `problem` that can run it: what `--kernel auto`
    /// runs when a table exists. An entry whose kernel refuses the problem (a TMA kernel and rows
    /// that are not 16-byte multiples) gives way to the next fastest.
    pub fn best(&self, problem: &Problem) -> Option<(&'static KernelSpec, Tiling)> {
        let class = ShapeClass::of(problem);
        self.entries
            .iter()
            .filter(|e| e.dtype == problem.dtype && e.class == class)
            .filter_map(|e| {
                let kernel = crate::registry::find(&e.kernel).ok()?;
                let runs = kernel.can_run(problem, None, &RunOptions::tiling(e.tiling));
                runs.is_ok().then_some((kernel, e.tiling, e.rate_gops))
            })
            .max_by(|a, b| a.2.total_cmp(&b.2))
            .map(|(kernel, tiling, _)| (kernel, tiling))
    }

    /// The file for `device` and `driver` under `dir`.
    pub fn path_in(dir: &Path, device: &str, driver: &str) -> PathBuf {
        let slug: String = format!("{device}-{driver}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        dir.join(format!("tune-{slug}.json"))
    }

    /// Reads a table; a missing file is `Ok(None)`, an unreadable or corrupt one an error
    /// naming the file.
    pub fn load(path: &Path) -> Result<Option<TuneTable>> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::Invalid(format!("reading {}: {e}", path.display()))),
        };
        serde_json::from_str(&text).map(Some).map_err(|e| {
            Error::Invalid(format!(
                "{} is not a tune table ({e}); delete it or run `matmul tune` again",
                path.display()
            ))
        })
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::Invalid(format!("creating {}: {e}", dir.display())))?;
        }
        let text = serde_json::to_string_pretty(self).expect("a tune table serializes");
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text)
            .and_then(|_| std::fs::rename(&tmp, path))
            .map_err(|e| Error::Invalid(format!("writing {}: {e}", path.display())))
    }
}

/// Tables this project measured on known GPUs (device name, JSON): what `--kernel auto` and
/// `matmul bench` use on such a GPU until the user runs `matmul tune` there.
const BUILTIN: &[(&str, &str)] = &[(
    "NVIDIA H100 80GB HBM3",
    include_str!("../tuned/h100-80gb-hbm3.json"),
)];

/// The built-in table for a GPU named `device`, if this project has measured one.
pub fn builtin(device: &str) -> Option<TuneTable> {
    BUILTIN
        .iter()
        .find(|(name, _)| *name == device)
        .and_then(|(_, json)| serde_json::from_str(json).ok())
}

/// Every built-in table (for tests that must verify each tiling they hold).
pub fn builtin_tables() -> Vec<TuneTable> {
    BUILTIN
        .iter()
        .filter_map(|(name, _)| builtin(name))
        .collect()
}

/// The kernels `matmul tune` searches by default: the BlockTile rungs from warp tiling up.
pub fn tunable_kernels() -> Vec<&'static KernelSpec> {
    KERNELS
        .iter()
        .filter(|k| matches!(k.cuda_source().map(|s| s.geometry), Some(Geometry::BlockTile { tiling }) if tiling.warp_tiled()))
        .collect()
}

/// The candidate tilings of `kernel` for `dtype` that pass [`KernelSpec::check_tiling`] and fit
/// in `max_shared` bytes of shared memory, the registry default first. The space: block tiles
/// 64–256 on each side, BK 8/16/32 (12/20/28 for a TMA SIMT kernel), thread tiles 4×4 to 8×8,
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
    for bm in [64, 128, 256] {
        for bn in [64, 128, 256] {
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

    /// `best` skips an entry whose kernel cannot run the problem (simt-tma on rows that are not
    /// 16-byte multiples) and takes the next fastest.
    #[test]
    fn best_skips_kernels_that_refuse_the_problem() {
        let entry = |kernel: &str, rate: f64| TuneEntry {
            kernel: kernel.into(),
            dtype: DType::F32,
            class: ShapeClass::Small,
            shape: "1024x1024x1024".into(),
            tiling: crate::registry::find(kernel)
                .unwrap()
                .tiling(&RunOptions::default())
                .unwrap(),
            rate_gops: rate,
            default_rate_gops: rate,
        };
        let table = TuneTable {
            entries: vec![
                entry("multistage-raster", 30_000.0),
                entry("simt-tma", 31_000.0),
            ],
            ..Default::default()
        };
        let pick = |n, k| {
            table
                .best(&Problem::new(n, n, k, DType::F32))
                .unwrap()
                .0
                .name
        };
        assert_eq!(pick(1024, 1024), "simt-tma");
        assert_eq!(pick(1024, 1001), "multistage-raster");

        // A named kernel's own entry, for its dtype and class, where the kernel can run the problem.
        let tma = crate::registry::find("simt-tma").unwrap();
        let f32 = |n, k| Problem::new(n, n, k, DType::F32);
        assert_eq!(
            table.runnable(tma, &f32(1024, 1024), None),
            Some(table.entries[1].tiling)
        );
        assert_eq!(table.runnable(tma, &f32(1024, 1001), None), None);
        assert_eq!(table.runnable(tma, &f32(4096, 4096), None), None);
        let u32 = Problem::new(1024, 1024, 1024, DType::U32);
        assert_eq!(table.runnable(tma, &u32, None), None);
    }

    #[test]
    fn classes() {
        assert_eq!(
            ShapeClass::of(&Problem::square(1024, DType::F32)),
            ShapeClass::Small
        );
        assert_eq!(
            ShapeClass::of(&Problem::square(4096, DType::F32)),
            ShapeClass::Medium
        );
        assert_eq!(
            ShapeClass::of(&Problem::new(8192, 8192, 64, DType::F32)),
            ShapeClass::Large
        );
    }

    #[test]
    fn table_round_trips_and_replaces() {
        let dir = std::env::temp_dir().join(format!("matmul-tune-test-{}", std::process::id()));
        let path = TuneTable::path_in(&dir, "NVIDIA H100 80GB HBM3", "13.0");
        assert!(TuneTable::load(&path).unwrap().is_none());
        let t = Tiling::block(128, 128, 8, 8, 8);
        let e = TuneEntry {
            kernel: "blocktile-2d".into(),
            dtype: DType::F32,
            class: ShapeClass::Medium,
            shape: "4096x4096x4096".into(),
            tiling: t,
            rate_gops: 1.0,
            default_rate_gops: 0.5,
        };
        let mut table = TuneTable::default();
        table.insert(e.clone());
        table.insert(TuneEntry {
            rate_gops: 2.0,
            ..e
        });
        assert_eq!(table.entries.len(), 1);
        table.save(&path).unwrap();
        let back = TuneTable::load(&path).unwrap().unwrap();
        assert_eq!(back, table);
        let p = Problem::square(4096, DType::F32);
        assert_eq!(back.lookup("blocktile-2d", &p), Some(t));
        assert_eq!(
            back.lookup("blocktile-2d", &Problem::square(512, DType::F32)),
            None
        );
        std::fs::write(&path, "{not json").unwrap();
        let err = TuneTable::load(&path).unwrap_err().to_string();
        assert!(err.contains("not a tune table"), "{err}");
        let _ = std::fs::remove_dir_all(dir);
    }

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
    fn builtin_tables_parse_and_name_registry_kernels() {
        for (device, _) in BUILTIN {
            let t = builtin(device).expect("a built-in table parses");
            assert_eq!(&t.device, device);
            assert!(!t.entries.is_empty());
            for e in &t.entries {
                let k = crate::registry::find(&e.kernel).unwrap();
                assert!(
                    k.tiling(&crate::RunOptions::default()).is_some(),
                    "{}",
                    e.kernel
                );
                assert!(
                    e.tiling.check().is_ok(),
                    "{}: {:?}",
                    e.tiling,
                    e.tiling.check()
                );
            }
        }
        assert!(builtin("no such GPU").is_none());
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
