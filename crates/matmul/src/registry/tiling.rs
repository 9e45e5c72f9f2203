//! The compile-time tiles of the SIMT ladder ([`Tiling`]) and of the tensor-core kernels
//! ([`TcTile`]): their `-D` values, shared memory, rules, and the text form `matmul tune` and
//! `--tiling` read and write.

use std::fmt;

use serde::Serialize;

use crate::dtype::DType;
use crate::error::quoted;

/// `-D` definitions from (name, value) pairs.
fn defines(pairs: &[(&str, u32)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The compile-time tile of a tensor-core kernel (`-D` values of its .cu file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct TcTile {
    /// Rows of C's tile per block (or per work unit of a persistent block).
    pub bm: u32,
    /// Columns of C's tile per block (or per work unit).
    pub bn: u32,
    /// The K-slice of A and B loaded per pipeline stage.
    pub bk: u32,
    /// Shared-memory buffers in the load pipeline.
    pub stages: u32,
    /// Threads per block (warpgroups × 128 for wgmma, producer included).
    pub threads: u32,
    /// Blocks per thread-block cluster (along M; they share B's slices by TMA multicast).
    pub cluster: u32,
    /// Boxes of C (64 rows × 32 f32) each consumer warpgroup stages in shared memory for the
    /// TMA-store epilogue (0: the consumers store C straight from registers).
    pub store_boxes: u32,
}

impl TcTile {
    /// A staged box of C (the TMA-store epilogue): 64 rows (one consumer warpgroup's) × one
    /// 128-byte swizzle row (32 f32 or 64 bf16/f16); 15_wgmma.cu's C_BOX_COLS and C_BOX_BYTES.
    pub const C_BOX_ROWS: u32 = 64;
    /// Bytes of one row of a staged C box: the 128-byte swizzle span.
    pub const C_BOX_ROW_BYTES: u32 = 128;

    /// Columns of a staged C box for C elements of `c_bytes` bytes.
    pub const fn c_box_cols(c_bytes: usize) -> u32 {
        Self::C_BOX_ROW_BYTES / c_bytes as u32
    }

    /// A tile of BM×BN×BK, `stages` buffers, `threads` per block; no cluster (1), C stored from
    /// registers (no staged boxes).
    pub const fn new(bm: u32, bn: u32, bk: u32, stages: u32, threads: u32) -> TcTile {
        TcTile {
            bm,
            bn,
            bk,
            stages,
            threads,
            cluster: 1,
            store_boxes: 0,
        }
    }

    /// The same tile in clusters of `cluster` blocks (the `/cN` of its text form).
    pub const fn with_cluster(self, cluster: u32) -> TcTile {
        TcTile { cluster, ..self }
    }

    /// The same tile with `store_boxes` staged C boxes per consumer warpgroup (the `/eN` of its
    /// text form; 0 stores C from registers).
    pub const fn with_store_boxes(self, store_boxes: u32) -> TcTile {
        TcTile {
            store_boxes,
            ..self
        }
    }

    /// Dynamic shared memory: STAGES slices of A (BM×BK) and B (BK×BN); for a persistent kernel
    /// 1 KiB more to align its buffers to the 1024-byte period of the 128-byte swizzle; and the
    /// staged boxes of C (`store_boxes` per consumer warpgroup, BM rows in all).
    /// f32 inputs on a tensor-core tile are the 3xTF32 kernel's (21_wgmma_3xtf32.cu), which keeps
    /// B's side twice per stage (its big and small tf32 planes).
    pub fn shared_bytes(&self, dtype: DType, persistent: bool) -> usize {
        let b_planes = if dtype == DType::F32 { 2 } else { 1 };
        let slices = self.stages as usize
            * (self.bm + b_planes * self.bn) as usize
            * self.bk as usize
            * dtype.input_bytes();
        let c_boxes = (self.store_boxes * self.bm * Self::C_BOX_ROW_BYTES) as usize;
        slices + c_boxes + if persistent { 1024 } else { 0 }
    }

    /// The -D definitions a tensor-core kernel is compiled with.
    pub fn defines(&self) -> Vec<(String, String)> {
        defines(&[
            ("BM", self.bm),
            ("BN", self.bn),
            ("BK", self.bk),
            ("STAGES", self.stages),
            ("THREADS", self.threads),
            ("CLUSTER", self.cluster),
            ("STORE_BOXES", self.store_boxes),
        ])
    }
}

impl fmt::Display for TcTile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}x{}/s{}/t{}",
            self.bm, self.bn, self.bk, self.stages, self.threads
        )?;
        if self.cluster > 1 {
            write!(f, "/c{}", self.cluster)?;
        }
        if self.store_boxes > 0 {
            write!(f, "/e{}", self.store_boxes)?;
        }
        Ok(())
    }
}

