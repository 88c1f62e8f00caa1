//! The ceilings the composition needs, measured in the session that uses them, all on
//! operations other than the predicted step: the isolated launch (launch + synchronise), the host
//! issue time per launch path (our kernel, a cuBLAS call, a graph) with the device held by a spin
//! kernel and with the device idle, the device gap of back-to-back empty kernels on a stream and in
//! a graph, the read bandwidth by bytes in flight from DRAM and from L2 (grids of 1.. blocks of a
//! one-load-per-thread read kernel; DRAM also with 8-byte loads), the minimum work of a kernel that
//! touches memory, the latency of a one-block kernel's dependent step (two row loads per thread,
//! with or without a 16-lane shuffle reduction; 16- and 8-byte vectors), and the matrix-product
//! calibration sweep (`compose_step::calibration_shapes`,
//! none a step's shape, aligned and unaligned rows), graph-timed.

use super::device::{Arg, DevBuf, OpsGpu, Timing};
use crate::gpu::{GpuError, GpuResult};
use memscope_core::Progress;
use memscope_model::bottleneck::{Dtype, SessionCeilings};
use memscope_model::compose::{ComposeCeilings, CurvePoint, MatmulSample, StepPoint};
use memscope_model::compose_step::calibration_shapes;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Instant;

/// Launches queued behind the spin kernel per measurement (well under the driver's queue depth).
const QUEUED: usize = 256;
/// How long the spin kernel holds the device, ns (longer than the host needs to queue `QUEUED`).
const SPIN_NS: u64 = 20_000_000;
const REPS: usize = 5;
/// The pool the DRAM curve and the calibration products rotate through.
const POOL_BYTES: u64 = 1 << 30;
/// The L2-resident region of the L2 curve.
const L2_REGION_BYTES: u64 = 8 << 20;

