//! Exit statuses: 0 success, 1 a failed check or a runtime error (no GPU, CUDA error),
//! 2 bad input or usage (the line, value and rule are named in the message).

use std::fmt::Display;

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
        use matmul::Error as E;
        match e {
            E::Unsupported(_)
            | E::UnknownKernel(_)
            | E::UnknownDType(_)
            | E::BadShape(_)
            | E::TooLarge { .. }
            | E::Invalid(_)
            | E::ShapeMismatch { .. } => CliError::input(e),
            _ => CliError::failure(e),
        }
    }
}

/// What every subcommand returns; `main` turns the error into the exit status.
pub type CliResult<T = ()> = Result<T, CliError>;
