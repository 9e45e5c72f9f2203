//! The u32 product with wrapping (mod 2^32) arithmetic: cache-blocked, packed, rayon-parallel,
//! and written so that LLVM vectorizes the micro-kernel (`vpmulld` / `vpaddd` with AVX2).
//!
//! The loop nest is the Goto/BLIS one, with the parallel loop over row blocks of C:
//!
//! ```text
//! pack op(B) once, KC deep × NR wide micro-panels, zero-padded       (shared, read-only)
//! par for each row block of C (≤ MC rows)                          (a rayon task owns its rows)
//!   for each depth block pc (KC)
//!     pack op(A)[block rows, pc..pc+KC] into MR-tall micro-panels   (task-local, stays in L2)
//!     for each B micro-panel (NR columns; KC×NR×4 B = 16 KiB stays in L1)
//!       for each A micro-panel (MR rows)
//!         micro-kernel: MR×NR accumulators in registers, KC rank-1 updates
//!         C[tile] += accumulators (only the valid part at the right and bottom edges)
//! ```
//!
//! Packing reads op(A) and op(B) through the problem's strides, so transposes cost nothing
//! extra, and zero padding makes every micro-kernel call full-sized: edges are handled only
//! when the tile is added into C. When C has too few rows to share among the threads and is
//! wider than tall, the same kernel computes Cᵀ = op(B)ᵀ·op(A)ᵀ and transposes it back.
//!
//! The crate is compiled for baseline x86-64 (SSE2, which has no 32-bit lane multiply), so the
//! kernel is compiled twice: once with AVX2 enabled (chosen at run time when the CPU has it)
//! and once portably for every other CPU.

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::problem::{Problem, Strides};

/// Rows of the register tile.
const MR: usize = 4;
/// Columns of the register tile: two 8-lane AVX2 vectors, so MR×NR is 8 accumulator registers.
const NR: usize = 16;
/// Depth of a packed block: one B micro-panel (KC × NR × 4 B = 16 KiB) stays in L1.
const KC: usize = 256;
/// The most rows of C per rayon task: its packed A block (MC × KC × 4 B = 64 KiB) stays in L2.
const MC: usize = 64;

/// C (m×n) = op(A)·op(B) mod 2^32. `a` and `b` hold A and B as stored (`problem.a_stored()`,
/// `b_stored()`); the caller has checked their lengths.
pub(super) fn matmul(problem: &Problem, a: &[u32], b: &[u32]) -> Result<Matrix<u32>> {
    let (m, n, k) = (problem.m, problem.n, problem.k);
    let (sa, sb) = (problem.a_strides(), problem.b_strides());
    if m == 0 || n == 0 || k == 0 {
        return Matrix::zeros(m, n); // an empty C, or a depth-0 sum: all zeros
    }
    if m < n && m < MR * rayon::current_num_threads() {
        // Too few rows of C to give every thread a row block (1×n×k is the extreme): compute
        // Cᵀ = op(B)ᵀ·op(A)ᵀ instead, whose n rows do share out, and which packs the smaller
        // operand. The transposes are stride swaps; turning the n×m Cᵀ back costs O(mn).
        let c_t = product(b, swap(sb), a, swap(sa), n, m, k)?;
        let mut c = Matrix::<u32>::zeros(m, n)?;
        for (j, column) in c_t.chunks_exact(m).enumerate() {
            for (i, &v) in column.iter().enumerate() {
                c.data[i * n + j] = v;
            }
        }
        return Ok(c);
    }
    Matrix::from_vec(m, n, product(a, sa, b, sb, m, n, k)?)
}

/// The strides of the transposed view.
fn swap(s: Strides) -> Strides {
    Strides {
        row: s.col,
        col: s.row,
    }
}

