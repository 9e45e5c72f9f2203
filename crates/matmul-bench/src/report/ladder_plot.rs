//! ladder.svg drawn with `plotters` (SVG backend): one panel per dtype, its kernels in ladder
//! order as bars of their rate on a log axis, the vendor's rate as a dashed line, each bar ending
//! in its rate and ratio. The picture's size comes from the same text metrics as the roofline's
//! (`roofline::canvas::text_width`), so no label is cut at an edge.

use std::fmt::Write as _;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::fmt;
use crate::roofline::canvas::{text_width, wrap};
use crate::roofline::{dtype_color, short_shape};

use super::{Report, Rung};

const FONT: &str = "Helvetica, Arial, sans-serif";
const ROW_H: u32 = 20;
const AXIS_W: f64 = 360.0;

/// "#1f77b4" as a colour.
fn rgb(hex: &str) -> RGBColor {
    let v = u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap_or(0x555555);
    RGBColor((v >> 16) as u8, (v >> 8) as u8, v as u8)
}

impl Report {
    /// ladder.svg (see the module's documentation).
    pub fn ladder_svg(&self) -> String {
        let ladders = self.ladders();
        let vendor = self.vendor_header().trim_start_matches("vs ").to_string();
        let value_text = |r: &Rung, unit: &str| {
            let mut t = fmt::rate(r.rate_gops, unit);
            if let Some(v) = r.vs_vendor.filter(|_| !r.vendor) {
                let _ = write!(t, " · {}% of {vendor}", fmt::sig(v * 100.0, 3));
            }
            t
        };
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
        let label_w = ladders
            .iter()
            .flat_map(|l| l.rungs.iter())
            .map(|r| text_width(&r.label, 11.0, false))
            .fold(60.0, f64::max)
            .ceil();
        // Room right of the axis for the longest value past its bar.
        let value_w = ladders
            .iter()
            .zip(&axes)
            .flat_map(|(l, &(l0, l1))| {
                let unit = l.dtype.rate_unit();
                l.rungs.iter().map(move |r| {
                    let end = (r.rate_gops.max(1e-9).log10() - l0) / (l1 - l0) * AXIS_W;
                    end - AXIS_W + 6.0 + text_width(&value_text(r, unit), 10.0, false)
                })
            })
            .fold(24.0, f64::max)
            .ceil();
        let left = 16.0 + label_w + 10.0;
        let width = (left + AXIS_W + value_w + 16.0).max(480.0).ceil();

        let device = self.system.device.split(" (").next().unwrap_or("");
        let date = self.system.date.get(..10).unwrap_or(&self.system.date);
        let title = wrap(
            &format!("Ladder: {device}, {date}"),
            width - 32.0,
            17.0,
            true,
        );
        let subtitle = wrap(
            &format!(
                "Each dtype's kernels in the registry's ladder order at the shape the most of them \
                 ran; bars: the rate from the median time, on a log scale; dashed line: {vendor}."
            ),
            width - 32.0,
            11.0,
            false,
        );
        let head_h = 14 + 21 * title.len() as u32 + 14 * subtitle.len() as u32 + 6;
        let headings: Vec<Vec<String>> = ladders
            .iter()
            .map(|l| {
                let mut h = format!("{} at {}", l.dtype, short_shape(&l.shape));
                if let Some(v) = l.vendor_gops {
                    let _ = write!(
                        h,
                        " (dashed: {vendor}, {})",
                        fmt::rate(v, l.dtype.rate_unit())
                    );
                }
                wrap(&h, width - 32.0, 12.0, true)
            })
            .collect();
        let panel_h: Vec<u32> = ladders
            .iter()
            .zip(&headings)
            .map(|(l, h)| 12 + 15 * h.len() as u32 + ROW_H * l.rungs.len() as u32 + 30)
            .collect();
        let empty_h = if ladders.is_empty() { 24 } else { 0 };
        let height = head_h + panel_h.iter().sum::<u32>() + empty_h + 8;

        let mut svg = String::new();
        {
            let root =
                SVGBackend::with_string(&mut svg, (width as u32, height)).into_drawing_area();
            // Drawing into a string cannot fail; a failure would only lose a part of the picture.
            let _ = self.draw_ladder_panels(
                &root,
                (&title, &subtitle, head_h),
                &ladders,
                &axes,
                &headings,
                &panel_h,
                left,
                &value_text,
            );
            let _ = root.present();
        }
        svg
    }

