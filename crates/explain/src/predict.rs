//! A decode step of the user's own program at a batch or context it was not traced at, scaled
//! from a trace of that program (docs/MODEL.md, "Real programs"). Each op of one traced step keeps
//! its host dispatch (the framework's, as the trace measured it) and gets new shapes (`DimMap`:
//! the traced batch and context become the new ones in the tensors of this batch). Its device time
//! is a fixed part (the trace's shortest kernel, per kernel) plus a variable part.
//!
//! - An op of a form the library calibration measured (`crate::library`: PyTorch's own kernels
//!   timed over a grid of shapes on the device): its traced time plus the library's own change,
//!   time at the new shape minus time at the traced shape (never under its fixed part).
//! - A matrix product that ran GEMM kernels, given memscope's cuBLAS calibration sweep (the
//!   results of `memscope batch --compose`): its variable part scales by the ratio of the sweep's
//!   work at the new shape to its work at the traced shape (`memscope_model::compose::
//!   product_work_s`), which carries cuBLAS's kernel choice by shape and its efficiency by size
//!   and regime (memory- or compute-bound).
//! - Every other op: work time is the larger of memory work (bytes at DRAM bandwidth) and compute
//!   work (FLOPs at the bound's peak), each over an efficiency from the trace: the op's own where
//!   its work at the traced shapes was at least its fixed part and half its variable time
//!   (work-dominated) in that regime,
//!   else the best of its class's work-dominated ops, else the best of all work-dominated ops,
//!   else 1 (the bound). A work-dominated op's variable part is its work time at the new shapes; a
//!   latency-dominated op keeps its traced variable part plus the change in its work time.
//!
//! The step then runs as the trace ran it: on a stream, kernel i starts at max(its launch + the
//! launch latency, the end of kernel i-1 + the stream's queued gap) (eager: the host's dispatch
//! chain against the device's chain; the queued gap is the trace's own device gap between a kernel
//! and one already launched behind it); in a graph, the kernels run back to back with the graph's
//! per-kernel gap.

use crate::ceilings::Ceilings;
use crate::explain::{median, Explanation};
use crate::library::{op_shape, LibraryCalibration};
use crate::ops::{estimated_cost, known_cost_with, Dtype, Gemm, OpClass};
use crate::trace::{Category, Trace};
use memscope_model::compose::{product_work_s, ComposeCeilings};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// A decoder-only transformer's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelConfig {
    pub name: String,
    pub layers: u64,
    pub width: u64,
    pub heads: u64,
    pub mlp_width: u64,
    pub vocab: u64,
}

/// GPT-2's four sizes.
pub fn gpt2(name: &str) -> Option<ModelConfig> {
    let (layers, width, heads) = match name {
        "gpt2-small" => (12, 768, 12),
        "gpt2-medium" => (24, 1024, 16),
        "gpt2-large" => (36, 1280, 20),
        "gpt2-xl" => (48, 1600, 25),
        _ => return None,
    };
    Some(ModelConfig { name: name.into(), layers, width, heads, mlp_width: 4 * width, vocab: 50257 })
}

/// A model from a JSON file's text: `layers`, `width`, `heads`, `mlp_width`, `vocab` (Hugging Face
/// names `n_layer`/`num_hidden_layers`, `n_embd`/`hidden_size`, `n_head`/`num_attention_heads`,
/// `n_inner`/`intermediate_size`, `vocab_size` are read too).
pub fn model_config(text: &str, name: &str) -> Result<ModelConfig, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("{name}: not JSON ({e})"))?;
    let get = |keys: &[&str]| keys.iter().find_map(|k| v.get(*k).and_then(Value::as_u64));
    let need = |keys: &[&str]| get(keys).filter(|&x| x > 0).ok_or_else(|| format!("{name}: no positive `{}`", keys[0]));
    let width = need(&["width", "n_embd", "hidden_size"])?;
    let heads = need(&["heads", "n_head", "num_attention_heads"])?;
    if width % heads != 0 {
        return Err(format!("{name}: width {width} is not a multiple of heads {heads}"));
    }
    Ok(ModelConfig {
        name: v.get("name").and_then(Value::as_str).unwrap_or(name).into(),
        layers: need(&["layers", "n_layer", "num_hidden_layers"])?,
        width,
        heads,
        mlp_width: get(&["mlp_width", "n_inner", "intermediate_size"]).filter(|&x| x > 0).unwrap_or(4 * width),
        vocab: need(&["vocab", "vocab_size"])?,
    })
}

