//! report.html: one self-contained page (it works offline, opened from a file). It opens on a
//! summary (per dtype the best kernel against cuBLAS and against its roof; for a suite run each
//! kernel's geometric mean and worst ratio), then the charts (the ladder per dtype, the roofline,
//! for a suite run the rate per case), then every result in a sortable, filterable table, and
//! last the device and run details, collapsed.
//!
//! The charts are drawn by Chart.js (vendored, `assets/chart.umd.min.js`, embedded whole) from
//! one JSON block ([`super::page`]) in a `<script type="application/json">`, every `<` in it
//! written `\u003c` so no text in it can close the element. The page's own script (`page.js`)
//! records any script error in the root element's `data-errors` and marks each chart's canvas
//! with the pixels it drew (`data-pixels`), so a headless browser can check the page
//! (tests/browser.rs).

use std::fmt::Write as _;

use crate::fmt::{self, xml_escape};

use super::{Record, Report, Status};

/// Chart.js 4.6.1, the minified UMD build (assets/README.md says where it came from).
pub const CHART_JS: &str = include_str!("../../assets/chart.umd.min.js");
/// The version of [`CHART_JS`].
pub const CHART_JS_VERSION: &str = "4.6.1";
/// The page's script: draws the charts from the data block, sorts and filters the table.
const PAGE_JS: &str = include_str!("page.js");
/// The page's style sheet.
const PAGE_CSS: &str = include_str!("page.css");
/// Records script errors before anything else runs.
const ERROR_JS: &str = "(function(){var root=document.documentElement,errors=[];\
function note(m){errors.push(String(m));root.setAttribute('data-errors',JSON.stringify(errors));}\
window.addEventListener('error',function(e){note(e.message||'error');});\
window.addEventListener('unhandledrejection',function(e){note('unhandled rejection: '+e.reason);});\
var ce=console.error;console.error=function(){note(Array.prototype.join.call(arguments,' '));ce.apply(console,arguments);};\
window.__noteError=note;})();";

/// `json` made safe inside a `<script>` element: every `<`, `>` and `&` (which JSON has only
/// inside strings) as a `\u` escape, so nothing in it can end the element or open a comment.
pub fn script_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The vendored Chart.js without its source-map comment (the map is not shipped).
fn chart_js() -> String {
    CHART_JS
        .lines()
        .filter(|l| !l.starts_with("//# sourceMappingURL="))
        .collect::<Vec<_>>()
        .join("\n")
}

/// An HTML table: a header, rows of text cells, the `numeric` columns right-aligned.
pub(super) fn html_table(header: &[String], rows: &[Vec<String>], numeric: &[usize]) -> String {
    let e = xml_escape;
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
}

/// The page around `body`: head, style, the error recorder, then the data block, Chart.js and
/// the page's script at the end of the body.
pub(super) fn page(title: &str, body: &str, data_json: &str) -> String {
    let e = xml_escape;
    let mut out = String::with_capacity(body.len() + CHART_JS.len() + data_json.len() + 8192);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\" data-errors=\"[]\" data-ready=\"0\">\n<head>\n\
         <meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<script>{ERROR_JS}</script>\n<style>\n{PAGE_CSS}</style>\n</head>\n<body>\n",
        e(title)
    );
    out.push_str(body);
    let _ = write!(
        out,
        "<script type=\"application/json\" id=\"report-data\">{}</script>\n\
         <script>/* Chart.js {CHART_JS_VERSION}, MIT License, vendored: assets/README.md */\n{}\n</script>\n\
         <script>\n{PAGE_JS}</script>\n</body>\n</html>\n",
        script_json(data_json),
        chart_js()
    );
    out
}

/// A chart's place: a heading, a sized box and the canvas the page's script draws into.
fn chart_box(out: &mut String, kind: &str, index: usize, title: &str, height: usize) {
    let _ = writeln!(
        out,
        "<figure class=\"chart\"><figcaption>{}</figcaption>\
         <div class=\"chart-box\" style=\"height:{height}px\"><canvas class=\"chart-canvas\" \
         data-chart=\"{kind}\" data-index=\"{index}\" role=\"img\" aria-label=\"{}\"></canvas></div></figure>",
        xml_escape(title),
        xml_escape(title)
    );
}

