//! `launch`: the launch floor of seed 003's bottleneck model, for an empty kernel: plain launches
//! back to back on the default stream, and the same launches replayed from a CUDA graph. Each sample
//! is the time of a batch of 1000 launches between two events divided by 1000; median of samples.

use super::bw::timed;
use super::{cuda_only, run_gpu, summarize};
use crate::gpu::timing::stream_sync;
use crate::gpu::Module;
use crate::gpu::{Graph, OwnedStream};
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetError, TargetInfo,
};

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
    Ok(out)
}

impl Probe for LaunchProbe {
    fn key(&self) -> &'static str {
        "launch"
    }
    fn description(&self) -> &'static str {
        "GPU kernel launch floor for an empty kernel, plain and through a CUDA graph"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        cuda_only(target)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure)
    }
}
