use super::*;

fn gen(src: &str) -> syn::Result<Generated> {
    let item: ItemFn = syn::parse_str(src).unwrap();
    let attr: proc_macro2::TokenStream = "TILE, TILE".parse().unwrap();
    generate(attr, &item)
}

/// A kernel inside the subset generates both forms of both languages.
#[test]
fn the_subset_generates() {
    let g = gen("fn k1(a: &[T], b: &[T], c: &mut [T]) { let i = thread_x(); if i < n { c[i] = a[i] * b[i]; } }")
        .unwrap();
    assert_eq!(g.name, "k1");
    assert_eq!(g.workgroup, ("TILE".into(), "TILE".into()));
    assert_eq!(g.constants, ["TILE"]);
    assert!(!g.global_x);
    assert!(g.cuda.contains("void k1_rs("), "{}", g.cuda);
    assert!(g.wgsl.contains("ld_a(i)"), "{}", g.wgsl);
    assert!(g.own_cuda.contains("void k1("), "{}", g.own_cuda);
    // The own-kernel WGSL reads the bindings and types every declaration.
    assert!(
        g.own_wgsl.contains("let i: u32 = lid.x;") && g.own_wgsl.contains("a[i] * b[i]"),
        "{}",
        g.own_wgsl
    );
}

/// Whatever lies outside the subset is an error that names it (at its span), never a panic.
#[test]
fn outside_the_subset_is_an_error() {
    for (src, what) in [
        (
            "fn k(a: &[T], b: &[T], c: &mut [T]) { while true {} }",
            "this statement",
        ),
        (
            "fn k(a: &[T], b: &[T], c: &mut [T]) { let x = 1.5; }",
            "this literal",
        ),
        (
            "fn k(a: &[T], b: &[T], c: &mut [T]) { a[0] = zero(); }",
            "writing to this array",
        ),
        (
            "fn k(a: &[T], b: &[T], c: &mut [T]) { let x = y; }",
            "this name",
        ),
        (
            "fn k(a: &[T], b: &[T], c: &mut [T]) { let x = zero() + 1; }",
            "arithmetic mixing",
        ),
        ("fn k(x: &[T]) {}", "the signature"),
        (
            "fn k(a: &[T], b: &[T], c: &mut [T]) { for i in 0..=3 {} }",
            "this range",
        ),
    ] {
        let e = gen(src).unwrap_err().to_string();
        assert!(e.contains(what), "{src}: {e}");
    }
}

/// What the C++ or WGSL compiler would refuse in the generated code is refused in the Rust:
/// mixed types, conditions that are not comparisons, assignments to what is not mutable, a name
/// declared twice in a block or taken by the generated code, a literal beyond u32.
#[test]
fn type_and_name_errors_are_found_in_the_rust() {
    for (body, what) in [
        ("let i = thread_x(); if i { }", "an `if` on an index"),
        ("let x = 1; x = 2;", "not mutable"),
        (
            "let mut x = 1; x = zero();",
            "assigning an element (T) to an index",
        ),
        ("c[0] = 1;", "assigning an index (u32) to an element"),
        ("let x = 1; let x = 2;", "declared twice"),
        ("for i in 0..4 { let i = 1; }", "declared twice"),
        ("let int = 1;", "`int` is a name the generated"),
        ("let m = 1;", "`m` is a name the generated"),
        ("let x = 4294967296;", "above u32's largest"),
        ("let x = 1u64;", "integers are u32"),
        (
            "let b2 = thread_x() < zero();",
            "`<` of an index (u32) and an element",
        ),
        ("let ok = 1 && 2;", "`&&` of an index"),
        ("let x: T = 1;", "declared an element (T)"),
        ("let s = shared::<T>(n);", "constant expression"),
    ] {
        let src = format!("fn k(a: &[T], b: &[T], c: &mut [T]) {{ {body} }}");
        let e = gen(&src).unwrap_err().to_string();
        assert!(e.contains(what), "{body}: {e}");
    }
    // Within the rules: a condition bound to a name, a typed `let`, shadowing in an inner block.
    let g = gen("fn k(a: &[T], b: &[T], c: &mut [T]) { let i: u32 = thread_x(); let ok = i < n && !(i == 3); if ok { let i = 2; c[i] = zero(); } }").unwrap();
    assert!(
        g.cuda.contains("const bool ok = i < n && !((i == 3));"),
        "{}",
        g.cuda
    );
    assert!(
        g.own_wgsl.contains("let ok: bool = i < p.n"),
        "{}",
        g.own_wgsl
    );
}

