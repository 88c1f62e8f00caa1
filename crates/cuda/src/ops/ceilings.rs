//! The launch-floor operation of each class of the bottleneck model (seed 003, issue 24) and its
//! measurement (the timing rule and the sustained sizes the operations share are in device.rs). The
//! ceilings themselves are findings of the same session (probes bw, launch, peak; taken by
//! `memscope_model::run_ceilings`); the launch probe measures the per-class floors through
//! `class_floors`, the one place that measurement lives.
//!
//! Fairness rules (docs/MODEL.md): every timed call rotates through enough copies of its working
//! set to cover 4x the L2, so repeated calls read device memory, as the operations do.

use super::device::{OpsGpu, Timing};
use super::model_set::{Op, OpRunner};
use crate::gpu::GpuResult;
use memscope_model::bottleneck::Dtype;
use serde::Serialize;

/// The launch-floor operation of each class (seed 003's smallest operation of each kind), in the
/// order of `memscope_core::keys::LAUNCH_CLASSES`.
pub fn floor_ops() -> Vec<(&'static str, Op)> {
    vec![
        ("matmul.fp32", Op::Matmul { m: 8, k: 8, n: 8, dtype: Dtype::Fp32 }),
        ("matmul.fp16", Op::Matmul { m: 8, k: 8, n: 8, dtype: Dtype::Fp16 }),
        ("add", Op::Add { n: 1024, dtype: Dtype::Fp32 }),
        ("mul", Op::Mul { n: 1024, dtype: Dtype::Fp32 }),
        ("fma", Op::Fma { n: 1024, dtype: Dtype::Fp32 }),
        ("gelu", Op::Gelu { n: 1024, dtype: Dtype::Fp32 }),
        ("layernorm", Op::LayerNorm { rows: 4, cols: 768, dtype: Dtype::Fp32 }),
        ("softmax", Op::Softmax { rows: 4, cols: 1024, dtype: Dtype::Fp32 }),
        ("attention", Op::Attention { batch: 1, heads: 1, tokens: 16, dtype: Dtype::Fp32 }),
    ]
}

/// One class's launch floor: its smallest operation, launched and timed exactly as the
/// operations are (`OpRunner::time`).
#[derive(Debug, Clone, Serialize)]
pub struct LaunchPoint {
    pub class: String,
    pub operation: String,
    pub rotation_sets: usize,
    pub timing: Timing,
}

/// Measure the launch floor of every class of `floor_ops`, in order.
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
    use super::*;

    #[test]
    fn floor_ops_cover_the_launch_classes_in_order_with_their_own_class() {
        let classes: Vec<&str> = floor_ops().iter().map(|(c, _)| *c).collect();
        assert_eq!(classes, memscope_core::keys::LAUNCH_CLASSES);
        for (c, op) in floor_ops() {
            assert_eq!(op.class(), c, "{}", op.label());
        }
    }

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
