//! The rows and labels the human-readable renderers share: the text table, report.md and
//! report.html.

use crate::ceilings::Ceilings;
use crate::fmt;

use super::{Record, Report, Status};

/// The error columns explained (the text table's footnote, report.md's and report.html's caption).
pub const ERROR_CAPTION: &str = "`max err` / `mean err`: the largest and the mean over the \
     checked elements of |C − C_f64| / (|A|·|B|), element-wise against the exact (f64) product, \
     (|A|·|B|)_ij = Σ_l |a_il|·|b_lj|, in units u of C's type (C in f32, as for f32, tf32 \
     and 16-bit inputs by default: 2⁻²⁴; C in bf16: 2⁻⁸; C in f16: 2⁻¹¹); a dot product in C's type errs by at most about k u. u32 is exact: 0, or the \
     number of wrong elements.";

/// What the reports print instead of a percentage above 100 % of a roof.
pub const ABOVE_ROOF: &str = "⚠ above roof";

impl Record {
    /// The rate with its SI prefix and unit, or "-" when not timed.
    pub(super) fn rate_text(&self) -> String {
        self.rate_gops
            .map_or("-".into(), |r| fmt::rate(r, self.dtype.rate_unit()))
    }

    /// The bound of an OK record (None otherwise).
    fn ok_roof(&self) -> Option<&crate::roofline::RoofBound> {
        self.roof.as_ref().filter(|_| self.status == Status::Ok)
    }

    /// The binding roof's name, with " (in cache)" when only the compute roof applied; "-".
    pub(super) fn roof_name_text(&self) -> String {
        self.ok_roof().map_or("-".into(), |b| {
            if b.in_cache {
                format!("{} (in cache)", b.roof)
            } else {
                b.roof.clone()
            }
        })
    }

    /// The percentage of the binding roof ("85.2"), [`ABOVE_ROOF`] above 100 %, or "-".
    pub(super) fn roof_percent_text(&self) -> String {
        match self.ok_roof() {
            Some(b) if b.above_roof() => ABOVE_ROOF.into(),
            Some(b) => b.percent.map_or("-".into(), |p| fmt::sig(p, 3)),
            None => "-".into(),
        }
    }

    /// The text table's cell: "85.2% fp32", "12.9% int32 (in cache)", "⚠ above roof", "-".
    pub(super) fn roof_text(&self) -> String {
        match self.ok_roof() {
            Some(b) if b.above_roof() => ABOVE_ROOF.into(),
            Some(b) if b.percent.is_some() => {
                format!("{}% {}", self.roof_percent_text(), self.roof_name_text())
            }
            _ => "-".into(),
        }
    }

    /// The error against the exact product (`Verification::error`), if measured.
    pub(super) fn error(&self) -> Option<&matmul::verify::ErrorStats> {
        self.verification.as_ref()?.error.as_ref()
    }

    /// The error's cells, max and mean in u: "3.12" and "0.418"; for u32 "0" (exact) or
    /// "3 wrong"; "12 non-finite" when C held NaN or ∞ (the mean then "-"); "-" when not
    /// measured.
    pub(super) fn error_texts(&self) -> (String, String) {
        match self.error() {
            None => ("-".into(), "-".into()),
            Some(e) if e.wrong > 0 && e.unit_log2.is_none() => {
                (format!("{} wrong", e.wrong), "-".into())
            }
            Some(e) if e.wrong > 0 => (format!("{} non-finite", e.wrong), "-".into()),
            Some(e) => (
                e.max_u.map_or("-".into(), |x| fmt::sig(x, 3)),
                e.mean_u.map_or("-".into(), |x| fmt::sig(x, 3)),
            ),
        }
    }

    /// The error in a few words: "max 3.12 u, mean 0.418 u (u = 2^-24)", "exact", "3 wrong",
    /// "12 non-finite"; None when not measured.
    pub(super) fn error_summary(&self) -> Option<String> {
        let e = self.error()?;
        let (max, mean) = self.error_texts();
        Some(match e.unit_log2 {
            _ if e.wrong > 0 => max,
            None => "exact".into(),
            Some(l) => format!("max {max} u, mean {mean} u (u = 2^{l})"),
        })
    }

    /// The traffic model's intensity, FLOP (OP) per byte, three digits.
    pub(super) fn model_intensity_text(&self) -> String {
        fmt::sig(self.intensity_model, 3)
    }
}

/// The headers of the u32 ratio columns ([`Report::has_u32_ratios`]).
pub(super) const U32_RATIO_HEADERS: [&str; 2] = ["vs int8/10", "vs IMAD"];

