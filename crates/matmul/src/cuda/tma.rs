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
    // (stored rows, stored cols, box rows): K contiguous → a box of BM (BN) rows of K;
    // M (N) contiguous → boxes of BK rows.
    let a_box = match problem.op_a {
        Op::N => tile.bm,
        Op::T => tile.bk,
    };
    // With a cluster each block loads (and multicasts) its share of B's rows.
    let b_box = match problem.op_b {
        Op::N => tile.bk,
        Op::T => tile.bn / tile.cluster.max(1),
    };
    let a_map = encode(input, elem, a, problem.a_stored(), (a_box, inner), "A")?;
    let b_map = encode(input, elem, b, problem.b_stored(), (b_box, inner), "B")?;
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
