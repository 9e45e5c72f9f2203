//! How registry entries name their CUDA sources: the shared headers (`include_str!`) and the
//! macros that build a [`CudaSource`] for each part of the ladder.

use super::traffic::Traffic;
use super::types::{BackendKind, Constraint, CudaSource, Implementation, KernelSpec};
use super::TC_LADDER;
use crate::dtype::DType;

/// The `CudaSource` of a kernel file with no shared header, entry point named after the kernel.
macro_rules! cu_source {
    ($file:literal, $geometry:expr) => {
        CudaSource {
            file: $file,
            text: include_str!(concat!("../../kernels/", $file)),
            includes: &[],
            entry: None,
            defines: &[],
            geometry: $geometry,
            zero_output: false,
            narrow_c: false,
            tma_tiles: false,
            split_tail: false,
            split_k: false,
            batched: false,
        }
    };
}

macro_rules! cu {
    ($file:literal, $geometry:expr) => {
        Implementation::Cuda(cu_source!($file, $geometry))
    };
    ($file:literal, $geometry:expr, $zero:expr) => {
        Implementation::Cuda(CudaSource {
            zero_output: $zero,
            ..cu_source!($file, $geometry)
        })
    };
}

/// The grouped raster order of C's tiles (`tile_coords`), for every kernel that walks tiles in it.
pub(super) const TILE_ORDER: (&str, &str) = (
    "tile_order.cuh",
    include_str!("../../kernels/tile_order.cuh"),
);
/// The SIMT ladder's tile loaders and warp tiles.
pub(super) const SIMT_TILE: (&str, &str) =
    ("simt_tile.cuh", include_str!("../../kernels/simt_tile.cuh"));
/// The Hopper kernels' inline-PTX wrappers: mbarriers, TMA, clusters, setmaxnreg, wgmma.
pub(super) const HOPPER: (&str, &str) = ("hopper.cuh", include_str!("../../kernels/hopper.cuh"));
/// How the wgmma kernels' consumers write C: from registers or through staged boxes and TMA stores.
const EPILOGUE: (&str, &str) = ("epilogue.cuh", include_str!("../../kernels/epilogue.cuh"));
/// The sm_80 tensor-core kernels' inline-PTX wrappers: cp.async, ldmatrix, ld.shared, mma.sync.
pub(super) const SM80: (&str, &str) = ("sm80.cuh", include_str!("../../kernels/sm80.cuh"));
/// The includes of 15_wgmma.cu (TMA + wgmma, 16-bit inputs).
pub(super) const WGMMA_INCLUDES: &[(&str, &str)] = &[TILE_ORDER, HOPPER, EPILOGUE];
/// The includes of 16_wgmma_tf32.cu, which loads its register operand with sm80.cuh's ldmatrix
/// (no other wgmma include).
pub(super) const WGMMA_TF32_INCLUDES: &[(&str, &str)] = &[TILE_ORDER, SM80, HOPPER, EPILOGUE];
/// The byte-split pre-pass of the u8x4 kernels (`u8x4_split`: u32 → 4 K-major byte planes).
/// The pre-passes' shared tile load (`load_split_tile`), included before either of them.
const SPLIT_TILE: (&str, &str) = (
    "split_tile.cuh",
    include_str!("../../kernels/split_tile.cuh"),
);
pub(super) const U8X4_SPLIT: (&str, &str) = (
    "u8x4_split.cuh",
    include_str!("../../kernels/u8x4_split.cuh"),
);
/// The includes of 18_mma_u8x4.cu: sm80.cuh's cp.async and ldmatrix, the split pre-pass.
pub(super) const MMA_U8X4_INCLUDES: &[(&str, &str)] = &[SM80, SPLIT_TILE, U8X4_SPLIT];
/// The includes of 19_wgmma_u8x4.cu: sm80.cuh's cp.async, hopper.cuh's wgmma wrappers, the split.
pub(super) const WGMMA_U8X4_INCLUDES: &[(&str, &str)] = &[SM80, HOPPER, SPLIT_TILE, U8X4_SPLIT];
/// The includes of 20_wgmma_u8x4_tma.cu: the grouped tile order, hopper.cuh's mbarrier, TMA and
/// wgmma wrappers, the split.
pub(super) const WGMMA_U8X4_TMA_INCLUDES: &[(&str, &str)] =
    &[TILE_ORDER, HOPPER, SPLIT_TILE, U8X4_SPLIT];
/// f32 → tf32 rounding of register operands (14_mma_sync.cu; 16_wgmma_tf32.cu's TMA rounds).
pub(super) const TF32: (&str, &str) = ("tf32.cuh", include_str!("../../kernels/tf32.cuh"));
/// The 3xTF32 pre-pass (`tf32x3_split`: f32 → big and small K-major tf32 planes) and fixup.
const TF32X3_SPLIT: (&str, &str) = (
    "tf32x3_split.cuh",
    include_str!("../../kernels/tf32x3_split.cuh"),
);
/// The includes of 21_wgmma_3xtf32.cu: the grouped tile order, hopper.cuh's wrappers, the
/// epilogue's direct stores and split-K reduction, tf32.cuh's rounding, the split and fixup.
pub(super) const WGMMA_3XTF32_INCLUDES: &[(&str, &str)] =
    &[TILE_ORDER, HOPPER, EPILOGUE, TF32, SPLIT_TILE, TF32X3_SPLIT];

