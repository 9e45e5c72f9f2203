//! Records the commit this crate is built from (`MATMUL_BUILD_COMMIT`, and `MATMUL_BUILD_DIRTY`
//! = 1 when tracked files differ from it), so a report names the code that ran. Asking git at run
//! time named whatever repository the working directory held: on the GPU host, a copy of the tree
//! whose `.git` lagged the bundle, so reports carried an old commit marked dirty.
use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    // The browser tests (tests/browser.rs) are #[ignore]d unless built with CI=true (.ci/run
    // installs Chromium) or MATMUL_REQUIRE_BROWSER=1, which set the cfg `matmul_require_browser`:
    // without a browser `cargo test` counts them as ignored, not passed.
    println!("cargo::rustc-check-cfg=cfg(matmul_require_browser)");
    println!("cargo:rerun-if-env-changed=CI");
    println!("cargo:rerun-if-env-changed=MATMUL_REQUIRE_BROWSER");
    if matches!(std::env::var("CI").as_deref(), Ok("true" | "1"))
        || std::env::var("MATMUL_REQUIRE_BROWSER").as_deref() == Ok("1")
    {
        println!("cargo:rustc-cfg=matmul_require_browser");
    }
    if let Some(dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let dir = Path::new(&dir);
        // Rebuild when HEAD moves (a checkout or a commit) or the index changes.
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        println!("cargo:rerun-if-changed={}", dir.join("index").display());
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", dir.join(branch).display());
        }
        // ... and when a source file of the workspace changes (the dirty flag).
        if let Some(top) = git(&["rev-parse", "--show-toplevel"]) {
            println!(
                "cargo:rerun-if-changed={}",
                Path::new(&top).join("crates").display()
            );
        }
    }
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    let dirty = match git(&["status", "--porcelain", "--untracked-files=no"]) {
        Some(s) if s.is_empty() => "0",
        Some(_) => "1",
        None => "",
    };
    println!("cargo:rustc-env=MATMUL_BUILD_COMMIT={commit}");
    println!("cargo:rustc-env=MATMUL_BUILD_DIRTY={dirty}");
}
