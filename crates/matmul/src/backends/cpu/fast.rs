//! The fast CPU path: C = op(A)·op(B), every matrix row-major, transposes read through strides.
//!
//! - `f32` and `tf32`: the `gemm` crate (f32 storage and f32 arithmetic; the CPU has no TF32 mode,
//!   so `tf32` is computed at full f32 precision, which is within every TF32 tolerance). Built with
//!   its `x86-v4` feature, it has AVX-512 kernels too and picks them at run time where the CPU has
//!   AVX-512F (`is_x86_feature_detected!`), AVX2+FMA kernels otherwise.
//! - `f16` and `bf16`: the inputs are widened to f32 (exactly: every f16/bf16 value is an f32
//!   value), in parallel, and the f32 `gemm` path computes an f32 result. Accurate and simple;
//!   the conversion is O(mk + kn) against the product's O(mnk).
//! - `u32`: wrapping (mod 2^32) arithmetic in our own blocked, vectorized, rayon-parallel kernel
//!   (`u32_blocked.rs`: AVX-512, AVX2 or portable, chosen at run time); no library offers it.
//!
//! Transposes never copy: `gemm` takes arbitrary row and column strides, and the u32 kernel reads
//! through the same strides while it packs its panels.

mod u32_blocked;

use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use rayon::prelude::*;

use crate::backend::check_inputs;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::matrix::{AnyMatrix, Matrix};
use crate::problem::Problem;
use crate::view::AnyMatRef;

/// Computes `problem` on `a` and `b` (stored as `problem.a_stored()` / `b_stored()` say).
/// Floating inputs give an f32 result (rounded to bf16/f16 when the problem asks for C in the
/// input dtype); u32 inputs a u32 result with wrapping arithmetic.
/// A wrong shape or storage type is an error, never a panic.
pub fn matmul(problem: &Problem, a: &AnyMatrix, b: &AnyMatrix) -> Result<AnyMatrix> {
    check_inputs(problem, a, b)?;
    Ok(match (a, b) {
        (AnyMatrix::U32(a), AnyMatrix::U32(b)) => {
            check_lengths(a, b)?;
            AnyMatrix::U32(u32_blocked::matmul(problem, &a.data, &b.data)?)
        }
        (AnyMatrix::F32(a), AnyMatrix::F32(b)) => {
            check_lengths(a, b)?;
            AnyMatrix::F32(gemm_f32(problem, &a.data, &b.data)?)
        }
        (AnyMatrix::F16(a), AnyMatrix::F16(b)) => {
            check_lengths(a, b)?;
            let (a, b) = (widen_f16(a)?, widen_f16(b)?);
            AnyMatrix::F32(gemm_f32(problem, &a.data, &b.data)?)
        }
        (AnyMatrix::Bf16(a), AnyMatrix::Bf16(b)) => {
            check_lengths(a, b)?;
            let (a, b) = (widen_bf16(a)?, widen_bf16(b)?);
            AnyMatrix::F32(gemm_f32(problem, &a.data, &b.data)?)
        }
        _ => {
            return Err(Error::Invalid(format!(
                "A ({}) and B ({}) must hold the same element type",
                a.dtype(),
                b.dtype()
            )))
        }
    }
    .into_c_dtype(problem))
}

/// `Matrix`'s fields are public, so a caller can build one whose `data` disagrees with its shape.
/// The `gemm` call below reads raw pointers: refuse such a matrix rather than read out of bounds.
fn check_lengths<T: Element>(a: &Matrix<T>, b: &Matrix<T>) -> Result<()> {
    for (what, m) in [("A", a), ("B", b)] {
        if m.rows.checked_mul(m.cols) != Some(m.data.len()) {
            return Err(Error::ShapeMismatch {
                what,
                expected: format!("{}x{} elements", m.rows, m.cols),
                found: format!("{} elements", m.data.len()),
            });
        }
    }
    Ok(())
}

/// [`matmul`] on borrowed views: f32 A and B are read in place, rows `stride` apart (no copy);
/// other element types through a dense copy of each view.
pub fn matmul_ref(problem: &Problem, a: AnyMatRef<'_>, b: AnyMatRef<'_>) -> Result<AnyMatrix> {
    a.check()?;
    b.check()?;
    let (AnyMatRef::F32(va), AnyMatRef::F32(vb)) = (a, b) else {
        return matmul(problem, &a.to_matrix(), &b.to_matrix());
    };
    if problem.dtype != crate::DType::F32 || problem.c_dtype() != crate::DType::F32 {
        return matmul(problem, &a.to_matrix(), &b.to_matrix());
    }
    for (what, found, want) in [
        ("A", va.shape(), problem.a_stored()),
        ("B", vb.shape(), problem.b_stored()),
    ] {
        if found != want {
            return Err(Error::ShapeMismatch {
                what,
                expected: format!("{}x{}", want.0, want.1),
                found: format!("{}x{}", found.0, found.1),
            });
        }
    }
    // Element (i, l) of op(A): op N reads row i of the stored A, op T its column i.
    let strides = |op: crate::problem::Op, pitch: usize| match op {
        crate::problem::Op::N => (pitch, 1),
        crate::problem::Op::T => (1, pitch),
    };
    let (sa, sb) = (
        strides(problem.op_a, va.stride()),
        strides(problem.op_b, vb.stride()),
    );
    Ok(AnyMatrix::F32(gemm_f32_strided(
        problem,
        (va.data(), sa),
        (vb.data(), sb),
    )?))
}

