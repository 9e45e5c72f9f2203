//! The small-M kernel (22_decode.cu, `Geometry::Decode`): M ≤ 64 rows of C (LLM decode) against a
//! large B, bound by streaming B once. A block of [`THREADS`] threads computes a row group of at
//! most [`ROWS_PER_BLOCK`] rows over a strip of [`columns_per_block`] columns and one piece of K;
//! the grid is (column blocks × row groups, [`splits`] pieces). With more than one piece each
//! block writes its partial sums into its piece's M×N slab of a workspace and the module's
//! `decode_reduce` adds the slabs into C in piece order (the launch code's split-K, shared with
//! wgmma). The kernel takes the number of pieces and the workspace after the usual arguments.
//!
//! Every rule here is the kernel's too (it recomputes the row groups, column lanes and path from
//! its arguments), so a change on one side must be made on the other.

use super::{ExtraArgs, Family, LaunchDims};
use crate::problem::Problem;
use crate::registry::DeviceInfo;
use crate::registry::KernelSpec;
use crate::registry::RunOptions;

/// The decode family.
pub struct Decode;

/// Threads per block (8 warps).
pub const THREADS: u32 = 256;
/// k per chunk of A staged in shared memory; K is split into pieces of whole chunks.
pub const CHUNK_K: usize = 256;
/// Blocks per SM the split plan aims for: two resident at a time (128 registers a thread) and
/// two waves of them, so that a block that finishes early finds another.
pub const BLOCKS_PER_SM: u64 = 4;
/// The split plan keeps split-K's slabs (written once, read once: 8·M·N bytes a piece) under
/// 1/`SLAB_SHARE` of B's bytes (K·N·elem), the floor the kernel is bound by.
pub const SLAB_SHARE: usize = 8;

/// How the kernel walks B, from B's strides (the kernel's rule: `b_cs == 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BPath {
    /// op(B) = N (B stored K×N, rows contiguous along j): threads own adjacent columns and split
    /// each chunk's k rows among themselves; also N = 1 and K = 1 with op(B) = T, whose column
    /// stride is 1 too.
    Rows,
    /// op(B) = T (B stored N×K, each column of op(B) contiguous along k): warps own columns, lanes
    /// split k.
    Columns,
}

/// The path of `problem`: [`BPath::Rows`] where op(B)'s column stride is 1.
pub fn path(problem: &Problem) -> BPath {
    if problem.b_strides().col == 1 {
        BPath::Rows
    } else {
        BPath::Columns
    }
}

/// Elements of one 16-byte vector: 4 of a 4-byte dtype, 8 of a 16-bit one.
fn vector(problem: &Problem) -> usize {
    16 / problem.dtype.input_bytes()
}

/// The most rows of C a block holds in registers: 8 (8×V sums a thread on the rows path, 8×4
/// on the columns path; 16 rows of 4-byte sums spilled on sm_80 at 128 registers).
pub const ROWS_PER_BLOCK: usize = 8;

/// Row groups: ⌈m / [`ROWS_PER_BLOCK`]⌉ (at most 8 for m ≤ 64).
pub fn row_groups(problem: &Problem) -> u64 {
    problem.m.div_ceil(ROWS_PER_BLOCK) as u64
}

/// The rows path's column lanes LC: the fewest 16-byte vectors that cover N, as a power of two
/// in [8, 32]; the other 256/LC threads of a block split k.
pub fn column_lanes(problem: &Problem) -> usize {
    problem
        .n
        .div_ceil(vector(problem))
        .next_power_of_two()
        .clamp(8, 32)
}

/// Columns of C per block: LC vectors on the rows path, 4 per warp (32) on the columns path.
pub fn columns_per_block(problem: &Problem) -> usize {
    match path(problem) {
        BPath::Rows => column_lanes(problem) * vector(problem),
        BPath::Columns => (THREADS as usize / 32) * 4,
    }
}

/// Column blocks: ⌈n / [`columns_per_block`]⌉.
pub fn column_blocks(problem: &Problem) -> u64 {
    problem.n.div_ceil(columns_per_block(problem)) as u64
}

