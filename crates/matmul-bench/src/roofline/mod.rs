//! The roofline: which roof bounds each result, and a hand-written log-log SVG of it.
//!
//! Intensity is operations per byte: FLOPs (integer OPs for u32) over the compulsory traffic (A and
//! B read once, C written once: one intensity per problem, the same for every kernel), or over the
//! DRAM bytes a profiler measured. No kernel moves fewer bytes than the compulsory ones from DRAM
//! nor computes faster than the compute peak, so a result above its roof is a measurement problem.
//! Rates are G(FL)OP/s, bandwidths GB/s, so bandwidth × intensity is a rate in the same unit.
//!
//! `model` decides which roof bounds a result ([`Roofs`], [`RoofBound`]) and what a plotted point
//! is ([`PlotPoint`]); `svg` draws them ([`render_svg`]).

pub(crate) mod canvas;
mod model;
mod svg;

pub(crate) use model::roof_op;
pub use model::{Bytes, Placement, PlotPoint, Roof, RoofBound, RoofSource, Roofs};
#[cfg(test)]
pub(crate) use svg::draw;
pub use svg::render_svg;
pub(crate) use svg::{dtype_color, roof_color, short_shape};
