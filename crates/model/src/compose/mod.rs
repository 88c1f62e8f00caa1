//! The composition model (beyond seed 003's two compositions): a sequence of kernels
//! takes the sum over its kernels of (the device's per-kernel launch gap + the largest of the
//! kernel's work terms), plus whatever host launch cost the pipelined stream cannot hide. The work
//! terms come from ceilings measured on *other* operations: bandwidth reached with a given number
//! of bytes in flight (DRAM and L2), the peak per precision, the minimum work of a kernel that
//! touches memory, and the matrix-product efficiency by shape interpolated from a calibration
//! sweep that must not contain a predicted shape, interpolated only among calibration products of
//! the same alignment class (row lengths K and N a multiple of 16 bytes or not: cuBLAS's fast
//! half-precision kernels need it, so an LM head of 50,257 columns runs on another curve). Kernels
//! whose lanes load 8-byte vectors (fp16 attention) read the DRAM curve measured with 8-byte loads.
//! A kernel with few blocks is also bounded by its blocks' dependent steps (each waits for its
//! loads before the next step's loads issue), priced with the step latency measured on a
//! calibration kernel at as many blocks walking at once.
//! On a stream, a launch's host cost is the larger of its issue time with the device blocked and
//! with the device idle (the host-bound regime of a small step). Pure: no I/O, no CUDA
//! (docs/MODEL.md, "A composition that holds").
//!
//! ```text
//! T_step = sum_i [ g_mode + max(work terms of kernel i) ] + o_mode
//!          + max(0, H_mode - (sum_i [ ... ] + o_mode))
//! ```
//!
//! g_mode: device time per back-to-back kernel on a stream or in a graph; o_mode: device overhead
//! of one graph replay (0 on a stream); H_mode: host issue time of the step (sum of per-launch
//! issue times on a stream, one graph launch in a graph).

use crate::bottleneck::Dtype;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the step's kernels are issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LaunchMode {
    Stream,
    Graph,
}

/// Which host path issues a kernel (its host issue time is a ceiling of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LaunchPath {
    /// One of our kernels, launched directly.
    Kernel,
    /// A cuBLAS call.
    Blas,
}

/// A matrix product's shape: (M x K) @ (K x N).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MatmulShape {
    pub m: u64,
    pub k: u64,
    pub n: u64,
    pub dtype: Dtype,
}

impl MatmulShape {
    pub fn flops(&self) -> f64 {
        2.0 * (self.m * self.k * self.n) as f64
    }
    /// The seed's minimum bytes: (MK + KN + MN) s.
    pub fn bytes(&self) -> f64 {
        ((self.m * self.k + self.k * self.n + self.m * self.n) as f64) * self.dtype.size_bytes()
    }
    pub fn label(&self) -> String {
        format!("{}x{} @ {}x{} {}", self.m, self.k, self.k, self.n, self.dtype.name())
    }
    /// Whether the rows of A (K elements) and of W and C (N elements) start on 16-byte boundaries:
    /// the condition of cuBLAS's vectorised (tensor-core) kernels. M does not enter (row-major).
    pub fn aligned_16_bytes(&self) -> bool {
        let per = (16.0 / self.dtype.size_bytes()) as u64;
        self.k.is_multiple_of(per) && self.n.is_multiple_of(per)
    }
    /// The alignment class's name, for messages.
    pub fn alignment_class(&self) -> &'static str {
        if self.aligned_16_bytes() {
            "16-byte-aligned rows"
        } else {
            "unaligned rows"
        }
    }
}

fn sixteen() -> f64 {
    16.0
}

/// The operation counts of one kernel of a step: everything the composition knows about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelCount {
    /// Which kernel of the sequence ("layernorm", "matmul.qkv", "attention", ...).
    pub kind: String,
    pub path: LaunchPath,
    pub dtype: Dtype,
    pub flops: f64,
    /// Bytes that come from device memory (weights, KV cache: read once per step, larger than L2).
    pub dram_bytes: f64,
    /// Bytes that stay in L2 (activations written by the previous kernel and read by the next).
    pub l2_bytes: f64,
    /// Bytes the whole grid has in flight at once (threads x independent loads x load width).
    pub bytes_in_flight: f64,
    /// Width of one lane's load, bytes (16 for a float4 / uint4; 8 for fp16 attention's uint2).
    #[serde(default = "sixteen")]
    pub load_bytes: f64,
    /// Set for matrix products: their work comes from the calibration curve.
    pub matmul: Option<MatmulShape>,
    /// Dependent steps one block walks in sequence, each waiting for its own loads before the
    /// next step's loads issue, with a 16-lane shuffle reduction of the loaded values (attention's
    /// scores) ...
    #[serde(default)]
    pub reduction_steps: f64,
    /// ... and without one (the loaded values only accumulated: attention's weighted values).
    /// A block cannot finish before its steps have: `step_latency_s` prices them.
    #[serde(default)]
    pub stream_steps: f64,
    /// Blocks of the launch (the step latency depends on how many walk at once); 0 counts as 1.
    #[serde(default)]
    pub blocks: f64,
}