/// The k pieces the launch uses on `problem` with `sms` SMs: enough blocks to fill the machine
/// [`BLOCKS_PER_SM`] deep, ⌈BLOCKS_PER_SM·sms / (column blocks × row groups)⌉, but no more pieces
/// than K has chunks of [`CHUNK_K`] (so none is empty: the kernel gives piece p the chunks
/// [p·chunks/P, (p + 1)·chunks/P)), no more than keep the slabs' traffic under 1/[`SLAB_SHARE`]
/// of B's (P ≤ K·elem / (8·SLAB_SHARE·m)), and at most 65535 (gridDim.y). 1 means no split: the
/// kernel writes C itself, with no workspace and no second launch.
pub fn splits(problem: &Problem, sms: u64) -> u64 {
    let base = column_blocks(problem) * row_groups(problem);
    if base == 0 || problem.k == 0 {
        return 1;
    }
    let fill = (BLOCKS_PER_SM * sms.max(1)).div_ceil(base);
    let chunks = problem.k.div_ceil(CHUNK_K) as u64;
    let slabs =
        (problem.k * problem.dtype.input_bytes() / (8 * SLAB_SHARE * problem.m.max(1))) as u64;
    fill.min(chunks).min(slabs).min(u16::MAX as u64).max(1)
}

