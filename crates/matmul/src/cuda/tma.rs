//! TMA tensor maps for the Hopper kernels (`Geometry::Wgmma`): one map per operand, built on the
//! host by `cuTensorMapEncodeTiled` and passed by value as a `__grid_constant__` parameter.
//!
//! Every map reads boxes whose inner (contiguous) edge is 128 bytes (64 16-bit elements) with the
//! 128-byte swizzle, which is the shared-memory layout wgmma's descriptors describe. The outer
//! edge of the box depends on which dimension is contiguous in memory:
//! - the operand's K is contiguous (A stored m×k, B stored n×k: "K-major"): one box of
//!   64 (K) × BM (or BN) rows per pipeline stage;
//! - its M or N is contiguous (A stored k×m, B stored k×n: "MN-major"): BM/64 (or BN/64) boxes of
//!   64 (M or N) × BK rows, placed one after another.
//!
//! With a cluster of blocks sharing B (`TcTile::cluster`), each block loads 1/cluster of B's K-major
//! rows (or of its MN-major boxes) and multicasts them, so B's K-major box has BN/cluster rows.
//!
//! For op(A) = op(B) = N the kernel swaps the operands (C^T = B^T·A^T, [`swaps_operands`]): the
//! map of wgmma's A side is then over B and that of its B side over A.
//!
//! Out-of-bounds elements of a box are filled with zeros, so partial tiles at the edges of C and
//! a K that is not a multiple of BK need no special code. C's map (the staged epilogue) writes
//! boxes of 64 rows × 32 f32, and TMA drops what falls outside M×N. The one rule TMA imposes is
//! that every stored row is a multiple of 16 bytes (`Constraint::TmaRows`).

use std::ffi::c_void;

use cudarc::driver::sys::{
    self as cu_sys, CUtensorMap, CUtensorMapDataType as DataType,
    CUtensorMapFloatOOBfill as OobFill, CUtensorMapInterleave as Interleave,
    CUtensorMapL2promotion as L2Promotion, CUtensorMapSwizzle as Swizzle,
};
use cudarc::driver::DeviceRepr;

use super::libs::Context;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::problem::{Op, Problem};
use crate::registry::TcTile;

/// A tensor map as a kernel parameter (128 bytes, copied by the driver at launch).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub(crate) struct TensorMap(CUtensorMap);

// SAFETY: a plain-old-data struct of 16 u64 words, which the kernel declares with the same size.
unsafe impl DeviceRepr for TensorMap {}

/// The swizzle span: 128 bytes of a stored row per box.
const SWIZZLE_BYTES: usize = 128;

/// Whether the kernel computes C^T = B^T·A^T: when A is K-major and B MN-major (op(A) = op(B) =
/// N, the plain row-major product), so that the MN-major operand is wgmma's 64-row A side and
/// the 256-wide B side is read K-major. 15_wgmma.cu applies the same rule to its strides.
pub(crate) fn swaps_operands(problem: &Problem) -> bool {
    problem.op_a == Op::N && problem.op_b == Op::N
}

/// The three maps of `problem` for buffers at `a`, `b` and `c`, boxed for `tile`. C's map (f32
/// boxes of 64 rows × 32 columns, the staged epilogue's) exists only when the tile stages C and
/// C's rows are a multiple of 16 bytes; otherwise it is left zeroed and the kernel, which checks
/// the same rule (N % 4 == 0), stores from registers.
pub(crate) fn maps(
    problem: &Problem,
    tile: &TcTile,
    a: u64,
    b: u64,
    c: u64,
) -> Result<[TensorMap; 3]> {
    let input = match problem.dtype {
        DType::Bf16 => DataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F16 => DataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
        other => {
            return Err(Error::Invalid(format!(
                "the TMA kernels read 16-bit inputs, not {other}"
            )))
        }
    };
    let elem = problem.dtype.input_bytes();
    let inner = (SWIZZLE_BYTES / elem) as u32;
    // wgmma's two sides: (matrix, its stored shape, whether it is K-major, name). Swapped, the
    // A side is B (stored k×n, MN-major) and the B side is A (stored m×k, K-major).
    let a_side = (a, problem.a_stored(), problem.op_a == Op::N, "A");
    let b_side = (b, problem.b_stored(), problem.op_b == Op::T, "B");
    let (a_side, b_side) = if swaps_operands(problem) {
        (b_side, a_side)
    } else {
        (a_side, b_side)
    };
    // Box rows: K-major → BM (A side) or BN (B side) rows of K; MN-major → BK rows. With a
    // cluster each block loads (and multicasts) its share of the B side's rows.
    let a_box = if a_side.2 { tile.bm } else { tile.bk };
    let b_box = if b_side.2 {
        tile.bn / tile.cluster.max(1)
    } else {
        tile.bk
    };
    let a_map = encode(input, elem, a_side.0, a_side.1, (a_box, inner), a_side.3)?;
    let b_map = encode(input, elem, b_side.0, b_side.1, (b_box, inner), b_side.3)?;
    let c_map = if tile.store_boxes > 0 && (problem.n * 4) % 16 == 0 {
        let f32 = DataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
        let c_box = (TcTile::C_BOX_ROWS, TcTile::C_BOX_COLS);
        encode(f32, 4, c, (problem.m, problem.n), c_box, "C")?
    } else {
        // SAFETY: a zeroed CUtensorMap is plain data; the kernel never reads this one.
        TensorMap(unsafe { std::mem::zeroed() })
    };
    Ok([a_map, b_map, c_map])
}

/// One map over a row-major `rows`×`cols` matrix of `elem`-byte elements at `ptr`, read or
/// written in boxes of `box_rows` rows × `box_cols` elements, 128-byte swizzled.
fn encode(
    data_type: DataType,
    elem: usize,
    ptr: u64,
    (rows, cols): (usize, usize),
    (box_rows, box_cols): (u32, u32),
    what: &str,
) -> Result<TensorMap> {
    let row_bytes = (cols * elem) as u64;
    let dims = [cols as u64, rows as u64];
    let strides = [row_bytes]; // the outer dimension's stride; the inner one is the element
    let boxes = [box_cols, box_rows];
    let element_strides = [1u32, 1];
    // SAFETY: `CUtensorMap` is plain data that the call fills; every pointer is to a live local
    // array of the rank (2) the call is given.
    let mut map: CUtensorMap = unsafe { std::mem::zeroed() };
    unsafe {
        cu_sys::cuTensorMapEncodeTiled(
            &mut map,
            data_type,
            2,
            ptr as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            Interleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            Swizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            L2Promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            OobFill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    }
    .result()
    .ctx(|| {
        format!(
            "cuTensorMapEncodeTiled for {what} ({rows}x{cols} of {elem}-byte elements, box {box_rows}x{box_cols})"
        )
    })?;
    Ok(TensorMap(map))
}