/// The latency of one dependent step with this many blocks walking at once, each on its own rows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StepPoint {
    pub blocks: f64,
    pub step_s: f64,
}

/// One point of a bandwidth curve: the rate a read kernel reaches with this many bytes in flight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurvePoint {
    pub bytes_in_flight: f64,
    pub bytes_per_s: f64,
}

/// One calibration product: its device work per call (graph time per call minus the graph gap).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MatmulSample {
    pub shape: MatmulShape,
    pub work_s: f64,
}

/// The ceilings of the composition, all measured in the session on operations other than the
/// predicted ones. No field holds a time of a predicted kernel or step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComposeCeilings {
    /// One launch followed by a synchronisation, seconds (reported beside the others; not used).
    pub isolated_launch_s: f64,
    /// Host time to enqueue one launch, by path: "kernel", "blas.fp32", "blas.fp16".
    pub host_issue_s: BTreeMap<String, f64>,
    /// The same with the device idle (each launch finds the previous one finished), by path.
    #[serde(default)]
    pub host_issue_idle_s: BTreeMap<String, f64>,
    /// Host time to enqueue one graph launch.
    pub host_issue_graph_s: f64,
    /// Device time per back-to-back empty kernel on a stream (the host kept ahead).
    pub gap_stream_s: f64,
    /// Device time per empty kernel inside a graph.
    pub gap_graph_s: f64,
    /// Device time of one graph replay beyond its kernels.
    pub graph_overhead_s: f64,
    /// Minimum work of a kernel that reads device memory (one block, one dependent load), seconds.
    pub min_work_s: f64,
    /// The same from an L2-resident buffer (kernels that touch only activations).
    pub min_work_l2_s: f64,
    /// Read bandwidth from device memory by bytes in flight (ascending), 16-byte loads.
    pub dram_curve: Vec<CurvePoint>,
    /// The same with 8-byte loads (kernels whose lanes load 8 bytes).
    #[serde(default)]
    pub dram_curve_8b: Vec<CurvePoint>,
    /// Read bandwidth from L2 by bytes in flight (ascending).
    pub l2_curve: Vec<CurvePoint>,
    /// Time of one dependent step of a block reading DRAM by blocks walking at once (ascending),
    /// by `step_key`: "reduce.16", "reduce.8", "stream.16", "stream.8" (with or without the
    /// shuffle reduction; 16- or 8-byte vectors). Empty in ceilings measured before it existed:
    /// then no step term is priced.
    #[serde(default)]
    pub step_latency_s: BTreeMap<String, Vec<StepPoint>>,
    /// Sustained read bandwidth (the matrix products' roofline), bytes/s.
    pub dram_bytes_per_s: f64,
    /// Peak arithmetic per precision ("fp32", "fp16"), FLOP/s.
    pub peak_flops_per_s: BTreeMap<String, f64>,
    /// The matrix-product calibration sweep (shapes other than the predicted ones).
    pub matmul: Vec<MatmulSample>,
}

