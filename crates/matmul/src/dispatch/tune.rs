//! The tune tables: the best verified tiling of each SIMT-ladder kernel per device × dtype × shape
//! class, where a device's table lives on disk, and the built-in tables this project measured.
//!
//! `matmul tune` fills a table by timing the candidates of [`super::search`] after verifying each;
//! `auto` ([`super::select`]) and `matmul bench` read it. The file is JSON in the user's cache
//! directory (the NVRTC cache's directory, [`Config::cache_dir`](crate::Config::cache_dir)), one table per device
//! name and driver version: a new driver or another GPU starts from the built-in table for its
//! model (`tuned/*.json`, compiled in), else from the registry's defaults.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::backend::RunOptions;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::problem::Problem;
use crate::registry::rules::DeviceIdentity;
use crate::registry::DeviceInfo;
use crate::registry::{DeviceLimits, KernelSpec, Tiling};

use super::model::{Candidate, DeviceModel};

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

/// A measured choice: the fastest of `auto`'s top candidates timed on `shape`, which serves every
/// problem of its [`bucket`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredChoice {
    /// The input dtype.
    pub dtype: DType,
    /// The shape bucket ([`bucket`]).
    pub bucket: String,
    /// The shape it was measured on (e.g. "16x14336x4096 NT").
    pub shape: String,
    /// The registry name of the fastest kernel.
    pub kernel: String,
    /// Its tiling (SIMT ladder), None for the registry's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiling: Option<Tiling>,
    /// Its median time, seconds.
    pub seconds: f64,
    /// The candidates timed with it (name or name@tiling, and median seconds), fastest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timed: Vec<(String, f64)>,
}

/// The shape bucket of `problem`: its dtype, ops and each side rounded to the nearest power of
/// two in log scale ("f32 NT 16x16384x4096"): problems of one bucket share a measured choice.
pub fn bucket(problem: &Problem) -> String {
    let round = |x: usize| -> usize {
        if x <= 1 {
            return x;
        }
        1usize << (x as f64).log2().round() as u32
    };
    format!(
        "{} {:?}{:?} {}x{}x{}",
        problem.dtype.name(),
        problem.op_a,
        problem.op_b,
        round(problem.m),
        round(problem.n),
        round(problem.k)
    )
}

