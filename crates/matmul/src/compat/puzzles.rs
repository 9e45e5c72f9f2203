//! The Mojo GPU puzzles' matmul configurations (seeds 002 and 004): each puzzle's size, kernel,
//! inputs and expected output (tests/data/puzzles_expected.txt, compiled in), and Mojo's way of
//! printing a host buffer. `matmul puzzle NAME` runs one on the GPU and compares exactly.
//!
//! ```
//! use matmul::compat::puzzles::{config, host_buffer, PuzzleName};
//!
//! let p = config(PuzzleName::Naive);
//! assert_eq!((p.size, p.kernel), (2, "naive"));
//! assert_eq!(host_buffer(&p.expected()?), "HostBuffer([4.0, 6.0, 12.0, 22.0])");
//! # Ok::<(), matmul::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use crate::backend::{Backend, RunOptions};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::matrix::{AnyMatrix, Init};
use crate::problem::{Op, Problem};
use crate::registry::{find, KernelSpec};

/// The expected outputs, recomputed and matching seeds 002/004.
pub const EXPECTED: &str = include_str!("../../../../tests/data/puzzles_expected.txt");

/// Threads per block edge in every puzzle.
pub const TPB: u32 = 3;

/// The puzzles, by the name `matmul puzzle` takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub enum PuzzleName {
    /// p16 --naive: SIZE 2, TPB 3, C = A·B.
    Naive,
    /// p16 --single-block: SIZE 2, one 3×3 block, A and B in shared memory.
    SingleBlock,
    /// p16 --tiled: SIZE 9, TPB 3, 3×3 grid of 3×3 tiles.
    Tiled,
    /// p16 --idiomatic-tiled: SIZE 9, TPB 3, async copies.
    IdiomaticTiled,
    /// old p14 --naive: SIZE 2, `A[i] = B[i] = i`, C = A·Bᵀ.
    P14Naive,
    /// old p14 --tiled: SIZE 8, TPB 3 (grid 3×3), `A[i] = B[i] = i`, C = A·Bᵀ.
    P14Tiled,
}

impl PuzzleName {
    /// Every puzzle, in the order `matmul puzzle --help` lists them.
    pub const ALL: [PuzzleName; 6] = [
        PuzzleName::Naive,
        PuzzleName::SingleBlock,
        PuzzleName::Tiled,
        PuzzleName::IdiomaticTiled,
        PuzzleName::P14Naive,
        PuzzleName::P14Tiled,
    ];

    /// The name on the command line ("naive", "single-block", ..., "p14-tiled").
    pub fn name(self) -> &'static str {
        match self {
            PuzzleName::Naive => "naive",
            PuzzleName::SingleBlock => "single-block",
            PuzzleName::Tiled => "tiled",
            PuzzleName::IdiomaticTiled => "idiomatic-tiled",
            PuzzleName::P14Naive => "p14-naive",
            PuzzleName::P14Tiled => "p14-tiled",
        }
    }

    /// One line on what the puzzle computes.
    pub fn summary(self) -> &'static str {
        match self {
            PuzzleName::Naive => "p16 --naive: SIZE 2, TPB 3, C = A·B",
            PuzzleName::SingleBlock => {
                "p16 --single-block: SIZE 2, one 3×3 block, A and B in shared memory"
            }
            PuzzleName::Tiled => "p16 --tiled: SIZE 9, TPB 3, 3×3 grid of 3×3 tiles",
            PuzzleName::IdiomaticTiled => "p16 --idiomatic-tiled: SIZE 9, TPB 3, async copies",
            PuzzleName::P14Naive => "old p14 --naive: SIZE 2, A[i] = B[i] = i, C = A·Bᵀ",
            PuzzleName::P14Tiled => {
                "old p14 --tiled: SIZE 8, TPB 3 (grid 3×3), A[i] = B[i] = i, C = A·Bᵀ"
            }
        }
    }
}

impl fmt::Display for PuzzleName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PuzzleName {
    type Err = Error;
    fn from_str(s: &str) -> Result<PuzzleName> {
        PuzzleName::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| {
                let names: Vec<&str> = PuzzleName::ALL.iter().map(|p| p.name()).collect();
                Error::Invalid(format!(
                    "unknown puzzle `{s}` (expected one of {})",
                    names.join(", ")
                ))
            })
    }
}