/// The composition's inputs (the fields of `ComposeCeilings`), each with what it is and how it is
/// measured; written into the results so every prediction lists its inputs.
pub const PREDICTION_INPUTS: [(&str, &str); 17] = [
    ("isolated_launch_s", "one empty-kernel launch then a synchronisation (reported, not used)"),
    ("host_issue_s", "host time to enqueue one launch (our kernel; a cuBLAS call per precision), device blocked"),
    (
        "host_issue_idle_s",
        "the same with the device idle (launches with no spin kernel ahead, then a synchronisation)",
    ),
    ("host_issue_graph_s", "host time to enqueue one graph launch, device blocked"),
    ("gap_stream_s", "device time per empty kernel queued back to back on a stream behind a spin kernel"),
    ("gap_graph_s", "device time per empty kernel in a graph (slope over 1 and 256 kernels)"),
    ("graph_overhead_s", "device time of one graph replay beyond its kernels (intercept)"),
    (
        "min_work_s",
        "work of a one-block kernel doing one dependent 16-byte load per thread from DRAM, beyond the graph gap",
    ),
    ("min_work_l2_s", "the same from an L2-resident buffer"),
    ("dram_curve", "read bandwidth from device memory by bytes in flight (a read kernel, grids 1..4,224 blocks)"),
    ("dram_curve_8b", "the same with 8-byte loads per thread (the kernel's uint2 variant)"),
    ("l2_curve", "read bandwidth from L2 by bytes in flight (same kernel, an L2-resident buffer)"),
    (
        "step_latency_s",
        "time per dependent step of blocks of 128 threads (two independent 16- or 8-byte row loads per thread, with or without a 16-lane shuffle reduction), DRAM, slope over 16 and 256 steps, by blocks at once (1 .. one per SM)",
    ),
    ("dram_bytes_per_s", "sustained read bandwidth of the seed-003 ceilings (buffers >= 4 x L2)"),
    ("peak_flops_per_s", "best cuBLAS product at 4,096..8,192 per precision (seed-003 ceilings)"),
    (
        "matmul",
        "work per call of the calibration products (shapes none of the step's; 16-byte-aligned and unaligned rows), graph-timed",
    ),
    (
        "(operation counts)",
        "FLOPs, DRAM and L2 bytes, bytes in flight, dependent steps per block and shapes of each kernel: counted, not measured",
    ),
];

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ComposeError {
    #[error("the calibration sweep contains the predicted shape {0}: calibrate on other shapes")]
    CalibrationIncludesPredictedShape(String),
    #[error("no calibration product in {0}")]
    NoCalibration(String),
    #[error("the ceilings have no {what} for '{key}'")]
    Missing { what: &'static str, key: String },
    #[error("the {0} bandwidth curve is empty or not positive")]
    BadCurve(&'static str),
    #[error("a ceiling or count is not finite and non-negative: {0}")]
    NotFinite(String),
}

/// One kernel's prediction and what bounds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelPrediction {
    pub kind: String,
    /// The device's per-kernel gap in this mode.
    pub launch_s: f64,
    /// The work terms (only those that apply), seconds.
    pub terms: BTreeMap<String, f64>,
    /// The largest work term and its name.
    pub work_s: f64,
    pub work_term: String,
    /// "launch" when the gap exceeds the work, else the work term's name.
    pub bound: String,
    /// launch_s + work_s.
    pub time_s: f64,
    /// Matrix products: the interpolated efficiency (roofline / work).
    pub efficiency: Option<f64>,
}

/// The composition's prediction of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepPrediction {
    pub mode: LaunchMode,
    pub kernels: Vec<KernelPrediction>,
    /// Sum of launch gaps, of work, the graph overhead, the device total.
    pub launch_gaps_s: f64,
    pub work_s: f64,
    pub graph_overhead_s: f64,
    pub device_s: f64,
    /// Host issue time of the step, and the part the pipeline cannot hide.
    pub host_s: f64,
    pub exposed_host_s: f64,
    pub time_s: f64,
}

fn finite(x: f64, what: &str) -> Result<f64, ComposeError> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(ComposeError::NotFinite(format!("{what} = {x}")))
    }
}

/// Bandwidth reached with `bytes_in_flight`: piecewise linear in log-log between the points,
/// proportional to the bytes in flight below the first (Little's law) and flat above the last.
pub fn curve_bandwidth(curve: &[CurvePoint], bytes_in_flight: f64, name: &'static str) -> Result<f64, ComposeError> {
    if curve.is_empty() || curve.iter().any(|p| !(p.bytes_in_flight > 0.0 && p.bytes_per_s > 0.0)) {
        return Err(ComposeError::BadCurve(name));
    }
    let x = bytes_in_flight.max(1.0);
    let first = curve[0];
    if x <= first.bytes_in_flight {
        return Ok(first.bytes_per_s * x / first.bytes_in_flight);
    }
    for w in curve.windows(2) {
        let (a, b) = (w[0], w[1]);
        if x <= b.bytes_in_flight {
            let t = (x / a.bytes_in_flight).ln() / (b.bytes_in_flight / a.bytes_in_flight).ln();
            return Ok((a.bytes_per_s.ln() + t * (b.bytes_per_s / a.bytes_per_s).ln()).exp());
        }
    }
    Ok(curve[curve.len() - 1].bytes_per_s)
}

