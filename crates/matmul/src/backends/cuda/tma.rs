//! TMA tensor maps for the Hopper kernels (the `wgmma` family): one map per operand, built on the
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
//! that every stored row is a multiple of 16 bytes: an operand stored otherwise is read from a
//! padded copy ([`super::staging`]), so each map takes its operand's address and row pitch.
//!
//! The SIMT kernel fed by TMA (17_simt_tma.cu, [`simt_maps`]) reads f32 or u32 boxes shaped by its
//! tiling, unswizzled: an operand stored with K contiguous (A for op(A) = N, B for op(B) = T) in
//! boxes of BM (or BN) rows × BK elements, the other in boxes of BK rows × BM (or BN) elements.
//!
//! The tf32 kernel (`Geometry::WgmmaTf32`, `tf32_maps`) reads f32 boxes of 32 elements
//! (128 bytes) per row through maps of type TFLOAT32, so that the TMA rounds every element to
//! tf32 (to nearest, ties to even) as it copies it: the operand wgmma reads from shared memory
//! would otherwise reach the tensor cores truncated (lab/notebook.md 16c). Its boxes are chosen
//! by role rather than by operand: the operand wgmma reads from shared memory (S, always
//! K-major) in one box of BN rows × 32 K-elements, the one loaded into registers (R) in one box
//! of BM rows × 32 K-elements when it is K-major, else in BM/32 boxes of 32 M- or N-elements ×
//! BK rows. Which of A and B is R depends on the ops
//! ([`WgmmaTf32Orientation`]).

use std::ffi::c_void;

use cudarc::driver::sys::{
    self as cu_sys, CUtensorMap, CUtensorMapDataType as DataType,
    CUtensorMapFloatOOBfill as OobFill, CUtensorMapInterleave as Interleave,
    CUtensorMapL2promotion as L2Promotion, CUtensorMapSwizzle as Swizzle,
};
use cudarc::driver::DeviceRepr;

use super::libs::Context;
use super::staging::Pitched;
use crate::backends::Batch;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::family::Planes;
use crate::problem::{Op, Problem};
use crate::registry::{TcTile, Tiling, WgmmaTf32Orientation, TF32_LAYOUT_RULE};

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
/// the 256-wide B side is read K-major. 15_wgmma.cu applies the same rule to its strides, and
/// 16_wgmma_tf32.cu's swapped orientation is the same case ([`WgmmaTf32Orientation`]).
pub(crate) fn swaps_operands(problem: &Problem) -> bool {
    WgmmaTf32Orientation::of(problem) == Some(WgmmaTf32Orientation::Swapped)
}

/// The three maps of `problem` for buffers at `a`, `b` and `c`, boxed for `tile`. C's map (boxes
/// of 64 rows × 128 bytes, i.e. 32 f32 or 64 bf16/f16 columns: the staged epilogue's) exists only
/// when the tile stages C and C's rows are a multiple of 16 bytes; otherwise it is left zeroed
/// and the kernel, which checks the same rule (N % 4 == 0 for f32 C, N % 8 == 0 for 16-bit C),
/// stores from registers.
pub(crate) fn maps(
    problem: &Problem,
    tile: &TcTile,
    a: Pitched,
    b: Pitched,
    c: u64,
) -> Result<[TensorMap; 3]> {
    maps_of_batch(problem, tile, a, b, c, None)
}

/// A matrix's third dimension in a batch's maps: (count, stride) for an operand the products
/// step through, one matrix for one they share (stride 0), its size as the stride.
fn layers(count: usize, stride: usize, size: usize) -> (usize, usize) {
    if stride == 0 {
        (1, size)
    } else {
        (count, stride)
    }
}