/// A kernel file: comments and `use` around one `#[kernel]` fn; an error at its line and column.
#[test]
fn a_kernel_file_generates_and_places_its_errors() {
    let src = "// A kernel.\nuse matmul_macros::kernel;\n\n/// Docs.\n#[matmul_macros::kernel(WG, 1)]\nfn e(a: &[T], b: &[T], c: &mut [T]) {\n    let idx = global_x();\n    if idx < m * n {\n        c[idx] = zero();\n    }\n}\n";
    let g = generate_from_str(src).unwrap();
    assert_eq!(g.name, "e");
    assert_eq!(g.workgroup, ("WG".into(), "1".into()));
    assert_eq!(g.constants, ["WG"]);
    assert!(g.global_x);
    assert!(
        g.own_wgsl.contains("@workgroup_size(WG, 1u)"),
        "{}",
        g.own_wgsl
    );

    let bad = src.replace("c[idx] = zero();", "c[idx] = 1.5;");
    let e = generate_from_str(&bad).unwrap_err();
    assert_eq!((e.line, e.column), (9, 18), "{e}");
    assert!(e.message.contains("this literal"), "{e}");
    assert!(e.to_string().starts_with("9:18: kernel: "), "{e}");

    // A syntax error is syn's, at its place.
    let e = generate_from_str(
        "#[kernel(TILE, TILE)]\nfn k(a: &[T], b: &[T], c: &mut [T]) {\n    let x = ;\n}\n",
    )
    .unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    for (src, what, line) in [
        ("fn k(a: &[T], b: &[T], c: &mut [T]) {}", "without #[kernel", 1),
        ("// nothing\n", "no #[kernel(X, Y)] fn", 1),
        ("#[kernel(TILE)]\nfn k(a: &[T], b: &[T], c: &mut [T]) {}", "x and y sizes", 1),
        ("#[kernel(TILE, k)]\nfn k(a: &[T], b: &[T], c: &mut [T]) {}", "constant expression", 1),
        ("const X: u32 = 1;\n#[kernel(1, 1)]\nfn k(a: &[T], b: &[T], c: &mut [T]) {}", "not this item", 1),
        ("#[kernel(1, 1)]\nfn k(a: &[T], b: &[T], c: &mut [T]) {}\n#[kernel(1, 1)]\nfn j(a: &[T], b: &[T], c: &mut [T]) {}", "a second", 4),
        ("#[kernel(1, 1)]\nfn main(a: &[T], b: &[T], c: &mut [T]) {}", "`main` is a name", 2),
    ] {
        let e = generate_from_str(src).unwrap_err();
        assert!(e.message.contains(what), "{src}: {e}");
        assert_eq!(e.line, line, "{src}: {e}");
    }
}

/// What WGSL would evaluate while compiling is checked here first: a constant divisor of 0, a
/// constant of literals outside u32, a literal size of 0, and (once the constants' values are
/// known) a size that names TILE and comes to 0, each an error at its line and column.
#[test]
fn sizes_and_constants_wgsl_would_refuse_are_errors() {
    let file = |attr: &str, body: &str| {
        format!("#[kernel({attr})]\nfn k(a: &[T], b: &[T], c: &mut [T]) {{\n{body}\n}}\n")
    };
    for (src, what, line) in [
        (file("TILE, 0", ""), "workgroup size is at least 1", 1),
        (file("TILE, TILE", "    let x = m / 0;"), "`/` by 0", 3),
        (
            file("TILE, TILE", "    let x = m % (2 - 2);"),
            "`%` by 0",
            3,
        ),
        (
            file("TILE, TILE", "    let x = m + 4294967295 * 2;"),
            "leaves u32",
            3,
        ),
        (
            file("TILE, TILE", "    let s = shared::<T>(3 - 3);"),
            "length is at least 1",
            3,
        ),
    ] {
        let e = generate_from_str(&src).unwrap_err();
        assert!(e.message.contains(what), "{src}: {e}");
        assert_eq!(e.line, line, "{src}: {e}");
    }
    let src = file(
        "TILE, TILE",
        "    let s = shared::<T>(TILE - 16);\n    let t = shared::<T>(TILE);",
    );
    let g = generate_from_str(&src).unwrap();
    let at = |tile: u64| move |n: &str| (n == "TILE").then_some(tile);
    assert!(g.check_sizes(&at(32)).is_ok());
    let e = g.check_sizes(&at(16)).unwrap_err();
    assert_eq!((e.line, e.column), (3, 25), "{e}");
    assert!(
        e.message
            .contains("shared array `s`'s length `TILE - 16` is 0 with TILE = 16"),
        "{e}"
    );
    let e = g.check_sizes(&at(8)).unwrap_err();
    assert!(e.message.contains("leaves u32"), "{e}");
    // A constant it is not told is left to the compiler.
    assert!(g.check_sizes(&|_| None).is_ok());
}
