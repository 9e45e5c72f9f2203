//! Benchmark measurement and report rendering for `matmul`.
//!
//! [`run`] takes a [`matmul::Backend`] and a [`BenchConfig`] and, for every kernel × dtype ×
//! shape, skips what cannot run (recording why), verifies the result against the CPU reference
//! (in full, or sampled for large products), then times it with rotating input sets, and returns a
//! [`Report`]: statistics, rates, ratios to cuBLAS and to the naive kernel, and the roofline bound
//! of every result against measured and datasheet [`Ceilings`]. [`write_reports`] renders it as
//! results.json (schema: docs/results-schema.md), results.csv, roofline.svg, report.md and
//! report.html; [`Report::table`] is the text table for stdout.
//!
//! The shapes can come from a [`Suite`] (`bench/suites/*.txt`, built in: tagged cases such as
//! LLM layers, unaligned, small-M, small-K and K-heavy products), and a kernel can be
//! [`BenchKernel::Auto`], the library's own choice per problem; [`Report::summary`] gives each
//! kernel's geometric mean and worst ratio to cuBLAS over the run, overall and per tag.
//!
//! Everything is written against the `Backend` trait; the tests use `matmul::cpu::CpuBackend`.

#![warn(missing_docs)]

pub mod ceilings;
pub mod check;
pub mod defaults;
pub mod fmt;
pub mod multi;
pub mod plan;
pub mod profile;
pub mod record;
pub mod report;
pub mod roofline;
pub mod runner;
pub mod stats;
pub mod suite;
pub mod system;

#[cfg(test)]
mod tests;

pub use ceilings::{datasheet, measure_cpu, measure_gpu, Ceilings, CpuCeilingOptions};
pub use check::{Verification, VerifyMethod};
pub use report::{
    prepare_report_dir, write_comparison, write_reports, write_views, Baselines, CeilingsInfo,
    Comparison, KernelFile, Record, Report, ReportFiles, Settings, Status, Timing, IMAD_KERNEL,
    INT8_CEILING, KERNEL_FILE_PREFIX, SCHEMA_VERSION,
};
pub use roofline::{render_svg, Bytes, Placement, PlotPoint, Roof, RoofBound, RoofSource, Roofs};
pub use runner::{
    default_cpu_cache_bytes, precompile, run, BenchConfig, BenchKernel, CompileUnit, External,
    ExternalKernel, PlanEntry, ProgressEvent,
};
pub use stats::Stats;
pub use suite::{Suite, SuiteError};
pub use system::SystemInfo;
