//! The registry's types: what a kernel entry says (where it runs, its source, geometry, dtypes,
//! constraints and traffic model) and the accessors that read it.

use std::fmt;

use serde::Serialize;

use super::tiling::{TcTile, Tiling};
use super::traffic::Traffic;
use crate::dtype::DType;
pub use crate::family::wgmma::WgmmaTf32Orientation;
use crate::family::Family;
use crate::registry::RunOptions;

/// Where a kernel runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// [`CpuBackend`](crate::CpuBackend): the reference and the fast CPU path.
    Cpu,
    /// [`CudaBackend`](crate::CudaBackend): the NVRTC-compiled kernels and cuBLAS.
    Cuda,
    /// [`WgpuBackend`](crate::WgpuBackend): WGSL kernels through wgpu (Vulkan, Metal, DX12).
    Wgpu,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
            BackendKind::Wgpu => "wgpu",
        })
    }
}

/// How a CUDA kernel is launched: the thread-to-output mapping of its seed, and its tile. The
/// geometry names the kernel's family ([`crate::family`]), which turns it into a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Geometry {
    /// One thread per row of C, `threads` per block; grid = ⌈m / threads⌉.
    RowPerThread {
        /// Threads per block.
        threads: u32,
    },
    /// One thread per element of C in a 1-D grid, `threads` per block; grid = ⌈m·n / threads⌉.
    ElementPerThread {
        /// Threads per block.
        threads: u32,
    },
    /// `threads` consecutive outputs of one row per block; grid = (⌈n / threads⌉, m).
    RowSegment {
        /// Threads per block, one output of the row each.
        threads: u32,
    },
    /// `tile`×`tile` threads per block, one output each; grid = (⌈n / tile⌉, ⌈m / tile⌉).
    Tile2d {
        /// The tile edge (`TILE`); [`RunOptions::tile`](crate::RunOptions::tile) overrides it.
        tile: u32,
    },
    /// A single block of `tpb`×`tpb` threads covers all of C.
    SingleBlock {
        /// Threads per block along each axis (`TPB`); [`RunOptions::tile`](crate::RunOptions::tile)
        /// overrides it.
        tpb: u32,
    },
    /// The SIMT ladder: a BM×BN tile of C per block, [`Tiling::threads`] threads, dynamic shared
    /// memory of [`Tiling::shared_elems`] elements; grid = (⌈n / BN⌉, ⌈m / BM⌉).
    BlockTile {
        /// The registry's default tiling; [`RunOptions::tiling`](crate::RunOptions::tiling)
        /// overrides it.
        tiling: Tiling,
    },
    /// Tensor cores through mma.sync: a BM×BN tile of C per block of `tile.threads`, dynamic
    /// shared memory of [`TcTile::shared_bytes`]; grid = (⌈n / BN⌉, ⌈m / BM⌉).
    Mma {
        /// The compile-time tile.
        tile: TcTile,
    },
    /// Hopper tensor cores through TMA and wgmma (sm_90a): a persistent grid of
    /// min(tiles, SMs) blocks of `tile.threads` that walk the BM×BN tiles of C; A and B also
    /// reach the kernel as two TMA tensor maps after the usual arguments.
    Wgmma {
        /// The compile-time tile (cluster and staged-C boxes included).
        tile: TcTile,
    },
    /// The tf32 wgmma kernel: as `Wgmma`, for a D of BM×BN tiles that is C (op(B) = T) or C^T
    /// (op(B) = N), BM along the operand it loads into registers and BN along the one wgmma reads
    /// from shared memory; its tensor maps are boxed per role ([`WgmmaTf32Orientation`]).
    WgmmaTf32 {
        /// The compile-time tile; BM and BN run along D's operands as above, not C's rows and
        /// columns.
        tile: TcTile,
    },
    /// Exact u32 on the int8 tensor cores by the byte split (18_mma_u8x4.cu): a pre-pass
    /// (`u8x4_split`, ⌈rows / 32⌉ × KP/64 blocks of 256 per operand) writes A and B^T as 4 byte
    /// planes each into a workspace, then a BM×BN tile of C per block of `tile.threads`, dynamic
    /// shared memory of STAGES·(BM + BN)·BK bytes; grid = (⌈n / BN⌉, ⌈m / BM⌉). The planes'
    /// address and KP (K rounded up to 128) follow the usual arguments.
    ByteSplit {
        /// The compile-time tile (BK in bytes of k).
        tile: TcTile,
    },
    /// The byte split in a TMA pipeline (20_wgmma_u8x4_tma.cu, sm_90a): the same pre-pass and
    /// planes as `ByteSplit`, then a persistent grid of min(tiles, SMs) blocks of `tile.threads`
    /// walking the BM×BN tiles of C; after the planes' address and KP, two TMA tensor maps over
    /// the planes (A's 4 stacked as 4M rows of KP bytes, B^T's as 4N rows).
    ByteSplitTma {
        /// The compile-time tile (BK in bytes of k).
        tile: TcTile,
    },
    /// FP32 emulated by 3xTF32 from planes (21_wgmma_3xtf32.cu, sm_90a): a pre-pass
    /// (`tf32x3_split`) writes A and B^T as big and small tf32 planes (2M and 2N rows of KP f32)
    /// into a workspace; then the persistent pipeline of `ByteSplitTma` on them (its arguments:
    /// split-K's pieces and slabs, the planes' address and KP, two tensor maps over the planes);
    /// then `tf32x3_fixup`, which recomputes the elements whose row of A or column of B holds ±∞.
    Tf32x3 {
        /// The compile-time tile.
        tile: TcTile,
    },
    /// The small-M kernel (22_decode.cu, M ≤ 64): blocks of 256 threads, each a few rows of C
    /// over a strip of columns and one piece of K; grid = (column blocks × row groups, k
    /// pieces), both from [`family::decode`](crate::family::decode). After the usual arguments
    /// the number of pieces and the workspace of their partial slabs, which the module's
    /// `decode_reduce` sums into C.
    Decode,
}