/// The roofline time of a matrix product with these ceilings (no launch term).
pub fn matmul_roofline_s(shape: &MatmulShape, dram_bytes_per_s: f64, peak_flops_per_s: f64) -> f64 {
    (shape.bytes() / dram_bytes_per_s).max(shape.flops() / peak_flops_per_s)
}

/// Coordinates of a shape in the calibration space: log2 FLOPs and log2 arithmetic intensity.
fn coords(s: &MatmulShape) -> (f64, f64) {
    (s.flops().log2(), (s.flops() / s.bytes()).log2())
}

/// Number of nearest calibration products the efficiency is interpolated from.
pub const NEIGHBOURS: usize = 4;

/// The efficiency (roofline / work) of `shape`, interpolated from the calibration products of its
/// precision and alignment class (`MatmulShape::aligned_16_bytes`): inverse-square-distance
/// weighted geometric mean of the `NEIGHBOURS` nearest in (log2 FLOPs, log2 intensity). Refuses a
/// calibration that contains `shape` itself.
pub fn matmul_efficiency(c: &ComposeCeilings, shape: &MatmulShape) -> Result<f64, ComposeError> {
    if c.matmul.iter().any(|s| s.shape == *shape) {
        return Err(ComposeError::CalibrationIncludesPredictedShape(shape.label()));
    }
    let (x, y) = coords(shape);
    interpolated_efficiency(c, shape.dtype, shape.aligned_16_bytes(), x, y)
}

/// The device work of a product that is not in the calibration's own form, a user's (batched)
/// product of `flops` FLOPs over `bytes` bytes of `dtype` with rows `aligned` to 16 bytes or not:
/// its roofline over the efficiency interpolated as `matmul_efficiency` does at its coordinates
/// (a calibration point at the same coordinates gives its own efficiency). A `Bf16` product reads
/// the fp16 calibration (the same tensor-core kernels at the same element width) at the bf16 peak.
pub fn product_work_s(
    c: &ComposeCeilings,
    flops: f64,
    bytes: f64,
    dtype: Dtype,
    aligned: bool,
) -> Result<f64, ComposeError> {
    let (flops, bytes) = (finite(flops, "product FLOPs")?, finite(bytes, "product bytes")?);
    if flops <= 0.0 || bytes <= 0.0 {
        return Err(ComposeError::NotFinite(format!("a product of {flops} FLOPs over {bytes} bytes")));
    }
    let roofline = (bytes / c.dram_bytes_per_s).max(flops / peak(c, dtype).or_else(|_| peak(c, Dtype::Fp16))?);
    let curve = if dtype == Dtype::Bf16 { Dtype::Fp16 } else { dtype };
    let e = interpolated_efficiency(c, curve, aligned, flops.log2(), (flops / bytes).log2())?;
    Ok(roofline / e.max(1e-12))
}

fn interpolated_efficiency(
    c: &ComposeCeilings,
    dtype: Dtype,
    aligned: bool,
    x: f64,
    y: f64,
) -> Result<f64, ComposeError> {
    let peak = peak(c, dtype)?;
    let mut near: Vec<(f64, f64)> = Vec::new();
    for s in c.matmul.iter().filter(|s| s.shape.dtype == dtype && s.shape.aligned_16_bytes() == aligned) {
        let e =
            matmul_roofline_s(&s.shape, c.dram_bytes_per_s, peak) / finite(s.work_s, "calibration work")?.max(1e-12);
        let (sx, sy) = coords(&s.shape);
        near.push(((sx - x).powi(2) + (sy - y).powi(2), e));
    }
    if near.is_empty() {
        let class = if aligned { "16-byte-aligned rows" } else { "unaligned rows" };
        return Err(ComposeError::NoCalibration(format!("{}, {class}", dtype.name())));
    }
    near.sort_by(|a, b| a.0.total_cmp(&b.0));
    near.truncate(NEIGHBOURS);
    if near[0].0 < 1e-12 {
        return Ok(near[0].1);
    }
    let (mut num, mut den) = (0.0, 0.0);
    for (d2, e) in near {
        let w = 1.0 / d2;
        num += w * e.ln();
        den += w;
    }
    Ok((num / den).exp())
}

