//! `smem`: the shared memory of an SM (docs/SM_MEMORIES.md; mt4g's "shared" entries, gpu-benches' shared
//! bandwidth), kernels in kernels/smem.cu. Load latency: one thread chases a ring of shared
//! addresses (ld.volatile.shared of the next address, nothing else in the timed region), clock64
//! cycles over the hops, ns at the measured SM clock, %globaltimer as second opinion. Bandwidth:
//! one block of 1024 threads reading 16-byte words conflict-free, the clock64 slope over two round
//! counts (bytes/cycle/SM), and a grid of every SM timed by events (bytes/s). Banks: the cost of a
//! warp's 4-byte loads by lane stride 1..64 words (eight warps, slope over two round counts), fitted
//! by smem_fit. Carveout: for each preferred carveout percent (cuFuncSetAttribute), the largest
//! block footprint of which two blocks stay resident on an SM (blocks count themselves in and out
//! on their SM), so the shared memory the driver configured is twice that footprint; the distinct
//! values are the steps. The driver's attributes (per SM, per block opt-in, reserved per block)
//! are reported beside them.

use super::bw::timed;
use super::smem_fit::{distinct_steps, fit_banks, largest_true};
use super::{cuda_only_sim_lacks, run_gpu};
use crate::gpu::Module;
use crate::gpu::{DeviceAttr, FuncAttr};
use crate::CudaTarget;
use memscope_core::keys;
use memscope_core::stats::{median, Sample};
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Series, TargetError, TargetInfo,
};

pub struct SmemProbe;

/// What the simulator lacks for the shared-memory and atomics probes.
pub(crate) const SIM_LACKS: &str =
    "the simulated target runs pointer chases only and models no shared memory, banks or atomics";

/// Launch on the default stream, wait, and read `n` words of `out`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_read(
    t: &mut CudaTarget,
    m: Module,
    name: &'static str,
    grid: u32,
    block: u32,
    shmem: u32,
    args: &[u64],
    out: u64,
    n: usize,
) -> Result<Vec<u64>, TargetError> {
    t.gpu.launch(m, name, grid, block, shmem, args, std::ptr::null_mut())?;
    t.gpu.sync()?;
    Ok(t.gpu.dtoh(out, n)?)
}

fn sample(v: &[f64], what: &str) -> Result<Sample, ProbeError> {
    Sample::new(v).map_err(|e| ProbeError::Failed(format!("{what}: {e}")))
}

/// (cycles per hop, ns per hop by %globaltimer) of `reps` chases of `hops` hops.
fn chase(t: &mut CudaTarget, out: u64, hops: u64, reps: usize) -> Result<(Vec<f64>, Vec<f64>), TargetError> {
    let (mut cyc, mut ns) = (Vec::new(), Vec::new());
    run_read(t, Module::Smem, "smem_chase", 1, 32, 0, &[1024, 1024, 1, out], out, 5)?;
    for _ in 0..reps {
        let v = run_read(t, Module::Smem, "smem_chase", 1, 32, 0, &[hops, 1024, 1, out], out, 5)?;
        cyc.push(v[1].wrapping_sub(v[0]) as f64 / hops as f64);
        ns.push(v[3].wrapping_sub(v[2]) as f64 / hops as f64);
    }
    Ok((cyc, ns))
}

/// Bytes per cycle of one SM: one block of 1024 threads, slope over 256 and 1024 rounds.
fn bytes_per_cycle(t: &mut CudaTarget, out: u64, reps: usize) -> Result<Vec<f64>, TargetError> {
    let per_round = 1024.0 * 8.0 * 16.0;
    let mut v = Vec::new();
    for _ in 0..reps {
        let a = run_read(t, Module::Smem, "smem_bw", 1, 1024, 0, &[256, out], out, 6)?;
        let b = run_read(t, Module::Smem, "smem_bw", 1, 1024, 0, &[1024, out], out, 6)?;
        let dc = b[1].wrapping_sub(b[0]) as f64 - a[1].wrapping_sub(a[0]) as f64;
        v.push(per_round * 768.0 / dc);
    }
    Ok(v)
}

