//! Per-call overrides of a kernel's registry parameters: part of what `can_run` judges.

use crate::registry::Tiling;

/// Per-call knobs that are not part of the problem.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Overrides the tile / TPB of a `Tile2d` or `SingleBlock` kernel (the Mojo puzzles use 3).
    pub tile: Option<u32>,
    /// Overrides the tiling of a `BlockTile` kernel (the SIMT ladder; `matmul tune`).
    pub tiling: Option<Tiling>,
}

impl RunOptions {
    /// Options that override only the tile edge / TPB (`Tile2d`, `SingleBlock` kernels).
    pub fn tile(tile: u32) -> RunOptions {
        RunOptions {
            tile: Some(tile),
            ..Default::default()
        }
    }

    /// Options that override only the tiling (`BlockTile` kernels); checked by
    /// [`KernelSpec::can_run`] like the registry's own.
    pub fn tiling(tiling: Tiling) -> RunOptions {
        RunOptions {
            tiling: Some(tiling),
            ..Default::default()
        }
    }

    /// A short label for reports ("" when nothing is overridden).
    pub fn label(&self) -> String {
        match (self.tile, self.tiling) {
            (Some(t), _) => format!("tile {t}"),
            (None, Some(t)) => format!("tiling {t}"),
            (None, None) => String::new(),
        }
    }
}
