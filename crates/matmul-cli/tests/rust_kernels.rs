//! Kernels written in Rust as kernel files (docs/rust-kernels.md), end to end through the binary:
//! a file outside the subset is exit status 2 naming its line and column, before any device; the
//! examples' generated CUDA compiles with NVRTC and is the registry's `@rs` code; on a wgpu
//! adapter (lavapipe in CI) the examples, a 1-D kernel at its default grid and `new-kernel
//! --rust`'s stub once filled in pass `--check-shapes`; `show --lang ptx` prints a kernel's PTX
//! and ptxas's line. As in tests/byok.rs, the tests that need NVRTC or an adapter are ignored
//! unless built with MATMUL_REQUIRE_NVRTC=1 or MATMUL_REQUIRE_WGPU=1 (CI=true); run, with
//! `--include-ignored` or so, they fail without it rather than skip.

use std::path::{Path, PathBuf};

mod common;
use common::{
    ex, input_error, matmul, need_nvrtc as nvrtc, need_wgpu as adapter, temp_dir, text, write,
};

/// The registry's 1-D kernels (`global_x()`, `#[kernel(WG, 1)]`) as kernel files.
fn registry_source(kernel: &str) -> &'static str {
    matmul::registry::rs_kernels::source_of(kernel).unwrap()
}

