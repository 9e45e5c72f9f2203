//! Measured DRAM traffic for the roofline (`matmul bench --profile`): each verified CUDA record is
//! run once more under Nsight Compute (`ncu`), which reads the DRAM byte counters of the kernel's
//! launch; the record's measured intensity then places it on the roofline instead of the traffic
//! model's. This module builds the ncu command, parses its CSV and, in [`profile_report`], runs it
//! for every record; the caller finds `ncu` and says how to run one record (`matmul run ...` for
//! the CLI).

use std::path::Path;

use crate::report::{Record, Report, Status};

/// The ncu metrics read: bytes read from and written to DRAM by one launch.
pub const DRAM_METRICS: &str = "dram__bytes_read.sum,dram__bytes_write.sum";

/// The arguments of `ncu` that profile the first launch of `kernel_regex` (None: the first
/// launch of any kernel) in `program args...`, printing the DRAM metrics as CSV.
pub fn ncu_args(kernel_regex: Option<&str>, program: &Path, args: &[String]) -> Vec<String> {
    let mut out = vec![
        "--csv".to_string(),
        "--metrics".to_string(),
        DRAM_METRICS.to_string(),
        "--launch-count".to_string(),
        "1".to_string(),
    ];
    if let Some(re) = kernel_regex {
        out.push("--kernel-name".to_string());
        out.push(format!("regex:^{re}$"));
    }
    out.push(program.display().to_string());
    out.extend(args.iter().cloned());
    out
}

/// Bytes per unit ncu may print.
fn unit_scale(unit: &str) -> Option<f64> {
    Some(match unit.trim().to_ascii_lowercase().as_str() {
        "byte" | "bytes" => 1.0,
        "kbyte" => 1e3,
        "mbyte" => 1e6,
        "gbyte" => 1e9,
        "kibyte" => 1024.0,
        "mibyte" => 1024.0 * 1024.0,
        "gibyte" => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    })
}

/// Splits one CSV line of ncu's output (quoted fields, commas inside quotes kept).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut cur, mut quoted) = (String::new(), false);
    for c in line.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// DRAM bytes read + written in ncu's `--csv` output (the columns "Metric Name", "Metric Unit",
/// "Metric Value"; thousands separators allowed). None when either metric is missing.
pub fn parse_dram_bytes(csv: &str) -> Option<f64> {
    let mut lines = csv.lines().filter(|l| l.starts_with('"'));
    let header = csv_fields(lines.next()?);
    let col = |name: &str| header.iter().position(|h| h == name);
    let (name_c, unit_c, value_c) = (
        col("Metric Name")?,
        col("Metric Unit")?,
        col("Metric Value")?,
    );
    let (mut read, mut write) = (None, None);
    for line in lines {
        let f = csv_fields(line);
        let (Some(name), Some(unit), Some(value)) = (f.get(name_c), f.get(unit_c), f.get(value_c))
        else {
            continue;
        };
        let Ok(v) = value.replace(',', "").parse::<f64>() else {
            continue;
        };
        let bytes = v * unit_scale(unit)?;
        match name.as_str() {
            "dram__bytes_read.sum" => *read.get_or_insert(0.0) += bytes,
            "dram__bytes_write.sum" => *write.get_or_insert(0.0) += bytes,
            _ => {}
        }
    }
    Some(read? + write?)
}

/// What profiling one record gave.
#[derive(Debug)]
pub enum Profiled {
    /// ncu counted this many DRAM bytes (read + written); the record now carries them.
    Bytes(f64),
    /// ncu ran but printed no DRAM metrics.
    NoMetrics,
    /// ncu exited with an error (often: no permission for the GPU's counters).
    Failed,
    /// ncu could not be started.
    CannotRun(std::io::Error),
}