/// A CUDA C++ kernel compiled at run time by NVRTC.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CudaSource {
    /// File name under `crates/matmul/kernels/`.
    pub file: &'static str,
    /// The file's contents (`include_str!`), without the includes ([`CudaSource::full_text`]
    /// adds them).
    #[serde(skip)]
    pub text: &'static str,
    /// Headers under `crates/matmul/kernels/` compiled ahead of `text`, in order (name, text).
    #[serde(skip)]
    pub includes: &'static [(&'static str, &'static str)],
    /// The `__global__` function, when it is not the registry name with `-` written `_` (two
    /// entries can share a file and differ only in their default parameters).
    pub entry: Option<&'static str>,
    /// Fixed `-D` values of this entry (a feature switch of a shared file).
    pub defines: &'static [(&'static str, &'static str)],
    /// The launch geometry and default tile; it selects the kernel's [`Family`].
    pub geometry: Geometry,
    /// C must be zeroed before the launch (the kernel accumulates into it).
    pub zero_output: bool,
    /// The kernel can write C in a 16-bit input dtype (compiled with `C_NARROW=1`, C's element
    /// type then `ELEM`); otherwise it writes the accumulator type only.
    pub narrow_c: bool,
    /// A SIMT kernel whose tiles of A and B arrive by TMA (`Geometry::BlockTile` with tensor maps
    /// boxed by its tiling after the usual arguments, `cuda/tma.rs` `simt_maps`); its tilings
    /// follow [`TMA_TILING_RULE`](super::TMA_TILING_RULE) too.
    pub tma_tiles: bool,
    /// A SIMT kernel that can split its last partial wave (13_multistage.cu, "The split tail"):
    /// its entry takes one more argument, the number of tiles it computes whole (the first ones
    /// of its block order; blocks past them exit), and the same file compiled with
    /// `SPLIT_TAIL_PIECES=1` has the entry `<entry>_tail` that computes the rest in pieces
    /// (`cuda::split_tail_plan`).
    pub split_tail: bool,
    /// A kernel that can split K (15_wgmma.cu, "Split-K"; 22_decode.cu): its entry takes two
    /// more arguments after the usual ones (and a wgmma kernel's tensor maps), the number of k
    /// pieces and a workspace of that many M×N slabs of 4-byte sums, and the same module's
    /// reduction (`wgmma_reduce`, `decode_reduce`) sums the slabs into C
    /// ([`Wgmma::splits`](crate::family::wgmma::Wgmma::splits),
    /// [`decode::splits`](crate::family::decode::splits)).
    pub split_k: bool,
    /// A kernel that runs a strided batch in one launch (13_multistage.cu, 15_wgmma.cu): its
    /// entry compiled with `BATCHED=1` takes the batch's count and its A, B and C strides (in
    /// elements) after its other arguments; a batch it cannot take so runs product by product.
    pub batched: bool,
}

