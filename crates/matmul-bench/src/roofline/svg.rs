//! The roofline as a hand-written log-log SVG: a wrapped title, axes, roof lines and their labels,
//! one numbered marker per point and a legend.
//!
//! The layout is collision-free by construction: a point's number is written inside its marker;
//! markers that would cover one another (every kernel of a shape shares one intensity) are spread
//! sideways around their intensity, marked by a dotted line; a roof's label goes where it
//! crosses no line, marker or other label, and is left to the legend when there is no such place;
//! titles wrap to the picture's width, which the legend's longest line sets.

use std::fmt::Write as _;

use matmul::DType;

use crate::fmt::{self, xml_escape};

use super::canvas::{text_box, text_width, wrap, Anchor, Canvas, Rect, TextKind};
use super::model::{roof_name_for, roof_op};
use super::{Bytes, PlotPoint, Roof, Roofs};

/// A drawn line from one point to another, in SVG units.
type Segment = ((f64, f64), (f64, f64));

const ROOF_COLORS: &[(&str, &str)] = &[
    ("memory", "#d62728"),
    ("fp32", "#1f77b4"),
    ("int32", "#9467bd"),
    ("tf32", "#2ca02c"),
    ("bf16", "#ff7f0e"),
    ("f16", "#8c564b"),
    ("int8", "#e377c2"),
    ("int8/10", "#e377c2"),
    ("tf32/3", "#2ca02c"),
];

pub(crate) fn roof_color(name: &str) -> &'static str {
    ROOF_COLORS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("#555555", |(_, c)| c)
}

/// A dtype's colour: that of its own compute roof.
pub(crate) fn dtype_color(dtype: DType) -> &'static str {
    roof_color(roof_name_for(dtype))
}

/// The box of a dtype's marker centred on (x, y).
fn marker_box(dtype: DType, x: f64, y: f64) -> Rect {
    match dtype {
        DType::F32 => Rect::around(x, y, 7.5, 7.5),
        DType::U32 => Rect::around(x, y, 7.0, 7.0),
        DType::Bf16 => Rect::around(x, y, 9.5, 9.5),
        DType::Tf32 => Rect {
            x0: x - 11.0,
            y0: y - 10.5,
            x1: x + 11.0,
            y1: y + 8.0,
        },
        DType::F16 => Rect {
            x0: x - 11.0,
            y0: y - 8.0,
            x1: x + 11.0,
            y1: y + 10.5,
        },
    }
}