impl Family for Decode {
    fn name(&self) -> &'static str {
        "decode"
    }

    fn launch_dims(
        &self,
        _kernel: &KernelSpec,
        problem: &Problem,
        _opts: &RunOptions,
        device: &DeviceInfo,
    ) -> Result<LaunchDims, String> {
        let x = column_blocks(problem) * row_groups(problem);
        let x = u32::try_from(x).map_err(|_| format!("the grid would need {x} blocks"))?;
        let y = splits(problem, device.sm_count as u64) as u32; // at most 65535
        Ok(((x, y, 1), (THREADS, 1, 1)))
    }

    fn extra_args(&self, _kernel: &KernelSpec, _opts: &RunOptions) -> ExtraArgs {
        ExtraArgs {
            split_k: true,
            ..ExtraArgs::default()
        }
    }

    /// [`splits`].
    fn splits(&self, _kernel: &KernelSpec, problem: &Problem, sms: u64) -> u64 {
        splits(problem, sms)
    }

    fn reduce_entry(&self) -> &'static str {
        "decode_reduce"
    }

    /// The pieces run along y: one piece, all of K.
    fn unsplit_grid(
        &self,
        _kernel: &KernelSpec,
        _problem: &Problem,
        (x, _, z): (u32, u32, u32),
        _sms: u64,
    ) -> (u32, u32, u32) {
        (x, 1, z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::family::tests::h100;
    use crate::problem::Op;
    use crate::registry::find;

    fn p(m: usize, n: usize, k: usize, dtype: DType) -> Problem {
        Problem::new(m, n, k, dtype)
    }

    /// The paths, row groups, column lanes and blocks, worked out by hand.
    #[test]
    fn geometry_follows_the_kernels_rules() {
        // op(B) = N, f32: 8 rows a block (16 rows: 2 groups), 32 lanes of 4 columns.
        let f = p(16, 4096, 4096, DType::F32);
        assert_eq!(path(&f), BPath::Rows);
        assert_eq!(row_groups(&f), 2);
        assert_eq!((column_lanes(&f), columns_per_block(&f)), (32, 128));
        assert_eq!(column_blocks(&f), 32);
        // bf16: 32 lanes of 8 columns; 17 rows are 3 groups.
        let b = p(17, 14336, 4096, DType::Bf16);
        assert_eq!(row_groups(&b), 3);
        assert_eq!((columns_per_block(&b), column_blocks(&b)), (256, 56));
        // Small N: 8 or 16 lanes (N = 48 bf16: 6 vectors → 8 lanes, 64 columns; N = 64 f32: 16).
        assert_eq!(column_lanes(&p(48, 48, 100_000, DType::Bf16)), 8);
        assert_eq!(column_lanes(&p(1, 64, 100_000, DType::F32)), 16);
        assert_eq!(column_lanes(&p(1, 1, 7, DType::U32)), 8);
        assert_eq!(column_lanes(&p(1, 100, 7, DType::U32)), 32);
        // op(B) = T: warps of 4 columns, whatever the dtype.
        let t = p(64, 4096, 4096, DType::F32).with_ops(Op::N, Op::T);
        assert_eq!(path(&t), BPath::Columns);
        assert_eq!(row_groups(&t), 8);
        assert_eq!((columns_per_block(&t), column_blocks(&t)), (32, 128));
        // op(B) = T with K = 1: B's column stride is 1, the rows path reads it (scalar loads).
        assert_eq!(
            path(&p(3, 5, 1, DType::F32).with_ops(Op::T, Op::T)),
            BPath::Rows
        );
        // op(A) does not matter.
        assert_eq!(
            path(&p(3, 5, 7, DType::F32).with_ops(Op::T, Op::N)),
            BPath::Rows
        );
    }

    /// Pieces fill about four blocks per SM, whole chunks each, slabs under 1/8 of B.
    #[test]
    fn split_plans() {
        let s = |m, n, k, d| splits(&p(m, n, k, d), 132);
        // 56 column blocks × 2 row groups = 112 blocks: 5 pieces (528 / 112), 16 chunks, slab
        // bound 4096·2 / (64·16) = 8.
        assert_eq!(s(16, 14336, 4096, DType::Bf16), 5);
        // 112 blocks, one row group: 5 pieces.
        assert_eq!(s(1, 28672, 8192, DType::Bf16), 5);
        // 32 blocks: 17 wanted, 16 chunks.
        assert_eq!(s(8, 4096, 4096, DType::F32), 16);
        // One column block of 64, 6 row groups: 88 wanted; slab bound 100000·2 / (64·48) = 65.
        assert_eq!(s(48, 48, 100_000, DType::Bf16), 65);
        // One block: 528 wanted, 391 chunks.
        assert_eq!(s(1, 64, 100_000, DType::F32), 391);
        // Short K: one chunk, no split; wide N fills the machine alone.
        assert_eq!(s(1, 1, 1, DType::F32), 1);
        assert_eq!(s(64, 64, 200, DType::F32), 1);
        assert_eq!(s(1, 1 << 20, 4096, DType::F32), 1);
        // op(B) = T: 448 column blocks × 2 row groups fill the machine; 128 × 1 take 5 pieces.
        let t = p(16, 14336, 4096, DType::Bf16).with_ops(Op::N, Op::T);
        assert_eq!(splits(&t, 132), 1);
        let t = p(1, 4096, 4096, DType::Bf16).with_ops(Op::N, Op::T);
        assert_eq!(splits(&t, 132), 5);
        // Never an empty piece, never past gridDim.y.
        for (m, n, k) in [(1, 1, 257), (64, 3, 70_000), (1, 1, 1 << 30), (5, 9, 511)] {
            for d in DType::ALL {
                let q = p(m, n, k, d);
                let s = splits(&q, 132);
                let chunks = k.div_ceil(CHUNK_K) as u64;
                assert!((1..=chunks.min(65_535)).contains(&s), "{q}: {s}");
            }
        }
    }

    /// The launch: (column blocks × row groups, pieces) blocks of 256, no shared memory
    /// (static), the pieces and workspace after the usual arguments.
    #[test]
    fn launch_dims_and_arguments() {
        let k = find("decode").unwrap();
        let f = k.family().unwrap();
        assert_eq!(f.name(), "decode");
        assert!(!f.persistent());
        let none = RunOptions::default();
        let dims = |q: &Problem| f.launch_dims(k, q, &none, &h100()).unwrap();
        assert_eq!(
            dims(&p(16, 14336, 4096, DType::Bf16)),
            ((112, 5, 1), (256, 1, 1))
        );
        assert_eq!(dims(&p(1, 1, 1, DType::U32)), ((1, 1, 1), (256, 1, 1)));
        let extra = f.extra_args(k, &none);
        assert!(extra.split_k && extra.split_tail.is_none() && extra.tensor_maps.is_none());
        assert_eq!(k.tile_shared_bytes(DType::F32, &none), None);
    }

    /// M ≤ 64, with a refusal that names the rule; every dtype, C in the input type too.
    #[test]
    fn can_run_refuses_m_above_64() {
        use crate::problem::COut;
        let k = find("decode").unwrap();
        let none = RunOptions::default();
        for d in DType::ALL {
            k.can_run(&p(64, 7, 9, d), None, &none).unwrap();
            let e = k.can_run(&p(65, 7, 9, d), None, &none).unwrap_err();
            assert!(e.rule.contains("at most 64"), "{e}");
        }
        let narrow = p(3, 5, 7, DType::Bf16).with_c(COut::Input);
        k.can_run(&narrow, None, &none).unwrap();
    }
}