/// The compile-time tile parameters of a SIMT-ladder kernel (`-D` values of its .cu file). The
/// registry holds each rung's default; `matmul tune` searches others ([`RunOptions::tiling`](crate::RunOptions::tiling)).
///
/// Its text form (`--tiling`, the tune tables) is `BMxBNxBK/TMxTN` followed by the parts that
/// differ from the defaults: `/wWMxWNnWNITER` (warp tiles), `/sSTAGES`, `/pPAD`, `/bMIN_BLOCKS`,
/// `/rMAX_REGISTERS`, `/oPTXAS_LEVEL`. Parsing checks only the syntax; [`Tiling::check`] the rules.
///
/// ```
/// use matmul::Tiling;
///
/// let t: Tiling = "128x128x16/8x4/w64x32n2/s3".parse()?;
/// assert_eq!((t.bm, t.bn, t.bk, t.wm, t.wniter, t.stages), (128, 128, 16, 64, 2, 3));
/// assert_eq!(t.threads(), 256); // 8 warps of 64×32
/// assert_eq!(t.to_string(), "128x128x16/8x4/w64x32n2/s3"); // round-trips
/// assert!(t.check().is_ok());
///
/// let odd: Tiling = "128x128x8/8x3".parse()?; // well-formed, but TN does not divide BN
/// assert!(odd.check().unwrap_err().contains("BN % TN"));
/// assert!("128x128/8x8".parse::<Tiling>().is_err());
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct Tiling {
    /// Rows of the block's tile of C (BM).
    pub bm: u32,
    /// Columns of the block's tile of C (BN).
    pub bn: u32,
    /// The K-slice of A and B loaded into shared memory per step (BK).
    pub bk: u32,
    /// Rows of each thread's register tile (TM); with warp tiling, of one of its WMITER×WNITER
    /// sub-tiles.
    pub tm: u32,
    /// Columns of each thread's register tile (TN).
    pub tn: u32,
    /// Rows of a warp's tile of C (WM); 0 = no warp tiling.
    pub wm: u32,
    /// Columns of a warp's tile of C (WN); 0 without warp tiling.
    pub wn: u32,
    /// Sub-tiles a warp takes along N (WNITER; WMITER follows, [`Tiling::wmiter`]).
    pub wniter: u32,
    /// Shared-memory buffers in the load pipeline (1 = load, barrier, compute).
    pub stages: u32,
    /// Elements of padding added to each shared-memory row (bank-conflict avoidance).
    pub pad: u32,
    /// Blocks per SM the register allocation must allow (`__launch_bounds__`' second argument:
    /// ptxas then keeps registers ≤ 65536 / (THREADS · MIN_BLOCKS)); trades registers for
    /// occupancy.
    #[serde(default = "one")]
    pub min_blocks: u32,
    /// Build knobs, not tile shapes: they change how ptxas compiles the same source, and
    /// `matmul tune` searches them around its winner ([`Tiling::build_variants`]). ptxas
    /// allocates registers and schedules a long unrolled loop differently under each, and on the
    /// H100 the same ★ loop ran from 49 to 54.6 TFLOP/s across such builds (lab/notebook.md,
    /// "The register lottery").
    ///
    /// A register cap tighter than the one MIN_BLOCKS implies: `__maxnreg__(n)` in place of
    /// `__launch_bounds__(THREADS, MIN_BLOCKS)` (the MAXNREG define, simt_tile.cuh). 0: none.
    #[serde(default)]
    pub max_registers: u32,
    /// ptxas's optimization level (`--ptxas-options=-O<n>`, 0–3; ptxas's default is 3).
    #[serde(default = "three")]
    pub ptxas_level: u32,
}

fn one() -> u32 {
    1
}

fn three() -> u32 {
    DEFAULT_PTXAS_LEVEL
}

/// ptxas's own default optimization level.
pub const DEFAULT_PTXAS_LEVEL: u32 = 3;

