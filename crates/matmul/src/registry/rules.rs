//! Whether a kernel can run a problem on a device (CUTLASS's `can_implement`): the dtype, shape,
//! tile and device rules, each refusal naming the rule broken.

use super::tiling::Tiling;
use super::types::{BackendKind, Constraint, KernelSpec, WgmmaTf32Orientation};
use super::KERNELS;
use crate::dtype::DType;
use crate::error::Unsupported;
use crate::problem::Problem;
use crate::registry::RunOptions;

/// What a TMA SIMT kernel (17_simt_tma.cu) asks of a tiling beyond [`Tiling::check`]: a box edge is
/// at most 256 elements; BK/4 odd, so that rows of BK elements read along K by up to 8 lanes at
/// once start in distinct 16-byte bank groups; no padding (TMA writes dense boxes).
pub const TMA_TILING_RULE: &str =
    "TMA SIMT tilings need BM, BN ≤ 256, BK/4 odd (BK = 12, 20, 28, ...) and PAD 0";

/// What `can_run` needs to know about the device (None on the CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Largest dynamic shared memory one block may opt in to, in bytes.
    pub max_shared_per_block: usize,
    /// Whether the device runs sm_90a code (wgmma, setmaxnreg, TMA: Hopper).
    pub sm90a: bool,
    /// Streaming multiprocessors: one wave of a persistent grid (`auto` weighs tile counts by it).
    pub sms: u32,
    /// Compute capability (major, minor); (0, 0) where the device has none (wgpu, CPU).
    pub compute_capability: (u32, u32),
    /// SM clock, MHz (0: unknown).
    pub sm_clock_mhz: u32,
    /// DRAM bandwidth, GB/s: memory clock × bus width × 2 (0: unknown).
    pub dram_gbs: u32,
}

impl DeviceLimits {
    /// The device class `auto`'s measurements are keyed by: architecture and SM count (an H100
    /// SXM and an H200 are both `sm_90-132`), so what was measured on one part serves its
    /// siblings; `None` without a compute capability.
    pub fn class(&self) -> Option<String> {
        (self.compute_capability.0 > 0).then(|| device_class(self.compute_capability, self.sms))
    }
}

/// Who a device is, for the measurements kept for it ([`crate::dispatch::tune`]): its class
/// ([`DeviceLimits::class`]), its model's name (a table written for the model alone overrides the
/// class's) and its driver's version (a new driver may compile differently).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceIdentity {
    /// Architecture and SM count, e.g. "sm_90-132".
    pub class: String,
    /// The marketing name, e.g. "NVIDIA H200".
    pub model: String,
    /// The driver's version.
    pub driver: String,
}

/// The device class of a GPU of compute capability `(major, minor)` with `sms` SMs:
/// "sm_{major}{minor}-{sms}", e.g. "sm_90-132".
pub fn device_class((major, minor): (u32, u32), sms: u32) -> String {
    format!("sm_{major}{minor}-{sms}")
}

/// Device limits for tests: an H100's, and an Ampere part's (no sm_90a).
#[cfg(test)]
pub(crate) mod test_limits {
    use super::DeviceLimits;

    /// An H100 SXM: 227 KiB of shared memory per block, sm_90a, 132 SMs.
    pub(crate) const HOPPER: DeviceLimits = DeviceLimits {
        max_shared_per_block: 232_448,
        sm90a: true,
        sms: 132,
        compute_capability: (9, 0),
        sm_clock_mhz: 1980,
        dram_gbs: 3352,
    };

    /// An H200: an H100's SMs and clocks with 4.8 TB/s of HBM3e.
    pub(crate) const H200: DeviceLimits = DeviceLimits {
        dram_gbs: 4800,
        ..HOPPER
    };

    /// An A100-like device: 163 KiB per block, no sm_90a (132 SMs, as the rules' tests want
    /// the H100's wave).
    pub(crate) const AMPERE: DeviceLimits = DeviceLimits {
        max_shared_per_block: 166_912,
        sm90a: false,
        sms: 132,
        compute_capability: (8, 0),
        sm_clock_mhz: 1410,
        dram_gbs: 2039,
    };

    /// An A100 SXM as it is: 108 SMs at 1410 MHz, 2.0 TB/s.
    pub(crate) const A100: DeviceLimits = DeviceLimits { sms: 108, ..AMPERE };

