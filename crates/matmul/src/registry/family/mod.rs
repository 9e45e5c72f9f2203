//! Kernel families: what the host does differently for each structure of CUDA kernel. Each
//! family is one type implementing [`Family`]; a registry entry's [`Geometry`] (and, for the SIMT
//! ladder, whether TMA brings its tiles: [`CudaSource::tma_tiles`]) names its family ([`of`]), and
//! `can_run` and the CUDA backend ask the family rather than match on the geometry.
//!
//! - [`seed::Seed`]: the seed kernels, one output (or one row of outputs) per thread in the
//!   geometries `RowPerThread`, `ElementPerThread`, `RowSegment`, `Tile2d` and `SingleBlock`
//!   (row-global … tiled-async);
//! - [`simt::Simt`]: the SIMT ladder, a BM×BN tile of C per block (`BlockTile`: blocktile-1d …
//!   multistage-raster), with the split tail where the entry has one;
//! - [`simt_tma::SimtTma`]: the SIMT ladder's tiles brought in by TMA (`BlockTile` with
//!   `tma_tiles`: simt-tma);
//! - [`mma::Mma`]: tensor cores through mma.sync (`Mma`: mma-sync, mma-sync-wide);
//! - [`u8x4::U8x4`]: exact u32 on the int8 tensor cores by the byte split, a pre-pass writing
//!   byte planes into a workspace (`ByteSplit`: mma-u8x4, wgmma-u8x4);
//! - [`u8x4::U8x4Tma`]: the same planes read by TMA through two tensor maps, persistent grid
//!   (`ByteSplitTma`: wgmma-u8x4-tma);
//! - [`tf32x3::Tf32x3`]: FP32 emulated by 3xTF32, a pre-pass writing big and small tf32 planes,
//!   the same pipeline on them, a fixup for ±∞ (`Tf32x3`: wgmma-3xtf32);
//! - [`wgmma::Wgmma`]: Hopper's TMA and wgmma on a persistent grid (`Wgmma`, `WgmmaTf32`: wgmma …,
//!   wgmma-tf32 …);
//! - [`decode::Decode`]: small M (≤ 64), B streamed once, K split across blocks into slabs that a
//!   second kernel sums (`Decode`: decode).
//!
//! Every kernel takes A, B and C, then m, n, k and the row and column strides of op(A) and op(B)
//! as `int`s; [`Family::extra_args`] says what follows them.

pub mod decode;
pub mod mma;
pub mod seed;
pub mod simt;
pub mod simt_tma;
pub mod tf32x3;
pub mod u8x4;
pub mod wgmma;

use crate::dtype::DType;
use crate::problem::Problem;
use crate::registry::DeviceInfo;
use crate::registry::RunOptions;
use crate::registry::{CudaSource, Geometry, KernelSpec, TcTile, Tiling};

/// The grid and block of one launch, (x, y, z) each.
pub type LaunchDims = ((u32, u32, u32), (u32, u32, u32));

/// How the TMA tensor maps of a launch are boxed: by a tensor-core tile, or by a SIMT tiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boxes {
    /// A tensor-core kernel's maps: A, B and C boxed by its tile (BM×BK, BK×BN, C's staged box).
    Tc(TcTile),
    /// A TMA-fed SIMT kernel's maps: A and B boxed by its tiling.
    Simt(Tiling),
}

impl Boxes {
    /// Blocks per cluster (1 for a SIMT tiling).
    pub fn cluster(&self) -> u32 {
        match self {
            Boxes::Tc(t) => t.cluster.max(1),
            Boxes::Simt(_) => 1,
        }
    }
}

/// The arguments a kernel takes after the usual ten (A, B, C and seven `int`s), in this order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtraArgs {
    /// A split-tail kernel ([`CudaSource::split_tail`]): the number of tiles its main entry
    /// computes whole, from a split tail planned at this tiling.
    pub split_tail: Option<Tiling>,
    /// A TMA kernel: three tensor maps (A, B, C), boxed by these.
    pub tensor_maps: Option<Boxes>,
    /// A split-K kernel ([`CudaSource::split_k`]: wgmma, decode): after the usual arguments (and
    /// a wgmma kernel's maps), the number of k pieces and the partials' workspace.
    pub split_k: bool,
    /// A pre-split kernel ([`u8x4::U8x4`], [`tf32x3::Tf32x3`]): after the usual arguments (and
    /// split-K's), the planes' address and KP, the planes written by its pre-pass before each
    /// launch.
    pub planes: Option<Planes>,
    /// A pre-split TMA kernel ([`u8x4::U8x4Tma`], [`tf32x3::Tf32x3`]): after the planes and KP,
    /// two tensor maps over them, boxed 128 bytes of k × BM (A's planes) and × BN (B^T's) rows.
    pub plane_maps: bool,
}

