//! The u32 product with wrapping (mod 2^32) arithmetic: cache-blocked, packed, rayon-parallel,
//! with an MR×NR register tile of 32-bit lane multiplies (`vpmulld`) and adds (`vpaddd`).
//!
//! The loop nest is the Goto/BLIS one, with the parallel loop over row blocks of C:
//!
//! ```text
//! pack op(B) once, KC deep × NR wide micro-panels, zero-padded       (shared, read-only)
//! par for each row block of C (≤ MC rows)                          (a rayon task owns its rows)
//!   for each depth block pc (KC)
//!     pack op(A)[block rows, pc..pc+KC] into MR-tall micro-panels   (task-local, stays in L2)
//!     for each B micro-panel (NR columns, KC deep)
//!       for each A micro-panel (MR rows)
//!         prefetch the C tile; micro-kernel: MR×NR accumulators in registers, KC rank-1 updates
//!         C[tile] += accumulators (only the valid part at the right and bottom edges)
//! ```
//!
//! Packing reads op(A) and op(B) through the problem's strides, so transposes cost nothing
//! extra, and zero padding makes every micro-kernel call full-sized: edges are handled only
//! when the tile is added into C. When C has too few rows to share among the threads and is
//! wider than tall, the same kernel computes Cᵀ = op(B)ᵀ·op(A)ᵀ and transposes it back.
//!
//! The crate is compiled for baseline x86-64 (SSE2, which has no 32-bit lane multiply), so the
//! kernel exists in three copies, the widest one the CPU has chosen at run time ([`Isa`]):
//!
//! - **AVX-512F**: an explicit micro-kernel of 8 × 32 (16 zmm accumulators of 16 lanes, out of
//!   32 registers), `vpbroadcastd` + `vpmulld` + `vpaddd`, KC = 512. Where a 512-bit `vpmulld`
//!   issues as often as a 256-bit one it does twice the lanes of AVX2; on the Zen 4 this was
//!   measured on it does not (512-bit operations take two passes), and the gain there comes
//!   from the larger tile and depth block (fewer loads, fewer passes over C).
//! - **AVX2**: the same micro-kernel with 256-bit intrinsics, 4 × 16 (8 ymm accumulators of 16
//!   registers), KC = 256.
//! - **portable**: plain Rust for any CPU (LLVM vectorizes it for the baseline ISA).
//!
//! `MATMUL_CPU_U32_ISA=avx2` (or `portable`) runs a narrower copy, to compare them.

use std::sync::OnceLock;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::problem::{Problem, Strides};

/// The environment variable that picks a narrower copy of the kernel than the widest the CPU has.
pub const ISA_ENV: &str = "MATMUL_CPU_U32_ISA";

/// A compiled copy of the kernel: the instruction set it is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    /// AVX-512F: 16 u32 lanes per register, 32 registers.
    Avx512,
    /// AVX2: 8 u32 lanes per register, 16 registers.
    Avx2,
    /// Baseline code for any CPU.
    Portable,
}

impl Isa {
    /// Every copy, widest first.
    pub const ALL: [Isa; 3] = [Isa::Avx512, Isa::Avx2, Isa::Portable];

