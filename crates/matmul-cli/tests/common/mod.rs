//! What the CLI's end-to-end tests share: the example kernels, running the binary, temporary
//! directories, and the hardware a test needs. A test that needs NVRTC, a wgpu adapter or a GPU
//! is `#[ignore]`d unless built with MATMUL_REQUIRE_NVRTC=1, MATMUL_REQUIRE_WGPU=1 (or CI=true)
//! or MATMUL_REQUIRE_GPU=1 (build.rs); run anyway (`--include-ignored`) without it, it fails
//! rather than skip.
#![allow(dead_code)] // each test file uses its own part

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/kernels")
}

/// The path of example kernel `name`.
pub fn ex(name: &str) -> String {
    examples().join(name).to_string_lossy().into_owned()
}

/// The `matmul` binary run with `args`.
pub fn matmul(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_matmul"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// stdout and stderr as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The binary run with `args` must exit 2 (an input error); its stderr.
pub fn input_error(args: &[&str]) -> String {
    let o = matmul(args);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    err
}

/// A fresh, empty temporary directory for test `tag`.
pub fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("matmul-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Writes `text` to `dir/name` and returns its path.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.to_string_lossy().into_owned()
}

/// A wgpu adapter, here or the test fails.
pub fn need_wgpu() {
    if let Err(e) = matmul::WgpuBackend::new() {
        panic!("no wgpu adapter (lavapipe will do: docs/wgpu.md): {e}");
    }
}

/// NVRTC, here or the test fails.
pub fn need_nvrtc() {
    if let Err(e) = matmul::cuda::nvrtc_version() {
        panic!("NVRTC cannot be loaded (put libnvrtc.so.13's directory on LD_LIBRARY_PATH): {e}");
    }
}

/// A CUDA GPU, here or the test fails.
pub fn need_gpu() {
    if let Err(e) = matmul::CudaBackend::new(0) {
        panic!("no CUDA GPU: {e}");
    }
}
