//! `--layout auto`: which layout (or one GPU) runs a product fastest, from a model of each
//! layout's compute time (the one-GPU kernel's time on each rank's products, as the caller
//! estimates or measures it) and communication time (the bytes each rank moves over the link,
//! at the link's bandwidth, measured once per host and cached: [`LinkModel`]).
//!
//! Per layout, on G GPUs, for C = A·B (m×k by k×n), inputs of `e` bytes, C of `c` bytes:
//! - one GPU: T(m, n, k);
//! - `row-split`: T(⌈m/G⌉, n, k), no communication;
//! - `ag-gemm`: G products of T(⌈m/G⌉, ⌈n/G⌉, k), the first on the rank's own shard at once,
//!   each later one after its shard of A (⌈m/G⌉·k·e bytes) arrives: the first product plus
//!   (G − 1) steps of the longer of a product and a shard's transfer;
//! - `gemm-rs`: T(m, n, ⌈k/G⌉) of partial products in G·P pieces (P row pieces a shard), each
//!   reduced to its owner while the next computes: (G − 1)/G · m·n·c bytes a rank sends in all;
//!   the longer of compute and communication, plus one piece's transfer that nothing hides;
//! - every split adds one link latency: the ranks' coordination (the run ends with its slowest).
//!
//! The choice is the fastest estimate; a split is taken only when it beats one GPU.

use std::path::{Path, PathBuf};

use super::multi::{self, Layout, MultiOptions};
use crate::error::{Error, Result};
use crate::problem::Problem;

/// How fast the GPUs of a host exchange data: bytes a second each rank moves, and the fixed
/// cost of one transfer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkModel {
    /// Sustained bytes a second a rank sends (and receives) while all ranks do.
    pub bytes_per_s: f64,
    /// The fixed cost of one transfer (a kernel launch and a handshake).
    pub latency_s: f64,
}

/// Where a product runs: on one GPU, or split over several in a layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// The whole product on one GPU.
    OneGpu,
    /// Split over the GPUs in this layout.
    Split(Layout),
}

impl Placement {
    /// `1-gpu` or the layout's name.
    pub fn name(self) -> &'static str {
        match self {
            Placement::OneGpu => "1-gpu",
            Placement::Split(l) => l.name(),
        }
    }
}

/// One placement's estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The placement.
    pub placement: Placement,
    /// The product's estimated time, communication overlapped as the layout does.
    pub seconds: f64,
    /// Its products alone.
    pub compute_s: f64,
    /// Its communication alone.
    pub comm_s: f64,
}

/// Every placement of `problem` over `gpus` GPUs that can run it (one GPU always), estimated
/// with `compute` (a product's time on one GPU) and `link`; `pieces` as
/// [`MultiOptions::pieces`].
pub fn estimates(
    problem: &Problem,
    gpus: usize,
    pieces: Option<usize>,
    link: &LinkModel,
    compute: &dyn Fn(&Problem) -> f64,
) -> Vec<Estimate> {
    let g = gpus.max(1);
    let (m, n, k) = (problem.m, problem.n, problem.k);
    let sub = |m, n, k| Problem {
        m,
        n,
        k,
        ..*problem
    };
    let transfer = |bytes: f64| link.latency_s + bytes / link.bytes_per_s.max(1.0);
    let e_in = problem.dtype.input_bytes() as f64;
    let e_c = problem.c_dtype().input_bytes() as f64;
    let one = compute(problem);
    let mut out = vec![Estimate {
        placement: Placement::OneGpu,
        seconds: one,
        compute_s: one,
        comm_s: 0.0,
    }];
    if g < 2 {
        return out;
    }
    for layout in Layout::ALL {
        let mut opts = MultiOptions::new(g, layout);
        opts.pieces = pieces;
        if multi::check(problem, &opts).is_err() {
            continue;
        }
        let est = match layout {
            Layout::RowSplit => {
                let t = compute(&sub(m.div_ceil(g), n, k));
                (t, t, 0.0)
            }
            Layout::AgGemm => {
                let piece = compute(&sub(m.div_ceil(g), n.div_ceil(g), k));
                let step = transfer(m.div_ceil(g) as f64 * k as f64 * e_in);
                let steps = (g - 1) as f64;
                (
                    piece + steps * piece.max(step),
                    g as f64 * piece,
                    steps * step,
                )
            }
            Layout::GemmRs => {
                let shard = m.div_ceil(g);
                let p = pieces
                    .unwrap_or_else(|| (shard / 1024).clamp(1, 4))
                    .clamp(1, shard.max(1));
                let chunks = (g * p) as f64;
                let total = compute(&sub(m, n, k.div_ceil(g)));
                let bytes = (g - 1) as f64 / g as f64 * m as f64 * n as f64 * e_c;
                let comm = chunks * link.latency_s + bytes / link.bytes_per_s.max(1.0);
                (total.max(comm) + comm / chunks, total, comm)
            }
        };
        // Every split also waits for its slowest rank: one coordination across the GPUs.
        out.push(Estimate {
            placement: Placement::Split(layout),
            seconds: est.0 + link.latency_s,
            compute_s: est.1,
            comm_s: est.2,
        });
    }
    out
}