/// How the step's kernels are issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Stream,
    Graph,
}

/// What is predicted and what the trace was taken at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scaling {
    pub model: ModelConfig,
    pub trace_batch: u64,
    pub trace_context: u64,
    pub batch: u64,
    pub context: u64,
    pub mode: Mode,
    /// The program's own step at the traced batch and context, timed without the profiler
    /// (CUDA events), seconds: the host's dispatch in the trace is scaled so that the traced step
    /// replays at this time (the profiler slows the host, not the device). None: the profiled
    /// dispatch as traced.
    pub trace_step_s: Option<f64>,
    /// The model the trace was taken of, when it is not `model`: its widths, heads and vocabulary
    /// become the new model's in every tensor, and its layers are repeated (or dropped) to the
    /// new model's count. None: `model` itself.
    #[serde(default)]
    pub trace_model: Option<ModelConfig>,
}

/// The prediction and the parts it is made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TracePrediction {
    pub time_s: f64,
    pub mode: Mode,
    /// Which traced step was scaled, and its measured figures.
    pub step: String,
    pub traced_wall_s: f64,
    pub ops: usize,
    pub kernels: usize,
    /// Predicted device time of the kernels (summed).
    pub device_s: f64,
    /// The host's dispatch chain (stream: from the first op to the last launch, as traced).
    pub host_chain_s: f64,
    /// `host` or `device`: which chain ends last.
    pub sets: String,
    /// Fixed device time per kernel (the trace's shortest kernel).
    pub kernel_fixed_s: f64,
    /// Launch call start to kernel start when the device is idle (the trace's shortest).
    pub launch_latency_s: f64,
    /// Graph: device time between kernels.
    pub graph_gap_s: Option<f64>,
    /// Stream: device time between two kernels when the second was already queued (the trace's
    /// median over such pairs; None when the trace has none, then no gap).
    #[serde(default)]
    pub queued_gap_s: Option<f64>,
    /// Factor on the traced host dispatch (1 without `trace_step_s`).
    pub host_scale: f64,
    /// The framework's dispatch per op and per launch (from the trace).
    pub dispatch_per_op_s: Option<f64>,
    /// Device time by class at the predicted shapes, and the trace's efficiency per class.
    pub classes: Vec<ClassScale>,
    /// Every op of the scaled step, in launch order: its traced and predicted device time.
    pub op_scales: Vec<OpScale>,
}

/// One op of the scaled step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpScale {
    pub name: String,
    pub class: String,
    /// Its input shapes at the predicted batch and context.
    pub input_dims: Vec<Value>,
    pub traced_device_s: f64,
    pub predicted_device_s: f64,
    /// What scaled it: `calibration` (a product, by memscope's cuBLAS sweep), `work` (its work at
    /// its efficiency), `latency` (its traced time plus the change in its work time).
    pub scaled_by: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassScale {
    pub class: String,
    pub traced_device_s: f64,
    pub predicted_device_s: f64,
    pub traced_efficiency: Option<f64>,
}

/// Dimension rewriting from the traced step to the predicted one.
/// The batch is rewritten only in a tensor of this batch: its leading dimension is the traced
/// batch (two or more dimensions) or batch x heads (three dimensions, as attention's batched
/// products reshape it); weights, whose leading dimension is a width, keep it even where a width
/// equals the traced batch or context. The context (or context + 1) takes the new context only in
/// attention's tensors: four dimensions with a head count second (the query's heads, a divisor of
/// them for grouped keys and values, or 1 for a mask), or three led by batch x heads; an
/// activation's width that happens to equal the traced context keeps its size. For another model
/// size, attention's heads and head dimension take the new model's, and elsewhere (weights
/// included) the width, three widths (the fused query-key-value product), the MLP width and the
/// vocabulary take the new model's.
struct DimMap {
    heads0: u64,
    heads1: u64,
    head_dim0: u64,
    head_dim1: u64,
    widths: Vec<(u64, u64)>,
    b0: u64,
    bh0: u64,
    t0: u64,
    b: u64,
    bh: u64,
    t: u64,
}