    /// An L40S-like Ada part: 142 SMs, 99 KiB per block, 864 GB/s.
    pub(crate) const ADA: DeviceLimits = DeviceLimits {
        max_shared_per_block: 101_376,
        sm90a: false,
        sms: 142,
        compute_capability: (8, 9),
        sm_clock_mhz: 2520,
        dram_gbs: 864,
    };
}

/// The refusal of [`Constraint::TcTf32Layout`].
pub const TF32_LAYOUT_RULE: &str = "tf32 wgmma reads its shared-memory operand K-major only, so it needs op(A)=N or op(B)=T; op(A)=T with op(B)=N (A stored KxM, B stored KxN) has no K-major operand (use mma-sync-wide or mma-sync)";

/// The largest m of [`Constraint::SmallM`] (the decode kernel keeps a block's rows of C in
/// registers, at most 64 rows in row groups of 8 or 16).
pub const SMALL_M_MAX: usize = 64;

/// Every CUDA kernel indexes with 32-bit `int`: each matrix must have fewer than 2^31 elements.
const INT_INDEX_LIMIT: usize = i32::MAX as usize;
/// CUDA's limit on gridDim.y.
const MAX_GRID_Y: usize = 65535;

impl KernelSpec {
    /// The rules a tiling of this kernel must follow: [`Tiling::check`], and for a TMA SIMT kernel
    /// [`TMA_TILING_RULE`]. The error names the rule broken.
    pub fn check_tiling(&self, t: &Tiling) -> Result<(), String> {
        t.check()?;
        if self.tma_tiles()
            && (t.bm > 256 || t.bn > 256 || (t.bk / 4).is_multiple_of(2) || t.pad != 0)
        {
            return Err(format!("tiling {t}: {TMA_TILING_RULE}"));
        }
        Ok(())
    }

    /// The dynamic shared memory a launch of a SIMT-ladder or tensor-core kernel asks for, with
    /// a label of the tile that needs it; None for other kernels.
    pub fn tile_shared_bytes(&self, dtype: DType, opts: &RunOptions) -> Option<(String, usize)> {
        self.family()?.tile_shared_bytes(self, dtype, opts)
    }

    /// Whether the kernel runs a persistent grid (one block per SM walking the tiles of C).
    pub fn persistent(&self) -> bool {
        self.family().is_some_and(|f| f.persistent())
    }

