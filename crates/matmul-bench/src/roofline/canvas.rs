//! A small SVG canvas that knows where its text is. Every text element's box is estimated from
//! DejaVu Sans's advance widths (wider than Helvetica's and Arial's, which a viewer may use
//! instead, so the estimate errs on the large side) and kept, so that a layout can place labels
//! where nothing else is, and tests can check that no text overlaps another or leaves the canvas.

use std::fmt::Write as _;

use crate::fmt::xml_escape;

/// An axis-aligned rectangle in SVG user units (y grows downwards).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    /// The rectangle centred on (x, y) with half-extents (hw, hh).
    pub fn around(x: f64, y: f64, hw: f64, hh: f64) -> Rect {
        Rect {
            x0: x - hw,
            y0: y - hh,
            x1: x + hw,
            y1: y + hh,
        }
    }

    /// Whether the interiors intersect.
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }

    /// Whether `self` lies within `o` (edges included).
    pub fn inside(&self, o: &Rect) -> bool {
        self.x0 >= o.x0 - 1e-9
            && self.x1 <= o.x1 + 1e-9
            && self.y0 >= o.y0 - 1e-9
            && self.y1 <= o.y1 + 1e-9
    }

    /// Grown by `m` on every side.
    pub fn grown(&self, m: f64) -> Rect {
        Rect {
            x0: self.x0 - m,
            y0: self.y0 - m,
            x1: self.x1 + m,
            y1: self.y1 + m,
        }
    }

    /// Whether the segment from `a` to `b` passes through the rectangle's interior.
    pub fn hit_by(&self, a: (f64, f64), b: (f64, f64)) -> bool {
        // Liang–Barsky clipping of the segment against the rectangle.
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        for (p, q) in [
            (-dx, a.0 - self.x0),
            (dx, self.x1 - a.0),
            (-dy, a.1 - self.y0),
            (dy, self.y1 - a.1),
        ] {
            if p == 0.0 {
                if q <= 0.0 {
                    return false;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
                if t0 >= t1 {
                    return false;
                }
            }
        }
        true
    }
}

/// DejaVu Sans advance widths of ASCII 32..=126, in units of 1/2048 em.
const REGULAR: [u16; 95] = [
    651, 821, 942, 1716, 1303, 1946, 1597, 563, 799, 799, 1024, 1716, 651, 739, 651, 690, 1303,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690, 690, 1716, 1716, 1716, 1087, 2048,
    1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604, 604, 1343, 1141, 1767, 1532, 1612, 1235,
    1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403, 1251, 1403, 799, 690, 799, 1716, 1024, 1024,
    1255, 1300, 1126, 1300, 1260, 721, 1300, 1298, 569, 569, 1186, 569, 1995, 1298, 1253, 1300,
    1300, 842, 1067, 803, 1298, 1212, 1675, 1212, 1212, 1075, 1303, 690, 1303, 1716,
];
/// DejaVu Sans Bold advance widths of ASCII 32..=126, in units of 1/2048 em.
const BOLD: [u16; 95] = [
    713, 934, 1067, 1716, 1425, 2052, 1786, 627, 936, 936, 1071, 1716, 778, 850, 778, 748, 1425,
    1425, 1425, 1425, 1425, 1425, 1425, 1425, 1425, 1425, 819, 819, 1716, 1716, 1716, 1188, 2048,
    1585, 1561, 1503, 1700, 1399, 1399, 1681, 1714, 762, 762, 1587, 1305, 2038, 1714, 1741, 1501,
    1741, 1577, 1475, 1397, 1663, 1585, 2259, 1579, 1483, 1485, 936, 748, 936, 1716, 1024, 1024,
    1382, 1466, 1214, 1466, 1389, 891, 1466, 1458, 702, 702, 1362, 702, 2134, 1458, 1407, 1466,
    1466, 1010, 1219, 979, 1458, 1335, 1892, 1321, 1335, 1192, 1458, 748, 1458, 1716,
];

/// The estimated width of `s` at font size `size` (a character outside ASCII counts as 1 em,
/// wider than any of the symbols the reports use).
pub(crate) fn text_width(s: &str, size: f64, bold: bool) -> f64 {
    let table = if bold { &BOLD } else { &REGULAR };
    let units: u32 = s
        .chars()
        .map(|c| match c as u32 {
            32..=126 => table[c as usize - 32] as u32,
            _ => 2048,
        })
        .sum();
    units as f64 / 2048.0 * size
}

