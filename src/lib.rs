//! trainwreck: reads what a failed ML training run left behind and says why it died.
//!
//! Data flows one way: `inputs` (collect files) → `sources` (detect kind, read lines, parse
//! facts) → `rules` (compiled knowledge base, scanner) → `correlate` (findings, ranking,
//! cascades) → `report` (the only module that formats output).

pub mod facts;
pub mod model;
pub mod sources;