/// A tensor-core ladder entry: the fields its kernels (the macros below) share.
pub(super) const fn tc_ladder_kernel(
    name: &'static str,
    summary: &'static str,
    dtypes: &'static [DType],
    constraints: &'static [Constraint],
    source: CudaSource,
) -> KernelSpec {
    KernelSpec {
        name,
        aliases: &[],
        origin: TC_LADDER,
        summary,
        backend: BackendKind::Cuda,
        dtypes,
        constraints,
        traffic: Traffic::BlockTiled,
        implementation: Implementation::Cuda(source),
    }
}

/// A kernel of 14_mma_sync.cu: its block tile and its fixed `-D` values.
macro_rules! mma_kernel {
    ($name:literal, $summary:literal, $tile:expr, $defines:expr) => {
        tc_ladder_kernel(
            $name,
            $summary,
            TENSOR,
            &[],
            CudaSource {
                entry: Some("mma_sync"),
                includes: &[SM80, TF32],
                defines: $defines,
                ..cu_source!("14_mma_sync.cu", Geometry::Mma { tile: $tile })
            },
        )
    };
}

/// A kernel of 15_wgmma.cu (entry `wgmma`) at tile `$tile`: 16-bit inputs, Hopper.
macro_rules! wgmma_kernel {
    ($name:literal, $summary:literal, $tile:expr) => {
        wgmma_kernel!($name, $summary, $tile, batched: true)
    };
    ($name:literal, $summary:literal, $tile:expr, batched: $batched:expr) => {
        tc_ladder_kernel(
            $name,
            $summary,
            &[DType::Bf16, DType::F16],
            &[Constraint::Sm90a],
            CudaSource {
                entry: Some("wgmma"),
                includes: WGMMA_INCLUDES,
                narrow_c: true,
                split_k: true,
                batched: $batched,
                ..cu_source!("15_wgmma.cu", Geometry::Wgmma { tile: $tile })
            },
        )
    };
}

/// A kernel of 16_wgmma_tf32.cu (entry `wgmma_tf32`) at tile `$tile`: tf32, a layout with a
/// K-major operand, Hopper.
macro_rules! wgmma_tf32_kernel {
    ($name:literal, $summary:literal, $tile:expr) => {
        tc_ladder_kernel(
            $name,
            $summary,
            &[DType::Tf32],
            &[Constraint::TcTf32Layout, Constraint::Sm90a],
            CudaSource {
                entry: Some("wgmma_tf32"),
                includes: WGMMA_TF32_INCLUDES,
                split_k: true,
                ..cu_source!("16_wgmma_tf32.cu", Geometry::WgmmaTf32 { tile: $tile })
            },
        )
    };
}

/// A kernel of 21_wgmma_3xtf32.cu (entry `wgmma_3xtf32`): f32 emulated by 3xTF32 from the
/// pre-pass's planes at tile `$tile` (with `-D` values `$defines`), any layout, Hopper.
macro_rules! wgmma_3xtf32_kernel {
    ($name:literal, $summary:literal, $tile:expr, $defines:expr) => {
        tc_ladder_kernel(
            $name,
            $summary,
            &[DType::F32],
            &[Constraint::Sm90a],
            CudaSource {
                entry: Some("wgmma_3xtf32"),
                includes: WGMMA_3XTF32_INCLUDES,
                defines: $defines,
                split_k: true,
                ..cu_source!("21_wgmma_3xtf32.cu", Geometry::Tf32x3 { tile: $tile })
            },
        )
    };
}

/// A SIMT-ladder rung: its file (after the shared tile loaders of `simt_tile.cuh`), its entry
/// point when another entry shares the file, and its default tiling.
macro_rules! simt {
    ($file:literal, $entry:expr, $tiling:expr) => {
        simt!($file, $entry, $tiling, &[])
    };
    ($file:literal, $entry:expr, $tiling:expr, $defines:expr) => {
        Implementation::Cuda(CudaSource {
            file: $file,
            text: include_str!(concat!("../../kernels/", $file)),
            includes: &[SIMT_TILE, TILE_ORDER],
            entry: $entry,
            defines: $defines,
            geometry: Geometry::BlockTile { tiling: $tiling },
            zero_output: false,
            narrow_c: false,
            tma_tiles: false,
            split_tail: false,
            split_k: false,
            batched: false,
        })
    };
}

/// `implementation` (a CUDA source) with [`CudaSource::batched`] set.
pub(super) const fn with_batches(implementation: Implementation) -> Implementation {
    match implementation {
        Implementation::Cuda(src) => Implementation::Cuda(CudaSource {
            batched: true,
            ..src
        }),
        other => other,
    }
}

/// `implementation` (a CUDA source) with [`CudaSource::split_tail`] set.
pub(super) const fn with_split_tail(implementation: Implementation) -> Implementation {
    match implementation {
        Implementation::Cuda(src) => Implementation::Cuda(CudaSource {
            split_tail: true,
            ..src
        }),
        other => other,
    }
}