/// Medians of repeated host-side and device-side measurements of the launch paths.
#[derive(Debug, Clone, Serialize)]
pub struct LaunchMeasurements {
    pub isolated_launch_s: Vec<f64>,
    pub host_issue_s: BTreeMap<String, Vec<f64>>,
    /// Host time per launch with no spin kernel ahead (the device finishes each before the next).
    pub host_issue_idle_s: BTreeMap<String, Vec<f64>>,
    pub host_issue_graph_s: Vec<f64>,
    /// Device time per queued launch behind the spin kernel, by path.
    pub device_queued_s: BTreeMap<String, Vec<f64>>,
    /// Device time per replay of a graph of 1 and of `QUEUED` empty kernels.
    pub graph_replay_1_s: Vec<f64>,
    pub graph_replay_many_s: Vec<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CurveMeasurement {
    pub region: String,
    pub blocks: u32,
    pub bytes_in_flight: f64,
    pub bytes_per_call: u64,
    pub timing: Timing,
    pub work_s: f64,
    pub bytes_per_s: f64,
}

/// One dependent-step latency: `blocks` blocks walking `STEPS_SHORT` and `STEPS_LONG` steps.
#[derive(Debug, Clone, Serialize)]
pub struct StepMeasurement {
    /// `compose::step_key`: "reduce.16", "stream.8", ...
    pub key: String,
    pub blocks: u32,
    pub short: Timing,
    pub long: Timing,
    /// (long - short) / (STEPS_LONG - STEPS_SHORT), seconds.
    pub step_s: f64,
}

/// Steps of the two step-chain launches whose difference is the step latency.
const STEPS_SHORT: u64 = 16;
const STEPS_LONG: u64 = 256;

#[derive(Debug, Clone, Serialize)]
pub struct CalibrationPoint {
    pub shape: String,
    pub timing: Timing,
    pub work_s: f64,
    pub efficiency: f64,
}

/// What the composition's ceilings were built from (the raw points) and the ceilings.
#[derive(Debug, Clone, Serialize)]
pub struct ComposeCeilingsReport {
    pub ceilings: ComposeCeilings,
    pub launch: LaunchMeasurements,
    pub curves: Vec<CurveMeasurement>,
    pub steps: Vec<StepMeasurement>,
    pub calibration: Vec<CalibrationPoint>,
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s[s.len() / 2]
}

fn empty(g: &OpsGpu) -> GpuResult<()> {
    g.launch("empty_kernel", 1, 32, 0, &[])
}

fn spin(g: &OpsGpu) -> GpuResult<()> {
    g.launch("spin_ns", 1, 32, 0, &[Arg::U64(SPIN_NS)])
}

/// Hold the device, queue `QUEUED` calls of `f` between two events: (host s per call, device s per call).
fn queued(g: &OpsGpu, mut f: impl FnMut() -> GpuResult<()>) -> GpuResult<(f64, f64)> {
    let (e0, e1) = (g.event()?, g.event()?);
    spin(g)?;
    g.record(&e0)?;
    let t = Instant::now();
    for _ in 0..QUEUED {
        f()?;
    }
    let host = t.elapsed().as_secs_f64() / QUEUED as f64;
    g.record(&e1)?;
    let dev = g.elapsed_s(&e0, &e1)? / QUEUED as f64;
    g.sync()?;
    Ok((host, dev))
}

/// Queue `QUEUED` calls of `f` on an idle device (no spin kernel ahead): host s per call.
fn idle(g: &OpsGpu, mut f: impl FnMut() -> GpuResult<()>) -> GpuResult<f64> {
    g.sync()?;
    let t = Instant::now();
    for _ in 0..QUEUED {
        f()?;
    }
    let host = t.elapsed().as_secs_f64() / QUEUED as f64;
    g.sync()?;
    Ok(host)
}

fn measure_launch(g: &OpsGpu) -> GpuResult<LaunchMeasurements> {
    let mut isolated = Vec::new();
    for i in 0..110 {
        let t = Instant::now();
        empty(g)?;
        g.sync()?;
        if i >= 10 {
            isolated.push(t.elapsed().as_secs_f64());
        }
    }
    let (a, b, c) = (g.alloc_random(64, Dtype::Fp32, 1, 1.0)?, g.alloc_random(64, Dtype::Fp32, 2, 1.0)?, g.alloc(256)?);
    let (ah, bh, ch) =
        (g.alloc_random(64, Dtype::Fp16, 3, 1.0)?, g.alloc_random(64, Dtype::Fp16, 4, 1.0)?, g.alloc(128)?);
    let mut host: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut dev: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut host_idle: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let one = g.capture(|| empty(g))?;
    let many = g.capture(|| (0..QUEUED).try_for_each(|_| empty(g)))?;
    let (mut hg, mut r1, mut rn) = (Vec::new(), Vec::new(), Vec::new());
    queued(g, || empty(g))?; // warm-up
    for _ in 0..REPS {
        for (key, f) in [
            ("kernel", &mut (|| empty(g)) as &mut dyn FnMut() -> GpuResult<()>),
            ("blas.fp32", &mut || g.gemm(Dtype::Fp32, 8, 8, 8, a.ptr, b.ptr, c.ptr)),
            ("blas.fp16", &mut || g.gemm(Dtype::Fp16, 8, 8, 8, ah.ptr, bh.ptr, ch.ptr)),
        ] {
            let (h, d) = queued(g, &mut *f)?;
            host.entry(key.into()).or_default().push(h);
            dev.entry(key.into()).or_default().push(d);
            host_idle.entry(key.into()).or_default().push(idle(g, f)?);
        }
        let (h, d) = queued(g, || one.launch())?;
        hg.push(h);
        r1.push(d);
        let (_, d) = {
            let (e0, e1) = (g.event()?, g.event()?);
            spin(g)?;
            g.record(&e0)?;
            for _ in 0..8 {
                many.launch()?;
            }
            g.record(&e1)?;
            (0.0, g.elapsed_s(&e0, &e1)? / 8.0)
        };
        rn.push(d);
    }
    Ok(LaunchMeasurements {
        isolated_launch_s: isolated,
        host_issue_s: host,
        host_issue_idle_s: host_idle,
        host_issue_graph_s: hg,
        device_queued_s: dev,
        graph_replay_1_s: r1,
        graph_replay_many_s: rn,
    })
}

/// Device time per call of the read kernel with `blocks` blocks reading `reads` vectors of `width`
/// bytes (16: `read_curve_u32`, 8: `read_curve_u2`), graph-timed.
#[allow(clippy::too_many_arguments)]
fn read_point(
    g: &OpsGpu,
    pool: &DevBuf,
    sink: &DevBuf,
    blocks: u32,
    reads: u64,
    dram: bool,
    width: u64,
) -> GpuResult<Timing> {
    let bytes = reads * width;
    let span = (pool.bytes - bytes) / width;
    let mask = if dram { u64::MAX } else { L2_REGION_BYTES / width - 1 };
    let kernel = if width == 8 { "read_curve_u2" } else { "read_curve_u32" };
    g.time_graph(32, 3e-3, REPS, |i| {
        // DRAM: each call reads a fresh part of the 1 GiB pool (> 4 x L2); L2: the same region.
        let off = if dram { (i as u64 * reads) % span.max(1) } else { 0 };
        let src = pool.ptr + width * off;
        g.launch(kernel, blocks, 256, 0, &[Arg::Ptr(src), Arg::U64(reads), Arg::U64(mask), Arg::Ptr(sink.ptr)])
    })
}

/// Device time per call of `blocks` blocks of 128 threads, each walking `steps` dependent steps
/// over its own rows of `width`-byte vectors (`step_chain_u4` / `_u2`), each call on a fresh part
/// of the DRAM pool.
fn step_point(
    g: &OpsGpu,
    (pool, sink): (&DevBuf, &DevBuf),
    width: u64,
    reduce: bool,
    blocks: u32,
    steps: u64,
) -> GpuResult<Timing> {
    // A block's step reads 16 rows of 16 vectors; rows of a call never repeat within the pool's rotation.
    let bytes = blocks as u64 * (steps + 1) * 16 * 16 * width;
    let slots = (pool.bytes / bytes).max(1);
    let kernel = if width == 8 { "step_chain_u2" } else { "step_chain_u4" };
    g.time_graph(32, 3e-3, REPS, |i| {
        let src = pool.ptr + (i as u64 % slots) * bytes;
        g.launch(
            kernel,
            1,
            128,
            0,
            &[Arg::Ptr(src), Arg::I32(steps as i32), Arg::I32(reduce as i32), Arg::Ptr(sink.ptr)],
        )
    })
}

/// The dependent-step latencies: slope between a short and a long chain, per kind and width, at
/// 1, 2, 4, 8, 16 blocks and a quarter, half and all of the SMs.
fn measure_steps(g: &OpsGpu, pool: &DevBuf, sink: &DevBuf, progress: &dyn Progress) -> GpuResult<Vec<StepMeasurement>> {
    let sms = g.sm_count;
    let mut ladder: Vec<u32> = vec![1, 2, 4, 8, 16, sms / 4, sms / 2, sms];
    ladder.retain(|&b| b >= 1);
    ladder.sort_unstable();
    ladder.dedup();
    let mut out = Vec::new();
    for (reduce, width) in [(true, 16u64), (true, 8), (false, 16), (false, 8)] {
        let key = memscope_model::compose::step_key(reduce, width as f64);
        let mut parts = Vec::new();
        for &blocks in &ladder {
            let short = step_point(g, (pool, sink), width, reduce, blocks, STEPS_SHORT)?;
            let long = step_point(g, (pool, sink), width, reduce, blocks, STEPS_LONG)?;
            let step_s = ((long.per_call_s - short.per_call_s) / (STEPS_LONG - STEPS_SHORT) as f64).max(0.0);
            parts.push(format!("{blocks}: {:.1}", step_s * 1e9));
            out.push(StepMeasurement { key: key.clone(), blocks, short, long, step_s });
        }
        progress.message(&format!(
            "dependent step {key}, ns per step by blocks at once ({STEPS_SHORT} and {STEPS_LONG} steps): {}",
            parts.join(", ")
        ));
    }
    Ok(out)
}

/// The step latencies by key, each ascending in blocks.
fn step_curves(steps: &[StepMeasurement]) -> BTreeMap<String, Vec<StepPoint>> {
    let mut m: BTreeMap<String, Vec<StepPoint>> = BTreeMap::new();
    for s in steps {
        m.entry(s.key.clone()).or_default().push(StepPoint { blocks: s.blocks as f64, step_s: s.step_s });
    }
    m
}

/// Measure every ceiling of the composition. `seed` is the seed-003 ceilings of the same session
/// (read bandwidth and peaks, from the session's findings).
pub fn measure(g: &OpsGpu, seed: &SessionCeilings, progress: &dyn Progress) -> GpuResult<ComposeCeilingsReport> {
    let launch = measure_launch(g)?;
    let gap_stream = median(&launch.device_queued_s["kernel"]);
    let (r1, rn) = (median(&launch.graph_replay_1_s), median(&launch.graph_replay_many_s));
    let gap_graph = ((rn - r1) / (QUEUED - 1) as f64).max(0.0);
    let graph_overhead = (r1 - gap_graph).max(0.0);
    progress.message(&format!(
        "launch: isolated {:.2} us, host issue kernel {:.2} / cuBLAS fp32 {:.2} / fp16 {:.2} / graph {:.2} us; device gap stream {:.2} us, graph {:.2} us, graph overhead {:.2} us",
        median(&launch.isolated_launch_s) * 1e6,
        median(&launch.host_issue_s["kernel"]) * 1e6,
        median(&launch.host_issue_s["blas.fp32"]) * 1e6,
        median(&launch.host_issue_s["blas.fp16"]) * 1e6,
        median(&launch.host_issue_graph_s) * 1e6,
        gap_stream * 1e6,
        gap_graph * 1e6,
        graph_overhead * 1e6
    ));
    let pool = g.alloc_random(POOL_BYTES / 4, Dtype::Fp32, 77, 1.0)?;
    let sink = g.alloc(16)?;
    // Minimum work: one block, one load per thread.
    let work = |t: &Timing| (t.per_call_s - gap_graph).max(0.05 * t.per_call_s);
    let min_dram = work(&read_point(g, &pool, &sink, 1, 256, true, 16)?);
    let min_l2 = work(&read_point(g, &pool, &sink, 1, 256, false, 16)?);
    progress.message(&format!("minimum work: DRAM {:.2} us, L2 {:.2} us", min_dram * 1e6, min_l2 * 1e6));
    let cap = g.sm_count * g.resident_blocks("read_curve_u32");
    let mut blocks: Vec<u32> = vec![1, 2, 4, 8, 16, 33, 66];
    blocks.extend([1u32, 2, 4, 8].iter().map(|m| m * g.sm_count).filter(|&b| b <= cap));
    let mut curves = Vec::new();
    let (mut dram_curve, mut dram_curve_8b, mut l2_curve) = (Vec::new(), Vec::new(), Vec::new());
    // (region, width): DRAM with 16- and 8-byte loads, L2 with 16-byte loads.
    for (dram, width) in [(true, 16u64), (true, 8), (false, 16)] {
        let cap = if width == 8 { g.sm_count * g.resident_blocks("read_curve_u2") } else { cap };
        for &b in &blocks {
            let reads = b as u64 * 256 * 32;
            let t = read_point(g, &pool, &sink, b, reads, dram, width)?;
            let w = work(&t);
            let bif = (b.min(cap) as f64) * 256.0 * width as f64;
            let bps = (reads * width) as f64 / w;
            let region = match (dram, width) {
                (true, 8) => "dram 8-byte",
                (true, _) => "dram",
                (false, _) => "l2",
            };
            progress.message(&format!(
                "read curve {region}: {b} blocks, {:.0} KiB in flight: {:.1} GB/s",
                bif / 1024.0,
                bps / 1e9
            ));
            let p = CurvePoint { bytes_in_flight: bif, bytes_per_s: bps };
            match (dram, width) {
                (true, 8) => dram_curve_8b.push(p),
                (true, _) => dram_curve.push(p),
                (false, _) => l2_curve.push(p),
            };
            curves.push(CurveMeasurement {
                region: region.into(),
                blocks: b,
                bytes_in_flight: bif,
                bytes_per_call: reads * width,
                timing: t,
                work_s: w,
                bytes_per_s: bps,
            });
        }
    }
    let steps = measure_steps(g, &pool, &sink, progress)?;
    let dram_bw = *seed.bandwidth_bytes_per_s.get("read").ok_or_else(|| GpuError::invalid("no read bandwidth"))?;
    let peaks = seed.peak_flops_per_s.clone();
    let (mut matmul, mut calibration) = (Vec::new(), Vec::new());
    for dtype in [Dtype::Fp32, Dtype::Fp16] {
        let peak = *peaks.get(dtype.name()).ok_or_else(|| GpuError::invalid("no peak"))?;
        g.init(pool.ptr, POOL_BYTES / dtype.size_bytes() as u64, dtype, 78, 1.0)?;
        let shapes = calibration_shapes(dtype);
        let s = dtype.size_bytes() as u64;
        let a_max = shapes.iter().map(|x| x.m * x.k).max().unwrap_or(1);
        let c_max = shapes.iter().map(|x| x.m * x.n).max().unwrap_or(1);
        let a = g.alloc_random(a_max, dtype, 79, 1.0)?;
        let c = g.alloc(c_max * s)?;
        for shape in shapes {
            let wbytes = (shape.k * shape.n * s).next_multiple_of(256);
            let slots = (POOL_BYTES / wbytes).max(1);
            let t = g.time_graph(32, 3e-3, 3, |i| {
                let w = pool.ptr + (i as u64 % slots) * wbytes;
                g.gemm(dtype, shape.m, shape.k, shape.n, a.ptr, w, c.ptr)
            })?;
            let w = work(&t);
            let e = memscope_model::compose::matmul_roofline_s(&shape, dram_bw, peak) / w;
            progress.message(&format!(
                "calibration {}: {:.2} us per call, work {:.2} us, efficiency {:.1}%",
                shape.label(),
                t.per_call_s * 1e6,
                w * 1e6,
                100.0 * e
            ));
            calibration.push(CalibrationPoint { shape: shape.label(), timing: t, work_s: w, efficiency: e });
            matmul.push(MatmulSample { shape, work_s: w });
        }
    }
    let host_issue_s = launch.host_issue_s.iter().map(|(k, v)| (k.clone(), median(v))).collect();
    let host_issue_idle_s = launch.host_issue_idle_s.iter().map(|(k, v)| (k.clone(), median(v))).collect();
    let ceilings = ComposeCeilings {
        isolated_launch_s: median(&launch.isolated_launch_s),
        host_issue_s,
        host_issue_idle_s,
        host_issue_graph_s: median(&launch.host_issue_graph_s),
        gap_stream_s: gap_stream,
        gap_graph_s: gap_graph,
        graph_overhead_s: graph_overhead,
        min_work_s: min_dram,
        min_work_l2_s: min_l2,
        dram_curve,
        dram_curve_8b,
        l2_curve,
        step_latency_s: step_curves(&steps),
        dram_bytes_per_s: dram_bw,
        peak_flops_per_s: peaks,
        matmul,
    };
    Ok(ComposeCeilingsReport { ceilings, launch, curves, steps, calibration })
}
