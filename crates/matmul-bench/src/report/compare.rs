//! Two runs side by side (`matmul report A.json --compare B.json`): per case both ran (same
//! kernel, same problem) the two rates and their ratio, B's median time / A's (above 1: A is
//! faster), and per kernel × dtype the geometric mean and worst of those ratios. As Markdown
//! (compare.md, and stdout) and as a page like report.html (compare.html).

use std::fmt::Write as _;

use serde::Serialize;

use matmul::{DType, Problem};

use crate::fmt::{self, xml_escape};

use super::html::{html_table, page};
use super::summary::{ratio_text, Aggregate};
use super::{Record, Report, Status};

/// One kernel × problem found in either run.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseComparison {
    /// Registry name.
    pub kernel: String,
    /// The element type.
    pub dtype: DType,
    /// The shape label.
    pub shape: String,
    /// The problem.
    pub problem: Problem,
    /// A's status, None when A has no such case.
    pub status_a: Option<Status>,
    /// B's status, None when B has no such case.
    pub status_b: Option<Status>,
    /// A's rate, G(FL)OP/s (None unless timed).
    pub rate_a: Option<f64>,
    /// B's rate.
    pub rate_b: Option<f64>,
    /// B's median time / A's: above 1, A is faster (None unless both were timed).
    pub ratio: Option<f64>,
}

/// A run compared with another.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// How the pages name run A (its file) and its device and date.
    pub a: (String, String),
    /// The same for run B.
    pub b: (String, String),
    /// Every kernel × problem of A, in A's order, then those only B has.
    pub cases: Vec<CaseComparison>,
}

/// One kernel × dtype over the cases both runs timed.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareRow {
    /// The dtype.
    pub dtype: DType,
    /// The kernel.
    pub kernel: String,
    /// The ratios' geometric mean and worst; `missing`: cases that only one run timed.
    pub aggregate: Aggregate,
    /// The highest ratio.
    pub best: Option<f64>,
}

fn timed(r: &Record) -> Option<f64> {
    r.median_s()
        .filter(|t| r.status == Status::Ok && *t > 0.0 && t.is_finite())
}

fn run_line(report: &Report) -> String {
    let date = report.system.date.get(..10).unwrap_or(&report.system.date);
    format!("{}, {date}", report.system.device)
}

impl Comparison {
    /// `a` (named `a_name`) against `b`.
    pub fn new(a: &Report, a_name: &str, b: &Report, b_name: &str) -> Comparison {
        let mut cases = Vec::new();
        let find = |rep: &Report, r: &Record| {
            rep.records
                .iter()
                .find(|x| x.kernel == r.kernel && x.problem == r.problem)
                .cloned()
        };
        for r in &a.records {
            if cases
                .iter()
                .any(|c: &CaseComparison| c.kernel == r.kernel && c.problem == r.problem)
            {
                continue;
            }
            let other = find(b, r);
            let ratio = match (timed(r), other.as_ref().and_then(timed)) {
                (Some(ta), Some(tb)) => Some(tb / ta),
                _ => None,
            };
            cases.push(CaseComparison {
                kernel: r.kernel.clone(),
                dtype: r.dtype,
                shape: r.shape.clone(),
                problem: r.problem,
                status_a: Some(r.status),
                status_b: other.as_ref().map(|o| o.status),
                rate_a: r.rate_gops.filter(|_| r.status == Status::Ok),
                rate_b: other
                    .as_ref()
                    .and_then(|o| o.rate_gops.filter(|_| o.status == Status::Ok)),
                ratio,
            });
        }
        for r in &b.records {
            if find(a, r).is_some()
                || cases
                    .iter()
                    .any(|c| c.kernel == r.kernel && c.problem == r.problem)
            {
                continue;
            }
            cases.push(CaseComparison {
                kernel: r.kernel.clone(),
                dtype: r.dtype,
                shape: r.shape.clone(),
                problem: r.problem,
                status_a: None,
                status_b: Some(r.status),
                rate_a: None,
                rate_b: r.rate_gops.filter(|_| r.status == Status::Ok),
                ratio: None,
            });
        }
        Comparison {
            a: (a_name.to_string(), run_line(a)),
            b: (b_name.to_string(), run_line(b)),
            cases,
        }
    }