impl Tiling {
    /// A block tile without warp tiling, one stage, no padding.
    pub const fn block(bm: u32, bn: u32, bk: u32, tm: u32, tn: u32) -> Tiling {
        Tiling {
            bm,
            bn,
            bk,
            tm,
            tn,
            wm: 0,
            wn: 0,
            wniter: 1,
            stages: 1,
            pad: 0,
            min_blocks: 1,
            max_registers: 0,
            ptxas_level: DEFAULT_PTXAS_LEVEL,
        }
    }

    /// With warp tiles of WM×WN taken in WNITER sub-tiles along N.
    pub const fn warps(self, wm: u32, wn: u32, wniter: u32) -> Tiling {
        Tiling {
            wm,
            wn,
            wniter,
            ..self
        }
    }

    /// The same tiling with `stages` shared-memory buffers (`/sN`).
    pub const fn with_stages(self, stages: u32) -> Tiling {
        Tiling { stages, ..self }
    }

    /// The same tiling with `pad` elements of padding per shared-memory row (`/pN`).
    pub const fn with_pad(self, pad: u32) -> Tiling {
        Tiling { pad, ..self }
    }

    /// The same tiling built for `min_blocks` resident blocks per SM (`/bN`).
    pub const fn with_min_blocks(self, min_blocks: u32) -> Tiling {
        Tiling { min_blocks, ..self }
    }

    /// With the build knobs `max_registers` (0: none) and `ptxas_level`.
    pub const fn with_build(self, max_registers: u32, ptxas_level: u32) -> Tiling {
        Tiling {
            max_registers,
            ptxas_level,
            ..self
        }
    }

    /// The same tiles built as ptxas builds them by default (no register cap, level 3).
    pub const fn default_build(self) -> Tiling {
        self.with_build(0, DEFAULT_PTXAS_LEVEL)
    }

    /// The builds of these tiles `matmul tune` tries around a winner: ptxas levels 3 and 1, each
    /// with no register cap and with caps of 224 to 248 where they are tighter than the one
    /// MIN_BLOCKS implies; `self` left out. On the H100 the best f32 builds of multistage's ★
    /// tiling came from -O1 with caps of 224 and 244 (lab/notebook.md, "The register lottery").
    pub fn build_variants(&self) -> Vec<Tiling> {
        let bound = self.launch_bounds_cap();
        let caps = [0, 224, 232, 240, 244, 248]
            .into_iter()
            .filter(|&c| c < bound);
        caps.flat_map(|cap| [DEFAULT_PTXAS_LEVEL, 1].map(|level| self.with_build(cap, level)))
            .filter(|t| t != self)
            .collect()
    }

    /// Whether warps take WM×WN tiles (WM > 0) rather than threads being laid out over the
    /// block tile directly.
    pub fn warp_tiled(&self) -> bool {
        self.wm > 0
    }

    /// Threads per block: one per TM×TN tile, or 32 per warp tile.
    pub fn threads(&self) -> u32 {
        if self.warp_tiled() {
            (self.bm / self.wm.max(1)) * (self.bn / self.wn.max(1)) * 32
        } else {
            (self.bm / self.tm.max(1)) * (self.bn / self.tn.max(1))
        }
    }

    /// Sub-tiles of a warp tile along M: (WM·WN) / (32·TM·TN·WNITER).
    pub fn wmiter(&self) -> u32 {
        (self.wm * self.wn) / (32 * self.tm * self.tn * self.wniter).max(1)
    }

    /// A rough count of the registers a thread needs: its accumulators, one k-step's values of A
    /// and B, the tile elements it loads per slice, and about 40 for addresses, indices and loop
    /// state. `matmul tune` leaves out tilings whose estimate exceeds the cap; ptxas has the last
    /// word (tune also skips a candidate that spills).
    pub fn registers_estimate(&self) -> u32 {
        let (rm, rn) = if self.warp_tiled() {
            (self.wmiter() * self.tm, self.wniter * self.tn)
        } else {
            (self.tm, self.tn)
        };
        let loads = self.bk * (self.bm + self.bn) / self.threads().max(1);
        rm * rn + rm + rn + loads + 40
    }

