//! The ladder view: for each dtype, the kernels in the registry's ladder order (the order of
//! `matmul list`, from the seeds to the tensor cores), their rate and their ratio to cuBLAS; as
//! tables (report.md, report.html); `ladder_plot` draws them as ladder.svg.

use std::fmt::Write as _;

use matmul::{DType, Problem};

use crate::fmt;
use crate::roofline::short_shape;

use super::{Record, Report, Status};

/// A table shows at most this many shapes of a dtype; with more (a suite), only the ladder's.
const MAX_TABLE_SHAPES: usize = 8;

/// One dtype's ladder at one problem: its kernels in ladder order.
#[derive(Debug, Clone, PartialEq)]
pub struct Ladder {
    /// The element type.
    pub dtype: DType,
    /// The problem: of this dtype's, the one the most kernels were timed on (the largest on ties).
    pub problem: Problem,
    /// Its shape label.
    pub shape: String,
    /// cuBLAS's rate on it, G(FL)OP/s, when it ran.
    pub vendor_gops: Option<f64>,
    /// Every kernel timed on it, in ladder order.
    pub rungs: Vec<Rung>,
}

/// One kernel of a ladder.
#[derive(Debug, Clone, PartialEq)]
pub struct Rung {
    /// The kernel as the tables name it (`auto (warptile ...)` for auto).
    pub label: String,
    /// Its rate, G(FL)OP/s.
    pub rate_gops: f64,
    /// cuBLAS's median / its median (1.0 is parity).
    pub vs_vendor: Option<f64>,
    /// Whether this is the vendor library itself.
    pub vendor: bool,
}

/// Where `kernel` stands in the ladder: its index in the registry; `auto` after every registry
/// kernel, names the registry no longer has after that.
fn ladder_index(kernel: &str) -> usize {
    matmul::KERNELS
        .iter()
        .position(|k| k.name == kernel)
        .unwrap_or(if kernel == "auto" {
            matmul::KERNELS.len()
        } else {
            matmul::KERNELS.len() + 1
        })
}

impl Report {
    /// The dtypes of the OK records, in their first appearance's order.
    fn timed_dtypes(&self) -> Vec<DType> {
        let mut out = Vec::new();
        for r in self.records.iter().filter(|r| r.status == Status::Ok) {
            if !out.contains(&r.dtype) {
                out.push(r.dtype);
            }
        }
        out
    }

    /// The kernels (labels) with a record of `dtype` that ran, in ladder order (record order
    /// among equals).
    fn ladder_kernels(&self, dtype: DType) -> Vec<String> {
        let mut kernels: Vec<(usize, String)> = Vec::new();
        for r in self
            .records
            .iter()
            .filter(|r| r.dtype == dtype && r.status != Status::Skipped)
        {
            let label = r.kernel.clone();
            if !kernels.iter().any(|(_, k)| *k == label) {
                kernels.push((ladder_index(&r.kernel), label));
            }
        }
        kernels.sort_by_key(|(i, _)| *i);
        kernels.into_iter().map(|(_, k)| k).collect()
    }

    /// One ladder per dtype that has timed records: at the problem the most kernels were timed
    /// on (the most FLOPs on ties), its kernels in ladder order.
    pub fn ladders(&self) -> Vec<Ladder> {
        let vendor = self.baselines.vendor.as_deref();
        self.timed_dtypes()
            .into_iter()
            .filter_map(|dtype| {
                let ok = |r: &&Record| r.dtype == dtype && r.status == Status::Ok;
                let mut problems: Vec<(Problem, usize, f64)> = Vec::new();
                for r in self.records.iter().filter(ok) {
                    match problems.iter_mut().find(|(p, _, _)| *p == r.problem) {
                        Some(e) => e.1 += 1,
                        None => problems.push((r.problem, 1, r.flops)),
                    }
                }
                let (problem, _, _) =
                    problems
                        .into_iter()
                        .reduce(|a, b| if (b.1, b.2) > (a.1, a.2) { b } else { a })?;
                let at: Vec<&Record> = self
                    .records
                    .iter()
                    .filter(ok)
                    .filter(|r| r.problem == problem && r.rate_gops.is_some())
                    .collect();
                let mut rungs: Vec<(usize, Rung)> = at
                    .iter()
                    .map(|r| {
                        (
                            ladder_index(&r.kernel),
                            Rung {
                                label: r.label(),
                                rate_gops: r.rate_gops.unwrap_or(0.0),
                                vs_vendor: r.vs_cublas,
                                vendor: Some(r.kernel.as_str()) == vendor,
                            },
                        )
                    })
                    .collect();
                rungs.sort_by_key(|(i, _)| *i);
                Some(Ladder {
                    dtype,
                    problem,
                    shape: at.first().map_or_else(String::new, |r| r.shape.clone()),
                    vendor_gops: at
                        .iter()
                        .find(|r| Some(r.kernel.as_str()) == vendor)
                        .and_then(|r| r.rate_gops),
                    rungs: rungs.into_iter().map(|(_, r)| r).collect(),
                })
            })
            .collect()
    }

