//! The matmul crate's rules for tests that need hardware or a library: the cfgs
//! `matmul_require_gpu`, `matmul_require_nvrtc` and `matmul_require_wgpu`, set from
//! MATMUL_REQUIRE_GPU, MATMUL_REQUIRE_NVRTC and MATMUL_REQUIRE_WGPU (or CI=true) at build time,
//! un-ignore the tests of tests/byok.rs that need them.
include!("../matmul/build.rs");