/// The row-major m×n product of the views `op(A)[i][l] = a[i·sa.row + l·sa.col]` and
/// `op(B)[l][j] = b[l·sb.row + j·sb.col]`; m, n and k are at least 1.
fn product(
    a: &[u32],
    sa: Strides,
    b: &[u32],
    sb: Strides,
    m: usize,
    n: usize,
    k: usize,
) -> Result<Vec<u32>> {
    let mut c = Matrix::<u32>::zeros(m, n)?.data;
    let packed_b = PackedB::new(b, sb, k, n)?;
    let a = StridedA {
        data: a,
        strides: sa,
        k,
    };
    let mc = rows_per_task(m);
    let isa = Isa::detect();
    c.par_chunks_mut(mc * n).enumerate().for_each_init(
        || vec![0u32; mc * KC],
        |packed_a, (block, c_rows)| {
            let job = RowBlock {
                a: &a,
                b: &packed_b,
                first_row: block * mc,
                c: c_rows,
                packed_a,
            };
            isa.run(job);
        },
    );
    Ok(c)
}

/// Rows of C per task (a multiple of MR, at most MC): enough tasks for every thread, and an
/// even share for each so that the last task does not leave a thread idle.
fn rows_per_task(m: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let tasks = m.div_ceil(MC).next_multiple_of(threads);
    m.div_ceil(tasks).next_multiple_of(MR).min(MC)
}

/// op(A), read in place: `op(A)[i][l] = data[i·row + l·col]`.
struct StridedA<'a> {
    data: &'a [u32],
    strides: Strides,
    k: usize,
}

/// op(B) packed for the micro-kernel. Depth block `pc` (rows pc..pc+kc of op(B), kc ≤ KC) starts
/// at `pc · padded_n`; inside it, micro-panel `jp` (columns jp·NR..jp·NR+NR) is kc × NR elements,
/// row-major, at `jp · kc · NR`. Columns past n are zero.
struct PackedB {
    data: Vec<u32>,
    n: usize,
    panels: usize,
}

impl PackedB {
    fn new(b: &[u32], sb: Strides, k: usize, n: usize) -> Result<PackedB> {
        let panels = n.div_ceil(NR);
        let padded_n = panels * NR;
        let too_big = || Error::Allocation {
            rows: k,
            cols: padded_n,
        };
        let len = k.checked_mul(padded_n).ok_or_else(too_big)?;
        let mut data = Vec::new();
        data.try_reserve_exact(len).map_err(|_| too_big())?;
        data.resize(len, 0);
        for (pc, block) in (0..k).step_by(KC).zip(data.chunks_mut(KC * padded_n)) {
            let kc = (k - pc).min(KC);
            block
                .par_chunks_mut(kc * NR)
                .enumerate()
                .for_each(|(jp, panel)| {
                    let j0 = jp * NR;
                    let cols = (n - j0).min(NR);
                    for (p, row) in panel.chunks_exact_mut(NR).enumerate() {
                        let base = (pc + p) * sb.row + j0 * sb.col;
                        for (jj, dst) in row[..cols].iter_mut().enumerate() {
                            *dst = b[base + jj * sb.col]; // op(B)[pc + p][j0 + jj]
                        }
                    }
                });
        }
        Ok(PackedB { data, n, panels })
    }

    /// Micro-panel `jp` of the depth block that starts at `pc` and is `kc` deep.
    fn panel(&self, pc: usize, kc: usize, jp: usize) -> &[u32] {
        let start = pc * self.panels * NR + jp * kc * NR;
        &self.data[start..start + kc * NR]
    }
}

/// One rayon task: rows `first_row..` of C (`c` holds them, n columns each).
struct RowBlock<'a> {
    a: &'a StridedA<'a>,
    b: &'a PackedB,
    first_row: usize,
    c: &'a mut [u32],
    /// Scratch for the packed A block: at least `c.len() / n` rounded up to MR, times KC.
    packed_a: &'a mut [u32],
}

/// Which compiled copy of the kernel runs.
#[derive(Clone, Copy)]
enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx2,
    Portable,
}

