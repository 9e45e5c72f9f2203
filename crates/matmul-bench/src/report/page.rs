//! What report.html's charts draw, computed from the report model: the per-dtype summary, the
//! ladders, the roofline (the same points and roofs as roofline.svg) and, for a suite run, each
//! case's rates. Serialized as one JSON block that the page's script hands to Chart.js; every
//! hover text is formatted here, with the same formatting as the tables.

use serde::Serialize;

use matmul::DType;

use crate::fmt;
use crate::roofline::{dtype_color, short_shape, Roofs};

use super::{Record, Report, Status};

/// The data block of report.html.
#[derive(Debug, Clone, Serialize)]
pub(super) struct PageData {
    /// The vendor baseline as the page names it ("cuBLAS"), if the run has one.
    pub vendor: Option<String>,
    /// One ladder chart per dtype.
    pub ladders: Vec<LadderChart>,
    /// The roofline chart (None without any roof or timed point).
    pub roofline: Option<RooflineChart>,
    /// For a suite run: per dtype, every case's rates per kernel.
    pub shapes: Vec<ShapeChart>,
}

/// One bar or point and its hover lines.
#[derive(Debug, Clone, Serialize)]
pub(super) struct Bar {
    /// Registry name (or `auto (chosen tiling)`).
    pub label: String,
    /// G(FL)OP/s.
    pub rate: f64,
    /// Drawn in the vendor's grey.
    pub vendor: bool,
    /// The hover lines: kernel, shape, rate, ratio, verification.
    pub tip: Vec<String>,
}

/// One dtype's ladder at one shape.
#[derive(Debug, Clone, Serialize)]
pub(super) struct LadderChart {
    pub dtype: String,
    pub title: String,
    pub unit: String,
    pub color: String,
    pub vendor_rate: Option<f64>,
    pub bars: Vec<Bar>,
}

/// A roof drawn as a polyline in (intensity, G(FL)OP/s).
#[derive(Debug, Clone, Serialize)]
pub(super) struct RoofLine {
    pub label: String,
    pub color: String,
    pub dashed: bool,
    pub points: Vec<[f64; 2]>,
}

/// A point of the roofline.
#[derive(Debug, Clone, Serialize)]
pub(super) struct RoofPoint {
    pub x: f64,
    pub y: f64,
    pub number: usize,
    pub hollow: bool,
    pub tip: Vec<String>,
}

/// The points of one dtype.
#[derive(Debug, Clone, Serialize)]
pub(super) struct RoofSeries {
    pub label: String,
    pub color: String,
    pub style: String,
    pub points: Vec<RoofPoint>,
}

/// The roofline: roofs and points, as roofline.svg draws them.
#[derive(Debug, Clone, Serialize)]
pub(super) struct RooflineChart {
    pub roofs: Vec<RoofLine>,
    pub series: Vec<RoofSeries>,
    pub x_min: f64,
    pub x_max: f64,
    /// The y range: whole decades around the points and the roofs' heights.
    pub y_min: f64,
    pub y_max: f64,
}

/// One kernel's rate on every case of a suite.
#[derive(Debug, Clone, Serialize)]
pub(super) struct ShapeSeries {
    pub label: String,
    pub vendor: bool,
    /// Per case (None where it was not timed).
    pub rates: Vec<Option<f64>>,
    pub tips: Vec<Vec<String>>,
}

/// One dtype's cases of a suite.
#[derive(Debug, Clone, Serialize)]
pub(super) struct ShapeChart {
    pub dtype: String,
    pub unit: String,
    pub color: String,
    pub cases: Vec<String>,
    pub series: Vec<ShapeSeries>,
}

/// The marker Chart.js draws for a dtype, as roofline.svg's shapes.
fn point_style(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "circle",
        DType::U32 => "rect",
        DType::Tf32 => "triangle",
        DType::Bf16 => "rectRot",
        _ => "star",
    }
}

impl Report {
    /// The vendor baseline's display name ("cuBLAS").
    pub(super) fn vendor_name(&self) -> Option<String> {
        self.baselines.vendor.as_deref().map(|v| match v {
            "cublas" => "cuBLAS".to_string(),
            v => v.to_string(),
        })
    }