    /// The name `MATMUL_CPU_U32_ISA` takes.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Portable => "portable",
        }
    }

    /// Whether this CPU can run the copy.
    pub fn supported(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(not(target_arch = "x86_64"))]
            Isa::Avx512 | Isa::Avx2 => false,
            Isa::Portable => true,
        }
    }

    /// The copy that runs: the widest this CPU supports, or the one `MATMUL_CPU_U32_ISA` names
    /// (an error when it names none, or one this CPU cannot run). Decided once per process.
    pub fn selected() -> Result<Isa> {
        static CHOICE: OnceLock<std::result::Result<Isa, String>> = OnceLock::new();
        CHOICE
            .get_or_init(|| {
                let widest = Isa::ALL.into_iter().find(|isa| isa.supported());
                let widest = widest.unwrap_or(Isa::Portable);
                let Some(text) = crate::config::get().cpu_u32_isa.clone() else {
                    return Ok(widest);
                };
                let supported: Vec<&str> = Isa::ALL
                    .into_iter()
                    .filter(|isa| isa.supported())
                    .map(Isa::name)
                    .collect();
                match Isa::ALL.into_iter().find(|isa| isa.name() == text.trim()) {
                    Some(isa) if isa.supported() => {
                        eprintln!(
                            "note: {ISA_ENV}={text}: the u32 CPU kernel runs its {} copy",
                            isa.name()
                        );
                        Ok(isa)
                    }
                    _ => Err(format!(
                        "{ISA_ENV}={text}: not a copy of the u32 CPU kernel this CPU can run \
                         (it can run: {})",
                        supported.join(", ")
                    )),
                }
            })
            .clone()
            .map_err(Error::Invalid)
    }
}

/// C (m×n) = op(A)·op(B) mod 2^32 with the selected copy of the kernel ([`Isa::selected`]).
/// `a` and `b` hold A and B as stored (`problem.a_stored()`, `b_stored()`); the caller has
/// checked their lengths.
pub(super) fn matmul(problem: &Problem, a: &[u32], b: &[u32]) -> Result<Matrix<u32>> {
    matmul_with(Isa::selected()?, problem, a, b)
}

/// [`matmul`] with a given copy of the kernel; `isa` must be [`Isa::supported`] (checked: an
/// unsupported one is an error, never an illegal instruction).
pub(super) fn matmul_with(
    isa: Isa,
    problem: &Problem,
    a: &[u32],
    b: &[u32],
) -> Result<Matrix<u32>> {
    if !isa.supported() {
        return Err(Error::Invalid(format!(
            "this CPU cannot run the {} copy of the u32 kernel",
            isa.name()
        )));
    }
    match isa {
        // SAFETY (each arm): the CPU supports the features the row-block function is compiled
        // for (`isa.supported()`, checked above).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => blocked::<AVX512_MR, AVX512_NR>(problem, a, b, AVX512, |job| unsafe {
            row_block_avx512(job)
        }),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => blocked::<MR, NR>(problem, a, b, PORTABLE, |job| unsafe {
            row_block_avx2(job)
        }),
        #[cfg(not(target_arch = "x86_64"))]
        Isa::Avx512 | Isa::Avx2 => unreachable!("not supported off x86-64"),
        Isa::Portable => blocked::<MR, NR>(problem, a, b, PORTABLE, row_block::<MR, NR>),
    }
}

/// Rows of the portable and AVX2 register tile.
const MR: usize = 4;
/// Columns of the portable and AVX2 register tile: two 8-lane AVX2 vectors, so MR×NR is 8
/// accumulator registers.
const NR: usize = 16;
/// Rows of the AVX-512 register tile.
const AVX512_MR: usize = 8;
/// Columns of the AVX-512 register tile: two 16-lane vectors, so 16 accumulator registers.
const AVX512_NR: usize = 32;

/// The cache blocking around a register tile.
#[derive(Debug, Clone, Copy)]
struct Blocking {
    /// Depth of a packed block: C is read and written k / KC times, and one B micro-panel
    /// (KC × NR × 4 B) serves every A micro-panel of a row block in turn.
    kc: usize,
    /// The most rows of C per rayon task (a multiple of MR): its packed A block (MC × KC × 4 B)
    /// stays in L2.
    mc: usize,
}

