//! memscope-report: the results schema ("memscope/1", DESIGN.md) and its writers. Writers return
//! bytes (hyperfine-style: one small file per format); only `json::write_atomic` touches disk.

pub mod json;
pub mod results;
pub mod table;

pub use results::{ProbeRecord, ProbeStatus, Results, ToolInfo, SCHEMA};