/// Bytes per second of every SM (two blocks of 1024 threads each), events slope over 256 and
/// 1024 rounds.
fn bytes_per_s(t: &mut CudaTarget, out: u64, reps: usize) -> Result<Vec<f64>, TargetError> {
    let grid = t.sms * 2;
    let per_round = grid as f64 * 1024.0 * 8.0 * 16.0;
    let null = std::ptr::null_mut();
    let mut v = Vec::new();
    t.gpu.launch(Module::Smem, "smem_bw", grid, 1024, 0, &[64, out], null)?;
    for _ in 0..reps {
        let a = timed(t, null, 1, |tt| tt.gpu.launch(Module::Smem, "smem_bw", grid, 1024, 0, &[256, out], null))?;
        let b = timed(t, null, 1, |tt| tt.gpu.launch(Module::Smem, "smem_bw", grid, 1024, 0, &[1024, out], null))?;
        v.push(per_round * 768.0 / ((b - a) * 1e-3));
    }
    Ok(v)
}

/// Strides of the conflict table, words.
const MAX_STRIDE: u64 = 64;
/// Warps of the conflict kernel's block.
const CONFLICT_WARPS: u64 = 16;

/// Cycles per warp access by stride (1..=64): median over `reps` of the slope over 32 and 128
/// rounds of 16 loads by each of 16 warps.
fn conflict_table(t: &mut CudaTarget, out: u64, reps: usize) -> Result<Vec<f64>, TargetError> {
    let n = MAX_STRIDE as usize;
    let block = (CONFLICT_WARPS * 32) as u32;
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); n];
    for _ in 0..reps {
        let a = run_read(t, Module::Smem, "smem_conflict", 1, block, 0, &[MAX_STRIDE, 32, out], out, n)?;
        let b = run_read(t, Module::Smem, "smem_conflict", 1, block, 0, &[MAX_STRIDE, 128, out], out, n)?;
        for s in 0..n {
            let accesses = 96.0 * 16.0 * CONFLICT_WARPS as f64;
            per[s].push((b[s] as f64 - a[s] as f64) / accesses);
        }
    }
    Ok(per.iter().map(|v| median(v)).collect())
}

/// Set an attribute of a kernel.
fn set_attr(t: &mut CudaTarget, name: &'static str, a: FuncAttr, v: i32) -> Result<(), TargetError> {
    Ok(t.gpu.set_func_attr(Module::Smem, name, a, v)?)
}

/// The driver's shared-memory attributes: (per SM, per block opt-in, reserved per block).
fn driver_sizes(t: &CudaTarget) -> Result<(u64, u64, u64), TargetError> {
    use DeviceAttr as A;
    Ok((
        t.gpu.attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)? as u64,
        t.gpu.attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)? as u64,
        t.gpu.attr(A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)? as u64,
    ))
}

/// Footprint granularity of the carveout search (the shared-memory allocation unit), bytes.
const FOOTPRINT_STEP: u64 = 128;

/// Whether two blocks of `footprint` bytes (dynamic shared memory plus the reserve) stay resident
/// together on the typical SM: 3 blocks per SM are launched, each spins 30 us.
fn two_fit(t: &mut CudaTarget, counters: u64, footprint: u64, reserved: u64) -> Result<bool, TargetError> {
    let dyn_bytes = footprint.saturating_sub(reserved) as u32;
    t.gpu.memset(counters, 8192)?;
    let v: Vec<u32> = {
        t.gpu.launch(
            Module::Smem,
            "smem_resident",
            t.sms * 3,
            32,
            dyn_bytes,
            &[30_000, counters],
            std::ptr::null_mut(),
        )?;
        t.gpu.sync()?;
        t.gpu.dtoh(counters, 2048)?
    };
    let peaks: Vec<f64> = v[1024..].iter().filter(|&&p| p > 0).map(|&p| p as f64).collect();
    Ok(!peaks.is_empty() && median(&peaks) >= 2.0)
}

