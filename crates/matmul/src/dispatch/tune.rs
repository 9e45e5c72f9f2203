//! The tune tables: the best verified tiling of each SIMT-ladder kernel per device × dtype × shape
//! class, where a device's table lives on disk, and the built-in tables this project measured.
//!
//! `matmul tune` fills a table by timing the candidates of [`super::search`] after verifying each;
//! `auto` ([`super::select`]) and `matmul bench` read it. The file is JSON in the user's cache
//! directory (the NVRTC cache's directory, see `cuda::compile::DiskCache`), one table per device
//! name and driver version: a new driver or another GPU starts from the built-in table for its
//! model (`tuned/*.json`, compiled in), else from the registry's defaults.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::backend::RunOptions;
use crate::cuda::{DeviceInfo, DiskCache};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::problem::Problem;
use crate::registry::{DeviceLimits, KernelSpec, Tiling};

/// Shapes are tuned by class: the best tiling for 1024² is not the best for 8192².
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum ShapeClass {
    /// m ≤ 128 rows under a wider C (LLM layers at a few tokens) with B stored N, in rows of
    /// 16-byte multiples: tiles of few rows, or most of each tile's FMAs fall past C's last row.
    /// (With B transposed or its rows unaligned, B's copies are 4-byte, and the small class's
    /// tile measured faster: 128×14336×4096 N·T f32 691 against 783 µs, 127×4099×8191 364
    /// against 499 µs, on an H100.)
    Short,
    /// n ≤ 64 columns under a taller C: tiles of few columns, for the same reason.
    Narrow,
    /// min(m, n) < 1536: too few 128×128 tiles to fill 132 SMs; smaller tiles win.
    Small,
    /// min(m, n) < 6144.
    Medium,
    /// min(m, n) ≥ 6144.
    Large,
}

impl ShapeClass {
    /// The class of `problem`: short or narrow by its output's thin side, else by the smaller
    /// of its sides.
    pub fn of(problem: &Problem) -> ShapeClass {
        let (m, n) = (problem.m, problem.n);
        let b_rows_aligned = problem.op_b == crate::problem::Op::N
            && (n * problem.dtype.input_bytes()).is_multiple_of(16);
        match m.min(n) {
            _ if m <= 128 && m < n && b_rows_aligned => ShapeClass::Short,
            _ if n <= 64 && n < m => ShapeClass::Narrow,
            x if x < 1536 => ShapeClass::Small,
            x if x < 6144 => ShapeClass::Medium,
            _ => ShapeClass::Large,
        }
    }

    /// The classes whose entries serve `problem`, best first: its own, and for a short or
    /// narrow problem the small class's, where a table has no entry of the thin class.
    pub fn chain(problem: &Problem) -> impl Iterator<Item = ShapeClass> {
        let class = ShapeClass::of(problem);
        let fallback =
            matches!(class, ShapeClass::Short | ShapeClass::Narrow).then_some(ShapeClass::Small);
        std::iter::once(class).chain(fallback)
    }

    /// "short", "narrow", "small", "medium" or "large", as the table's JSON writes it.
    pub fn name(&self) -> &'static str {
        match self {
            ShapeClass::Short => "short",
            ShapeClass::Narrow => "narrow",
            ShapeClass::Small => "small",
            ShapeClass::Medium => "medium",
            ShapeClass::Large => "large",
        }
    }
}

/// One winner: the best verified tiling of `kernel` for `dtype` on shapes of `class`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneEntry {
    /// The registry name of the kernel.
    pub kernel: String,
    /// The input dtype it was tuned for.
    pub dtype: DType,
    /// The shape class it was tuned for.
    pub class: ShapeClass,
    /// The shape it was measured on (e.g. "4096x4096x4096").
    pub shape: String,
    /// The winning tiling.
    pub tiling: Tiling,
    /// Its measured rate, 10^9 FLOP/s or OP/s.
    pub rate_gops: f64,
    /// The registry default's rate on the same shape, for comparison.
    pub default_rate_gops: f64,
}

/// The winners for one device and driver.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TuneTable {
    /// The device name the driver reports (e.g. "NVIDIA H100 80GB HBM3").
    pub device: String,
    /// The driver's CUDA version (e.g. "13.0").
    pub driver: String,
    /// When the table was last written (RFC 3339, UTC).
    pub date: String,
    /// One winner per kernel × dtype × shape class.
    pub entries: Vec<TuneEntry>,
}

impl TuneTable {
    /// The tuned tiling of `kernel` for `problem`'s dtype and class, if any.
    pub fn lookup(&self, kernel: &str, problem: &Problem) -> Option<Tiling> {
        ShapeClass::chain(problem).find_map(|class| {
            self.entries
                .iter()
                .find(|e| e.kernel == kernel && e.dtype == problem.dtype && e.class == class)
                .map(|e| e.tiling)
        })
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

    /// The fastest tuned (kernel, tiling) for `problem` that can run it on a device with `limits`:
    /// what `--kernel auto` runs when a table exists. An entry whose kernel refuses the problem (a
    /// Hopper kernel on another GPU, say) gives way to the next fastest.
    pub fn best(
        &self,
        problem: &Problem,
        limits: Option<&DeviceLimits>,
    ) -> Option<(&'static KernelSpec, Tiling)> {
        ShapeClass::chain(problem).find_map(|class| {
            self.entries
                .iter()
                .filter(|e| e.dtype == problem.dtype && e.class == class)
                .filter_map(|e| {
                    let kernel = crate::registry::find(&e.kernel).ok()?;
                    let runs = kernel.can_run(problem, limits, &RunOptions::tiling(e.tiling));
                    runs.is_ok().then_some((kernel, e.tiling, e.rate_gops))
                })
                .max_by(|a, b| a.2.total_cmp(&b.2))
                .map(|(kernel, tiling, _)| (kernel, tiling))
        })
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

    /// Writes the table to `path` (through a temporary file, so a reader never sees half of it),
    /// creating its directory.
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
    include_str!("../../tuned/h100-80gb-hbm3.json"),
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

/// Where a device's tune table came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableSource {
    /// The file `matmul tune` wrote on this machine.
    File(PathBuf),
    /// The table this project measured on the same GPU model, compiled in.
    Builtin {
        /// The GPU model's name.
        device: String,
        /// When it was measured.
        date: String,
    },
}

impl fmt::Display for TableSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableSource::File(path) => write!(f, "{}", path.display()),
            TableSource::Builtin { device, date } => {
                write!(f, "the built-in table for {device}, measured {date}")
            }
        }
    }
}

