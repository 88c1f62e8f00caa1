//! `launch`: the launch floor of seed 003's bottleneck model, for an empty kernel: plain launches
//! back to back on the default stream, and the same launches replayed from a CUDA graph. Each sample
//! is the time of a batch of 1000 launches between two events divided by 1000; median of samples.
//! Then the floor of every operation class of the model (`keys::LAUNCH_CLASSES`; docs/MODEL.md): the
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

/// How long the host launches empty kernels before the floor is timed, so the launching core and
/// the driver's queue are in the steady state the floor describes (it was 200 launches, about
/// 1 ms). The floor still moves between processes on the H200 machine, by more than within one
/// (docs/PERFORMANCE.md, "The default run's time").
const WARM_UP_S: f64 = 0.1;

/// Keeps the calling thread on the CPU it runs on until dropped: the floor is the host's enqueue
/// cost, and a thread moved between cores mid-batch would time two of them.
struct StayOnThisCpu {
    previous: Option<libc::cpu_set_t>,
    cpu: Option<usize>,
}

impl StayOnThisCpu {
    fn new() -> Self {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: plain libc calls on zeroed, properly sized sets; they affect the calling thread only.
        unsafe {
            let mut previous: libc::cpu_set_t = std::mem::zeroed();
            let cpu = libc::sched_getcpu();
            if cpu < 0 || libc::sched_getaffinity(0, size, &mut previous) != 0 {
                return StayOnThisCpu { previous: None, cpu: None };
            }
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu as usize, &mut one);
            if libc::sched_setaffinity(0, size, &one) != 0 {
                return StayOnThisCpu { previous: None, cpu: None };
            }
            StayOnThisCpu { previous: Some(previous), cpu: Some(cpu as usize) }
        }
    }
    fn cpu(&self) -> Option<usize> {
        self.cpu
    }
}

impl Drop for StayOnThisCpu {
    fn drop(&mut self) {
        if let Some(previous) = &self.previous {
            // SAFETY: restores the mask read in `new`.
            unsafe {
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), previous);
            }
        }
    }
}

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 9 } else { 31 };
    // (the background warming of the kernel cache, when a run started it, ends before any timing)
    let prewarm = t.wait_for_prewarm();
    let null = std::ptr::null_mut();
    let stay = StayOnThisCpu::new();
    let warm = Instant::now();
    let mut warm_launches = 0usize;
    while warm_launches < 200 || warm.elapsed().as_secs_f64() < WARM_UP_S {
        for _ in 0..100 {
            t.gpu.launch(Module::Bw, "empty_kernel", 1, 1, 0, &[], null)?;
        }
        warm_launches += 100;
        // (the queue is drained now and then: the launches stay back to back, never queue-bound)
        if warm_launches.is_multiple_of(1000) {
            t.gpu.sync()?;
        }
    }
    t.gpu.sync()?;
    let mut plain = Vec::new();
    for _ in 0..reps {
        let ms = timed(t, null, BATCH, |tt| tt.gpu.launch(Module::Bw, "empty_kernel", 1, 1, 0, &[], null))?;
        plain.push(ms / 1e3 / BATCH as f64);
    }
    let graph = graph_floor(t, reps)?;
    let cpu = stay.cpu();
    drop(stay);
    let on_cpu = cpu.map(|c| format!(", the launching thread kept on CPU {c}")).unwrap_or_default();
    let mut out = ProbeOutput::default();
    let (m, s) = summarize(&plain, "launch floor")?;
    out.finding(
        keys::LAUNCH_FLOOR_S,
        Finding::number(
            m,
            "s",
            &format!(
                "empty kernel <<<1,1>>>, {BATCH} back-to-back launches on the default stream between events, median of {reps}, \
                 after {:.0} ms of launches ({warm_launches}){on_cpu}",
                WARM_UP_S * 1e3
            ),
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
    class_findings(t, &mut out, prewarm.as_ref())?;
    Ok(out)
}

/// The floor of each class of the model, as the model's operations are timed. Work that fails
/// while the context still works (a kernel file NVRTC refuses, cuBLAS missing, memory) leaves
/// every class undetermined with the reason, the empty kernel's findings kept; a fault fails the
/// probe (the context is rebuilt).
fn class_findings(
    t: &mut CudaTarget,
    out: &mut ProbeOutput,
    prewarm: Option<&(crate::prewarm::Warmed, f64)>,
) -> Result<(), ProbeError> {
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
        let mut f = class_finding(p, took_s);
        if let Some((w, waited_s)) = prewarm {
            let failed = if w.failed.is_empty() { String::new() } else { format!(", failed: {}", w.failed.join(", ")) };
            let note = f.note.take().unwrap_or_default();
            f = f.with_note(&format!(
                "{note}; the kernel modules were warmed in the background first ({:.2} s, this probe waited {:.2} s{failed}; crates/cuda/src/prewarm.rs)",
                w.seconds, waited_s
            ));
        }
        out.finding(&keys::launch_class_floor_s(class), f);
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