    /// The hover lines of a record: kernel, shape and dtype, rate, ratio to the vendor and to
    /// the roof, verification.
    pub(super) fn tip(&self, r: &Record) -> Vec<String> {
        let mut tip = vec![
            r.label(),
            format!("{} {}", r.dtype, r.shape),
            format!(
                "{} (median {})",
                r.rate_text(),
                r.median_s().map_or("-".into(), fmt::time)
            ),
        ];
        if let (Some(v), Some(name)) = (r.vs_cublas, self.vendor_name()) {
            if Some(r.kernel.as_str()) != self.baselines.vendor.as_deref() {
                tip.push(format!(
                    "{}% of {name} (its median / ours)",
                    fmt::sig(v * 100.0, 3)
                ));
            }
        }
        let roof = r.roof_text();
        if roof != "-" {
            tip.push(format!("roof: {roof}"));
        }
        if let Some(error) = r.error_summary() {
            tip.push(format!("error: {error}"));
        }
        tip.push(format!(
            "verification: {}",
            r.verification
                .as_ref()
                .map_or_else(|| "-".to_string(), |v| v.summary())
        ));
        tip
    }

    /// The page's chart data.
    pub(super) fn page_data(&self) -> PageData {
        PageData {
            vendor: self.vendor_name(),
            ladders: self.ladder_charts(),
            roofline: self.roofline_chart(),
            shapes: if self.suite.is_some() {
                self.shape_charts()
            } else {
                Vec::new()
            },
        }
    }

    fn ladder_charts(&self) -> Vec<LadderChart> {
        let vendor = self.vendor_name();
        self.ladders()
            .into_iter()
            .map(|l| {
                let bars = l
                    .rungs
                    .iter()
                    .map(|rung| {
                        let record = self.records.iter().find(|r| {
                            r.dtype == l.dtype
                                && r.problem == l.problem
                                && r.status == Status::Ok
                                && r.label() == rung.label
                        });
                        Bar {
                            label: rung.label.clone(),
                            rate: rung.rate_gops,
                            vendor: rung.vendor,
                            tip: record.map_or_else(Vec::new, |r| self.tip(r)),
                        }
                    })
                    .collect();
                let mut title = format!("{} at {}", l.dtype, short_shape(&l.shape));
                if let (Some(v), Some(name)) = (l.vendor_gops, &vendor) {
                    title.push_str(&format!(
                        " (dashed: {name}, {})",
                        fmt::rate(v, l.dtype.rate_unit())
                    ));
                }
                LadderChart {
                    dtype: l.dtype.to_string(),
                    title,
                    unit: l.dtype.rate_unit().to_string(),
                    color: dtype_color(l.dtype).to_string(),
                    vendor_rate: l.vendor_gops,
                    bars,
                }
            })
            .collect()
    }

