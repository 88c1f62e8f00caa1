//! The bottleneck model's ceilings, measured in the session that uses them (seed 003): bandwidth
//! by pattern (copy, read = sum, write = fill) and buffer size, launch floor per operation class
//! (the class's smallest operation, launched and timed exactly as the operations are), and peak
//! arithmetic per precision (best cuBLAS product at 4,096..8,192).
//!
//! Fairness rules (docs/MODEL.md): every timed call rotates through enough copies of its working
//! set to cover 4x the L2, so repeated calls read device memory, as the operations do; the
//! sustainable bandwidth of a pattern is the best over buffers of at least 4x the L2.

use super::device::{Arg, DevBuf, OpsGpu, Timing};
use super::model_set::{Op, OpRunner};
use crate::gpu::GpuResult;
use memscope_core::model::{Dtype, SessionCeilings};
use memscope_core::Progress;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct BandwidthPoint {
    pub pattern: String,
    /// Size of one buffer (copy: the source; the destination is as large), bytes.
    pub buffer_bytes: u64,
    /// Bytes read plus written per call.
    pub bytes_per_call: u64,
    pub rotation_sets: usize,
    pub timing: Timing,
    pub bytes_per_s: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct LaunchPoint {
    pub class: String,
    pub operation: String,
    pub timing: Timing,
}

#[derive(Debug, Clone, Serialize)]
pub struct PeakPoint {
    pub precision: String,
    pub n: u64,
    pub timing: Timing,
    pub flops_per_s: f64,
}

/// What `memscope ceilings` writes; its flattened `SessionCeilings` fields make the file usable by
/// `memscope predict --ceilings`.
#[derive(Debug, Clone, Serialize)]
pub struct CeilingsReport {
    #[serde(flatten)]
    pub ceilings: SessionCeilings,
    pub device: String,
    pub sm_count: u32,
    pub l2_bytes: u64,
    /// Buffers at least this large count towards the sustainable bandwidth.
    pub sustained_min_bytes: u64,
    pub bandwidth: Vec<BandwidthPoint>,
    pub launch: Vec<LaunchPoint>,
    pub peak: Vec<PeakPoint>,
}

pub const SIZES: [u64; 10] =
    [4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30, 2 << 30];

/// Target duration of one timed repetition, seconds.
pub const REP_S: f64 = 2e-3;
pub const REPS: usize = 5;

fn pattern_point(g: &OpsGpu, pattern: &str, bytes: u64) -> GpuResult<BandwidthPoint> {
    let footprint = if pattern == "copy" { 2 * bytes } else { bytes };
    let sets = g.rotation_sets(footprint);
    let nvec = bytes / 16;
    let srcs: Vec<DevBuf> =
        (0..sets).map(|i| g.alloc_random(bytes / 4, Dtype::Fp32, 100 + i as u32, 1.0)).collect::<GpuResult<_>>()?;
    let dsts: Vec<DevBuf> =
        if pattern == "copy" { (0..sets).map(|_| g.alloc(bytes)).collect::<GpuResult<_>>()? } else { Vec::new() };
    let acc = g.alloc(16)?;
    let sum_grid = OpsGpu::blocks(nvec).min(g.sm_count * 8);
    let timing = g.time_calls(REP_S, REPS, |i| {
        let s = &srcs[i % sets];
        match pattern {
            "copy" => g.launch(
                "copy_u32",
                OpsGpu::blocks(nvec),
                256,
                0,
                &[Arg::Ptr(s.ptr), Arg::Ptr(dsts[i % sets].ptr), Arg::U64(nvec)],
            ),
            "read" => g.launch("sum_u32", sum_grid, 256, 0, &[Arg::Ptr(s.ptr), Arg::U64(nvec), Arg::Ptr(acc.ptr)]),
            _ => g.launch(
                "fill_u32",
                OpsGpu::blocks(nvec),
                256,
                0,
                &[Arg::Ptr(s.ptr), Arg::U64(nvec), Arg::U32(i as u32)],
            ),
        }
    })?;
    Ok(BandwidthPoint {
        pattern: pattern.into(),
        buffer_bytes: bytes,
        bytes_per_call: footprint,
        rotation_sets: sets,
        bytes_per_s: footprint as f64 / timing.per_call_s,
        timing,
    })
}

/// The launch-floor operation of each class (seed 003's smallest operation of each kind).
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

/// Measure every ceiling. `progress` gets one message per point.
pub fn measure(g: &OpsGpu, progress: &dyn Progress) -> GpuResult<CeilingsReport> {
    // Warm-up: bring the clocks up with ~0.2 s of copies before the first timed point.
    let warm = pattern_point(g, "copy", 256 << 20)?;
    progress.message(&format!("warm-up copy: {:.0} GB/s", warm.bytes_per_s / 1e9));
    let sustained_min = (4 * g.l2_bytes).max(256 << 20);
    let mut bandwidth = Vec::new();
    let mut best: BTreeMap<String, f64> = BTreeMap::new();
    for pattern in ["copy", "read", "write"] {
        for &bytes in &SIZES {
            let p = pattern_point(g, pattern, bytes)?;
            progress.message(&format!("bandwidth {pattern} {} B: {:.1} GB/s", bytes, p.bytes_per_s / 1e9));
            if bytes >= sustained_min {
                let e = best.entry(pattern.to_string()).or_insert(0.0);
                *e = e.max(p.bytes_per_s);
            }
            bandwidth.push(p);
        }
    }
    let mut launch = Vec::new();
    let mut floors = BTreeMap::new();
    for (class, op) in floor_ops() {
        let mut r = OpRunner::new(g, &op)?;
        let timing = r.time(g)?;
        progress.message(&format!("launch floor {class} ({}): {:.2} us", op.label(), timing.per_call_s * 1e6));
        floors.insert(class.to_string(), timing.per_call_s);
        launch.push(LaunchPoint { class: class.into(), operation: op.label(), timing });
    }
    let mut peak = Vec::new();
    let mut peaks = BTreeMap::new();
    for dtype in [Dtype::Fp32, Dtype::Fp16] {
        for n in [4096u64, 6144, 8192] {
            let op = Op::Matmul { m: n, k: n, n, dtype };
            let mut r = OpRunner::new(g, &op)?;
            let timing = g.time_calls(20e-3, 3, |i| r.call(g, i))?;
            let flops_per_s = 2.0 * (n as f64).powi(3) / timing.per_call_s;
            progress.message(&format!("peak {} {n}^3: {:.1} TFLOP/s", dtype.name(), flops_per_s / 1e12));
            let e = peaks.entry(dtype.name().to_string()).or_insert(0.0f64);
            *e = e.max(flops_per_s);
            peak.push(PeakPoint { precision: dtype.name().into(), n, timing, flops_per_s });
        }
    }
    Ok(CeilingsReport {
        ceilings: SessionCeilings { bandwidth_bytes_per_s: best, launch_floor_s: floors, peak_flops_per_s: peaks },
        device: g.name.clone(),
        sm_count: g.sm_count,
        l2_bytes: g.l2_bytes,
        sustained_min_bytes: sustained_min,
        bandwidth,
        launch,
        peak,
    })
}