/// What the u32 ratio columns mean.
pub(super) const U32_RATIO_CAPTION: &str =
    "u32 rows: vs int8/10 = rate ÷ (`cublaslt-int8`'s rate ÷ 10), \
     the share of the byte split's 10-product ceiling measured in this run; vs IMAD = speedup over \
     `multistage-raster`. The `cublaslt-int8` row is cuBLASLt's s8·s8→s32 GEMM of the same m, n, k \
     (int8 OP/s): a ceiling, not a u32 product, not verified.";

impl Record {
    /// The u32 ratio columns' texts: `vs_int8_ceiling` as a percentage, `vs_imad` as a factor.
    pub(super) fn u32_ratio_texts(&self) -> [String; 2] {
        [
            self.vs_int8_ceiling
                .map_or("-".into(), |v| format!("{}%", fmt::sig(v * 100.0, 3))),
            self.vs_imad
                .map_or("-".into(), |v| format!("{}x", fmt::sig(v, 3))),
        ]
    }
}

impl Report {
    /// The header of the vendor-ratio column ("vs cuBLAS", or "vs " and the vendor baseline).
    pub(super) fn vendor_header(&self) -> String {
        match self.baselines.vendor.as_deref() {
            Some("cublas") | None => "vs cuBLAS".into(),
            Some(v) => format!("vs {v}"),
        }
    }

    /// The lines that flag results above their roof as a measurement problem (none when every
    /// result is at or under its roof): a heading line, then one per result.
    pub(super) fn above_roof_lines(&self) -> Vec<String> {
        let above = self.above_roof();
        if above.is_empty() {
            return Vec::new();
        }
        let mut lines = vec![format!(
            "{ABOVE_ROOF}: measurement problem. No kernel moves fewer bytes than the compulsory \
             traffic nor computes above the compute peak, so {} result(s) above their roof mean a \
             roof measured too low (a short or throttled ceiling run, a datasheet for another \
             part) or a timing that is off; they are not results:",
            above.len()
        )];
        for r in above {
            let b = r.roof.as_ref().expect("above_roof has a roof");
            lines.push(format!(
                "{} {} {}: {} = {}% of {} {}",
                r.label(),
                r.dtype,
                r.shape,
                r.rate_text(),
                fmt::sig(b.percent.unwrap_or(0.0), 3),
                b.roof,
                match b.roof.as_str() {
                    "memory" => format!(
                        "({} × {} FLOP/B)",
                        b.source.name(),
                        fmt::sig(b.intensity, 3)
                    ),
                    _ => format!("({})", b.source.name()),
                }
            ));
        }
        lines
    }

    /// One line about the skipped records (None when none was skipped): the count, the first
    /// kernel × dtype group with its reason, and how many other groups report.md lists.
    pub(super) fn skipped_line(&self) -> Option<String> {
        let groups = self.skipped_groups();
        let (label, count, reason) = groups.first()?;
        let total: usize = groups.iter().map(|g| g.1).sum();
        let mut line = if groups.len() == 1 {
            format!("skipped {label} ({count}x): {reason}")
        } else {
            format!("skipped {total} cases, e.g. {label} ({count}x): {reason}")
        };
        if groups.len() > 1 {
            line.push_str(&format!(
                " (and {} more kernel × dtype pair(s): report.md lists them)",
                groups.len() - 1
            ));
        }
        Some(line)
    }

    /// Skipped records grouped by kernel and dtype: (label, count, first reason).
    pub(super) fn skipped_groups(&self) -> Vec<(String, usize, String)> {
        let mut groups: Vec<(String, usize, String)> = Vec::new();
        for r in self.records.iter().filter(|r| r.status == Status::Skipped) {
            let label = format!("{} {}", r.kernel, r.dtype);
            match groups.iter_mut().find(|g| g.0 == label) {
                Some(g) => g.1 += 1,
                None => groups.push((label, 1, r.reason.clone().unwrap_or_default())),
            }
        }
        groups
    }

    /// Whether any record measured its error (reports written before the error column have
    /// none, and their tables leave the columns out).
    pub(super) fn has_errors(&self) -> bool {
        self.records.iter().any(|r| r.error().is_some())
    }

    /// The caption under the results table of report.md / report.html.
    pub(super) fn results_caption(&self) -> String {
        let errors = if self.has_errors() {
            format!(" {ERROR_CAPTION}")
        } else {
            String::new()
        };
        format!(
            "Rates from the median time. `% of roof`: of the lower of DRAM bandwidth × intensity \
             and the dtype's compute peak, the intensity being FLOPs over the {} (one intensity \
             per problem, the same for every kernel, unless profiled), so 100 % is the most any \
             kernel can reach; `(in cache)`: the rotated input sets stayed below the cache size, \
             so only the compute roof bounds it. `model FLOP/B`: FLOPs over the kernel's traffic \
             model, the global-memory bytes it asks for before any cache helps: a teaching \
             figure, not a roofline placement (caches serve much of that traffic, and no L2 roof \
             is measured to hold it against).{errors}",
            self.intensity_source()
        )
    }

