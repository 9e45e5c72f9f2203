//! The fast CPU path. Placeholder until the gemm / blocked-u32 paths land: delegates to the reference.

use crate::error::Result;
use crate::matrix::AnyMatrix;
use crate::problem::Problem;

pub fn matmul(problem: &Problem, a: &AnyMatrix, b: &AnyMatrix) -> Result<AnyMatrix> {
    super::reference::matmul(problem, a, b)
}