/// What a pre-split kernel's pre-pass writes into its workspace before each launch: `count`
/// K-major planes of each operand (A's stacked as count·M rows of KP elements of `elem` bytes,
/// then B^T's as count·N rows), and for a kernel with a fixup, after the planes, a `u32` flag
/// set when any input is ±∞ and one per row of A and column of B holding one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Planes {
    /// The pre-pass entry: `(X, planes, rows, K, KP, rs, cs)`, with a fixup also `(any, flags)`.
    pub split: &'static str,
    /// Planes per operand.
    pub count: usize,
    /// Bytes of one plane element.
    pub elem: usize,
    /// The entry launched behind the product (and split-K's reduction), over C:
    /// `(A, B, C, M, N, K, a_rs, a_cs, b_rs, b_cs, any, flags)`.
    pub fixup: Option<&'static str>,
}

impl Planes {
    /// Bytes of A's planes for `problem` at K extent `kp` (B^T's start there).
    pub fn a_bytes(&self, problem: &Problem, kp: usize) -> usize {
        self.count * self.elem * kp * problem.m
    }

    /// Bytes of the planes (A's and B^T's) for `problem` at K extent `kp`.
    pub fn plane_bytes(&self, problem: &Problem, kp: usize) -> usize {
        self.count * self.elem * kp * (problem.m + problem.n)
    }

    /// Bytes of the whole workspace: the planes and, with a fixup, 1 + M + N flags.
    pub fn bytes(&self, problem: &Problem, kp: usize) -> usize {
        let flags = if self.fixup.is_some() {
            4 * (1 + problem.m + problem.n)
        } else {
            0
        };
        self.plane_bytes(problem, kp) + flags
    }
}

/// What the host does for the kernels of one family. Errors are the rule broken, in words; the
/// caller names the kernel and the problem.
pub trait Family: Sync {
    /// The family's name: seed, simt, simt-tma, mma, wgmma, u8x4, u8x4-tma or decode.
    fn name(&self) -> &'static str;

    /// The rules of `kernel`'s tile parameters as `opts` overrides them (TILE, the tiling).
    fn check(&self, _kernel: &KernelSpec, _opts: &RunOptions) -> Result<(), String> {
        Ok(())
    }

    /// The dynamic shared memory `kernel`'s tile needs with `dtype` inputs, with a label of the
    /// tile; None where the family has no such tile.
    fn tile_shared_bytes(
        &self,
        _kernel: &KernelSpec,
        _dtype: DType,
        _opts: &RunOptions,
    ) -> Option<(String, usize)> {
        None
    }

    /// The rows of blocks of `kernel`'s grid for `problem` (gridDim.y, at most 65535 in CUDA).
    fn grid_rows(&self, _kernel: &KernelSpec, _problem: &Problem, _opts: &RunOptions) -> usize {
        1
    }

    /// The grid and block of a launch of `kernel` on `problem` on `device`.
    fn launch_dims(
        &self,
        kernel: &KernelSpec,
        problem: &Problem,
        opts: &RunOptions,
        device: &DeviceInfo,
    ) -> Result<LaunchDims, String>;

    /// Whether the grid is persistent: at most one block per SM, walking the tiles of C.
    fn persistent(&self) -> bool {
        false
    }

    /// What `kernel` takes after the usual arguments.
    fn extra_args(&self, _kernel: &KernelSpec, _opts: &RunOptions) -> ExtraArgs {
        ExtraArgs::default()
    }

    /// A split-K kernel ([`ExtraArgs::split_k`]): the k pieces `launch_dims` plans for `problem`
    /// on `sms` SMs (1: no split).
    fn splits(&self, _kernel: &KernelSpec, _problem: &Problem, _sms: u64) -> u64 {
        1
    }

    /// A pre-split kernel ([`ExtraArgs::planes`]): the planes' K extent for `problem` on `sms`
    /// SMs (K padded so that the main kernel has no K edge and its split-K pieces are equal).
    fn plane_k(&self, _kernel: &KernelSpec, problem: &Problem, _sms: u64) -> usize {
        problem.k
    }

