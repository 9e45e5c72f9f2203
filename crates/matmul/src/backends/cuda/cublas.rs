//! The cuBLAS baseline: one `cublasGemmEx` per product (one `cublasGemmStridedBatchedEx` per
//! strided batch), row-major handled by computing
//! Cᵀ = op(B)ᵀ · op(A)ᵀ in cuBLAS's column-major terms.
//!
//! A row-major r×c buffer is a column-major c×r matrix with leading dimension c: the same bytes
//! read as the transpose. So row-major C (m×n) is column-major Cᵀ (n×m, ldc = n), and
//! Cᵀ = op(B)ᵀ·op(A)ᵀ is a column-major GEMM with m' = n, n' = m, B first:
//! - op(B) = B (stored k×n): the buffer read column-major is Bᵀ = op(B)ᵀ → `OP_N`, ld = n.
//! - op(B) = Bᵀ (stored n×k): the buffer read column-major is Bᵀ (k×n) = op(B); cuBLAS must
//!   transpose it → `OP_T`, ld = k.
//! - A likewise: `OP_N` with ld = k (stored m×k), `OP_T` with ld = m (stored k×m).
//!
//! The leading dimension is always the stored row length. Compute types: f32 →
//! `CUBLAS_COMPUTE_32F` (true FP32: cuBLAS's default math mode forbids TF32 down-conversion);
//! tf32 → `CUBLAS_COMPUTE_32F_FAST_TF32`; bf16 / f16 → 16-bit A and B, `CUBLAS_COMPUTE_32F`, and C
//! in f32 or, when the problem asks for C in the input dtype, in bf16 / f16.
//! beta = 0, so cuBLAS never reads the poisoned C.

use std::ffi::c_void;

use cudarc::cublas::sys::{
    cublasComputeType_t as Compute, cublasOperation_t as Op, cudaDataType as Data,
};
use cudarc::cublas::{result as blas, sys as blas_sys, CudaBlas};

use super::libs::Context;
use crate::backends::Batch;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::problem::{Op as MOp, Problem};

/// Enqueues C = op(A)·op(B) on `blas`'s stream; `a`, `b`, `c` are device pointers holding A and B
/// stored as `problem` says and room for m×n outputs of `problem.c_dtype()`.
pub(crate) fn gemm(blas: &CudaBlas, problem: &Problem, a: u64, b: u64, c: u64) -> Result<()> {
    gemm_batched(blas, problem, a, b, c, None)
}

/// [`gemm`], or with `batch` one `cublasGemmStridedBatchedEx` over its products (strides in
/// elements, as cuBLAS takes them).
pub(crate) fn gemm_batched(
    blas: &CudaBlas,
    problem: &Problem,
    a: u64,
    b: u64,
    c: u64,
    batch: Option<&Batch>,
) -> Result<()> {
    let (input, compute) = match problem.dtype {
        DType::F32 => (Data::CUDA_R_32F, Compute::CUBLAS_COMPUTE_32F),
        DType::Tf32 => (Data::CUDA_R_32F, Compute::CUBLAS_COMPUTE_32F_FAST_TF32),
        DType::Bf16 => (Data::CUDA_R_16BF, Compute::CUBLAS_COMPUTE_32F),
        DType::F16 => (Data::CUDA_R_16F, Compute::CUBLAS_COMPUTE_32F),
        DType::U32 => {
            return Err(Error::Invalid(
                "cuBLAS has no wrapping u32 GEMM; use a SIMT kernel".into(),
            ))
        }
    };
    let output = match problem.c_dtype() {
        DType::Bf16 => Data::CUDA_R_16BF,
        DType::F16 => Data::CUDA_R_16F,
        _ => Data::CUDA_R_32F,
    };
    let int = |v: usize| {
        i32::try_from(v)
            .map_err(|_| Error::Invalid(format!("{problem}: dimension {v} exceeds cuBLAS's int")))
    };
    let (m, n, k) = (int(problem.m)?, int(problem.n)?, int(problem.k)?);
    let (op_b, ld_b) = match problem.op_b {
        MOp::N => (Op::CUBLAS_OP_N, n),
        MOp::T => (Op::CUBLAS_OP_T, k),
    };
    let (op_a, ld_a) = match problem.op_a {
        MOp::N => (Op::CUBLAS_OP_N, k),
        MOp::T => (Op::CUBLAS_OP_T, m),
    };
    let (alpha, beta) = (1.0f32, 0.0f32);
    let alpha = &alpha as *const f32 as *const c_void;
    let beta = &beta as *const f32 as *const c_void;
    let algo = blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DFALT;
    let (a, b, c) = (a as *const c_void, b as *const c_void, c as *mut c_void);
    let Some(batch) = batch else {
        // SAFETY: the pointers come from live allocations sized for `problem`; alpha and beta
        // are host f32 scalars (host pointer mode, the handle's default), matching the f32
        // compute types.
        return unsafe {
            blas::gemm_ex(
                *blas.handle(),
                op_b,
                op_a,
                n,
                m,
                k,
                alpha,
                b,
                input,
                ld_b,
                a,
                input,
                ld_a,
                beta,
                c,
                output,
                n,
                compute,
                algo,
            )
        }
        .ctx(|| format!("cublasGemmEx for {problem}"));
    };
    let long = |v: usize| v as i64; // Batch::check bounds every offset
    let count = int(batch.count)?;
    // SAFETY: as for one product, with buffers that hold the batch (Batch::check_operands).
    unsafe {
        blas::gemm_strided_batched_ex(
            *blas.handle(),
            op_b,
            op_a,
            n,
            m,
            k,
            alpha,
            b,
            input,
            ld_b,
            long(batch.stride_b),
            a,
            input,
            ld_a,
            long(batch.stride_a),
            beta,
            c,
            output,
            n,
            long(batch.stride_c),
            count,
            compute,
            algo,
        )
    }
    .ctx(|| format!("cublasGemmStridedBatchedEx for {} × {problem}", batch.count))
}
