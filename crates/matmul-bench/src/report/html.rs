//! report.html: the Markdown report's content as a standalone page with the SVG inline.

use std::fmt::Write as _;

use crate::fmt::xml_escape;

use super::{Record, Report, Status};

impl Report {
    /// report.html: the Markdown report's content with the SVG inline.
    pub fn to_html(&self) -> String {
        let e = xml_escape;
        let table = |header: &[String], rows: &[Vec<String>], numeric: &[usize]| {
            let mut t = String::from("<table>\n<tr>");
            for h in header {
                let _ = write!(t, "<th>{}</th>", e(h));
            }
            t.push_str("</tr>\n");
            for r in rows {
                t.push_str("<tr>");
                for (i, c) in r.iter().enumerate() {
                    let class = if numeric.contains(&i) {
                        " class=\"num\""
                    } else {
                        ""
                    };
                    let _ = write!(t, "<td{class}>{}</td>", e(c));
                }
                t.push_str("</tr>\n");
            }
            t.push_str("</table>\n");
            t
        };
        let title = format!("matmul benchmark: {}", self.system.device);
        let mut out = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n\
             <style>\nbody {{ font-family: Helvetica, Arial, sans-serif; margin: 2em; color: #222; }}\n\
             table {{ border-collapse: collapse; margin: 1em 0; }}\n\
             th, td {{ border: 1px solid #ccc; padding: 3px 8px; }}\n\
             th {{ background: #f3f3f3; }}\ntd.num {{ text-align: right; font-variant-numeric: tabular-nums; }}\n\
             code, pre {{ background: #f6f6f6; }}\n</style>\n</head>\n<body>\n<h1>{}</h1>\n<ul>\n",
            e(&title),
            e(&title)
        );
        for (k, v) in self.system_lines() {
            let _ = writeln!(out, "<li><b>{}</b>: {}</li>", e(&k), e(&v));
        }
        out.push_str("</ul>\n");
        if let Some(gpu) = &self.system.gpu {
            let _ = writeln!(
                out,
                "<pre>{}</pre>",
                e(&serde_json::to_string_pretty(gpu).unwrap_or_default())
            );
        }
        if let Some(summary) = self.suite.as_ref().and(self.summary()) {
            let (header, rows) = summary.rows();
            out.push_str("<h2>Suite summary</h2>\n");
            let numeric: Vec<usize> = (2..header.len()).filter(|&i| i != 5).collect();
            out.push_str(&table(&header, &rows, &numeric));
            let _ = writeln!(out, "<p>{}</p>", e(&summary.caption(self.suite.as_deref())));
        }
        let ladders = self.ladder_tables();
        if !ladders.is_empty() {
            out.push_str("<h2>Ladder</h2>\n");
            for (heading, header, rows) in &ladders {
                let _ = writeln!(out, "<h3>{}</h3>", e(heading));
                let numeric: Vec<usize> = (1..header.len()).collect();
                out.push_str(&table(header, rows, &numeric));
            }
            let _ = writeln!(out, "<p>{}</p>", e(&self.ladder_caption().replace('`', "")));
            out.push_str(&self.ladder_svg());
        }
        out.push_str("<h2>Results</h2>\n");
        let (header, rows) = self.result_rows();
        if rows.is_empty() {
            out.push_str("<p>No kernel ran.</p>\n");
        } else {
            out.push_str(&table(&header, &rows, &[3, 4, 5, 6, 8, 9]));
        }
        let _ = writeln!(
            out,
            "<p>{}</p>",
            e(&self.results_caption().replace('`', ""))
        );
        let above = self.above_roof_lines();
        if let Some((head, rest)) = above.split_first() {
            let _ = writeln!(out, "<p><b>{}</b></p>\n<ul>", e(head));
            for line in rest {
                let _ = writeln!(out, "<li>{}</li>", e(line));
            }
            out.push_str("</ul>\n");
        }
        out.push_str("<h2>Roofline</h2>\n");
        out.push_str(&self.roofline_svg());
        out.push_str("<h2>Ceilings</h2>\n");
        let ceil = self.ceiling_rows();
        if ceil.is_empty() {
            out.push_str("<p>No ceilings were measured or found in the datasheet table.</p>\n");
        } else {
            out.push_str(&table(
                &["roof".into(), "measured".into(), "datasheet".into()],
                &ceil,
                &[1, 2],
            ));
            out.push_str("<ul>\n");
            for c in [&self.ceilings.measured, &self.ceilings.datasheet]
                .into_iter()
                .flatten()
            {
                let _ = writeln!(out, "<li>{}: {}</li>", e(&c.device), e(&c.source));
            }
            out.push_str("</ul>\n");
        }
        let failed: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.status == Status::Failed)
            .collect();
        if !failed.is_empty() {
            out.push_str("<h2>Failed</h2>\n<ul>\n");
            for r in failed {
                let _ = writeln!(
                    out,
                    "<li><code>{}</code> {} {}: <pre>{}</pre></li>",
                    e(&r.label()),
                    r.dtype,
                    e(&r.shape),
                    e(r.reason.as_deref().unwrap_or(""))
                );
            }
            out.push_str("</ul>\n");
        }
        let skipped = self.skipped_groups();
        if !skipped.is_empty() {
            out.push_str("<h2>Skipped</h2>\n<ul>\n");
            for (what, count, reason) in skipped {
                let _ = writeln!(out, "<li>{} ({count}x): {}</li>", e(&what), e(&reason));
            }
            out.push_str("</ul>\n");
        }
        out.push_str("</body>\n</html>\n");
        out
    }
}
