//! `launch`: the launch floor of seed 003's bottleneck model, for an empty kernel: plain launches
//! back to back on the default stream, and the same launches replayed from a CUDA graph. Each sample
//! is the time of a batch of 1000 launches between two events divided by 1000; median of samples,
//! taken in blocks on up to four of the host's CPUs, each block after the GPU spun on every SM (its
//! clocks up) and a warm-up of launches, so neither the core nor the GPU's idle clock of whatever
//! ran before sets the floor (docs/PERFORMANCE.md, "The launch floor").
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

/// How long the host launches empty kernels before the first block is timed, so the launching
/// core and the driver's queue are in the steady state the floor describes (it was 200 launches,
/// about 1 ms); each later block gets `BLOCK_WARM_UP_S` after its move to another CPU.
const WARM_UP_S: f64 = 0.1;
const BLOCK_WARM_UP_S: f64 = 0.025;
/// Before each block the GPU spins on every SM for this long, so its clocks are at the level of a
/// running workload whatever the process did before (an idle H200 sits at 345 MHz).
const BUSY_S: f64 = 0.03;
/// The floor is timed in blocks on this many of the CPUs the thread may use, spread over them.
const FLOOR_CPUS: usize = 4;

/// The CPUs the calling thread may run on, in order (empty where the OS does not say).
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: plain libc calls on a zeroed, properly sized set; they read the calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// `cpus` without the CPU lane's core (the highest-numbered online CPU, crates/session) whether or
/// not the lane runs, so a run with the lane and a run without it time the floor on the same CPUs.
fn without_the_lane_core(cpus: Vec<usize>) -> Vec<usize> {
    // SAFETY: a plain libc query.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let kept: Vec<usize> = cpus.iter().copied().filter(|&c| online < 3 || (c as i64) < online as i64 - 1).collect();
    if kept.is_empty() {
        cpus
    } else {
        kept
    }
}

/// Up to `n` of `cpus`, spread evenly over them (the first always among them).
fn spread_over(cpus: &[usize], n: usize) -> Vec<usize> {
    let k = n.min(cpus.len());
    (0..k).map(|i| cpus[i * cpus.len() / k]).collect()
}

/// Keeps the calling thread on one CPU until dropped (the previous CPU set restored then): the
/// floor is the host's enqueue cost, and a thread moved between cores mid-batch would time two.
struct PinnedTo {
    previous: libc::cpu_set_t,
}

impl PinnedTo {
    fn cpu(cpu: usize) -> Option<Self> {
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: plain libc calls on zeroed, properly sized sets; they affect the calling thread only.
        unsafe {
            let mut previous: libc::cpu_set_t = std::mem::zeroed();
            if libc::sched_getaffinity(0, size, &mut previous) != 0 {
                return None;
            }
            let mut one: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut one);
            (libc::sched_setaffinity(0, size, &one) == 0).then_some(PinnedTo { previous })
        }
    }
}

impl Drop for PinnedTo {
    fn drop(&mut self) {
        // SAFETY: restores the mask read in `cpu`.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.previous);
        }
    }
}

/// The GPU spinning on every SM for `BUSY_S`, then `secs` of empty launches (drained now and then,
/// so they stay back to back, never queue-bound); the launches made.
fn busy_then_launch(t: &mut CudaTarget, secs: f64) -> Result<usize, TargetError> {
    let null = std::ptr::null_mut();
    let spin_ns = (BUSY_S * 1e9) as u64;
    t.gpu.launch(Module::OpsCompose, "spin_ns", t.sms * 4, 128, 0, &[spin_ns], null)?;
    t.gpu.sync()?;
    let warm = Instant::now();
    let mut launches = 0usize;
    while launches < 200 || warm.elapsed().as_secs_f64() < secs {
        for _ in 0..100 {
            t.gpu.launch(Module::Bw, "empty_kernel", 1, 1, 0, &[], null)?;
        }
        launches += 100;
        if launches.is_multiple_of(1000) {
            t.gpu.sync()?;
        }
    }
    t.gpu.sync()?;
    Ok(launches)
}

