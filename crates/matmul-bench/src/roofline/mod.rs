//! The roofline: which roof bounds each result, and a hand-written log-log SVG of it.
//!
//! Intensity is operations per byte (FLOPs, or integer OPs for u32, over the bytes of the kernel's
//! traffic model unless a profiler measured them); rates are G(FL)OP/s, bandwidths GB/s, so
//! bandwidth × intensity is a rate in the same unit.
//!
//! `model` decides which roof bounds a result ([`Roofs`], [`RoofBound`]) and what a plotted point
//! is ([`PlotPoint`]); `svg` draws them ([`render_svg`]).

mod model;
mod svg;

pub use model::{PlotPoint, Roof, RoofBound, RoofSource, Roofs};
pub use svg::render_svg;