/// Profiles every verified CUDA record of `report`: runs `program` with `run_args(record)` under
/// `ncu` (the first launch of the kernel's entry point; for cuBLAS, whose kernels have names of
/// their own, the first launch), sets the record's measured bytes from the DRAM counters, tells
/// `on_record` each outcome, then re-evaluates every roof with the report's ceilings.
pub fn profile_report(
    report: &mut Report,
    ncu: &Path,
    program: &Path,
    run_args: impl Fn(&Record) -> Vec<String>,
    mut on_record: impl FnMut(&Record, &Profiled),
) {
    for rec in report.records.iter_mut() {
        if rec.status != Status::Ok || rec.backend != "cuda" {
            continue;
        }
        let Ok(kernel) = matmul::find(&rec.kernel) else {
            continue;
        };
        let args = run_args(rec);
        // Our kernels by entry point; cuBLAS's kernel names are its own: the first launch.
        let entry = kernel.cuda_source().map(|_| kernel.entry_point());
        let out = std::process::Command::new(ncu)
            .args(ncu_args(entry.as_deref(), program, &args))
            .output();
        let outcome = match out.map(|o| {
            (
                o.status.success(),
                String::from_utf8_lossy(&o.stdout).into_owned(),
            )
        }) {
            Ok((true, text)) => match parse_dram_bytes(&text) {
                Some(bytes) => Profiled::Bytes(bytes),
                None => Profiled::NoMetrics,
            },
            Ok((false, _)) => Profiled::Failed,
            Err(e) => Profiled::CannotRun(e),
        };
        if let Profiled::Bytes(bytes) = outcome {
            rec.set_measured_bytes(bytes);
        }
        on_record(rec, &outcome);
    }
    let (measured, sheet) = (
        report.ceilings.measured.clone(),
        report.ceilings.datasheet.clone(),
    );
    report.apply_ceilings(measured, sheet);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const CSV: &str = r#"==PROF== Connected to process 123
==PROF== Profiling "multistage" - 0: 0%....50%....100% - 3 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","123","matmul","127.0.0.1","multistage","1","13","(256, 1, 1)","(32, 64, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","Mbyte","1,234.50"
"0","123","matmul","127.0.0.1","multistage","1","13","(256, 1, 1)","(32, 64, 1)","0","9.0","Command line profiler metrics","dram__bytes_write.sum","Kbyte","512"
"#;

    #[test]
    fn parses_ncu_csv() {
        let b = parse_dram_bytes(CSV).unwrap();
        assert!((b - (1234.5e6 + 512e3)).abs() < 1.0, "{b}");
        assert_eq!(parse_dram_bytes("no csv here"), None);
        let only_read: String = CSV
            .lines()
            .filter(|l| !l.contains("write"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(parse_dram_bytes(&only_read), None);
    }

    #[test]
    fn command_names_the_kernel() {
        let a = ncu_args(
            Some("multistage"),
            Path::new("/bin/matmul"),
            &["run".into()],
        );
        assert!(a
            .windows(2)
            .any(|w| w[0] == "--kernel-name" && w[1] == "regex:^multistage$"));
        assert_eq!(a.last().unwrap(), "run");
        assert!(!ncu_args(None, Path::new("m"), &[]).contains(&"--kernel-name".to_string()));
    }

    /// A stand-in for ncu: a shell script that prints `csv` (or fails), and the report's
    /// records as CUDA ones, one of them FAILED.
    #[cfg(unix)]
    fn fake_ncu(tag: &str, exit: u8) -> (PathBuf, Report) {
        use std::os::unix::fs::PermissionsExt;
        let dir =
            std::env::temp_dir().join(format!("matmul-bench-ncu-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("out.csv"), CSV).unwrap();
        let script = dir.join("ncu");
        std::fs::write(
            &script,
            format!("#!/bin/sh\ncat \"$(dirname \"$0\")/out.csv\"\nexit {exit}\n"),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut report = crate::tests::synthetic_report();
        for r in &mut report.records {
            r.backend = "cuda".into();
        }
        report.records[0].status = Status::Failed;
        (script, report)
    }

    #[cfg(unix)]
    #[test]
    fn profiling_sets_measured_bytes_and_moves_the_roof() {
        let (ncu, mut report) = fake_ncu("ok", 0);
        let bytes = 1234.5e6 + 512e3;
        let mut seen = 0;
        profile_report(
            &mut report,
            &ncu,
            Path::new("matmul"),
            |r| vec!["run".into(), r.kernel.clone()],
            |_, outcome| {
                assert!(matches!(outcome, Profiled::Bytes(b) if (b - bytes).abs() < 1.0));
                seen += 1;
            },
        );
        assert_eq!(seen, report.records.len() - 1, "every OK CUDA record");
        assert_eq!(report.records[0].measured_bytes, None, "not the FAILED one");
        for r in &report.records[1..] {
            let intensity = r.flops / r.measured_bytes.unwrap();
            assert_eq!(r.intensity_measured, Some(intensity));
            assert_eq!(r.roof.as_ref().unwrap().intensity, intensity);
        }
        std::fs::remove_dir_all(ncu.parent().unwrap()).unwrap();

        let (ncu, mut report) = fake_ncu("fails", 1);
        let mut failed = 0;
        profile_report(
            &mut report,
            &ncu,
            Path::new("m"),
            |_| vec![],
            |_, o| failed += matches!(o, Profiled::Failed) as usize,
        );
        assert_eq!(failed, report.records.len() - 1);
        assert!(report.records.iter().all(|r| r.measured_bytes.is_none()));

        let mut missing = 0;
        profile_report(
            &mut report,
            &ncu.with_file_name("absent"),
            Path::new("m"),
            |_| vec![],
            |_, o| missing += matches!(o, Profiled::CannotRun(_)) as usize,
        );
        assert_eq!(missing, report.records.len() - 1);
        std::fs::remove_dir_all(ncu.parent().unwrap()).unwrap();
    }
}
