//! The decode-step sweep: GPT-2 small at contexts 128 and 1,024, batch 1..512, fp32 and
//! fp16, each step timed eagerly (launches on a stream) and as a CUDA graph; predicted before it is
//! measured by the composition (`memscope_model::compose::predict_step`, from the composition's
//! ceilings and the step's operation counts only) beside seed 003's two compositions; per-kernel
//! event times of the eager step recorded for the attribution (never an input); and the
//! out-of-sample check: a GPT-2-medium-shaped step (24 layers x 1,024) predicted with the same
//! ceilings and calibration, nothing re-fitted.

use super::batch::Gpt2;
use super::compose_ceilings::{self as cc, ComposeCeilingsReport};
use super::device::{OpsGpu, Timing};
use crate::gpu::{GpuError, GpuResult};
use memscope_core::Progress;
use memscope_model::bottleneck::{self as m, Dtype, SessionCeilings};
use memscope_model::compose::{self as cm, ComposeCeilings, LaunchMode, StepPrediction, PREDICTION_INPUTS};
use memscope_model::compose_step::{self as cs, DecodeShape, GPT2_MEDIUM_SHAPE, GPT2_SMALL_SHAPE};
use serde::Serialize;
use std::collections::BTreeMap;

/// One kernel kind of one step: the composition's share and bounds, and the measured event times.
#[derive(Debug, Clone, Serialize)]
pub struct KindRow {
    pub kind: String,
    pub count: usize,
    pub predicted_s: f64,
    pub predicted_launch_s: f64,
    /// How many kernels of this kind each term bounds.
    pub bounds: BTreeMap<String, usize>,
    /// Sum over the kind's kernels of the median event time between its launch's neighbours in
    /// the eager step (explanation only).
    pub measured_events_s: f64,
}

/// The composition's totals of one step (the per-kernel terms are summarised by kind in
/// `attribution`).
#[derive(Debug, Clone, Serialize)]
pub struct StepTotals {
    pub launch_gaps_s: f64,
    pub work_s: f64,
    pub graph_overhead_s: f64,
    pub device_s: f64,
    pub host_s: f64,
    pub exposed_host_s: f64,
    pub time_s: f64,
}

impl From<&StepPrediction> for StepTotals {
    fn from(p: &StepPrediction) -> Self {
        StepTotals {
            launch_gaps_s: p.launch_gaps_s,
            work_s: p.work_s,
            graph_overhead_s: p.graph_overhead_s,
            device_s: p.device_s,
            host_s: p.host_s,
            exposed_host_s: p.exposed_host_s,
            time_s: p.time_s,
        }
    }
}

/// One measured step and its predictions.
#[derive(Debug, Clone, Serialize)]
pub struct SweepRow {
    pub model: String,
    /// false for GPT-2 small (the calibrated model), true for the out-of-sample shape.
    pub out_of_sample: bool,
    pub dtype: String,
    pub context: u64,
    pub batch: u64,
    pub mode: LaunchMode,
    pub measured: Timing,
    pub tokens_per_s: f64,
    /// The composition (computed before the measurement).
    pub predicted_s: f64,
    pub ratio: f64,
    pub prediction: StepTotals,
    /// Seed 003's compositions with the session's seed ceilings (the same for both modes).
    pub seed_per_kernel_s: f64,
    pub seed_per_kernel_ratio: f64,
    pub seed_max_of_totals_s: f64,
    pub seed_max_of_totals_ratio: f64,
    /// By kernel kind: the composition's time and bounds; the measured event times are those of
    /// the eager step (the same in both rows of a batch).
    pub attribution: Vec<KindRow>,
}

