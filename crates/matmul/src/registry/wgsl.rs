//! The WGSL text of a kernel: a header that names the element type, the tile constants, the
//! parameters and the bindings, then the kernel's file (`kernels/wgsl/*.wgsl`).

use crate::dtype::DType;
use crate::registry::{WgslShape, WgslSource};

/// The uniform block every kernel reads: m, n, k and the row and column strides of op(A) and
/// op(B) (`op(A)[i][l] = a[i·a_rs + l·a_cs]`), padded to 32 bytes.
pub const PARAMS: &str = "struct Params {
    m: u32, n: u32, k: u32, a_rs: u32,
    a_cs: u32, b_rs: u32, b_cs: u32, pad: u32,
}
@group(0) @binding(0) var<storage, read> a: array<T>;
@group(0) @binding(1) var<storage, read> b: array<T>;
@group(0) @binding(2) var<storage, read_write> c: array<T>;
@group(0) @binding(3) var<uniform> p: Params;
";

/// The full WGSL of `src` for `dtype` (f32 or u32; f16 for the cooperative-matrix kernel) at
/// tile edge `tile` (the shapes with one).
pub fn text(src: &WgslSource, dtype: DType, tile: u32) -> String {
    let ty = match dtype {
        DType::U32 => "u32",
        DType::F16 => "f16",
        _ => "f32",
    };
    // Enable directives come before every declaration.
    let enables = match src.shape {
        WgslShape::CoopMat { .. } => "enable f16;\nenable wgpu_cooperative_matrix;\n",
        _ if dtype == DType::F16 => "enable f16;\n",
        _ => "",
    };
    let mut out = format!("{enables}// {} for {ty}\nalias T = {ty};\n", src.file);
    match src.shape {
        WgslShape::Row { threads } | WgslShape::Element { threads } => {
            out.push_str(&format!("const WG: u32 = {threads}u;\n"));
        }
        WgslShape::Tile2d { .. } | WgslShape::Tiled { .. } => {
            out.push_str(&format!("const TILE: u32 = {tile}u;\n"));
        }
        WgslShape::RegTile { bm, bn, bk, tm, tn } => {
            out.push_str(&format!(
                "const BM: u32 = {bm}u;\nconst BN: u32 = {bn}u;\nconst BK: u32 = {bk}u;\nconst TM: u32 = {tm}u;\nconst TN: u32 = {tn}u;\n"
            ));
        }
        WgslShape::CoopMat { bm, bn, bk } => {
            out.push_str(&format!(
                "const BM: u32 = {bm}u;\nconst BN: u32 = {bn}u;\nconst BK: u32 = {bk}u;\n"
            ));
        }
    }
    match src.shape {
        // f16 inputs, f32 C.
        WgslShape::CoopMat { .. } => out.push_str(&PARAMS.replace("c: array<T>", "c: array<f32>")),
        _ => out.push_str(PARAMS),
    }
    out.push_str(src.text);
    out
}