    /// The cases both runs timed.
    pub fn matched(&self) -> usize {
        self.cases.iter().filter(|c| c.ratio.is_some()).count()
    }

    /// The geometric mean of every ratio (None when no case was timed by both).
    pub fn geomean(&self) -> Option<f64> {
        let ratios: Vec<(f64, &str)> = self
            .cases
            .iter()
            .filter_map(|c| c.ratio.map(|r| (r, c.shape.as_str())))
            .collect();
        Aggregate::of(&ratios, 0).geomean
    }

    /// Per kernel × dtype (in case order): the ratios' aggregate; `missing` counts the cases of
    /// the pair that either run has and not both timed.
    pub fn rows(&self) -> Vec<CompareRow> {
        let mut keys: Vec<(DType, &str)> = Vec::new();
        for c in &self.cases {
            if !keys.contains(&(c.dtype, c.kernel.as_str())) {
                keys.push((c.dtype, &c.kernel));
            }
        }
        keys.into_iter()
            .map(|(dtype, kernel)| {
                let of: Vec<&CaseComparison> = self
                    .cases
                    .iter()
                    .filter(|c| c.dtype == dtype && c.kernel == kernel)
                    .collect();
                let ratios: Vec<(f64, &str)> = of
                    .iter()
                    .filter_map(|c| c.ratio.map(|r| (r, c.shape.as_str())))
                    .collect();
                let best = ratios.iter().map(|r| r.0).reduce(f64::max);
                CompareRow {
                    dtype,
                    kernel: kernel.to_string(),
                    aggregate: Aggregate::of(&ratios, of.len() - ratios.len()),
                    best,
                }
            })
            .collect()
    }

    fn caption(&self) -> String {
        format!(
            "A: {} ({}). B: {} ({}). Ratio: B's median time / A's on the same kernel and problem \
             (above 1: A is faster); the geometric mean and the worst (lowest) over the cases both \
             timed. `cases`: both timed (\"of\" all the pair's cases in either run).",
            self.a.0, self.a.1, self.b.0, self.b.1
        )
    }

    fn summary_table(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = [
            "dtype",
            "kernel",
            "cases",
            "geomean A/B",
            "worst",
            "worst case",
            "best",
        ]
        .map(String::from)
        .to_vec();
        let rows = self
            .rows()
            .into_iter()
            .map(|r| {
                let a = &r.aggregate;
                vec![
                    r.dtype.to_string(),
                    r.kernel,
                    a.cases_text(),
                    a.geomean.map_or("-".into(), ratio_text),
                    a.worst.as_ref().map_or("-".into(), |w| ratio_text(w.0)),
                    a.worst.as_ref().map_or("-".into(), |w| w.1.clone()),
                    r.best.map_or("-".into(), ratio_text),
                ]
            })
            .collect();
        (header, rows)
    }

    fn case_cells(c: &CaseComparison) -> Vec<String> {
        let unit = c.dtype.rate_unit();
        let rate = |r: Option<f64>, s: Option<Status>| match (r, s) {
            (Some(r), _) => fmt::rate(r, unit),
            (None, Some(s)) => s.name().to_string(),
            (None, None) => "absent".into(),
        };
        vec![
            c.kernel.clone(),
            c.dtype.to_string(),
            c.shape.clone(),
            rate(c.rate_a, c.status_a),
            rate(c.rate_b, c.status_b),
            c.ratio.map_or("-".into(), ratio_text),
        ]
    }

    /// The one-line verdict: the overall geometric mean over the cases both timed.
    pub fn headline(&self) -> String {
        match self.geomean() {
            Some(g) => format!(
                "A / B over {} case(s) both timed: geometric mean {} (above 1: A is faster)",
                self.matched(),
                ratio_text(g)
            ),
            None => "no case was timed by both runs".into(),
        }
    }