/// The fastest of [`estimates`]: a split only where it beats one GPU (ties go to one GPU, then
/// to the layouts in [`Layout::ALL`]'s order).
pub fn choose(
    problem: &Problem,
    gpus: usize,
    pieces: Option<usize>,
    link: &LinkModel,
    compute: &dyn Fn(&Problem) -> f64,
) -> Estimate {
    estimates(problem, gpus, pieces, link, compute)
        .into_iter()
        .reduce(|best, e| if e.seconds < best.seconds { e } else { best })
        .expect("one GPU is always a placement")
}

/// Where a host's measured link is kept: `dir`/link-`key`.json, `key` naming the GPUs (their
/// count and names) so that another set of GPUs is measured anew.
pub fn cache_path(dir: &Path, key: &str) -> PathBuf {
    let safe: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("link-{safe}.json"))
}

/// The link measured before for `key` in `dir`, if its file is there and whole.
pub fn load_cached(dir: &Path, key: &str) -> Option<LinkModel> {
    let text = std::fs::read_to_string(cache_path(dir, key)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let link = LinkModel {
        bytes_per_s: v.get("bytes_per_s")?.as_f64()?,
        latency_s: v.get("latency_s")?.as_f64()?,
    };
    (link.bytes_per_s > 0.0 && link.latency_s >= 0.0).then_some(link)
}

/// Keeps `link` for `key` in `dir` (written to a temporary file, then renamed).
pub fn save_cached(dir: &Path, key: &str, link: &LinkModel) -> Result<()> {
    let path = cache_path(dir, key);
    let io = |e: std::io::Error| Error::Invalid(format!("writing {}: {e}", path.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    let text = serde_json::json!({
        "key": key,
        "bytes_per_s": link.bytes_per_s,
        "latency_s": link.latency_s,
    })
    .to_string();
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    /// A GPU at a fixed rate: 2mnk / rate, plus a fixed cost per product.
    fn gpu(rate: f64, fixed: f64) -> impl Fn(&Problem) -> f64 {
        move |p: &Problem| fixed + p.flops() / rate
    }

    const NVLINK: LinkModel = LinkModel {
        bytes_per_s: 150e9,
        latency_s: 20e-6,
    };
    const SLOW: LinkModel = LinkModel {
        bytes_per_s: 1e9,
        latency_s: 1e-3,
    };

    #[test]
    fn a_big_square_splits_and_a_small_one_stays_on_one_gpu() {
        let t = gpu(500e12, 10e-6);
        let big = Problem::new(16384, 16384, 16384, DType::Bf16);
        let e = choose(&big, 4, None, &NVLINK, &t);
        assert!(matches!(e.placement, Placement::Split(_)), "{e:?}");
        // Row-split moves nothing: on equal compute it is never slower than the others.
        assert_eq!(e.placement, Placement::Split(Layout::RowSplit));
        // M = 256: a quarter of a small product costs the fixed cost, more than it saves.
        let small = Problem::new(256, 256, 256, DType::F32);
        assert_eq!(
            choose(&small, 2, None, &NVLINK, &t).placement,
            Placement::OneGpu
        );
    }

    /// Where row-split loses (its ranks each compute all of N for a quarter of M on a GPU that
    /// runs short products badly), the layouts that split N or K win when the link is fast, and
    /// one GPU wins when it is slow.
    #[test]
    fn the_link_decides_between_the_layouts_and_one_gpu() {
        // Products with fewer than 4096 rows run at a quarter of the rate.
        let shape_sensitive = |p: &Problem| {
            let rate = if p.m < 4096 { 100e12 } else { 400e12 };
            p.flops() / rate
        };
        let p = Problem::new(8192, 16384, 16384, DType::Bf16);
        let fast = choose(&p, 4, None, &NVLINK, &shape_sensitive);
        assert_eq!(fast.placement, Placement::Split(Layout::GemmRs), "{fast:?}");
        let slow = choose(&p, 4, None, &SLOW, &shape_sensitive);
        assert_eq!(slow.placement, Placement::OneGpu, "{slow:?}");
        // Every estimate is at least its compute alone and at least its communication alone.
        for e in estimates(&p, 4, None, &SLOW, &shape_sensitive) {
            assert!(
                e.seconds >= e.compute_s / 4.0 && e.seconds >= e.comm_s,
                "{e:?}"
            );
        }
    }

    /// ag-gemm hides its transfers behind its products until a shard's transfer outlasts a
    /// product; layouts that cannot split the shape are not candidates.
    #[test]
    fn overlap_and_the_shapes_a_layout_refuses() {
        let t = gpu(100e12, 0.0);
        let p = Problem::new(8192, 8192, 8192, DType::F32);
        let ag = |link: &LinkModel| {
            estimates(&p, 2, None, link, &t)
                .into_iter()
                .find(|e| e.placement == Placement::Split(Layout::AgGemm))
                .unwrap()
        };
        let hidden = ag(&NVLINK);
        assert!(
            (hidden.seconds - hidden.compute_s - NVLINK.latency_s).abs() < 1e-12,
            "{hidden:?}"
        );
        let exposed = ag(&SLOW);
        assert!(exposed.seconds > exposed.compute_s, "{exposed:?}");
        // K = 3 cannot split over 4: no gemm-rs; N = 2: no ag-gemm.
        let names = |p: &Problem| -> Vec<&str> {
            estimates(p, 4, None, &NVLINK, &t)
                .iter()
                .map(|e| e.placement.name())
                .collect()
        };
        assert_eq!(
            names(&Problem::new(64, 64, 3, DType::F32)),
            ["1-gpu", "row-split", "ag-gemm"]
        );
        assert_eq!(
            names(&Problem::new(64, 2, 64, DType::F32)),
            ["1-gpu", "row-split", "gemm-rs"]
        );
        assert_eq!(names(&Problem::new(64, 64, 64, DType::F32)).len(), 4);
        assert_eq!(estimates(&p, 1, None, &NVLINK, &t).len(), 1);
    }

    #[test]
    fn the_link_cache_round_trips_and_ignores_damage() {
        let dir = std::env::temp_dir().join(format!("matmul-link-{}", std::process::id()));
        let key = "2x NVIDIA H200";
        assert_eq!(load_cached(&dir, key), None);
        save_cached(&dir, key, &NVLINK).unwrap();
        assert_eq!(load_cached(&dir, key), Some(NVLINK));
        assert_eq!(load_cached(&dir, "4x NVIDIA H200"), None);
        assert!(cache_path(&dir, key).ends_with("link-2x_NVIDIA_H200.json"));
        std::fs::write(cache_path(&dir, key), "{\"bytes_per_s\": -1").unwrap();
        assert_eq!(load_cached(&dir, key), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