/// Per preferred carveout percent, the shared memory per SM the driver configured (twice the largest
/// footprint of which two blocks fit; None where even the smallest footprint does not give two).
fn carveouts(t: &mut CudaTarget, percents: &[i32]) -> Result<Vec<(i32, Option<u64>)>, TargetError> {
    let (per_sm, optin, reserved) = driver_sizes(t)?;
    use FuncAttr as F;
    // The kernel declares no static shared memory: a block's footprint is its dynamic shared
    // memory plus the reserve (the largest step, checked against the driver's per-SM size, tests
    // this accounting to the search's 256 B).
    let fixed = t.gpu.func_attr(Module::Smem, "smem_resident", F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?;
    set_attr(t, "smem_resident", F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, optin as i32 - fixed)?;
    let counters = t.gpu.malloc(8192)?;
    let res = (|| {
        let mut out = Vec::new();
        let lo = (reserved + FOOTPRINT_STEP).max(2048);
        let hi = (per_sm / 2).min(optin) + FOOTPRINT_STEP;
        for &p in percents {
            set_attr(t, "smem_resident", F::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, p)?;
            let f = largest_true(lo, hi, FOOTPRINT_STEP, |f| two_fit(t, counters, f, reserved))?;
            out.push((p, f.map(|f| 2 * f)));
        }
        Ok(out)
    })();
    t.gpu.free(counters);
    res
}

fn measure(t: &mut CudaTarget, quick: bool) -> Result<ProbeOutput, ProbeError> {
    let reps = if quick { 3 } else { 5 };
    let hz = t.clock_hz();
    let out_d = t.scratch(4096)?;
    let mut out = ProbeOutput::default();

    // Load latency.
    let hops = 1u64 << 16;
    let (cyc, ns_gt) = chase(t, out_d, hops, reps)?;
    let c = sample(&cyc, "shared chase")?;
    let method = format!(
        "one thread chases a ring of 1024 shared words (ld.volatile.shared.u32 of the next shared address), {hops} dependent \
         loads after a warm-up lap, clock64 over the hops, median of {reps}"
    );
    let f = match hz {
        Some(hz) => {
            let ns = c.median() / hz * 1e9;
            let spread = Sample::new(&cyc.iter().map(|x| x / hz * 1e9).collect::<Vec<_>>()).map(|s| s.spread());
            let mut f = Finding::number(ns, "ns", &method, Confidence::High)
                .with_cycles(c.median())
                .with_note(&format!("{:.2} cycles at the measured {:.0} MHz", c.median(), hz / 1e6));
            if let Ok(s) = spread {
                f = f.with_spread(s);
            }
            f.with_check(median(&ns_gt), "%globaltimer over the same hops", 0.03)
        }
        None => Finding::undetermined("ns", &method, "the SM clock was not measured, so the cycles have no ns")
            .with_cycles(c.median()),
    };
    out.finding(keys::SMEM_LOAD_LATENCY_NS, f);

    // Bandwidth.
    let bpc = bytes_per_cycle(t, out_d, reps)?;
    let s = sample(&bpc, "shared bandwidth")?;
    let per_sm = s.median();
    out.finding(
        keys::SMEM_BANDWIDTH_BYTES_PER_CYCLE_PER_SM,
        Finding::number(per_sm, "bytes/cycle", &format!(
            "one block of 1024 threads on one SM, ld.volatile.shared.v4.u32 (16 B) conflict-free, 8 per thread per round, clock64 slope over 256 vs 1024 rounds, median of {reps}"),
            Confidence::High).with_spread(s.spread()),
    );
    let bps = bytes_per_s(t, out_d, reps)?;
    let s = sample(&bps, "shared bandwidth, all SMs")?;
    let mut f = Finding::number(s.median(), "bytes/s", &format!(
        "{} blocks of 1024 threads (2 per SM), the same loads, events slope over 256 vs 1024 rounds, median of {reps}", t.sms * 2),
        Confidence::High).with_spread(s.spread());
    if let Some(hz) = hz {
        f = f.with_check(per_sm * t.sms as f64 * hz, "one SM's bytes/cycle x SMs x the measured clock", 0.05);
    }
    out.finding(keys::SMEM_BANDWIDTH_BYTES_PER_S, f);

    // Banks.
    let table = conflict_table(t, out_d, reps)?;
    let strides: Vec<u64> = (1..=MAX_STRIDE).collect();
    let method = format!(
        "one block of {CONFLICT_WARPS} warps, lane i loads 4-byte word i x stride (stride 1..{MAX_STRIDE}), 16 independent loads per warp per \
         round, clock64 slope over 32 vs 128 rounds, median of {reps}; cost = base + slope x conflict degree fitted for 4..128 banks of 4, 8, 16 bytes"
    );
    match fit_banks(&strides, &table) {
        Some(fit) => {
            let sep = fit.separation();
            let conf = if fit.floored {
                Confidence::Low
            } else if fit.best.rel_rms < 0.1 && sep > 3.0 {
                Confidence::High
            } else if sep > 1.5 {
                Confidence::Medium
            } else {
                Confidence::Low
            };
            let runner = fit
                .runner_up
                .as_ref()
                .map(|r| format!("{} banks of {} B leave {:.1}x the residual", r.banks, r.width_bytes, sep))
                .unwrap_or_else(|| "no other layout fits".into());
            let mut note = format!(
                "fit: {:.2} + {:.3} cycles per way, relative residual {:.1}%; {runner}",
                fit.best.base_cycles,
                fit.best.cycles_per_way,
                100.0 * fit.best.rel_rms
            );
            if fit.floored {
                note.push_str("; a 2-way access costs hardly more than a 1-way one here (issue-bound low end), so the bank width is not separated from the count at the same row size");
            }
            out.finding(keys::SMEM_BANKS, Finding::integer(fit.best.banks, "banks", &method, conf).with_note(&note));
            out.finding(keys::SMEM_BANK_WIDTH_BYTES, Finding::integer(fit.best.width_bytes, "bytes", &method, conf));
            out.finding(
                keys::SMEM_CONFLICT_WAY_CYCLES,
                Finding::number(fit.best.cycles_per_way, "cycles", &method, conf)
                    .with_note("extra cycles per warp access for each further way of bank conflict (the fit's slope)"),
            );
            let ways = fit.by_degree(&table);
            out.series(
                "smem.conflict_by_degree",
                Series {
                    description:
                        "cycles per warp access by conflict degree under the fitted bank layout (the n-way table)"
                            .into(),
                    x_name: "conflict degree".into(),
                    x_unit: "ways".into(),
                    y_name: "cycles per warp access".into(),
                    y_unit: "cycles".into(),
                    x: ways.iter().map(|w| w.0 as f64).collect(),
                    y: ways.iter().map(|w| w.1).collect(),
                    y_spread: None,
                    marks: vec![],
                },
            );
        }
        None => {
            let why = "no bank layout explains the cost by stride (no rise with the conflict degree)";
            out.finding(keys::SMEM_BANKS, Finding::undetermined("banks", &method, why));
            out.finding(keys::SMEM_BANK_WIDTH_BYTES, Finding::undetermined("bytes", &method, why));
        }
    }
    out.series(
        "smem.conflict_by_stride",
        Series {
            description: "cycles per warp access of 4-byte shared loads, lane i at word i x stride".into(),
            x_name: "lane stride".into(),
            x_unit: "words".into(),
            y_name: "cycles per warp access".into(),
            y_unit: "cycles".into(),
            x: strides.iter().map(|&s| s as f64).collect(),
            y: table,
            y_spread: None,
            marks: vec![],
        },
    );

    // Carveout steps and the driver's sizes.
    let (per_sm_attr, optin, reserved) = driver_sizes(t)?;
    let percents: Vec<i32> = (0..=100).step_by(if quick { 2 } else { 1 }).collect();
    let readings = carveouts(t, &percents)?;
    let got: Vec<u64> = readings.iter().filter_map(|r| r.1).collect();
    let steps = distinct_steps(&got, 2 * FOOTPRINT_STEP);
    let method = format!(
        "for each preferred carveout {}..100% (cuFuncSetAttribute PREFERRED_SHARED_MEMORY_CARVEOUT, step {}%): the largest block footprint \
         (dynamic shared memory + the {reserved} B reserve, {FOOTPRINT_STEP} B steps, binary search) of which two 32-thread blocks stay \
         resident together on an SM (blocks count themselves in and out on their %smid); the shared memory configured is twice it",
        percents[0],
        if quick { 2 } else { 1 }
    );
    let missing = readings.len() - got.len();
    if steps.is_empty() {
        out.finding(
            keys::SMEM_CARVEOUT_STEPS_BYTES,
            Finding::undetermined("bytes", &method, "no preferred carveout let two blocks share an SM"),
        );
    } else {
        let mut note = format!(
            "{} distinct of {} readings, each to {} B; a step below two of the smallest footprints ({} B) cannot be seen this way (a \
             launch that needs shared memory gets at least what one block needs)",
            steps.len(),
            readings.len(),
            2 * FOOTPRINT_STEP,
            2 * ((reserved + FOOTPRINT_STEP).max(2048))
        );
        if missing > 0 {
            note.push_str(&format!("; {missing} percents gave no reading"));
        }
        out.finding(
            keys::SMEM_CARVEOUT_STEPS_BYTES,
            Finding::json(serde_json::json!(steps), "bytes", &method, Confidence::High).with_note(&note),
        );
    }
    let largest = steps.last().copied();
    let mut cap = Finding::integer(
        per_sm_attr,
        "bytes",
        "driver attribute (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)",
        Confidence::High,
    );
    if let Some(l) = largest {
        cap = cap.with_check(l as f64, "the largest carveout step measured by residency (to 256 B)", 0.0015);
    }
    out.finding(keys::SMEM_CAPACITY_PER_SM_BYTES, cap);
    out.finding(
        keys::SMEM_BLOCK_OPTIN_BYTES,
        Finding::integer(
            optin,
            "bytes",
            "driver attribute (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)",
            Confidence::High,
        ),
    );
    out.finding(
        keys::SMEM_BLOCK_RESERVED_BYTES,
        Finding::integer(
            reserved,
            "bytes",
            "driver attribute (CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)",
            Confidence::High,
        ),
    );
    let pts: Vec<(f64, f64)> = readings.iter().filter_map(|(p, b)| b.map(|b| (*p as f64, b as f64))).collect();
    out.series(
        "smem.carveout_by_percent",
        Series {
            description: "shared memory per SM the driver configured for a preferred carveout (twice the largest footprint two blocks share)".into(),
            x_name: "preferred carveout".into(),
            x_unit: "percent".into(),
            y_name: "shared memory per SM".into(),
            y_unit: "bytes".into(),
            x: pts.iter().map(|p| p.0).collect(),
            y: pts.iter().map(|p| p.1).collect(),
            y_spread: None,
            marks: vec![],
        },
    );
    Ok(out)
}

impl Probe for SmemProbe {
    fn key(&self) -> &'static str {
        "smem"
    }
    fn description(&self) -> &'static str {
        "shared memory: load latency, bandwidth per SM, bank count and width by conflict cost, carveout steps"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        cuda_only_sim_lacks(info, SIM_LACKS)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        run_gpu(ctx, measure)
    }
}
