//! The seeds' contracts, reproduced exactly: the Judge Girl CUDA-MATMUL problem ([`judge`]:
//! generator, signature, case parser) and the Mojo GPU puzzles' matmul configurations
//! ([`puzzles`]: sizes, inputs, expected outputs, Mojo's printing).

pub mod judge;
pub mod puzzles;