/// [`maps`] for a strided batch's buffers (15_wgmma.cu's BATCHED build): each map has the
/// product as a third dimension ([`encode_layers`]); `batch` None is [`maps`].
pub(crate) fn maps_of_batch(
    problem: &Problem,
    tile: &TcTile,
    a: Pitched,
    b: Pitched,
    c: u64,
    batch: Option<&Batch>,
) -> Result<[TensorMap; 3]> {
    let input = match problem.dtype {
        DType::Bf16 | DType::F16 => data_type(problem.dtype),
        // Only the tf32 wgmma kernel reads f32 through TMA, with its boxes chosen by role.
        // f32 through TMA is the 3xTF32 kernel's: the same boxes, raw f32 (FLOAT32).
        DType::Tf32 | DType::F32 => return tf32_maps(problem, tile, a, b, c),
        other => {
            return Err(Error::Invalid(format!(
                "the TMA kernels read bf16, f16 or tf32 inputs, not {other}"
            )))
        }
    };
    let elem = problem.dtype.input_bytes();
    let inner = (SWIZZLE_BYTES / elem) as u32;
    // wgmma's two sides: (matrix, its stored shape, whether it is K-major, name). Swapped, the
    // A side is B (stored k×n, MN-major) and the B side is A (stored m×k, K-major).
    let size = |(rows, _): (usize, usize), at: Pitched| rows * at.pitch;
    let a_layers = batch.map(|t| layers(t.count, t.stride_a, size(problem.a_stored(), a)));
    let b_layers = batch.map(|t| layers(t.count, t.stride_b, size(problem.b_stored(), b)));
    let a_side = (a, problem.a_stored(), problem.op_a == Op::N, "A", a_layers);
    let b_side = (b, problem.b_stored(), problem.op_b == Op::T, "B", b_layers);
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
    let a_map = encode_layers(
        input,
        elem,
        a_side.0,
        a_side.1,
        a_side.4,
        (a_box, inner),
        SWIZZLED,
        a_side.3,
    )?;
    let b_map = encode_layers(
        input,
        elem,
        b_side.0,
        b_side.1,
        b_side.4,
        (b_box, inner),
        SWIZZLED,
        b_side.3,
    )?;
    let c_layers = batch.map(|t| (t.count, t.stride_c));
    Ok([a_map, b_map, c_map(problem, tile, c, c_layers)?])
}

/// The two maps of a pre-split TMA kernel (20_wgmma_u8x4_tma.cu, 21_wgmma_3xtf32.cu) over its
/// planes at `planes` (`layout`: A's `count` planes of m×`kp` elements, then B^T's of n×`kp`;
/// u8 byte planes or f32 tf32 planes): A's planes stacked as one (count·m)×kp matrix (plane i's
/// row r is row i·m + r), B^T's as (count·n)×kp, boxes of 128 bytes of k × `box_rows` (BM, BN)
/// rows in the 128-byte swizzle. A box past plane i's last row reads plane i + 1's first rows
/// (zeros past the last plane): the kernels use them only for rows of C past m (columns past n),
/// which they never store. A row of `kp` elements is a multiple of 128 bytes, so every row is
/// 16-byte aligned, and the workspace is an allocation's start.
pub(crate) fn plane_maps(
    planes: u64,
    layout: &Planes,
    (m, n, kp): (usize, usize, usize),
    (bm, bn): (u32, u32),
) -> Result<[TensorMap; 2]> {
    let data_type = match layout.elem {
        1 => DataType::CU_TENSOR_MAP_DATA_TYPE_UINT8,
        _ => DataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
    };
    let box_cols = (SWIZZLE_BYTES / layout.elem) as u32;
    let map = |ptr: u64, rows: usize, box_rows: u32, what: &str| {
        encode(
            data_type,
            layout.elem,
            Pitched { ptr, pitch: kp },
            (layout.count * rows, kp),
            (box_rows, box_cols),
            SWIZZLED,
            what,
        )
    };
    let b_planes = planes + (layout.count * layout.elem * kp * m) as u64;
    Ok([
        map(planes, m, bm, "A's planes")?,
        map(b_planes, n, bn, "B^T's planes")?,
    ])
}