impl Isa {
    fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            return Isa::Avx2;
        }
        Isa::Portable
    }

    fn run(self, job: RowBlock<'_>) {
        match self {
            // SAFETY: `Isa::Avx2` is only chosen after `is_x86_feature_detected!("avx2")`.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { row_block_avx2(job) },
            Isa::Portable => row_block(job),
        }
    }
}

/// [`row_block`] compiled with AVX2: 8 u32 lanes per `vpmulld` / `vpaddd`.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn row_block_avx2(job: RowBlock<'_>) {
    row_block(job)
}

/// Computes one task's rows of C (the loop nest in the module docs, below the parallel loop).
/// Always inlined, so each caller compiles it, micro-kernel included, for its own target features.
#[inline(always)]
fn row_block(job: RowBlock<'_>) {
    let RowBlock {
        a,
        b,
        first_row,
        c,
        packed_a,
    } = job;
    let (n, k) = (b.n, a.k);
    let rows = c.len() / n;
    let a_panels = rows.div_ceil(MR);
    for pc in (0..k).step_by(KC) {
        let kc = (k - pc).min(KC);
        let packed_a = &mut packed_a[..a_panels * kc * MR];
        pack_a(a, first_row, rows, pc, kc, packed_a);
        for jp in 0..b.panels {
            let b_panel = b.panel(pc, kc, jp);
            let j0 = jp * NR;
            let cols = (n - j0).min(NR);
            for (ip, a_panel) in packed_a.chunks_exact(kc * MR).enumerate() {
                let tile = micro_kernel(a_panel, b_panel);
                let i0 = ip * MR;
                for (i, tile_row) in tile.iter().take(rows - i0).enumerate() {
                    let c_row = &mut c[(i0 + i) * n + j0..][..cols];
                    for (out, v) in c_row.iter_mut().zip(tile_row) {
                        *out = out.wrapping_add(*v);
                    }
                }
            }
        }
    }
}

/// Packs op(A)[first_row..first_row + rows][pc..pc + kc] into MR-tall micro-panels: panel `ip`
/// is kc × MR elements at `ip · kc · MR`, element (p, i) at `p · MR + i`. Rows past the block
/// are written as zero (the buffer is reused, so stale values must not survive).
#[inline(always)]
fn pack_a(a: &StridedA<'_>, first_row: usize, rows: usize, pc: usize, kc: usize, out: &mut [u32]) {
    let s = a.strides;
    for (ip, panel) in out.chunks_exact_mut(kc * MR).enumerate() {
        let i0 = ip * MR;
        for (p, column) in panel.chunks_exact_mut(MR).enumerate() {
            for (i, dst) in column.iter_mut().enumerate() {
                *dst = if i0 + i < rows {
                    a.data[(first_row + i0 + i) * s.row + (pc + p) * s.col]
                } else {
                    0
                };
            }
        }
    }
}

/// The register tile: `a` is an MR-tall packed A micro-panel and `b` an NR-wide packed B
/// micro-panel of the same depth; returns `Σ_p a[p]ᵀ·b[p] mod 2^32`. The fixed-size accumulator
/// array lives in registers (MR·NR/8 = 8 ymm with AVX2), and each row update is an NR-lane
/// broadcast-multiply-add that LLVM emits as `vpbroadcastd` + `vpmulld` + `vpaddd`.
#[inline(always)]
fn micro_kernel(a: &[u32], b: &[u32]) -> [[u32; NR]; MR] {
    let mut acc = [[0u32; NR]; MR];
    for (a_col, b_row) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        // chunks_exact guarantees the lengths, so these conversions cannot fail (and compile away).
        let a_col: &[u32; MR] = a_col.try_into().expect("MR-element chunk");
        let b_row: &[u32; NR] = b_row.try_into().expect("NR-element chunk");
        for (acc_row, &ai) in acc.iter_mut().zip(a_col) {
            for (acc_ij, &bj) in acc_row.iter_mut().zip(b_row) {
                *acc_ij = acc_ij.wrapping_add(ai.wrapping_mul(bj));
            }
        }
    }
    acc
}