    #[allow(clippy::too_many_arguments)]
    fn draw_ladder_panels<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
        (title, subtitle, head_h): (&[String], &[String], u32),
        ladders: &[super::Ladder],
        axes: &[(f64, f64)],
        headings: &[Vec<String>],
        panel_h: &[u32],
        left: f64,
        value_text: &dyn Fn(&Rung, &str) -> String,
    ) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
        root.fill(&WHITE)?;
        // plotters writes font-size = size / 1.24: scaled so that the SVG says `size`.
        let bold = |size: f64| FontDesc::new(FontFamily::Name(FONT), size * 1.24, FontStyle::Bold);
        let plain =
            |size: f64| FontDesc::new(FontFamily::Name(FONT), size * 1.24, FontStyle::Normal);
        let mut y = 14;
        for line in title {
            root.draw(&Text::new(line.clone(), (16, y), bold(17.0).color(&BLACK)))?;
            y += 21;
        }
        for line in subtitle {
            root.draw(&Text::new(
                line.clone(),
                (16, y),
                plain(11.0).color(&RGBColor(0x44, 0x44, 0x44)),
            ))?;
            y += 14;
        }
        let (_, mut rest) = root.split_vertically(head_h);
        if ladders.is_empty() {
            rest.draw(&Text::new(
                "no timed results",
                (16, 4),
                plain(11.0).color(&RGBColor(0x66, 0x66, 0x66)),
            ))?;
        }
        for (((l, &(l0, l1)), heading), &h) in ladders.iter().zip(axes).zip(headings).zip(panel_h) {
            let (area, below) = rest.split_vertically(h);
            rest = below;
            let mut hy = 6;
            for line in heading {
                area.draw(&Text::new(line.clone(), (16, hy), bold(12.0).color(&BLACK)))?;
                hy += 15;
            }
            let n = l.rungs.len();
            let top = hy + 6;
            let (lo, hi) = (10f64.powf(l0), 10f64.powf(l1));
            let plot = area.margin(top as u32, 0, left as u32, 0);
            let plot_w = (AXIS_W + 1.0) as i32;
            let (plot, _) = plot.split_horizontally(plot_w);
            let mut chart = ChartBuilder::on(&plot)
                .x_label_area_size(24)
                .build_cartesian_2d((lo..hi).log_scale(), 0.0..n as f64)?;
            chart
                .configure_mesh()
                .disable_y_mesh()
                .y_labels(0)
                .x_labels((l1 - l0) as usize + 1)
                .light_line_style(WHITE)
                .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
                .axis_style(RGBColor(0x33, 0x33, 0x33))
                .label_style(plain(10.0))
                .x_label_formatter(&|v: &f64| {
                    let d = v.log10();
                    if (d - d.round()).abs() > 1e-6 {
                        return String::new();
                    }
                    let (scale, prefix) = fmt::si_prefix(v * 1e9);
                    format!("{}{prefix}", (v * 1e9 / scale).round())
                })
                .draw()?;
            let color = rgb(dtype_color(l.dtype));
            let grey = RGBColor(0x99, 0x99, 0x99);
            let unit = l.dtype.rate_unit();
            // Row i from the top: y from n - i - 1 to n - i.
            let row = |i: usize| (n - i) as f64 - 0.5;
            chart.draw_series(l.rungs.iter().enumerate().map(|(i, r)| {
                let y = row(i);
                Rectangle::new(
                    [(lo, y - 0.3), (r.rate_gops.max(lo), y + 0.3)],
                    if r.vendor { grey } else { color }.filled(),
                )
            }))?;
            if let Some(v) = l.vendor_gops {
                chart.draw_series(DashedLineSeries::new(
                    [(v, 0.0), (v, n as f64)],
                    4,
                    3,
                    RGBColor(0x22, 0x22, 0x22).stroke_width(1),
                ))?;
            }
            let end = Pos::new(HPos::Right, VPos::Center);
            let start = Pos::new(HPos::Left, VPos::Center);
            chart.draw_series(l.rungs.iter().enumerate().map(|(i, r)| {
                EmptyElement::at((lo, row(i)))
                    + Text::new(
                        r.label.clone(),
                        (-10, 0),
                        plain(11.0).color(&BLACK).pos(end),
                    )
            }))?;
            // Each value on a white ground, legible where a grid line or the dashed line runs.
            chart.draw_series(l.rungs.iter().enumerate().map(|(i, r)| {
                let text = value_text(r, unit);
                let w = text_width(&text, 10.0, false).ceil() as i32;
                EmptyElement::at((r.rate_gops.max(lo), row(i)))
                    + Rectangle::new([(5, -7), (7 + w, 6)], WHITE.filled())
                    + Text::new(text, (6, 0), plain(10.0).color(&BLACK).pos(start))
            }))?;
        }
        Ok(())
    }
}