    /// A split-K kernel: the entry of its module that sums the pieces' slabs into C.
    fn reduce_entry(&self) -> &'static str {
        "wgmma_reduce"
    }

    /// A split-K kernel: `grid`, planned by `launch_dims` for [`Family::splits`] pieces, narrowed
    /// to one piece (all of K) on `sms` SMs.
    fn unsplit_grid(
        &self,
        _kernel: &KernelSpec,
        _problem: &Problem,
        grid: (u32, u32, u32),
        _sms: u64,
    ) -> (u32, u32, u32) {
        grid
    }
}

/// The family of a CUDA source, from its geometry (and, for `BlockTile`, whether its tiles
/// arrive by TMA).
pub fn of(src: &CudaSource) -> &'static dyn Family {
    match src.geometry {
        Geometry::RowPerThread { .. }
        | Geometry::ElementPerThread { .. }
        | Geometry::RowSegment { .. }
        | Geometry::Tile2d { .. }
        | Geometry::SingleBlock { .. } => &seed::Seed,
        Geometry::BlockTile { .. } if src.tma_tiles => &simt_tma::SimtTma,
        Geometry::BlockTile { .. } => &simt::Simt,
        Geometry::Mma { .. } => &mma::Mma,
        Geometry::Wgmma { .. } | Geometry::WgmmaTf32 { .. } => &wgmma::Wgmma,
        Geometry::ByteSplit { .. } => &u8x4::U8x4,
        Geometry::ByteSplitTma { .. } => &u8x4::U8x4Tma,
        Geometry::Tf32x3 { .. } => &tf32x3::Tf32x3,
        Geometry::Decode => &decode::Decode,
    }
}

/// Blocks of `per` along an edge of `n`: ⌈n / per⌉, which must fit a grid dimension.
/// The split-K plan of a persistent tensor-core kernel (wgmma's and the byte split's): 1 (no
/// split) unless `tiles` fill at most half of `sms`; then about one wave of pieces, each at
/// least `min_piece` of the `kblocks` k-blocks, evened out so that no piece is empty, kept only
/// where `estimate` (the family's time for a number of pieces) says the partial slabs cost less
/// than the idle SMs they put to work.
fn split_k_plan(
    tiles: u64,
    kblocks: u64,
    sms: u64,
    min_piece: u64,
    estimate: impl Fn(u64) -> f64,
) -> u64 {
    if tiles == 0 || 2 * tiles > sms {
        return 1;
    }
    let s = (sms / tiles).min(kblocks / min_piece);
    if s < 2 {
        return 1;
    }
    let s = kblocks.div_ceil(kblocks.div_ceil(s));
    if estimate(s) < estimate(1) {
        s
    } else {
        1
    }
}

/// The BM×BN tiles of C of a tensor-core kernel on `problem` (0 without a tile).
fn c_tiles(kernel: &KernelSpec, problem: &Problem) -> u64 {
    kernel.tc_tile().map_or(0, |t| {
        (problem.m.div_ceil(t.bm as usize) * problem.n.div_ceil(t.bn as usize)) as u64
    })
}

/// The launch of a persistent pre-split kernel ([`Planes`]): `count` planes per operand, whose
/// rows the kernel addresses as i·M + r (i·N + r) in int, and a grid of min(units, SMs) blocks
/// over C's tiles × `splits` k pieces.
fn pre_split_launch(
    kernel: &KernelSpec,
    problem: &Problem,
    device: &DeviceInfo,
    count: usize,
    splits: impl Fn(u64) -> u64,
) -> Result<LaunchDims, String> {
    let t = mma::tile(kernel)?;
    let rows = count * problem.m.max(problem.n);
    if rows > i32::MAX as usize {
        return Err(format!(
            "{count}·max(M, N) = {rows} rows of planes must fit an int"
        ));
    }
    blocks(problem.n, t.bn)?;
    blocks(problem.m, t.bm)?;
    let sms = device.sm_count.max(1) as u64;
    let units = c_tiles(kernel, problem) * splits(sms);
    Ok(((units.min(sms).max(1) as u32, 1, 1), (t.threads, 1, 1)))
}

/// A persistent split-K kernel's grid narrowed to one piece: one block per tile of C, on at most
/// `sms` SMs.
fn one_block_per_tile(
    kernel: &KernelSpec,
    problem: &Problem,
    (_, y, z): (u32, u32, u32),
    sms: u64,
) -> (u32, u32, u32) {
    (c_tiles(kernel, problem).min(sms).max(1) as u32, y, z)
}