/// The winners for one device class (architecture and SM count), or one device model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TuneTable {
    /// The device name the driver reports (e.g. "NVIDIA H100 80GB HBM3") where the table was
    /// measured.
    pub device: String,
    /// The device class it serves ([`DeviceLimits::class`], e.g. "sm_90-132"); empty in a table
    /// written for one model only.
    #[serde(default)]
    pub class: String,
    /// The driver's CUDA version (e.g. "13.0").
    pub driver: String,
    /// When the table was last written (RFC 3339, UTC).
    pub date: String,
    /// One winner per kernel × dtype × shape class.
    pub entries: Vec<TuneEntry>,
    /// Measured choices per shape bucket (`matmul tune --suite`, `--autotune`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<MeasuredChoice>,
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

    /// The measured choice for `problem`'s bucket, if any, and if its kernel can still run the
    /// problem on a device with `limits`.
    pub fn choice(
        &self,
        problem: &Problem,
        limits: Option<&DeviceLimits>,
    ) -> Option<(&'static KernelSpec, Option<Tiling>)> {
        let key = bucket(problem);
        let c = self
            .choices
            .iter()
            .find(|c| c.dtype == problem.dtype && c.bucket == key)?;
        let kernel = crate::registry::find(&c.kernel).ok()?;
        let opts = c.tiling.map(RunOptions::tiling).unwrap_or_default();
        kernel
            .can_run(problem, limits, &opts)
            .is_ok()
            .then_some((kernel, c.tiling))
    }

    /// Adds or replaces the measured choice of `choice.bucket`.
    pub fn insert_choice(&mut self, choice: MeasuredChoice) {
        self.choices
            .retain(|c| !(c.dtype == choice.dtype && c.bucket == choice.bucket));
        self.choices.push(choice);
        self.choices
            .sort_by(|a, b| (a.dtype.name(), &a.bucket).cmp(&(b.dtype.name(), &b.bucket)));
    }

    /// The table's tilings for `problem`'s dtype as `auto` candidates, each calibrated to its
    /// measured rate on `device` ([`Candidate::calibrated`]); the entries of the problem's own
    /// shape class first.
    pub fn calibrated(&self, problem: &Problem, device: &DeviceModel) -> Vec<Candidate> {
        let class = ShapeClass::of(problem);
        let mut entries: Vec<&TuneEntry> = self
            .entries
            .iter()
            .filter(|e| e.dtype == problem.dtype && e.rate_gops > 0.0)
            .collect();
        entries.sort_by_key(|e| e.class != class);
        entries
            .into_iter()
            .filter_map(|e| {
                let kernel = crate::registry::find(&e.kernel).ok()?;
                let shape = parse_shape(&e.shape, e.dtype)?;
                let measured = shape.flops() / (e.rate_gops * 1e9);
                Some(Candidate::new(kernel, Some(e.tiling)).calibrated(&shape, measured, device))
            })
            .collect()
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

    /// The table `matmul tune` and `--autotune` add to for device `info`: the file at `path`, else
    /// the built-in table of its class, else an empty one. An unreadable or corrupt file is an
    /// error naming it.
    pub fn load_or_builtin(path: &Path, info: &DeviceInfo) -> Result<TuneTable> {
        Ok(TuneTable::load(path)?
            .or_else(|| builtin_for_class(&class_of(info)))
            .unwrap_or_default())
    }

    /// Marks the table as written for device `info` (its name, class and driver) at `date`.
    pub fn stamp(&mut self, info: &DeviceInfo, date: String) {
        self.device = info.name.clone();
        self.class = class_of(info);
        self.driver = info.driver_version.clone();
        self.date = date;
    }

    /// The file for `device` and `driver` under `dir` (a device class, such as "sm_90-132", or
    /// a model name).
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

/// Tables this project measured (JSON), each serving its device class ([`TuneTable::class`]):
/// what `--kernel auto` and `matmul bench` use on a GPU of that class until the user runs `matmul
/// tune` there. An H100 SXM's table serves an H200 and a GH200 (sm_90, 132 SMs).
const BUILTIN: &[&str] = &[include_str!("../../tuned/sm_90-132.json")];

/// The built-in table measured on the GPU model `device`, if any.
pub fn builtin(device: &str) -> Option<TuneTable> {
    builtin_tables().into_iter().find(|t| t.device == device)
}

/// The built-in table for device class `class` (e.g. "sm_90-132"), if any.
pub fn builtin_for_class(class: &str) -> Option<TuneTable> {
    builtin_tables().into_iter().find(|t| t.class == class)
}

/// Every built-in table.
pub fn builtin_tables() -> Vec<TuneTable> {
    BUILTIN
        .iter()
        .filter_map(|json| serde_json::from_str(json).ok())
        .collect()
}

/// A table entry's shape ("MxNxK", or "N" for a cube, as `--shapes` takes it, then an optional
/// note such as the ops) as an N·N problem of `dtype`.
fn parse_shape(shape: &str, dtype: DType) -> Option<Problem> {
    let s: crate::problem::Shape = shape.split_whitespace().next()?.parse().ok()?;
    Some(Problem::new(s.m, s.n, s.k, dtype))
}

/// Where a device's tune table came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableSource {
    /// The file `matmul tune` wrote on this machine.
    File(PathBuf),
    /// The table this project measured on a GPU of the same class, compiled in.
    Builtin {
        /// The GPU model it was measured on.
        device: String,
        /// The class it serves.
        class: String,
        /// When it was measured.
        date: String,
    },
}

impl fmt::Display for TableSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableSource::File(path) => write!(f, "{}", path.display()),
            TableSource::Builtin {
                device,
                class,
                date,
            } => write!(
                f,
                "the built-in table for {class} GPUs, measured on an {device} {date}"
            ),
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

/// The device class of `info` ([`DeviceLimits::class`]): architecture and SM count.
pub fn class_of(info: &DeviceInfo) -> String {
    info.identity().class
}

/// Where `matmul tune` writes the table of device `info`'s class (None: no cache directory).
pub fn table_path(info: &DeviceInfo) -> Option<PathBuf> {
    class_table_path(&info.identity())
}

/// Where the table of device `id`'s class lives (None: no cache directory).
pub fn class_table_path(id: &DeviceIdentity) -> Option<PathBuf> {
    let dir = crate::config::get().cache_dir.clone()?;
    Some(TuneTable::path_in(&dir, &id.class, &id.driver))
}

