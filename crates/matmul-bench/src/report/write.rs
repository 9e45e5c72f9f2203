//! Writing a report: every file format into one directory, and the roofline SVG of a report.

use std::io;
use std::path::{Path, PathBuf};

use crate::roofline::render_svg;

use super::Report;

/// Paths of the files [`write_reports`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    pub json: PathBuf,
    pub csv: PathBuf,
    pub svg: PathBuf,
    pub markdown: PathBuf,
    pub html: PathBuf,
}

/// Writes results.json, results.csv, roofline.svg, report.md and report.html into `dir`
/// (created if missing).
pub fn write_reports(report: &Report, dir: &Path) -> io::Result<ReportFiles> {
    std::fs::create_dir_all(dir)?;
    let files = ReportFiles {
        json: dir.join("results.json"),
        csv: dir.join("results.csv"),
        svg: dir.join("roofline.svg"),
        markdown: dir.join("report.md"),
        html: dir.join("report.html"),
    };
    std::fs::write(&files.json, report.to_json()?)?;
    std::fs::write(&files.csv, report.to_csv())?;
    std::fs::write(&files.svg, report.roofline_svg())?;
    std::fs::write(&files.markdown, report.to_markdown("roofline.svg"))?;
    std::fs::write(&files.html, report.to_html())?;
    Ok(files)
}

impl Report {
    pub fn roofline_svg(&self) -> String {
        let title = format!("Roofline: {} ({})", self.system.device, self.system.date);
        let subtitle = "Largest timed shape per kernel and dtype; intensity from each kernel's \
                        global-memory traffic model (before caches), rate from the median time.";
        render_svg(&title, subtitle, &self.roofs(), &self.plot_points())
    }
}
