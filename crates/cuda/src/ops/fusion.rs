//! Fusion experiment of seed 003: x*y+z over 64 Mi elements as two kernels (mul, then add: six
//! memory passes) versus one fused kernel (four passes), fp32 and fp16. Predicted from the passes
//! and the session's copy-pattern bandwidth (each kernel's bound, summed); measured with events.

use super::device::REPS;
use super::device::{Arg, OpsGpu, Timing};
use crate::gpu::{GpuError, GpuResult};
use memscope_core::Progress;
use memscope_model::bottleneck::{self as m, Dtype, SessionCeilings};
use serde::Serialize;

pub const ELEMS: u64 = 64 << 20;

#[derive(Debug, Clone, Serialize)]
pub struct FusionRow {
    pub dtype: String,
    pub elems: u64,
    pub predicted_two_kernels_s: f64,
    pub predicted_fused_s: f64,
    pub predicted_ratio: f64,
    pub two_kernels: Timing,
    pub fused: Timing,
    pub measured_ratio: f64,
    /// measured ratio / predicted ratio.
    pub ratio_vs_prediction: f64,
    /// 4 n s / fused time.
    pub fused_bytes_per_s: f64,
    /// 6 n s / two-kernel time.
    pub two_kernels_bytes_per_s: f64,
    pub fused_fraction_of_ceiling: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct FusionRun {
    pub rows: Vec<FusionRow>,
    /// fp32 time / fp16 time, unfused and fused (narrower data: predicted 2.0).
    pub fp16_speedup_two_kernels: f64,
    pub fp16_speedup_fused: f64,
}

pub fn run(g: &OpsGpu, ceil: &SessionCeilings, progress: &dyn Progress) -> GpuResult<FusionRun> {
    let mut rows = Vec::new();
    for dtype in [Dtype::Fp32, Dtype::Fp16] {
        let n = ELEMS;
        let sfx = if dtype == Dtype::Fp32 { "f32" } else { "f16" };
        let vec = if dtype == Dtype::Fp32 { 4 } else { 8 };
        let c = ceil;
        let pick =
            |cost: &m::OpCost, class: &str| c.choose(cost, class, dtype).map_err(|e| GpuError::invalid(e.to_string()));
        let (mul, add, fused) = (m::add_cost(n, dtype), m::add_cost(n, dtype), m::fused_mul_add_cost(n, dtype));
        let (cm, ca, cf) = (pick(&mul, "mul")?, pick(&add, "add")?, pick(&fused, "fma")?);
        let p_two = mul.predict(cm.launch_s, cm.bandwidth_bytes_per_s, cm.peak_flops_per_s).time_s
            + add.predict(ca.launch_s, ca.bandwidth_bytes_per_s, ca.peak_flops_per_s).time_s;
        let p_fused = fused.predict(cf.launch_s, cf.bandwidth_bytes_per_s, cf.peak_flops_per_s).time_s;
        progress.message(&format!(
            "fusion {sfx}: predicted two kernels {:.3} ms, fused {:.3} ms",
            p_two * 1e3,
            p_fused * 1e3
        ));
        let x = g.alloc_random(n, dtype, 21, 1.0)?;
        let y = g.alloc_random(n, dtype, 22, 1.0)?;
        let z = g.alloc_random(n, dtype, 23, 1.0)?;
        let t = g.alloc(n * dtype.size_bytes() as u64)?;
        let o = g.alloc(n * dtype.size_bytes() as u64)?;
        let grid = OpsGpu::blocks(n / vec);
        let kargs =
            |a: u64, b: u64, c: u64, out: u64| [Arg::Ptr(a), Arg::Ptr(b), Arg::Ptr(c), Arg::Ptr(out), Arg::U64(n)];
        let two = g.time_calls(10e-3, REPS, |_| {
            g.launch(&format!("mul_{sfx}"), grid, 256, 0, &kargs(x.ptr, y.ptr, y.ptr, t.ptr))?;
            g.launch(&format!("add_{sfx}"), grid, 256, 0, &kargs(t.ptr, z.ptr, z.ptr, o.ptr))
        })?;
        let one = g.time_calls(10e-3, REPS, |_| {
            g.launch(&format!("fma_{sfx}"), grid, 256, 0, &kargs(x.ptr, y.ptr, z.ptr, o.ptr))
        })?;
        let s = dtype.size_bytes();
        let measured_ratio = two.per_call_s / one.per_call_s;
        let predicted_ratio = p_two / p_fused;
        let fused_bps = 4.0 * n as f64 * s / one.per_call_s;
        progress.message(&format!("fusion {sfx}: measured ratio {measured_ratio:.3} (predicted {predicted_ratio:.3})"));
        rows.push(FusionRow {
            dtype: dtype.name().into(),
            elems: n,
            predicted_two_kernels_s: p_two,
            predicted_fused_s: p_fused,
            predicted_ratio,
            measured_ratio,
            ratio_vs_prediction: measured_ratio / predicted_ratio,
            fused_bytes_per_s: fused_bps,
            two_kernels_bytes_per_s: 6.0 * n as f64 * s / two.per_call_s,
            fused_fraction_of_ceiling: fused_bps / cf.bandwidth_bytes_per_s,
            two_kernels: two,
            fused: one,
        });
    }
    Ok(FusionRun {
        fp16_speedup_two_kernels: rows[0].two_kernels.per_call_s / rows[1].two_kernels.per_call_s,
        fp16_speedup_fused: rows[0].fused.per_call_s / rows[1].fused.per_call_s,
        rows,
    })
}