impl DimMap {
    fn new(s: &Scaling) -> Result<DimMap, String> {
        let m0 = s.trace_model.as_ref().unwrap_or(&s.model);
        let m1 = &s.model;
        let (b0, t0) = (s.trace_batch, s.trace_context);
        if t0 == b0 || t0 <= 1 {
            return Err(format!("--trace-context {t0}: must be above 1 and differ from the traced batch {b0}"));
        }
        let widths = if m0 == m1 {
            Vec::new()
        } else {
            vec![(m0.width, m1.width), (3 * m0.width, 3 * m1.width), (m0.mlp_width, m1.mlp_width), (m0.vocab, m1.vocab)]
        };
        Ok(DimMap {
            heads0: m0.heads,
            heads1: m1.heads,
            head_dim0: m0.width / m0.heads,
            head_dim1: m1.width / m1.heads,
            widths,
            b0,
            bh0: b0 * m0.heads,
            t0,
            b: s.batch,
            bh: s.batch * m1.heads,
            t: s.context,
        })
    }

    fn width(&self, x: u64) -> u64 {
        self.widths.iter().find(|(w0, _)| *w0 == x).map(|(_, w1)| *w1).unwrap_or(x)
    }

    fn shape(&self, dims: &[Value]) -> Vec<Value> {
        let one = |v: &Value| -> Value {
            let Some(a) = v.as_array() else { return v.clone() };
            if a.iter().any(|x| x.is_array()) {
                return Value::Array(a.iter().map(|x| self.shape(std::slice::from_ref(x))[0].clone()).collect());
            }
            let dims: Option<Vec<u64>> = a.iter().map(Value::as_u64).collect();
            let Some(d) = dims else { return v.clone() };
            let lead = match (d.first(), d.len()) {
                (Some(&x), n) if x == self.b0 && n >= 2 => Some(self.b),
                (Some(&x), 3) if x == self.bh0 => Some(self.bh),
                _ => None,
            };
            let Some(lead) = lead else {
                return Value::Array(d.iter().map(|&x| Value::from(self.width(x))).collect());
            };
            let attention = match d.len() {
                4 => d[1] > 0 && self.heads0.is_multiple_of(d[1]),
                3 => d[0] == self.bh0,
                _ => false,
            };
            let mut out: Vec<Value> = vec![Value::from(lead)];
            let last = d.len() - 1;
            for (i, &x) in d.iter().enumerate().skip(1) {
                let y = if !attention {
                    self.width(x)
                } else if d.len() == 4 && i == 1 {
                    // Heads (or grouped key-value heads in the same proportion).
                    if (x * self.heads1).is_multiple_of(self.heads0) {
                        x * self.heads1 / self.heads0
                    } else {
                        x
                    }
                } else if x == self.t0 {
                    self.t
                } else if x == self.t0 + 1 {
                    self.t + 1
                } else if x == self.head_dim0 && (i == last || i == last - 1) {
                    self.head_dim1
                } else {
                    x
                };
                out.push(Value::from(y));
            }
            Value::Array(out)
        };
        dims.iter().map(one).collect()
    }
}

/// The traced step's layers: the first op of the first layer and the ops per layer, where the
/// step's op sequence (names and shapes) repeats `layers` times in a row, the shortest such
/// repetition found first.
fn layer_block(sigs: &[String], layers: usize) -> Option<(usize, usize)> {
    let n = sigs.len();
    if layers < 2 {
        return None;
    }
    for per in 1..=n / layers {
        for start in 0..=(n - layers * per) {
            if (0..(layers - 1) * per).all(|i| sigs[start + i] == sigs[start + i + per]) {
                return Some((start, per));
            }
        }
    }
    None
}