/// `s` broken at spaces into lines no wider than `max_width` (a single word wider than that
/// is broken between characters).
pub(crate) fn wrap(s: &str, max_width: f64, size: f64, bold: bool) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in s.split(' ').filter(|w| !w.is_empty()) {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if text_width(&candidate, size, bold) <= max_width {
            line = candidate;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        // The word alone; split it if it is still too wide.
        for c in word.chars() {
            line.push(c);
            if text_width(&line, size, bold) > max_width && line.chars().count() > 1 {
                let last = line.pop().expect("two characters");
                lines.push(std::mem::take(&mut line));
                line.push(last);
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Where a text's x is: its start, its middle or its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

/// What a text is, for the tests' overlap checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextKind {
    /// Ordinary text: it may overlap nothing.
    Text,
    /// A number inside its own marker: it may overlap that marker, nothing else.
    InMarker,
    /// One of the boxes that together cover a rotated text (numbered per text): they may
    /// overlap one another, nothing else.
    Piece(usize),
}

/// An SVG document under construction: its elements and the boxes of its texts and markers.
#[derive(Debug, Default)]
pub(crate) struct Canvas {
    /// The elements, in drawing order.
    pub body: String,
    /// Every text's estimated box and kind.
    pub texts: Vec<(Rect, TextKind)>,
    /// The plotted markers' boxes (texts other than their own numbers may not overlap them).
    pub markers: Vec<Rect>,
}

impl Canvas {
    /// Appends raw SVG.
    pub fn raw(&mut self, s: &str) {
        self.body.push_str(s);
        if !s.ends_with('\n') {
            self.body.push('\n');
        }
    }

    /// A text at baseline (x, y); `attrs` are extra attributes (fill, class, ...). Returns and
    /// records its box.
    #[allow(clippy::too_many_arguments)]
    pub fn text(
        &mut self,
        x: f64,
        y: f64,
        size: f64,
        bold: bool,
        anchor: Anchor,
        attrs: &str,
        content: &str,
    ) -> Rect {
        let r = text_box(x, y, size, bold, anchor, content);
        let anchor_attr = match anchor {
            Anchor::Start => "",
            Anchor::Middle => r#" text-anchor="middle""#,
            Anchor::End => r#" text-anchor="end""#,
        };
        let weight = if bold { r#" font-weight="bold""# } else { "" };
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}"{weight}{anchor_attr}{}{}>{}</text>"#,
            if attrs.is_empty() { "" } else { " " },
            attrs,
            xml_escape(content)
        );
        self.texts.push((r, TextKind::Text));
        r
    }

    /// The document: an `<svg>` of `width` × `height` with a white background around the body.
    pub fn finish(&self, width: f64, height: f64) -> String {
        let mut s = String::with_capacity(self.body.len() + 400);
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="Helvetica, Arial, sans-serif">"#
        );
        let _ = writeln!(
            s,
            r#"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="white"/>"#
        );
        s.push_str(&self.body);
        s.push_str("</svg>\n");
        s
    }

    #[cfg(test)]
    /// What the tests check: every text inside `width` × `height`, no two texts overlapping, and
    /// no text over a marker other than a number over its own. Returns the first problem.
    pub fn check_layout(&self, width: f64, height: f64) -> Result<(), String> {
        let page = Rect {
            x0: 0.0,
            y0: 0.0,
            x1: width,
            y1: height,
        };
        for (i, (a, kind)) in self.texts.iter().enumerate() {
            if !a.inside(&page) {
                return Err(format!(
                    "text {i} at {a:?} leaves the {width:.0}x{height:.0} canvas"
                ));
            }
            for (j, (b, other)) in self.texts.iter().enumerate().skip(i + 1) {
                let same =
                    matches!((kind, other), (TextKind::Piece(x), TextKind::Piece(y)) if x == y);
                if !same && a.grown(-0.5).overlaps(&b.grown(-0.5)) {
                    return Err(format!("texts {i} {a:?} and {j} {b:?} overlap"));
                }
            }
            if *kind != TextKind::InMarker {
                if let Some(m) = self.markers.iter().find(|m| a.overlaps(m)) {
                    return Err(format!("text {i} {a:?} covers the marker at {m:?}"));
                }
            }
        }
        Ok(())
    }
}

/// The box of a text at baseline (x, y): DejaVu's ascent above, its descent below.
pub(crate) fn text_box(x: f64, y: f64, size: f64, bold: bool, anchor: Anchor, s: &str) -> Rect {
    let w = text_width(s, size, bold);
    let x0 = match anchor {
        Anchor::Start => x,
        Anchor::Middle => x - w / 2.0,
        Anchor::End => x - w,
    };
    Rect {
        x0,
        y0: y - 0.8 * size,
        x1: x0 + w,
        y1: y + 0.24 * size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_wrapping_and_hits() {
        assert_eq!(text_width("0", 2048.0, false), 1303.0);
        assert!(text_width("WWW", 11.0, true) > text_width("WWW", 11.0, false));
        assert_eq!(text_width("⚠", 10.0, false), 10.0);
        let lines = wrap(
            "aaa bbb ccc",
            text_width("aaa bbb", 11.0, false),
            11.0,
            false,
        );
        assert_eq!(lines, ["aaa bbb", "ccc"]);
        let lines = wrap("abcdef", text_width("abc", 11.0, false), 11.0, false);
        assert_eq!(lines, ["abc", "def"]);
        assert_eq!(wrap("", 10.0, 11.0, false), [""]);
        let r = Rect::around(0.0, 0.0, 1.0, 1.0);
        assert!(r.hit_by((-5.0, 0.0), (5.0, 0.0)));
        assert!(r.hit_by((-5.0, -5.0), (5.0, 5.0)));
        assert!(!r.hit_by((-5.0, 2.0), (5.0, 2.0)));
        assert!(!r.hit_by((2.0, -5.0), (2.0, 5.0)));
        assert!(!r.hit_by((-5.0, 0.0), (-2.0, 0.0)));
        let mut c = Canvas::default();
        c.text(10.0, 20.0, 11.0, false, Anchor::Start, "", "ab");
        assert!(c.check_layout(100.0, 100.0).is_ok());
        c.text(12.0, 22.0, 11.0, false, Anchor::Start, "", "cd");
        assert!(c
            .check_layout(100.0, 100.0)
            .unwrap_err()
            .contains("overlap"));
        assert!(c.check_layout(15.0, 100.0).unwrap_err().contains("leaves"));
    }
}
