//! The 58-operation evaluation of seed 003: matrix products (cuBLAS) from decode-sized to 4,096
//! square, adds and GELUs from 1,024 to 134 M elements, layer norms (768 columns) and softmaxes
//! (1,024 columns) from one row to 16,384 rows, each in fp32 and fp16. For each operation the
//! prediction is made from the session's ceilings and recorded before it is measured (events over
//! batched calls, rotating through copies of the working set so calls read device memory), then
//! all are scored with `ratio_summary`.

use super::device::{sustained_min_bytes, REPS, REP_S, SIZES};
use super::device::{Arg, DevBuf, OpsGpu, Timing};
pub use super::launchers::{attention, launch_rows, rows_variant};
use crate::gpu::{GpuError, GpuResult};
use memscope_core::Progress;
use memscope_model::bottleneck::{
    self as m, ChosenCeilings, Dtype, Prediction, RatioSummary, ScoredPoint, SessionCeilings,
};
use memscope_model::op_set::{large_op, seed_operations, Op};
use serde::Serialize;

/// An operation with its rotation sets allocated and initialised.
pub struct OpRunner {
    pub op: Op,
    sets: Vec<Vec<DevBuf>>,
    /// Layer-norm gamma and beta (fp32, shared by all sets).
    params: Vec<DevBuf>,
}

impl OpRunner {
    pub fn new(g: &OpsGpu, op: &Op) -> GpuResult<Self> {
        let cost = op.cost();
        let nsets = g.rotation_sets(cost.bytes() as u64);
        let dt = op.dtype();
        let s = dt.size_bytes() as u64;
        let mut sets = Vec::with_capacity(nsets);
        for i in 0..nsets {
            let seed = 1000 + 16 * i as u32;
            let bufs = match *op {
                Op::Matmul { m, k, n, .. } => {
                    vec![
                        g.alloc_random(m * k, dt, seed, 1.0)?,
                        g.alloc_random(k * n, dt, seed + 1, 1.0)?,
                        g.alloc(m * n * s)?,
                    ]
                }
                Op::Add { n, .. } | Op::Mul { n, .. } | Op::Fma { n, .. } => vec![
                    g.alloc_random(n, dt, seed, 1.0)?,
                    g.alloc_random(n, dt, seed + 1, 1.0)?,
                    if matches!(op, Op::Fma { .. }) { g.alloc_random(n, dt, seed + 2, 1.0)? } else { g.alloc(16)? },
                    g.alloc(n * s)?,
                ],
                Op::Gelu { n, .. } => vec![g.alloc_random(n, dt, seed, 3.0)?, g.alloc(n * s)?],
                Op::LayerNorm { rows, cols, .. } | Op::Softmax { rows, cols, .. } => {
                    vec![g.alloc_random(rows * cols, dt, seed, 3.0)?, g.alloc(rows * cols * s)?]
                }
                Op::Attention { batch, heads, tokens, .. } => {
                    let kv = batch * heads * tokens * 64;
                    vec![
                        g.alloc_random(batch * heads * 64, dt, seed, 1.0)?,
                        g.alloc_random(kv, dt, seed + 1, 1.0)?,
                        g.alloc_random(kv, dt, seed + 2, 1.0)?,
                        g.alloc(batch * heads * 64 * s)?,
                    ]
                }
            };
            sets.push(bufs);
        }
        let params = match *op {
            Op::LayerNorm { cols, .. } => {
                vec![g.alloc_random(cols, Dtype::Fp32, 7, 1.0)?, g.alloc_random(cols, Dtype::Fp32, 8, 0.1)?]
            }
            _ => Vec::new(),
        };
        Ok(OpRunner { op: *op, sets, params })
    }

    pub fn rotation_sets(&self) -> usize {
        self.sets.len()
    }

