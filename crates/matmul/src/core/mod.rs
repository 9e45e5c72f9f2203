//! The bottom layer: the data and its types. A product's [`problem`] (shape, transposes, dtypes),
//! its element types ([`dtype`]), matrices ([`matrix`]) and borrowed views of them ([`view`]), errors ([`error`]), the host-memory
//! check ([`host`]) and the library's configuration ([`config`]). Nothing here names a layer
//! above.

pub mod config;
pub mod dtype;
pub mod error;
pub mod host;
pub mod matrix;
pub mod problem;
pub mod view;
