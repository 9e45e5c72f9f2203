//! The ladder view: for each dtype, the kernels in the registry's ladder order (the order of
//! `matmul list`, from the seeds to the tensor cores), their rate and their ratio to cuBLAS; as
//! tables (report.md, report.html) and as a small bar chart (ladder.svg).

use std::fmt::Write as _;

use matmul::{DType, Problem};

use crate::fmt;
use crate::roofline::canvas::{text_box, text_width, wrap, Anchor, Canvas, Rect};
use crate::roofline::{dtype_color, short_shape};

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

    /// ladder.svg: one panel per dtype, its kernels in ladder order as bars of their rate on a
    /// log scale, cuBLAS's rate as a dashed line, each bar ending in its rate and ratio.
    pub fn ladder_svg(&self) -> String {
        let (canvas, w, h) = self.draw_ladder();
        canvas.finish(w, h)
    }

    /// The drawing behind [`Report::ladder_svg`], with its canvas and size.
    pub(crate) fn draw_ladder(&self) -> (Canvas, f64, f64) {
        let ladders = self.ladders();
        let vendor = self.vendor_header().trim_start_matches("vs ").to_string();
        let value_text = |r: &Rung, unit: &str| {
            let mut t = fmt::rate(r.rate_gops, unit);
            if let Some(v) = r.vs_vendor.filter(|_| !r.vendor) {
                let _ = write!(t, " · {}% of {vendor}", fmt::sig(v * 100.0, 3));
            }
            t
        };
        let (row_h, axis_w) = (20.0, 360.0);
        let label_w = ladders
            .iter()
            .flat_map(|l| l.rungs.iter())
            .map(|r| text_width(&r.label, 11.0, false))
            .fold(60.0, f64::max);
        let x0 = (16.0 + label_w + 10.0).ceil();
        let x1 = x0 + axis_w;

        // Each panel's log axis: whole decades around its rates.
        let axes: Vec<(f64, f64)> = ladders
            .iter()
            .map(|l| {
                let (lo, hi) = l.rungs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), r| {
                    (lo.min(r.rate_gops), hi.max(r.rate_gops))
                });
                let l0 = lo.max(1e-9).log10().floor();
                let l1 = hi.max(1e-9).log10().ceil().max(l0 + 1.0);
                (l0, l1)
            })
            .collect();
        let sx =
            |v: f64, (l0, l1): (f64, f64)| x0 + (v.max(1e-9).log10() - l0) / (l1 - l0) * axis_w;
        let right = ladders
            .iter()
            .zip(&axes)
            .flat_map(|(l, &ax)| {
                let unit = l.dtype.rate_unit();
                l.rungs.iter().map(move |r| {
                    sx(r.rate_gops, ax) + 6.0 + text_width(&value_text(r, unit), 10.0, false)
                })
            })
            .fold(x1 + 20.0, f64::max);
        let width = (right + 16.0).max(480.0).ceil();

        let mut c = Canvas::default();
        let device = self.system.device.split(" (").next().unwrap_or("");
        let date = self.system.date.get(..10).unwrap_or(&self.system.date);
        let mut y = 28.0;
        for line in wrap(
            &format!("Ladder: {device}, {date}"),
            width - 32.0,
            17.0,
            true,
        ) {
            c.text(16.0, y, 17.0, true, Anchor::Start, "", &line);
            y += 21.0;
        }
        y -= 2.0;
        let subtitle = format!(
            "Each dtype's kernels in the registry's ladder order at the shape the most of them \
             ran; bars: the rate from the median time, on a log scale; dashed line: {vendor}."
        );
        for line in wrap(&subtitle, width - 32.0, 11.0, false) {
            c.text(
                16.0,
                y,
                11.0,
                false,
                Anchor::Start,
                r##"fill="#444""##,
                &line,
            );
            y += 14.0;
        }
        if ladders.is_empty() {
            y += 8.0;
            c.text(
                16.0,
                y,
                11.0,
                false,
                Anchor::Start,
                r##"fill="#666""##,
                "no timed results",
            );
            y += 14.0;
        }
        for (l, &ax) in ladders.iter().zip(&axes) {
            let unit = l.dtype.rate_unit();
            y += 16.0;
            let mut heading = format!("{} at {}", l.dtype, short_shape(&l.shape));
            if let Some(v) = l.vendor_gops {
                let _ = write!(heading, " (dashed: {vendor}, {})", fmt::rate(v, unit));
            }
            for line in wrap(&heading, width - 32.0, 12.0, true) {
                c.text(16.0, y, 12.0, true, Anchor::Start, "", &line);
                y += 15.0;
            }
            y += 4.0;
            let top = y;
            let color = dtype_color(l.dtype);
            // The grid and cuBLAS's line first, under the values.
            let bottom = top + row_h * l.rungs.len() as f64;
            for d in (ax.0 as i32)..=(ax.1 as i32) {
                let x = sx(10f64.powi(d), ax);
                let _ = writeln!(
                    c.body,
                    r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#ddd"/>"##
                );
            }
            if let Some(v) = l.vendor_gops {
                let x = sx(v, ax);
                let _ = writeln!(
                    c.body,
                    r##"<line class="vendor" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="#222" stroke-width="1.2" stroke-dasharray="4 3"/>"##,
                    top - 2.0
                );
            }
            for r in &l.rungs {
                let mid = y + row_h / 2.0;
                c.text(x0 - 10.0, mid + 4.0, 11.0, false, Anchor::End, "", &r.label);
                let end = sx(r.rate_gops, ax).max(x0 + 1.0);
                let fill = if r.vendor { "#999999" } else { color };
                let _ = writeln!(
                    c.body,
                    r#"<rect class="rung" x="{x0:.1}" y="{:.1}" width="{:.1}" height="12" fill="{fill}"><title>{}</title></rect>"#,
                    mid - 6.0,
                    end - x0,
                    crate::fmt::xml_escape(&format!("{}: {}", r.label, value_text(r, unit)))
                );
                c.markers.push(Rect {
                    x0,
                    y0: mid - 6.0,
                    x1: end,
                    y1: mid + 6.0,
                });
                // On a white ground, legible where the grid or the dashed line runs behind it.
                let value = value_text(r, unit);
                let b = text_box(end + 6.0, mid + 3.5, 10.0, false, Anchor::Start, &value);
                let _ = writeln!(
                    c.body,
                    r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="white"/>"#,
                    b.x0 - 1.0,
                    b.y0,
                    b.x1 - b.x0 + 2.0,
                    b.y1 - b.y0
                );
                c.text(end + 6.0, mid + 3.5, 10.0, false, Anchor::Start, "", &value);
                y += row_h;
            }
            // The axis: a line, decade ticks and their labels.
            let _ = writeln!(
                c.body,
                r##"<line x1="{x0:.1}" y1="{top:.1}" x2="{x0:.1}" y2="{y:.1}" stroke="#333"/>"##
            );
            let _ = writeln!(
                c.body,
                r##"<line x1="{x0:.1}" y1="{y:.1}" x2="{x1:.1}" y2="{y:.1}" stroke="#333"/>"##
            );
            let (l0, l1) = ax;
            for d in (l0 as i32)..=(l1 as i32) {
                let v = 10f64.powi(d);
                let x = sx(v, ax);
                let _ = writeln!(
                    c.body,
                    r##"<line x1="{x:.1}" y1="{y:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333"/>"##,
                    y + 5.0
                );
                let (scale, prefix) = fmt::si_prefix(v * 1e9);
                let tick = format!("{}{prefix}", (v * 1e9 / scale).round());
                c.text(x, y + 17.0, 10.0, false, Anchor::Middle, "", &tick);
            }
            y += 24.0;
        }
        let height = (y + 8.0).ceil();
        (c, width, height)
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
        let (canvas, w, h) = report.draw_ladder();
        canvas.check_layout(w, h).unwrap();
        let svg = report.ladder_svg();
        check_xml(&svg).unwrap();
        assert_eq!(svg.matches(r#"class="rung""#).count(), 24);
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