    /// Whether this kernel can run `problem` (CUTLASS's `can_implement`); an error names the rule.
    /// `opts` may override the geometry's tile/TPB (the puzzles use 3) or tiling (`matmul tune`).
    pub fn can_run(
        &self,
        problem: &Problem,
        limits: Option<&DeviceLimits>,
        opts: &RunOptions,
    ) -> Result<(), Unsupported> {
        let fail = |rule: String| Unsupported {
            kernel: self.name.to_string(),
            problem: problem.to_string(),
            rule,
        };
        if !self.supports(problem.dtype) {
            let names: Vec<_> = self.dtypes.iter().map(|d| d.name()).collect();
            return Err(fail(format!(
                "dtype {} is not supported (supported: {})",
                problem.dtype,
                names.join(", ")
            )));
        }
        if problem.m == 0 || problem.n == 0 || problem.k == 0 {
            return Err(fail("m, n and k must all be at least 1".into()));
        }
        if problem.types().narrow_c() && !self.writes_narrow_c() {
            return Err(fail(format!(
                "writes C in {} only; C in {} runs on: {}",
                problem.dtype.accumulator(),
                problem.c_dtype(),
                narrow_c_kernels(problem.dtype).join(", ")
            )));
        }
        if self.backend == BackendKind::Cuda {
            let (ar, ac) = problem.a_stored();
            let (br, bc) = problem.b_stored();
            for (what, r, c) in [("A", ar, ac), ("B", br, bc), ("C", problem.m, problem.n)] {
                if r.checked_mul(c).is_none_or(|e| e > INT_INDEX_LIMIT) {
                    return Err(fail(format!("{what} ({r}x{c}) has 2^31 or more elements; CUDA kernels index with 32-bit int")));
                }
            }
        }
        let family = self.family();
        if let Some(f) = family {
            f.check(self, opts).map_err(fail)?;
        }
        if let (Some((what, need)), Some(l)) = (self.tile_shared_bytes(problem.dtype, opts), limits)
        {
            if need > l.max_shared_per_block {
                return Err(fail(format!(
                    "{what} needs {need} bytes of shared memory; the device allows {} per block",
                    l.max_shared_per_block
                )));
            }
        }
        if let Some(f) = family {
            let rows_of_blocks = f.grid_rows(self, problem, opts);
            if rows_of_blocks > MAX_GRID_Y {
                return Err(fail(format!("the grid would need {rows_of_blocks} rows of blocks; CUDA allows {MAX_GRID_Y} (gridDim.y)")));
            }
        }
        let tpb = self.tile(opts).unwrap_or(0) as usize;
        for c in self.constraints {
            match c {
                Constraint::KFitsSharedMemory => {
                    let need = problem.k.saturating_mul(problem.dtype.input_bytes());
                    if let Some(l) = limits {
                        if need > l.max_shared_per_block {
                            return Err(fail(format!("a packed row of K = {} needs {need} bytes of shared memory; the device allows {} per block", problem.k, l.max_shared_per_block)));
                        }
                    }
                }
                Constraint::FitsOneBlock if problem.m.max(problem.n).max(problem.k) > tpb => {
                    return Err(fail(format!("one block of {tpb}x{tpb} threads must cover the matrix: m, n, k must be at most {tpb}")));
                }
                Constraint::Sm90a if limits.is_some_and(|l| !l.sm90a) => {
                    return Err(fail(
                        "needs sm_90a (Hopper: wgmma, TMA, setmaxnreg); this device is not one"
                            .into(),
                    ));
                }
                Constraint::TcTf32Layout if WgmmaTf32Orientation::of(problem).is_none() => {
                    return Err(fail(TF32_LAYOUT_RULE.into()));
                }
                Constraint::SmallM if problem.m > SMALL_M_MAX => {
                    return Err(fail(format!("m must be at most {SMALL_M_MAX}: this small-M (decode) kernel keeps its rows of C in registers; m = {} runs on the tile kernels", problem.m)));
                }
                _ => {}
            }
        }
        Ok(())
    }
}

