//! Fuzzing of the suite-file parser (bench/suites/*.txt and users' own files), with a bounded
//! budget (`PROPTEST_CASES`, scripts/fuzz.sh for a long run): never a panic, an error names the
//! file and line, and well-formed files come back case for case.

use matmul::Op;
use matmul_bench::{Suite, SuiteError};
use proptest::prelude::*;

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

proptest! {
    #![proptest_config(config())]

    #[test]
    fn suite_files_never_panic(text in prop_oneof![
        any::<String>(),
        "([0-9xX]{0,12}( --transpose-[ab]| [a-z-]{1,8}| #[^\n]{0,6}){0,3}\n){0,6}",
        "\u{feff}?[0-9]{1,6}x[0-9]{1,6}x[0-9]{1,6}( [a-z]{1,5})*\n",
    ]) {
        match Suite::parse("fuzz", "fuzz.txt", &text) {
            Ok(s) => prop_assert!(!s.cases.is_empty()),
            Err(SuiteError::Syntax { file, line, .. }) => {
                prop_assert_eq!(file, "fuzz.txt");
                prop_assert!(line >= 1 && line <= text.lines().count().max(1));
            }
            Err(e) => prop_assert!(e.to_string().contains("fuzz.txt"), "{}", e),
        }
    }

    #[test]
    fn suite_files_round_trip(cases in prop::collection::btree_set(
        (1usize..100_000, 1usize..100_000, 1usize..100_000, any::<bool>(), any::<bool>()), 1..12),
        tag in "[a-z][a-z-]{0,8}",
    ) {
        let lines: Vec<String> = cases
            .iter()
            .map(|&(m, n, k, ta, tb)| {
                let mut l = format!("{m}x{n}x{k}");
                if ta { l.push_str(" --transpose-a"); }
                if tb { l.push_str(" --transpose-b"); }
                format!("{l}   {tag}   # a comment")
            })
            .collect();
        let suite = Suite::parse("fuzz", "fuzz.txt", &lines.join("\n")).unwrap();
        prop_assert_eq!(suite.cases.len(), cases.len());
        for (c, &(m, n, k, ta, tb)) in suite.cases.iter().zip(&cases) {
            prop_assert_eq!((c.shape.m, c.shape.n, c.shape.k), (m, n, k));
            prop_assert_eq!(c.op_a == Op::T, ta);
            prop_assert_eq!(c.op_b == Op::T, tb);
            prop_assert_eq!(&c.tags, &vec![tag.clone()]);
        }
    }
}