/// 256 × 16 × 4 B = 16 KiB of B panel (in L1); 64 × 256 × 4 B = 64 KiB of A block.
const PORTABLE: Blocking = Blocking { kc: 256, mc: 64 };
/// 512 × 32 × 4 B = 64 KiB of B panel (in L2: two 64-byte loads of it per 16 multiplies are
/// cheap); 64 × 512 × 4 B = 128 KiB of A block. On a Zen 4, single-threaded and timed by CPU
/// time, KC = 512 ran 3–4 % above KC = 256 and 128 (1024³ and 2048³), fewer passes over C
/// outweighing the B panel's move from L1 to L2; 12×32 and 16×16 tiles were no faster than 8×32.
const AVX512: Blocking = Blocking { kc: 512, mc: 64 };

/// The product with an MR×NR register tile, `row_block` being one copy of [`row_block`].
fn blocked<const MR: usize, const NR: usize>(
    problem: &Problem,
    a: &[u32],
    b: &[u32],
    blocking: Blocking,
    row_block: impl Fn(RowBlock<'_, NR>) + Sync,
) -> Result<Matrix<u32>> {
    let (m, n, k) = (problem.m, problem.n, problem.k);
    let (sa, sb) = (problem.a_strides(), problem.b_strides());
    if m == 0 || n == 0 || k == 0 {
        return Matrix::zeros(m, n); // an empty C, or a depth-0 sum: all zeros
    }
    if m < n && m < MR * rayon::current_num_threads() {
        // Too few rows of C to give every thread a row block (1×n×k is the extreme): compute
        // Cᵀ = op(B)ᵀ·op(A)ᵀ instead, whose n rows do share out, and which packs the smaller
        // operand. The transposes are stride swaps; turning the n×m Cᵀ back costs O(mn).
        let c_t = product::<MR, NR>(b, swap(sb), a, swap(sa), (n, m, k), blocking, row_block)?;
        let mut c = Matrix::<u32>::zeros(m, n)?;
        for (j, column) in c_t.chunks_exact(m).enumerate() {
            for (i, &v) in column.iter().enumerate() {
                c.data[i * n + j] = v;
            }
        }
        return Ok(c);
    }
    Matrix::from_vec(
        m,
        n,
        product::<MR, NR>(a, sa, b, sb, (m, n, k), blocking, row_block)?,
    )
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
fn product<const MR: usize, const NR: usize>(
    a: &[u32],
    sa: Strides,
    b: &[u32],
    sb: Strides,
    (m, n, k): (usize, usize, usize),
    blocking: Blocking,
    row_block: impl Fn(RowBlock<'_, NR>) + Sync,
) -> Result<Vec<u32>> {
    let mut c = Matrix::<u32>::zeros(m, n)?.data;
    let packed_b = PackedB::<NR>::new(b, sb, k, n, blocking.kc)?;
    let a = StridedA {
        data: a,
        strides: sa,
        k,
    };
    let mc = rows_per_task(m, MR, blocking.mc);
    let a_len = mc * blocking.kc;
    c.par_chunks_mut(mc * n).enumerate().for_each_init(
        || vec![0u32; a_len],
        |packed_a, (block, c_rows)| {
            row_block(RowBlock {
                a: &a,
                b: &packed_b,
                first_row: block * mc,
                c: c_rows,
                packed_a,
            })
        },
    );
    packed_b.recycle();
    Ok(c)
}

/// Rows of C per task (a multiple of `mr`, at most `mc`): enough tasks for every thread, and an
/// even share for each so that the last task does not leave a thread idle.
fn rows_per_task(m: usize, mr: usize, mc: usize) -> usize {
    let threads = rayon::current_num_threads().max(1);
    let tasks = m.div_ceil(mc).next_multiple_of(threads);
    m.div_ceil(tasks).next_multiple_of(mr).min(mc)
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
struct PackedB<const NR: usize> {
    data: Vec<u32>,
    n: usize,
    panels: usize,
    /// The depth of a full block (KC).
    kc: usize,
}

impl<const NR: usize> PackedB<NR> {
    fn new(b: &[u32], sb: Strides, k: usize, n: usize, kc_max: usize) -> Result<PackedB<NR>> {
        let panels = n.div_ceil(NR);
        let padded_n = panels * NR;
        let too_big = || Error::Allocation {
            rows: k,
            cols: padded_n,
        };
        let len = k.checked_mul(padded_n).ok_or_else(too_big)?;
        let mut data = spare_buffer();
        data.clear();
        data.try_reserve_exact(len).map_err(|_| too_big())?;
        data.resize(len, 0);
        for (pc, block) in (0..k)
            .step_by(kc_max)
            .zip(data.chunks_mut(kc_max * padded_n))
        {
            let kc = (k - pc).min(kc_max);
            block
                .par_chunks_mut(kc * NR)
                .enumerate()
                .for_each(|(jp, panel)| pack_b_panel::<NR>(b, sb, pc, jp * NR, n, panel));
        }
        Ok(PackedB {
            data,
            n,
            panels,
            kc: kc_max,
        })
    }

    /// Gives the buffer back for the next product ([`spare_buffer`]).
    fn recycle(self) {
        if self.data.capacity() <= SPARE_MAX_ELEMENTS {
            if let Ok(mut spare) = SPARE.lock() {
                if spare.capacity() < self.data.capacity() {
                    *spare = self.data;
                }
            }
        }
    }

    /// Micro-panel `jp` of the depth block that starts at `pc` and is `kc` deep.
    fn panel(&self, pc: usize, kc: usize, jp: usize) -> &[u32] {
        let start = pc * self.panels * NR + jp * kc * NR;
        &self.data[start..start + kc * NR]
    }
}

/// The packed-B buffer of the last product, kept for the next one: a fresh multi-MiB buffer
/// each call costs its page faults (the allocator returns a freed one to the OS), which were
/// 3-8 % of a 1024³ product's CPU time on the machine this was measured on. A product running
/// while another holds it allocates its own.
static SPARE: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// The largest buffer kept between products: 64 MiB (op(B) of 4096 × 4096).
const SPARE_MAX_ELEMENTS: usize = 16 << 20;

/// [`SPARE`]'s buffer, or an empty one when another product holds it.
fn spare_buffer() -> Vec<u32> {
    SPARE
        .try_lock()
        .map(|mut spare| std::mem::take(&mut *spare))
        .unwrap_or_default()
}

/// One rayon task: rows `first_row..` of C (`c` holds them, n columns each).
struct RowBlock<'a, const NR: usize> {
    a: &'a StridedA<'a>,
    b: &'a PackedB<NR>,
    first_row: usize,
    c: &'a mut [u32],
    /// Scratch for the packed A block: at least `c.len() / n` rounded up to MR, times KC.
    packed_a: &'a mut [u32],
}

/// A register tile: MR×NR accumulators over a packed A micro-panel and a packed B micro-panel.
/// A trait rather than a closure, so that the call is direct and `#[inline(always)]` holds.
trait Tile<const MR: usize, const NR: usize> {
    /// `a` is an MR-tall packed A micro-panel and `b` an NR-wide packed B micro-panel of the same
    /// depth; returns `Σ_p a[p]ᵀ·b[p] mod 2^32`.
    ///
    /// # Safety
    /// The CPU must support the features the tile is written for, and the caller be compiled
    /// with them.
    unsafe fn tile(a: &[u32], b: &[u32]) -> [[u32; NR]; MR];
}

/// [`micro_kernel`]: plain Rust that LLVM vectorizes for the baseline ISA.
struct PortableTile;

impl<const MR: usize, const NR: usize> Tile<MR, NR> for PortableTile {
    #[inline(always)]
    unsafe fn tile(a: &[u32], b: &[u32]) -> [[u32; NR]; MR] {
        micro_kernel::<MR, NR>(a, b)
    }
}

/// [`avx2::micro_kernel`]: intrinsics, 8 lanes per register.
#[cfg(target_arch = "x86_64")]
struct Avx2Tile;

#[cfg(target_arch = "x86_64")]
impl Tile<MR, NR> for Avx2Tile {
    #[inline(always)]
    unsafe fn tile(a: &[u32], b: &[u32]) -> [[u32; NR]; MR] {
        // SAFETY: the caller is compiled with AVX2 and the CPU has it.
        unsafe { avx2::micro_kernel::<MR, NR, { NR / 8 }>(a, b) }
    }
}

/// [`avx512::micro_kernel`]: intrinsics, 16 lanes per register.
#[cfg(target_arch = "x86_64")]
struct Avx512Tile;

#[cfg(target_arch = "x86_64")]
impl Tile<AVX512_MR, AVX512_NR> for Avx512Tile {
    #[inline(always)]
    unsafe fn tile(a: &[u32], b: &[u32]) -> [[u32; AVX512_NR]; AVX512_MR] {
        // SAFETY: the caller is compiled with AVX-512F and the CPU has it.
        unsafe { avx512::micro_kernel::<AVX512_MR, AVX512_NR, { AVX512_NR / 16 }>(a, b) }
    }
}

/// One task's rows of C with the AVX-512 tile.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn row_block_avx512(job: RowBlock<'_, AVX512_NR>) {
    // SAFETY: compiled with AVX-512F, which the caller guarantees.
    unsafe { row_block_with::<AVX512_MR, AVX512_NR, Avx512Tile>(job) }
}

/// One task's rows of C with the AVX2 tile: 8 u32 lanes per `vpmulld` / `vpaddd`.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn row_block_avx2(job: RowBlock<'_, NR>) {
    // SAFETY: compiled with AVX2, which the caller guarantees.
    unsafe { row_block_with::<MR, NR, Avx2Tile>(job) }
}

/// One task's rows of C with the portable tile, for any CPU.
fn row_block<const MR: usize, const NR: usize>(job: RowBlock<'_, NR>) {
    // SAFETY: the portable tile needs no feature.
    unsafe { row_block_with::<MR, NR, PortableTile>(job) }
}

/// Computes one task's rows of C (the loop nest in the module docs, below the parallel loop).
/// Always inlined, so each caller compiles it, micro-kernel included, for its own target features.
///
/// # Safety
/// As for `T::tile`.
#[inline(always)]
unsafe fn row_block_with<const MR: usize, const NR: usize, T: Tile<MR, NR>>(job: RowBlock<'_, NR>) {
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
    for pc in (0..k).step_by(b.kc) {
        let kc = (k - pc).min(b.kc);
        let packed_a = &mut packed_a[..a_panels * kc * MR];
        pack_a::<MR>(a, first_row, rows, pc, kc, packed_a);
        for jp in 0..b.panels {
            let b_panel = b.panel(pc, kc, jp);
            let j0 = jp * NR;
            let cols = (n - j0).min(NR);
            for (ip, a_panel) in packed_a.chunks_exact(kc * MR).enumerate() {
                let i0 = ip * MR;
                prefetch_tile(&c[i0 * n + j0..], n, (rows - i0).min(MR), cols);
                // SAFETY: passed on from the caller.
                let tile = unsafe { T::tile(a_panel, b_panel) };
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

/// Asks for the C tile (`rows` rows of `cols` elements, `n` apart, from the start of `c`) to be
/// brought into the cache while the micro-kernel computes, so that adding the tile into C does
/// not wait for memory.
#[inline(always)]
fn prefetch_tile(c: &[u32], n: usize, rows: usize, cols: usize) {
    #[cfg(target_arch = "x86_64")]
    for i in 0..rows {
        let row = &c[i * n..i * n + cols];
        for j in (0..cols).step_by(16).chain(std::iter::once(cols - 1)) {
            // SAFETY: a prefetch is a hint; the address is in bounds anyway.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    row.as_ptr().add(j).cast(),
                )
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (c, n, rows, cols);
}

/// Packs the B micro-panel of columns `j0..j0 + NR` (those below n) and rows `pc..` of op(B)
/// into `panel`, kc × NR row-major (kc = panel.len() / NR). Reads along whichever of op(B)'s
/// dimensions is contiguous in memory: rows of NR when B is stored as is, columns of kc when it
/// is stored transposed.
fn pack_b_panel<const NR: usize>(
    b: &[u32],
    sb: Strides,
    pc: usize,
    j0: usize,
    n: usize,
    panel: &mut [u32],
) {
    let cols = (n - j0).min(NR);
    let kc = panel.len() / NR;
    if sb.col == 1 {
        for (p, row) in panel.chunks_exact_mut(NR).enumerate() {
            let start = (pc + p) * sb.row + j0;
            row[..cols].copy_from_slice(&b[start..start + cols]); // op(B)[pc + p][j0..]
        }
    } else if sb.row == 1 {
        for jj in 0..cols {
            let start = (j0 + jj) * sb.col + pc;
            let column = &b[start..start + kc]; // op(B)[pc..][j0 + jj]
            for (row, &v) in panel.chunks_exact_mut(NR).zip(column) {
                row[jj] = v;
            }
        }
    } else {
        for (p, row) in panel.chunks_exact_mut(NR).enumerate() {
            let base = (pc + p) * sb.row + j0 * sb.col;
            for (jj, dst) in row[..cols].iter_mut().enumerate() {
                *dst = b[base + jj * sb.col]; // op(B)[pc + p][j0 + jj]
            }
        }
    }
}

/// Packs op(A)[first_row..first_row + rows][pc..pc + kc] into MR-tall micro-panels: panel `ip`
/// is kc × MR elements at `ip · kc · MR`, element (p, i) at `p · MR + i`. Rows past the block
/// are written as zero (the buffer is reused, so stale values must not survive). Reads along
/// whichever of op(A)'s dimensions is contiguous in memory, as [`pack_b_panel`] does.
#[inline(always)]
fn pack_a<const MR: usize>(
    a: &StridedA<'_>,
    first_row: usize,
    rows: usize,
    pc: usize,
    kc: usize,
    out: &mut [u32],
) {
    let s = a.strides;
    for (ip, panel) in out.chunks_exact_mut(kc * MR).enumerate() {
        let i0 = ip * MR;
        let valid = rows.saturating_sub(i0).min(MR);
        if s.row == 1 && valid == MR {
            for (p, column) in panel.chunks_exact_mut(MR).enumerate() {
                let start = first_row + i0 + (pc + p) * s.col;
                column.copy_from_slice(&a.data[start..start + MR]); // op(A)[i0..][pc + p]
            }
            continue;
        }
        for i in 0..MR {
            let columns = panel.chunks_exact_mut(MR);
            if i >= valid {
                columns.for_each(|column| column[i] = 0);
            } else if s.col == 1 {
                let start = (first_row + i0 + i) * s.row + pc;
                let row = &a.data[start..start + kc]; // op(A)[i0 + i][pc..]
                columns.zip(row).for_each(|(column, &v)| column[i] = v);
            } else {
                let base = (first_row + i0 + i) * s.row + pc * s.col;
                for (p, column) in columns.enumerate() {
                    column[i] = a.data[base + p * s.col];
                }
            }
        }
    }
}

/// The register tile: `a` is an MR-tall packed A micro-panel and `b` an NR-wide packed B
/// micro-panel of the same depth; returns `Σ_p a[p]ᵀ·b[p] mod 2^32`: the portable copy's tile, and
/// the definition the intrinsics tiles follow.
#[inline(always)]
fn micro_kernel<const MR: usize, const NR: usize>(a: &[u32], b: &[u32]) -> [[u32; NR]; MR] {
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

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// The AVX2 register tile: [`super::micro_kernel`] written with intrinsics, MR rows of V
    /// 8-lane accumulators (NR = 8·V columns). The plain Rust tile compiled with AVX2 was
    /// vectorized well in one build and along k, with shuffles, at a quarter of the speed in
    /// another (the same source, inlined into differently partitioned code): intrinsics do not
    /// depend on the vectorizer.
    ///
    /// # Safety
    /// Only for code compiled with AVX2, into which it is inlined.
    #[inline(always)]
    pub(super) unsafe fn micro_kernel<const MR: usize, const NR: usize, const V: usize>(
        a: &[u32],
        b: &[u32],
    ) -> [[u32; NR]; MR] {
        const { assert!(NR == 8 * V) };
        let mut acc = [[_mm256_setzero_si256(); V]; MR];
        for (a_col, b_row) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
            let mut bv = [_mm256_setzero_si256(); V];
            for (v, lanes) in bv.iter_mut().enumerate() {
                // SAFETY: b_row holds NR = 8·V elements, so 8 from 8·v are in bounds.
                *lanes = unsafe { _mm256_loadu_si256(b_row.as_ptr().add(8 * v).cast()) };
            }
            for (acc_row, &ai) in acc.iter_mut().zip(a_col) {
                let ai = _mm256_set1_epi32(ai as i32);
                for (acc_v, &bv) in acc_row.iter_mut().zip(&bv) {
                    *acc_v = _mm256_add_epi32(*acc_v, _mm256_mullo_epi32(ai, bv));
                }
            }
        }
        let mut out = [[0u32; NR]; MR];
        for (out_row, acc_row) in out.iter_mut().zip(&acc) {
            for (v, &acc_v) in acc_row.iter().enumerate() {
                // SAFETY: out_row holds NR = 8·V elements.
                unsafe { _mm256_storeu_si256(out_row.as_mut_ptr().add(8 * v).cast(), acc_v) };
            }
        }
        out
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// The AVX-512 register tile: [`super::micro_kernel`] written with intrinsics, MR rows of V
    /// 16-lane accumulators (NR = 16·V columns), each k step V loads of B, MR broadcasts of A and
    /// MR·V `vpmulld` + `vpaddd`.
    ///
    /// # Safety
    /// Only for code compiled with AVX-512F, into which it is inlined.
    #[inline(always)]
    pub(super) unsafe fn micro_kernel<const MR: usize, const NR: usize, const V: usize>(
        a: &[u32],
        b: &[u32],
    ) -> [[u32; NR]; MR] {
        const { assert!(NR == 16 * V) };
        let mut acc = [[_mm512_setzero_si512(); V]; MR];
        for (a_col, b_row) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
            let mut bv = [_mm512_setzero_si512(); V];
            for (v, lanes) in bv.iter_mut().enumerate() {
                // SAFETY: b_row holds NR = 16·V elements, so 16 from 16·v are in bounds.
                *lanes = unsafe { _mm512_loadu_si512(b_row.as_ptr().add(16 * v).cast()) };
            }
            for (acc_row, &ai) in acc.iter_mut().zip(a_col) {
                let ai = _mm512_set1_epi32(ai as i32);
                for (acc_v, &bv) in acc_row.iter_mut().zip(&bv) {
                    *acc_v = _mm512_add_epi32(*acc_v, _mm512_mullo_epi32(ai, bv));
                }
            }
        }
        let mut out = [[0u32; NR]; MR];
        for (out_row, acc_row) in out.iter_mut().zip(&acc) {
            for (v, &acc_v) in acc_row.iter().enumerate() {
                // SAFETY: out_row holds NR = 16·V elements.
                unsafe { _mm512_storeu_si512(out_row.as_mut_ptr().add(16 * v).cast(), acc_v) };
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    //! Every copy of the kernel, forced, against the reference (bit for bit), on shapes that
    //! cross every tile edge of every copy. A copy this CPU cannot run is skipped with a note.

    use super::*;
    use crate::cpu::reference;
    use crate::matrix::{AnyMatrix, Init};
    use crate::problem::Op;
    use crate::DType;

    const OPS: [(Op, Op); 4] = [
        (Op::N, Op::N),
        (Op::N, Op::T),
        (Op::T, Op::N),
        (Op::T, Op::T),
    ];

    /// (m, n, k): ones, odd sizes, primes, and ±1 around MR (4, 8), NR (16, 32), KC (256, 512)
    /// and MC (64); the short and wide ones take the transposed route.
    const SHAPES: [(usize, usize, usize); 16] = [
        (1, 1, 1),
        (1, 1, 257),
        (1, 37, 3),
        (37, 1, 3),
        (3, 5, 7),
        (7, 33, 129),
        (9, 31, 127),
        (17, 65, 255),
        (31, 97, 1),
        (101, 103, 107),
        (127, 129, 257),
        (129, 63, 131),
        (131, 257, 67),
        (263, 33, 269),
        (9, 47, 511),
        (65, 17, 1031),
    ];

    fn check(isa: Isa, m: usize, n: usize, k: usize, ops: (Op, Op), seed: u64) {
        let problem = Problem::new(m, n, k, DType::U32).with_ops(ops.0, ops.1);
        let (ar, ac) = problem.a_stored();
        let (br, bc) = problem.b_stored();
        let a = AnyMatrix::generate(DType::U32, ar, ac, Init::Random { seed }).unwrap();
        let b = AnyMatrix::generate(DType::U32, br, bc, Init::Random { seed: seed + 1 }).unwrap();
        let (AnyMatrix::U32(a32), AnyMatrix::U32(b32)) = (&a, &b) else {
            unreachable!("u32 inputs")
        };
        let got = matmul_with(isa, &problem, &a32.data, &b32.data).unwrap();
        let want = reference::matmul(&problem, &a, &b).unwrap();
        assert!(
            AnyMatrix::U32(got) == want,
            "{} copy: {problem} differs from the reference",
            isa.name()
        );
    }

    fn every_shape(isa: Isa) {
        if !isa.supported() {
            eprintln!("SKIP: this CPU cannot run the {} copy", isa.name());
            return;
        }
        for (s, &(m, n, k)) in SHAPES.iter().enumerate() {
            for (o, &ops) in OPS.iter().enumerate() {
                check(isa, m, n, k, ops, (s * 4 + o) as u64 * 2);
            }
        }
    }

    #[test]
    fn cpu_u32_avx512_copy_is_exact() {
        every_shape(Isa::Avx512);
    }

    #[test]
    fn cpu_u32_avx2_copy_is_exact() {
        every_shape(Isa::Avx2);
    }

    #[test]
    fn cpu_u32_portable_copy_is_exact() {
        every_shape(Isa::Portable);
    }

    #[test]
    fn cpu_u32_empty_and_unsupported() {
        for isa in Isa::ALL.into_iter().filter(|isa| isa.supported()) {
            let problem = Problem::new(0, 3, 5, DType::U32);
            let c = matmul_with(isa, &problem, &[], &[0; 15]).unwrap();
            assert_eq!((c.rows, c.cols, c.data.len()), (0, 3, 0));
            let problem = Problem::new(2, 3, 0, DType::U32);
            assert_eq!(matmul_with(isa, &problem, &[], &[]).unwrap().data, [0; 6]);
        }
        for isa in Isa::ALL.into_iter().filter(|isa| !isa.supported()) {
            let problem = Problem::new(1, 1, 1, DType::U32);
            assert!(matmul_with(isa, &problem, &[1], &[1]).is_err());
        }
        // The widest copy runs unless the environment names another.
        if crate::config::get().cpu_u32_isa.is_none() {
            let widest = Isa::ALL.into_iter().find(|isa| isa.supported()).unwrap();
            assert_eq!(Isa::selected().unwrap(), widest);
        }
    }
}
