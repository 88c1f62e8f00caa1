//! `launch`: the launch floor of seed 003's bottleneck model, for an empty kernel: plain launches
//! back to back on the default stream, and the same launches replayed from a CUDA graph. Each sample
//! is the time of a batch of 1000 launches between two events divided by 1000; median of samples.
//! Then the floor of every operation class of the model (`keys::LAUNCH_CLASSES`, issue 24): the
//! class's smallest operation, launched and timed exactly as the model times its operations
//! (`ops::ceilings::class_floors` on the target's GPU), one `launch.op.<class>_floor_s` each.

use super::bw::timed;
use super::{cuda_only, run_gpu, summarize};
use crate::gpu::timing::stream_sync;
use crate::gpu::Module;
use crate::gpu::{Graph, OwnedStream};
use crate::ops::ceilings::{class_floors, LaunchPoint};
use crate::ops::device::OpsGpu;
use crate::ops::device::{REPS, REP_S};
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Spread, TargetError, TargetInfo,
};
use std::time::Instant;

pub struct LaunchProbe;

const BATCH: usize = 1000;

fn graph_floor(t: &mut CudaTarget, reps: usize) -> Result<Vec<f64>, TargetError> {
    let stream = OwnedStream::new()?;
    let s = stream.raw();
    let gpu = &t.gpu;
    let graph =
        Graph::capture(s, || (0..BATCH).try_for_each(|_| gpu.launch(Module::Bw, "empty_kernel", 1, 1, 0, &[], s)))?;
    for _ in 0..3 {
        graph.launch()?;
    }
    stream_sync(s, "graph execution")?;
    let mut v = Vec::new();
    for _ in 0..reps {
        let ms = timed(t, s, 1, |_| graph.launch())?;
        v.push(ms / 1e3 / BATCH as f64);
    }
    Ok(v)
}

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 5 } else { 15 };
    let null = std::ptr::null_mut();
    for _ in 0..200 {
        t.gpu.launch(Module::Bw, "empty_kernel", 1, 1, 0, &[], null)?;
    }
    t.gpu.sync()?;
    let mut plain = Vec::new();
    for _ in 0..reps {
        let ms = timed(t, null, BATCH, |tt| tt.gpu.launch(Module::Bw, "empty_kernel", 1, 1, 0, &[], null))?;
        plain.push(ms / 1e3 / BATCH as f64);
    }
    let graph = graph_floor(t, reps)?;
    let mut out = ProbeOutput::default();
    let (m, s) = summarize(&plain, "launch floor")?;
    out.finding(
        keys::LAUNCH_FLOOR_S,
        Finding::number(
            m,
            "s",
            &format!("empty kernel <<<1,1>>>, {BATCH} back-to-back launches on the default stream between events, median of {reps}"),
            Confidence::High,
        )
        .with_spread(s),
    );
    let (m, s) = summarize(&graph, "graph launch floor")?;
    out.finding(
        keys::LAUNCH_GRAPH_FLOOR_S,
        Finding::number(
            m,
            "s",
            &format!(
                "the same {BATCH} empty launches captured in one CUDA graph, replayed between events, median of {reps}"
            ),
            Confidence::High,
        )
        .with_spread(s),
    );
    class_findings(t, &mut out)?;
    Ok(out)
}

/// The floor of each class of the model, as the model's operations are timed. Work that fails
/// while the context still works (a kernel file NVRTC refuses, cuBLAS missing, memory) leaves
/// every class undetermined with the reason, the empty kernel's findings kept; a fault fails the
/// probe (the context is rebuilt).
fn class_findings(t: &mut CudaTarget, out: &mut ProbeOutput) -> Result<(), ProbeError> {
    let started = Instant::now();
    let measured = OpsGpu::on(t.gpu()).and_then(|g| class_floors(&g));
    let points = match measured {
        Ok(p) => p,
        Err(e) if t.gpu.sync().is_ok() => {
            let why = format!("the class floors could not be measured: {e}");
            for class in keys::LAUNCH_CLASSES {
                let method = "the class's smallest operation, timed as the bottleneck model times its operations";
                out.finding(&keys::launch_class_floor_s(class), Finding::undetermined("s", method, &why));
            }
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let took_s = started.elapsed().as_secs_f64();
    for (class, p) in keys::LAUNCH_CLASSES.iter().zip(&points) {
        if p.class != *class {
            return Err(ProbeError::Failed(format!("class floors out of order: {} where {class} belongs", p.class)));
        }
        out.finding(&keys::launch_class_floor_s(class), class_finding(p, took_s));
    }
    Ok(())
}

fn class_finding(p: &LaunchPoint, took_s: f64) -> Finding {
    let t = &p.timing;
    // (the timing rule keeps the median, min and max of its repetitions: half the range bounds the MAD)
    let spread = Spread {
        mad: (t.max_per_call_s - t.min_per_call_s) / 2.0,
        min: t.min_per_call_s,
        max: t.max_per_call_s,
        ci95: None,
        n: t.reps,
    };
    Finding::number(
        t.per_call_s,
        "s",
        &format!(
            "the class's smallest operation ({}), timed as the bottleneck model times its operations: {} back-to-back calls \
             (~{:.0} ms) rotating through {} copies of its buffers on the ops stream, between events, median of {}",
            p.operation,
            t.calls_per_rep,
            REP_S * 1e3,
            p.rotation_sets,
            REPS
        ),
        Confidence::High,
    )
    .with_spread(spread)
    .with_note(&format!(
        "spread: min and max of the repetitions, mad half their range (an upper bound); all {} class floors took {:.2} s (ops kernels loaded, buffers, timing)",
        keys::LAUNCH_CLASSES.len(),
        took_s
    ))
}

impl Probe for LaunchProbe {
    fn key(&self) -> &'static str {
        "launch"
    }
    /// Host-timed (see `Probe::runs_alone`).
    fn runs_alone(&self) -> bool {
        true
    }
    fn description(&self) -> &'static str {
        "GPU kernel launch floor for an empty kernel, plain and through a CUDA graph, and per operation class of the model"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        cuda_only(target)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure)
    }
}