fn peak(c: &ComposeCeilings, dtype: Dtype) -> Result<f64, ComposeError> {
    c.peak_flops_per_s
        .get(dtype.name())
        .copied()
        .ok_or_else(|| ComposeError::Missing { what: "peak", key: dtype.name().into() })
}

/// A launch's host cost on a stream: the larger of its issue time with the device blocked and with
/// the device idle (absent in older ceilings: then the blocked one alone).
fn host_issue(c: &ComposeCeilings, k: &KernelCount) -> Result<f64, ComposeError> {
    let key = match k.path {
        LaunchPath::Kernel => "kernel".to_string(),
        LaunchPath::Blas => format!("blas.{}", k.dtype.name()),
    };
    let blocked =
        c.host_issue_s.get(&key).copied().ok_or(ComposeError::Missing { what: "host issue time", key: key.clone() })?;
    let idle = finite(c.host_issue_idle_s.get(&key).copied().unwrap_or(0.0), "idle host issue")?;
    Ok(finite(blocked, "host issue")?.max(idle))
}

/// The DRAM curve for a kernel's load width: 8-byte loads (or narrower) read the 8-byte curve.
fn dram_curve_for<'a>(
    c: &'a ComposeCeilings,
    k: &KernelCount,
) -> Result<(&'a [CurvePoint], &'static str), ComposeError> {
    if finite(k.load_bytes, "load bytes")? <= 8.0 {
        if c.dram_curve_8b.is_empty() {
            return Err(ComposeError::Missing { what: "DRAM curve", key: "8-byte loads".into() });
        }
        Ok((&c.dram_curve_8b, "dram 8-byte"))
    } else {
        Ok((&c.dram_curve, "dram"))
    }
}

/// The key of a dependent step's latency: "reduce" or "stream", and the vector width (8 or 16).
pub fn step_key(reduce: bool, load_bytes: f64) -> String {
    format!("{}.{}", if reduce { "reduce" } else { "stream" }, if load_bytes <= 8.0 { 8 } else { 16 })
}

/// Step latency at `blocks`: linear in log(blocks) between the points, flat beyond the ends.
pub fn step_latency_at(points: &[StepPoint], blocks: f64) -> Option<f64> {
    let b = blocks.max(1.0);
    let (first, last) = (points.first()?, points.last()?);
    if b <= first.blocks {
        return Some(first.step_s);
    }
    for w in points.windows(2) {
        if b <= w[1].blocks {
            let t = (b / w[0].blocks).ln() / (w[1].blocks / w[0].blocks).ln();
            return Some(w[0].step_s + t * (w[1].step_s - w[0].step_s));
        }
    }
    Some(last.step_s)
}

/// The time a block needs for its dependent steps (a lower bound on the kernel: a block cannot
/// finish sooner); None when the kernel has none or the ceilings predate the step latencies.
fn steps_term(c: &ComposeCeilings, k: &KernelCount) -> Result<Option<f64>, ComposeError> {
    let (r, s) = (finite(k.reduction_steps, "reduction steps")?, finite(k.stream_steps, "stream steps")?);
    if r + s == 0.0 || c.step_latency_s.is_empty() {
        return Ok(None);
    }
    let blocks = finite(k.blocks, "blocks")?;
    let mut t = 0.0;
    for (n, reduce) in [(r, true), (s, false)] {
        if n > 0.0 {
            let key = step_key(reduce, k.load_bytes);
            let l = c
                .step_latency_s
                .get(&key)
                .and_then(|p| step_latency_at(p, blocks))
                .ok_or(ComposeError::Missing { what: "dependent-step latency", key: key.clone() })?;
            t += n * finite(l, "step latency")?;
        }
    }
    Ok(Some(t))
}

