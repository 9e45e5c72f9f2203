//! Exit statuses, the same for every subcommand ([`EXIT_STATUSES`]): 0 success; 1 a failed
//! check or a runtime error; 2 bad input or usage, found before any device is opened where the
//! input alone decides it (the line, value and rule are named in the message).

use std::fmt::{Display, Write};

/// The contract, as `matmul --help` prints it.
pub const EXIT_STATUSES: &str = "\
Exit status (every command):
  0  success
  1  a check failed (a result differs from the reference, a judge case, a bench case), or this
     machine could not do it: no CUDA device or library for a CUDA kernel, --backend cuda, tune
     or puzzle; a CUDA error; a write that failed after the run
  2  bad input or usage, checked before any device is opened where the input alone decides it:
     an unknown name, a value out of range, an option that does not apply to the kernel, an
     unreadable input or unwritable --out, a problem too large for host memory, inputs beyond
     the dtype's range (the reference is then not finite), a kernel and backend that do not go
     together, a bench that could only skip every case";

/// A failed command: the process exits with `code` after printing `matmul: <message>` on stderr.
pub struct CliError {
    /// The exit status: 1 (a failure) or 2 (bad input or usage).
    pub code: u8,
    /// What went wrong, naming the input, value or rule.
    pub message: String,
}

impl CliError {
    /// Bad input or usage: exit status 2.
    pub fn input(message: impl Display) -> CliError {
        CliError {
            code: 2,
            message: message.to_string(),
        }
    }

    /// A check that failed or a runtime error: exit status 1.
    pub fn failure(message: impl Display) -> CliError {
        CliError {
            code: 1,
            message: message.to_string(),
        }
    }
}

impl From<matmul::Error> for CliError {
    fn from(e: matmul::Error) -> CliError {
        if e.is_bad_input() {
            CliError::input(e)
        } else {
            CliError::failure(e)
        }
    }
}

/// What every subcommand returns; `main` turns the error into the exit status.
pub type CliResult<T = ()> = Result<T, CliError>;

/// `text` with every run of non-blank characters longer than [`matmul::error::TOKEN_CHARS`] (and
/// the few of quotes and an ellipsis) cut there, with an ellipsis and its length: for clap's
/// messages, which repeat a bad value whole (our own messages cut the tokens they quote, with
/// [`matmul::error::quoted`], which this leaves as they are).
pub fn cut_long_words(text: &str) -> String {
    const SLACK: usize = 8;
    let mut out = String::with_capacity(text.len().min(1 << 12));
    let mut rest = text;
    while !rest.is_empty() {
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let (word, tail) = rest.split_at(end);
        match word.char_indices().nth(matmul::error::TOKEN_CHARS) {
            Some((cut, _))
                if word
                    .chars()
                    .nth(matmul::error::TOKEN_CHARS + SLACK)
                    .is_some() =>
            {
                let _ = write!(out, "{}… ({} bytes)", &word[..cut], word.len());
            }
            _ => out.push_str(word),
        }
        let blank = tail
            .find(|c: char| !c.is_whitespace())
            .unwrap_or(tail.len());
        out.push_str(&tail[..blank]);
        rest = &tail[blank..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_words_are_cut_and_blanks_kept() {
        assert_eq!(cut_long_words("a  b\n\tc\n"), "a  b\n\tc\n");
        let long = "é".repeat(80);
        assert_eq!(
            cut_long_words(&format!("bad '{long}' here")),
            format!("bad '{}… (162 bytes) here", "é".repeat(63))
        );
        let quoted = matmul::error::quoted(&long);
        assert_eq!(cut_long_words(&quoted), quoted);
    }
}
