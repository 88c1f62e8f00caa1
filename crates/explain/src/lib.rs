//! memscope explain: a PyTorch profiler trace's kernels set against the session's measured
//! ceilings (which op launched each kernel, its work, its bound, the ceiling that binds, its
//! efficiency; the host's dispatch and the device's idle time), and decode-step predictions scaled
//! from such a trace (docs/MODEL.md, "Real programs"; JSON in docs/CONTRACTS.md).

pub mod ceilings;
pub mod explain;
pub mod library;
pub mod ops;
pub mod predict;
pub mod render;
pub mod trace;

pub use ceilings::{Ceilings, CeilingsError};
pub use explain::{explain, explain_with, Explanation};
pub use library::LibraryCalibration;
pub use trace::{load, Trace, TraceError};

/// Read a results file's ceilings.
pub fn load_ceilings(path: &std::path::Path) -> Result<Ceilings, String> {
    let name = path.display().to_string();
    let text = std::fs::read(path).map_err(|e| format!("{name}: cannot read the file: {e}"))?;
    let doc: serde_json::Value = serde_json::from_slice(&text).map_err(|e| format!("{name}: not JSON ({e})"))?;
    ceilings::from_results(&doc, &name).map_err(|e| e.to_string())
}

/// The cuBLAS calibration sweep and the composition's other ceilings in the results of
/// `memscope batch --compose` (`model.parts.compose.compose_ceilings.ceilings`).
pub fn load_calibration(path: &std::path::Path) -> Result<memscope_model::compose::ComposeCeilings, String> {
    let name = path.display().to_string();
    let text = std::fs::read(path).map_err(|e| format!("{name}: cannot read the file: {e}"))?;
    let doc: serde_json::Value = serde_json::from_slice(&text).map_err(|e| format!("{name}: not JSON ({e})"))?;
    let cc = doc.pointer("/model/parts/compose/compose_ceilings/ceilings").ok_or_else(|| {
        format!("{name}: no composition ceilings (model.parts.compose.compose_ceilings): give the results of `memscope batch --compose`")
    })?;
    serde_json::from_value(cc.clone()).map_err(|e| format!("{name}: unreadable composition ceilings ({e})"))
}
