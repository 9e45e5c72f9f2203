//! The roofline as a hand-written log-log SVG: axes, roof lines and their labels, numbered
//! markers and a legend.

use std::fmt::Write as _;

use matmul::DType;

use crate::fmt::{self, xml_escape};

use super::{PlotPoint, Roof, Roofs};

const ROOF_COLORS: &[(&str, &str)] = &[
    ("memory", "#d62728"),
    ("fp32", "#1f77b4"),
    ("int32", "#9467bd"),
    ("tf32", "#2ca02c"),
    ("bf16", "#ff7f0e"),
    ("f16", "#8c564b"),
];
const KERNEL_COLORS: &[&str] = &[
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
];

fn roof_color(name: &str) -> &'static str {
    ROOF_COLORS
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("#555555", |(_, c)| c)
}

/// The marker of a dtype, centred on (x, y): f32 circle, u32 square, tf32 triangle, bf16 diamond,
/// f16 inverted triangle. `class` and `extra` are written on the element.
fn marker(dtype: DType, x: f64, y: f64, fill: &str, class: &str, title: Option<&str>) -> String {
    let r = 5.0;
    let shape = match dtype {
        DType::F32 => format!(r#"<circle class="{class}" cx="{x:.1}" cy="{y:.1}" r="{r}""#),
        DType::U32 => format!(
            r#"<rect class="{class}" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}""#,
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        DType::Tf32 => format!(
            r#"<path class="{class}" d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z""#,
            y - r * 1.2,
            x + r * 1.1,
            y + r * 0.8,
            x - r * 1.1,
            y + r * 0.8
        ),
        DType::Bf16 => format!(
            r#"<path class="{class}" d="M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z""#,
            y - r * 1.3,
            x + r * 1.3,
            y + r * 1.3,
            x - r * 1.3
        ),
        DType::F16 => format!(
            r#"<path class="{class}" d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z""#,
            y + r * 1.2,
            x + r * 1.1,
            y - r * 0.8,
            x - r * 1.1,
            y - r * 0.8
        ),
    };
    let style = format!(r##" fill="{fill}" fill-opacity="0.8" stroke="#222" stroke-width="0.8""##);
    match title {
        Some(t) => format!(
            "{shape}{style}><title>{}</title></{}>",
            xml_escape(t),
            element_name(dtype)
        ),
        None => format!("{shape}{style}/>"),
    }
}

fn element_name(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "circle",
        DType::U32 => "rect",
        _ => "path",
    }
}

/// A y-axis value (G ops/s) as "10G", "1T".
fn rate_tick(gops: f64) -> String {
    let (scale, prefix) = fmt::si_prefix(gops * 1e9);
    format!("{}{prefix}", (gops * 1e9 / scale).round())
}

fn top_peak_of(roofs: &[&Roof]) -> Option<f64> {
    roofs.iter().map(|r| r.value).reduce(f64::max)
}

fn x_tick(v: f64) -> String {
    if (1e-3..1e5).contains(&v) {
        fmt::sig(v, 1)
    } else {
        format!("1e{}", v.log10().round() as i64)
    }
}

#[derive(Clone, Copy)]
struct Box2 {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Box2 {
    fn overlaps(&self, o: &Box2) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
}

/// Renders the roofline as a standalone SVG document: log-log axes with decade ticks, the memory
/// roof and the compute roofs the points need (labelled with their values and sources),
/// datasheet roofs a measurement overrides (dashed, listed in the legend), one numbered marker
/// per point (colour per kernel, shape per dtype) and a legend listing the roofs and the points.
pub fn render_svg(title: &str, subtitle: &str, roofs: &Roofs, points: &[PlotPoint]) -> String {
    const CHAR_W: f64 = 6.2; // average glyph width at font-size 11
    let (left, top, pw, ph) = (78.0, 66.0, 600.0, 440.0);
    let legend_x = left + pw + 28.0;

    // Compute roofs worth drawing: those bounding a plotted dtype (all of them with no points).
    let mut drawn: Vec<&Roof> = Vec::new();
    if points.is_empty() {
        drawn.extend(roofs.compute.iter());
    } else {
        for p in points {
            if let Some(r) = roofs.compute_for(p.dtype) {
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
    let top_peak = top_peak_of(&drawn);

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

    // Legend texts first: they size the picture.
    let roof_text = |r: &Roof| {
        if r.name == "memory" {
            format!("memory {} ({})", fmt::bandwidth(r.value), r.source.name())
        } else {
            let unit = if r.name == "int32" { "OP" } else { "FLOP" };
            format!(
                "{} {} ({})",
                r.name,
                fmt::rate(r.value, unit),
                r.source.name()
            )
        }
    };
    let mut legend_roofs: Vec<(&Roof, bool)> = Vec::new();
    legend_roofs.extend(roofs.memory.iter().map(|m| (m, false)));
    legend_roofs.extend(drawn.iter().map(|r| (*r, false)));
    legend_roofs.extend(dashed.iter().map(|r| (*r, true)));
    let results_title = "Results (marker: ● f32 ■ u32 ▲ tf32 ◆ bf16 ▼ f16)";
    let longest = legend_roofs
        .iter()
        .map(|(r, _)| roof_text(r).chars().count() + 5)
        .chain(points.iter().map(|p| point_text(p).chars().count() + 7))
        .chain([results_title.chars().count()])
        .max()
        .unwrap_or(40);
    let width = legend_x + CHAR_W * longest as f64 + 16.0;
    let legend_lines = 2 + legend_roofs.len() + points.len().max(1);
    let height = (top + ph + 64.0).max(top + 30.0 + 17.0 * legend_lines as f64);

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="Helvetica, Arial, sans-serif">"#
    );
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="white"/>"#
    );
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="26" font-size="17" font-weight="bold">{}</text>"#,
        xml_escape(title)
    );
    let _ = writeln!(
        s,
        r##"<text x="{left}" y="46" font-size="11" fill="#444">{}</text>"##,
        xml_escape(subtitle)
    );

    // Grid, ticks and tick labels: a labelled line per decade, light ones at 2..9.
    let _ = writeln!(s, r#"<g class="grid" stroke-width="1">"#);
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
    for (v, major) in ticks(lx0, lx1) {
        let x = sx(v);
        let (color, len) = if major {
            ("#d0d0d0", 6.0)
        } else {
            ("#f0f0f0", 3.0)
        };
        let _ = writeln!(
            s,
            r#"<line x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{:.1}" stroke="{color}"/>"#,
            top + ph
        );
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333"/>"##,
            top + ph,
            top + ph + len
        );
        if major {
            let _ = writeln!(
                s,
                r#"<text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
                top + ph + 19.0,
                x_tick(v)
            );
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
            s,
            r#"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}"/>"#,
            left + pw
        );
        let _ = writeln!(
            s,
            r##"<line x1="{:.1}" y1="{y:.1}" x2="{left}" y2="{y:.1}" stroke="#333"/>"##,
            left - len
        );
        if major {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"#,
                left - 9.0,
                y + 4.0,
                rate_tick(v)
            );
        }
    }
    let _ = writeln!(s, "</g>");
    let _ = writeln!(
        s,
        r##"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>"##
    );
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">arithmetic intensity (FLOP or OP per byte of the traffic model, or of measured DRAM traffic)</text>"#,
        left + pw / 2.0,
        top + ph + 40.0
    );
    let _ = writeln!(
        s,
        r#"<text x="18" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 18 {:.1})">performance (FLOP/s; OP/s for u32)</text>"#,
        top + ph / 2.0,
        top + ph / 2.0
    );

    // Roof lines, clipped to the plot.
    let _ = writeln!(
        s,
        r#"<clipPath id="plot"><rect x="{left}" y="{top}" width="{pw}" height="{ph}"/></clipPath>"#
    );
    let _ = writeln!(s, r#"<g class="roofs" clip-path="url(#plot)">"#);
    const DASH: &str = r#" stroke-dasharray="6 4" opacity="0.6""#;
    // The visible stretch of a memory roof: from the left edge (or the bottom) to the highest
    // compute roof (or the top).
    let mem_span = |b: f64| {
        let x_a = xmin.max(ymin / b);
        let x_b = xmax.min(top_peak.unwrap_or(ymax) / b);
        (x_a, x_b)
    };
    for (b, dash) in bw
        .map(|b| (b, ""))
        .into_iter()
        .chain(dashed_bw.map(|b| (b, DASH)))
    {
        let (x_a, x_b) = mem_span(b);
        if x_b > x_a {
            let _ = writeln!(
                s,
                r#"<line class="roof" x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2"{dash}/>"#,
                sx(x_a),
                sy(b * x_a),
                sx(x_b),
                sy(b * x_b),
                roof_color("memory")
            );
        }
    }
    // Horizontal roof segments (x from, x to, y) and the labels of the solid ones.
    let mut hlines: Vec<(f64, f64, f64)> = Vec::new();
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
            s,
            r#"<line class="roof" x1="{x_a:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2"{}/>"#,
            left + pw,
            if dash { DASH } else { "" }
        );
        hlines.push((x_a, left + pw, y));
        if !dash {
            labels.push((x_a, y, roof_text(r), color));
        }
    }
    let _ = writeln!(s, "</g>");

    // Point positions (clamped into the frame) and what must not be written over.
    let pos: Vec<(f64, f64)> = points
        .iter()
        .map(|p| {
            (
                sx(p.intensity).clamp(left, left + pw),
                sy(p.rate_gops).clamp(top, top + ph),
            )
        })
        .collect();
    let mut occupied: Vec<Box2> = pos
        .iter()
        .map(|&(x, y)| Box2 {
            x0: x - 7.0,
            y0: y - 7.0,
            x1: x + 7.0,
            y1: y + 7.0,
        })
        .collect();

    // Compute-roof labels: at the right end of their line, above or below it, else at its left
    // end; the first place that overlaps no other label, roof line or point.
    labels.sort_by(|a, b| a.1.total_cmp(&b.1));
    for (x_from, y, text, color) in &labels {
        let w = CHAR_W * text.chars().count() as f64;
        let right = left + pw - 5.0;
        let start = (x_from + 5.0).max(left + 5.0);
        let candidates = [
            (right - w, y - 5.0),
            (right - w, y + 14.0),
            (start, y - 5.0),
            (start, y + 14.0),
        ];
        let boxed = |(x, ly): (f64, f64)| Box2 {
            x0: x,
            y0: ly - 10.0,
            x1: x + w,
            y1: ly + 2.0,
        };
        let clear = |b: &Box2| {
            b.y0 >= top
                && b.y1 <= top + ph
                && !occupied.iter().any(|o| o.overlaps(b))
                && !hlines
                    .iter()
                    .any(|&(x0, x1, ly)| ly > b.y0 && ly < b.y1 && x0 < b.x1 && b.x0 < x1)
        };
        let (x, ly) = candidates
            .iter()
            .copied()
            .find(|c| clear(&boxed(*c)))
            .unwrap_or(candidates[0]);
        let _ = writeln!(
            s,
            r#"<text class="roof-label" x="{x:.1}" y="{ly:.1}" font-size="11" fill="{color}">{}</text>"#,
            xml_escape(text)
        );
        occupied.push(boxed((x, ly)));
    }

    // The memory roof's label runs along the line, above or below it, where it covers no point.
    if let (Some(m), Some(b)) = (&roofs.memory, bw) {
        let (x_a, x_b) = mem_span(b);
        if x_b > x_a {
            let text = roof_text(m);
            let len = CHAR_W * text.chars().count() as f64;
            let angle = ((ph / (ly1 - ly0)) / (pw / (lx1 - lx0))).atan();
            let (dx, dy) = (angle.cos(), -angle.sin());
            let (sa, sb) = ((sx(x_a), sy(b * x_a)), (sx(x_b), sy(b * x_b)));
            let seg = ((sb.0 - sa.0).powi(2) + (sb.1 - sa.1).powi(2)).sqrt();
            let mut best: Option<(f64, f64, Vec<Box2>)> = None;
            // Below the line first when the dashed datasheet memory roof runs just above it.
            let sides = if dashed_bw.is_some_and(|d| d > b) {
                [15.0, -6.0]
            } else {
                [-6.0, 15.0]
            };
            'search: for off in sides {
                for t in [0.04, 0.15, 0.3, 0.45, 0.6] {
                    if t * seg + len > seg {
                        continue;
                    }
                    // Baseline start, shifted perpendicular to the line (negative = above).
                    let (px, py) = (
                        sa.0 + dx * t * seg - dy * off,
                        sa.1 + dy * t * seg + dx * off,
                    );
                    let boxes: Vec<Box2> = (0..=(len / 8.0) as usize)
                        .map(|i| {
                            let (cx, cy) = (px + dx * 8.0 * i as f64, py + dy * 8.0 * i as f64);
                            Box2 {
                                x0: cx - 4.0,
                                y0: cy - 9.0,
                                x1: cx + 4.0,
                                y1: cy + 1.0,
                            }
                        })
                        .collect();
                    let clear = boxes
                        .iter()
                        .all(|b| !occupied.iter().any(|o| o.overlaps(b)));
                    if best.is_none() || clear {
                        best = Some((px, py, boxes));
                    }
                    if clear {
                        break 'search;
                    }
                }
            }
            if let Some((px, py, boxes)) = best {
                let _ = writeln!(
                    s,
                    r#"<text class="roof-label" x="{px:.1}" y="{py:.1}" font-size="11" fill="{}" transform="rotate({:.1} {px:.1} {py:.1})">{}</text>"#,
                    roof_color("memory"),
                    -angle.to_degrees(),
                    xml_escape(&text)
                );
                occupied.extend(boxes);
            }
        }
    }

    // Points, numbered; each number goes where it overlaps nothing drawn, with a leader line
    // when it had to move away from its marker.
    let mut kernels: Vec<&str> = Vec::new();
    for p in points {
        if !kernels.contains(&p.kernel.as_str()) {
            kernels.push(&p.kernel);
        }
    }
    let color_of = |k: &str| {
        let i = kernels.iter().position(|x| *x == k).unwrap_or(0);
        KERNEL_COLORS[i % KERNEL_COLORS.len()]
    };
    let _ = writeln!(s, r#"<g class="points">"#);
    for (p, &(x, y)) in points.iter().zip(&pos) {
        let _ = writeln!(
            s,
            "{}",
            marker(
                p.dtype,
                x,
                y,
                color_of(&p.kernel),
                "point",
                Some(&point_text(p))
            )
        );
    }
    for (p, &(x, y)) in points.iter().zip(&pos) {
        let label = p.number.to_string();
        let (w, h) = (7.0 * label.len() as f64, 11.0);
        let mut chosen = None;
        'place: for scale in [1.0, 1.8, 2.6, 3.4] {
            for (dx, dy) in [
                (8.0, -6.0),
                (8.0, 14.0),
                (-8.0 - w, -6.0),
                (-8.0 - w, 14.0),
                (-w / 2.0, -9.0),
                (-w / 2.0, 19.0),
            ] {
                let (tx, ty) = (x + dx * scale, y + dy * scale);
                let b = Box2 {
                    x0: tx - 1.0,
                    y0: ty - h,
                    x1: tx + w + 1.0,
                    y1: ty + 2.0,
                };
                let inside = b.x0 >= left && b.x1 <= left + pw && b.y0 >= top && b.y1 <= top + ph;
                if inside && !occupied.iter().any(|o| o.overlaps(&b)) {
                    chosen = Some((tx, ty, b, scale > 1.0));
                    break 'place;
                }
            }
        }
        let (tx, ty, b, leader) = chosen.unwrap_or((
            x + 7.0,
            y - 6.0,
            Box2 {
                x0: x + 6.0,
                y0: y - 17.0,
                x1: x + 8.0 + w,
                y1: y - 4.0,
            },
            false,
        ));
        if leader {
            let (cx, cy) = (tx + w / 2.0, ty - h / 2.0 + 1.0);
            let _ = writeln!(
                s,
                r##"<line class="leader" x1="{x:.1}" y1="{y:.1}" x2="{cx:.1}" y2="{cy:.1}" stroke="#999" stroke-width="0.7"/>"##
            );
        }
        occupied.push(b);
        let _ = writeln!(
            s,
            r#"<text class="point-label" x="{tx:.1}" y="{ty:.1}" font-size="11" font-weight="bold">{label}</text>"#
        );
    }
    let _ = writeln!(s, "</g>");

    // Legend: roofs, then points.
    let mut ly = top + 4.0;
    let _ = writeln!(s, r#"<g class="legend" font-size="11">"#);
    let _ = writeln!(
        s,
        r#"<text x="{legend_x}" y="{ly:.1}" font-size="12" font-weight="bold">Roofs</text>"#
    );
    ly += 17.0;
    for (r, dash) in &legend_roofs {
        let _ = writeln!(
            s,
            r#"<line x1="{legend_x}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="2"{}/>"#,
            ly - 4.0,
            legend_x + 22.0,
            ly - 4.0,
            roof_color(&r.name),
            if *dash { DASH } else { "" }
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{ly:.1}">{}</text>"#,
            legend_x + 28.0,
            xml_escape(&roof_text(r))
        );
        ly += 17.0;
    }
    if legend_roofs.is_empty() {
        let _ = writeln!(
            s,
            r##"<text x="{legend_x}" y="{ly:.1}" fill="#666">no ceilings known</text>"##
        );
        ly += 17.0;
    }
    ly += 6.0;
    let _ = writeln!(
        s,
        r#"<text x="{legend_x}" y="{ly:.1}" font-size="12" font-weight="bold">{results_title}</text>"#
    );
    ly += 17.0;
    for p in points {
        let _ = writeln!(
            s,
            "{}",
            marker(
                p.dtype,
                legend_x + 8.0,
                ly - 4.0,
                color_of(&p.kernel),
                "legend-marker",
                None
            )
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{ly:.1}"><tspan font-weight="bold">{}</tspan>  {}</text>"#,
            legend_x + 20.0,
            p.number,
            xml_escape(&point_text(p))
        );
        ly += 17.0;
    }
    if points.is_empty() {
        let _ = writeln!(
            s,
            r##"<text x="{legend_x}" y="{ly:.1}" fill="#666">no timed results</text>"##
        );
    }
    let _ = writeln!(s, "</g>");
    s.push_str("</svg>\n");
    s
}

/// "cublas f32 8192x8192x8192: 51.8 TFLOP/s, 77% of fp32".
fn point_text(p: &PlotPoint) -> String {
    let mut t = format!(
        "{} {} {}: {}",
        p.kernel,
        p.dtype,
        p.shape,
        fmt::rate(p.rate_gops, p.dtype.rate_unit())
    );
    if let Some(b) = &p.bound {
        if let Some(pc) = b.percent {
            let _ = write!(t, ", {}% of {}", fmt::sig(pc, 3), b.roof);
        }
    }
    t
}
