//! Text renderers: the aligned table for stdout and report.md.

use std::fmt::Write as _;

use crate::fmt;

use super::{Record, Report, Status};

impl Report {
    /// A compact aligned table for stdout: OK and FAILED rows, then skipped cases grouped.
    pub fn table(&self) -> String {
        let naive = self.baselines.naive.as_deref().unwrap_or("naive");
        let vendor_h = self.vendor_header();
        let header = [
            "kernel",
            "dtype",
            "shape",
            "median",
            "rate",
            vendor_h.as_str(),
            "vs naive",
            "roof",
            "max err",
            "mean err",
            "status",
        ];
        let rounds = self.settings.rounds > 1;
        let u32_ratios = self.has_u32_ratios();
        let rows: Vec<Vec<String>> = self
            .records
            .iter()
            .filter(|r| r.status != Status::Skipped)
            .map(|r| {
                let mut row = vec![
                    r.label(),
                    r.dtype.to_string(),
                    r.shape.clone(),
                    r.median_s().map_or("-".into(), fmt::time),
                    r.rate_text(),
                    r.vs_cublas
                        .map_or("-".into(), |v| format!("{}%", fmt::sig(v * 100.0, 3))),
                    r.vs_naive
                        .map_or("-".into(), |v| format!("{}x", fmt::sig(v, 3))),
                    r.roof_text(),
                ];
                let (max, mean) = r.error_texts();
                row.extend([max, mean, r.status.name().to_string()]);
                if u32_ratios {
                    row.extend(r.u32_ratio_texts());
                }
                if rounds {
                    row.push(
                        r.round_spread()
                            .map_or("-".into(), |s| format!("{}%", fmt::sig(s * 100.0, 2))),
                    );
                }
                row
            })
            .collect();
        let mut header = header.to_vec();
        let mut right = vec![
            false, false, false, true, true, true, true, true, true, true, false,
        ];
        if u32_ratios {
            header.extend(super::rows::U32_RATIO_HEADERS);
            right.extend([true, true]);
        }
        if rounds {
            header.push("spread");
            right.push(true);
        }
        let mut out = fmt::align(&header, &rows, &right);
        if rows.is_empty() {
            out.push_str("(no kernel ran)\n");
        }
        let source = self.intensity_source();
        let _ = writeln!(
            out,
            "vs naive = speedup over `{naive}`; roof = % of the bounding roof (intensity: {source})"
        );
        if self.has_errors() {
            let _ = writeln!(out, "{}", super::rows::ERROR_CAPTION.replace('`', ""));
        }
        if u32_ratios {
            let _ = writeln!(out, "{}", super::rows::U32_RATIO_CAPTION.replace('`', ""));
        }
        for line in self.above_roof_lines() {
            let _ = writeln!(out, "{line}");
        }
        if rounds {
            let _ = writeln!(
                out,
                "{} timing rounds per shape, kernels rotated each round; spread = (slowest − fastest round median) / median",
                self.settings.rounds
            );
        }
        for r in self.records.iter().filter(|r| r.status == Status::Failed) {
            let _ = writeln!(
                out,
                "FAILED {} {} {}: {}",
                r.label(),
                r.dtype,
                r.shape,
                r.reason.as_deref().unwrap_or("")
            );
        }
        if let Some(line) = self.skipped_line() {
            let _ = writeln!(out, "{line}");
        }
        if let Some(summary) = self.suite.as_ref().and(self.summary()) {
            let (header, rows) = summary.rows();
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            let right: Vec<bool> = (0..header.len()).map(|i| i >= 2 && i != 5).collect();
            out.push('\n');
            out.push_str(&fmt::align(&header, &rows, &right));
            let _ = writeln!(out, "{}", summary.caption(self.suite.as_deref()));
        }
        out
    }