    fn roofline_chart(&self) -> Option<RooflineChart> {
        let roofs: Roofs = self.roofs();
        let points = self.plot_points();
        if points.is_empty() && roofs.memory.is_none() && roofs.compute.is_empty() {
            return None;
        }
        // The x range: a factor 4 around the points and the ridges, as decades.
        let ridges: Vec<f64> = roofs
            .memory
            .iter()
            .flat_map(|m| roofs.compute.iter().map(move |c| c.value / m.value))
            .collect();
        let xs = points
            .iter()
            .map(|p| p.intensity)
            .chain(ridges.iter().copied())
            .filter(|x| x.is_finite() && *x > 0.0);
        let (lo, hi) = xs.fold((f64::INFINITY, 0.0f64), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
        let (lo, hi) = if lo.is_finite() {
            (lo, hi)
        } else {
            (0.1, 100.0)
        };
        let x_min = 10f64.powf((lo / 4.0).log10().floor());
        let x_max = 10f64.powf((hi * 4.0).log10().ceil());
        let roof_label = |name: &str, value: f64, source: &str| match name {
            "memory" => format!("memory {} ({source})", fmt::bandwidth(value)),
            _ => format!(
                "{name} {} ({source})",
                fmt::rate(value, crate::roofline::roof_op(name))
            ),
        };
        let mut lines = Vec::new();
        let compute_line = |c: &crate::roofline::Roof, dashed: bool, bw: Option<f64>| {
            // Flat from its ridge (or the left edge) to the right edge.
            let start = bw.map_or(x_min, |b| (c.value / b).max(x_min));
            RoofLine {
                label: roof_label(&c.name, c.value, c.source.name()),
                color: crate::roofline::roof_color(&c.name).to_string(),
                dashed,
                points: vec![[start, c.value], [x_max, c.value]],
            }
        };
        let bw = roofs.memory.as_ref().map(|m| m.value);
        let top = roofs.compute.iter().map(|c| c.value).fold(0.0f64, f64::max);
        // A memory roof runs up to the highest compute roof.
        let memory_line = |value: f64, source: &str, dashed: bool| {
            let end = if top > 0.0 {
                (top / value).min(x_max)
            } else {
                x_max
            };
            RoofLine {
                label: roof_label("memory", value, source),
                color: crate::roofline::roof_color("memory").to_string(),
                dashed,
                points: vec![[x_min, value * x_min], [end, value * end]],
            }
        };
        if let Some(m) = &roofs.memory {
            lines.push(memory_line(m.value, m.source.name(), false));
        }
        for c in &roofs.compute {
            lines.push(compute_line(c, false, bw));
        }
        for d in &roofs.datasheet_overridden {
            if d.name == "memory" {
                lines.push(memory_line(d.value, d.source.name(), true));
            } else {
                lines.push(compute_line(d, true, bw));
            }
        }
        let mut series: Vec<RoofSeries> = Vec::new();
        for p in &points {
            let record = self
                .records
                .iter()
                .find(|r| r.kernel == p.kernel && r.dtype == p.dtype && r.shape == p.shape);
            let mut tip = record.map_or_else(Vec::new, |r| self.tip(r));
            tip.insert(0, format!("#{}", p.number));
            tip.push(format!("intensity {} FLOP/B", fmt::sig(p.intensity, 3)));
            let point = RoofPoint {
                x: p.intensity,
                y: p.rate_gops,
                number: p.number,
                hollow: p.bound.as_ref().is_some_and(|b| b.in_cache),
                tip,
            };
            let label = p.dtype.to_string();
            match series.iter_mut().find(|s| s.label == label) {
                Some(s) => s.points.push(point),
                None => series.push(RoofSeries {
                    label,
                    color: dtype_color(p.dtype).to_string(),
                    style: point_style(p.dtype).to_string(),
                    points: vec![point],
                }),
            }
        }
        let ys = points
            .iter()
            .map(|p| p.rate_gops)
            .chain(roofs.compute.iter().map(|c| c.value))
            .chain(bw.map(|b| b * x_min))
            .filter(|y| y.is_finite() && *y > 0.0);
        let (y_lo, y_hi) = ys.fold((f64::INFINITY, 0.0f64), |(lo, hi), y| {
            (lo.min(y), hi.max(y))
        });
        let (y_lo, y_hi) = if y_lo.is_finite() {
            (y_lo, y_hi)
        } else {
            (1.0, 1e3)
        };
        // A marker at the top or the bottom of the range keeps its whole shape in view.
        let y_min = 10f64.powf((y_lo / 1.1).log10().floor());
        let y_max = 10f64.powf((y_hi * 1.1).log10().ceil());
        Some(RooflineChart {
            roofs: lines,
            series,
            x_min,
            x_max,
            y_min,
            y_max,
        })
    }

    /// Per dtype: the cases the vendor (else any kernel) timed, in record order, and every
    /// kernel's rate on each.
    fn shape_charts(&self) -> Vec<ShapeChart> {
        let vendor = self.baselines.vendor.as_deref();
        let mut dtypes: Vec<DType> = Vec::new();
        for r in self.records.iter().filter(|r| r.status == Status::Ok) {
            if !dtypes.contains(&r.dtype) {
                dtypes.push(r.dtype);
            }
        }
        dtypes
            .into_iter()
            .filter_map(|dtype| {
                let of = |r: &&Record| r.dtype == dtype && r.status != Status::Skipped;
                let mut cases: Vec<(matmul::Problem, String)> = Vec::new();
                let mut kernels: Vec<String> = Vec::new();
                for r in self.records.iter().filter(of) {
                    if !cases.iter().any(|(p, _)| *p == r.problem) {
                        cases.push((r.problem, r.shape.clone()));
                    }
                    if !kernels.contains(&r.kernel) {
                        kernels.push(r.kernel.clone());
                    }
                }
                if cases.len() < 2 {
                    return None;
                }
                // The vendor last, drawn as the reference.
                kernels.sort_by_key(|k| Some(k.as_str()) == vendor);
                let series = kernels
                    .iter()
                    .map(|k| {
                        let found: Vec<Option<&Record>> = cases
                            .iter()
                            .map(|(p, _)| {
                                self.records.iter().find(|r| {
                                    r.kernel == *k
                                        && r.problem == *p
                                        && r.status == Status::Ok
                                        && r.rate_gops.is_some()
                                })
                            })
                            .collect();
                        ShapeSeries {
                            label: k.clone(),
                            vendor: Some(k.as_str()) == vendor,
                            rates: found.iter().map(|r| r.and_then(|r| r.rate_gops)).collect(),
                            tips: found
                                .iter()
                                .map(|r| r.map_or_else(Vec::new, |r| self.tip(r)))
                                .collect(),
                        }
                    })
                    .collect();
                Some(ShapeChart {
                    dtype: dtype.to_string(),
                    unit: dtype.rate_unit().to_string(),
                    color: dtype_color(dtype).to_string(),
                    cases: cases.into_iter().map(|(_, s)| short_shape(&s)).collect(),
                    series,
                })
            })
            .collect()
    }
}
