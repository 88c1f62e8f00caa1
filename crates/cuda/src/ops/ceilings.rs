//! The measurement of each class's launch floor of the bottleneck model (seed 003; the
//! operations are `memscope_model::op_set::floor_ops`; the timing rule and the sustained sizes the
//! operations share are in device.rs). The
//! ceilings themselves are findings of the same session (probes bw, launch, peak; taken by
//! `memscope_model::run_ceilings`); the launch probe measures the per-class floors through
//! `class_floors`, the one place that measurement lives.
//!
//! Fairness rules (docs/MODEL.md): every timed call rotates through enough copies of its working
//! set to cover 4x the L2, so repeated calls read device memory, as the operations do.

use super::device::{OpsGpu, Timing};
use super::model_set::OpRunner;
use crate::gpu::GpuResult;
use memscope_model::op_set::floor_ops;
use serde::Serialize;

/// One class's launch floor: its smallest operation, launched and timed exactly as the
/// operations are (`OpRunner::time`).
#[derive(Debug, Clone, Serialize)]
pub struct LaunchPoint {
    pub class: String,
    pub operation: String,
    pub rotation_sets: usize,
    pub timing: Timing,
}

/// Measure the launch floor of every class of `op_set::floor_ops`, in order.
pub fn class_floors(g: &OpsGpu) -> GpuResult<Vec<LaunchPoint>> {
    let mut out = Vec::new();
    for (class, op) in floor_ops() {
        let mut r = OpRunner::new(g, &op)?;
        let timing = r.time(g)?;
        out.push(LaunchPoint { class: class.into(), operation: op.label(), rotation_sets: r.rotation_sets(), timing });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn sustained_minimum_is_four_l2s_or_256_mib() {
        use crate::ops::device::{sustained_min_bytes, SIZES};
        assert_eq!(sustained_min_bytes(60 << 20), 256 << 20);
        // The H200's 60 MiB L2: 240 MiB, so 256 MiB; a 128 MiB L2: 512 MiB.
        assert_eq!(sustained_min_bytes(62914560), 256 << 20);
        assert_eq!(sustained_min_bytes(128 << 20), 512 << 20);
        assert_eq!(sustained_min_bytes(1 << 20), 256 << 20);
        assert!(SIZES.iter().any(|&s| s >= sustained_min_bytes(62914560)));
    }
}
