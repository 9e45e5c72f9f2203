//! Number and text-table formatting shared by the table, Markdown, HTML and SVG renderers and
//! the CLI.

/// `x` with about `sig` significant digits, never in scientific notation for ordinary magnitudes
/// (1e-9 ≤ |x| < 1e15).
pub fn sig(x: f64, sig: usize) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    if !x.is_finite() {
        return x.to_string();
    }
    let mag = x.abs().log10().floor() as i64;
    if !(-9..15).contains(&mag) {
        return format!("{x:.*e}", sig.saturating_sub(1));
    }
    let decimals = (sig as i64 - 1 - mag).clamp(0, 12) as usize;
    format!("{x:.decimals$}")
}

/// A rate given in G units per second, with an SI prefix: `rate(51_800.0, "FLOP")` →
/// "51.8 TFLOP/s".
pub fn rate(gops: f64, unit: &str) -> String {
    let per_s = gops * 1e9;
    let (scale, prefix) = si_prefix(per_s);
    format!("{} {prefix}{unit}/s", sig(per_s / scale, 3))
}

/// (divisor, prefix) so that `x / divisor` lies in [1, 1000) where possible.
pub fn si_prefix(x: f64) -> (f64, &'static str) {
    const PREFIXES: [(f64, &str); 7] = [
        (1e18, "E"),
        (1e15, "P"),
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1.0, ""),
    ];
    PREFIXES
        .iter()
        .find(|(s, _)| x.abs() >= *s)
        .copied()
        .unwrap_or((1.0, ""))
}

/// Seconds as "1.23 s", "12.3 ms", "45.6 µs" or "789 ns".
pub fn time(s: f64) -> String {
    let (v, unit) = if s >= 1.0 {
        (s, "s")
    } else if s >= 1e-3 {
        (s * 1e3, "ms")
    } else if s >= 1e-6 {
        (s * 1e6, "µs")
    } else {
        (s * 1e9, "ns")
    };
    format!("{} {unit}", sig(v, 3))
}

/// A bandwidth in GB/s as "3.35 TB/s" / "21.4 GB/s".
pub fn bandwidth(gbs: f64) -> String {
    let per_s = gbs * 1e9;
    let (scale, prefix) = si_prefix(per_s);
    format!("{} {prefix}B/s", sig(per_s / scale, 3))
}

/// A byte count with a binary prefix: "64 KiB", "50 MiB", "1.50 GiB".
pub fn bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    format!("{} {}", sig(v, 3), UNITS[i])
}

/// Left- or right-aligned columns separated by two spaces; `right[i]` right-aligns column i.
pub fn align(header: &[&str], rows: &[Vec<String>], right: &[bool]) -> String {
    let cols = header.len();
    let width = |s: &str| s.chars().count();
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, cell) in cells.enumerate().take(cols) {
            let pad = widths[i].saturating_sub(width(cell));
            if i > 0 {
                out.push_str("  ");
            }
            if right.get(i).copied().unwrap_or(false) {
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            } else {
                out.push_str(cell);
                if i + 1 < cols {
                    out.push_str(&" ".repeat(pad));
                }
            }
        }
        out.trim_end().to_string()
    };
    let mut out = line(&mut header.iter().copied());
    out.push('\n');
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
        out.push('\n');
    }
    out
}

/// Left-aligned columns separated by two spaces, under a header and a rule of dashes (the
/// style of `matmul list`); lines end without trailing spaces, and a short row's missing cells
/// are left empty.
pub fn ruled_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .chain([header[c].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let mut out = vec![
        line(header.to_vec()),
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("  "),
    ];
    out.extend(
        rows.iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    out.join("\n")
}

/// Escapes text for XML / HTML content and attribute values.
pub fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}

/// A size as sysfs writes it (`512`, `48K`, `32M`, `1G`), in bytes.
pub(crate) fn parse_size(s: &str) -> Option<usize> {
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1 << 10),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<usize>().ok().map(|n| n * mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(sig(51.834, 3), "51.8");
        assert_eq!(sig(0.012345, 3), "0.0123");
        assert_eq!(sig(1234.6, 3), "1235");
        assert_eq!(rate(51_800.0, "FLOP"), "51.8 TFLOP/s");
        assert_eq!(rate(8.9e3, "OP"), "8.90 TOP/s");
        assert_eq!(rate(0.5, "FLOP"), "500 MFLOP/s");
        assert_eq!(time(0.001234), "1.23 ms");
        assert_eq!(time(2.5e-6), "2.50 µs");
        assert_eq!(bandwidth(3350.0), "3.35 TB/s");
        assert_eq!(bytes(64 << 10), "64.0 KiB");
        assert_eq!(bytes(100 << 20), "100 MiB");
        assert_eq!(xml_escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let t = align(
            &["a", "bb"],
            &[vec!["xyz".into(), "1".into()]],
            &[false, true],
        );
        assert_eq!(t, "a    bb\nxyz   1\n");
        let t = ruled_table(&["a", "bb"], &[vec!["xyz".into(), "1".into()]]);
        assert_eq!(t, "a    bb\n---  --\nxyz  1");
        assert_eq!(ruled_table(&["a", "b"], &[vec![]]), "a  b\n-  -\n");
    }
}
