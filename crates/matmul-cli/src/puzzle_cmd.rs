//! `matmul puzzle`: the Mojo GPU puzzles' matmul configurations (seeds 002 and 004), run on the
//! GPU and compared exactly with the expected outputs (`matmul::compat::puzzles`).

use clap::builder::PossibleValue;
use clap::{Args, ValueEnum};
use matmul::compat::puzzles::{config, host_buffer, PuzzleName, TPB};
use matmul::{BackendChoice, DType};

use crate::cli_error::{CliError, CliResult};

/// A puzzle name on the command line: the library's names and summaries.
#[derive(Clone, Copy, Debug)]
pub struct PuzzleArg(PuzzleName);

/// Every puzzle, for clap's possible values (a `'static` slice built once).
static PUZZLES: std::sync::LazyLock<Vec<PuzzleArg>> =
    std::sync::LazyLock::new(|| PuzzleName::ALL.into_iter().map(PuzzleArg).collect());

impl ValueEnum for PuzzleArg {
    fn value_variants<'a>() -> &'a [Self] {
        &PUZZLES
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(PossibleValue::new(self.0.name()).help(self.0.summary()))
    }
}

/// `matmul puzzle`'s arguments.
#[derive(Args)]
pub struct PuzzleArgs {
    /// The puzzle configuration to reproduce.
    #[arg(value_enum)]
    name: PuzzleArg,
    /// Where to run it: cuda (the CUDA kernels) or wgpu (their WGSL twins: wgpu-naive,
    /// wgpu-single-block, wgpu-tiled).
    #[arg(long, default_value = "cuda", value_parser = parse_backend)]
    backend: BackendChoice,
}

fn parse_backend(text: &str) -> Result<BackendChoice, String> {
    match text.parse::<BackendChoice>() {
        Ok(b @ (BackendChoice::Cuda | BackendChoice::Wgpu)) => Ok(b),
        Ok(_) => Err("a puzzle runs on a GPU: cuda or wgpu".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// `matmul puzzle`: runs the puzzle's kernel on the GPU with its size and TPB, prints the output
/// and the expected buffers as the puzzle does; any difference is exit status 1.
pub fn puzzle(args: PuzzleArgs) -> CliResult {
    let name = args.name.0;
    let p = config(name);
    let expected = p.expected().map_err(CliError::failure)?;
    let sel = matmul::dispatch::select(p.kernel, args.backend, DType::F32, None)?;
    let out = p.run_kernel(sel.kernel, sel.backend.as_ref())?;
    println!("out: {}", host_buffer(&out));
    println!("expected: {}", host_buffer(&expected));
    if out != expected {
        return Err(CliError::failure(format!(
            "puzzle {name:?} ({} on {}, TPB {TPB}) does not match the expected output",
            sel.kernel.name,
            sel.backend.kind()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every library puzzle is a command-line value, under its own name.
    #[test]
    fn every_puzzle_is_a_value() {
        let names: Vec<String> = PuzzleArg::value_variants()
            .iter()
            .filter_map(|p| p.to_possible_value())
            .map(|v| v.get_name().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "naive",
                "single-block",
                "tiled",
                "idiomatic-tiled",
                "p14-naive",
                "p14-tiled"
            ]
        );
        assert_eq!(
            PuzzleArg::from_str("P14-tiled", true).unwrap().0,
            PuzzleName::P14Tiled
        );
    }
}
