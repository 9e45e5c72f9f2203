//! The GPU tests (tests/gpu.rs) are `#[ignore]`d unless this crate is built with
//! `MATMUL_REQUIRE_GPU=1` (as `MATMUL_REQUIRE_GPU=1 cargo test` builds it), which sets the cfg
//! `matmul_require_gpu`: without a GPU, `cargo test` then shows them as ignored, with the reason,
//! rather than as passed after a SKIP nobody sees.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(matmul_require_gpu)");
    println!("cargo::rerun-if-env-changed=MATMUL_REQUIRE_GPU");
    if std::env::var("MATMUL_REQUIRE_GPU").as_deref() == Ok("1") {
        println!("cargo::rustc-cfg=matmul_require_gpu");
    }
}