/// The outcome of looking up a device's tune table: the table, if any, and why a file that
/// exists was skipped (unreadable or corrupt), for the caller to report.
#[derive(Debug, Clone, Default)]
pub struct TableLookup {
    /// The table and where it came from.
    pub found: Option<(TableSource, TuneTable)>,
    /// Why this machine's table file was ignored, if it was.
    pub warning: Option<String>,
}

/// Where the tune table of device `info` lives (None: no cache directory).
pub fn table_path(info: &DeviceInfo) -> Option<PathBuf> {
    let dir = DiskCache::from_env().dir()?.to_path_buf();
    Some(TuneTable::path_in(&dir, &info.name, &info.driver_version))
}

/// The table for device `info`: the one `matmul tune` wrote, else the one this project measured
/// on the same GPU model (compiled in). A corrupt file is skipped, and the lookup says why.
pub fn load_table(info: &DeviceInfo) -> TableLookup {
    let mut warning = None;
    let user = table_path(info).and_then(|path| match TuneTable::load(&path) {
        Ok(t) => t.map(|t| (TableSource::File(path), t)),
        Err(e) => {
            warning = Some(e.to_string());
            None
        }
    });
    let found = user.or_else(|| {
        builtin(&info.name).map(|t| {
            let source = TableSource::Builtin {
                device: info.name.clone(),
                date: t.date.clone(),
            };
            (source, t)
        })
    });
    TableLookup { found, warning }
}

/// Device 0's tune table, read without opening a CUDA context (None: no device, or no table).
pub fn device0_table() -> TableLookup {
    match crate::cuda::list_devices()
        .ok()
        .and_then(|d| d.into_iter().next())
    {
        Some(info) => load_table(&info),
        None => TableLookup::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `best` skips an entry whose kernel cannot run the problem (simt-tma on a GPU that is not
    /// Hopper) and takes the next fastest.
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
        let hopper = crate::registry::rules::test_limits::HOPPER;
        let ampere = crate::registry::rules::test_limits::AMPERE;
        let pick = |n, k, limits| {
            table
                .best(&Problem::new(n, n, k, DType::F32), Some(limits))
                .unwrap()
                .0
                .name
        };
        assert_eq!(pick(1024, 1024, &hopper), "simt-tma");
        // Rows TMA cannot read as stored are staged (cuda/staging.rs): simt-tma still runs them.
        assert_eq!(pick(1024, 1001, &hopper), "simt-tma");
        assert_eq!(pick(1024, 1024, &ampere), "multistage-raster");

        // A named kernel's own entry, for its dtype and class, where the kernel can run the problem.
        let tma = crate::registry::find("simt-tma").unwrap();
        let f32 = |n, k| Problem::new(n, n, k, DType::F32);
        assert_eq!(
            table.runnable(tma, &f32(1024, 1024), None),
            Some(table.entries[1].tiling)
        );
        assert_eq!(
            table.runnable(tma, &f32(1024, 1001), None),
            Some(table.entries[1].tiling)
        );
        assert_eq!(table.runnable(tma, &f32(1024, 1024), Some(&ampere)), None);
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
        let class = |m, n| ShapeClass::of(&Problem::new(m, n, 4096, DType::F32));
        assert_eq!(class(1, 4096), ShapeClass::Short);
        assert_eq!(class(128, 14336), ShapeClass::Short);
        assert_eq!(class(129, 14336), ShapeClass::Small);
        assert_eq!(class(127, 4099), ShapeClass::Small);
        let nt = Problem::new(128, 14336, 4096, DType::F32).with_ops(crate::Op::N, crate::Op::T);
        assert_eq!(ShapeClass::of(&nt), ShapeClass::Small);
        assert_eq!(class(8192, 64), ShapeClass::Narrow);
        assert_eq!(class(8192, 65), ShapeClass::Small);
        // A small square is neither thin side's.
        assert_eq!(class(64, 64), ShapeClass::Small);
        assert_eq!(class(128, 128), ShapeClass::Small);
        // A thin class without entries takes the small class's (u32 has no short entry).
        let table = builtin("NVIDIA H100 80GB HBM3").unwrap();
        let short = Problem::new(16, 14336, 4096, DType::U32);
        let small = Problem::new(1024, 1024, 1024, DType::U32);
        let best = |p: &Problem| table.best(p, None).map(|(k, t)| (k.name, t.to_string()));
        assert!(best(&short).is_some());
        assert_eq!(best(&short), best(&small));
        let f32_short = Problem::new(16, 14336, 4096, DType::F32);
        assert_eq!(
            table.best(&f32_short, None).map(|(_, t)| t.to_string()),
            Some("32x256x16/4x4/w32x64n1/s3/p4".into())
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
}