/// Where a table for device `id`'s model alone lives: it overrides the class's table.
pub fn model_table_path(id: &DeviceIdentity) -> Option<PathBuf> {
    let dir = crate::config::get().cache_dir.clone()?;
    Some(TuneTable::path_in(&dir, &id.model, &id.driver))
}

/// The table for device `info` ([`table_for`]).
pub fn load_table(info: &DeviceInfo) -> TableLookup {
    table_for(&info.identity())
}

/// The table for device `id`: one written for its model (an override), else the one `matmul
/// tune` wrote for its class, else the one this project measured on its class (compiled in). A
/// corrupt file is skipped, and the lookup says why.
pub fn table_for(id: &DeviceIdentity) -> TableLookup {
    let mut warning = None;
    let mut read = |path: Option<PathBuf>| {
        path.and_then(|path| match TuneTable::load(&path) {
            Ok(t) => t.map(|t| (TableSource::File(path), t)),
            Err(e) => {
                warning = Some(e.to_string());
                None
            }
        })
    };
    let user = read(model_table_path(id)).or_else(|| read(class_table_path(id)));
    let found = user.or_else(|| {
        builtin_for_class(&id.class).map(|t| {
            let source = TableSource::Builtin {
                device: t.device.clone(),
                class: id.class.clone(),
                date: t.date.clone(),
            };
            (source, t)
        })
    });
    TableLookup { found, warning }
}

/// Adds `choice` to the table file of device `id`'s class (created from the built-in table
/// when there is none), written atomically; the path written, or None without a cache directory.
pub fn save_choice(id: &DeviceIdentity, choice: MeasuredChoice) -> Result<Option<PathBuf>> {
    let Some(path) = class_table_path(id) else {
        return Ok(None);
    };
    let mut table = TuneTable::load(&path)?
        .or_else(|| builtin_for_class(&id.class))
        .unwrap_or_default();
    if table.device.is_empty() {
        table.device = id.model.clone();
    }
    table.class = id.class.clone();
    table.driver = id.driver.clone();
    table.insert_choice(choice);
    table.save(&path)?;
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With a table, `auto` weighs its entries where their kernel can run the problem: simt-tma's
    /// on Hopper (also on rows TMA cannot read as stored, which are staged: cuda/staging.rs), and
    /// on a GPU that is not Hopper the next one.
    #[test]
    fn entries_that_refuse_the_problem_give_way() {
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
        let weighed = |n, k, limits: &DeviceLimits| {
            let p = Problem::new(n, n, k, DType::F32);
            let extra = table.calibrated(&p, &DeviceModel::of(limits));
            super::super::model::rank(&p, limits, &extra)
                .iter()
                .map(|(c, _)| c.kernel.name)
                .collect::<Vec<_>>()
        };
        assert!(weighed(1024, 1024, &hopper).contains(&"simt-tma"));
        assert!(weighed(1024, 1001, &hopper).contains(&"simt-tma"));
        assert!(!weighed(1024, 1024, &ampere).contains(&"simt-tma"));
        let fake = crate::dispatch::tests::FakeCuda(ampere);
        let p = Problem::square(1024, DType::F32);
        let c =
            crate::dispatch::auto_with_table(&fake, DType::F32, Some(&p), Some(&table)).unwrap();
        assert_eq!(c.kernel.name, "multistage-raster");

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
        let tiling = |p: &Problem| table.lookup("multistage", p).map(|t| t.to_string());
        assert!(tiling(&short).is_some());
        assert_eq!(tiling(&short), tiling(&small));
        let f32_short = Problem::new(16, 14336, 4096, DType::F32);
        assert_eq!(
            table
                .lookup("multistage-raster", &f32_short)
                .map(|t| t.to_string()),
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
        assert_eq!(
            builtin_tables().len(),
            BUILTIN.len(),
            "every built-in table parses"
        );
        for t in builtin_tables() {
            assert!(
                !t.class.is_empty(),
                "{}: a built-in table serves a class",
                t.device
            );
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
                assert!(parse_shape(&e.shape, e.dtype).is_some(), "{}", e.shape);
            }
        }
        assert!(builtin("no such GPU").is_none());
    }
}
