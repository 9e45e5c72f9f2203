//! Host memory: the check before a large allocation.

use crate::core::config;
use crate::core::error::{Error, Result};
use crate::core::problem::Problem;

/// Refuses, before allocating, a host allocation larger than the memory the OS reports available
/// (Linux `MemAvailable`), or than [`Config::max_host_bytes`](crate::Config::max_host_bytes) when that is set; elsewhere only the
/// checked size arithmetic applies.
pub fn ensure_host_memory(problem: &Problem, bytes: usize) -> Result<()> {
    if let Some(avail) = available_memory() {
        if bytes as u64 > avail {
            return Err(Error::Invalid(format!(
                "{problem} needs {bytes} bytes of host memory; only {avail} are available"
            )));
        }
    }
    Ok(())
}

/// The host memory available for allocations, bytes: the configured limit
/// ([`Config::max_host_bytes`](crate::Config::max_host_bytes)) when set, else Linux
/// `MemAvailable`; `None` when neither is known.
pub fn available_memory() -> Option<u64> {
    if let Some(limit) = config::get().max_host_bytes {
        return Some(limit);
    }
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