/// C's map for the staged epilogue (epilogue.cuh): boxes of 64 rows × 128 bytes, i.e. 32 f32 or
/// 64 bf16/f16 columns. Zeroed (and not read) unless the tile stages C and C's rows are a
/// multiple of 16 bytes, the rule the kernel checks too.
fn c_map(
    problem: &Problem,
    tile: &TcTile,
    c: u64,
    layers: Option<(usize, usize)>,
) -> Result<TensorMap> {
    let c_bytes = problem.c_dtype().input_bytes();
    if tile.store_boxes == 0 || !(problem.n * c_bytes).is_multiple_of(16) {
        return Ok(unused_map());
    }
    let c_box = (TcTile::C_BOX_ROWS, TcTile::c_box_cols(c_bytes));
    let c_type = data_type(problem.c_dtype());
    encode_layers(
        c_type,
        c_bytes,
        Pitched {
            ptr: c,
            pitch: problem.n,
        },
        (problem.m, problem.n),
        layers,
        c_box,
        SWIZZLED,
        "C",
    )
}

/// The rows of the A and B boxes of the tf32 wgmma kernel (each box is 32 f32 elements wide):
/// - direct (op(B) = T): A is R, K-major (op(A) = N: BM rows) or M-major (op(A) = T: BK rows of
///   32 M-elements, BM/32 boxes per stage); B is S (BN rows of K);
/// - swapped (op(A) = N, op(B) = N): A is S (BN rows of K), B is R, N-major (BK rows of
///   32 N-elements, BM/32 boxes per stage).
///
/// With a cluster each block loads (and multicasts) its share of S's rows, BN / cluster.
pub(crate) fn tf32_box_rows(problem: &Problem, tile: &TcTile) -> Result<(u32, u32)> {
    let s_rows = tile.bn / tile.cluster.max(1);
    match WgmmaTf32Orientation::of(problem) {
        Some(WgmmaTf32Orientation::Direct) => {
            let a = match problem.op_a {
                Op::N => tile.bm,
                Op::T => tile.bk,
            };
            Ok((a, s_rows))
        }
        Some(WgmmaTf32Orientation::Swapped) => Ok((s_rows, tile.bk)),
        None => Err(Error::Invalid(format!(
            "wgmma-tf32 on {problem}: {TF32_LAYOUT_RULE}"
        ))),
    }
}

/// The maps of the tf32 wgmma kernel for buffers at `a`, `b` and `c` ([`tf32_box_rows`]; C's is
/// wgmma's, [`c_map`]).
fn tf32_maps(
    problem: &Problem,
    tile: &TcTile,
    a: Pitched,
    b: Pitched,
    c: u64,
) -> Result<[TensorMap; 3]> {
    if !matches!(problem.dtype, DType::Tf32 | DType::F32) {
        return Err(Error::Invalid(format!(
            "the tf32 tensor maps are for tf32 or f32 problems, not {}",
            problem.dtype
        )));
    }
    let inner = (SWIZZLE_BYTES / 4) as u32;
    // TFLOAT32 rounds as it copies (wgmma-tf32); FLOAT32 copies raw f32 (3xTF32 splits it).
    let tf32 = data_type(problem.dtype);
    let map = |ptr, stored, rows, what| encode(tf32, 4, ptr, stored, (rows, inner), SWIZZLED, what);
    let (a_box, b_box) = tf32_box_rows(problem, tile)?;
    Ok([
        map(a, problem.a_stored(), a_box, "A")?,
        map(b, problem.b_stored(), b_box, "B")?,
        c_map(problem, tile, c, None)?,
    ])
}