    /// Rows of the results table of report.md / report.html (OK and FAILED records).
    pub(super) fn result_rows(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let header = vec![
            "kernel".to_string(),
            "dtype".into(),
            "shape".into(),
            "median (ms)".into(),
            "rate".into(),
            format!("% of {}", self.vendor_header().trim_start_matches("vs ")),
            format!("× {}", self.baselines.naive.as_deref().unwrap_or("naive")),
            "bound roof".into(),
            "% of roof".into(),
            "model FLOP/B".into(),
        ];
        let errors = self.has_errors();
        let mut header = header;
        if errors {
            header.extend(["max err (u)".to_string(), "mean err (u)".into()]);
        }
        let u32_ratios = self.has_u32_ratios();
        if u32_ratios {
            header.extend(U32_RATIO_HEADERS.map(String::from));
        }
        header.push("verification".into());
        let rows = self
            .records
            .iter()
            .filter(|r| r.status != Status::Skipped)
            .map(|r| {
                let mut row = vec![
                    r.label(),
                    r.dtype.to_string(),
                    r.shape.clone(),
                    r.median_s().map_or("-".into(), |t| fmt::sig(t * 1e3, 4)),
                    r.rate_text(),
                    r.vs_cublas.map_or("-".into(), |v| fmt::sig(v * 100.0, 3)),
                    r.vs_naive.map_or("-".into(), |v| fmt::sig(v, 3)),
                    r.roof_name_text(),
                    r.roof_percent_text(),
                    r.model_intensity_text(),
                ];
                if errors {
                    let (max, mean) = r.error_texts();
                    row.extend([max, mean]);
                }
                if u32_ratios {
                    row.extend(r.u32_ratio_texts());
                }
                row.push(match (&r.verification, r.status) {
                    (Some(v), _) => v.summary(),
                    (None, Status::Ok) if r.is_int8_ceiling() => {
                        "int8 ceiling: not a u32 product, not verified".into()
                    }
                    (None, Status::Failed) => "not verified (run failed)".into(),
                    _ => "-".into(),
                });
                row
            })
            .collect();
        (header, rows)
    }

    /// The ceilings table: roof, measured, datasheet.
    pub(super) fn ceiling_rows(&self) -> Vec<Vec<String>> {
        let (m, d) = (
            self.ceilings.measured.as_ref(),
            self.ceilings.datasheet.as_ref(),
        );
        let mut names: Vec<String> = Vec::new();
        for c in m.iter().chain(d.iter()) {
            for (n, _) in c.roofs() {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let value = |c: Option<&Ceilings>, name: &str| {
            c.and_then(|c| c.roofs().into_iter().find(|(n, _)| n == name))
                .map_or("-".into(), |(_, v)| match name {
                    "memory" => fmt::bandwidth(v),
                    _ => fmt::rate(v, crate::roofline::roof_op(name)),
                })
        };
        names
            .iter()
            .map(|n| vec![n.clone(), value(m, n), value(d, n)])
            .collect()
    }

    /// The machine and the settings as (label, value) lines.
    pub(super) fn system_lines(&self) -> Vec<(String, String)> {
        let s = &self.system;
        let mut v = vec![
            ("device".to_string(), s.device.clone()),
            ("backend".into(), s.backend.clone()),
            (
                "CPU".into(),
                format!(
                    "{} ({} cores, {} threads)",
                    s.cpu_model.as_deref().unwrap_or("unknown"),
                    s.cpu_cores,
                    s.cpu_threads
                ),
            ),
            ("date".into(), s.date.clone()),
            (
                "commit".into(),
                match (&s.git_commit, s.git_dirty) {
                    (Some(c), Some(true)) => format!("{c} (with uncommitted changes)"),
                    (Some(c), _) => c.clone(),
                    (None, _) => "unknown".into(),
                },
            ),
            ("command".into(), s.command_line.join(" ")),
        ];
        let st = &self.settings;
        v.push((
            "settings".into(),
            format!(
                "warmup {}, iters {}, min time {}, rotating inputs past {}, verify in full up to m·n·k = {} (else {} samples + last row/column)",
                st.warmup,
                st.iters.map_or("auto".into(), |i| i.to_string()),
                st.min_time_s.map_or("-".into(), fmt::time),
                fmt::bytes(st.cache_bytes),
                st.verify_full_limit,
                st.verify_samples
            ),
        ));
        v
    }
}