/// C = op(A)·op(B) in f32 through `gemm`, multithreaded on rayon's pool.
///
/// `gemm::gemm` computes `dst := alpha·dst + beta·lhs·rhs` (note: the *opposite* of BLAS's
/// naming); with `read_dst = false` it ignores `alpha` and the old contents of `dst`, so C is
/// simply overwritten with `1·op(A)·op(B)`.
fn gemm_f32(problem: &Problem, a: &[f32], b: &[f32]) -> Result<Matrix<f32>> {
    let (sa, sb) = (problem.a_strides(), problem.b_strides());
    gemm_f32_strided(problem, (a, (sa.row, sa.col)), (b, (sb.row, sb.col)))
}

/// [`gemm_f32`] with op(A)'s element (i, l) at `a[i·row + l·col]` (likewise B): the caller
/// guarantees those indices are within the slices for i < m, l < k, j < n.
fn gemm_f32_strided(
    problem: &Problem,
    (a, (a_row, a_col)): (&[f32], (usize, usize)),
    (b, (b_row, b_col)): (&[f32], (usize, usize)),
) -> Result<Matrix<f32>> {
    let (m, n, k) = (problem.m, problem.n, problem.k);
    let mut c = Matrix::<f32>::zeros(m, n)?;
    if m == 0 || n == 0 || k == 0 {
        return Ok(c); // an empty C, or a depth-0 sum: all zeros
    }
    struct Strides {
        row: usize,
        col: usize,
    }
    let (sa, sb) = (
        Strides {
            row: a_row,
            col: a_col,
        },
        Strides {
            row: b_row,
            col: b_col,
        },
    );
    let last = |s: &Strides, rows: usize, cols: usize| (rows - 1) * s.row + (cols - 1) * s.col;
    if last(&sa, m, k) >= a.len() || last(&sb, k, n) >= b.len() {
        return Err(Error::Invalid(format!(
            "{problem}: the operands' strides reach past their elements"
        )));
    }
    // The strides of a matrix that fits in memory fit in isize.
    let s = |x: usize| x as isize;
    // SAFETY: checked just above: every `a[i·sa.row + l·sa.col]` with i < m, l < k is in
    // bounds (likewise `b` with l < k, j < n); `c` is a fresh m×n buffer with row stride n that
    // aliases neither input. `gemm` only reads `a` and `b` and only writes the m×n elements of
    // `c`, within this call.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.data.as_mut_ptr(),
            1,    // dst_cs: column stride of C
            s(n), // dst_rs: row stride of C
            false,
            a.as_ptr(),
            s(sa.col),
            s(sa.row),
            b.as_ptr(),
            s(sb.col),
            s(sb.row),
            0.0, // alpha: multiplies the old C (unused: read_dst = false)
            1.0, // beta: multiplies op(A)·op(B)
            false,
            false,
            false,
            gemm::Parallelism::Rayon(0), // 0 = all of rayon's threads
        );
    }
    Ok(c)
}

/// Elements per parallel conversion task.
const WIDEN_CHUNK: usize = 1 << 14;

fn widen_f16(x: &Matrix<f16>) -> Result<Matrix<f32>> {
    let mut out = Matrix::<f32>::zeros(x.rows, x.cols)?;
    out.data
        .par_chunks_mut(WIDEN_CHUNK)
        .zip(x.data.par_chunks(WIDEN_CHUNK))
        .for_each(|(dst, src)| src.convert_to_f32_slice(dst));
    Ok(out)
}

fn widen_bf16(x: &Matrix<bf16>) -> Result<Matrix<f32>> {
    let mut out = Matrix::<f32>::zeros(x.rows, x.cols)?;
    out.data
        .par_chunks_mut(WIDEN_CHUNK)
        .zip(x.data.par_chunks(WIDEN_CHUNK))
        .for_each(|(dst, src)| src.convert_to_f32_slice(dst));
    Ok(out)
}
