//! Batched-decode experiment of seed 003: one GPT-2-small decode step as its real kernel sequence
//! (12 layers of layer norm, QKV product, attention over a static KV cache of 128 tokens, output
//! product, residual add, layer norm, two MLP products around a GELU, residual add; then the final
//! layer norm and the LM head; 122 launches, cuBLAS for the products), fp32, batch 1..512. The
//! measured step is set against the seed's two compositions (max of totals; sum of per-kernel
//! bounds) and a third: the sum of every kernel's own three-ceiling bound.
//! The model's buffers and step (`Gpt2`) take any GPT-2 shape, precision and context (the composition's
//! sweep, ops/compose.rs, runs GPT-2 small and a GPT-2-medium shape through them).
//! Biases, the embedding lookup and the KV-cache append are left out (each is a small kernel; the
//! seed's weights figure includes the biases).

use super::device::{DevBuf, OpsGpu, Timing};
use super::model_set::{attention, launch_rows};
use crate::gpu::{GpuError, GpuResult};
use memscope_core::Progress;
use memscope_model::bottleneck::{
    self as m, Dtype, OpCost, Prediction, SessionCeilings, GPT2_SMALL, GPT2_SMALL_STEP_KERNELS,
};
use memscope_model::compose_step::{DecodeShape, GPT2_SMALL_SHAPE, HEAD_DIM};
use memscope_model::op_set::Op;
use serde::Serialize;

// GPT-2 small's widths for the seed's per-kernel sum (`step_ops`).
const D: u64 = GPT2_SMALL_SHAPE.width;
const H: u64 = GPT2_SMALL_SHAPE.heads;
const FF: u64 = GPT2_SMALL_SHAPE.ff;
const VOCAB: u64 = GPT2_SMALL_SHAPE.vocab;
pub const CONTEXT: u64 = 128;
pub const BATCHES: [u64; 8] = [1, 8, 32, 64, 128, 192, 256, 512];

struct Layer {
    ln1: [DevBuf; 2],
    ln2: [DevBuf; 2],
    wqkv: DevBuf,
    wo: DevBuf,
    w1: DevBuf,
    w2: DevBuf,
    k: DevBuf,
    v: DevBuf,
}

/// A GPT-2-shaped model's buffers in one precision, sized for the largest batch and a context
/// (any width and depth, fp32 or fp16, any context; seed 003: GPT-2 small, fp32, 128).
pub struct Gpt2 {
    pub shape: DecodeShape,
    pub dtype: Dtype,
    pub context: u64,
    layers: Vec<Layer>,
    lnf: [DevBuf; 2],
    wlm: DevBuf,
    x: [DevBuf; 2],
    h: DevBuf,
    qkv: DevBuf,
    att: DevBuf,
    proj: DevBuf,
    ff: [DevBuf; 2],
    logits: DevBuf,
    pub weights_bytes: u64,
}

impl Gpt2 {
    pub fn new(g: &OpsGpu, shape: &DecodeShape, dtype: Dtype, max_b: u64, context: u64) -> GpuResult<Self> {
        let (d, ff) = (shape.width, shape.ff);
        let w = |rows: u64, cols: u64, seed: u32| g.alloc_random(rows * cols, dtype, seed, 0.02);
        // Layer-norm gamma and beta are fp32 in both precisions (rows.cu).
        let ln = |seed: u32| -> GpuResult<[DevBuf; 2]> {
            Ok([g.alloc_random(d, Dtype::Fp32, seed, 1.0)?, g.alloc_random(d, Dtype::Fp32, seed + 1, 0.1)?])
        };
        let mut layers = Vec::new();
        for l in 0..shape.layers as u32 {
            let s = 500 + 20 * l;
            let kv = max_b * shape.heads * context * HEAD_DIM;
            layers.push(Layer {
                ln1: ln(s)?,
                ln2: ln(s + 2)?,
                wqkv: w(d, 3 * d, s + 4)?,
                wo: w(d, d, s + 5)?,
                w1: w(d, ff, s + 6)?,
                w2: w(ff, d, s + 7)?,
                k: g.alloc_random(kv, dtype, s + 8, 1.0)?,
                v: g.alloc_random(kv, dtype, s + 9, 1.0)?,
            });
        }
        let act = |cols: u64, seed: u32| g.alloc_random(max_b * cols, dtype, seed, 1.0);
        Ok(Gpt2 {
            shape: *shape,
            dtype,
            context,
            layers,
            lnf: ln(900)?,
            wlm: w(d, shape.vocab, 902)?,
            x: [act(d, 903)?, act(d, 904)?],
            h: act(d, 905)?,
            qkv: act(3 * d, 906)?,
            att: act(d, 907)?,
            proj: act(d, 908)?,
            ff: [act(ff, 909)?, act(ff, 910)?],
            logits: act(shape.vocab, 911)?,
            weights_bytes: shape.weights_bytes(dtype) as u64,
        })
    }

