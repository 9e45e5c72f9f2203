//! Fuzzing of every input parser (issue: reliability), with a bounded budget per run: random and
//! mutated strings never panic, and what parses round-trips through its printed form. The
//! budget is proptest's case count: `PROPTEST_CASES=200000 cargo test --release --test fuzz`
//! (scripts/fuzz.sh) for a long run; the default here is a few thousand cases per parser.

use matmul::compat::judge::parse_cases;
use matmul::compat::puzzles::PuzzleName;
use matmul::registry::KERNELS;
use matmul::tune::TuneTable;
use matmul::{BackendChoice, DType, Op, Problem, RunOptions, Shape, Tiling};
use proptest::prelude::*;

/// Cases per property unless PROPTEST_CASES says otherwise.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Strings that look like the inputs (digits, separators, signs, letters of the grammars, odd
/// whitespace and multi-byte characters) more often than uniform noise would.
fn inputish() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[0-9xX*/ \t\r\n.,+eEsbrpwnot#\u{feff}é-]{0,40}",
        "[0-9]{1,25}( [0-9]{1,25}){0,5}",
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Judge input: never a panic; every case parsed from well-formed triples comes back.
    #[test]
    fn judge_input_never_panics(text in inputish()) {
        for case in parse_cases(&text) {
            if case.is_err() {
                break;
            }
        }
    }

    #[test]
    fn judge_triples_round_trip(
        triples in prop::collection::vec((1u32..5000, any::<u32>(), any::<u32>()), 1..20),
        sep in "[ \t\n\r]{1,3}",
    ) {
        let text = triples
            .iter()
            .map(|(n, a, b)| format!("{n}{sep}{a}{sep}{b}"))
            .collect::<Vec<_>>()
            .join(&sep);
        let got: Vec<_> = parse_cases(&text)
            .map(|c| c.map(|c| (c.n, c.s1, c.s2)).ok())
            .collect();
        let want: Vec<_> = triples.iter().map(|&t| Some(t)).collect();
        prop_assert_eq!(got, want);
    }

    /// Shapes: never a panic; an error names the input; `MxNxK` round-trips.
    #[test]
    fn shapes_never_panic(text in inputish()) {
        if let Err(e) = text.parse::<Shape>() {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn shapes_round_trip(m in 1usize..1 << 40, n in 1usize..1 << 40, k in 1usize..1 << 40) {
        let s: Shape = format!("{m}x{n}x{k}").parse().unwrap();
        prop_assert_eq!((s.m, s.n, s.k), (m, n, k));
    }

    /// Tilings: never a panic; what parses prints as a string that parses to the same tiling.
    #[test]
    fn tilings_never_panic_and_round_trip(text in prop_oneof![
        inputish(),
        "[0-9]{1,4}x[0-9]{1,4}x[0-9]{1,3}/[0-9]{1,2}x[0-9]{1,2}(/w[0-9]{1,3}x[0-9]{1,3}n[0-9])?(/s[0-9])?(/p[0-9])?(/b[0-9])?(/r[0-9]{1,3})?(/o[0-3])?",
    ]) {
        if let Ok(t) = text.parse::<Tiling>() {
            let again: Tiling = t.to_string().parse().unwrap();
            prop_assert_eq!(again, t);
        }
    }

    /// The small enumerations: never a panic.
    #[test]
    fn names_never_panic(text in inputish()) {
        let _ = text.parse::<DType>();
        let _ = text.parse::<BackendChoice>();
        let _ = text.parse::<PuzzleName>();
        let _ = matmul::find(&text);
    }

    /// A tune table is JSON from a file anyone can edit: a corrupt one is an error, not a panic.
    #[test]
    fn tune_json_never_panics(text in prop_oneof![
        inputish(),
        r#"\{"entries":\[\{"kernel":"[a-z-]{0,12}","dtype":"[a-z0-9]{0,5}","class":"[a-z]{0,7}","shape":"[0-9x]{0,12}","tiling":"[0-9x/wnsp]{0,24}","rate_gops":[0-9.e-]{0,8},"default_rate_gops":[0-9]{0,5}\}\]\}"#,
    ]) {
        let _ = serde_json::from_str::<TuneTable>(&text);
    }

    /// Any shape, ops and dtype against every kernel's rules: an answer, never a panic (sizes
    /// up to 2^40, where element counts overflow 32-bit indexing and byte counts grow huge).
    #[test]
    fn rules_never_panic(
        m in prop_oneof![1usize..300, 1usize..1 << 40],
        n in prop_oneof![1usize..300, 1usize..1 << 40],
        k in prop_oneof![1usize..300, 1usize..1 << 40],
        ta in any::<bool>(), tb in any::<bool>(), d in 0usize..5,
    ) {
        let op = |t| if t { Op::T } else { Op::N };
        let p = Problem::new(m, n, k, DType::ALL[d]).with_ops(op(ta), op(tb));
        let _ = (p.flops(), p.min_bytes(), p.to_string());
        for kernel in KERNELS {
            let _ = kernel.can_run(&p, None, &RunOptions::default());
        }
    }
}

/// The kernels written in the Rust subset that the mutations start from: the registry's four and
/// the two example files.
fn rust_kernel_sources() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = ["naive@rs", "tiled@rs", "ele@rs", "row@rs"]
        .iter()
        .map(|k| matmul::registry::rs_kernels::source_of(k).expect("a registry Rust kernel"))
        .collect();
    out.push(include_str!("../../../examples/kernels/naive.rs"));
    out.push(include_str!("../../../examples/kernels/tiled.rs"));
    out
}

/// Rust-ish tokens a mutation puts in: the subset's own words and some from outside it.
#[rustfmt::skip]
const RUST_TOKENS: &[&str] = &[
    "let", "mut", "for", "in", "if", "else", "while", "loop", "return", "fn", "0", "1", "16",
    "4294967296", "0..k", "..", "TILE", "WG", "m", "n", "k", "a", "b", "c", "i", "j", "l", "acc",
    "a_rs", "b_cs", "zero()", "thread_x()", "block_y()", "global_x()", "superstep()",
    "shared::<T>(4)", "shared::<u32>(4)", "T", "u32", "f32", "f16", "1.5", "as", "+", "-", "*", "/",
    "%", "<", "<=", "==", "!=", "&&", "||", "!", "&", "=", "+=", "-=", "*=", "/=", "[", "]", "(",
    ")", "{", "}", ";", ",", ":", "::", "'", "\"", "#", "é", "\n",
];

/// One edit of a kernel's text at a token boundary: delete, duplicate or replace a token, or
/// insert one of [`RUST_TOKENS`].
fn mutate(text: &str, edits: &[(usize, usize, usize)]) -> String {
    // Tokens: runs of identifier characters, runs of whitespace, single other characters.
    let mut tokens: Vec<String> = Vec::new();
    for ch in text.chars() {
        let word = |c: char| c.is_alphanumeric() || c == '_';
        match tokens.last_mut() {
            Some(t) if word(ch) && t.chars().all(word) => t.push(ch),
            Some(t) if ch.is_whitespace() && t.chars().all(char::is_whitespace) => t.push(ch),
            _ => tokens.push(ch.to_string()),
        }
    }
    for &(at, kind, pick) in edits {
        if tokens.is_empty() {
            break;
        }
        let at = at % tokens.len();
        let new = RUST_TOKENS[pick % RUST_TOKENS.len()].to_string();
        match kind % 4 {
            0 => {
                tokens.remove(at);
            }
            1 => {
                let t = tokens[at].clone();
                tokens.insert(at, t);
            }
            2 => tokens[at] = new,
            _ => tokens.insert(at, new),
        }
    }
    tokens.concat()
}

/// `text` as `--kernel-file mutated.rs` takes it: a Rust kernel, the constants at their defaults.
fn kernel_file(text: &str, dtype: DType) -> matmul::user::UserKernel {
    use matmul::user::{Expr, Lang, UserKernel, RUST_CONSTANTS};
    UserKernel {
        path: "mutated.rs".into(),
        text: text.to_string(),
        lang: Lang::Rust,
        entry: String::new(),
        dtype,
        defines: RUST_CONSTANTS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        grid: std::array::from_fn(|_| Expr::constant(1)),
        block: std::array::from_fn(|_| Expr::constant(1)),
        shared: Expr::constant(0),
        zero_c: false,
    }
}

proptest! {
    #![proptest_config(config())]

    /// A kernel file in the Rust subset, mutated, as `--kernel-file` takes it (the constants at
    /// their defaults): generating it never panics; what is refused names a line and column
    /// within the file; what is accepted is WGSL that naga validates, for f32 and u32 (a
    /// generated shader wgpu would refuse is a generator bug, not the user's).
    #[test]
    fn rust_kernel_mutations_are_errors_or_valid_wgsl(
        base in 0usize..6,
        edits in prop::collection::vec((any::<usize>(), any::<usize>(), any::<usize>()), 1..4),
    ) {
        use matmul::user::Lang;
        let src = rust_kernel_sources()[base];
        let text = mutate(src, &edits);
        for dtype in [DType::F32, DType::U32] {
            let kernel = kernel_file(&text, dtype);
            match kernel.generated_for(Lang::Wgsl) {
                Err(e) => {
                    let e = e.to_string();
                    let place = e.split_once("mutated.rs:").map(|(_, rest)| rest).unwrap_or("");
                    let mut parts = place.splitn(3, ':');
                    let line: usize = parts.next().and_then(|l| l.parse().ok()).unwrap_or(0);
                    let column: usize = parts.next().and_then(|c| c.parse().ok()).unwrap_or(0);
                    let lines = text.lines().count().max(1);
                    prop_assert!(line >= 1 && line <= lines + 1 && column >= 1, "no place in the file: {e}");
                }
                Ok(k) => {
                    let wgsl = k.wgsl_text();
                    let module = naga::front::wgsl::parse_str(&wgsl).map_err(|e| {
                        TestCaseError::fail(format!("{dtype}: {}\n--- source\n{text}\n--- wgsl\n{wgsl}", e.emit_to_string(&wgsl)))
                    })?;
                    naga::valid::Validator::new(
                        naga::valid::ValidationFlags::all(),
                        naga::valid::Capabilities::empty(),
                    )
                    .validate(&module)
                    .map_err(|e| TestCaseError::fail(format!("{dtype}: {e:?}\n--- source\n{text}\n--- wgsl\n{wgsl}")))?;
                }
            }
        }
    }
}

/// The CUDA side of the property above, on a fixed sample (NVRTC takes a tenth of a second a
/// kernel): the first 40 mutations the generator accepts, from a fixed sequence, compile with
/// NVRTC for sm_90a, f32 and u32, with the own-kernel ABI's defines.
#[cfg(feature = "cuda")]
#[test]
#[cfg_attr(
    not(matmul_require_nvrtc),
    ignore = "needs libnvrtc: MATMUL_REQUIRE_NVRTC=1 cargo test, or -- --include-ignored"
)]
fn rust_kernel_mutations_that_generate_compile_with_nvrtc() {
    use matmul::user::Lang;
    if let Err(e) = matmul::cuda::compile::nvrtc_version() {
        panic!("needs libnvrtc (CI installs it; `.ci/run` says how): {e}");
    }
    let sources = rust_kernel_sources();
    let cache = matmul::cuda::DiskCache::disabled();
    // xorshift64: the same sequence on every run.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as usize
    };
    let (mut compiled, mut tried) = (0, 0);
    while compiled < 40 {
        tried += 1;
        assert!(
            tried < 2000,
            "only {compiled} of {tried} mutations generated"
        );
        let src = sources[next() % sources.len()];
        let edits: Vec<_> = (0..1 + next() % 3)
            .map(|_| (next(), next(), next()))
            .collect();
        let text = mutate(src, &edits);
        for dtype in [DType::F32, DType::U32] {
            let kernel = kernel_file(&text, dtype);
            let Ok(k) = kernel.generated_for(Lang::Cuda) else {
                continue;
            };
            if let Err(e) =
                matmul::cuda::compile_source(&k.path, &k.text, &k.cuda_defines(), "sm_90a", &cache)
            {
                panic!("{dtype}: {e}\n--- source\n{text}\n--- cuda\n{}", k.text);
            }
            if dtype == DType::U32 {
                compiled += 1;
            }
        }
    }
}
