//! The rows and labels the human-readable renderers share: the text table, report.md and
//! report.html.

use crate::ceilings::Ceilings;
use crate::fmt;

use super::{Record, Report, Status};

impl Record {
    /// The rate with its SI prefix and unit, or "-" when not timed.
    pub(super) fn rate_text(&self) -> String {
        self.rate_gops
            .map_or("-".into(), |r| fmt::rate(r, self.dtype.rate_unit()))
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
            "verification".into(),
        ];
        let rows = self
            .records
            .iter()
            .filter(|r| r.status != Status::Skipped)
            .map(|r| {
                let ok = r.status == Status::Ok;
                vec![
                    r.label(),
                    r.dtype.to_string(),
                    r.shape.clone(),
                    r.median_s().map_or("-".into(), |t| fmt::sig(t * 1e3, 4)),
                    r.rate_text(),
                    r.vs_cublas.map_or("-".into(), |v| fmt::sig(v * 100.0, 3)),
                    r.vs_naive.map_or("-".into(), |v| fmt::sig(v, 3)),
                    r.roof
                        .as_ref()
                        .filter(|_| ok)
                        .map_or("-".into(), |b| b.roof.clone()),
                    r.roof
                        .as_ref()
                        .filter(|_| ok)
                        .and_then(|b| b.percent)
                        .map_or("-".into(), |p| fmt::sig(p, 3)),
                    match (&r.verification, r.status) {
                        (Some(v), _) => v.summary(),
                        (None, Status::Failed) => "not verified (run failed)".into(),
                        _ => "-".into(),
                    },
                ]
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
                    "int32" => fmt::rate(v, "OP"),
                    _ => fmt::rate(v, "FLOP"),
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