    /// compare.md: the headline, the per-kernel table, its caption and every case.
    pub fn to_markdown(&self) -> String {
        let mut out = String::from("# Comparison\n\n");
        let _ = writeln!(out, "- A: `{}`: {}", self.a.0, self.a.1);
        let _ = writeln!(out, "- B: `{}`: {}\n", self.b.0, self.b.1);
        let _ = writeln!(out, "**{}**\n", self.headline());
        let md_table = |out: &mut String, header: &[String], rows: &[Vec<String>]| {
            let _ = writeln!(out, "| {} |", header.join(" | "));
            let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
            for r in rows {
                let cells: Vec<String> = r.iter().map(|c| c.replace('|', "\\|")).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
            }
        };
        let (header, rows) = self.summary_table();
        md_table(&mut out, &header, &rows);
        let _ = writeln!(out, "\n{}\n\n## Every case\n", self.caption());
        let header = ["kernel", "dtype", "shape", "rate A", "rate B", "A/B"].map(String::from);
        let rows: Vec<Vec<String>> = self.cases.iter().map(Self::case_cells).collect();
        md_table(&mut out, &header, &rows);
        out
    }

    /// compare.html: the same as a page, with a chart of every ratio and a sortable table.
    pub fn to_html(&self) -> String {
        let e = xml_escape;
        let mut out = String::from("<header><h1>matmul: two runs compared</h1></header>\n");
        let _ = writeln!(
            out,
            "<section id=\"summary\">\n<ul><li><b>A</b>: <code>{}</code>: {}</li><li><b>B</b>: <code>{}</code>: {}</li></ul>\n<p><b>{}</b></p>",
            e(&self.a.0),
            e(&self.a.1),
            e(&self.b.0),
            e(&self.b.1),
            e(&self.headline())
        );
        let (header, rows) = self.summary_table();
        out.push_str(&html_table(&header, &rows, &[2, 3, 4, 6]));
        let _ = writeln!(
            out,
            "<p class=\"caption\">{}</p>\n</section>",
            e(&self.caption().replace('`', ""))
        );
        let data = CompareData {
            ladders: Vec::new(),
            roofline: None,
            shapes: Vec::new(),
            compare: self
                .cases
                .iter()
                .filter_map(|c| {
                    Some(CompareBar {
                        label: format!("{} {} {}", c.kernel, c.dtype, c.shape),
                        ratio: c.ratio?,
                        tip: vec![
                            format!("{} {} {}", c.kernel, c.dtype, c.shape),
                            format!("A: {}", fmt::rate(c.rate_a?, c.dtype.rate_unit())),
                            format!("B: {}", fmt::rate(c.rate_b?, c.dtype.rate_unit())),
                            format!("A/B: {}", ratio_text(c.ratio?)),
                        ],
                    })
                })
                .collect(),
        };
        if !data.compare.is_empty() {
            out.push_str("<section id=\"charts\">\n<h2>Ratio per case</h2>\n");
            let height = (80 + 16 * data.compare.len()).clamp(240, 6000);
            let _ = writeln!(
                out,
                "<figure class=\"chart\"><figcaption>A/B per case (log scale; above 1: A is faster)</figcaption>\
                 <div class=\"chart-box\" style=\"height:{height}px\"><canvas class=\"chart-canvas\" \
                 data-chart=\"compare\" data-index=\"0\" role=\"img\" aria-label=\"A/B per case\"></canvas></div></figure>\n</section>"
            );
        }
        out.push_str(
            "<section id=\"results\">\n<h2>Every case</h2>\n<div class=\"controls\"><label>filter \
             <input id=\"filter\" type=\"search\"></label> <label>dtype <select id=\"filter-dtype\">\
             <option value=\"\">all</option>",
        );
        let mut dtypes: Vec<DType> = Vec::new();
        for c in &self.cases {
            if !dtypes.contains(&c.dtype) {
                dtypes.push(c.dtype);
                let _ = write!(out, "<option>{}</option>", c.dtype);
            }
        }
        out.push_str(
            "</select></label> <label>status <select id=\"filter-status\"><option value=\"\">all</option>\
             <option value=\"both\">both timed</option><option value=\"one\">not both</option></select></label> \
             <span id=\"row-count\"></span></div>\n<div class=\"table-wrap\"><table id=\"results-table\" class=\"sortable\">\n<thead><tr>",
        );
        for (h, num) in [
            ("kernel", false),
            ("dtype", false),
            ("shape", false),
            ("rate A", true),
            ("rate B", true),
            ("A/B", true),
        ] {
            let _ = write!(
                out,
                "<th data-type=\"{}\" tabindex=\"0\">{h}</th>",
                if num { "num" } else { "text" }
            );
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for c in &self.cases {
            let cells = Self::case_cells(c);
            let _ = write!(
                out,
                "<tr data-status=\"{}\" data-dtype=\"{}\">",
                if c.ratio.is_some() { "both" } else { "one" },
                c.dtype
            );
            for (i, cell) in cells.iter().enumerate() {
                let v = match i {
                    3 => c.rate_a,
                    4 => c.rate_b,
                    5 => c.ratio,
                    _ => {
                        let _ = write!(out, "<td>{}</td>", e(cell));
                        continue;
                    }
                };
                let _ = write!(
                    out,
                    "<td class=\"num\" data-v=\"{}\">{}</td>",
                    v.map_or(String::new(), |v| v.to_string()),
                    e(cell)
                );
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n</section>\n");
        let json = serde_json::to_string(&data).unwrap_or_else(|_| "{}".into());
        page("matmul: two runs compared", &out, &json)
    }
}

#[derive(Serialize)]
struct CompareBar {
    label: String,
    ratio: f64,
    tip: Vec<String>,
}

#[derive(Serialize)]
struct CompareData {
    ladders: Vec<()>,
    roofline: Option<()>,
    shapes: Vec<()>,
    compare: Vec<CompareBar>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::synthetic_report;

    #[test]
    fn ratios_match_cases_and_name_what_is_missing() {
        let a = synthetic_report();
        let mut b = a.clone();
        // B twice as slow on every tiled case, one naive case failed, one case only in B.
        for r in &mut b.records {
            if r.kernel == "tiled" {
                r.timing.as_mut().unwrap().stats.median *= 2.0;
                r.rate_gops = r.rate_gops.map(|x| x / 2.0);
            }
        }
        b.records[0].status = Status::Failed;
        let mut extra = b.records[1].clone();
        extra.kernel = "only-in-b".into();
        b.records.push(extra);
        let c = Comparison::new(&a, "a.json", &b, "b.json");
        assert_eq!(c.cases.len(), a.records.len() + 1);
        assert_eq!(c.matched(), a.records.len() - 1);
        let rows = c.rows();
        let tiled = rows
            .iter()
            .find(|r| r.kernel == "tiled" && r.dtype == DType::F32)
            .unwrap();
        assert!((tiled.aggregate.geomean.unwrap() - 2.0).abs() < 1e-12);
        let naive = rows
            .iter()
            .find(|r| r.kernel == "naive" && r.dtype == DType::F32)
            .unwrap();
        assert_eq!((naive.aggregate.cases, naive.aggregate.missing), (1, 1));
        assert!((naive.aggregate.geomean.unwrap() - 1.0).abs() < 1e-12);
        let only = rows.iter().find(|r| r.kernel == "only-in-b").unwrap();
        assert_eq!((only.aggregate.cases, only.aggregate.missing), (0, 1));
        // 8 tiled cases at 2, the others at 1.
        let n = c.matched() as f64;
        assert!((c.geomean().unwrap() - 2f64.powf(8.0 / n)).abs() < 1e-12);
        let md = c.to_markdown();
        assert!(md.contains("| f32 | tiled | 2 | 2.00× | 2.00× |"), "{md}");
        assert!(md.contains("| FAILED |"), "{md}");
        assert!(md.contains("| absent |"), "{md}");
        let html = c.to_html();
        let tbody = &html[html.find("<tbody>").unwrap()..html.find("</tbody>").unwrap()];
        assert_eq!(tbody.matches("<tr ").count(), c.cases.len());
        assert!(html.contains("data-chart=\"compare\""));
    }
}