/// How a WGSL kernel maps invocations to outputs, and its tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum WgslShape {
    /// One invocation per row of C, `threads` per workgroup (ROW).
    Row {
        /// Invocations per workgroup.
        threads: u32,
    },
    /// One invocation per element of C in a 1-D dispatch (folded into y past the dispatch
    /// limit), `threads` per workgroup (ELE / naive-1d).
    Element {
        /// Invocations per workgroup.
        threads: u32,
    },
    /// `tile`×`tile` invocations per workgroup, one output each, from global memory (naive).
    Tile2d {
        /// The tile edge; [`RunOptions::tile`](crate::RunOptions::tile) overrides it.
        tile: u32,
    },
    /// `tile`×`tile` tiles of A and B staged in workgroup memory (TILING); a `single` entry
    /// must cover all of C with one workgroup (the puzzles' single block).
    Tiled {
        /// The tile edge (TPB); [`RunOptions::tile`](crate::RunOptions::tile) overrides it.
        tile: u32,
    },
    /// A BM×BN tile of C per workgroup of (BN/TN)×(BM/TM) invocations, each a TM×TN register
    /// tile, A and B staged BK deep in workgroup memory.
    RegTile {
        /// Rows of C per workgroup.
        bm: u32,
        /// Columns of C per workgroup.
        bn: u32,
        /// K per stage.
        bk: u32,
        /// Rows per invocation.
        tm: u32,
        /// Columns per invocation.
        tn: u32,
    },
    /// A BM×BN tile of C per workgroup of subgroups of 32, each a 32×64 block of C in 16×16
    /// cooperative-matrix fragments (f16 inputs, f32 accumulators), A and B staged BK deep in
    /// workgroup memory. Runs where the adapter offers cooperative matrices of 16×16×16 f16→f32
    /// and subgroups of 32.
    CoopMat {
        /// Rows of C per workgroup.
        bm: u32,
        /// Columns of C per workgroup.
        bn: u32,
        /// K per stage.
        bk: u32,
    },
}

/// A WGSL kernel run by the wgpu backend; its text is completed by a header that names the
/// element type and the tile constants (`registry/wgsl.rs`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct WgslSource {
    /// File name under `crates/matmul/kernels/wgsl/`.
    pub file: &'static str,
    /// The file's contents.
    #[serde(skip)]
    pub text: &'static str,
    /// The invocation mapping and tile.
    pub shape: WgslShape,
    /// The CUDA kernels that run the same algorithm: naming one with `--backend wgpu` runs this
    /// kernel ([`crate::registry::wgpu_twin`]).
    pub twins: &'static [&'static str],
}

impl WgslShape {
    /// Invocations per workgroup at tile edge `tile` (for the shapes that have one).
    pub fn invocations(&self, tile: u32) -> u32 {
        match *self {
            WgslShape::Row { threads } | WgslShape::Element { threads } => threads,
            WgslShape::Tile2d { .. } | WgslShape::Tiled { .. } => tile * tile,
            WgslShape::RegTile { bm, bn, tm, tn, .. } => (bm / tm) * (bn / tn),
            WgslShape::CoopMat { bm, bn, .. } => (bm / 32) * (bn / 64) * 32,
        }
    }

    /// Workgroup memory in bytes with 4-byte elements at tile edge `tile`.
    pub fn workgroup_bytes(&self, tile: u32) -> usize {
        match *self {
            WgslShape::Tiled { .. } => 2 * (tile as usize).pow(2) * 4,
            // regtile.wgsl pads A's rows by four elements (one vec4).
            WgslShape::RegTile { bm, bn, bk, .. } => (bm + 4 + bn) as usize * bk as usize * 4,
            // Two stages of f16 A and B, their rows padded by 8 halves in either orientation,
            // and a 16×16 f32 scratch per subgroup (C's edges).
            WgslShape::CoopMat { bm, bn, bk } => {
                let a = (bm * (bk + 8)).max(bk * (bm + 8)) as usize;
                let b = (bk * (bn + 8)).max(bn * (bk + 8)) as usize;
                2 * (a + b) * 2 + (self.invocations(0) / 32) as usize * 256 * 4
            }
            _ => 0,
        }
    }
}

/// How a registry entry computes.
#[derive(Debug, Clone, Copy, Serialize)]
pub enum Implementation {
    /// f64 accumulation for floats, exact wrapping u32: the verifier.
    CpuReference,
    /// `gemm` crate for floats, our blocked rayon kernel for u32.
    CpuFast,
    /// The vendor library (cuBLAS / cuBLASLt) for the problem's dtype.
    Cublas,
    /// One of this crate's CUDA C++ kernels, compiled by NVRTC.
    Cuda(CudaSource),
    /// One of this crate's WGSL kernels, run by the wgpu backend.
    Wgsl(WgslSource),
}