/// One block of the plain floor: the CPU it ran on (None: unpinned), its samples (seconds per
/// launch) and the SM clock NVML read right after it.
struct Block {
    cpu: Option<usize>,
    samples: Vec<f64>,
    sm_clock_mhz: Option<u32>,
}

/// The plain floor in blocks on `FLOOR_CPUS` CPUs, `reps` samples in all; the launches of the
/// warm-ups.
fn plain_floor(t: &mut CudaTarget, reps: usize) -> Result<(Vec<Block>, usize), TargetError> {
    let null = std::ptr::null_mut();
    let cpus: Vec<Option<usize>> = match spread_over(&without_the_lane_core(allowed_cpus()), FLOOR_CPUS) {
        v if v.is_empty() => vec![None],
        v => v.into_iter().map(Some).collect(),
    };
    let per_block = reps.div_ceil(cpus.len());
    let mut blocks = Vec::new();
    let mut warm_launches = 0;
    for (i, &cpu) in cpus.iter().enumerate() {
        let pinned = cpu.and_then(PinnedTo::cpu);
        warm_launches += busy_then_launch(t, if i == 0 { WARM_UP_S } else { BLOCK_WARM_UP_S })?;
        let mut samples = Vec::with_capacity(per_block);
        for _ in 0..per_block {
            let ms = timed(t, null, BATCH, |tt| tt.gpu.launch(Module::Bw, "empty_kernel", 1, 1, 0, &[], null))?;
            samples.push(ms / 1e3 / BATCH as f64);
        }
        let sm_clock_mhz =
            crate::gpu::nvml::read(t.gpu.ordinal, t.gpu.pci_bus_id().as_deref()).and_then(|r| r.sm_clock_mhz);
        blocks.push(Block { cpu: pinned.as_ref().and(cpu), samples, sm_clock_mhz });
    }
    Ok((blocks, warm_launches))
}

/// "CPU 3 3.85 us (1980 MHz)" per block.
fn describe_blocks(blocks: &[Block]) -> String {
    blocks
        .iter()
        .map(|b| {
            format!(
                "{} {:.3} us ({} MHz)",
                b.cpu.map_or("unpinned".to_string(), |c| format!("CPU {c}")),
                memscope_core::stats::median(&b.samples) * 1e6,
                b.sm_clock_mhz.map_or("?".to_string(), |m| m.to_string())
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 9 } else { 31 };
    // (the background warming of the kernel cache, when a run started it, ends before any timing)
    let prewarm = t.wait_for_prewarm();
    let (blocks, warm_launches) = plain_floor(t, reps)?;
    let plain: Vec<f64> = blocks.iter().flat_map(|b| b.samples.iter().copied()).collect();
    let graph = graph_floor(t, reps)?;
    let mut out = ProbeOutput::default();
    let (m, s) = summarize(&plain, "launch floor")?;
    out.finding(
        keys::LAUNCH_FLOOR_S,
        Finding::number(
            m,
            "s",
            &format!(
                "empty kernel <<<1,1>>>, {BATCH} back-to-back launches on the default stream between events, median of {} \
                 samples in {} blocks, each block on its own CPU (the launching thread kept there) after the GPU spun on \
                 every SM for {:.0} ms and {:.0} ms of launches ({:.0} ms before the first; {warm_launches} in all)",
                plain.len(),
                blocks.len(),
                BUSY_S * 1e3,
                BLOCK_WARM_UP_S * 1e3,
                WARM_UP_S * 1e3
            ),
            Confidence::High,
        )
        .with_spread(s)
        .with_note(&format!(
            "per block, its median and the SM clock right after it (NVML): {}",
            describe_blocks(&blocks)
        )),
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
                "{note}; the kernel modules were warmed in the background first ({:.2} s on {} threads, this probe waited {:.2} s{failed}; crates/cuda/src/prewarm.rs)",
                w.seconds, w.threads, waited_s
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_spread_over_the_allowed_cpus() {
        assert_eq!(spread_over(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14], 4), vec![0, 3, 7, 11]);
        assert_eq!(spread_over(&[2, 5], 4), vec![2, 5]);
        assert!(spread_over(&[], 4).is_empty());
        assert!(!allowed_cpus().is_empty());
    }
}