    /// Issue one decode step for batch `b`.
    pub fn step(&self, g: &OpsGpu, b: u64) -> GpuResult<()> {
        self.step_with(g, b, &mut |_| Ok(()))
    }

    /// Issue one decode step for batch `b` (10 launches per layer + 2), calling `after(kind)`
    /// after each launch (the kinds of `compose_step::step_kernels`). The residual stream
    /// ping-pongs between x[0] and x[1] so no kernel reads and writes the same buffer.
    pub fn step_with(&self, g: &OpsGpu, b: u64, after: &mut dyn FnMut(&'static str) -> GpuResult<()>) -> GpuResult<()> {
        let (f, d, ff, t) = (self.dtype, self.shape.width, self.shape.ff, self.context);
        let mut cur = 0usize;
        for l in &self.layers {
            layernorm(g, f, self.x[cur].ptr, self.h.ptr, &l.ln1, b, d)?;
            after("layernorm")?;
            g.gemm(f, b, d, 3 * d, self.h.ptr, l.wqkv.ptr, self.qkv.ptr)?;
            after("matmul.qkv")?;
            let (q, h) = (self.qkv.ptr, self.shape.heads);
            attention(g, f, q, (3 * d) as i32, l.k.ptr, l.v.ptr, self.att.ptr, b, h, t, t)?;
            after("attention")?;
            g.gemm(f, b, d, d, self.att.ptr, l.wo.ptr, self.proj.ptr)?;
            after("matmul.out")?;
            add(g, f, self.x[cur].ptr, self.proj.ptr, self.x[1 - cur].ptr, b * d)?;
            after("add")?;
            cur = 1 - cur;
            layernorm(g, f, self.x[cur].ptr, self.h.ptr, &l.ln2, b, d)?;
            after("layernorm")?;
            g.gemm(f, b, d, ff, self.h.ptr, l.w1.ptr, self.ff[0].ptr)?;
            after("matmul.up")?;
            gelu(g, f, self.ff[0].ptr, self.ff[1].ptr, b * ff)?;
            after("gelu")?;
            g.gemm(f, b, ff, d, self.ff[1].ptr, l.w2.ptr, self.proj.ptr)?;
            after("matmul.down")?;
            add(g, f, self.x[cur].ptr, self.proj.ptr, self.x[1 - cur].ptr, b * d)?;
            after("add")?;
            cur = 1 - cur;
        }
        layernorm(g, f, self.x[cur].ptr, self.h.ptr, &self.lnf, b, d)?;
        after("layernorm")?;
        g.gemm(f, b, d, self.shape.vocab, self.h.ptr, self.wlm.ptr, self.logits.ptr)?;
        after("matmul.lm_head")
    }
}

fn sfx(f: Dtype) -> &'static str {
    if f == Dtype::Fp32 {
        "f32"
    } else {
        "f16"
    }
}

fn layernorm(g: &OpsGpu, f: Dtype, x: u64, y: u64, p: &[DevBuf; 2], rows: u64, cols: u64) -> GpuResult<()> {
    launch_rows(g, "layernorm", f, x, y, Some((p[0].ptr, p[1].ptr)), rows, cols)
}