/// The kernels that can write C in `dtype` itself (bf16 C from bf16 inputs, ...).
pub fn narrow_c_kernels(dtype: DType) -> Vec<&'static str> {
    KERNELS
        .iter()
        .filter(|k| k.supports(dtype) && k.writes_narrow_c())
        .map(|k| k.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Op;
    use crate::registry::{find, TcTile};

    /// C in a 16-bit input dtype runs only where a kernel writes it; elsewhere the refusal names
    /// the kernels that do.
    #[test]
    fn narrow_c_is_refused_by_kernels_that_write_f32_only() {
        use crate::problem::COut;
        let p = Problem::new(256, 256, 256, DType::Bf16).with_c(COut::Input);
        let opts = RunOptions::default();
        for name in ["wgmma", "wgmma-n128", "wgmma-cluster", "cublas", "cpu"] {
            find(name).unwrap().can_run(&p, None, &opts).unwrap();
        }
        let err = find("mma-sync")
            .unwrap()
            .can_run(&p, None, &opts)
            .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("writes C in f32 only"), "{text}");
        assert!(text.contains("wgmma, wgmma-n128"), "{text}");
        // f32 problems have no narrower C: `Input` changes nothing there.
        let f = Problem::new(64, 64, 64, DType::F32).with_c(COut::Input);
        find("tiled").unwrap().can_run(&f, None, &opts).unwrap();
        assert_eq!(
            narrow_c_kernels(DType::F32),
            ["cpu-reference", "cpu", "decode", "cublas"]
        );
    }

    /// wgmma-tf32: the layout rule names the ops, any row length (staged), Hopper only, and the D
    /// tile (C direct, C^T swapped) fits the shared memory of an H100.
    #[test]
    fn wgmma_tf32_rules_and_orientation() {
        let k = find("wgmma-tf32").unwrap();
        let hopper = crate::registry::rules::test_limits::HOPPER;
        let opts = RunOptions::default();
        let p = Problem::new(300, 260, 36, DType::Tf32);
        for (op_a, op_b, orientation, d) in [
            (Op::N, Op::N, WgmmaTf32Orientation::Swapped, (260, 300)),
            (Op::N, Op::T, WgmmaTf32Orientation::Direct, (300, 260)),
            (Op::T, Op::T, WgmmaTf32Orientation::Direct, (300, 260)),
        ] {
            let p = p.with_ops(op_a, op_b);
            assert!(k.can_run(&p, Some(&hopper), &opts).is_ok(), "{p}");
            assert_eq!(WgmmaTf32Orientation::of(&p), Some(orientation), "{p}");
            assert_eq!(orientation.d_shape(&p), d, "{p}");
        }
        let tn = p.with_ops(Op::T, Op::N);
        assert_eq!(WgmmaTf32Orientation::of(&tn), None);
        let e = k.can_run(&tn, Some(&hopper), &opts).unwrap_err();
        assert!(e.rule.contains("op(A)=N or op(B)=T"), "{e}");
        assert!(e.rule.contains("mma-sync"), "{e}");
        assert_eq!(Constraint::TcTf32Layout.describe(), "op(A)=N or op(B)=T");
        // Rows of 4k+2 floats are not 16-byte multiples: the operands are staged.
        k.can_run(&Problem::new(64, 64, 66, DType::Tf32), Some(&hopper), &opts)
            .unwrap();
        let e = k
            .can_run(
                &p,
                Some(&DeviceLimits {
                    sm90a: false,
                    ..hopper
                }),
                &opts,
            )
            .unwrap_err();
        assert!(e.rule.contains("sm_90a"), "{e}");
        let e = k
            .can_run(&Problem::new(64, 64, 64, DType::Bf16), Some(&hopper), &opts)
            .unwrap_err();
        assert!(e.rule.contains("dtype bf16"), "{e}");
        // 4 stages of (128 + 256) × 32 floats, 1 KiB of alignment, and 2 boxes of 64 rows × 128
        // bytes of C per consumer warpgroup.
        let tile = k.tc_tile().unwrap();
        assert_eq!(
            (tile.bm, tile.bn, tile.bk, tile.stages, tile.store_boxes),
            (128, 256, 32, 4, 2)
        );
        assert_eq!(
            k.tile_shared_bytes(DType::Tf32, &opts).unwrap().1,
            4 * 384 * 32 * 4 + 1024 + 2 * 2 * 64 * 128
        );
        assert!(k.persistent());
        assert!(k.compiles_for("sm_90a") && !k.compiles_for("sm_80"));
        // The cluster entry: the same file, entry, tile and shared memory, in clusters of two.
        let c = find("wgmma-tf32-cluster").unwrap();
        let ct = c.tc_tile().unwrap();
        assert_eq!((ct.cluster, TcTile { cluster: 1, ..ct }), (2, tile));
        assert_eq!(c.entry_point(), k.entry_point());
        let bytes = |k: &KernelSpec| k.tile_shared_bytes(DType::Tf32, &opts).unwrap().1;
        assert_eq!(bytes(c), bytes(k));
        assert_eq!(c.constraints, k.constraints);
    }

    #[test]
    fn can_run_names_the_rule() {
        let rowpack = find("rowpack").unwrap();
        assert!(rowpack
            .can_run(
                &Problem::square(65, DType::U32),
                None,
                &RunOptions::default()
            )
            .is_ok());
        let limits = DeviceLimits {
            max_shared_per_block: 1024,
            sm90a: false,
            ..test_limits::AMPERE
        };
        let e = rowpack
            .can_run(
                &Problem::square(512, DType::U32),
                Some(&limits),
                &RunOptions::default(),
            )
            .unwrap_err();
        assert!(e.rule.contains("shared memory"), "{e}");
        let single = find("single-block").unwrap();
        assert!(single
            .can_run(
                &Problem::square(3, DType::F32),
                None,
                &RunOptions::default()
            )
            .is_ok());
        assert!(single
            .can_run(
                &Problem::square(4, DType::F32),
                None,
                &RunOptions::default()
            )
            .is_err());
        assert!(single
            .can_run(&Problem::square(4, DType::F32), None, &RunOptions::tile(4))
            .is_ok());
        let e = find("tiled")
            .unwrap()
            .can_run(
                &Problem::square(4, DType::Bf16),
                None,
                &RunOptions::default(),
            )
            .unwrap_err();
        assert!(e.rule.contains("dtype bf16"), "{e}");
    }
}