/// The layout of a plotters SVG as the roofline's tests read theirs: every `<text>`'s estimated
/// box (its baseline from plotters' `dy`) and every coloured `<rect>` (the bars) as a marker, so
/// that `Canvas::check_layout` can tell whether a text leaves the picture, overlaps another or
/// covers a bar. Returns the canvas and the picture's width and height.
#[cfg(test)]
pub(crate) fn layout_of(svg: &str) -> (crate::roofline::canvas::Canvas, f64, f64) {
    use crate::roofline::canvas::{text_box, Anchor, Canvas, Rect, TextKind};
    let attr = |tag: &str, name: &str| -> Option<String> {
        let key = format!(" {name}=\"");
        let start = tag.find(&key)? + key.len();
        Some(tag[start..start + tag[start..].find('"')?].to_string())
    };
    let num = |tag: &str, name: &str| attr(tag, name).and_then(|v| v.parse::<f64>().ok());
    let head = &svg[..svg.find('>').expect("an <svg> tag")];
    let (w, h) = (num(head, "width").unwrap(), num(head, "height").unwrap());
    let mut canvas = Canvas::default();
    let mut rest = svg;
    while let Some(i) = rest.find('<') {
        rest = &rest[i..];
        let end = rest.find('>').expect("a closed tag");
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if tag.starts_with("<rect") {
            let fill = attr(tag, "fill").unwrap_or_default().to_uppercase();
            if fill != "#FFFFFF" && fill != "NONE" {
                let (x, y) = (num(tag, "x").unwrap(), num(tag, "y").unwrap());
                let (rw, rh) = (num(tag, "width").unwrap(), num(tag, "height").unwrap());
                canvas.markers.push(Rect {
                    x0: x,
                    y0: y,
                    x1: x + rw,
                    y1: y + rh,
                });
            }
        } else if tag.starts_with("<text") {
            let close = rest.find("</text>").expect("a closed text");
            let content = rest[..close]
                .trim()
                .replace("&apos;", "'")
                .replace("&quot;", "\"")
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&amp;", "&");
            let size = num(tag, "font-size").unwrap();
            let (x, y) = (num(tag, "x").unwrap(), num(tag, "y").unwrap());
            let baseline = match attr(tag, "dy").as_deref() {
                Some("0.76em") => y + 0.76 * size,
                Some("0.5ex") => y + 0.25 * size,
                _ => y,
            };
            let anchor = match attr(tag, "text-anchor").as_deref() {
                Some("middle") => Anchor::Middle,
                Some("end") => Anchor::End,
                _ => Anchor::Start,
            };
            let bold = attr(tag, "font-weight").as_deref() == Some("bold");
            canvas.texts.push((
                text_box(x, baseline, size, bold, anchor, &content),
                TextKind::Text,
            ));
        }
    }
    (canvas, w, h)
}