    /// report.md: system, the suite summary, the ladder (tables and `ladder.svg` beside
    /// `svg_path`), the results table, the roofline image (`svg_path`), ceilings, problems.
    pub fn to_markdown(&self, svg_path: &str) -> String {
        let md = |s: &str| s.replace('|', "\\|").replace('\n', " ");
        let table = |header: &[String], rows: &[Vec<String>]| {
            let mut t = format!(
                "| {} |\n",
                header.iter().map(|h| md(h)).collect::<Vec<_>>().join(" | ")
            );
            t.push_str(&format!("|{}\n", "---|".repeat(header.len())));
            for r in rows {
                t.push_str(&format!(
                    "| {} |\n",
                    r.iter().map(|c| md(c)).collect::<Vec<_>>().join(" | ")
                ));
            }
            t
        };
        let mut out = format!("# matmul benchmark: {}\n\n", md(&self.system.device));
        if let Some(why) = &self.partial {
            let _ = writeln!(
                out,
                "**Partial run** ({}): only the cases below were measured.\n",
                md(why)
            );
        }
        for (k, v) in self.system_lines() {
            let _ = writeln!(out, "- **{k}**: {}", md(&v));
        }
        if let Some(gpu) = &self.system.gpu {
            let _ = writeln!(
                out,
                "\nGPU:\n\n```json\n{}\n```",
                serde_json::to_string_pretty(gpu).unwrap_or_default()
            );
        }
        if let Some(summary) = self.suite.as_ref().and(self.summary()) {
            let (header, rows) = summary.rows();
            out.push_str("\n## Suite summary\n\n");
            out.push_str(&table(&header, &rows));
            let _ = writeln!(out, "\n{}", summary.caption(self.suite.as_deref()));
        }
        let ladders = self.ladder_tables();
        if !ladders.is_empty() {
            let image = std::path::Path::new(svg_path).with_file_name("ladder.svg");
            out.push_str("\n## Ladder\n\n");
            for (heading, header, rows) in &ladders {
                let _ = writeln!(out, "### {heading}\n");
                out.push_str(&table(header, rows));
                out.push('\n');
            }
            let _ = writeln!(
                out,
                "{}\n\n![ladder]({})",
                self.ladder_caption(),
                image.display()
            );
        }
        let (header, rows) = self.result_rows();
        out.push_str("\n## Results\n\n");
        if rows.is_empty() {
            out.push_str("No kernel ran.\n");
        } else {
            out.push_str(&table(&header, &rows));
        }
        let _ = writeln!(out, "\n{}", self.results_caption());
        if self.has_u32_ratios() {
            let _ = writeln!(out, "\n{}", super::rows::U32_RATIO_CAPTION);
        }
        let above = self.above_roof_lines();
        if !above.is_empty() {
            let _ = writeln!(out, "\n**{}**\n", md(&above[0]));
            for line in &above[1..] {
                let _ = writeln!(out, "- {}", md(line));
            }
        }
        let _ = writeln!(out, "\n## Roofline\n\n![roofline]({svg_path})\n");
        out.push_str("## Ceilings\n\n");
        let ceil = self.ceiling_rows();
        if ceil.is_empty() {
            out.push_str("No ceilings were measured or found in the datasheet table.\n");
        } else {
            out.push_str(&table(
                &["roof".into(), "measured".into(), "datasheet".into()],
                &ceil,
            ));
            out.push('\n');
            for c in [&self.ceilings.measured, &self.ceilings.datasheet]
                .into_iter()
                .flatten()
            {
                let _ = writeln!(out, "- {}: {}", md(&c.device), md(&c.source));
            }
        }
        let failed: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.status == Status::Failed)
            .collect();
        if !failed.is_empty() {
            out.push_str("\n## Failed\n\n");
            for r in failed {
                let _ = writeln!(
                    out,
                    "- `{}` {} {}: {}",
                    r.label(),
                    r.dtype,
                    r.shape,
                    md(r.reason.as_deref().unwrap_or(""))
                );
            }
        }
        let skipped = self.skipped_groups();
        if !skipped.is_empty() {
            out.push_str("\n## Skipped\n\n");
            for (what, count, reason) in skipped {
                let _ = writeln!(out, "- {what} ({count}x): {}", md(&reason));
            }
        }
        out
    }
}
