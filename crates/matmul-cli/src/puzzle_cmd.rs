//! `matmul puzzle`: the Mojo GPU puzzles' matmul configurations (seeds 002 and 004), run on the
//! GPU and compared exactly with the expected outputs in tests/data/puzzles_expected.txt.

use clap::{Args, ValueEnum};
use matmul::{find, AnyMatrix, BackendChoice, DType, Init, Op, Problem, RunOptions};

use crate::cli_error::{CliError, CliResult};
use crate::select::select;

/// The expected outputs, recomputed and matching seeds 002/004 (embedded so the binary is whole).
pub const EXPECTED: &str = include_str!("../../../tests/data/puzzles_expected.txt");

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum, Debug)]
pub enum PuzzleName {
    /// p16 --naive: SIZE 2, TPB 3, C = A·B.
    Naive,
    /// p16 --single-block: SIZE 2, one 3×3 block, A and B in shared memory.
    SingleBlock,
    /// p16 --tiled: SIZE 9, TPB 3, 3×3 grid of 3×3 tiles.
    Tiled,
    /// p16 --idiomatic-tiled: SIZE 9, TPB 3, async copies.
    IdiomaticTiled,
    /// old p14 --naive: SIZE 2, A[i] = B[i] = i, C = A·Bᵀ.
    P14Naive,
    /// old p14 --tiled: SIZE 8, TPB 3 (grid 3×3), A[i] = B[i] = i, C = A·Bᵀ.
    P14Tiled,
}

/// One puzzle configuration.
pub struct Puzzle {
    /// The line of the expectations file: its prefix and one of its flags.
    pub file_prefix: &'static str,
    pub flag: &'static str,
    pub size: usize,
    pub kernel: &'static str,
    /// B[i] = i · b_scale (A[i] = i always).
    pub b_scale: u32,
    pub op_b: Op,
}

/// Threads per block edge in every puzzle.
pub const TPB: u32 = 3;

pub fn config(name: PuzzleName) -> Puzzle {
    let p16 = |flag, size, kernel| Puzzle {
        file_prefix: "p16",
        flag,
        size,
        kernel,
        b_scale: 2,
        op_b: Op::N,
    };
    let p14 = |flag, size, kernel| Puzzle {
        file_prefix: "old p14",
        flag,
        size,
        kernel,
        b_scale: 1,
        op_b: Op::T,
    };
    match name {
        PuzzleName::Naive => p16("--naive", 2, "naive"),
        PuzzleName::SingleBlock => p16("--single-block", 2, "single-block"),
        PuzzleName::Tiled => p16("--tiled", 9, "tiled"),
        PuzzleName::IdiomaticTiled => p16("--idiomatic-tiled", 9, "tiled-async"),
        PuzzleName::P14Naive => p14("--naive", 2, "naive"),
        PuzzleName::P14Tiled => p14("--tiled", 8, "tiled"),
    }
}

impl Puzzle {
    pub fn problem(&self) -> Problem {
        Problem::square(self.size, DType::F32).with_ops(Op::N, self.op_b)
    }

    /// A[i] = i and B[i] = i · b_scale, row-major, as the puzzles fill them.
    pub fn inputs(&self) -> matmul::Result<(AnyMatrix, AnyMatrix)> {
        let (a, b) = (
            Init::Arange { scale: 1 },
            Init::Arange {
                scale: self.b_scale,
            },
        );
        Ok((
            AnyMatrix::generate(DType::F32, self.size, self.size, a)?,
            AnyMatrix::generate(DType::F32, self.size, self.size, b)?,
        ))
    }

    /// The expected output from the embedded file; an inconsistent file is an error, not a guess.
    pub fn expected(&self) -> Result<Vec<f32>, String> {
        let line = EXPECTED
            .lines()
            .find(|l| {
                l.strip_prefix(self.file_prefix)
                    .and_then(|rest| rest.strip_prefix(' '))
                    .and_then(|rest| rest.split_whitespace().next())
                    .is_some_and(|flags| flags.split('/').any(|f| f == self.flag))
            })
            .ok_or_else(|| {
                format!(
                    "no line for {} {} in the expectations file",
                    self.file_prefix, self.flag
                )
            })?;
        let size_ok = line.split_whitespace().any(|w| {
            w.strip_prefix("SIZE=")
                .or_else(|| w.strip_prefix("SIZE_TILED="))
                == Some(&self.size.to_string())
        });
        if !size_ok {
            return Err(format!(
                "the expectations line `{line}` is not for SIZE {}",
                self.size
            ));
        }
        let list = line
            .rsplit_once(": [")
            .and_then(|(_, l)| l.strip_suffix(']'))
            .ok_or_else(|| format!("malformed expectations line `{line}`"))?;
        let values = list
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<f32>()
                    .map_err(|_| format!("`{v}` is not a number in `{line}`"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if values.len() != self.size * self.size {
            return Err(format!(
                "{} values for a {}x{} output",
                values.len(),
                self.size,
                self.size
            ));
        }
        Ok(values)
    }
}

/// Mojo prints host buffers as `HostBuffer([4.0, 6.0, ...])`.
pub fn host_buffer(values: &[f32]) -> String {
    let items: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("HostBuffer([{}])", items.join(", "))
}

#[derive(Args)]
pub struct PuzzleArgs {
    #[arg(value_enum)]
    name: PuzzleName,
}

pub fn puzzle(args: PuzzleArgs) -> CliResult {
    let p = config(args.name);
    let expected = p.expected().map_err(CliError::failure)?;
    let kernel = find(p.kernel)?;
    let sel = select(kernel.name, BackendChoice::Cuda, DType::F32, None)?;
    let (a, b) = p.inputs()?;
    let c = sel
        .backend
        .run(sel.kernel, &p.problem(), &a, &b, RunOptions::tile(TPB))?;
    let AnyMatrix::F32(c) = c else {
        return Err(CliError::failure(
            "the puzzle kernel returned a non-f32 matrix",
        ));
    };
    println!("out: {}", host_buffer(&c.data));
    println!("expected: {}", host_buffer(&expected));
    if c.data != expected {
        return Err(CliError::failure(format!(
            "puzzle {:?} ({} on the GPU, TPB {TPB}) does not match the expected output",
            args.name, kernel.name
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    /// The CPU reference reproduces every expectation exactly, so the file and the configurations
    /// agree with each other (the GPU test runs the kernels on the same inputs).
    #[test]
    fn every_puzzle_matches_the_reference_on_the_cpu() {
        for name in PuzzleName::value_variants() {
            let p = config(*name);
            let (a, b) = p.inputs().unwrap();
            let AnyMatrix::F32(c) = matmul::cpu::reference::matmul(&p.problem(), &a, &b).unwrap()
            else {
                panic!()
            };
            assert_eq!(c.data, p.expected().unwrap(), "{name:?}");
            assert!(find(p.kernel)
                .unwrap()
                .can_run(&p.problem(), None, &RunOptions::tile(TPB))
                .is_ok());
        }
        assert_eq!(host_buffer(&[4.0, 6.0]), "HostBuffer([4.0, 6.0])");
    }
}