/// One puzzle configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Puzzle {
    /// The line of the expectations file: its prefix ("p16", "old p14") ...
    pub file_prefix: &'static str,
    /// ... and one of its flags ("--tiled").
    pub flag: &'static str,
    /// A, B and C are `size`×`size`.
    pub size: usize,
    /// The registry kernel that runs it (at tile [`TPB`]).
    pub kernel: &'static str,
    /// `B[i] = i · b_scale` (`A[i] = i` always).
    pub b_scale: u32,
    /// How B is used: p16 multiplies A·B, old p14 A·Bᵀ.
    pub op_b: Op,
}

/// The configuration of puzzle `name`.
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
    /// The product: f32, `size`³, B transposed for old p14.
    pub fn problem(&self) -> Problem {
        Problem::square(self.size, DType::F32).with_ops(Op::N, self.op_b)
    }

    /// `A[i] = i` and `B[i] = i · b_scale`, row-major, as the puzzles fill them.
    pub fn inputs(&self) -> Result<(AnyMatrix, AnyMatrix)> {
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

    /// The expected output from the embedded file; an inconsistent file is an
    /// [`Error::Invalid`], not a guess.
    pub fn expected(&self) -> Result<Vec<f32>> {
        let line = EXPECTED
            .lines()
            .find(|l| {
                l.strip_prefix(self.file_prefix)
                    .and_then(|rest| rest.strip_prefix(' '))
                    .and_then(|rest| rest.split_whitespace().next())
                    .is_some_and(|flags| flags.split('/').any(|f| f == self.flag))
            })
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "no line for {} {} in the expectations file",
                    self.file_prefix, self.flag
                ))
            })?;
        let size_ok = line.split_whitespace().any(|w| {
            w.strip_prefix("SIZE=")
                .or_else(|| w.strip_prefix("SIZE_TILED="))
                == Some(&self.size.to_string())
        });
        if !size_ok {
            return Err(Error::Invalid(format!(
                "the expectations line `{line}` is not for SIZE {}",
                self.size
            )));
        }
        let list = line
            .rsplit_once(": [")
            .and_then(|(_, l)| l.strip_suffix(']'))
            .ok_or_else(|| Error::Invalid(format!("malformed expectations line `{line}`")))?;
        let values = list
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<f32>()
                    .map_err(|_| Error::Invalid(format!("`{v}` is not a number in `{line}`")))
            })
            .collect::<Result<Vec<_>>>()?;
        if values.len() != self.size * self.size {
            return Err(Error::Invalid(format!(
                "{} values for a {}x{} output",
                values.len(),
                self.size,
                self.size
            )));
        }
        Ok(values)
    }

    /// Runs the puzzle's kernel at tile [`TPB`] on `backend` and returns C, row-major.
    pub fn run(&self, backend: &dyn Backend) -> Result<Vec<f32>> {
        self.run_kernel(find(self.kernel)?, backend)
    }

    /// Runs `kernel` (the puzzle's, or its WGSL twin: [`crate::registry::wgpu_twin`]) at tile
    /// [`TPB`] on `backend` and returns C, row-major.
    pub fn run_kernel(&self, kernel: &KernelSpec, backend: &dyn Backend) -> Result<Vec<f32>> {
        let (a, b) = self.inputs()?;
        let c = backend.run(kernel, &self.problem(), &a, &b, RunOptions::tile(TPB))?;
        match c {
            AnyMatrix::F32(c) => Ok(c.data),
            other => Err(Error::WrongOutput {
                kernel: kernel.name.to_string(),
                expected: DType::F32,
                found: other.dtype(),
            }),
        }
    }
}

/// Mojo prints host buffers as `HostBuffer([4.0, 6.0, ...])`.
pub fn host_buffer(values: &[f32]) -> String {
    let items: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("HostBuffer([{}])", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CPU reference reproduces every expectation exactly, so the file and the configurations
    /// agree with each other (the GPU test runs the kernels on the same inputs).
    #[test]
    fn every_puzzle_matches_the_reference_on_the_cpu() {
        for name in PuzzleName::ALL {
            let p = config(name);
            let (a, b) = p.inputs().unwrap();
            let AnyMatrix::F32(c) = crate::cpu::reference::matmul(&p.problem(), &a, &b).unwrap()
            else {
                panic!()
            };
            assert_eq!(c.data, p.expected().unwrap(), "{name:?}");
            assert!(find(p.kernel)
                .unwrap()
                .can_run(&p.problem(), None, &RunOptions::tile(TPB))
                .is_ok());
            assert_eq!(name.name().parse::<PuzzleName>().unwrap(), name);
        }
        assert_eq!(host_buffer(&[4.0, 6.0]), "HostBuffer([4.0, 6.0])");
        assert!("p15".parse::<PuzzleName>().is_err());
    }
}
