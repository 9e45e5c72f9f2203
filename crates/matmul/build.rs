// Tests that need hardware or a library the build machine may lack are `#[ignore]`d unless this
// crate is built with the variable that promises it, so that `cargo test` without them shows
// those tests as ignored, with the reason, rather than as passed after a SKIP nobody sees:
// - `MATMUL_REQUIRE_GPU=1` sets the cfg `matmul_require_gpu`: the CUDA GPU tests (tests/gpu.rs,
//   gpu_fp32.rs, gpu_int8.rs, multi_gpu.rs);
// - `MATMUL_REQUIRE_NVRTC=1` sets `matmul_require_nvrtc`: the NVRTC compile tests
//   (tests/compile.rs);
// - `MATMUL_REQUIRE_WGPU=1`, or `CI=true` (`.ci/run`, which installs lavapipe), sets
//   `matmul_require_wgpu`: the wgpu tests (tests/wgpu.rs).
//
// Under the same variable at run time a missing GPU, NVRTC or adapter fails the test. A binary
// built without the variable runs them with `--include-ignored` (scripts/gpu-steps.sh's
// `test_step` adds it on the GPU host).
fn main() {
    for (var, cfg) in [
        ("MATMUL_REQUIRE_GPU", "matmul_require_gpu"),
        ("MATMUL_REQUIRE_NVRTC", "matmul_require_nvrtc"),
        ("MATMUL_REQUIRE_WGPU", "matmul_require_wgpu"),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        println!("cargo::rerun-if-env-changed={var}");
        if std::env::var(var).as_deref() == Ok("1") {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
    println!("cargo::rerun-if-env-changed=CI");
    if matches!(std::env::var("CI").as_deref(), Ok("true" | "1"))
        && std::env::var("MATMUL_REQUIRE_WGPU").as_deref() != Ok("1")
    {
        println!("cargo::rustc-cfg=matmul_require_wgpu");
    }
}