    /// The ladder tables, one per dtype: (heading, header, rows). Rows are kernels in ladder
    /// order, columns the dtype's shapes (only the ladder's when there are more than 8); a cell
    /// is the rate and, in brackets, the rate as a percentage of cuBLAS's (cuBLAS's median / ours).
    pub(super) fn ladder_tables(&self) -> Vec<(String, Vec<String>, Vec<Vec<String>>)> {
        let ladders = self.ladders();
        ladders
            .iter()
            .map(|ladder| {
                let dtype = ladder.dtype;
                let mut problems: Vec<(Problem, String)> = Vec::new();
                for r in self
                    .records
                    .iter()
                    .filter(|r| r.dtype == dtype && r.status != Status::Skipped)
                {
                    if !problems.iter().any(|(p, _)| *p == r.problem) {
                        problems.push((r.problem, r.shape.clone()));
                    }
                }
                if problems.len() > MAX_TABLE_SHAPES {
                    problems.retain(|(p, _)| *p == ladder.problem);
                }
                let mut header = vec!["kernel".to_string()];
                header.extend(problems.iter().map(|(_, s)| short_shape(s)));
                let rows = self
                    .ladder_kernels(dtype)
                    .into_iter()
                    .map(|kernel| {
                        let mut row = Vec::with_capacity(problems.len() + 1);
                        let mut label = kernel.clone();
                        for (p, _) in &problems {
                            let r = self.records.iter().find(|r| {
                                r.kernel == kernel && r.dtype == dtype && r.problem == *p
                            });
                            row.push(match r {
                                Some(r) if r.status == Status::Ok => {
                                    if r.chosen.is_some() && problems.len() == 1 {
                                        label = r.label();
                                    }
                                    let mut cell = r.rate_text();
                                    if let Some(v) = r.vs_cublas {
                                        let _ = write!(cell, " ({}%)", fmt::sig(v * 100.0, 3));
                                    }
                                    cell
                                }
                                Some(r) => r.status.name().to_string(),
                                None => "-".into(),
                            });
                        }
                        row.insert(0, label);
                        row
                    })
                    .collect();
                (format!("{dtype}"), header, rows)
            })
            .collect()
    }

    /// The caption under the ladder tables.
    pub(super) fn ladder_caption(&self) -> String {
        let vendor = self.vendor_header().trim_start_matches("vs ").to_string();
        format!(
            "Each dtype's kernels in ladder order (the registry's, as `matmul list` prints it); \
             each cell the rate from the median time and, in brackets, {vendor}'s median time / \
             ours as a percentage (100 % is parity, above is faster than {vendor}). ladder.svg \
             draws each dtype at the shape the most kernels ran."
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{check_xml, synthetic_report};

    #[test]
    fn ladders_follow_the_registry_and_draw_cleanly() {
        let report = synthetic_report();
        let ladders = report.ladders();
        let dtypes: Vec<String> = ladders.iter().map(|l| l.dtype.to_string()).collect();
        assert_eq!(dtypes, ["f32", "u32", "tf32", "bf16"]);
        // The registry's order: row, ele, naive, tiled, tiled-async, ..., cublas.
        let f32 = &ladders[0];
        let labels: Vec<&str> = f32.rungs.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(
            labels,
            ["row", "ele", "naive", "tiled", "tiled-async", "cublas"]
        );
        assert!(f32.shape.starts_with("4096"), "the largest shape on ties");
        assert!(f32.rungs.last().unwrap().vendor);
        assert_eq!(f32.vendor_gops, Some(f32.rungs.last().unwrap().rate_gops));
        let svg = report.ladder_svg();
        check_xml(&svg).unwrap();
        let (canvas, w, h) = super::super::ladder_plot::layout_of(&svg);
        canvas.check_layout(w, h).unwrap();
        // A bar per rung: 4 dtypes × 6 kernels.
        assert_eq!(canvas.markers.len(), 24);
        assert!(canvas.texts.len() > 24 * 2, "a label and a value per bar");
        let tables = report.ladder_tables();
        assert_eq!(tables.len(), 4);
        let (heading, header, rows) = &tables[0];
        assert_eq!(heading, "f32");
        assert_eq!(header, &["kernel", "1024³", "4096³"]);
        assert_eq!(rows[0][0], "row");
        assert!(rows[0][2].ends_with("%)"), "{:?}", rows[0]);
        assert!(rows[5][2].ends_with("(100%)"), "{:?}", rows[5]);
    }
}
