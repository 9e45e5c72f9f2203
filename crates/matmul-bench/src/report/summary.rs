//! The suite summary: for each dtype and kernel, the geometric mean and the worst of the
//! baseline's median time over the kernel's, across the problems of a run and per tag (class),
//! computed from the records, so that every renderer (the text table, report.md, report.html, a
//! README table) shows the same numbers.

use std::fmt::Write as _;

use matmul::DType;

use super::{Record, Report, Status};

/// One kernel's ratios to the baseline on one dtype, over a set of problems. A ratio is the
/// baseline's median / the kernel's median on the same problem: above 1 the kernel is faster.
#[derive(Debug, Clone, PartialEq)]
pub struct Aggregate {
    /// Problems where both the baseline and the kernel were timed.
    pub cases: usize,
    /// Problems where the baseline was timed and the kernel was not (skipped or failed).
    pub missing: usize,
    /// The geometric mean of the ratios (None without any).
    pub geomean: Option<f64>,
    /// The lowest ratio and its problem's shape label (the first on ties).
    pub worst: Option<(f64, String)>,
}

impl Aggregate {
    /// The aggregate of (ratio, shape label) pairs, `missing` problems having none.
    pub fn of(ratios: &[(f64, &str)], missing: usize) -> Aggregate {
        let geomean = (!ratios.is_empty()).then(|| {
            let logs: f64 = ratios.iter().map(|(r, _)| r.ln()).sum();
            (logs / ratios.len() as f64).exp()
        });
        let worst = ratios
            .iter()
            .fold(None, |acc: Option<(f64, &str)>, &(r, s)| match acc {
                Some((w, _)) if w <= r => acc,
                _ => Some((r, s)),
            })
            .map(|(r, s)| (r, s.to_string()));
        Aggregate {
            cases: ratios.len(),
            missing,
            geomean,
            worst,
        }
    }

    /// "47 of 49" when some problems are missing, else "49".
    pub fn cases_text(&self) -> String {
        if self.missing == 0 {
            self.cases.to_string()
        } else {
            format!("{} of {}", self.cases, self.cases + self.missing)
        }
    }
}

/// One kernel on one dtype: over every problem, and per tag.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// The dtype.
    pub dtype: DType,
    /// The kernel's name as recorded (`auto` for the library's choice).
    pub kernel: String,
    /// Over every problem of the dtype that the baseline timed.
    pub all: Aggregate,
    /// Per tag of [`Summary::tags`], in that order: over the problems carrying it.
    pub by_tag: Vec<Aggregate>,
}

/// Every kernel's ratios to one baseline kernel, per dtype.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The kernel the ratios are taken against (`cublas` on CUDA).
    pub baseline: String,
    /// The tags of the problems the baseline timed, each once, in order of first appearance.
    pub tags: Vec<String>,
    /// One per dtype × kernel with at least one problem the baseline timed, in record order.
    pub rows: Vec<SummaryRow>,
}

impl Report {
    /// The summary against the vendor baseline (cuBLAS) when it was timed on some problem, else
    /// against the naive baseline (the CPU's `cpu-reference`); None when neither was.
    pub fn summary(&self) -> Option<Summary> {
        let ran = |n: &str| {
            self.records
                .iter()
                .any(|r| r.kernel == n && r.status == Status::Ok)
        };
        let baseline = [&self.baselines.vendor, &self.baselines.naive]
            .into_iter()
            .flatten()
            .find(|n| ran(n))?;
        let s = self.summary_against(baseline);
        (!s.rows.is_empty()).then_some(s)
    }