    /// The register cap `__launch_bounds__(THREADS, MIN_BLOCKS)` imposes (at most 255): the
    /// loosest a build's `max_registers` may ask for, so MIN_BLOCKS blocks still fit an SM.
    pub fn launch_bounds_cap(&self) -> u32 {
        (65536 / (self.threads() * self.min_blocks).max(1)).min(255)
    }

    /// The register cap of a build: `max_registers` where set, else [`Tiling::launch_bounds_cap`].
    pub fn register_cap(&self) -> u32 {
        match self.max_registers {
            0 => self.launch_bounds_cap(),
            cap => cap.min(self.launch_bounds_cap()),
        }
    }

    /// The NVRTC options a build needs beyond the usual ones: ptxas's level where not the default.
    pub fn nvrtc_options(&self) -> Vec<String> {
        if self.ptxas_level == DEFAULT_PTXAS_LEVEL {
            Vec::new()
        } else {
            vec![format!("--ptxas-options=-O{}", self.ptxas_level)]
        }
    }

    /// Dynamic shared memory in elements: STAGES buffers of A (BK×(BM+PAD)) and B (BK×(BN+PAD)).
    pub fn shared_elems(&self) -> u64 {
        self.stages as u64 * self.bk as u64 * (self.bm + self.bn + 2 * self.pad) as u64
    }

    /// The -D definitions a BlockTile kernel is compiled with.
    pub fn defines(&self) -> Vec<(String, String)> {
        let mut out = defines(&[
            ("BM", self.bm),
            ("BN", self.bn),
            ("BK", self.bk),
            ("TM", self.tm),
            ("TN", self.tn),
            ("WM", self.wm),
            ("WN", self.wn),
            ("WNITER", self.wniter),
            ("STAGES", self.stages),
            ("PAD", self.pad),
            ("MIN_BLOCKS", self.min_blocks),
            ("THREADS", self.threads()),
        ]);
        if self.max_registers != 0 {
            out.extend(defines(&[("MAXNREG", self.max_registers)]));
        }
        out
    }

    /// The rules every BlockTile kernel relies on; the error names the one broken. (Each .cu
    /// file repeats its own as static_asserts.)
    pub fn check(&self) -> Result<(), String> {
        let t = self;
        let all = [t.bm, t.bn, t.bk, t.tm, t.tn, t.stages];
        if all.contains(&0) {
            return Err(format!(
                "tiling {t}: BM, BN, BK, TM, TN and STAGES must be at least 1"
            ));
        }
        let rule = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(format!("tiling {t}: {what}"))
            }
        };
        rule(
            t.bm.is_multiple_of(t.tm) && t.bn.is_multiple_of(t.tn),
            "BM % TM and BN % TN must be 0",
        )?;
        rule(
            t.bm.is_multiple_of(4)
                && t.bn.is_multiple_of(4)
                && t.bk.is_multiple_of(4)
                && t.pad.is_multiple_of(4),
            "BM, BN, BK and PAD must be multiples of 4 (128-bit shared-memory rows)",
        )?;
        rule(t.stages <= 8, "STAGES must be at most 8")?;
        rule(
            (1..=4).contains(&t.min_blocks) && t.threads() * t.min_blocks <= 2048,
            "MIN_BLOCKS must be 1 to 4, with THREADS·MIN_BLOCKS ≤ 2048",
        )?;
        let bound = t.launch_bounds_cap();
        rule(
            t.max_registers == 0 || (32..=bound).contains(&t.max_registers),
            &format!(
                "the register cap r{} must be 32 to {bound} (the cap THREADS·MIN_BLOCKS leaves), or absent",
                t.max_registers
            ),
        )?;
        rule(
            t.ptxas_level <= 3,
            &format!("the ptxas level o{} must be 0 to 3", t.ptxas_level),
        )?;
        if t.warp_tiled() {
            rule(t.wniter >= 1, "WNITER must be at least 1")?;
            rule(
                t.bm.is_multiple_of(t.wm) && t.bn.is_multiple_of(t.wn),
                "BM % WM and BN % WN must be 0",
            )?;
            rule(
                (t.wm * t.wn).is_multiple_of(32 * t.tm * t.tn * t.wniter) && t.wmiter() >= 1,
                "WM·WN must be a multiple of 32·TM·TN·WNITER",
            )?;
            rule(
                t.wn.is_multiple_of(t.wniter) && (t.wn / t.wniter).is_multiple_of(t.tn),
                "WN / WNITER must be a multiple of TN",
            )?;
            rule(
                t.wm.is_multiple_of(t.wmiter()) && (t.wm / t.wmiter()).is_multiple_of(t.tm),
                "WM / WMITER must be a multiple of TM",
            )?;
            let lanes_n = t.wn / t.wniter / t.tn;
            let lanes_m = t.wm / t.wmiter() / t.tm;
            rule(
                lanes_n * lanes_m == 32,
                "a warp's sub-tile must give each of its 32 lanes one TM×TN tile",
            )?;
        } else {
            rule(t.wn == 0, "WN must be 0 when WM is 0")?;
        }
        let threads = t.threads();
        rule(
            (32..=1024).contains(&threads) && threads.is_multiple_of(32),
            &format!("{threads} threads per block; must be a multiple of 32 from 32 to 1024"),
        )?;
        Ok(())
    }
}

