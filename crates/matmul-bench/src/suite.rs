//! Shape suites: named lists of cases that `matmul bench --suite` runs, one case per line of a
//! text file.
//!
//! A line is `MxNxK [--transpose-a] [--transpose-b] [TAG ...] [# comment]`: the shape in the
//! syntax of `--shapes` (`N` alone is N×N×N), the transpose options of `matmul bench`, and tags
//! naming the case's classes (a lowercase letter, then lowercase letters, digits and `-`), which
//! the report's summary groups by. `#` starts a comment; blank lines are skipped. The suites of
//! the repository's `bench/suites/` are built in ([`BUILT_IN`]), so an installed binary has them.
//!
//! ```
//! use matmul_bench::suite::Suite;
//!
//! let suite = Suite::parse("mine", "my.txt", "4096 square\n1x4096x4096 llm # decode\n")?;
//! assert_eq!(suite.cases.len(), 2);
//! assert_eq!(suite.cases[1].tags, ["llm"]);
//! assert_eq!(Suite::load("shapes")?.name, "shapes");
//! # Ok::<(), matmul_bench::suite::SuiteError>(())
//! ```

use std::fmt;

use matmul::error::quoted;
use matmul::{COut, DType, Op, Problem, Shape};

/// The suites compiled into the binary: (name, text) of `bench/suites/NAME.txt`.
pub const BUILT_IN: &[(&str, &str)] = &[
    ("shapes", include_str!("../../../bench/suites/shapes.txt")),
    ("quick", include_str!("../../../bench/suites/quick.txt")),
];

/// One case of a suite: a shape, its operands' transpositions and its tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// m × n × k.
    pub shape: Shape,
    /// op(A): `T` when the line says `--transpose-a`.
    pub op_a: Op,
    /// op(B): `T` when the line says `--transpose-b`.
    pub op_b: Op,
    /// The classes the case belongs to, in the line's order, each once.
    pub tags: Vec<String>,
    /// The line of the file it came from (1-based).
    pub line: usize,
}

impl Case {
    /// The product this case runs in `dtype` with C stored as `c`.
    pub fn problem(&self, dtype: DType, c: COut) -> Problem {
        let s = self.shape;
        Problem::new(s.m, s.n, s.k, dtype)
            .with_ops(self.op_a, self.op_b)
            .with_c(c)
    }
}

/// A named list of cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suite {
    /// The name it was asked for by (a built-in name, or the path given).
    pub name: String,
    /// The file it was read from (`bench/suites/NAME.txt (built in)` for a built-in suite).
    pub file: String,
    /// The cases, in the file's order.
    pub cases: Vec<Case>,
}

/// Why a suite could not be had; the message names the file, the line and the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuiteError {
    /// A line that does not parse.
    Syntax {
        /// The file.
        file: String,
        /// The line, 1-based.
        line: usize,
        /// The offending token.
        token: String,
        /// What is wrong with it.
        why: String,
    },
    /// A file with no case in it.
    Empty {
        /// The file.
        file: String,
    },
    /// Neither a built-in suite nor a file that can be read.
    NotFound {
        /// The name or path asked for.
        name: String,
        /// Why the file could not be read.
        reason: String,
    },
}

impl fmt::Display for SuiteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SuiteError::Syntax {
                file,
                line,
                token,
                why,
            } => write!(f, "{file}:{line}: {} {why}", quoted(token)),
            SuiteError::Empty { file } => {
                write!(f, "{file}: no cases (every line is blank or a comment)")
            }
            SuiteError::NotFound { name, reason } => write!(
                f,
                "no suite `{name}`: not a built-in suite ({}) and not a readable file ({reason})",
                names().join(", ")
            ),
        }
    }
}

impl std::error::Error for SuiteError {}

/// The built-in suites' names.
pub fn names() -> Vec<&'static str> {
    BUILT_IN.iter().map(|(name, _)| *name).collect()
}

impl Suite {
    /// A built-in suite by name (see [`BUILT_IN`]), else the file at path `name`.
    pub fn load(name: &str) -> Result<Suite, SuiteError> {
        if let Some((builtin, text)) = BUILT_IN.iter().find(|(n, _)| *n == name) {
            let file = format!("bench/suites/{builtin}.txt (built in)");
            return Suite::parse(builtin, &file, text);
        }
        let text = std::fs::read_to_string(name).map_err(|e| SuiteError::NotFound {
            name: name.to_string(),
            reason: e.to_string(),
        })?;
        Suite::parse(name, name, &text)
    }