impl Report {
    /// report.html (see the module's documentation).
    pub fn to_html(&self) -> String {
        let e = xml_escape;
        let title = format!("matmul benchmark: {}", self.system.device);
        let mut out = String::new();
        let device = self.system.device.split(" (").next().unwrap_or("");
        let _ = writeln!(
            out,
            "<header><h1>{}</h1>",
            e(&format!("matmul benchmark: {device}"))
        );
        let mut sub = vec![
            self.system
                .date
                .get(..10)
                .unwrap_or(&self.system.date)
                .to_string(),
            format!("backend {}", self.system.backend),
        ];
        if let Some(s) = &self.suite {
            sub.push(format!("suite {s}"));
        }
        if let Some(c) = &self.system.git_commit {
            sub.push(format!("commit {}", c.get(..12).unwrap_or(c)));
        }
        let _ = writeln!(out, "<p class=\"sub\">{}</p></header>", e(&sub.join(" · ")));

        // The summary.
        out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
        let count = |s: Status| self.records.iter().filter(|r| r.status == s).count();
        let (ok, failed, skipped) = (
            count(Status::Ok),
            count(Status::Failed),
            count(Status::Skipped),
        );
        let _ = writeln!(
            out,
            "<p class=\"counts\"><span class=\"ok\">{ok} OK</span> · <span class=\"{}\">{failed} failed</span> · \
             <span class=\"skipped\">{skipped} skipped</span> of {} cases</p>",
            if failed > 0 { "failed bad" } else { "failed" },
            self.records.len()
        );
        if let Some(why) = &self.partial {
            let _ = writeln!(out, "<p class=\"warn\">Partial run: {}</p>", e(why));
        }
        out.push_str(&self.summary_html());
        if let Some(summary) = self.suite.as_ref().and(self.summary()) {
            let (header, rows) = summary.rows();
            out.push_str("<h2>Suite summary</h2>\n<div class=\"table-wrap\">");
            let numeric: Vec<usize> = (2..header.len()).filter(|&i| i != 5).collect();
            out.push_str(&html_table(&header, &rows, &numeric));
            out.push_str("</div>\n");
            let _ = writeln!(
                out,
                "<p class=\"caption\">{}</p>",
                e(&summary.caption(self.suite.as_deref()).replace('`', ""))
            );
        }
        let above = self.above_roof_lines();
        if let Some((head, rest)) = above.split_first() {
            let _ = writeln!(out, "<div class=\"warn\"><p>{}</p>\n<ul>", e(head));
            for line in rest {
                let _ = writeln!(out, "<li>{}</li>", e(line));
            }
            out.push_str("</ul></div>\n");
        }
        let failures: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.status == Status::Failed)
            .collect();
        if !failures.is_empty() {
            out.push_str("<div class=\"warn\"><p>Failed (the table's FAILED rows):</p>\n<ul>\n");
            for r in failures.iter().take(20) {
                let reason = r.reason.as_deref().unwrap_or("");
                let first = reason.lines().next().unwrap_or("");
                let _ = writeln!(
                    out,
                    "<li><code>{}</code> {} {}: {}</li>",
                    e(&r.label()),
                    r.dtype,
                    e(&r.shape),
                    e(first)
                );
            }
            if failures.len() > 20 {
                let _ = writeln!(out, "<li>and {} more</li>", failures.len() - 20);
            }
            out.push_str("</ul></div>\n");
        }
        out.push_str("</section>\n");

        // The charts.
        let data = self.page_data();
        out.push_str("<section id=\"charts\">\n");
        if !data.ladders.is_empty() {
            out.push_str("<h2>Ladder</h2>\n");
            let _ = writeln!(
                out,
                "<p class=\"caption\">Each dtype's kernels in the registry's ladder order at the shape \
                 the most of them ran; bars: the rate from the median time, on a log scale{}.</p>",
                data.vendor
                    .as_ref()
                    .map_or(String::new(), |v| format!("; dashed line: {}", e(v)))
            );
            out.push_str("<div class=\"grid\">\n");
            for (i, l) in data.ladders.iter().enumerate() {
                chart_box(&mut out, "ladder", i, &l.title, 80 + 28 * l.bars.len());
            }
            out.push_str("</div>\n");
        }
        if data.roofline.is_some() {
            out.push_str("<h2>Roofline</h2>\n");
            let (title, subtitle) = self.roofline_titles();
            let _ = writeln!(
                out,
                "<p class=\"caption\">{}</p>",
                e(&subtitle.replace('\n', ". ").replace(
                    "Markers of one shape that would cover one another are spread sideways around its intensity (dotted line); hollow",
                    "Hollow"
                ))
            );
            chart_box(&mut out, "roofline", 0, &title, 520);
        }
        if !data.shapes.is_empty() {
            out.push_str("<h2>Rate per case</h2>\n");
            let _ = writeln!(
                out,
                "<p class=\"caption\">Every case of the suite in its order, each kernel's rate from its \
                 median time (log scale){}.</p>",
                data.vendor
                    .as_ref()
                    .map_or(String::new(), |v| format!(", {} in grey", e(v)))
            );
            for (i, s) in data.shapes.iter().enumerate() {
                chart_box(
                    &mut out,
                    "shapes",
                    i,
                    &format!("{}: rate per case", s.dtype),
                    380,
                );
            }
        }
        out.push_str("</section>\n");

