//! What machine and which build produced a report: device, CPU, git commit, command line, date.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The machine, the build and the invocation behind a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemInfo {
    /// `Backend::describe()`: the device name and what matters about it.
    pub device: String,
    /// "cpu" or "cuda".
    pub backend: String,
    /// GPU details as the caller gives them (name, SMs, clocks, driver, CUDA and NVRTC versions);
    /// free-form JSON, `null` on the CPU.
    pub gpu: Option<serde_json::Value>,
    /// `model name` from /proc/cpuinfo, when readable.
    pub cpu_model: Option<String>,
    /// Logical CPUs available to this process.
    pub cpu_cores: usize,
    /// Threads in rayon's global pool (what the CPU backend uses).
    pub cpu_threads: usize,
    /// `std::env::consts::OS`.
    pub os: String,
    /// `std::env::consts::ARCH`.
    pub arch: String,
    /// The commit this binary was built from (git at build time; None when built outside a
    /// repository).
    pub git_commit: Option<String>,
    /// Whether tracked files differed from that commit when it was built (None without git).
    pub git_dirty: Option<bool>,
    /// `std::env::args()`, as given.
    pub command_line: Vec<String>,
    /// When the report was made, RFC 3339 UTC (`2026-11-22T10:20:30Z`).
    pub date: String,
    /// This crate's version.
    pub bench_version: String,
}

impl SystemInfo {
    /// Collects everything that needs no GPU; `gpu` is the caller's device description.
    pub fn collect(device: &str, backend: &str, gpu: Option<serde_json::Value>) -> SystemInfo {
        let cpu_cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        SystemInfo {
            device: device.to_string(),
            backend: backend.to_string(),
            gpu,
            cpu_model: cpu_model(),
            cpu_cores,
            cpu_threads: rayon::current_num_threads(),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            git_commit: Some(env!("MATMUL_BUILD_COMMIT"))
                .filter(|c| !c.is_empty())
                .map(str::to_string),
            git_dirty: match env!("MATMUL_BUILD_DIRTY") {
                "1" => Some(true),
                "0" => Some(false),
                _ => None,
            },
            command_line: std::env::args().collect(),
            date: rfc3339_utc(SystemTime::now()),
            bench_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// The CPU's model name from /proc/cpuinfo (`model name`, or `Model`/`Hardware` on Arm).
pub fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    ["model name", "Model", "Hardware"].iter().find_map(|key| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == *key && !v.trim().is_empty()).then(|| v.trim().to_string())
        })
    })
}

/// Formats `t` as RFC 3339 in UTC with whole seconds: `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs_f64().ceil() as i64),
    };
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// (year, month, day) of the day `z` days after 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64) -> String {
        rfc3339_utc(UNIX_EPOCH + Duration::from_secs(secs))
    }

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(at(4_102_444_799), "2099-12-31T23:59:59Z");
    }

    #[test]
    fn collect_fills_what_needs_no_gpu() {
        let s = SystemInfo::collect("CPU", "cpu", None);
        assert!(s.cpu_cores >= 1);
        assert_eq!(s.date.len(), 20);
        assert!(!s.command_line.is_empty());
    }
}