/// The marker of a dtype centred on (x, y): f32 circle, u32 square, tf32 triangle, bf16 diamond,
/// f16 inverted triangle, each large enough to hold a two-digit number.
fn marker(dtype: DType, x: f64, y: f64, style: &str, title: Option<&str>) -> String {
    let shape = match dtype {
        DType::F32 => format!(r#"<circle cx="{x:.1}" cy="{y:.1}" r="7.5""#),
        DType::U32 => format!(
            r#"<rect x="{:.1}" y="{:.1}" width="14" height="14""#,
            x - 7.0,
            y - 7.0
        ),
        DType::Tf32 => format!(
            r#"<path d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z""#,
            y - 10.5,
            x + 11.0,
            y + 8.0,
            x - 11.0,
            y + 8.0
        ),
        DType::Bf16 => format!(
            r#"<path d="M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z""#,
            y - 9.5,
            x + 9.5,
            y + 9.5,
            x - 9.5
        ),
        DType::F16 => format!(
            r#"<path d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z""#,
            y + 10.5,
            x + 11.0,
            y - 8.0,
            x - 11.0,
            y - 8.0
        ),
    };
    let element = match dtype {
        DType::F32 => "circle",
        DType::U32 => "rect",
        _ => "path",
    };
    match title {
        Some(t) => format!(
            "{shape} {style}><title>{}</title></{element}>",
            xml_escape(t)
        ),
        None => format!("{shape} {style}/>"),
    }
}

/// Where the number inside a dtype's marker centred at height y has its baseline.
fn number_baseline(dtype: DType, y: f64) -> f64 {
    match dtype {
        DType::Tf32 => y + 5.5,
        DType::F16 => y - 0.5,
        _ => y + 2.9,
    }
}

/// A marker with its number inside, for a point or its legend entry.
fn numbered_marker(
    canvas: &mut Canvas,
    p: &PlotPoint,
    (x, y): (f64, f64),
    class: &str,
    title: Option<&str>,
) -> Rect {
    let color = dtype_color(p.dtype);
    let hollow = p.bound.as_ref().is_some_and(|b| b.in_cache);
    let above = p.bound.as_ref().is_some_and(|b| b.above_roof());
    let (fill, stroke, width, text_fill) = match (hollow, above) {
        (_, true) => (color, "#d62728", "2.2", "white"),
        (true, false) => ("white", color, "2", color),
        (false, false) => (color, "#222", "0.8", "white"),
    };
    let style =
        format!(r#"class="{class}" fill="{fill}" stroke="{stroke}" stroke-width="{width}""#);
    canvas.raw(&marker(p.dtype, x, y, &style, title));
    let label = p.number.to_string();
    let size = if label.len() > 2 { 6.0 } else { 8.0 };
    let base = number_baseline(p.dtype, y);
    let _ = writeln!(
        canvas.body,
        r#"<text class="{class}-number" x="{x:.1}" y="{base:.1}" font-size="{size}" font-weight="bold" text-anchor="middle" fill="{text_fill}">{label}</text>"#
    );
    canvas.texts.push((
        text_box(x, base, size, true, Anchor::Middle, &label),
        TextKind::InMarker,
    ));
    marker_box(p.dtype, x, y)
}

/// A y-axis value (G ops/s) as "10G", "1T".
fn rate_tick(gops: f64) -> String {
    let (scale, prefix) = fmt::si_prefix(gops * 1e9);
    format!("{}{prefix}", (gops * 1e9 / scale).round())
}

fn x_tick(v: f64) -> String {
    if (1e-3..1e5).contains(&v) {
        fmt::sig(v, 1)
    } else {
        format!("1e{}", v.log10().round() as i64)
    }
}

/// "4096x4096x4096" as "4096³"; any other shape as it is.
pub(crate) fn short_shape(shape: &str) -> String {
    let (dims, rest) = shape.split_once(' ').map_or((shape, ""), |(d, r)| (d, r));
    let parts: Vec<&str> = dims.split('x').collect();
    if parts.len() == 3 && parts[0] == parts[1] && parts[1] == parts[2] {
        let sep = if rest.is_empty() { "" } else { " " };
        format!("{}³{sep}{rest}", parts[0])
    } else {
        shape.to_string()
    }
}

/// A legend line: "wgmma bf16 16384³: 731 TFLOP/s, 73.9% of bf16".
fn point_text(p: &PlotPoint) -> String {
    let mut t = format!(
        "{} {} {}: {}",
        p.kernel,
        p.dtype,
        short_shape(&p.shape),
        fmt::rate(p.rate_gops, p.dtype.rate_unit())
    );
    if let Some(b) = &p.bound {
        if b.above_roof() {
            t.push_str(" ⚠ above roof: measurement problem");
        } else if let Some(pc) = b.percent {
            let _ = write!(t, ", {}% of {}", fmt::sig(pc, 3), b.roof);
            if b.in_cache {
                t.push_str(" (in cache)");
            }
        }
    }
    t
}

fn roof_text(r: &Roof) -> String {
    if r.name == "memory" {
        format!("memory {} ({})", fmt::bandwidth(r.value), r.source.name())
    } else {
        let unit = roof_op(&r.name);
        format!(
            "{} {} ({})",
            r.name,
            fmt::rate(r.value, unit),
            r.source.name()
        )
    }
}

/// Renders the roofline as a standalone SVG document: `title` (wrapped) and `subtitle` (each of
/// its lines wrapped), log-log axes with decade ticks, the memory roof and the compute roofs the
/// points need (labelled with their values and sources where a label fits), datasheet roofs a
/// measurement overrides (dashed, in the legend), one marker per point (colour and shape: its
/// dtype; its number inside; hollow when its operands may have been in a cache; a red outline
/// when it is above its roof) and a legend of the roofs and the points.
pub fn render_svg(title: &str, subtitle: &str, roofs: &Roofs, points: &[PlotPoint]) -> String {
    let (canvas, width, height) = draw(title, subtitle, roofs, points);
    canvas.finish(width, height)
}

/// The drawing behind [`render_svg`], with its canvas (texts and markers boxed) and size.
pub(crate) fn draw(
    title: &str,
    subtitle: &str,
    roofs: &Roofs,
    points: &[PlotPoint],
) -> (Canvas, f64, f64) {
    let (left, pw, ph) = (80.0, 600.0, 440.0);
    let legend_x = left + pw + 34.0;

    // Compute roofs worth drawing: those bounding a plotted dtype (all of them with no points).
    let mut drawn: Vec<&Roof> = Vec::new();
    if points.is_empty() {
        drawn.extend(roofs.compute.iter());
    } else {
        for p in points {
            // The roof the record was placed under (for `auto`, its chosen kernel's), else the
            // dtype's own.
            let placed = p.bound.as_ref().and_then(|b| b.compute_roof.as_deref());
            let roof = match placed {
                Some(name) => roofs.compute_named(name),
                None => roofs.compute_for_kernel(&p.kernel, p.dtype),
            };
            if let Some(r) = roof {
                if !drawn.iter().any(|d| d.name == r.name) {
                    drawn.push(r);
                }
            }
        }
    }
    let dashed: Vec<&Roof> = roofs
        .datasheet_overridden
        .iter()
        .filter(|r| r.name == "memory" || drawn.iter().any(|d| d.name == r.name))
        .collect();
    let bw = roofs.memory.as_ref().map(|m| m.value);
    let dashed_bw = dashed.iter().find(|r| r.name == "memory").map(|r| r.value);
    let top_peak = drawn.iter().map(|r| r.value).reduce(f64::max);

    // The legend sizes the picture.
    let mut legend_roofs: Vec<(&Roof, bool)> = Vec::new();
    legend_roofs.extend(roofs.memory.iter().map(|m| (m, false)));
    legend_roofs.extend(drawn.iter().map(|r| (*r, false)));
    legend_roofs.extend(dashed.iter().map(|r| (*r, true)));
    let results_title = "Results: colour and marker by dtype, number inside";
    let legend_w = legend_roofs
        .iter()
        .map(|(r, _)| 28.0 + text_width(&roof_text(r), 11.0, false))
        .chain(
            points
                .iter()
                .map(|p| 30.0 + text_width(&point_text(p), 11.0, false)),
        )
        .chain([
            text_width(results_title, 12.0, true),
            text_width("no timed results", 11.0, false),
        ])
        .fold(0.0, f64::max);
    let width = (legend_x + legend_w + 16.0).ceil();

    let mut c = Canvas::default();

    // Title and subtitle, wrapped to the width.
    let text_w = width - 32.0;
    let mut y = 28.0;
    for line in wrap(title, text_w, 17.0, true) {
        c.text(16.0, y, 17.0, true, Anchor::Start, "", &line);
        y += 21.0;
    }
    y -= 2.0;
    for part in subtitle.lines() {
        for line in wrap(part, text_w, 11.0, false) {
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
    }
    let top = (y + 12.0).round();

    // Axis ranges: the data and the roofs' corners with a margin, in half decades.
    let mut xs: Vec<f64> = points.iter().map(|p| p.intensity).collect();
    let mut ys: Vec<f64> = points.iter().map(|p| p.rate_gops).collect();
    for r in drawn
        .iter()
        .chain(dashed.iter().filter(|r| r.name != "memory"))
    {
        ys.push(r.value);
        for b in [bw, dashed_bw].into_iter().flatten() {
            xs.push(r.value / b);
        }
    }
    if let Some(b) = bw {
        // The memory roof under each point, where it is below the compute roofs.
        for p in points {
            let under = b * p.intensity;
            if top_peak.is_none_or(|t| under < t) {
                ys.push(under);
            }
        }
    }
    xs.retain(|v| v.is_finite() && *v > 0.0);
    ys.retain(|v| v.is_finite() && *v > 0.0);
    let range = |v: &[f64], default: (f64, f64)| {
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        if !lo.is_finite() || hi <= 0.0 {
            return default;
        }
        let l = ((lo / 1.6).log10() * 2.0).floor() / 2.0;
        let h = (((hi * 1.6).log10() * 2.0).ceil() / 2.0).max(l + 1.0);
        (l, h)
    };
    let (lx0, lx1) = range(&xs, (-1.0, 3.0));
    let (ly0, ly1) = range(&ys, (0.0, 4.0));
    let (xmin, xmax, ymin, ymax) = (
        10f64.powf(lx0),
        10f64.powf(lx1),
        10f64.powf(ly0),
        10f64.powf(ly1),
    );
    let sx = |x: f64| left + (x.log10() - lx0) / (lx1 - lx0) * pw;
    let sy = |y: f64| top + ph - (y.log10() - ly0) / (ly1 - ly0) * ph;
    let frame = Rect {
        x0: left,
        y0: top,
        x1: left + pw,
        y1: top + ph,
    };

    // Grid, ticks and tick labels: a labelled line per decade, light ones at 2..9.
    let ticks = |l0: f64, l1: f64| {
        let mut out = Vec::new();
        for d in (l0.floor() as i32)..=(l1.ceil() as i32) {
            for m in 1..10 {
                let v = 10f64.powi(d) * m as f64;
                let lv = v.log10();
                if lv >= l0 - 1e-9 && lv <= l1 + 1e-9 {
                    out.push((v, m == 1));
                }
            }
        }
        out
    };
    c.raw(r#"<g class="grid" stroke-width="1">"#);
    let mut tick_labels: Vec<(f64, f64, String, Anchor)> = Vec::new();
    for (v, major) in ticks(lx0, lx1) {
        let x = sx(v);
        let (color, len) = if major {
            ("#d0d0d0", 6.0)
        } else {
            ("#f0f0f0", 3.0)
        };
        let _ = writeln!(
            c.body,
            r#"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="{color}"/>"#,
            top + ph
        );
        let _ = writeln!(
            c.body,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333"/>"##,
            top + ph,
            top + ph + len
        );
        if major {
            tick_labels.push((x, top + ph + 19.0, x_tick(v), Anchor::Middle));
        }
    }
    for (v, major) in ticks(ly0, ly1) {
        let y = sy(v);
        let (color, len) = if major {
            ("#d0d0d0", 6.0)
        } else {
            ("#f0f0f0", 3.0)
        };
        let _ = writeln!(
            c.body,
            r#"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}"/>"#,
            left + pw
        );
        let _ = writeln!(
            c.body,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{left}" y2="{y:.1}" stroke="#333"/>"##,
            left - len
        );
        if major {
            tick_labels.push((left - 9.0, y + 4.0, rate_tick(v), Anchor::End));
        }
    }
    c.raw("</g>");
    for (x, y, t, anchor) in tick_labels {
        c.text(x, y, 11.0, false, anchor, "", &t);
    }
    let _ = writeln!(
        c.body,
        r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
    );

    // Axis titles.
    let measured = points
        .iter()
        .any(|p| p.bound.as_ref().is_some_and(|b| b.bytes == Bytes::Measured));
    let x_title = if measured {
        "arithmetic intensity: FLOP (u32: OP) per byte of compulsory traffic (A, B read once, C \
         written once), or per DRAM byte measured by ncu where profiled"
    } else {
        "arithmetic intensity: FLOP (u32: OP) per byte of compulsory traffic (A, B read once, C \
         written once)"
    };
    let mut axis_y = top + ph + 38.0;
    for line in wrap(x_title, pw, 12.0, false) {
        c.text(
            left + pw / 2.0,
            axis_y,
            12.0,
            false,
            Anchor::Middle,
            "",
            &line,
        );
        axis_y += 15.0;
    }
    let y_title = "performance (FLOP/s; u32: OP/s)";
    let (yt_x, yt_y) = (20.0, top + ph / 2.0);
    let _ = writeln!(
        c.body,
        r#"<text x="{yt_x}" y="{yt_y:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 {yt_x} {yt_y:.1})">{}</text>"#,
        xml_escape(y_title)
    );
    let half = text_width(y_title, 12.0, false) / 2.0;
    c.texts.push((
        Rect {
            x0: yt_x - 0.8 * 12.0,
            y0: yt_y - half,
            x1: yt_x + 0.24 * 12.0,
            y1: yt_y + half,
        },
        TextKind::Text,
    ));

    // Roof lines, clipped to the plot; every drawn segment is an obstacle for labels.
    let _ = writeln!(
        c.body,
        r#"<clipPath id="plot"><rect x="{left}" y="{top}" width="{pw}" height="{ph}"/></clipPath>"#
    );
    c.raw(r#"<g class="roofs" clip-path="url(#plot)">"#);
    const DASH: &str = r#" stroke-dasharray="6 4" opacity="0.6""#;
    let mut segments: Vec<Segment> = Vec::new();
    // The visible stretch of a memory roof: from the left edge (or the bottom) to the highest
    // compute roof (or the top).
    let mem_span = |b: f64| {
        let x_a = xmin.max(ymin / b);
        let x_b = xmax.min(top_peak.unwrap_or(ymax) / b).min(ymax / b);
        (x_a, x_b)
    };
    for (b, dash) in bw
        .map(|b| (b, ""))
        .into_iter()
        .chain(dashed_bw.map(|b| (b, DASH)))
    {
        let (x_a, x_b) = mem_span(b);
        if x_b > x_a {
            let (a, e) = ((sx(x_a), sy(b * x_a)), (sx(x_b), sy(b * x_b)));
            let _ = writeln!(
                c.body,
                r#"<line class="roof" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2"{dash}/>"#,
                a.0,
                a.1,
                e.0,
                e.1,
                roof_color("memory")
            );
            segments.push((a, e));
        }
    }
    let mut labels: Vec<(f64, f64, String, &str)> = Vec::new(); // (line x from, y, text, colour)
    for (r, dash) in drawn.iter().map(|r| (*r, false)).chain(
        dashed
            .iter()
            .filter(|r| r.name != "memory")
            .map(|r| (*r, true)),
    ) {
        let b = if dash { dashed_bw.or(bw) } else { bw };
        let x_a = sx(b.map_or(xmin, |b| (r.value / b).max(xmin)));
        let y = sy(r.value);
        let color = roof_color(&r.name);
        let _ = writeln!(
            c.body,
            r#"<line class="roof" x1="{x_a:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2"{}/>"#,
            left + pw,
            if dash { DASH } else { "" }
        );
        if y >= top && y <= top + ph {
            segments.push(((x_a, y), (left + pw, y)));
        }
        if !dash {
            labels.push((x_a, y, roof_text(r), color));
        }
    }
    c.raw("</g>");

    // Markers: at their point, or moved sideways (never up or down: the rate is exact) to the
    // nearest place where they cover no other marker.
    let mut boxes: Vec<Rect> = Vec::new();
    let mut pos: Vec<(f64, f64)> = Vec::new();
    let inner = frame.grown(-1.0);
    for p in points {
        let (x, y) = (
            sx(p.intensity).clamp(left, left + pw),
            sy(p.rate_gops).clamp(top, top + ph),
        );
        let step = (marker_box(p.dtype, 0.0, 0.0).x1 + 0.5).max(1.0);
        let free = |x: f64, y: f64, boxes: &[Rect]| {
            let b = marker_box(p.dtype, x, y);
            !boxes.iter().any(|o| o.overlaps(&b)) && b.inside(&inner)
        };
        let sideways = (0..60).flat_map(|k| {
            let d = k as f64 * step;
            if k == 0 {
                vec![(x, y)]
            } else {
                vec![(x + d, y), (x - d, y)]
            }
        });
        // Pinned at an edge, or a row full across the plot: up and down as a last resort.
        let any = (1..40).flat_map(|k| {
            let d = k as f64 * step;
            vec![(x, y - d), (x, y + d)]
        });
        let chosen = sideways
            .chain(any)
            .find(|&(x, y)| free(x, y, &boxes))
            .unwrap_or((x, y));
        boxes.push(marker_box(p.dtype, chosen.0, chosen.1));
        pos.push(chosen);
    }
    // A dotted line at the exact intensity of each column of markers that had to spread.
    let mut columns: Vec<(f64, f64, f64, bool)> = Vec::new(); // (x, y min, y max, spread)
    for (p, &(mx, my)) in points.iter().zip(&pos) {
        let x = sx(p.intensity).clamp(left, left + pw);
        let moved = (mx - x).abs() > 0.5;
        match columns.iter_mut().find(|c| (c.0 - x).abs() < 0.5) {
            Some(col) => {
                col.1 = col.1.min(my);
                col.2 = col.2.max(my);
                col.3 |= moved;
            }
            None => columns.push((x, my, my, moved)),
        }
    }
    c.raw(r#"<g class="columns">"#);
    for &(x, y0, y1, _) in columns.iter().filter(|c| c.3) {
        let (a, e) = ((x, (y0 - 14.0).max(top)), (x, (y1 + 14.0).min(top + ph)));
        let _ = writeln!(
            c.body,
            r##"<line class="column" x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#666" stroke-width="1" stroke-dasharray="2 3"/>"##,
            a.1, e.1
        );
        segments.push((a, e));
    }
    c.raw("</g>");
    c.markers.extend(boxes.iter().copied());

    // A label fits where it stays in the plot and meets no marker, label or line.
    let fits = |r: &Rect, c: &Canvas, segments: &[Segment]| {
        r.inside(&frame.grown(-2.0))
            && !c.markers.iter().any(|m| m.grown(2.0).overlaps(r))
            && !c.texts.iter().any(|(t, _)| t.grown(1.0).overlaps(r))
            && !segments.iter().any(|&(a, e)| r.grown(1.0).hit_by(a, e))
    };

    // Compute-roof labels: along their line, from its right end leftwards, above then below.
    labels.sort_by(|a, b| a.1.total_cmp(&b.1));
    for (x_from, y, text, color) in &labels {
        let w = text_width(text, 11.0, false);
        let right = left + pw - 6.0 - w;
        let start = (x_from + 6.0).max(left + 6.0);
        let mut xs = vec![right];
        let mut x = right - 40.0;
        while x > start {
            xs.push(x);
            x -= 40.0;
        }
        let found = xs
            .iter()
            .flat_map(|&x| [(x, y - 5.0), (x, y + 14.0)])
            .find(|&(x, ly)| {
                fits(
                    &text_box(x, ly, 11.0, false, Anchor::Start, text),
                    &c,
                    &segments,
                )
            });
        if let Some((x, ly)) = found {
            c.text(
                x,
                ly,
                11.0,
                false,
                Anchor::Start,
                &format!(r#"class="roof-label" fill="{color}""#),
                text,
            );
        }
    }

    // The memory roof's label runs along the line, above or below it, where it meets nothing.
    if let (Some(m), Some(b)) = (&roofs.memory, bw) {
        let (x_a, x_b) = mem_span(b);
        if x_b > x_a {
            let text = roof_text(m);
            let len = text_width(&text, 11.0, false);
            let angle = ((ph / (ly1 - ly0)) / (pw / (lx1 - lx0))).atan();
            let (dx, dy) = (angle.cos(), -angle.sin());
            let (sa, sb) = ((sx(x_a), sy(b * x_a)), (sx(x_b), sy(b * x_b)));
            let seg = ((sb.0 - sa.0).powi(2) + (sb.1 - sa.1).powi(2)).sqrt();
            // Below the line first when the dashed datasheet memory roof runs just above it.
            let sides = if dashed_bw.is_some_and(|d| d > b) {
                [16.0, -7.0]
            } else {
                [-7.0, 16.0]
            };
            let own = |a: &(f64, f64), e: &(f64, f64)| {
                (a.0 - sa.0).abs() < 1e-6 && (a.1 - sa.1).abs() < 1e-6 && (e.0 - sb.0).abs() < 1e-6
            };
            let others: Vec<Segment> = segments
                .iter()
                .filter(|(a, e)| !own(a, e))
                .copied()
                .collect();
            'search: for off in sides {
                for i in 0..20 {
                    let t = 0.02 + 0.045 * i as f64;
                    if t * seg + len > seg {
                        break;
                    }
                    // Baseline start, shifted perpendicular to the line (negative = above).
                    let (px, py) = (
                        sa.0 + dx * t * seg - dy * off,
                        sa.1 + dy * t * seg + dx * off,
                    );
                    // The rotated text as a chain of small boxes along its middle line.
                    let boxes: Vec<Rect> = (0..=(len / 6.0) as usize)
                        .map(|i| {
                            let along = (6.0 * i as f64).min(len);
                            let (mx, my) = (px + dx * along + dy * 4.0, py + dy * along - dx * 4.0);
                            Rect::around(mx, my, 3.5, 4.5)
                        })
                        .collect();
                    if boxes.iter().all(|r| fits(r, &c, &others)) {
                        let _ = writeln!(
                            c.body,
                            r#"<text class="roof-label" x="{px:.1}" y="{py:.1}" font-size="11" fill="{}" transform="rotate({:.1} {px:.1} {py:.1})">{}</text>"#,
                            roof_color("memory"),
                            -angle.to_degrees(),
                            xml_escape(&text)
                        );
                        let id = c.texts.len();
                        c.texts
                            .extend(boxes.into_iter().map(|r| (r, TextKind::Piece(id))));
                        break 'search;
                    }
                }
            }
        }
    }

    // Points.
    c.raw(r#"<g class="points">"#);
    for (p, &xy) in points.iter().zip(&pos) {
        numbered_marker(&mut c, p, xy, "point", Some(&point_text(p)));
    }
    c.raw("</g>");

    // Legend: roofs, then points.
    let mut ly = top + 4.0;
    c.raw(r#"<g class="legend" font-size="11">"#);
    c.text(legend_x, ly, 12.0, true, Anchor::Start, "", "Roofs");
    ly += 18.0;
    for (r, dash) in &legend_roofs {
        let _ = writeln!(
            c.body,
            r#"<line x1="{legend_x}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2"{}/>"#,
            ly - 4.0,
            legend_x + 22.0,
            ly - 4.0,
            roof_color(&r.name),
            if *dash { DASH } else { "" }
        );
        c.text(
            legend_x + 28.0,
            ly,
            11.0,
            false,
            Anchor::Start,
            "",
            &roof_text(r),
        );
        ly += 18.0;
    }
    if legend_roofs.is_empty() {
        c.text(
            legend_x,
            ly,
            11.0,
            false,
            Anchor::Start,
            r##"fill="#666""##,
            "no ceilings known",
        );
        ly += 18.0;
    }
    ly += 8.0;
    c.text(legend_x, ly, 12.0, true, Anchor::Start, "", results_title);
    ly += 22.0;
    for p in points {
        numbered_marker(
            &mut c,
            p,
            (legend_x + 11.0, ly - 4.0),
            "legend-marker",
            None,
        );
        c.text(
            legend_x + 30.0,
            ly,
            11.0,
            false,
            Anchor::Start,
            "",
            &point_text(p),
        );
        ly += 22.0;
    }
    if points.is_empty() {
        c.text(
            legend_x,
            ly,
            11.0,
            false,
            Anchor::Start,
            r##"fill="#666""##,
            "no timed results",
        );
        ly += 18.0;
    }
    c.raw("</g>");
    let height = (axis_y + 8.0).max(ly + 4.0).ceil();
    (c, width, height)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::roofline::{Placement, RoofSource};

    fn roofs() -> Roofs {
        Roofs {
            memory: Some(Roof {
                name: "memory".into(),
                value: 3_000.0,
                source: RoofSource::Measured,
            }),
            compute: vec![
                Roof {
                    name: "fp32".into(),
                    value: 60_000.0,
                    source: RoofSource::Measured,
                },
                Roof {
                    name: "bf16".into(),
                    value: 800_000.0,
                    source: RoofSource::Measured,
                },
            ],
            datasheet_overridden: vec![Roof {
                name: "memory".into(),
                value: 3_350.0,
                source: RoofSource::Datasheet,
            }],
        }
    }

    fn point(number: usize, dtype: DType, intensity: f64, rate: f64, r: &Roofs) -> PlotPoint {
        PlotPoint {
            number,
            kernel: format!("kernel-{number}"),
            dtype,
            shape: "4096x4096x4096".into(),
            intensity,
            rate_gops: rate,
            bound: r.bound(dtype, Placement::compulsory(intensity), Some(rate)),
        }
    }

    #[test]
    fn a_crowded_column_keeps_every_marker_and_label_apart() {
        let r = roofs();
        // 40 kernels at one shape (one intensity), many at nearly the same rate, two dtypes.
        let mut points: Vec<PlotPoint> = (0..40)
            .map(|i| {
                let rate = if i % 3 == 0 {
                    40_000.0
                } else {
                    20.0 * 1.2f64.powi(i)
                };
                point(i as usize + 1, DType::F32, 683.0, rate, &r)
            })
            .collect();
        points.extend((0..6).map(|i| point(41 + i, DType::Bf16, 4096.0, 700_000.0, &r)));
        points.push(point(99, DType::Bf16, 2.0, 6_000.0, &r));
        let long_title = format!(
            "Roofline: {}",
            "NVIDIA H100 80GB HBM3 (#0, sm_90a) ".repeat(6)
        );
        let (c, w, h) = draw(&long_title, "a subtitle\nand a second line", &r, &points);
        c.check_layout(w, h).unwrap();
        for (i, a) in c.markers.iter().enumerate() {
            for b in &c.markers[i + 1..] {
                assert!(!a.overlaps(b), "markers {a:?} and {b:?} overlap");
            }
        }
        assert_eq!(c.markers.len(), points.len());
        let svg = c.finish(w, h);
        crate::tests::check_xml(&svg).unwrap();
        assert!(
            svg.contains(r#"class="column""#),
            "the crowded column is marked"
        );
    }

    #[test]
    fn shapes_shorten_and_legend_lines_flag_problems() {
        assert_eq!(short_shape("4096x4096x4096"), "4096³");
        assert_eq!(short_shape("64x64x64 (TN)"), "64³ (TN)");
        assert_eq!(short_shape("1x4096x4096"), "1x4096x4096");
        let r = roofs();
        let ok = point(1, DType::F32, 683.0, 30_000.0, &r);
        assert_eq!(
            point_text(&ok),
            "kernel-1 f32 4096³: 30.0 TFLOP/s, 50.0% of fp32"
        );
        let above = point(2, DType::F32, 683.0, 61_000.0, &r);
        assert!(point_text(&above).ends_with("⚠ above roof: measurement problem"));
    }
}