        // Every result.
        out.push_str(&self.results_table_html());

        // The details, collapsed.
        out.push_str(&self.details_html());
        let json = serde_json::to_string(&data).unwrap_or_else(|_| "{}".into());
        page(&title, &out, &json)
    }

    /// Per dtype, at the ladder's shape: the best kernel other than the vendor's, its rate, its
    /// ratio to the vendor and its share of the roof, and the vendor's own.
    fn summary_html(&self) -> String {
        let e = xml_escape;
        let ladders = self.ladders();
        if ladders.is_empty() {
            return "<p>No kernel was timed.</p>\n".into();
        }
        let vendor = self.baselines.vendor.as_deref();
        let vendor_name = self.vendor_name();
        let roof_text = |r: &Record| {
            let b = r.roof.as_ref().filter(|_| r.status == Status::Ok);
            match b {
                Some(b) if b.above_roof() => super::rows::ABOVE_ROOF.to_string(),
                Some(b) => b.percent.map_or("-".into(), |p| {
                    format!(
                        "{}% of {} ({})",
                        fmt::sig(p, 3),
                        r.roof_name_text(),
                        b.source.name()
                    )
                }),
                None => "-".into(),
            }
        };
        let mut header = vec![
            "dtype".to_string(),
            "shape".into(),
            "best kernel".into(),
            "rate".into(),
        ];
        if let Some(v) = &vendor_name {
            header.push(format!("vs {v}"));
        }
        header.push("of the roof".into());
        if let Some(v) = &vendor_name {
            header.push(format!("{v} rate"));
            header.push(format!("{v} of the roof"));
        }
        let mut rows = Vec::new();
        for l in &ladders {
            let at: Vec<&Record> = self
                .records
                .iter()
                .filter(|r| r.dtype == l.dtype && r.problem == l.problem && r.status == Status::Ok)
                .collect();
            let best = at
                .iter()
                .filter(|r| Some(r.kernel.as_str()) != vendor && !r.is_int8_ceiling())
                .max_by(|a, b| {
                    a.rate_gops
                        .unwrap_or(0.0)
                        .total_cmp(&b.rate_gops.unwrap_or(0.0))
                });
            let base = at.iter().find(|r| Some(r.kernel.as_str()) == vendor);
            let mut row = vec![
                l.dtype.to_string(),
                crate::roofline::short_shape(&l.shape),
                best.map_or("-".into(), |r| r.label()),
                best.map_or("-".into(), |r| r.rate_text()),
            ];
            if vendor_name.is_some() {
                row.push(
                    best.and_then(|r| r.vs_cublas)
                        .map_or("-".into(), |v| format!("{}%", fmt::sig(v * 100.0, 3))),
                );
            }
            row.push(best.map_or("-".into(), |r| roof_text(r)));
            if vendor_name.is_some() {
                row.push(base.map_or("-".into(), |r| r.rate_text()));
                row.push(base.map_or("-".into(), |r| roof_text(r)));
            }
            rows.push(row);
        }
        let mut out = String::from("<div class=\"summary\">\n");
        let numeric: Vec<usize> = (3..header.len()).collect();
        out.push_str(&html_table(&header, &rows, &numeric));
        let _ = writeln!(
            out,
            "<p class=\"caption\">Per dtype at the shape the most kernels ran (the largest on ties): \
             the fastest kernel{}, its rate from the median time{}, and its share of the roof that \
             bounds it (the lower of bandwidth × intensity and the compute peak; measured on this \
             machine where measured, else the datasheet's).</p>\n</div>",
            vendor_name
                .as_ref()
                .map_or(String::new(), |v| format!(" other than {}", e(v))),
            vendor_name.as_ref().map_or(String::new(), |v| format!(
                ", {}'s median time / ours as a percentage (100 % is parity)",
                e(v)
            )),
        );
        out
    }

    /// Every record in one table, with the controls page.js sorts and filters it by.
    fn results_table_html(&self) -> String {
        let e = xml_escape;
        let mut out = String::from("<section id=\"results\">\n<h2>All results</h2>\n");
        let mut dtypes: Vec<String> = Vec::new();
        for r in &self.records {
            let d = r.dtype.to_string();
            if !dtypes.contains(&d) {
                dtypes.push(d);
            }
        }
        out.push_str(
            "<div class=\"controls\"><label>filter <input id=\"filter\" type=\"search\" \
             placeholder=\"kernel, shape, tag...\"></label> <label>dtype <select id=\"filter-dtype\">\
             <option value=\"\">all</option>",
        );
        for d in &dtypes {
            let _ = write!(out, "<option>{}</option>", e(d));
        }
        out.push_str(
            "</select></label> <label>status <select id=\"filter-status\"><option value=\"\">all</option>\
             <option>OK</option><option>FAILED</option><option>SKIPPED</option></select></label> \
             <span id=\"row-count\"></span></div>\n",
        );
        let naive = self.baselines.naive.as_deref().unwrap_or("naive");
        let vendor = self.vendor_header().trim_start_matches("vs ").to_string();
        let errors = self.has_errors();
        let columns: [(&str, bool); 15] = [
            ("kernel", false),
            ("dtype", false),
            ("shape", false),
            ("status", false),
            ("median (ms)", true),
            ("rate", true),
            ("% of VENDOR", true),
            ("× NAIVE", true),
            ("bound roof", false),
            ("% of roof", true),
            ("max err (u)", true),
            ("mean err (u)", true),
            ("verification", false),
            ("tags", false),
            ("note", false),
        ];
        out.push_str("<div class=\"table-wrap\"><table id=\"results-table\" class=\"sortable\">\n<thead><tr>");
        let has_vendor = self.baselines.vendor.is_some();
        for (name, numeric) in columns {
            if name == "% of VENDOR" && !has_vendor || name.contains(" err ") && !errors {
                continue;
            }
            let name = name.replace("VENDOR", &vendor).replace("NAIVE", naive);
            let _ = write!(
                out,
                "<th data-type=\"{}\" tabindex=\"0\">{}</th>",
                if numeric { "num" } else { "text" },
                e(&name)
            );
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        let num = |v: Option<f64>, text: String| match v {
            Some(v) if v.is_finite() => {
                format!("<td class=\"num\" data-v=\"{v}\">{}</td>", e(&text))
            }
            _ => format!("<td class=\"num\" data-v=\"\">{}</td>", e(&text)),
        };
        for r in &self.records {
            let _ = write!(
                out,
                "<tr data-status=\"{}\" data-dtype=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td class=\"st-{}\">{}</td>",
                r.status.name(),
                r.dtype,
                e(&r.label()),
                r.dtype,
                e(&r.shape),
                r.status.name().to_lowercase(),
                r.status.name()
            );
            let median = r.median_s().filter(|_| r.status == Status::Ok);
            out.push_str(&num(
                median.map(|t| t * 1e3),
                median.map_or("-".into(), |t| fmt::sig(t * 1e3, 4)),
            ));
            out.push_str(&num(r.rate_gops, r.rate_text()));
            if has_vendor {
                out.push_str(&num(
                    r.vs_cublas.map(|v| v * 100.0),
                    r.vs_cublas.map_or("-".into(), |v| fmt::sig(v * 100.0, 3)),
                ));
            }
            out.push_str(&num(
                r.vs_naive,
                r.vs_naive.map_or("-".into(), |v| fmt::sig(v, 3)),
            ));
            let _ = write!(out, "<td>{}</td>", e(&r.roof_name_text()));
            let pct = r
                .roof
                .as_ref()
                .filter(|_| r.status == Status::Ok)
                .and_then(|b| b.percent);
            out.push_str(&num(pct, r.roof_percent_text()));
            if errors {
                let (max, mean) = r.error_texts();
                let e = r.error();
                out.push_str(&num(e.and_then(|e| e.max_u), max));
                out.push_str(&num(e.and_then(|e| e.mean_u), mean));
            }
            let verification = match (&r.verification, r.status) {
                (Some(v), _) => v.summary(),
                (None, Status::Failed) => "not verified (run failed)".into(),
                _ => "-".into(),
            };
            let note = match r.status {
                Status::Ok => String::new(),
                _ => r.reason.clone().unwrap_or_default(),
            };
            let _ = writeln!(
                out,
                "<td class=\"verif\">{}</td><td>{}</td><td class=\"note\">{}</td></tr>",
                e(&verification),
                e(&r.tags.join(", ")),
                e(&note)
            );
        }
        out.push_str("</tbody></table></div>\n");
        let _ = writeln!(
            out,
            "<p class=\"caption\">Click a column's header to sort by it. {}</p>\n</section>",
            e(&self.results_caption().replace('`', ""))
        );
        out
    }

    /// The device, the run's settings, the ceilings and the skipped cases, in a collapsed
    /// `<details>`.
    fn details_html(&self) -> String {
        let e = xml_escape;
        let mut out = String::from(
            "<details id=\"details\">\n<summary>Device and run details</summary>\n<ul>\n",
        );
        for (k, v) in self.system_lines() {
            let _ = writeln!(out, "<li><b>{}</b>: {}</li>", e(&k), e(&v));
        }
        out.push_str("</ul>\n<h3>Ceilings</h3>\n");
        let ceil = self.ceiling_rows();
        if ceil.is_empty() {
            out.push_str("<p>No ceilings were measured or found in the datasheet table.</p>\n");
        } else {
            out.push_str(&html_table(
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
        let ladders = self.ladder_tables();
        if !ladders.is_empty() {
            out.push_str("<h3>Ladder tables</h3>\n");
            for (heading, header, rows) in &ladders {
                let _ = writeln!(out, "<h4>{}</h4>", e(heading));
                let numeric: Vec<usize> = (1..header.len()).collect();
                out.push_str(&html_table(header, rows, &numeric));
            }
            let _ = writeln!(
                out,
                "<p class=\"caption\">{}</p>",
                e(&self.ladder_caption().replace('`', ""))
            );
        }
        let skipped = self.skipped_groups();
        if !skipped.is_empty() {
            out.push_str("<h3>Skipped</h3>\n<ul>\n");
            for (what, count, reason) in skipped {
                let _ = writeln!(out, "<li>{} ({count}x): {}</li>", e(&what), e(&reason));
            }
            out.push_str("</ul>\n");
        }
        if let Some(gpu) = &self.system.gpu {
            let _ = writeln!(
                out,
                "<h3>GPU properties</h3>\n<pre>{}</pre>",
                e(&serde_json::to_string_pretty(gpu).unwrap_or_default())
            );
        }
        out.push_str("</details>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::synthetic_report;

    #[test]
    fn data_block_cannot_close_its_element() {
        let s = script_json(r#"{"a":"</script><!-- & \u2028"}"#);
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["a"], "</script><!-- & \u{2028}");
    }

    #[test]
    fn page_is_self_contained_with_a_chart_per_ladder_and_a_row_per_record() {
        let mut report = synthetic_report();
        report.records[0].kernel = "</script><script>alert(1)</script>".into();
        let html = report.to_html();
        assert!(CHART_JS.starts_with("/*!\n * Chart.js v4.6.1"));
        assert!(CHART_JS.len() < 1 << 20);
        // No external resource: every script is inline.
        assert!(!html.contains("src=\"http") && !html.contains("<link"));
        assert_eq!(html.matches("<script").count(), 4);
        assert_eq!(
            html.matches("</script>").count(),
            4,
            "nothing closes a script early"
        );
        // The data block parses and carries what the canvases draw.
        let start = html.find("id=\"report-data\">").unwrap() + "id=\"report-data\">".len();
        let end = start + html[start..].find("</script>").unwrap();
        let data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
        assert_eq!(data["ladders"].as_array().unwrap().len(), 4);
        assert_eq!(
            html.matches("data-chart=\"ladder\"").count(),
            data["ladders"].as_array().unwrap().len()
        );
        let roof = &data["roofline"];
        let points: usize = roof["series"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["points"].as_array().unwrap().len())
            .sum();
        assert_eq!(
            points,
            report.plot_points().len(),
            "the roofline.svg's points"
        );
        assert!(roof["roofs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["label"] == "memory 3.00 TB/s (measured)"));
        let tip = data["ladders"][0]["bars"][0]["tip"].as_array().unwrap();
        assert!(tip
            .iter()
            .any(|l| l.as_str().unwrap().starts_with("verification: ")));
        // The table: one row per record, the summary and the details.
        let tbody = &html[html.find("<tbody>").unwrap()..html.find("</tbody>").unwrap()];
        assert_eq!(tbody.matches("<tr ").count(), report.records.len());
        assert!(html.contains("&lt;/script&gt;&lt;script&gt;alert(1)"));
        assert!(html.find("id=\"summary\"").unwrap() < html.find("id=\"charts\"").unwrap());
        assert!(html.find("id=\"results\"").unwrap() < html.find("<details").unwrap());
        assert!(!html.contains("data-chart=\"shapes\""), "not a suite run");
    }
}