    /// Issue call number `i` (set i mod sets).
    pub fn call(&mut self, g: &OpsGpu, i: usize) -> GpuResult<()> {
        let b = &self.sets[i % self.sets.len()];
        let sfx = if self.op.dtype() == Dtype::Fp32 { "f32" } else { "f16" };
        let vec = if self.op.dtype() == Dtype::Fp32 { 4 } else { 8 };
        match self.op {
            Op::Matmul { m, k, n, dtype } => g.gemm(dtype, m, k, n, b[0].ptr, b[1].ptr, b[2].ptr),
            Op::Add { n, .. } | Op::Mul { n, .. } | Op::Fma { n, .. } | Op::Gelu { n, .. } => {
                let ptrs = if matches!(self.op, Op::Gelu { .. }) {
                    [b[0].ptr, b[0].ptr, b[0].ptr, b[1].ptr]
                } else {
                    [b[0].ptr, b[1].ptr, b[2].ptr, b[3].ptr]
                };
                let args = [Arg::Ptr(ptrs[0]), Arg::Ptr(ptrs[1]), Arg::Ptr(ptrs[2]), Arg::Ptr(ptrs[3]), Arg::U64(n)];
                g.launch(&format!("{}_{sfx}", self.op.kind()), OpsGpu::blocks(n / vec), 256, 0, &args)
            }
            Op::LayerNorm { rows, cols, dtype } => {
                let p = Some((self.params[0].ptr, self.params[1].ptr));
                launch_rows(g, "layernorm", dtype, b[0].ptr, b[1].ptr, p, rows, cols)
            }
            Op::Softmax { rows, cols, dtype } => launch_rows(g, "softmax", dtype, b[0].ptr, b[1].ptr, None, rows, cols),
            Op::Attention { batch, heads, tokens, .. } => {
                let (q, k, v, o) = (b[0].ptr, b[1].ptr, b[2].ptr, b[3].ptr);
                attention(g, self.op.dtype(), q, (heads * 64) as i32, k, v, o, batch, heads, tokens, tokens)
            }
        }
    }

    /// Time per call with the harness's rule.
    pub fn time(&mut self, g: &OpsGpu) -> GpuResult<Timing> {
        g.time_calls(REP_S, REPS, |i| self.call(g, i))
    }
}

/// One scored operation.
#[derive(Debug, Clone, Serialize)]
pub struct ModelPoint {
    pub operation: String,
    pub kind: String,
    pub dtype: String,
    pub flops: f64,
    pub bytes: f64,
    pub ceilings: ChosenCeilings,
    /// Written before the measurement.
    pub prediction: Prediction,
    pub rotation_sets: usize,
    pub measured: Timing,
    pub ratio: f64,
    /// Bytes / measured time.
    pub achieved_bytes_per_s: f64,
    pub achieved_flops_per_s: f64,
}

/// Predict then measure one operation.
pub fn predict_and_measure(
    g: &OpsGpu,
    ceil: &SessionCeilings,
    op: &Op,
    progress: &dyn Progress,
) -> GpuResult<ModelPoint> {
    let cost = op.cost();
    let chosen = ceil.choose(&cost, &op.class(), op.dtype()).map_err(|e| GpuError::invalid(e.to_string()))?;
    let prediction = cost.predict(chosen.launch_s, chosen.bandwidth_bytes_per_s, chosen.peak_flops_per_s);
    progress.message(&format!(
        "predict {}: {:.2} us ({}-bound)",
        op.label(),
        prediction.time_s * 1e6,
        prediction.regime.name()
    ));
    let mut r = OpRunner::new(g, op)?;
    let measured = r.time(g)?;
    let t = measured.per_call_s;
    progress.message(&format!("measured {}: {:.2} us, ratio {:.2}", op.label(), t * 1e6, t / prediction.time_s));
    Ok(ModelPoint {
        operation: op.label(),
        kind: op.kind().into(),
        dtype: op.dtype().name().into(),
        flops: cost.flops,
        bytes: cost.bytes(),
        ceilings: chosen,
        rotation_sets: r.rotation_sets(),
        ratio: t / prediction.time_s,
        achieved_bytes_per_s: cost.bytes() / t,
        achieved_flops_per_s: cost.flops / t,
        prediction,
        measured,
    })
}