/// The maps of the TMA SIMT kernel for buffers at `a` and `b`, boxed by `tiling` (module docs);
/// the kernel stores C from registers, so the third is left zeroed. 17_simt_tma.cu tells the
/// layouts apart by the same rule (K contiguous ⇔ op(A) = N, op(B) = T).
pub(crate) fn simt_maps(
    problem: &Problem,
    tiling: &Tiling,
    a: Pitched,
    b: Pitched,
) -> Result<[TensorMap; 3]> {
    if !matches!(problem.dtype, DType::F32 | DType::U32) {
        return Err(Error::Invalid(format!(
            "the TMA SIMT kernel reads f32 or u32 inputs, not {}",
            problem.dtype
        )));
    }
    let (elem, dt) = (problem.dtype.input_bytes(), data_type(problem.dtype));
    let (a_box, b_box) = simt_boxes(problem, tiling);
    Ok([
        encode(dt, elem, a, problem.a_stored(), a_box, PLAIN, "A")?,
        encode(dt, elem, b, problem.b_stored(), b_box, PLAIN, "B")?,
        unused_map(),
    ])
}

/// The (rows, columns) of the TMA SIMT kernel's A and B boxes: an operand stored with K
/// contiguous (A for op(A) = N, B for op(B) = T) in BM (or BN) rows of BK elements, the other in
/// BK rows of BM (or BN) elements.
fn simt_boxes(problem: &Problem, tiling: &Tiling) -> ((u32, u32), (u32, u32)) {
    let boxed = |k_contiguous: bool, edge: u32| {
        if k_contiguous {
            (edge, tiling.bk)
        } else {
            (tiling.bk, edge)
        }
    };
    (
        boxed(problem.op_a == Op::N, tiling.bm),
        boxed(problem.op_b == Op::T, tiling.bn),
    )
}

/// A tensor map a kernel declares and does not read: 128 zero bytes.
pub(crate) fn unused_map() -> TensorMap {
    // SAFETY: `CUtensorMap` is plain data; all-zero bytes are a value of it (never encoded, never
    // read by the kernel).
    TensorMap(unsafe { std::mem::zeroed() })
}

/// The tensor-map element type that reads `dtype`. tf32 is stored as f32 and read as TFLOAT32:
/// the TMA rounds each f32 to tf32 (to nearest, ties to even, the low 13 bits zeroed) on the way
/// into shared memory.
fn data_type(dtype: DType) -> DataType {
    match dtype {
        DType::F32 => DataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
        DType::Tf32 => DataType::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
        DType::U32 => DataType::CU_TENSOR_MAP_DATA_TYPE_UINT32,
        DType::Bf16 => DataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        DType::F16 => DataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    }
}

/// The 128-byte swizzle (the wgmma kernels' shared-memory layout).
const SWIZZLED: Swizzle = Swizzle::CU_TENSOR_MAP_SWIZZLE_128B;
/// Boxes stored densely, row after row (the TMA SIMT kernel's).
const PLAIN: Swizzle = Swizzle::CU_TENSOR_MAP_SWIZZLE_NONE;

/// One map over a row-major `rows`×`cols` matrix of `elem`-byte elements at `at.ptr`, stored with
/// `at.pitch` elements from row to row, read or written in boxes of `box_rows` rows × `box_cols`
/// elements, laid out in shared memory by `swizzle`.
fn encode(
    data_type: DataType,
    elem: usize,
    at: Pitched,
    shape: (usize, usize),
    boxes: (u32, u32),
    swizzle: Swizzle,
    what: &str,
) -> Result<TensorMap> {
    encode_layers(data_type, elem, at, shape, None, boxes, swizzle, what)
}

