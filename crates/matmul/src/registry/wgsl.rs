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

/// Element `i` of A and B as T, what the scalar kernels read them through: the element itself
/// (f32, u32), or a 16-bit element widened to f32 from its word: f16 by `unpack2x16float`, core
/// WGSL, no `shader-f16` needed; bf16 by moving its bits to the high half of an f32 (exact).
fn loaders(dtype: DType) -> String {
    let body = |arr: &str| {
        match dtype {
        DType::F16 => format!("return unpack2x16float({arr}[i >> 1u])[i & 1u];"),
        DType::Bf16 => format!(
            "let w = {arr}[i >> 1u];\n    return bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) == 1u));"
        ),
        _ => format!("return {arr}[i];"),
    }
    };
    format!(
        "fn ld_a(i: u32) -> T {{\n    {}\n}}\nfn ld_b(i: u32) -> T {{\n    {}\n}}\n",
        body("a"),
        body("b")
    )
}

/// How the cooperative-matrix kernel stages an operand's tile, fixed per pipeline (a constant
/// of its header, so the driver compiles one path: chosen at run time, the same kernel ran at
/// half the speed on an H200).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Staging {
    /// 16-byte runs along the operand's rows (A along K: op N; B along N: op N).
    Rows,
    /// 16-byte runs along its columns (A along M: op T; B along K: op T).
    Columns,
    /// Element by element through the strides (a dimension that is not a multiple of 8).
    Elements,
}

impl Staging {
    /// The staging of an operand whose element (r, c) is at `r·rs + c·cs`, of `rows` × `cols`.
    fn of(rs: usize, cs: usize, rows: usize, cols: usize) -> Staging {
        if cs == 1 && rs.is_multiple_of(8) && cols.is_multiple_of(8) {
            Staging::Rows
        } else if rs == 1 && cs.is_multiple_of(8) && rows.is_multiple_of(8) {
            Staging::Columns
        } else {
            Staging::Elements
        }
    }

    /// Every staging.
    pub const ALL: [Staging; 3] = [Staging::Rows, Staging::Columns, Staging::Elements];

    fn code(self) -> u32 {
        self as u32
    }
}

/// What a kernel's pipeline is specialised on besides dtype and tile: the cooperative-matrix
/// kernel's staging of op(A) and op(B); `None` for every other kernel.
pub fn variant(src: &WgslSource, problem: &crate::problem::Problem) -> Option<(Staging, Staging)> {
    if !matches!(src.shape, WgslShape::CoopMat { .. }) {
        return None;
    }
    let (a, b) = (problem.a_strides(), problem.b_strides());
    Some((
        Staging::of(a.row, a.col, problem.m, problem.k),
        Staging::of(b.row, b.col, problem.k, problem.n),
    ))
}

/// The full WGSL of `src` for `dtype` at tile edge `tile` (the shapes with one): f32 or u32;
/// f16 and bf16 read as words and computed in f32 by the scalar kernels ([`loaders`]); f16 on
/// the cooperative-matrix kernel, whose staging of op(A) and op(B) is `variant` (row runs for
/// both when `None`).
pub fn text_for(
    src: &WgslSource,
    dtype: DType,
    tile: u32,
    variant: Option<(Staging, Staging)>,
) -> String {
    let coop = matches!(src.shape, WgslShape::CoopMat { .. });
    let ty = match dtype {
        DType::U32 => "u32",
        DType::F16 if coop => "f16",
        _ => "f32",
    };
    // Enable directives come before every declaration.
    let enables = if coop {
        "enable f16;\nenable wgpu_cooperative_matrix;\n"
    } else {
        ""
    };
    let mut out = format!("{enables}// {} for {dtype}\nalias T = {ty};\n", src.file);
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
            let (a, b) = variant.unwrap_or((Staging::Rows, Staging::Rows));
            out.push_str(&format!(
                "const BM: u32 = {bm}u;\nconst BN: u32 = {bn}u;\nconst BK: u32 = {bk}u;\n\
                 const A_STAGING: u32 = {}u; // {a:?}\nconst B_STAGING: u32 = {}u; // {b:?}\n",
                a.code(),
                b.code()
            ));
        }
    }
    if coop {
        // f16 A and B read as 16-byte runs (eight halves), f32 C.
        out.push_str(
            &PARAMS
                .replace("a: array<T>", "a: array<vec4<u32>>")
                .replace("b: array<T>", "b: array<vec4<u32>>")
                .replace("c: array<T>", "c: array<f32>"),
        );
    } else if dtype.is_16_bit() {
        // A and B as arrays of u32 words (two elements each, the lower address in the low
        // half), C in f32; T, the compute type, is f32.
        let words = PARAMS
            .replace("a: array<T>", "a: array<u32>")
            .replace("b: array<T>", "b: array<u32>")
            .replace("c: array<T>", "c: array<f32>");
        out.push_str(&words);
        out.push_str(&loaders(dtype));
    } else {
        out.push_str(PARAMS);
        out.push_str(&loaders(dtype));
    }
    out.push_str(src.text);
    out
}

/// [`text_for`] with the default variant.
pub fn text(src: &WgslSource, dtype: DType, tile: u32) -> String {
    text_for(src, dtype, tile, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::{Op, Problem};

    fn coopmat() -> &'static WgslSource {
        crate::registry::find("wgpu-coopmat")
            .unwrap()
            .wgsl_source()
            .unwrap()
    }

    /// The cooperative-matrix kernel's staging follows each operand's contiguous dimension, and
    /// falls back to elements where a row's stride is not a multiple of 8 halves.
    #[test]
    fn staging_follows_the_contiguous_dimension() {
        use Staging::*;
        let v =
            |m, n, k, a, b| variant(coopmat(), &Problem::new(m, n, k, DType::F16).with_ops(a, b));
        assert_eq!(v(4096, 4096, 4096, Op::N, Op::N), Some((Rows, Rows)));
        assert_eq!(v(4096, 4096, 4096, Op::T, Op::N), Some((Columns, Rows)));
        assert_eq!(v(4096, 4096, 4096, Op::N, Op::T), Some((Rows, Columns)));
        assert_eq!(v(4096, 4096, 4096, Op::T, Op::T), Some((Columns, Columns)));
        // K = 4099: op N's A rows and op T's B columns are not 16-byte aligned.
        assert_eq!(v(4096, 4096, 4099, Op::N, Op::N), Some((Elements, Rows)));
        assert_eq!(
            v(4096, 4096, 4099, Op::N, Op::T),
            Some((Elements, Elements))
        );
        // M and N odd: only what strides by them leaves the runs.
        assert_eq!(v(4095, 4097, 4096, Op::N, Op::N), Some((Rows, Elements)));
        assert_eq!(v(4095, 4097, 4096, Op::T, Op::T), Some((Elements, Columns)));
        // Every other kernel has one pipeline per dtype and tile.
        let regtile = crate::registry::find("wgpu-regtile").unwrap();
        let p = Problem::new(64, 64, 64, DType::F32);
        assert_eq!(variant(regtile.wgsl_source().unwrap(), &p), None);
        // The staging is a constant of the header.
        let text = text_for(coopmat(), DType::F16, 0, Some((Columns, Elements)));
        assert!(
            text.contains("const A_STAGING: u32 = 1u;")
                && text.contains("const B_STAGING: u32 = 2u;")
        );
    }
}