/// A kernel outside the subset is an input error (exit 2) naming the file, line and column, for
/// `run`, `bench` and `judge`, found before any device is opened; so are the options a Rust kernel
/// does not take. `new-kernel --rust` writes a starter that generates.
#[test]
fn a_malformed_rust_kernel_is_exit_2_at_its_line() {
    let dir = temp_dir("bad");
    let bad = write(
        &dir,
        "bad.rs",
        "// A kernel with a float literal.\n#[kernel(TILE, TILE)]\nfn bad(a: &[T], b: &[T], c: &mut [T]) {\n    let x = 1.5;\n}\n",
    );
    let cases = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/public.in");
    let cases = cases.to_string_lossy().into_owned();
    for args in [
        vec![
            "run",
            "--kernel-file",
            &bad,
            "-m",
            "8",
            "-n",
            "8",
            "-k",
            "8",
        ],
        vec!["bench", "--kernel-file", &bad, "--sizes", "8"],
        vec!["judge", "--kernel-file", &bad, &cases],
    ] {
        let err = input_error(&args);
        assert!(
            err.contains("bad.rs:4:13: kernel: this literal is outside the kernel subset"),
            "{args:?}: {err}"
        );
    }
    let syntax = write(
        &dir,
        "syntax.rs",
        "#[kernel(TILE, TILE)]\nfn s(a: &[T], b: &[T], c: &mut [T]) {\n    let x = ;\n}\n",
    );
    let zero = write(
        &dir,
        "zero.rs",
        "#[kernel(TILE, TILE)]\nfn z(a: &[T], b: &[T], c: &mut [T]) {\n    let s = shared::<T>(TILE - 16);\n}\n",
    );
    let naive = ex("naive.rs");
    for (args, want) in [
        (
            vec!["--kernel-file", zero.as_str(), "--backend", "wgpu"],
            "zero.rs:3:25: kernel: shared array `s`'s length `TILE - 16` is 0 with TILE = 16",
        ),
        (vec!["--kernel-file", syntax.as_str()], "syntax.rs:3:"),
        (
            vec!["--kernel-file", &naive, "--block", "8,8"],
            "--block does not apply to a .rs kernel",
        ),
        (
            vec!["--kernel-file", &naive, "--entry", "x"],
            "--entry does not apply to a .rs kernel",
        ),
        (
            vec!["--kernel-file", &naive, "--backend", "cpu"],
            "--backend cpu does not go with a rust kernel",
        ),
        (
            vec!["--kernel-file", &naive, "--grid", "cdiv(N,X)"],
            "unknown variable `X`",
        ),
        (
            vec!["--kernel-file", &ex("naive.cu"), "--backend", "wgpu"],
            "--backend does not apply to --kernel-file",
        ),
    ] {
        let mut a = vec!["run", "-m", "8", "-n", "8", "-k", "8"];
        a.extend(args.iter().copied());
        let err = input_error(&a);
        assert!(err.contains(want), "{a:?}: {err}");
    }

    let d = dir.to_string_lossy().into_owned();
    let o = matmul(&["new-kernel", "mine", "--rust", "--dir", &d]);
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    let stub = std::fs::read_to_string(dir.join("mine.rs")).unwrap();
    assert!(
        stub.contains("#[kernel(TILE, TILE)]\nfn mine(") && stub.contains("docs/rust-kernels.md"),
        "{stub}"
    );
    assert!(matmul::user::generate_rust("mine.rs", &stub).is_ok());
    // A name the generated code takes for itself cannot name the kernel.
    let o = matmul(&["new-kernel", "main", "--rust", "--dir", &d]);
    assert_eq!(o.status.code(), Some(2), "{:?}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The examples are the registry's naive@rs and tiled@rs: their generated CUDA is the registry's
/// code, but for its first line and entry point.
#[test]
fn the_examples_are_the_registry_kernels() {
    for (file, registry) in [
        ("naive.rs", matmul::registry::rs_kernels::naive::CUDA),
        ("tiled.rs", matmul::registry::rs_kernels::tiled::CUDA),
    ] {
        let g =
            matmul::user::generate_rust(file, &std::fs::read_to_string(ex(file)).unwrap()).unwrap();
        let body = |s: &str| -> String {
            s.lines().skip(1).collect::<Vec<_>>().join("\n").replace(
                &format!("void {}_rs(", g.name),
                &format!("void {}(", g.name),
            )
        };
        assert_eq!(body(&g.own_cuda), body(registry), "{file}");
    }
}

/// `show --lang ptx` refuses what it cannot show without compiling anything.
#[test]
fn show_ptx_refuses_what_it_cannot_show() {
    for (args, want) in [
        (
            vec!["show", "wgpu-tiled@rs", "--lang", "ptx"],
            "has no ptx source",
        ),
        (
            vec!["show", "tiled@rs", "--lang", "ptx", "--arch", "90"],
            "sm_XX or sm_XXa",
        ),
        (
            vec!["show", "tiled@rs", "--arch", "sm_80"],
            "--arch applies to --lang ptx",
        ),
    ] {
        let err = input_error(&args);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// The CUDA generated from every Rust kernel file (the examples, the registry's 1-D kernels,
/// `new-kernel --rust`'s stub) compiles with NVRTC for sm_80 and sm_90a, f32 and u32, with the
/// own-kernel ABI's defines.
#[test]
#[cfg_attr(
    not(matmul_require_nvrtc),
    ignore = "needs libnvrtc: MATMUL_REQUIRE_NVRTC=1 cargo test, or -- --include-ignored"
)]
fn generated_cuda_compiles_with_nvrtc() {
    nvrtc();
    let dir = temp_dir("nvrtc");
    let d = dir.to_string_lossy().into_owned();
    assert_eq!(
        matmul(&["new-kernel", "mine", "--rust", "--dir", &d])
            .status
            .code(),
        Some(0)
    );
    let files = [
        ex("naive.rs"),
        ex("tiled.rs"),
        write(&dir, "ele.rs", registry_source("ele@rs")),
        write(&dir, "row.rs", registry_source("row@rs")),
        dir.join("mine.rs").to_string_lossy().into_owned(),
    ];
    let cache = matmul::cuda::DiskCache::disabled();
    let e = |s: &str| matmul::user::Expr::parse(s).unwrap();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let g = matmul::user::generate_rust(file, &text).unwrap();
        for dtype in [matmul::DType::F32, matmul::DType::U32] {
            let kernel = matmul::user::UserKernel {
                path: file.clone(),
                text: text.clone(),
                lang: matmul::user::Lang::Rust,
                entry: g.name.clone(),
                dtype,
                defines: vec![("TILE".into(), "16".into()), ("WG".into(), "256".into())],
                grid: [e("1"), e("1"), e("1")],
                block: [e("1"), e("1"), e("1")],
                shared: e("0"),
                zero_c: false,
            }
            .generated_for(matmul::user::Lang::Cuda)
            .unwrap();
            for arch in ["sm_80", "sm_90a"] {
                let c = matmul::cuda::compile_source(
                    &kernel.path,
                    &kernel.text,
                    &kernel.cuda_defines(),
                    arch,
                    &cache,
                )
                .unwrap_or_else(|e| panic!("{file} ({dtype}, {arch}): {e}\n{}", kernel.text));
                let f = c.function(&kernel.entry).expect("ptxas reports the entry");
                assert!(!f.spills(), "{file} ({dtype}, {arch}) spills: {f:?}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `show KERNEL --lang ptx`: the PTX NVRTC writes for the kernel, then ptxas's line.
#[test]
#[cfg_attr(
    not(matmul_require_nvrtc),
    ignore = "needs libnvrtc: MATMUL_REQUIRE_NVRTC=1 cargo test, or -- --include-ignored"
)]
fn show_prints_ptx_and_the_registers() {
    nvrtc();
    let o = matmul(&["show", "tiled@rs", "--lang", "ptx"]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(out.contains(".visible .entry tiled_rs("), "{out}");
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("// ptxas sm_") && last.contains(" registers, 0 bytes spill stores"),
        "{last}"
    );
    let o = matmul(&[
        "show", "naive", "--lang", "ptx", "--arch", "sm_80", "--dtype", "u32",
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        out.contains(".target sm_80") && out.contains(".visible .entry naive("),
        "{out}"
    );
    assert!(out.contains("// ptxas sm_80 naive: "), "{out}");
}

fn run_passes(args: &[&str]) -> String {
    let mut a = vec!["run", "--backend", "wgpu", "--check-shapes"];
    a.extend(args.iter().copied());
    let o = matmul(&a);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{a:?}\n{out}\n{err}");
    // The run's check and every shape of the sweep.
    assert_eq!(out.matches("PASS").count(), 9, "{a:?}\n{out}");
    assert!(!out.contains("FAIL"), "{out}");
    out
}

/// On wgpu: the examples (at the default TILE and at -D TILE=8, f32 and u32, transposed), the
/// registry's ELE at its default 1-D grid and ROW at a grid of its own pass the sweep; the
/// stub fails until filled in; `bench` reports the file as a Rust kernel.
#[test]
#[cfg_attr(
    not(matmul_require_wgpu),
    ignore = "needs a wgpu adapter (lavapipe will do): MATMUL_REQUIRE_WGPU=1 cargo test, or -- --include-ignored"
)]
fn rust_kernels_verify_on_wgpu() {
    adapter();
    let (naive, tiled) = (ex("naive.rs"), ex("tiled.rs"));
    let out = run_passes(&[
        "--kernel-file",
        &tiled,
        "-m",
        "100",
        "-n",
        "120",
        "-k",
        "70",
    ]);
    assert!(
        out.contains("kernel   main (tiled.rs)") && out.contains("launch   [8, 7, 1] workgroups"),
        "{out}"
    );
    run_passes(&[
        "--kernel-file",
        &tiled,
        "-D",
        "TILE=8",
        "--dtype",
        "u32",
        "--transpose-a",
        "-m",
        "65",
        "-n",
        "31",
        "-k",
        "129",
    ]);
    run_passes(&[
        "--kernel-file",
        &naive,
        "--transpose-b",
        "-m",
        "33",
        "-n",
        "17",
        "-k",
        "65",
    ]);
    let dir = temp_dir("wgpu");
    let ele = write(&dir, "ele.rs", registry_source("ele@rs"));
    let out = run_passes(&["--kernel-file", &ele, "-m", "100", "-n", "120", "-k", "70"]);
    assert!(out.contains("launch   [47, 1, 1] workgroups"), "{out}");
    let row = write(&dir, "row.rs", registry_source("row@rs"));
    run_passes(&[
        "--kernel-file",
        &row,
        "-D",
        "WG=64",
        "--grid",
        "cdiv(M,WG)",
        "--dtype",
        "u32",
        "-m",
        "100",
        "-n",
        "120",
        "-k",
        "70",
    ]);

    // new-kernel --rust: generates, runs, fails on the poison; filled in, passes.
    let d = dir.to_string_lossy().into_owned();
    assert_eq!(
        matmul(&["new-kernel", "mine", "--rust", "--dir", &d])
            .status
            .code(),
        Some(0)
    );
    let f = dir.join("mine.rs").to_string_lossy().into_owned();
    let args = [
        "run",
        "--backend",
        "wgpu",
        "--kernel-file",
        &f,
        "-m",
        "20",
        "-n",
        "30",
        "-k",
        "10",
    ];
    let o = matmul(&args);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}\n{err}");
    assert!(
        out.contains("check    FAIL") && out.contains("600 mismatches"),
        "{out}"
    );
    let filled = std::fs::read_to_string(&f).unwrap().replace(
        "        // TODO:",
        "        for l in 0..k {\n            acc += a[i * a_rs + l * a_cs] * b[l * b_rs + j * b_cs];\n        }\n        c[i * n + j] = acc;\n        // TODO:",
    );
    std::fs::write(&f, filled).unwrap();
    run_passes(&["--kernel-file", &f, "-m", "20", "-n", "30", "-k", "10"]);

    // bench: the file's row, a Rust kernel in the report.
    let out_dir = dir.join("bench").to_string_lossy().into_owned();
    let o = matmul(&[
        "bench",
        "--backend",
        "wgpu",
        "--kernel-file",
        &tiled,
        "--sizes",
        "64",
        "--iters",
        "2",
        "--warmup",
        "1",
        "--out",
        &out_dir,
    ]);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(&out_dir).join("results.json")).unwrap(),
    )
    .unwrap();
    let mine = &json["records"][0];
    assert_eq!(mine["kernel"], "file:tiled.rs", "{mine}");
    assert_eq!(mine["verification"]["passed"], true, "{mine}");
    assert_eq!(mine["kernel_file"]["lang"], "rust", "{mine}");
    assert_eq!(
        mine["kernel_file"]["options"],
        serde_json::json!(["--grid", "cdiv(N,TILE),cdiv(M,TILE)"])
    );
    let _ = std::fs::remove_dir_all(&dir);
}
