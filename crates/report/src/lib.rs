//! memscope-report: the results schema ("memscope/1", docs/CONTRACTS.md) and its writers. Writers return
//! bytes (hyperfine-style: one small file per format); only `json::write_atomic` touches disk.

pub mod animation;
pub mod clocks;
pub mod compare;
pub mod csv;
pub mod diagram;
pub mod fleet;
pub mod fleet_view;
pub mod html;
pub mod hygiene;
pub mod json;
pub mod links_view;
pub mod markdown;
pub mod model_section;
pub mod nvbandwidth;
pub mod results;
mod results_locate;
pub mod roofline;
pub mod sample;
pub mod svg;
pub mod table;
pub mod units;

pub use results::{ProbeRecord, ProbeStatus, Results, RunPhase, RunState, ToolInfo, SCHEMA};