/// A shape rule a kernel's structure imposes (checked by [`KernelSpec::can_run`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Constraint {
    /// K elements of the packed row or column must fit in one block's shared memory.
    KFitsSharedMemory,
    /// All of C, and K, must fit in the single block: m, n, k ≤ tpb.
    FitsOneBlock,
    /// The kernel uses sm_90a instructions (wgmma, setmaxnreg, TMA): Hopper only.
    Sm90a,
    /// tf32 wgmma reads its shared-memory operand K-major only: op(A) = N (A stored M×K) or
    /// op(B) = T (B stored N×K); op(A) = T with op(B) = N has no K-major operand.
    TcTf32Layout,
    /// The kernel keeps every row of C a block computes in registers: m ≤
    /// [`SMALL_M_MAX`](super::rules::SMALL_M_MAX) (64).
    SmallM,
}

impl Constraint {
    /// The rule in a few words, for `matmul list`'s constraints column.
    pub fn describe(&self) -> &'static str {
        match self {
            Constraint::KFitsSharedMemory => "K·elem ≤ shared mem/block",
            Constraint::FitsOneBlock => "M,N,K ≤ TPB",
            Constraint::Sm90a => "Hopper (sm_90a)",
            Constraint::TcTf32Layout => "op(A)=N or op(B)=T",
            Constraint::SmallM => "M ≤ 64",
        }
    }
}

/// One kernel: a row of [`KERNELS`](crate::KERNELS), found by name or alias with
/// [`find`](crate::find).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct KernelSpec {
    /// The unique registry name, lowercase with `-` ("multistage", "cpu-reference").
    pub name: &'static str,
    /// Seed names, matched case-insensitively (ROW, TILING, naive, idiomatic-tiled, ...).
    pub aliases: &'static [&'static str],
    /// Which seed or source it comes from.
    pub origin: &'static str,
    /// One line on what it does, as `matmul list` shows it.
    pub summary: &'static str,
    /// The backend that runs it.
    pub backend: BackendKind,
    /// The input dtypes it runs ([`KernelSpec::supports`]).
    pub dtypes: &'static [DType],
    /// The shape and device rules beyond the dtype, checked by [`KernelSpec::can_run`].
    pub constraints: &'static [Constraint],
    /// The traffic model the roofline's arithmetic intensity uses ([`KernelSpec::model_bytes`]).
    pub traffic: Traffic,
    /// How it computes: a CPU path, cuBLAS, or a CUDA source.
    pub implementation: Implementation,
}

impl CudaSource {
    /// The text NVRTC compiles: each include, then the file, each behind a `#line 1 "name"` so
    /// errors point into the right file.
    pub fn full_text(&self) -> String {
        let mut out = String::new();
        for (name, text) in self.includes {
            out.push_str(&format!("#line 1 \"{name}\"\n{text}\n"));
        }
        out.push_str(&format!("#line 1 \"{}\"\n{}", self.file, self.text));
        out
    }

    /// The family of this kernel: its launch geometry, extra arguments and tile rules
    /// ([`family::of`](crate::family::of)).
    pub fn family(&self) -> &'static dyn Family {
        crate::family::of(self)
    }
}

impl KernelSpec {
    /// The `__global__` function to launch: [`CudaSource::entry`] where set, else the name with
    /// `-` written `_` ("row-global" → `row_global`).
    pub fn entry_point(&self) -> String {
        match self.cuda_source().and_then(|s| s.entry) {
            Some(entry) => entry.to_string(),
            None => self.name.replace('-', "_"),
        }
    }

    /// The entry of the split-tail build ([`CudaSource::split_tail`]): the entry point + `_tail`.
    pub fn tail_entry_point(&self) -> Option<String> {
        self.cuda_source()
            .filter(|s| s.split_tail)
            .map(|_| format!("{}_tail", self.entry_point()))
    }

