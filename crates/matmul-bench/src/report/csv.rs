//! results.csv: one header row and one row per record.

use super::Report;

const CSV_HEADER: &[&str] = &[
    "kernel",
    "backend",
    "dtype",
    "m",
    "n",
    "k",
    "op_a",
    "op_b",
    "status",
    "reason",
    "verify_method",
    "verify_passed",
    "verify_rel_error",
    "verify_max_abs_error",
    "warmup",
    "iters",
    "input_sets",
    "median_s",
    "mean_s",
    "std_s",
    "min_s",
    "max_s",
    "rate_gops",
    "rate_unit",
    "bandwidth_gbs",
    "flops",
    "min_bytes",
    "model_bytes",
    "measured_bytes",
    "intensity_model",
    "intensity_measured",
    "roof",
    "roof_bound_gops",
    "roof_percent",
    "vs_cublas",
    "vs_naive",
    "chosen",
    "tiling",
    "tags",
    "roof_bytes",
    "roof_in_cache",
    "error_max_u",
    "error_mean_u",
    "error_unit_log2",
    "error_elements",
    "error_wrong",
    "vs_int8_ceiling",
    "vs_imad",
    "kernel_file",
];

/// Quotes a CSV field when it holds a comma, quote, CR or LF (RFC 4180).
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// A float for CSV: shortest round-trip digits, in exponent form when tiny or huge.
fn num(x: f64) -> String {
    let a = x.abs();
    if x != 0.0 && !(1e-4..1e15).contains(&a) {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

fn opt_num(v: Option<f64>) -> String {
    v.map_or(String::new(), num)
}

impl Report {
    /// One header row and one row per record (RFC 4180 quoting, LF line ends).
    pub fn to_csv(&self) -> String {
        let mut out = CSV_HEADER.join(",");
        out.push('\n');
        for r in &self.records {
            let v = r.verification.as_ref();
            let t = r.timing.as_ref();
            let s = t.map(|t| t.stats);
            let b = r.roof.as_ref();
            let e = v.and_then(|v| v.error.as_ref());
            let fields: Vec<String> = vec![
                r.kernel.clone(),
                r.backend.clone(),
                r.dtype.to_string(),
                r.problem.m.to_string(),
                r.problem.n.to_string(),
                r.problem.k.to_string(),
                format!("{:?}", r.problem.op_a),
                format!("{:?}", r.problem.op_b),
                r.status.name().to_string(),
                r.reason.clone().unwrap_or_default(),
                opt(v.map(|v| {
                    serde_json::to_value(v.method)
                        .ok()
                        .and_then(|x| x.as_str().map(str::to_string))
                        .unwrap_or_default()
                })),
                opt(v.map(|v| v.passed)),
                opt_num(v.and_then(|v| v.rel_error)),
                opt_num(v.and_then(|v| v.max_abs_error)),
                opt(t.map(|t| t.warmup)),
                opt(t.map(|t| t.iters)),
                opt(t.map(|t| t.input_sets)),
                opt_num(s.map(|s| s.median)),
                opt_num(s.map(|s| s.mean)),
                opt_num(s.map(|s| s.std_dev)),
                opt_num(s.map(|s| s.min)),
                opt_num(s.map(|s| s.max)),
                opt_num(r.rate_gops),
                r.rate_unit.clone(),
                opt_num(r.bandwidth_gbs),
                num(r.flops),
                num(r.min_bytes),
                num(r.model_bytes),
                opt_num(r.measured_bytes),
                num(r.intensity_model),
                opt_num(r.intensity_measured),
                opt(b.map(|b| b.roof.clone())),
                opt_num(b.map(|b| b.bound_gops)),
                opt_num(b.and_then(|b| b.percent)),
                opt_num(r.vs_cublas),
                opt_num(r.vs_naive),
                r.chosen.clone().unwrap_or_default(),
                r.tiling.clone().unwrap_or_default(),
                r.tags.join(" "),
                opt(b.map(|b| b.bytes.name())),
                opt(b.map(|b| b.in_cache)),
                opt_num(e.and_then(|e| e.max_u)),
                opt_num(e.and_then(|e| e.mean_u)),
                opt(e.and_then(|e| e.unit_log2)),
                opt(e.map(|e| e.elements)),
                opt(e.map(|e| e.wrong)),
                opt_num(r.vs_int8_ceiling),
                opt_num(r.vs_imad),
                opt(r.kernel_file.as_ref().map(|f| f.path.clone())),
            ];
            debug_assert_eq!(fields.len(), CSV_HEADER.len());
            let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
            out.push_str(&line.join(","));
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{parse_csv, synthetic_report};

    #[test]
    fn csv_has_one_row_per_record_and_quotes_properly() {
        let report = synthetic_report();
        let csv = report.to_csv();
        let rows = parse_csv(&csv).unwrap();
        assert_eq!(rows.len(), 1 + report.records.len());
        let reason_col = rows[0].iter().position(|h| h == "reason").unwrap();
        assert_eq!(rows[1][reason_col], "note, with \"quotes\"\nand a newline");
        assert!(rows.iter().all(|r| r.len() == rows[0].len()));
    }
}