fn add(g: &OpsGpu, f: Dtype, a: u64, b: u64, o: u64, n: u64) -> GpuResult<()> {
    use super::device::Arg::*;
    let v = 16 / f.size_bytes() as u64;
    g.launch(&format!("add_{}", sfx(f)), OpsGpu::blocks(n / v), 256, 0, &[Ptr(a), Ptr(b), Ptr(b), Ptr(o), U64(n)])
}

fn gelu(g: &OpsGpu, f: Dtype, a: u64, o: u64, n: u64) -> GpuResult<()> {
    use super::device::Arg::*;
    let v = 16 / f.size_bytes() as u64;
    g.launch(&format!("gelu_{}", sfx(f)), OpsGpu::blocks(n / v), 256, 0, &[Ptr(a), Ptr(a), Ptr(a), Ptr(o), U64(n)])
}

/// The step's kernels as operations of the model (for the sum of each kernel's own bound).
pub fn step_ops(b: u64) -> Vec<Op> {
    let f = Dtype::Fp32;
    let mut ops = Vec::new();
    for _ in 0..GPT2_SMALL_SHAPE.layers {
        ops.push(Op::LayerNorm { rows: b, cols: D, dtype: f });
        ops.push(Op::Matmul { m: b, k: D, n: 3 * D, dtype: f });
        ops.push(Op::Attention { batch: b, heads: H, tokens: CONTEXT, dtype: f });
        ops.push(Op::Matmul { m: b, k: D, n: D, dtype: f });
        ops.push(Op::Add { n: b * D, dtype: f });
        ops.push(Op::LayerNorm { rows: b, cols: D, dtype: f });
        ops.push(Op::Matmul { m: b, k: D, n: FF, dtype: f });
        ops.push(Op::Gelu { n: b * FF, dtype: f });
        ops.push(Op::Matmul { m: b, k: FF, n: D, dtype: f });
        ops.push(Op::Add { n: b * D, dtype: f });
    }
    ops.push(Op::LayerNorm { rows: b, cols: D, dtype: f });
    ops.push(Op::Matmul { m: b, k: D, n: VOCAB, dtype: f });
    ops
}