/// One kernel: the mode's launch gap plus the largest of its work terms.
pub fn predict_kernel(
    c: &ComposeCeilings,
    k: &KernelCount,
    mode: LaunchMode,
) -> Result<KernelPrediction, ComposeError> {
    let launch_s = finite(if mode == LaunchMode::Stream { c.gap_stream_s } else { c.gap_graph_s }, "gap")?;
    let mut terms = BTreeMap::new();
    let mut efficiency = None;
    let p = peak(c, k.dtype)?;
    terms.insert("compute".to_string(), finite(k.flops, "flops")? / p);
    if let Some(shape) = &k.matmul {
        let e = matmul_efficiency(c, shape)?;
        terms.insert("matmul".to_string(), matmul_roofline_s(shape, c.dram_bytes_per_s, p) / e);
        efficiency = Some(e);
    } else {
        let bif = finite(k.bytes_in_flight, "bytes in flight")?;
        if k.dram_bytes > 0.0 {
            let (curve, name) = dram_curve_for(c, k)?;
            terms.insert("memory.dram".to_string(), k.dram_bytes / curve_bandwidth(curve, bif, name)?);
        }
        if k.l2_bytes > 0.0 {
            terms.insert("memory.l2".to_string(), k.l2_bytes / curve_bandwidth(&c.l2_curve, bif, "l2")?);
        }
        if k.dram_bytes > 0.0 {
            terms.insert("latency".to_string(), finite(c.min_work_s, "min work")?);
        } else if k.l2_bytes > 0.0 {
            terms.insert("latency".to_string(), finite(c.min_work_l2_s, "min work l2")?);
        }
        if let Some(t) = steps_term(c, k)? {
            terms.insert("latency.steps".to_string(), t);
        }
    }
    let (work_term, work_s) =
        terms.iter().max_by(|a, b| a.1.total_cmp(b.1)).map(|(n, v)| (n.clone(), *v)).unwrap_or(("none".into(), 0.0));
    let bound = if launch_s >= work_s { "launch".to_string() } else { work_term.clone() };
    Ok(KernelPrediction {
        kind: k.kind.clone(),
        launch_s,
        terms,
        work_s,
        work_term,
        bound,
        time_s: launch_s + work_s,
        efficiency,
    })
}

/// The composition: takes only the ceilings and the operation counts (no measured time of the
/// predicted kernels can reach it: `ComposeCeilings` holds none, and a calibration containing a
/// predicted shape is refused).
pub fn predict_step(
    c: &ComposeCeilings,
    kernels: &[KernelCount],
    mode: LaunchMode,
) -> Result<StepPrediction, ComposeError> {
    let preds = kernels.iter().map(|k| predict_kernel(c, k, mode)).collect::<Result<Vec<_>, _>>()?;
    let launch_gaps_s: f64 = preds.iter().map(|p| p.launch_s).sum();
    let work_s: f64 = preds.iter().map(|p| p.work_s).sum();
    let graph_overhead_s = if mode == LaunchMode::Graph { finite(c.graph_overhead_s, "graph overhead")? } else { 0.0 };
    let device_s = launch_gaps_s + work_s + graph_overhead_s;
    let host_s = match mode {
        LaunchMode::Stream => kernels.iter().map(|k| host_issue(c, k)).sum::<Result<f64, _>>()?,
        LaunchMode::Graph => finite(c.host_issue_graph_s, "graph issue")?,
    };
    let exposed_host_s = (host_s - device_s).max(0.0);
    Ok(StepPrediction {
        mode,
        kernels: preds,
        launch_gaps_s,
        work_s,
        graph_overhead_s,
        device_s,
        host_s,
        exposed_host_s,
        time_s: device_s + exposed_host_s,
    })
}

/// Where a step's predicted time goes, by kernel kind: count, summed time, and how many of them
/// each bound names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindShare {
    pub kind: String,
    pub count: usize,
    pub time_s: f64,
    pub launch_s: f64,
    pub bounds: BTreeMap<String, usize>,
}

/// Group a step prediction by kernel kind (in order of first appearance).
pub fn attribution(p: &StepPrediction) -> Vec<KindShare> {
    let mut out: Vec<KindShare> = Vec::new();
    for k in &p.kernels {
        let i = match out.iter().position(|s| s.kind == k.kind) {
            Some(i) => i,
            None => {
                out.push(KindShare {
                    kind: k.kind.clone(),
                    count: 0,
                    time_s: 0.0,
                    launch_s: 0.0,
                    bounds: BTreeMap::new(),
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        s.count += 1;
        s.time_s += k.time_s;
        s.launch_s += k.launch_s;
        *s.bounds.entry(k.bound.clone()).or_insert(0) += 1;
    }
    out
}

#[cfg(test)]
mod tests;