/// A kernel's efficiency at its largest size: achieved bandwidth over its pattern's ceiling.
#[derive(Debug, Clone, Serialize)]
pub struct KernelEfficiency {
    pub operation: String,
    pub achieved_bytes_per_s: f64,
    pub ceiling_bytes_per_s: f64,
    pub pattern: String,
    pub fraction: f64,
}

/// One kernel at one buffer size of the large-size efficiency check.
#[derive(Debug, Clone, Serialize)]
pub struct LargePoint {
    pub operation: String,
    /// The operation's largest buffer (the input; attention: the key cache), bytes.
    pub buffer_bytes: u64,
    pub bytes_per_call: f64,
    pub rotation_sets: usize,
    pub measured: Timing,
    pub achieved_bytes_per_s: f64,
}

/// The kernel-efficiency check at large sizes: each of our kernels at every buffer size the
/// ceilings count as sustained (the sweep's sizes >= max(4 x L2, 256 MiB)), its figure the best of
/// them, exactly as a pattern's ceiling is the best of the same sizes; judged against the ceiling
/// of the pattern its traffic matches. Separate from (and not part of) the 58-point scoring.
#[derive(Debug, Clone, Serialize)]
pub struct LargeEfficiency {
    pub kernel: String,
    pub dtype: String,
    /// The best point's operation.
    pub operation: String,
    pub pattern: String,
    pub ceiling_bytes_per_s: f64,
    pub achieved_bytes_per_s: f64,
    pub fraction: f64,
    pub points: Vec<LargePoint>,
}