    /// Parses `text`, read from `file` (named in errors), as the suite `name`; a UTF-8
    /// byte-order mark at the start is skipped.
    pub fn parse(name: &str, file: &str, text: &str) -> Result<Suite, SuiteError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut cases: Vec<Case> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let content = raw.split('#').next().unwrap_or("");
            let Some(case) =
                parse_line(content, line).map_err(|(token, why)| SuiteError::Syntax {
                    file: file.to_string(),
                    line,
                    token,
                    why,
                })?
            else {
                continue;
            };
            let same = |c: &&Case| (c.shape, c.op_a, c.op_b) == (case.shape, case.op_a, case.op_b);
            if let Some(earlier) = cases.iter().find(same) {
                return Err(SuiteError::Syntax {
                    file: file.to_string(),
                    line,
                    token: content.split_whitespace().next().unwrap_or("").to_string(),
                    why: format!("repeats the case of line {}", earlier.line),
                });
            }
            cases.push(case);
        }
        if cases.is_empty() {
            return Err(SuiteError::Empty {
                file: file.to_string(),
            });
        }
        Ok(Suite {
            name: name.to_string(),
            file: file.to_string(),
            cases,
        })
    }

    /// The tags of the cases, each once, in order of first appearance.
    pub fn tags(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for t in self.cases.iter().flat_map(|c| &c.tags) {
            if !out.contains(&t.as_str()) {
                out.push(t);
            }
        }
        out
    }
}

/// One line without its comment: None when blank, else the case or (token, what is wrong).
fn parse_line(content: &str, line: usize) -> Result<Option<Case>, (String, String)> {
    let mut tokens = content.split_whitespace();
    let Some(first) = tokens.next() else {
        return Ok(None);
    };
    let bad_shape = || {
        (
            first.to_string(),
            "is not a shape: MxNxK (or N for N×N×N), each side at least 1".to_string(),
        )
    };
    let shape: Shape = first.parse().map_err(|_| bad_shape())?;
    if shape.m == 0 || shape.n == 0 || shape.k == 0 {
        return Err(bad_shape());
    }
    let mut case = Case {
        shape,
        op_a: Op::N,
        op_b: Op::N,
        tags: Vec::new(),
        line,
    };
    for token in tokens {
        match token {
            "--transpose-a" => case.op_a = Op::T,
            "--transpose-b" => case.op_b = Op::T,
            t if t.starts_with('-') => {
                return Err((
                    t.to_string(),
                    "is not an option of a case (--transpose-a, --transpose-b)".to_string(),
                ))
            }
            t if is_tag(t) => {
                if !case.tags.iter().any(|x| x == t) {
                    case.tags.push(t.to_string());
                }
            }
            t => {
                return Err((
                    t.to_string(),
                    "is not a tag (a lowercase letter, then lowercase letters, digits and `-`) \
                     nor an option; one case per line"
                        .to_string(),
                ))
            }
        }
    }
    Ok(Some(case))
}

