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

/// The float product in f64 with the size of what each element sums: for every (i, j) of
/// `positions` (None: every element of C, row-major), (Σ_l a_il·b_lj, Σ_l |a_il·b_lj|) over op(A)
/// and op(B). Each product of f32, bf16 or f16 values is exact in f64, so the first errs by at
/// most k·2⁻⁵³ of the second: the yardstick [`crate::verify::ErrorStats`] measures a result
/// against. The sums run in l order, as [`matmul`]'s do. u32 is refused (its products are not
/// exact in f64; its reference is [`matmul`]'s exact wrapping one).
pub fn products_f64(
    problem: &Problem,
    a: &AnyMatrix,
    b: &AnyMatrix,
    positions: Option<&[(usize, usize)]>,
) -> Result<(Vec<f64>, Vec<f64>)> {
    crate::backend::check_inputs(problem, a, b)?;
    if let Some(&(i, j)) = positions
        .unwrap_or(&[])
        .iter()
        .find(|&&(i, j)| i >= problem.m || j >= problem.n)
    {
        return Err(crate::error::Error::Invalid(format!(
            "position ({i}, {j}) is outside the {}x{} C",
            problem.m, problem.n
        )));
    }
    Ok(match (a, b) {
        (AnyMatrix::F32(a), AnyMatrix::F32(b)) => dots_and_sizes(problem, a, b, positions),
        (AnyMatrix::F16(a), AnyMatrix::F16(b)) => dots_and_sizes(problem, a, b, positions),
        (AnyMatrix::Bf16(a), AnyMatrix::Bf16(b)) => dots_and_sizes(problem, a, b, positions),
        _ => {
            return Err(crate::error::Error::Invalid(
                "products_f64 is for floats; u32's reference is the exact wrapping `matmul`".into(),
            ))
        }
    })
}

fn dots_and_sizes<T: Element>(
    problem: &Problem,
    a: &Matrix<T>,
    b: &Matrix<T>,
    positions: Option<&[(usize, usize)]>,
) -> (Vec<f64>, Vec<f64>) {
    let (sa, sb) = (problem.a_strides(), problem.b_strides());
    let k = problem.k;
    let dot = |i: usize, j: usize| {
        let (mut sum, mut size) = (0.0f64, 0.0f64);
        for l in 0..k {
            let p =
                a.data[i * sa.row + l * sa.col].to_f64() * b.data[l * sb.row + j * sb.col].to_f64();
            sum += p;
            size += p.abs();
        }
        (sum, size)
    };
    let pairs: Vec<(f64, f64)> = match positions {
        Some(pos) => pos.par_iter().map(|&(i, j)| dot(i, j)).collect(),
        None => {
            let n = problem.n;
            (0..problem.m * n)
                .into_par_iter()
                .with_min_len(n.max(1))
                .map(|idx| dot(idx / n, idx % n))
                .collect()
        }
    };
    pairs.into_iter().unzip()
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
