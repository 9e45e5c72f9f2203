//! The library's configuration: what a program chooses once for the process (where compiled
//! kernels are cached, the host-memory limit, which wgpu adapter, NCCL's library and timeout).
//! The library reads no environment variable; the `matmul` command fills a [`Config`] from its
//! environment (docs/ARCHITECTURE.md lists the variables) and installs it with [`set`]. Without
//! one, [`Config::default`] applies: no disk cache, the OS's available memory, the first adapter.
//!
//! ```
//! let dir = std::env::temp_dir().join("matmul-cache-example");
//! matmul::config::set(matmul::Config {
//!     cache_dir: Some(dir.clone()),
//!     ..Default::default()
//! });
//! assert_eq!(matmul::config::get().cache_dir, Some(dir));
//! ```

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// Process-wide settings; every field has a default that needs no setting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    /// The compiled-kernel cache and the user's tune tables (None: no disk cache, no user table).
    pub cache_dir: Option<PathBuf>,
    /// The host-memory limit checked before allocating (None: the OS's `MemAvailable`).
    pub max_host_bytes: Option<u64>,
    /// The wgpu adapter to open: the first whose name contains this (case-insensitive).
    pub wgpu_adapter: Option<String>,
    /// How long a wgpu wait may take before it is an error (None: 600 s).
    pub wgpu_timeout: Option<Duration>,
    /// A file to open as NCCL before the usual names and directories.
    pub nccl_lib: Option<PathBuf>,
    /// How long a multi-GPU rank waits for its peers or streams (None: 300 s).
    pub nccl_timeout: Option<Duration>,
    /// The copy of the u32 CPU kernel to run (`avx512`, `avx2`, `portable`; None: the widest the
    /// CPU has), to compare them. Read once, at the first u32 product on the CPU.
    pub cpu_u32_isa: Option<String>,
}

static CONFIG: RwLock<Option<Arc<Config>>> = RwLock::new(None);

/// Installs `config` for the process; later calls replace it (backends already open keep what
/// they read when they opened).
pub fn set(config: Config) {
    *CONFIG.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(config));
}

/// The configuration in force: the last [`set`], else the default.
pub fn get() -> Arc<Config> {
    let installed = CONFIG.read().unwrap_or_else(|e| e.into_inner()).clone();
    installed.unwrap_or_default()
}
