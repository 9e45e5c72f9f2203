//! The reference product: f64 accumulation for floating types (exact for every f32 input product,
//! one rounding at the end), exact wrapping arithmetic for u32. Slow and obviously right.

use rayon::prelude::*;

use crate::dtype::{DType, Element};
use crate::error::Result;
use crate::matrix::{AnyMatrix, Matrix};
use crate::problem::Problem;

/// C of `problem` in its C type: f64 sums rounded once to f32, or to bf16/f16 through f32 when
/// the problem asks for C in the input dtype (the rounding a kernel with f32 accumulators does).
pub fn matmul(problem: &Problem, a: &AnyMatrix, b: &AnyMatrix) -> Result<AnyMatrix> {
    crate::backend::check_inputs(problem, a, b)?;
    Ok(match (a, b) {
        (AnyMatrix::U32(a), AnyMatrix::U32(b)) => AnyMatrix::U32(wrapping_u32(problem, a, b)?),
        (AnyMatrix::F32(a), AnyMatrix::F32(b)) => AnyMatrix::F32(float(problem, a, b)?),
        (AnyMatrix::F16(a), AnyMatrix::F16(b)) => AnyMatrix::F32(float(problem, a, b)?),
        (AnyMatrix::Bf16(a), AnyMatrix::Bf16(b)) => AnyMatrix::F32(float(problem, a, b)?),
        _ => unreachable!("check_inputs guarantees matching storage"),
    }
    .into_c_dtype(problem))
}

/// The float reference in f64, returned at full precision (for error measurement).
pub fn matmul_f64(problem: &Problem, a: &AnyMatrix, b: &AnyMatrix) -> Result<Vec<f64>> {
    crate::backend::check_inputs(problem, a, b)?;
    let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
    let (sa, sb) = (problem.a_strides(), problem.b_strides());
    let (n, k) = (problem.n, problem.k);
    let mut c = vec![0.0f64; problem.m * n];
    c.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, row)| {
        for (j, out) in row.iter_mut().enumerate() {
            *out = (0..k)
                .map(|l| av[i * sa.row + l * sa.col] * bv[l * sb.row + j * sb.col])
                .sum();
        }
    });
    Ok(c)
}

fn float<T: Element>(problem: &Problem, a: &Matrix<T>, b: &Matrix<T>) -> Result<Matrix<f32>> {
    debug_assert!(problem.dtype != DType::U32);
    let (sa, sb) = (problem.a_strides(), problem.b_strides());
    let (n, k) = (problem.n, problem.k);
    let mut c = Matrix::<f32>::zeros(problem.m, n)?;
    c.data
        .par_chunks_mut(n.max(1))
        .enumerate()
        .for_each(|(i, row)| {
            for (j, out) in row.iter_mut().enumerate() {
                let s: f64 = (0..k)
                    .map(|l| {
                        a.data[i * sa.row + l * sa.col].to_f64()
                            * b.data[l * sb.row + j * sb.col].to_f64()
                    })
                    .sum();
                *out = s as f32;
            }
        });
    Ok(c)
}

fn wrapping_u32(problem: &Problem, a: &Matrix<u32>, b: &Matrix<u32>) -> Result<Matrix<u32>> {
    let (sa, sb) = (problem.a_strides(), problem.b_strides());
    let (n, k) = (problem.n, problem.k);
    let mut c = Matrix::<u32>::zeros(problem.m, n)?;
    c.data
        .par_chunks_mut(n.max(1))
        .enumerate()
        .for_each(|(i, row)| {
            for (j, out) in row.iter_mut().enumerate() {
                *out = (0..k).fold(0u32, |s, l| {
                    s.wrapping_add(
                        a.data[i * sa.row + l * sa.col]
                            .wrapping_mul(b.data[l * sb.row + j * sb.col]),
                    )
                });
            }
        });
    Ok(c)
}
