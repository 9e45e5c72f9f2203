//! Writing a report: every file format into one directory, and the roofline SVG of a report.

use std::io;
use std::path::{Path, PathBuf};

use crate::roofline::render_svg;

use super::Report;

/// Paths of the files [`write_reports`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    /// results.json.
    pub json: PathBuf,
    /// results.csv.
    pub csv: PathBuf,
    /// roofline.svg.
    pub svg: PathBuf,
    /// ladder.svg.
    pub ladder: PathBuf,
    /// report.md.
    pub markdown: PathBuf,
    /// report.html.
    pub html: PathBuf,
}

impl ReportFiles {
    /// The report's files in `dir`.
    pub fn in_dir(dir: &Path) -> ReportFiles {
        ReportFiles {
            json: dir.join("results.json"),
            csv: dir.join("results.csv"),
            svg: dir.join("roofline.svg"),
            ladder: dir.join("ladder.svg"),
            markdown: dir.join("report.md"),
            html: dir.join("report.html"),
        }
    }

    /// Every path, in the order they are written.
    pub fn paths(&self) -> [&Path; 6] {
        [
            &self.json,
            &self.csv,
            &self.svg,
            &self.ladder,
            &self.markdown,
            &self.html,
        ]
    }
}

/// Makes `dir` ready for [`write_reports`] before a run, so that a path that cannot take the
/// report is known before anything is timed: creates it if missing and opens each report file
/// for writing (an existing one is left as it is; one created here is removed again).
pub fn prepare_report_dir(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for path in ReportFiles::in_dir(dir).paths() {
        let existed = path.exists();
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        if !existed {
            std::fs::remove_file(path)?;
        }
    }
    Ok(())
}

/// Writes results.json, results.csv, roofline.svg, ladder.svg, report.md and report.html into
/// `dir` (created if missing; files of an earlier report there are replaced). Each file is
/// written beside its place and renamed into it, so a reader (or an interrupted run) never sees
/// half a file.
pub fn write_reports(report: &Report, dir: &Path) -> io::Result<ReportFiles> {
    std::fs::create_dir_all(dir)?;
    write_atomically(&ReportFiles::in_dir(dir).json, report.to_json()?.as_bytes())?;
    write_views(report, dir)
}

/// Writes every file of [`write_reports`] but results.json: what `matmul report` re-renders
/// beside the results.json it reads.
pub fn write_views(report: &Report, dir: &Path) -> io::Result<ReportFiles> {
    std::fs::create_dir_all(dir)?;
    let files = ReportFiles::in_dir(dir);
    write_atomically(&files.csv, report.to_csv().as_bytes())?;
    write_atomically(&files.svg, report.roofline_svg().as_bytes())?;
    write_atomically(&files.ladder, report.ladder_svg().as_bytes())?;
    write_atomically(
        &files.markdown,
        report.to_markdown("roofline.svg").as_bytes(),
    )?;
    write_atomically(&files.html, report.to_html().as_bytes())?;
    Ok(files)
}

/// Writes compare.md and compare.html of `comparison` into `dir` (created if missing); returns
/// their paths.
pub fn write_comparison(
    comparison: &super::Comparison,
    dir: &Path,
) -> io::Result<(PathBuf, PathBuf)> {
    std::fs::create_dir_all(dir)?;
    let (md, html) = (dir.join("compare.md"), dir.join("compare.html"));
    write_atomically(&md, comparison.to_markdown().as_bytes())?;
    write_atomically(&html, comparison.to_html().as_bytes())?;
    Ok((md, html))
}

/// `bytes` into `path` through a temporary file beside it and a rename.
fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".tmp{}", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

impl Report {
    /// roofline.svg: the largest timed shape of every kernel × dtype against the roofs in force.
    pub fn roofline_svg(&self) -> String {
        let (title, subtitle) = self.roofline_titles();
        render_svg(&title, &subtitle, &self.roofs(), &self.plot_points())
    }

    /// The roofline's title (the device's name and the date) and subtitle (the device's
    /// details, then how to read the plot), one line each, wrapped by the renderer.
    pub(crate) fn roofline_titles(&self) -> (String, String) {
        let device = &self.system.device;
        let (name, details) = match device.split_once(" (") {
            Some((n, d)) => (n, d.strip_suffix(')').unwrap_or(d)),
            None => (device.as_str(), ""),
        };
        let date = self.system.date.get(..10).unwrap_or(&self.system.date);
        let title = format!("Roofline: {name}, {date}");
        let mut subtitle = String::new();
        if !details.is_empty() {
            subtitle.push_str(details);
            subtitle.push('\n');
        }
        subtitle.push_str(
            "Each kernel × dtype at its largest timed shape, at the rate of its median time. \
             Intensity: FLOPs over the compulsory traffic (A and B read once, C written once; \
             DRAM bytes measured by ncu where profiled), one intensity per shape for every \
             kernel, so no kernel can rise above its roof but by a measurement error. Markers \
             of one shape that would cover one another are spread sideways around its \
             intensity (dotted line); hollow: the operands may have sat in a cache, so only the \
             compute roof bounds it.",
        );
        (title, subtitle)
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::tests::{check_xml, synthetic_report};

    #[test]
    fn svg_is_well_formed_with_one_point_per_result() {
        let report = synthetic_report();
        let points = report.plot_points();
        // Largest shape per kernel × dtype: 6 kernels × 4 dtypes.
        assert_eq!(points.len(), 24);
        assert!(points.iter().all(|p| p.shape.starts_with("4096")));
        let svg = report.roofline_svg();
        let elements = check_xml(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
        assert!(elements > 50);
        assert_eq!(svg.matches(r#"class="point""#).count(), points.len());
        assert_eq!(svg.matches(r#"class="point-number""#).count(), points.len());
        let (title, subtitle) = report.roofline_titles();
        let (canvas, w, h) = crate::roofline::draw(&title, &subtitle, &report.roofs(), &points);
        canvas.check_layout(w, h).unwrap();
        // Measured roofs solid, the datasheet ones they override dashed; tf32 from the datasheet.
        assert!(svg.contains("memory 3.00 TB/s (measured)"));
        assert!(svg.contains("memory 3.35 TB/s (datasheet)"));
        assert!(svg.contains("tf32 495 TFLOP/s (datasheet)"));
        assert!(svg.contains("int32 33.5 TOP/s (datasheet)"));
        assert!(svg.contains("&lt;test&gt; &amp; co"));
        if let Some(dir) = std::env::var_os("MATMUL_BENCH_DUMP") {
            let dir = PathBuf::from(dir);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("synthetic.svg"), &svg).unwrap();
            std::fs::write(
                dir.join("synthetic.md"),
                report.to_markdown("synthetic.svg"),
            )
            .unwrap();
            std::fs::write(dir.join("synthetic.html"), report.to_html()).unwrap();
            println!("{}", report.table());
        }
        assert!(check_xml("<a><b></a></b>").is_err());
        assert!(check_xml("<a x=1/>").is_err());
        assert!(check_xml("<a>&nope;</a>").is_err());
    }
}