    /// The family of a CUDA kernel (None for the CPU kernels and cuBLAS).
    pub fn family(&self) -> Option<&'static dyn Family> {
        self.cuda_source().map(CudaSource::family)
    }

    /// The CUDA source of a CUDA kernel; None for the CPU kernels and cuBLAS.
    pub fn cuda_source(&self) -> Option<&CudaSource> {
        match &self.implementation {
            Implementation::Cuda(src) => Some(src),
            _ => None,
        }
    }

    /// The tiling a BlockTile kernel runs with: the override in `opts`, else the registry's.
    pub fn tiling(&self, opts: &RunOptions) -> Option<Tiling> {
        match self.cuda_source()?.geometry {
            Geometry::BlockTile { tiling } => Some(opts.tiling.unwrap_or(tiling)),
            _ => None,
        }
    }

    /// Whether this is a SIMT kernel fed by TMA ([`CudaSource::tma_tiles`]).
    pub fn tma_tiles(&self) -> bool {
        self.cuda_source().is_some_and(|s| s.tma_tiles)
    }

    /// Whether NVRTC can compile this kernel for `arch` (the wgmma kernel needs "sm_90a").
    pub fn compiles_for(&self, arch: &str) -> bool {
        !self.constraints.contains(&Constraint::Sm90a) || arch == "sm_90a"
    }

    /// Whether this kernel computes u32 on the int8 tensor cores by the byte split
    /// (`Geometry::ByteSplit`): 10 u8 products per u32 multiply-add, so its compute roof is the
    /// int8 peak ÷ 10, not the int32 (IMAD) peak.
    pub fn is_byte_split(&self) -> bool {
        self.cuda_source().is_some_and(|c| {
            matches!(
                c.geometry,
                Geometry::ByteSplit { .. } | Geometry::ByteSplitTma { .. }
            )
        })
    }

    /// Whether this kernel computes f32 emulated by 3xTF32 on the tf32 tensor cores
    /// (`Geometry::Tf32x3`, 21_wgmma_3xtf32.cu): 3 tf32 products per f32 multiply-add, so its
    /// compute roof is the tf32 peak ÷ 3, not the fp32 (SIMT) peak.
    pub fn is_tf32x3(&self) -> bool {
        self.cuda_source()
            .is_some_and(|c| matches!(c.geometry, Geometry::Tf32x3 { .. }))
    }

    /// The tile of a tensor-core kernel (None for other kernels).
    pub fn tc_tile(&self) -> Option<TcTile> {
        match self.cuda_source()?.geometry {
            Geometry::Mma { tile }
            | Geometry::Wgmma { tile }
            | Geometry::WgmmaTf32 { tile }
            | Geometry::ByteSplit { tile }
            | Geometry::ByteSplitTma { tile }
            | Geometry::Tf32x3 { tile } => Some(tile),
            _ => None,
        }
    }

    /// BM×BN, the tile of C a block computes, for the SIMT ladder (its tiling in `opts`, else the
    /// registry's) and the tensor-core kernels; None for other kernels.
    pub fn block_tile(&self, opts: &RunOptions) -> Option<(u32, u32)> {
        if let Some(WgslShape::RegTile { bm, bn, .. } | WgslShape::CoopMat { bm, bn, .. }) =
            self.wgsl_source().map(|w| w.shape)
        {
            return Some((bm, bn));
        }
        match (self.tiling(opts), self.tc_tile()) {
            (Some(t), _) => Some((t.bm, t.bn)),
            (None, Some(t)) => Some((t.bm, t.bn)),
            (None, None) => None,
        }
    }

    /// The WGSL source of a wgpu kernel; None for the others.
    pub fn wgsl_source(&self) -> Option<&WgslSource> {
        match &self.implementation {
            Implementation::Wgsl(src) => Some(src),
            _ => None,
        }
    }

    /// The tile edge a `Tile2d` / `SingleBlock` kernel runs with (`opts.tile` overrides the
    /// registry's); None for other geometries.
    pub fn tile(&self, opts: &RunOptions) -> Option<u32> {
        if let Some(w) = self.wgsl_source() {
            return match w.shape {
                WgslShape::Tile2d { tile } | WgslShape::Tiled { tile } => {
                    Some(opts.tile.unwrap_or(tile))
                }
                _ => None,
            };
        }
        match self.cuda_source()?.geometry {
            Geometry::Tile2d { tile: t } | Geometry::SingleBlock { tpb: t } => {
                Some(opts.tile.unwrap_or(t))
            }
            _ => None,
        }
    }

    /// Whether `name` is this kernel's name or one of its aliases, ignoring ASCII case.
    pub fn matches(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
            || self.aliases.iter().any(|a| a.eq_ignore_ascii_case(name))
    }

    /// Whether `dtype` is among the input dtypes this kernel runs.
    pub fn supports(&self, dtype: DType) -> bool {
        self.dtypes.contains(&dtype)
    }

    /// Whether this kernel can write C in a 16-bit input dtype: the CPU kernels and cuBLAS
    /// always, a CUDA source when its registry entry says so, a WGSL kernel never (f32 and u32
    /// only).
    pub fn writes_narrow_c(&self) -> bool {
        match &self.implementation {
            Implementation::Cuda(src) => src.narrow_c,
            Implementation::Wgsl(_) => false,
            _ => true,
        }
    }
}
