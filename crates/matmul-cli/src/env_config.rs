//! The environment, read here and nowhere else: the variables that configure the library
//! ([`matmul::Config`], installed before any command runs). docs/ARCHITECTURE.md lists them.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// Keeps the Vulkan loader's window-system probe quiet on machines without a desktop session
/// (ssh logins, containers, CI): with XDG_RUNTIME_DIR unset, libwayland prints "error:
/// XDG_RUNTIME_DIR is invalid or not set in the environment." on every adapter probe. It is
/// pointed at a private empty directory instead (no display server there: the probe finds none,
/// quietly). Called first thing in `main`, before any thread starts.
pub fn quiet_window_system() {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, MetadataExt};
        if std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|v| !v.is_empty()) {
            return;
        }
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let dir = std::env::temp_dir().join(format!("matmul-runtime-{uid}"));
        let made = std::fs::DirBuilder::new().mode(0o700).create(&dir);
        let ours = std::fs::symlink_metadata(&dir)
            .is_ok_and(|m| m.is_dir() && m.uid() == uid && m.mode() & 0o077 == 0);
        if (made.is_ok() || dir.is_dir()) && ours {
            // Single-threaded here (the first line of main).
            std::env::set_var("XDG_RUNTIME_DIR", &dir);
        }
    }
}

/// The library's configuration from this process's environment.
pub fn from_env() -> matmul::Config {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let text = |k: &str| std::env::var(k).ok();
    let seconds = |k: &str| {
        text(k)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64)
    };
    matmul::Config {
        cache_dir: cache_dir(
            std::env::var_os("MATMUL_CACHE_DIR"),
            var("XDG_CACHE_HOME"),
            var("HOME"),
        ),
        max_host_bytes: text("MATMUL_MAX_HOST_BYTES").and_then(|v| v.parse().ok()),
        wgpu_adapter: text("WGPU_ADAPTER_NAME").filter(|s| !s.is_empty()),
        wgpu_timeout: seconds("MATMUL_WGPU_TIMEOUT_S"),
        nccl_lib: var("MATMUL_NCCL_LIB").map(PathBuf::from),
        nccl_timeout: text("MATMUL_NCCL_TIMEOUT_S")
            .and_then(|s| s.parse::<u64>().ok())
            .filter(|&s| s > 0)
            .map(Duration::from_secs),
        cpu_u32_isa: text("MATMUL_CPU_U32_ISA"),
    }
}

/// `$MATMUL_CACHE_DIR` (`off` or empty: none), else `$XDG_CACHE_HOME/matmul`, else
/// `$HOME/.cache/matmul`.
fn cache_dir(
    explicit: Option<OsString>,
    xdg: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    match explicit {
        Some(v) if v.is_empty() || v.eq_ignore_ascii_case("off") => None,
        Some(v) => Some(PathBuf::from(v)),
        None => xdg
            .map(|d| PathBuf::from(d).join("matmul"))
            .or_else(|| home.map(|h| PathBuf::from(h).join(".cache").join("matmul"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_directory_follows_the_variables_in_order() {
        let s = |v: &str| Some(OsString::from(v));
        assert_eq!(cache_dir(s("off"), s("/x"), s("/h")), None);
        assert_eq!(cache_dir(s(""), None, s("/h")), None);
        assert_eq!(cache_dir(s("/c"), s("/x"), None), Some("/c".into()));
        assert_eq!(cache_dir(None, s("/x"), s("/h")), Some("/x/matmul".into()));
        assert_eq!(
            cache_dir(None, None, s("/h")),
            Some("/h/.cache/matmul".into())
        );
        assert_eq!(cache_dir(None, None, None), None);
    }
}