#[derive(Debug, Clone, Serialize)]
pub struct BatchRow {
    pub batch: u64,
    pub step: Timing,
    /// The same step captured once as a CUDA graph and replayed (None if capture failed).
    pub step_graph_s: Option<f64>,
    pub tokens_per_s: f64,
    pub max_of_totals: Prediction,
    pub per_kernel_seed: Prediction,
    pub per_kernel_seed_parts: m::PerKernelStep,
    /// Max of totals with the seed's floor choice (the measured batch-1 step).
    pub max_of_totals_seed_floor_s: f64,
    /// Sum of every kernel's own three-ceiling bound.
    pub kernel_sum_s: f64,
    pub ratio_max_of_totals: f64,
    pub ratio_per_kernel: f64,
    pub ratio_kernel_sum: f64,
    /// Minimum bytes and FLOPs of the step as the seed counts them.
    pub step_bytes: f64,
    pub step_flops: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BatchRun {
    pub context: u64,
    pub launches_per_step: u32,
    /// The step's launch floor: class floors summed over its kernels.
    pub step_launch_floor_s: f64,
    /// Weights the kernels actually read per step, bytes (the seed's figure: 475 MiB).
    pub weights_bytes_allocated: u64,
    pub bandwidth_bytes_per_s: f64,
    pub peak_flops_per_s: f64,
    pub graph_error: Option<String>,
    pub rows: Vec<BatchRow>,
}

fn sum_of_kernel_bounds(ceil: &SessionCeilings, b: u64) -> GpuResult<f64> {
    let preds: Vec<Prediction> = step_ops(b)
        .iter()
        .map(|op| {
            let c: OpCost = op.cost();
            let ch = ceil.choose(&c, &op.class(), op.dtype()).map_err(|e| GpuError::invalid(e.to_string()))?;
            Ok(c.predict(ch.launch_s, ch.bandwidth_bytes_per_s, ch.peak_flops_per_s))
        })
        .collect::<GpuResult<_>>()?;
    Ok(m::compose_per_kernel(&preds))
}

fn time_graph(g: &OpsGpu, model: &Gpt2, b: u64) -> GpuResult<f64> {
    Ok(g.time_graph(1, 20e-3, 3, |_| model.step(g, b))?.per_call_s)
}

pub fn run(g: &OpsGpu, ceil: &SessionCeilings, progress: &dyn Progress) -> GpuResult<BatchRun> {
    let c = ceil;
    let floor = m::step_launch_floor(c, &GPT2_SMALL_STEP_KERNELS).map_err(|e| GpuError::invalid(e.to_string()))?;
    let bw = *c.bandwidth_bytes_per_s.get("read").ok_or_else(|| GpuError::invalid("no read bandwidth"))?;
    let peak = *c.peak_flops_per_s.get("fp32").ok_or_else(|| GpuError::invalid("no fp32 peak"))?;
    let max_b = *BATCHES.iter().max().expect("batches");
    let model = Gpt2::new(g, &GPT2_SMALL_SHAPE, Dtype::Fp32, max_b, CONTEXT)?;
    // The kernel sequence must match the class counts the launch floor is summed over.
    let ops = step_ops(1);
    for (class, count) in GPT2_SMALL_STEP_KERNELS {
        let n = ops.iter().filter(|o| o.class() == class).count() as u32;
        if n != count {
            return Err(GpuError::invalid(format!("step has {n} '{class}' kernels, the model counts {count}")));
        }
    }
    let mut rows = Vec::new();
    let mut graph_error = None;
    let mut batch1 = None;
    for &b in &BATCHES {
        let step = g.time_calls(30e-3, 3, |_| model.step(g, b))?;
        let step_graph_s = if graph_error.is_none() {
            match time_graph(g, &model, b) {
                Ok(t) => Some(t),
                Err(e) => {
                    graph_error = Some(e.to_string());
                    None
                }
            }
        } else {
            None
        };
        let t = step.per_call_s;
        let b1 = *batch1.get_or_insert(t);
        let totals = m::decode_step_totals(&GPT2_SMALL, b, CONTEXT, floor, bw, peak);
        let (parts, per_kernel) = m::decode_step_per_kernel_prediction(&GPT2_SMALL, b, CONTEXT, floor, bw, peak);
        let kernel_sum_s = sum_of_kernel_bounds(ceil, b)?;
        progress.message(&format!(
            "batch {b}: step {:.3} ms (graph {}), totals {:.3} ms, per-kernel {:.3} ms, kernel sum {:.3} ms",
            t * 1e3,
            step_graph_s.map(|s| format!("{:.3} ms", s * 1e3)).unwrap_or("-".into()),
            totals.time_s * 1e3,
            per_kernel.time_s * 1e3,
            kernel_sum_s * 1e3
        ));
        rows.push(BatchRow {
            batch: b,
            tokens_per_s: b as f64 / t,
            max_of_totals_seed_floor_s: m::decode_step_totals(&GPT2_SMALL, b, CONTEXT, b1, bw, peak).time_s,
            ratio_max_of_totals: t / totals.time_s,
            ratio_per_kernel: t / per_kernel.time_s,
            ratio_kernel_sum: t / kernel_sum_s,
            step_bytes: m::decode_step_bytes(&GPT2_SMALL, b, CONTEXT),
            step_flops: m::decode_step_flops(&GPT2_SMALL, b),
            max_of_totals: totals,
            per_kernel_seed: per_kernel,
            per_kernel_seed_parts: parts,
            kernel_sum_s,
            step,
            step_graph_s,
        });
    }
    Ok(BatchRun {
        context: CONTEXT,
        launches_per_step: GPT2_SMALL_STEP_KERNELS.iter().map(|k| k.1).sum(),
        step_launch_floor_s: floor,
        weights_bytes_allocated: model.weights_bytes,
        bandwidth_bytes_per_s: bw,
        peak_flops_per_s: peak,
        graph_error,
        rows,
    })
}