/// Run the large-size check for add, GELU, layer norm, softmax (fp32, fp16) and decode attention
/// (fp32: the only attention kernel).
pub fn large_efficiency(
    g: &OpsGpu,
    ceil: &SessionCeilings,
    progress: &dyn Progress,
) -> GpuResult<Vec<LargeEfficiency>> {
    let sustained = sustained_min_bytes(g.l2_bytes);
    let sizes: Vec<u64> = SIZES.iter().copied().filter(|&b| b >= sustained).collect();
    if sizes.is_empty() {
        return Err(GpuError::invalid(format!("no size reaches the sustained minimum of {sustained} bytes")));
    }
    let mut out = Vec::new();
    for dtype in [Dtype::Fp32, Dtype::Fp16] {
        for kind in ["add", "gelu", "layernorm", "softmax", "attention"] {
            if kind == "attention" && dtype != Dtype::Fp32 {
                continue;
            }
            let mut points = Vec::new();
            for &bytes in &sizes {
                let op = large_op(kind, dtype, bytes);
                let cost = op.cost();
                let mut r = OpRunner::new(g, &op)?;
                let measured = r.time(g)?;
                let bps = cost.bytes() / measured.per_call_s;
                progress.message(&format!(
                    "large {}: {:.1} us, {:.0} GB/s",
                    op.label(),
                    measured.per_call_s * 1e6,
                    bps / 1e9
                ));
                points.push(LargePoint {
                    operation: op.label(),
                    buffer_bytes: bytes,
                    bytes_per_call: cost.bytes(),
                    rotation_sets: r.rotation_sets(),
                    measured,
                    achieved_bytes_per_s: bps,
                });
            }
            let op = large_op(kind, dtype, sizes[0]);
            let chosen = ceil.choose(&op.cost(), &op.class(), dtype).map_err(|e| GpuError::invalid(e.to_string()))?;
            let best = points
                .iter()
                .max_by(|a, b| a.achieved_bytes_per_s.total_cmp(&b.achieved_bytes_per_s))
                .ok_or_else(|| GpuError::invalid("no sustained buffer size"))?
                .clone();
            out.push(LargeEfficiency {
                kernel: kind.into(),
                dtype: dtype.name().into(),
                operation: best.operation.clone(),
                pattern: chosen.pattern.name().into(),
                ceiling_bytes_per_s: chosen.bandwidth_bytes_per_s,
                achieved_bytes_per_s: best.achieved_bytes_per_s,
                fraction: best.achieved_bytes_per_s / chosen.bandwidth_bytes_per_s,
                points,
            });
        }
    }
    Ok(out)
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelRun {
    /// Row kernels used: "layernorm vN, softmax vN" (see `rows_variant`).
    pub rows_kernel: String,
    pub points: Vec<ModelPoint>,
    pub summary: Option<RatioSummary>,
    /// Efficiency at the 58 set's largest sizes (and attention at B=512): kept as before.
    pub kernels: Vec<KernelEfficiency>,
    /// The kernel-efficiency check at large sizes (`large_efficiency`).
    pub kernels_large: Vec<LargeEfficiency>,
}

/// Row kernels in use, for the record.
pub fn rows_kernel_label() -> String {
    format!("layernorm {}, softmax {}", rows_variant("layernorm"), rows_variant("softmax"))
}

/// The 58 points, scored; plus the efficiency of our own kernels at their largest sizes (the 58
/// set's largest add, GELU, layer norm, softmax, and decode attention at B=512, h=12, T=128), and
/// (unless `efficiency_only`, which skips the 58 points) the large-size check.
pub fn run(g: &OpsGpu, ceil: &SessionCeilings, efficiency_only: bool, progress: &dyn Progress) -> GpuResult<ModelRun> {
    let ops = if efficiency_only { Vec::new() } else { seed_operations() };
    progress.start(ops.len() as u64, "58 operations");
    let mut points = Vec::new();
    for op in &ops {
        points.push(predict_and_measure(g, ceil, op, progress)?);
        progress.advance(1);
    }
    let scored: Vec<ScoredPoint> = points
        .iter()
        .map(|p| ScoredPoint {
            measured_s: p.measured.per_call_s,
            predicted_s: p.prediction.time_s,
            regime: p.prediction.regime,
        })
        .collect();
    let summary = m::ratio_summary(&scored);
    let mut kernels = Vec::new();
    let big = |p: &&ModelPoint| {
        matches!(p.kind.as_str(), "add" | "gelu" | "layernorm" | "softmax")
            && (p.operation.contains("134217728") || p.operation.contains("16384x"))
    };
    let eff = |p: &ModelPoint| KernelEfficiency {
        operation: p.operation.clone(),
        achieved_bytes_per_s: p.achieved_bytes_per_s,
        ceiling_bytes_per_s: p.ceilings.bandwidth_bytes_per_s,
        pattern: p.ceilings.pattern.name().into(),
        fraction: p.achieved_bytes_per_s / p.ceilings.bandwidth_bytes_per_s,
    };
    kernels.extend(points.iter().filter(big).map(eff));
    let att = predict_and_measure(
        g,
        ceil,
        &Op::Attention { batch: 512, heads: 12, tokens: 128, dtype: Dtype::Fp32 },
        progress,
    )?;
    kernels.push(eff(&att));
    let kernels_large = large_efficiency(g, ceil, progress)?;
    Ok(ModelRun { rows_kernel: rows_kernel_label(), points, summary, kernels, kernels_large })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The large-size check's shapes: the largest buffer reaches the size, by less than one row.
    #[test]
    fn large_op_buffers_reach_the_size_by_less_than_a_row() {
        for dtype in [Dtype::Fp32, Dtype::Fp16] {
            let s = dtype.size_bytes() as u64;
            for bytes in [256u64 << 20, 1 << 30, 2 << 30] {
                let (buf, row) = match large_op("layernorm", dtype, bytes) {
                    Op::LayerNorm { rows, cols, .. } => (rows * cols * s, cols * s),
                    o => panic!("{o:?}"),
                };
                assert!(buf >= bytes && buf - bytes < row, "{buf} {bytes}");
                let buf = match large_op("attention", dtype, bytes) {
                    Op::Attention { batch, heads, tokens, .. } => batch * heads * tokens * 64 * s,
                    o => panic!("{o:?}"),
                };
                assert!(buf >= bytes && buf - bytes < 12 * 128 * 64 * s);
                assert_eq!(large_op("add", dtype, bytes), Op::Add { n: bytes / s, dtype });
            }
        }
    }
}