fn is_tag(t: &str) -> bool {
    let mut chars = t.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn syntax(text: &str) -> (usize, String, String) {
        match Suite::parse("t", "t.txt", text) {
            Err(SuiteError::Syntax {
                line, token, why, ..
            }) => (line, token, why),
            other => panic!("expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn good_lines_comments_and_blanks() {
        let text = "# a suite\n\n  4096   square  # a comment\n\
                    1x4096x4096 llm small-m llm\n\
                    4097X4095*4093 --transpose-b unaligned --transpose-a\n\
                    \t17x33x65#no space before the comment\n";
        let s = Suite::parse("t", "t.txt", text).unwrap();
        assert_eq!(s.name, "t");
        let shapes: Vec<_> = s.cases.iter().map(|c| c.shape).collect();
        assert_eq!(
            shapes,
            [
                Shape {
                    m: 4096,
                    n: 4096,
                    k: 4096
                },
                Shape {
                    m: 1,
                    n: 4096,
                    k: 4096
                },
                Shape {
                    m: 4097,
                    n: 4095,
                    k: 4093
                },
                Shape {
                    m: 17,
                    n: 33,
                    k: 65
                },
            ]
        );
        assert_eq!(s.cases[0].tags, ["square"]);
        assert_eq!(s.cases[1].tags, ["llm", "small-m"], "a repeated tag once");
        assert_eq!((s.cases[2].op_a, s.cases[2].op_b), (Op::T, Op::T));
        assert_eq!((s.cases[1].op_a, s.cases[1].op_b), (Op::N, Op::N));
        assert!(s.cases[3].tags.is_empty());
        assert_eq!(
            s.cases.iter().map(|c| c.line).collect::<Vec<_>>(),
            [3, 4, 5, 6]
        );
        assert_eq!(s.tags(), ["square", "llm", "small-m", "unaligned"]);
        let p = s.cases[2].problem(DType::Bf16, COut::Input);
        assert_eq!(p.shape_label(), "4097x4095x4093 (TT) C=bf16");
    }

    #[test]
    fn bad_lines_name_the_line_and_token() {
        let (line, token, why) = syntax("4096\n4096x4096 square\n");
        assert_eq!((line, token.as_str()), (2, "4096x4096"));
        assert!(why.contains("not a shape"), "{why}");
        assert_eq!(syntax("0x4x4\n").1, "0x4x4");
        assert_eq!(syntax("big\n").1, "big");
        let (line, token, why) = syntax("# x\n64 square --transpose-c\n");
        assert_eq!((line, token.as_str()), (2, "--transpose-c"));
        assert!(why.contains("--transpose-a"), "{why}");
        assert_eq!(syntax("64 Square\n").1, "Square");
        assert_eq!(syntax("64 2048\n").1, "2048", "two shapes on a line");
        assert_eq!(syntax("64 small_m\n").1, "small_m");
        let (line, _, why) = syntax("64 a\n32\n64x64x64 b # same case\n");
        assert_eq!(line, 3);
        assert_eq!(why, "repeats the case of line 1");
        // The same shape with another transposition is another case.
        assert!(Suite::parse("t", "t.txt", "64\n64 --transpose-a\n").is_ok());
        let e = Suite::parse("t", "dir/t.txt", "1\n2\n3x3 x\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "dir/t.txt:3: `3x3` is not a shape: MxNxK (or N for N×N×N), each side at least 1"
        );
        // A long token is cut in the message (kept whole in the error); a BOM is skipped.
        let long = format!("64\n{}\n", "x".repeat(100_000));
        let e = Suite::parse("t", "t.txt", &long).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "t.txt:2: `{}…` (100000 bytes) is not a shape: MxNxK (or N for N×N×N), each side at least 1",
                "x".repeat(64)
            )
        );
        assert_eq!(
            Suite::parse("t", "t.txt", "\u{feff}64 square\n")
                .unwrap()
                .cases
                .len(),
            1
        );
    }

    #[test]
    fn an_empty_file_or_only_comments_is_an_error() {
        for text in ["", "\n\n", "# only\n   # comments\n"] {
            let e = Suite::parse("t", "t.txt", text).unwrap_err();
            assert_eq!(
                e,
                SuiteError::Empty {
                    file: "t.txt".into()
                }
            );
            assert!(e.to_string().contains("no cases"), "{e}");
        }
    }

    #[test]
    fn built_in_suites_parse_and_cover_their_classes() {
        for (name, _) in BUILT_IN {
            let s = Suite::load(name).unwrap();
            assert!(s.file.contains("built in"), "{}", s.file);
            assert!(s.cases.iter().all(|c| !c.tags.is_empty()), "{name}");
        }
        let shapes = Suite::load("shapes").unwrap();
        assert!((40..=50).contains(&shapes.cases.len()));
        let count = |tag: &str| {
            shapes
                .cases
                .iter()
                .filter(|c| c.tags.iter().any(|t| t == tag))
                .count()
        };
        for tag in [
            "square",
            "llm",
            "unaligned",
            "small-m",
            "small-k",
            "k-heavy",
            "transposed",
        ] {
            assert!(count(tag) >= 4, "{tag}: {}", count(tag));
        }
        // The classes' rules hold for every case tagged so.
        for c in &shapes.cases {
            let Shape { m, n, k } = c.shape;
            let has = |t: &str| c.tags.iter().any(|x| x == t);
            let plain = c.op_a == Op::N && c.op_b == Op::N;
            assert!(!has("square") || (m == n && n == k && plain), "{c:?}");
            assert!(!has("small-m") || m <= 256, "{c:?}");
            assert!(!has("small-n") || n <= 256, "{c:?}");
            assert!(!has("small-k") || (k <= 256 && m * n >= 1 << 24), "{c:?}");
            assert!(!has("k-heavy") || k >= 32 * m.max(n), "{c:?}");
            assert_eq!(
                has("transposed"),
                c.op_a == Op::T || c.op_b == Op::T,
                "{c:?}"
            );
            let odd = |x: usize| !x.is_multiple_of(8);
            assert!(!has("unaligned") || odd(m) || odd(n) || odd(k), "{c:?}");
        }
        let squares: Vec<usize> = shapes
            .cases
            .iter()
            .filter(|c| c.tags.iter().any(|t| t == "square"))
            .map(|c| c.shape.m)
            .collect();
        assert!(squares.contains(&256) && squares.contains(&16384));
        assert!(squares.contains(&3072) && squares.contains(&10000));
        assert!((8..=12).contains(&Suite::load("quick").unwrap().cases.len()));
    }

    #[test]
    fn a_path_is_read_and_a_missing_suite_is_named() {
        let dir = std::env::temp_dir().join(format!("matmul-suite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("mine.txt");
        std::fs::write(&path, "8x8x8 tiny\n").unwrap();
        let p = path.to_str().unwrap();
        let s = Suite::load(p).unwrap();
        assert_eq!((s.name.as_str(), s.file.as_str()), (p, p));
        std::fs::write(&path, "8x8x8 tiny\n9 Bad\n").unwrap();
        assert!(Suite::load(p)
            .unwrap_err()
            .to_string()
            .starts_with(&format!("{p}:2: `Bad`")));
        std::fs::remove_dir_all(&dir).unwrap();
        let e = Suite::load("nope").unwrap_err();
        assert!(matches!(e, SuiteError::NotFound { .. }));
        let msg = e.to_string();
        assert!(
            msg.starts_with("no suite `nope`: not a built-in suite (shapes, quick)"),
            "{msg}"
        );
    }
}
