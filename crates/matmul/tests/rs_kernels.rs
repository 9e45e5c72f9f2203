//! The kernels written once in Rust (registry/rs_kernels.rs, `#[matmul_macros::kernel]`): their
//! generated CUDA C++ and WGSL pinned by golden files (tests/data/rs_kernels/), so a change to the
//! generator or to a kernel shows as a diff of the code a learner reads. After an intended
//! change: `MATMUL_BLESS=1 cargo test -p matmul --test rs_kernels` rewrites them. Whether the code
//! runs is the sweeps' business (tests/gpu.rs, tests/wgpu.rs), and whether it compiles
//! tests/compile.rs's and tests/wgsl_targets.rs's.

use matmul::registry::rs_kernels;

fn golden(file: &str, generated: &str) {
    let path = format!(
        "{}/tests/data/rs_kernels/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    if std::env::var("MATMUL_BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, generated).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    assert_eq!(
        generated, want,
        "{file} differs from the generated code (MATMUL_BLESS=1 rewrites it)"
    );
}

#[test]
fn generated_code_is_pinned() {
    golden("naive.cu", rs_kernels::naive::CUDA);
    golden("naive.wgsl", rs_kernels::naive::WGSL);
    golden("tiled.cu", rs_kernels::tiled::CUDA);
    golden("tiled.wgsl", rs_kernels::tiled::WGSL);
    golden("row.cu", rs_kernels::row::CUDA);
    golden("row.wgsl", rs_kernels::row::WGSL);
    golden("ele.cu", rs_kernels::ele::CUDA);
    golden("ele.wgsl", rs_kernels::ele::WGSL);
}

/// The Rust each kernel was written in, as `matmul show --lang rust` prints it: its comment,
/// attribute and function, whole; None for a hand-written kernel.
#[test]
fn the_rust_source_is_found() {
    let tiled = rs_kernels::source_of("tiled@rs").unwrap();
    assert!(
        tiled.starts_with("// Sarek's 16×16 tiled kernel"),
        "{tiled}"
    );
    assert!(tiled.contains("#[kernel(TILE, TILE)]\nfn tiled(") && tiled.ends_with("}\n"));
    assert_eq!(tiled.matches("superstep();").count(), 2);
    assert_eq!(
        rs_kernels::source_of("wgpu-naive@rs"),
        rs_kernels::source_of("naive@rs")
    );
    assert!(rs_kernels::source_of("naive@rs")
        .unwrap()
        .contains("fn naive("));
    assert!(rs_kernels::source_of("ele@rs")
        .unwrap()
        .contains("global_x()"));
    assert_eq!(rs_kernels::source_of("tiled"), None);
    assert_eq!(rs_kernels::source_of("wgmma@rs"), None);
}