/// [`encode`] with a third dimension when `layers` is (count, stride): `count` matrices
/// `stride` elements apart (a strided batch's operands; boxes of one matrix, coordinate 2 the
/// matrix). The stride's bytes must be a multiple of 16, as the rows' are.
#[allow(clippy::too_many_arguments)]
fn encode_layers(
    data_type: DataType,
    elem: usize,
    at: Pitched,
    (rows, cols): (usize, usize),
    layers: Option<(usize, usize)>,
    (box_rows, box_cols): (u32, u32),
    swizzle: Swizzle,
    what: &str,
) -> Result<TensorMap> {
    let row_bytes = (at.pitch * elem) as u64;
    let (count, layer_bytes) = layers.map_or((1, 0), |(n, stride)| (n, (stride * elem) as u64));
    let dims = [cols as u64, rows as u64, count as u64];
    // the outer dimensions' strides; the inner one is the element
    let strides = [row_bytes, layer_bytes];
    let boxes = [box_cols, box_rows, 1];
    let element_strides = [1u32, 1, 1];
    let rank = if layers.is_some() { 3 } else { 2 };
    // SAFETY: `CUtensorMap` is plain data that the call fills; every pointer is to a live local
    // array of at least the rank (2 or 3) the call is given.
    let mut map: CUtensorMap = unsafe { std::mem::zeroed() };
    unsafe {
        cu_sys::cuTensorMapEncodeTiled(
            &mut map,
            data_type,
            rank,
            at.ptr as *mut c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            element_strides.as_ptr(),
            Interleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            swizzle,
            L2Promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            OobFill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    }
    .result()
    .ctx(|| {
        format!(
            "cuTensorMapEncodeTiled for {what} ({count} of {rows}x{cols} of {elem}-byte elements, {row_bytes}-byte rows, {layer_bytes} bytes apart, box {box_rows}x{box_cols})"
        )
    })?;
    Ok(TensorMap(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The box rows of the tf32 maps follow the roles: S (the descriptor operand) in BN rows of K,
    /// R in BM rows of K (K-major) or BK rows of 32 M/N elements (M/N-major); T·N has none.
    #[test]
    fn tf32_boxes_follow_the_roles() {
        let tile = TcTile::new(128, 256, 32, 4, 384);
        let p = Problem::new(300, 260, 36, DType::Tf32);
        let rows = |a, b| tf32_box_rows(&p.with_ops(a, b), &tile).unwrap();
        assert_eq!(rows(Op::N, Op::N), (256, 32)); // swapped: A is S, B is R (N-major)
        assert_eq!(rows(Op::N, Op::T), (128, 256)); // direct: A is R (K-major), B is S
        assert_eq!(rows(Op::T, Op::T), (32, 256)); // direct: A is R (M-major), B is S
        let e = tf32_box_rows(&p.with_ops(Op::T, Op::N), &tile).unwrap_err();
        assert!(e.to_string().contains("op(A)=N or op(B)=T"), "{e}");
        // In a cluster of two each block loads half of S's rows (and multicasts them); R is whole.
        let pair = tile.with_cluster(2);
        let rows2 = |a, b| tf32_box_rows(&p.with_ops(a, b), &pair).unwrap();
        assert_eq!(rows2(Op::N, Op::N), (128, 32));
        assert_eq!(rows2(Op::N, Op::T), (128, 128));
        assert_eq!(rows2(Op::T, Op::T), (32, 128));
        // 128-byte rows of f32: 32 elements, the swizzle span.
        assert_eq!(SWIZZLE_BYTES / DType::Tf32.input_bytes(), 32);
    }

    /// The SIMT boxes follow each operand's stored layout: BM×BK (A stored M×K) or BK×BM (A stored
    /// K×M), BK×BN (B stored K×N) or BN×BK (B stored N×K), as 17_simt_tma.cu reads them.
    #[test]
    fn simt_boxes_follow_the_stored_layouts() {
        let t: Tiling = "128x256x20/8x4/w64x64n2/s4".parse().unwrap();
        let p = Problem::new(260, 132, 68, DType::F32);
        let boxes = |a, b| simt_boxes(&p.with_ops(a, b), &t);
        assert_eq!(boxes(Op::N, Op::N), ((128, 20), (20, 256)));
        assert_eq!(boxes(Op::T, Op::T), ((20, 128), (256, 20)));
        assert_eq!(boxes(Op::N, Op::T), ((128, 20), (256, 20)));
        assert_eq!(boxes(Op::T, Op::N), ((20, 128), (20, 256)));
    }
}