fn blocks(n: usize, per: u32) -> Result<u32, String> {
    u32::try_from(n.div_ceil(per as usize))
        .map_err(|_| format!("the grid would need {} blocks", n.div_ceil(per as usize)))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::registry::{find, KERNELS};
    use crate::Op;

    /// An H100 SXM as the launch code sees it (132 SMs).
    pub(crate) fn h100() -> DeviceInfo {
        DeviceInfo {
            ordinal: 0,
            name: "test H100".into(),
            compute_capability: (9, 0),
            arch: "sm_90a".into(),
            sm_count: 132,
            max_threads_per_block: 1024,
            shared_per_block: 48 << 10,
            shared_per_block_optin: 227 << 10,
            shared_per_sm: 228 << 10,
            registers_per_block: 65536,
            l2_bytes: 50 << 20,
            sm_clock_khz: 1_980_000,
            memory_clock_khz: 2_619_000,
            memory_bus_bits: 5120,
            total_memory_bytes: 80 << 30,
            driver_version: "13.0".into(),
            nvrtc_version: None,
        }
    }

    /// Every CUDA entry has the family its geometry names; the split tail is the SIMT family's,
    /// the tensor maps the TMA families', the persistent grid wgmma's.
    #[test]
    fn every_cuda_entry_has_its_family() {
        let opts = RunOptions::default();
        for k in KERNELS {
            let Some(src) = k.cuda_source() else {
                assert!(k.family().is_none(), "{}", k.name);
                continue;
            };
            let f = src.family();
            let expected = match (k.origin, k.name) {
                (_, "simt-tma") => "simt-tma",
                (_, "decode") => "decode",
                (_, name) if name.ends_with("-u8x4") => "u8x4",
                (_, name) if name.ends_with("-u8x4-tma") => "u8x4-tma",
                (_, name) if name.starts_with("wgmma-3xtf32") => "tf32x3",
                (origin, _) if origin.starts_with("SIMT ladder") => "simt",
                (_, name) if name.starts_with("mma-sync") => "mma",
                (_, name) if name.starts_with("wgmma") => "wgmma",
                _ => "seed",
            };
            assert_eq!(f.name(), expected, "{}", k.name);
            let extra = f.extra_args(k, &opts);
            assert_eq!(extra.split_tail.is_some(), src.split_tail, "{}", k.name);
            assert_eq!(
                extra.tensor_maps.is_some(),
                matches!(expected, "simt-tma" | "wgmma"),
                "{}",
                k.name
            );
            assert_eq!(
                f.persistent(),
                matches!(expected, "wgmma" | "u8x4-tma" | "tf32x3"),
                "{}",
                k.name
            );
            assert_eq!(
                extra.plane_maps,
                matches!(expected, "u8x4-tma" | "tf32x3"),
                "{}",
                k.name
            );
            assert_eq!(
                extra.planes.is_some(),
                matches!(expected, "u8x4" | "u8x4-tma" | "tf32x3"),
                "{}",
                k.name
            );
        }
    }

    fn dims(name: &str, p: &Problem, opts: &RunOptions) -> Result<LaunchDims, String> {
        let k = find(name).unwrap();
        k.family().unwrap().launch_dims(k, p, opts, &h100())
    }

    /// wgmma-u8x4-tma: a persistent grid of min(128×256 tiles, SMs) blocks of 384, 4 stages of
    /// (128 + 256)·128 bytes + 1 KB; its rows of planes (4·max(M, N)) must fit an int.
    #[test]
    fn u8x4_tma_is_persistent() {
        let none = RunOptions::default();
        let u32p = |m, n, k| Problem::new(m, n, k, DType::U32);
        let d = |m, n| dims("wgmma-u8x4-tma", &u32p(m, n, 64), &none).unwrap();
        assert_eq!(d(4096, 4096), ((132, 1, 1), (384, 1, 1))); // 512 tiles
        assert_eq!(d(1024, 1024), ((32, 1, 1), (384, 1, 1)));
        assert_eq!(d(1, 1), ((1, 1, 1), (384, 1, 1)));
        assert_eq!(d(129, 257), ((4, 1, 1), (384, 1, 1)));
        let k = find("wgmma-u8x4-tma").unwrap();
        assert_eq!(
            k.tile_shared_bytes(DType::U32, &none).map(|(_, b)| b),
            Some(4 * (128 + 256) * 128 + 1024)
        );
        let e = dims("wgmma-u8x4-tma", &u32p(1 << 29, 1, 1), &none).unwrap_err();
        assert!(e.contains("must fit an int"), "{e}");
    }

    /// Grids and blocks worked out by hand from each family's rule.
    #[test]
    fn launch_dims_follow_each_familys_rule() {
        let none = RunOptions::default();
        let f32 = |m, n, k| Problem::new(m, n, k, crate::DType::F32);
        let bf16 = |m, n, k| Problem::new(m, n, k, crate::DType::Bf16);
        // Seeds: ⌈m / 64⌉ blocks of 64; ⌈m·n / 256⌉ of 256; (⌈n / 64⌉, m); (⌈n / 16⌉, ⌈m / 16⌉) of
        // 16×16, or of TILE×TILE; one TPB×TPB block.
        assert_eq!(
            dims("row", &f32(1000, 7, 3), &none),
            Ok(((16, 1, 1), (64, 1, 1)))
        );
        assert_eq!(
            dims("ele", &f32(100, 30, 3), &none),
            Ok(((12, 1, 1), (256, 1, 1)))
        );
        assert_eq!(
            dims("elepack", &f32(5, 130, 3), &none),
            Ok(((3, 5, 1), (64, 1, 1)))
        );
        assert_eq!(
            dims("tiled", &f32(17, 33, 65), &none),
            Ok(((3, 2, 1), (16, 16, 1)))
        );
        assert_eq!(
            dims("tiled", &f32(17, 33, 65), &RunOptions::tile(3)),
            Ok(((11, 6, 1), (3, 3, 1)))
        );
        assert_eq!(
            dims("single-block", &f32(3, 3, 3), &none),
            Ok(((1, 1, 1), (3, 3, 1)))
        );
        assert_eq!(
            dims("single-block", &f32(3, 3, 3), &RunOptions::tile(33)),
            Err("TILE 33 needs 1089 threads per block; the device allows 1 to 1024".into())
        );
        // SIMT: (⌈n / BN⌉, ⌈m / BM⌉) blocks of (BM/WM)·(BN/WN)·32 threads (128×256 tiles of
        // 64×64 warp tiles: 256); a broken tiling names its rule.
        assert_eq!(
            dims("multistage-raster", &f32(4096, 4096, 4096), &none),
            Ok(((16, 32, 1), (256, 1, 1)))
        );
        assert_eq!(
            dims("simt-tma", &f32(300, 260, 36), &none),
            Ok(((2, 3, 1), (256, 1, 1)))
        );
        let bad = RunOptions::tiling("128x128x8/8x3".parse().unwrap());
        assert!(dims("vectorized", &f32(64, 64, 64), &bad)
            .unwrap_err()
            .contains("BM % TM and BN % TN"));
        // mma.sync: (⌈n / BN⌉, ⌈m / BM⌉) blocks of 256.
        assert_eq!(
            dims("mma-sync", &bf16(300, 260, 36), &none),
            Ok(((3, 3, 1), (256, 1, 1)))
        );
        // wgmma: min(work units, SMs) blocks of 384, in whole clusters. 8192² has 64·32 units of
        // 128×256; 128×512 has 1·2 for op(B) = T, and 4·1 for N·N, whose D is C^T.
        let big = bf16(8192, 8192, 8192);
        assert_eq!(dims("wgmma", &big, &none), Ok(((132, 1, 1), (384, 1, 1))));
        assert_eq!(
            dims("wgmma-cluster", &big, &none),
            Ok(((132, 1, 1), (384, 1, 1)))
        );
        let wide = bf16(128, 512, 64);
        assert_eq!(dims("wgmma", &wide, &none), Ok(((4, 1, 1), (384, 1, 1))));
        let direct = wide.with_ops(Op::N, Op::T);
        assert_eq!(dims("wgmma", &direct, &none), Ok(((2, 1, 1), (384, 1, 1))));
        // tf32 in clusters of 2 (N·N, D = C^T of 260×300): ⌈3 / 2⌉·2 clusters.
        let tf32 = Problem::new(300, 260, 36, crate::DType::Tf32);
        assert_eq!(
            dims("wgmma-tf32-cluster", &tf32, &none),
            Ok(((8, 1, 1), (384, 1, 1)))
        );
        // gridDim.y of the SIMT and mma families is ⌈m / BM⌉, of elepack m, of wgmma 1.
        let tall = f32(70_000 * 128, 4, 4);
        for (name, rows) in [
            ("multistage", 70_000),
            ("elepack", 70_000 * 128),
            ("tiled", 560_000),
        ] {
            let k = find(name).unwrap();
            assert_eq!(
                k.family().unwrap().grid_rows(k, &tall, &none),
                rows,
                "{name}"
            );
        }
        let k = find("wgmma").unwrap();
        assert_eq!(
            k.family()
                .unwrap()
                .grid_rows(k, &bf16(1 << 20, 64, 64), &none),
            1
        );
    }
}