/// The step to scale: the traced step with the most kernels launched by framework ops, the last
/// of those (warm).
fn pick_step(x: &Explanation) -> Option<usize> {
    let attributed = |si: usize| x.kernels.iter().filter(|k| k.step == Some(si) && k.op.is_some()).count();
    let most = (0..x.steps.len()).map(attributed).max()?;
    (0..x.steps.len()).rev().find(|&si| most > 0 && attributed(si) == most)
}

/// Predict the step of `s` from `trace` (explained as `x` with the same ceilings).
pub fn predict_from_trace(
    trace: &Trace,
    x: &Explanation,
    c: &Ceilings,
    s: &Scaling,
    calibration: Option<&ComposeCeilings>,
    library: Option<&LibraryCalibration>,
) -> Result<TracePrediction, String> {
    let map = DimMap::new(s)?;
    let si = pick_step(x).ok_or("the trace has no step with GPU kernels")?;
    let step = &x.steps[si];
    let ks: Vec<usize> = (0..x.kernels.len()).filter(|&i| x.kernels[i].step == Some(si)).collect();
    if ks.is_empty() {
        return Err("the trace has no step with GPU kernels".into());
    }
    let unattributed = ks.iter().filter(|&&i| x.kernels[i].op.is_none()).count();
    let graph_trace = unattributed * 2 > ks.len();
    if graph_trace {
        return Err(format!(
            "{} of the step's {} kernels have no framework op (a CUDA-graph replay carries no shapes): trace the eager step of the same program and predict --mode graph from it",
            unattributed,
            ks.len()
        ));
    }
    let seen = |v: u64| x.ops.iter().any(|o| o.input_dims.iter().any(|d| d.to_string().contains(&v.to_string())));
    for (v, flag) in [(s.trace_batch, "--trace-batch"), (s.trace_context, "--trace-context")] {
        if !seen(v) {
            return Err(format!("{flag} {v}: no op of the trace has a dimension of {v}"));
        }
    }
    // The op events of the trace, by (name, start) to recover concrete inputs.
    let op_events: HashMap<(String, String), &crate::trace::Event> = trace
        .events
        .iter()
        .filter(|e| e.cat == Category::Op)
        .map(|e| ((e.name.clone(), serde_json::to_string(&e.input_dims).unwrap_or_default()), e))
        .collect();
    let fixed = x.kernels.iter().map(|k| k.duration_s).fold(f64::INFINITY, f64::min).max(0.0);
    let latency = ks.iter().filter_map(|&i| x.kernels[i].launch_to_start_s).fold(f64::INFINITY, f64::min);
    let latency = if latency.is_finite() { latency.max(0.0) } else { 0.0 };
    // New device time per op instance of the step.
    let mut names: Vec<Vec<&str>> = vec![Vec::new(); x.ops.len()];
    for k in &x.kernels {
        if let Some(i) = k.op_index {
            names[i].push(&k.name);
        }
    }
    // Each op's work at the trace's shapes and the new ones, split into memory and compute.
    struct Work {
        oi: usize,
        new_cost: crate::ops::OpCost,
        /// The trace's `Input Strides` of the op (its operands' layout).
        strides: Vec<Value>,
        var0: f64,
        fixed: f64,
        mem0: f64,
        comp0: f64,
    }
    // Memory work at DRAM bandwidth whatever the level (the op's efficiency against it absorbs
    // where its data lived, and scales with its bytes); compute work at the bound's peak.
    let split = |cost: &crate::ops::OpCost, kernels: &[&str]| {
        let b = c.bound(cost, kernels);
        (cost.bytes / c.dram.value, b.terms.get("compute").copied().unwrap_or(0.0))
    };
    let mut works = Vec::new();
    // Efficiency per (class, regime) and per regime: the best of the step's work-dominated ops
    // (`work_dominated`: work at the trace's shapes at least their kernels' fixed time and half
    // their variable time), work over
    // device time beyond the fixed part. Efficiency grows with size, so a class's larger
    // instances reach at least what its best traced one did.
    let mut class_eff: HashMap<(String, bool), (f64, f64)> = HashMap::new();
    let mut all_eff: HashMap<bool, (f64, f64)> = HashMap::new();
    for (oi, op) in x.ops.iter().enumerate().filter(|(_, o)| o.step == Some(si)) {
        let event = op_events.get(&(op.name.clone(), serde_json::to_string(&op.input_dims).unwrap_or_default()));
        let concrete = event.map(|e| e.concrete.clone()).unwrap_or_default();
        let strides = event.map(|e| e.input_strides.clone()).unwrap_or_default();
        let new_dims = map.shape(&op.input_dims);
        let new_cost = if op.cost.known {
            known_cost_with(&op.name, &new_dims, &op.input_types, &concrete, op.cost.dtype)
                .unwrap_or_else(|| op.cost.clone())
        } else {
            estimated_cost(&new_dims, &op.input_types)
        };
        let (mem0, comp0) = split(&op.cost, &names[oi]);
        let fixed_op = (fixed * op.kernels as f64).min(op.device_s);
        let var0 = op.device_s - fixed_op;
        let work0 = mem0.max(comp0);
        if work_dominated(work0, var0, fixed_op) {
            for e in [
                class_eff.entry((op.cost.class.name().to_string(), comp0 > mem0)).or_insert((0.0, 1.0)),
                all_eff.entry(comp0 > mem0).or_insert((0.0, 1.0)),
            ] {
                if work0 / var0 > e.0 / e.1 {
                    *e = (work0, var0);
                }
            }
        }
        works.push(Work { oi, new_cost, strides, var0, fixed: fixed_op, mem0, comp0 });
    }
    let mut scale: HashMap<usize, f64> = HashMap::new();
    let mut classes: HashMap<String, ClassScale> = HashMap::new();
    let mut op_scales = Vec::new();
    for w in works {
        let op = &x.ops[w.oi];
        let (mem1, comp1) = split(&w.new_cost, &names[w.oi]);
        let work0 = w.mem0.max(w.comp0);
        let dominated = work_dominated(work0, w.var0, w.fixed);
        let compute0 = w.comp0 > w.mem0;
        // The op's own efficiency where it was work-dominated in that regime; else its class's in
        // that regime; else all work-dominated ops' in that regime; else 1 (the bound).
        let eff = |compute: bool| {
            if dominated && compute == compute0 {
                return work0 / w.var0;
            }
            let ratio = |e: Option<&(f64, f64)>| e.filter(|e| e.1 > 0.0).map(|e| e.0 / e.1);
            ratio(class_eff.get(&(op.cost.class.name().to_string(), compute)))
                .or_else(|| ratio(all_eff.get(&compute)))
                .unwrap_or(1.0)
        };
        let work_time = |mem: f64, comp: f64| (mem / eff(false)).max(comp / eff(true));
        // A work-dominated op follows its work; a latency-dominated one keeps its traced time
        // and adds (or sheds) only the change in its work time, so the traced shapes give the
        // traced time back.
        let new_var = if dominated {
            work_time(mem1, comp1)
        } else {
            (w.var0 + work_time(mem1, comp1) - work_time(w.mem0, w.comp0)).max(0.0)
        };
        let mut new_device = w.fixed + new_var;
        let mut scaled_by = if dominated { "work" } else { "latency" };
        // A product that ran a GEMM kernel follows cuBLAS's own time on memscope's calibration
        // sweep between its traced and its new shape (the library's kernel choice by shape, its
        // efficiency by size and regime): its fixed part stays, its variable part scales by the
        // sweep's ratio. GEMV kernels (fp32 batched products) are another family the sweep does
        // not measure: they keep the rule above.
        let gemm_kernels = !names[w.oi].iter().any(|k| k.to_ascii_lowercase().contains("gemv"));
        if let (Some(cal), OpClass::Matmul, Some(g0), Some(g1), true) =
            (calibration, op.cost.class, op.cost.gemm, w.new_cost.gemm, gemm_kernels)
        {
            if let (Some(t0), Some(t1)) = (calibrated_s(cal, &g0), calibrated_s(cal, &g1)) {
                new_device = w.fixed + w.var0 * t1 / t0;
                scaled_by = "calibration";
            }
        }
        // An op of a form the library calibration measured: the traced time plus the library's
        // own change in time from the traced shape to the new one (its kernel choice by shape).
        // The program's difference from the library at the traced shape is carried as a time, not
        // a factor: a decode step is traced at small shapes, where the difference is latency (a
        // fill kernel, operands already in L2) that does not grow with the work, and the library
        // measured the larger shape's own time (docs/MODEL.md, "Real programs").
        if let Some(lib) = library {
            let time =
                |dims: &[Value]| op_shape(&op.name, dims, &op.input_types, &w.strides).and_then(|sh| lib.time_s(&sh));
            if let (Some(t0), Some(t1)) = (time(&op.input_dims), time(&map.shape(&op.input_dims))) {
                new_device = (op.device_s + t1 - t0).max(w.fixed);
                scaled_by = "library";
            }
        }
        scale.insert(w.oi, if op.device_s > 0.0 { new_device / op.device_s } else { 1.0 });
        let e = classes.entry(op.cost.class.name().to_string()).or_insert(ClassScale {
            class: op.cost.class.name().into(),
            traced_device_s: 0.0,
            predicted_device_s: 0.0,
            traced_efficiency: None,
        });
        e.traced_device_s += op.device_s;
        e.predicted_device_s += new_device;
        op_scales.push(OpScale {
            name: op.name.clone(),
            class: op.cost.class.name().into(),
            input_dims: map.shape(&op.input_dims),
            traced_device_s: op.device_s,
            predicted_device_s: new_device,
            scaled_by: scaled_by.into(),
        });
    }
    for cl in classes.values_mut() {
        cl.traced_efficiency = x.classes.iter().find(|r| r.class.name() == cl.class).and_then(|r| r.efficiency);
    }
    let new_dur = |i: usize| {
        let k = &x.kernels[i];
        k.duration_s * k.op_index.and_then(|o| scale.get(&o)).copied().unwrap_or(1.0)
    };
    // Host: each kernel's launch time, relative to the step's first op.
    let t0 = x.ops.iter().filter(|o| o.step == Some(si)).count();
    let first_op_us = trace
        .events
        .iter()
        .filter(|e| e.cat == Category::Op && e.ts_us >= step.start_us)
        .map(|e| e.ts_us)
        .next()
        .unwrap_or(step.start_us);
    let mut order = ks.clone();
    order.sort_by(|&a, &b| {
        let la = x.kernels[a].start_us - x.kernels[a].launch_to_start_s.unwrap_or(0.0) * 1e6;
        let lb = x.kernels[b].start_us - x.kernels[b].launch_to_start_s.unwrap_or(0.0) * 1e6;
        la.total_cmp(&lb)
    });
    let host_chain_traced_s = (step.host_chain_s - (first_op_us - step.start_us) * 1e-6).max(0.0);
    // Each kernel's launch time after the step's first op and its device time (traced, new).
    let launch_of = |i: usize| {
        let k = &x.kernels[i];
        ((k.start_us - first_op_us) * 1e-6 - k.launch_to_start_s.unwrap_or(latency)).max(0.0)
    };
    let traced: Vec<(f64, f64)> = order.iter().map(|&i| (launch_of(i), x.kernels[i].duration_s)).collect();
    let mut predicted: Vec<(f64, f64)> = order.iter().map(|&i| (launch_of(i), new_dur(i))).collect();
    let mut host_chain_new_s = host_chain_traced_s;
    // Another layer count: the last traced layer's kernels repeat (or the last layers go), one
    // traced layer's host time apart, and what follows the layers moves with them.
    let (layers0, layers1) = (s.trace_model.as_ref().map(|m| m.layers).unwrap_or(s.model.layers), s.model.layers);
    if layers0 != layers1 {
        let step_ops: Vec<usize> = (0..x.ops.len()).filter(|&i| x.ops[i].step == Some(si)).collect();
        let sigs: Vec<String> = step_ops
            .iter()
            .map(|&i| format!("{} {}", x.ops[i].name, serde_json::to_string(&x.ops[i].input_dims).unwrap_or_default()))
            .collect();
        let (start, per) = layer_block(&sigs, layers0 as usize).ok_or_else(|| {
            format!(
                "the traced step shows no {layers0} repeated layers: predict {} from a trace of that size",
                s.model.name
            )
        })?;
        let layer_of = |i: usize| {
            let pos = x.kernels[i].op_index.and_then(|oi| step_ops.iter().position(|&o| o == oi))?;
            (pos >= start).then(|| (pos - start) / per)
        };
        let first_launch = |layer: usize| order.iter().find(|&&i| layer_of(i) == Some(layer)).map(|&i| launch_of(i));
        let (l0, l1) = (layers0 as usize, layers1 as usize);
        let span = match (first_launch(0), first_launch(l0 - 1)) {
            (Some(a), Some(b)) if l0 > 1 && b > a => (b - a) / (l0 - 1) as f64,
            _ => return Err("the traced step's layers launched no kernels".into()),
        };
        let shift = span * (l1 as f64 - l0 as f64);
        predicted.clear();
        for &i in &order {
            let (launch, d) = (launch_of(i), new_dur(i));
            match layer_of(i) {
                Some(j) if j >= l0 => predicted.push((launch + shift, d)),
                Some(j) if j >= l1 => {}
                Some(j) if j == l0 - 1 => {
                    for extra in 0..=l1.saturating_sub(l0) {
                        predicted.push((launch + span * extra as f64, d));
                    }
                }
                _ => predicted.push((launch, d)),
            }
        }
        predicted.sort_by(|a, b| a.0.total_cmp(&b.0));
        host_chain_new_s = (host_chain_traced_s + shift).max(0.0);
    }
    let device_s: f64 = predicted.iter().map(|p| p.1).sum();
    // A kernel already queued when its predecessor ends starts one queued gap later (the
    // stream's own issue gap, measured in the trace); one launched later starts at its launch
    // plus the launch latency.
    let launched: Vec<usize> = (0..x.kernels.len()).filter(|&i| x.kernels[i].op_index.is_some()).collect();
    let queued_gap_measured = queued_gap_s(x, &launched, latency);
    let queued_gap = queued_gap_measured.unwrap_or(0.0);
    let replay = |list: &[(f64, f64)], chain_s: f64, host_scale: f64| {
        let mut free: Option<f64> = None;
        for &(launch, d) in list {
            let ready = launch * host_scale + latency;
            let start = free.map_or(ready, |f| ready.max(f + queued_gap));
            free = Some(start + d);
        }
        free.unwrap_or(0.0).max(chain_s * host_scale)
    };
    let host_scale = match (s.trace_step_s, s.mode) {
        (Some(target), Mode::Stream) if target > 0.0 => {
            // replay(f) grows with f: bisect for the traced step's own time.
            let (mut lo, mut hi) = (0.0f64, 4.0f64);
            if replay(&traced, host_chain_traced_s, hi) < target {
                hi
            } else {
                for _ in 0..60 {
                    let mid = 0.5 * (lo + hi);
                    if replay(&traced, host_chain_traced_s, mid) < target {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                0.5 * (lo + hi)
            }
        }
        _ => 1.0,
    };
    let host_chain_s = host_chain_new_s * host_scale;
    let (time_s, graph_gap_s, sets) = match s.mode {
        Mode::Stream => {
            let sets = if host_chain_s > device_s { "host" } else { "device" };
            (replay(&predicted, host_chain_new_s, host_scale), None, sets.to_string())
        }
        Mode::Graph => {
            let gaps: Vec<f64> = {
                let mut g: Vec<f64> = Vec::new();
                let mut sorted: Vec<&crate::explain::KernelRow> =
                    x.kernels.iter().filter(|k| k.op.is_none() && k.step.is_some()).collect();
                sorted.sort_by(|a, b| a.start_us.total_cmp(&b.start_us));
                for w in sorted.windows(2) {
                    let gap = (w[1].start_us - (w[0].start_us + w[0].duration_s * 1e6)) * 1e-6;
                    if gap >= 0.0 {
                        g.push(gap);
                    }
                }
                g
            };
            let gap = median(&mut gaps.clone())
                .or_else(|| c.kernel_floor.as_ref().map(|f| f.value))
                .ok_or("--mode graph needs the graph's per-kernel gap: a graph-replay step in the trace or launch.graph_floor_s in the ceilings")?;
            (device_s + predicted.len() as f64 * gap, Some(gap), "device".to_string())
        }
    };
    let mut classes: Vec<ClassScale> = classes.into_values().collect();
    classes.sort_by(|a, b| b.predicted_device_s.total_cmp(&a.predicted_device_s));
    Ok(TracePrediction {
        time_s,
        mode: s.mode,
        step: step.name.clone(),
        traced_wall_s: step.wall_s,
        ops: t0,
        kernels: predicted.len(),
        device_s,
        host_chain_s,
        sets,
        kernel_fixed_s: fixed,
        launch_latency_s: latency,
        graph_gap_s,
        queued_gap_s: queued_gap_measured,
        host_scale,
        dispatch_per_op_s: x.dispatch_floor.per_op_s,
        classes,
        op_scales,
    })
}

/// The device's gap between two consecutive kernels of one stream when the second was already
/// launched before the first ended (it waited on the device, not on the host): the median over
/// such pairs among `kernels` (indices into the explanation's kernels, one step's or more). None
/// when no kernel of them was queued (the step was host-bound throughout). Overlapping kernels
/// count as no gap.
fn queued_gap_s(x: &Explanation, kernels: &[usize], latency_s: f64) -> Option<f64> {
    let mut by_stream: HashMap<&str, Vec<&crate::explain::KernelRow>> = HashMap::new();
    for &i in kernels {
        by_stream.entry(x.kernels[i].stream.as_str()).or_default().push(&x.kernels[i]);
    }
    let mut gaps = Vec::new();
    for list in by_stream.values_mut() {
        list.sort_by(|a, b| a.start_us.total_cmp(&b.start_us));
        for w in list.windows(2) {
            let end_us = w[0].start_us + w[0].duration_s * 1e6;
            let Some(l) = w[1].launch_to_start_s else { continue };
            let launch_us = w[1].start_us - l * 1e6;
            if launch_us + latency_s * 1e6 < end_us {
                gaps.push(((w[1].start_us - end_us) * 1e-6).max(0.0));
            }
        }
    }
    median(&mut gaps)
}

/// Whether an op's time follows its work: its work at the bound is at least its fixed part and
/// at least `WORK_SHARE` of its variable time (an op far below its bound is held by something
/// else, its parallelism or its latency, and does not grow with its work).
fn work_dominated(work_s: f64, var_s: f64, fixed_s: f64) -> bool {
    var_s > 0.0 && work_s > 0.0 && work_s >= fixed_s && work_s >= WORK_SHARE * var_s
}

/// An op whose work at the bound is under half of its variable time is not work-dominated (the
/// majority of its time is not its work).
const WORK_SHARE: f64 = 0.5;

/// A product's device work on memscope's calibration sweep (None when the sweep has none of its
/// precision and alignment class, or its ceilings give no finite positive time).
fn calibrated_s(cal: &ComposeCeilings, g: &Gemm) -> Option<f64> {
    use memscope_model::bottleneck::Dtype as D;
    let dtype = match g.dtype {
        Dtype::Fp32 => D::Fp32,
        Dtype::Fp16 => D::Fp16,
        Dtype::Bf16 => D::Bf16,
        _ => return None,
    };
    let s = g.dtype.size_bytes();
    let (b, m, k, n) = (g.batch as f64, g.m as f64, g.k as f64, g.n as f64);
    product_work_s(cal, 2.0 * b * m * k * n, b * (m * k + k * n + m * n) * s, dtype, g.aligned_16_bytes())
        .ok()
        .filter(|t| t.is_finite() && *t > 0.0)
}
