//! memscope-results: the results document `memscope/1` (docs/ARCHITECTURE.md, "Results"): its
//! schema, validation that names the JSON path of a bad value, the atomic writer, the merge of
//! several documents into one and the model section. The session writes documents through it;
//! crates/report renders them.

pub mod json;
pub mod merge;
pub mod model_section;
mod read;
pub mod results;
pub mod sample;

pub use results::{ProbeRecord, ProbeStatus, Results, RunPhase, RunState, ToolInfo, SCHEMA};