/// Scores of a group of rows.
#[derive(Debug, Clone, Serialize)]
pub struct GroupScore {
    pub group: String,
    pub composition: Option<m::RatioStats>,
    pub within_1_5x: f64,
    pub seed_per_kernel: Option<m::RatioStats>,
    pub seed_max_of_totals: Option<m::RatioStats>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ComposeRun {
    /// What the composition takes: these ceilings and the operation counts, nothing else.
    pub prediction_inputs: Vec<(String, String)>,
    pub compose_ceilings: ComposeCeilingsReport,
    /// The seed-003 launch floor of each step kind: class floors summed over its kernels.
    pub seed_step_floor_s: BTreeMap<String, f64>,
    pub rows: Vec<SweepRow>,
    pub scores: Vec<GroupScore>,
    /// Configurations that failed (the sweep goes on without them).
    pub errors: Vec<String>,
}

fn seed_predictions(
    ceil: &SessionCeilings,
    shape: &DecodeShape,
    dtype: Dtype,
    b: u64,
    t: u64,
) -> GpuResult<(f64, f64, f64)> {
    let c = ceil;
    let classes = shape.launch_classes(dtype);
    let refs: Vec<(&str, u32)> = classes.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    let floor = m::step_launch_floor(c, &refs).map_err(|e| GpuError::invalid(e.to_string()))?;
    let bw = *c.bandwidth_bytes_per_s.get("read").ok_or_else(|| GpuError::invalid("no read bandwidth"))?;
    let peak = *c.peak_flops_per_s.get(dtype.name()).ok_or_else(|| GpuError::invalid("no peak"))?;
    let model = shape.seed_model(dtype);
    let totals = m::decode_step_totals(&model, b, t, floor, bw, peak).time_s;
    let per_kernel = m::decode_step_per_kernel_prediction(&model, b, t, floor, bw, peak).1.time_s;
    Ok((floor, per_kernel, totals))
}

/// Median event time of every kernel of the eager step (3 steps after a warm-up); checks that the
/// launches are the counted kernels, in order.
fn kernel_events(g: &OpsGpu, model: &Gpt2, b: u64, kinds: &[String]) -> GpuResult<Vec<f64>> {
    let events = (0..=kinds.len()).map(|_| g.event()).collect::<GpuResult<Vec<_>>>()?;
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    model.step(g, b)?;
    for _ in 0..3 {
        g.record(&events[0])?;
        let mut i = 0usize;
        model.step_with(g, b, &mut |kind| {
            if kinds.get(i).map(String::as_str) != Some(kind) {
                return Err(GpuError::invalid(format!("launch {i} is {kind}, the counts say {:?}", kinds.get(i))));
            }
            i += 1;
            g.record(&events[i])
        })?;
        if i != kinds.len() {
            return Err(GpuError::invalid(format!("the step launched {i} kernels, the counts have {}", kinds.len())));
        }
        g.sync()?;
        for (k, p) in per.iter_mut().enumerate() {
            p.push(g.elapsed_s(&events[k], &events[k + 1])?);
        }
    }
    Ok(per
        .into_iter()
        .map(|mut v| {
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        })
        .collect())
}

fn attribution(p: &StepPrediction, kinds: &[String], events: &[f64]) -> Vec<KindRow> {
    cm::attribution(p)
        .into_iter()
        .map(|s| KindRow {
            measured_events_s: kinds.iter().zip(events).filter(|(k, _)| **k == s.kind).map(|(_, t)| t).sum(),
            kind: s.kind,
            count: s.count,
            predicted_s: s.time_s,
            predicted_launch_s: s.launch_s,
            bounds: s.bounds,
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn sweep_model(
    g: &OpsGpu,
    seed: &SessionCeilings,
    c: &ComposeCeilings,
    shape: &DecodeShape,
    dtype: Dtype,
    context: u64,
    batches: &[u64],
    out_of_sample: bool,
    progress: &dyn Progress,
) -> GpuResult<Vec<SweepRow>> {
    let max_b = *batches.iter().max().ok_or_else(|| GpuError::invalid("no batches"))?;
    let model = Gpt2::new(g, shape, dtype, max_b, context)?;
    let mut rows = Vec::new();
    for &b in batches {
        let counts = cs::step_kernels(shape, b, context, dtype);
        let kinds: Vec<String> = counts.iter().map(|k| k.kind.clone()).collect();
        // Predictions first, from the ceilings and the counts only.
        let preds = [LaunchMode::Stream, LaunchMode::Graph]
            .map(|mode| cm::predict_step(c, &counts, mode).map_err(|e| GpuError::invalid(e.to_string())));
        let (_, seed_pk, seed_tot) = seed_predictions(seed, shape, dtype, b, context)?;
        let eager = g.time_calls(20e-3, 3, |_| model.step(g, b))?;
        let graph = g.time_graph(1, 20e-3, 3, |_| model.step(g, b))?;
        let events = kernel_events(g, &model, b, &kinds)?;
        for (mode, pred, measured) in
            [(LaunchMode::Stream, &preds[0], eager.clone()), (LaunchMode::Graph, &preds[1], graph.clone())]
        {
            let pred = pred.clone()?;
            let t = measured.per_call_s;
            let attribution = attribution(&pred, &kinds, &events);
            progress.message(&format!(
                "{} {} T={context} b={b} {:?}: measured {:.3} ms, composition {:.3} ms ({:.2}x), seed per-kernel {:.3} ms ({:.2}x), max of totals {:.3} ms ({:.2}x)",
                shape.name,
                dtype.name(),
                mode,
                t * 1e3,
                pred.time_s * 1e3,
                t / pred.time_s,
                seed_pk * 1e3,
                t / seed_pk,
                seed_tot * 1e3,
                t / seed_tot
            ));
            rows.push(SweepRow {
                model: shape.name.into(),
                out_of_sample,
                dtype: dtype.name().into(),
                context,
                batch: b,
                mode,
                tokens_per_s: b as f64 / t,
                predicted_s: pred.time_s,
                ratio: t / pred.time_s,
                seed_per_kernel_s: seed_pk,
                seed_per_kernel_ratio: t / seed_pk,
                seed_max_of_totals_s: seed_tot,
                seed_max_of_totals_ratio: t / seed_tot,
                prediction: StepTotals::from(&pred),
                measured,
                attribution,
            });
        }
    }
    Ok(rows)
}

fn score(group: &str, rows: &[&SweepRow]) -> GroupScore {
    let r: Vec<f64> = rows.iter().map(|r| r.ratio).collect();
    let within = r.iter().filter(|&&x| (1.0 / 1.5..=1.5).contains(&x)).count() as f64 / r.len().max(1) as f64;
    GroupScore {
        group: group.into(),
        composition: m::ratio_stats(&r),
        within_1_5x: within,
        seed_per_kernel: m::ratio_stats(&rows.iter().map(|r| r.seed_per_kernel_ratio).collect::<Vec<_>>()),
        seed_max_of_totals: m::ratio_stats(&rows.iter().map(|r| r.seed_max_of_totals_ratio).collect::<Vec<_>>()),
    }
}

/// The whole sweep: the composition's ceilings, then every step, predicted then measured.
pub fn run(g: &OpsGpu, seed: &SessionCeilings, progress: &dyn Progress) -> GpuResult<ComposeRun> {
    let steps = vec![(GPT2_SMALL_SHAPE, cs::SWEEP_BATCHES.to_vec()), (GPT2_MEDIUM_SHAPE, cs::MEDIUM_BATCHES.to_vec())];
    for dtype in [Dtype::Fp32, Dtype::Fp16] {
        if let Some(s) = cs::calibration_overlap(&cs::calibration_shapes(dtype), &steps) {
            return Err(GpuError::invalid(format!("the calibration contains the step's shape {}", s.label())));
        }
    }
    let report = cc::measure(g, seed, progress)?;
    let c = &report.ceilings;
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    let mut keep = |what: String, r: GpuResult<Vec<SweepRow>>, rows: &mut Vec<SweepRow>| match r {
        Ok(v) => rows.extend(v),
        Err(e) => {
            progress.message(&format!("{what} FAILED: {e}"));
            errors.push(format!("{what}: {e}"));
        }
    };
    let mut floors = BTreeMap::new();
    for dtype in [Dtype::Fp32, Dtype::Fp16] {
        for shape in [GPT2_SMALL_SHAPE, GPT2_MEDIUM_SHAPE] {
            let (floor, _, _) = seed_predictions(seed, &shape, dtype, 1, 128)?;
            floors.insert(format!("{} {}", shape.name, dtype.name()), floor);
        }
        for context in cs::SWEEP_CONTEXTS {
            let small = &GPT2_SMALL_SHAPE;
            let r = sweep_model(g, seed, c, small, dtype, context, &cs::SWEEP_BATCHES, false, progress);
            keep(format!("gpt2-small {} T={context}", dtype.name()), r, &mut rows);
        }
        let (shape, batches) = (GPT2_MEDIUM_SHAPE, cs::MEDIUM_BATCHES);
        let r = sweep_model(g, seed, c, &shape, dtype, cs::MEDIUM_CONTEXT, &batches, true, progress);
        keep(format!("gpt2-medium {} T={}", dtype.name(), cs::MEDIUM_CONTEXT), r, &mut rows);
    }
    let pick = |f: &dyn Fn(&SweepRow) -> bool| rows.iter().filter(|r| f(r)).collect::<Vec<_>>();
    let scores = vec![
        score("gpt2-small, all", &pick(&|r| !r.out_of_sample)),
        score("gpt2-small, stream", &pick(&|r| !r.out_of_sample && r.mode == LaunchMode::Stream)),
        score("gpt2-small, graph", &pick(&|r| !r.out_of_sample && r.mode == LaunchMode::Graph)),
        score("gpt2-medium (out of sample)", &pick(&|r| r.out_of_sample)),
    ];
    Ok(ComposeRun {
        prediction_inputs: PREDICTION_INPUTS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        compose_ceilings: report,
        seed_step_floor_s: floors,
        rows,
        scores,
        errors,
    })
}