impl fmt::Display for Tiling {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}x{}x{}/{}x{}",
            self.bm, self.bn, self.bk, self.tm, self.tn
        )?;
        if self.warp_tiled() {
            write!(f, "/w{}x{}n{}", self.wm, self.wn, self.wniter)?;
        }
        if self.stages != 1 {
            write!(f, "/s{}", self.stages)?;
        }
        if self.pad != 0 {
            write!(f, "/p{}", self.pad)?;
        }
        if self.min_blocks != 1 {
            write!(f, "/b{}", self.min_blocks)?;
        }
        if self.max_registers != 0 {
            write!(f, "/r{}", self.max_registers)?;
        }
        if self.ptxas_level != DEFAULT_PTXAS_LEVEL {
            write!(f, "/o{}", self.ptxas_level)?;
        }
        Ok(())
    }
}

impl std::str::FromStr for Tiling {
    type Err = String;

    /// Parses the Display form: `BMxBNxBK/TMxTN[/wWMxWNnWNITER][/sSTAGES][/pPAD][/bMIN_BLOCKS][/rMAX_REGISTERS][/oPTXAS_LEVEL]`.
    fn from_str(s: &str) -> Result<Tiling, String> {
        let bad = |why: &str| {
            format!("tiling {}: {why} (expected BMxBNxBK/TMxTN[/wWMxWNnWNITER][/sSTAGES][/pPAD][/bMIN_BLOCKS][/rMAX_REGISTERS][/oPTXAS_LEVEL], e.g. 128x128x8/8x8)", quoted(s))
        };
        let num = |x: &str| {
            x.parse::<u32>()
                .map_err(|_| bad(&format!("{} is not a number", quoted(x))))
        };
        // Sizes, counts of stages and of blocks: 0 would mean nothing (and would not print back).
        let positive = |x: &str| {
            num(x).and_then(|v| {
                if v == 0 {
                    Err(bad(&format!("{} must be at least 1", quoted(x))))
                } else {
                    Ok(v)
                }
            })
        };
        let nums = |part: &str, n: usize| -> Result<Vec<u32>, String> {
            let v: Vec<u32> = part.split('x').map(positive).collect::<Result<_, _>>()?;
            if v.len() == n {
                Ok(v)
            } else {
                Err(bad(&format!("{} needs {n} numbers", quoted(part))))
            }
        };
        let mut parts = s.split('/');
        let b = nums(parts.next().unwrap_or_default(), 3)?;
        let th = nums(parts.next().ok_or_else(|| bad("missing /TMxTN"))?, 2)?;
        let mut t = Tiling::block(b[0], b[1], b[2], th[0], th[1]);
        for part in parts {
            let (key, rest) = part.split_at(part.chars().next().map_or(0, char::len_utf8));
            match key {
                "w" => {
                    let (w, n) = rest
                        .split_once('n')
                        .ok_or_else(|| bad("warp part is wWMxWNnWNITER"))?;
                    let w = nums(w, 2)?;
                    (t.wm, t.wn, t.wniter) = (w[0], w[1], positive(n)?);
                }
                "s" => t.stages = positive(rest)?,
                "p" => t.pad = num(rest)?,
                "b" => t.min_blocks = positive(rest)?,
                "r" => t.max_registers = num(rest)?,
                "o" => t.ptxas_level = num(rest)?,
                _ => return Err(bad(&format!("unknown part {}", quoted(part)))),
            }
        }
        Ok(t)
    }
}