    /// Every other kernel's ratios to `baseline`, per dtype: overall and per tag.
    pub fn summary_against(&self, baseline: &str) -> Summary {
        let timed = |r: &Record| r.status == Status::Ok && r.median_s().is_some_and(|t| t > 0.0);
        let base: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.kernel == baseline && timed(r))
            .collect();
        let mut tags: Vec<String> = Vec::new();
        for t in base.iter().flat_map(|r| &r.tags) {
            if !tags.contains(t) {
                tags.push(t.clone());
            }
        }
        let mut keys: Vec<(DType, &str)> = Vec::new();
        for r in self.records.iter().filter(|r| r.kernel != baseline) {
            if !keys.contains(&(r.dtype, r.kernel.as_str())) {
                keys.push((r.dtype, &r.kernel));
            }
        }
        let mut rows = Vec::new();
        for (dtype, kernel) in keys {
            // Per problem the baseline timed: this kernel's ratio, if it was timed too.
            let cases: Vec<(Option<f64>, &Record)> = base
                .iter()
                .filter(|b| b.dtype == dtype)
                .map(|b| {
                    let ours = self
                        .records
                        .iter()
                        .find(|r| r.kernel == kernel && r.problem == b.problem && timed(r));
                    let ratio = ours.and_then(|r| Some(b.median_s()? / r.median_s()?));
                    (ratio, *b)
                })
                .collect();
            if cases.is_empty() {
                continue;
            }
            let aggregate = |tag: Option<&str>| {
                let of_tag = |b: &&Record| tag.is_none_or(|t| b.tags.iter().any(|x| x == t));
                let ratios: Vec<(f64, &str)> = cases
                    .iter()
                    .filter(|(_, b)| of_tag(b))
                    .filter_map(|(r, b)| r.map(|r| (r, b.shape.as_str())))
                    .collect();
                let missing = cases
                    .iter()
                    .filter(|(r, b)| r.is_none() && of_tag(b))
                    .count();
                Aggregate::of(&ratios, missing)
            };
            rows.push(SummaryRow {
                dtype,
                kernel: kernel.to_string(),
                all: aggregate(None),
                by_tag: tags.iter().map(|t| aggregate(Some(t))).collect(),
            });
        }
        Summary {
            baseline: baseline.to_string(),
            tags,
            rows,
        }
    }
}

/// A ratio as the summary prints it: `0.68×`.
pub fn ratio_text(r: f64) -> String {
    format!("{r:.2}×")
}

impl Summary {
    /// The baseline as the tables name it (`cuBLAS` for `cublas`).
    fn baseline_name(&self) -> &str {
        match self.baseline.as_str() {
            "cublas" => "cuBLAS",
            b => b,
        }
    }

    /// One line saying what the numbers are, for `suite` (the suite's name, if any).
    pub fn caption(&self, suite: Option<&str>) -> String {
        let over = suite.map_or("this run".to_string(), |s| format!("the suite `{s}`"));
        let b = self.baseline_name();
        format!(
            "Against {b} over {over}: {b}'s median time / ours per problem, as the geometric mean \
             and the worst (above 1: faster than {b}); per class: geometric mean (worst)."
        )
    }

    /// The table: a header and one row per dtype × kernel: dtype, kernel, cases, geometric mean,
    /// worst, worst case, then per tag "geomean (worst)" (the ratio alone for a single case).
    pub fn rows(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut header: Vec<String> =
            ["dtype", "kernel", "cases", "geomean", "worst", "worst case"]
                .iter()
                .map(|h| h.to_string())
                .collect();
        header.extend(self.tags.iter().cloned());
        let rows = self
            .rows
            .iter()
            .map(|row| {
                let a = &row.all;
                let mut cells = vec![
                    row.dtype.to_string(),
                    row.kernel.clone(),
                    a.cases_text(),
                    a.geomean.map_or("-".into(), ratio_text),
                    a.worst.as_ref().map_or("-".into(), |w| ratio_text(w.0)),
                    a.worst.as_ref().map_or("-".into(), |w| w.1.clone()),
                ];
                for t in &row.by_tag {
                    let mut cell = match (t.geomean, &t.worst) {
                        (Some(g), _) if t.cases == 1 => ratio_text(g),
                        (Some(g), Some((w, _))) => {
                            format!("{} ({})", ratio_text(g), ratio_text(*w))
                        }
                        _ => "-".into(),
                    };
                    if t.missing > 0 {
                        let _ = write!(cell, " [{} missing]", t.missing);
                    }
                    cells.push(cell);
                }
                cells
            })
            .collect();
        (header, rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geomean_and_worst() {
        let a = Aggregate::of(&[(2.0, "a"), (0.5, "b"), (0.5, "c"), (2.0, "d")], 1);
        assert!((a.geomean.unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(a.worst, Some((0.5, "b".to_string())), "the first of equals");
        assert_eq!((a.cases, a.missing), (4, 1));
        assert_eq!(a.cases_text(), "4 of 5");
        let one = Aggregate::of(&[(0.8, "x")], 0);
        assert!((one.geomean.unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(one.cases_text(), "1");
        let none = Aggregate::of(&[], 2);
        assert_eq!((none.geomean, none.worst), (None, None));
        let g = Aggregate::of(&[(1.0, "a"), (8.0, "b"), (1.0, "c")], 0);
        assert!((g.geomean.unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(ratio_text(0.6849), "0.68×");
    }
}
