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
