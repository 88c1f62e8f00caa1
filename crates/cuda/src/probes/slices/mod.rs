//! `l2.slices`: the number of L2 slices and which lines of a 2 MiB page share a slice, by seed 000's
//! max-counter method (appendix, "The L2 slice function"; docs/L2_SLICES.md). The per-slice sector
//! counter is reported only as min/max/avg/sum over the slices, so a child `memscope hammer-lines`
//! hammers an anchor line and up to 11 others with binary access weights from one pinned SM, one
//! such experiment per operation (read, atom, red: each has its own per-slice counter), and the
//! child's counters are read by CUPTI in the child or by `ncu` from outside; the probe reads each
//! operation's max (fit.rs: every pair of sampled lines tested once), fits the partition over
//! address bits 7..20 with GF(2), and checks it against the child's timed laps (timing.rs).
//! Within a 2 MiB page the low 21 bits are the same virtually and physically; the page frame (bits
//! 21 and up) stays unknown. The slice function from a full-page slice map is a probe of its own,
//! `l2.slices.function` (function_probe.rs), which reads this probe's timing check.

pub mod fit;
#[cfg(test)]
mod fit_tests;
pub mod function_probe;
#[cfg(test)]
mod function_probe_tests;
#[cfg(test)]
mod h200_maps;
pub mod hammer;
pub mod map;
pub mod map_layout;
#[cfg(test)]
mod map_tests;
pub mod ncu;
pub mod partition_pages;
#[cfg(test)]
mod partition_pages_tests;
pub mod slice_fit;
#[cfg(test)]
mod slice_fit_tests;
pub mod slice_frame_function;
#[cfg(test)]
mod slice_frame_function_tests;
pub mod slice_frames;
#[cfg(test)]
mod slice_frames_tests;
pub mod slice_function;
pub mod slice_mod;
mod slice_mod_held;
#[cfg(test)]
mod slice_mod_tests;
#[cfg(test)]
mod synthetic_frames;
pub mod timing;

use super::{cuda_only, run_gpu};
use crate::gpu::{GpuError, GpuResult};
use crate::CudaTarget;
use fit::{Assignment, Batch, LinearFit};
use hammer::{CounterSource, HammerOp, HammerPlan, HammerReport};
use memscope_core::gf2::format_mask;
use memscope_core::keys;
use memscope_core::{Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub struct SlicesProbe;

/// Accesses per weight unit (a multiple of 8 chains x 32 warps).
const UNIT: u64 = 256;
/// Warps of the hammering block.
const WARPS: u32 = 32;
/// The SM that issues every load (near and far slices are relative to it).
const SM: u32 = 0;
/// Sampled lines: full and --quick.
const LINES_FULL: usize = 128;
const LINES_QUICK: usize = 40;
/// Offsets sampled in each page when `MEMSCOPE_SLICES_PAGES` asks for several pages.
const LINES_PER_PAGE: usize = 32;
const SEED: u64 = 0x5_11ce;
/// SMs that time a lap over the sampled lines after the counters (timing.rs): the hammering SM and
/// its neighbours; on the H200 SMs 0-1 and 2-3 lie in the two groups of the per-SM map.
const TIME_SMS: [u32; 4] = [0, 1, 2, 3];
const TIME_REPS: usize = 3;

/// What stays unknown whatever the counters say.
pub const PHYSICAL_NOTE: &str = "within one 2 MiB page the low 21 address bits are the same virtually and \
     physically, so the partition of the page's lines is physical; the page frame (physical bits 21 and up, which \
     the slice hash also uses) is unknown without a page-table walker, so which slice a line of another page lands \
     on stays undetermined here (the l2.slices.function probe fits the function within a page and each mapped \
     page's share from a slice map)";

/// The operations of the packed design. Writes are left out: on the H200 the write counter took
/// 0.015-0.019 sectors per planned store, varying between kernels, so its max does not decode
/// (results/h200/l2-slices-packed).
pub const PACKED_OPS: [HammerOp; 3] = [HammerOp::Read, HammerOp::Atom, HammerOp::Red];

/// Which experiment layout the probe runs (`MEMSCOPE_SLICES_DESIGN`, a diagnostic: docs/L2_SLICES.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Design {
    /// One experiment per operation of `PACKED_OPS` in each kernel, plus read-only kernels for the
    /// fabric counter (the default: 267 kernels for 128 lines).
    Packed,
    /// One read experiment per kernel (798 kernels for 128 lines).
    Pairs,
    /// Pairs then Packed in one child, on one page: the findings are Packed's, and the partition's
    /// note says whether Pairs found the same.
    Both,
}

impl Design {
    pub fn parse(text: &str) -> Option<Design> {
        match text {
            "packed" => Some(Design::Packed),
            "pairs" => Some(Design::Pairs),
            "both" => Some(Design::Both),
            _ => None,
        }
    }
}

/// The experiments of a design for `n` lines: (the experiments the findings come from, the
/// reference experiments of `Both`, which run in the kernels before them).
pub fn experiments(design: Design, n: usize) -> (Vec<Batch>, Vec<Batch>) {
    let packed = || {
        let slots: Vec<usize> = PACKED_OPS.iter().map(|o| o.code() as usize).collect();
        let mut b = fit::design_packed(n, UNIT, &slots);
        b.extend(fit::design_far(n, UNIT, fit::kernel_count(&b)));
        b
    };
    match design {
        Design::Packed => (packed(), vec![]),
        Design::Pairs => (fit::design(n, UNIT), vec![]),
        Design::Both => {
            let reference = fit::design(n, UNIT);
            let shift = fit::kernel_count(&reference);
            let main = packed().into_iter().map(|b| Batch { kernel: b.kernel + shift, ..b }).collect();
            (main, reference)
        }
    }
}

/// The sampled lines: `n` offsets of one page, or for several pages the same `LINES_PER_PAGE`
/// offsets in each (addresses from the first page's base).
pub fn page_lines(pages: u64, n: usize) -> Vec<u64> {
    if pages <= 1 {
        return fit::sample_lines(n, SEED);
    }
    let per = fit::sample_lines(LINES_PER_PAGE, SEED);
    (0..pages).flat_map(|p| per.iter().map(move |o| p * hammer::PAGE_BYTES + o)).collect()
}

/// The child's kernels: each kernel's experiments' lines as (offset, accesses, operation).
pub fn plan_kernels(lines: &[u64], batches: &[Batch]) -> Vec<Vec<(u64, u64, HammerOp)>> {
    let mut kernels: Vec<Vec<(u64, u64, HammerOp)>> = vec![Vec::new(); fit::kernel_count(batches)];
    for b in batches {
        for (&x, &w) in b.members.iter().zip(&b.weights) {
            kernels[b.kernel].push((lines[x], w, HammerOp::ALL[b.op]));
        }
    }
    kernels
}

/// The operations a set of experiments uses.
fn ops_used(batches: &[Batch]) -> Vec<HammerOp> {
    let mut ops: Vec<HammerOp> = batches.iter().map(|b| HammerOp::ALL[b.op]).collect();
    ops.sort();
    ops.dedup();
    ops
}

fn method(n: usize, batches: &[Batch]) -> String {
    let ops: Vec<&str> = ops_used(batches).iter().map(|o| o.name()).collect();
    format!(
        "ncu lts__t_sectors_srcunit_tex_op_{{{}}} (max over slices, one counter per operation) on `memscope \
         hammer-lines`: {} experiments in {} kernels, each one anchor line and up to {} others of {n} sampled lines \
         of a 2 MiB-aligned page, binary access weights (unit {UNIT} accesses), volatile accesses from {WARPS} \
         warps of one block pinned on SM {SM}; every pair tested once",
        ops.join(","),
        batches.len(),
        fit::kernel_count(batches),
        fit::GROUP
    )
}

/// The probe body on a CUDA target.
fn measure(t: &mut CudaTarget, quick: bool, keep: Option<std::path::PathBuf>) -> Result<ProbeOutput, ProbeError> {
    let started = Instant::now();
    let mut out = ProbeOutput::default();
    let pages = match std::env::var("MEMSCOPE_SLICES_PAGES") {
        Ok(p) => p
            .parse::<u64>()
            .ok()
            .filter(|p| (1..=16).contains(p))
            .ok_or_else(|| ProbeError::Failed(format!("MEMSCOPE_SLICES_PAGES={p:?}: accepted: 1 to 16")))?,
        Err(_) => 1,
    };
    let per_run = match std::env::var("MEMSCOPE_SLICES_LINES") {
        Ok(l) => l
            .parse::<usize>()
            .ok()
            .filter(|l| (2..=1024).contains(l))
            .ok_or_else(|| ProbeError::Failed(format!("MEMSCOPE_SLICES_LINES={l:?}: accepted: 2 to 1024")))?,
        Err(_) if quick => LINES_QUICK,
        Err(_) => LINES_FULL,
    };
    let lines = page_lines(pages, per_run);
    let n = lines.len();
    let design = match std::env::var("MEMSCOPE_SLICES_DESIGN") {
        Ok(d) => Design::parse(&d).ok_or_else(|| {
            ProbeError::Failed(format!("MEMSCOPE_SLICES_DESIGN={d:?}: accepted: packed, pairs, both"))
        })?,
        Err(_) => Design::Packed,
    };
    let (batches, reference) = experiments(design, n);
    let all: Vec<Batch> = reference.iter().chain(&batches).cloned().collect();
    let m = method(n, &batches);
    let explicit = std::env::var_os("MEMSCOPE_SLICES_COUNTERS").is_some();
    let source = match std::env::var("MEMSCOPE_SLICES_COUNTERS") {
        Ok(s) => match s.as_str() {
            "cupti" => CounterSource::Cupti,
            "ncu" => CounterSource::Ncu,
            _ => return Err(ProbeError::Failed(format!("MEMSCOPE_SLICES_COUNTERS={s:?}: accepted: cupti, ncu"))),
        },
        Err(_) if !crate::gpu::profiler::cupti_library_dirs().is_empty() => CounterSource::Cupti,
        Err(_) => CounterSource::Ncu,
    };
    let Some(child) = memscope_core::helper::self_command() else {
        undetermined_all(&mut out, &m, memscope_core::helper::NO_SELF_COMMAND);
        return Ok(out);
    };
    let metrics: Vec<String> = ncu::metric_list(&ops_used(&all)).split(',').map(String::from).collect();
    let plan = HammerPlan {
        sm: Some(SM),
        warps: WARPS,
        pages,
        kernels: plan_kernels(&lines, &all),
        counters: CounterSource::Ncu,
        metrics: vec![],
        time_sms: TIME_SMS.to_vec(),
        time_reps: TIME_REPS,
    };
    let keep_dir = keep.inspect(|k| {
        let _ = std::fs::create_dir_all(k);
    });
    let got = match source {
        CounterSource::Cupti => {
            let cupti_plan = HammerPlan { counters: CounterSource::Cupti, metrics: metrics.clone(), ..plan.clone() };
            match acquire(&cupti_plan, child, t.gpu.ordinal, quick, keep_dir.as_deref()) {
                Ok(g) => Ok(g),
                Err(why) => match memscope_core::helper::self_command() {
                    // CUPTI (chosen by default) did not give the counters: Nsight Compute, when
                    // there is one. Asked for by MEMSCOPE_SLICES_COUNTERS: no other way.
                    Some(child) if !explicit && ncu::find_ncu().is_some() => {
                        out.warnings
                            .push(format!("l2.slices: CUPTI gave no counters ({why}); Nsight Compute used instead"));
                        acquire(&plan, child, t.gpu.ordinal, quick, keep_dir.as_deref())
                    }
                    _ => Err(why),
                },
            }
        }
        CounterSource::Ncu => acquire(&plan, child, t.gpu.ordinal, quick, keep_dir.as_deref()),
    };
    let (report, counters, how) = match got {
        Ok(g) => g,
        Err(why) => {
            undetermined_all(&mut out, &m, &why.to_string());
            return Ok(out);
        }
    };
    let m = format!("{m}; counters read by {how}");
    if let Some(k) = &keep_dir {
        let _ = std::fs::write(k.join("counters.csv"), counters_csv(&counters));
    }
    analyze(&mut out, &m, &lines, &batches, &counters, &report);
    timing_finding(&mut out, &lines, &report);
    if !reference.is_empty() {
        compare_with_reference(&mut out, &lines, &batches, &reference, &counters);
    }
    out.warnings.extend(noise_warnings(&counters, &batches));
    let secs = started.elapsed().as_secs_f64();
    out.finding(
        keys::L2_SLICES_PROBE_SECONDS,
        Finding::number(
            (secs * 10.0).round() / 10.0,
            "s",
            "wall time of the probe (ncu and the child included)",
            Confidence::High,
        ),
    );
    Ok(out)
}

/// Run the child on `plan` (under ncu, or reading CUPTI itself) and decode its counters: the
/// child's report, the counters per planned kernel, and how they were read. Err: why there are none.
fn acquire(
    plan: &HammerPlan,
    mut child: std::process::Command,
    device: usize,
    quick: bool,
    keep: Option<&std::path::Path>,
) -> GpuResult<(HammerReport, Vec<Counters>, String)> {
    let dir = std::env::temp_dir().join(format!("memscope-slices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| GpuError::invalid(format!("{}: {e}", dir.display())))?;
    let plan_path = dir.join("plan.json");
    let plan_text = serde_json::to_string(plan).map_err(|e| GpuError::invalid(e.to_string()))?;
    std::fs::write(&plan_path, &plan_text).map_err(|e| GpuError::invalid(format!("{}: {e}", plan_path.display())))?;
    let timeout = Duration::from_secs(if quick { 120 } else { 300 });
    let (run, how) = match plan.counters {
        CounterSource::Ncu => {
            let Some(ncu_path) = ncu::find_ncu() else {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(GpuError::invalid(
                    "Nsight Compute (ncu) is not on PATH or in /usr/local/cuda/bin, and CUPTI gave no counters: \
                     the per-slice L2 counters cannot be read",
                ));
            };
            let ops: Vec<HammerOp> = ops_of_metrics(plan);
            let args = ncu::ncu_args(&child, &plan_path, device, &ops);
            (ncu::run_ncu(&ncu_path, &args, timeout), "Nsight Compute (ncu) profiling the child".to_string())
        }
        CounterSource::Cupti => {
            let mut path: Vec<std::path::PathBuf> = crate::gpu::profiler::cupti_library_dirs();
            if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
                path.extend(std::env::split_paths(&old).filter(|d| !path.contains(d)).collect::<Vec<_>>());
            }
            if let Ok(joined) = std::env::join_paths(path) {
                child.env("LD_LIBRARY_PATH", joined);
            }
            child.args(["hammer-lines", "--plan"]).arg(&plan_path).args(["--device", &device.to_string()]);
            (ncu::run_command(child, timeout), "CUPTI's range profiler in the child (one range per launch)".to_string())
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    let run = run?;
    if let Some(k) = keep {
        let name = if plan.counters == CounterSource::Cupti { "cupti" } else { "ncu" };
        let _ = std::fs::write(k.join("plan.json"), &plan_text);
        let _ = std::fs::write(k.join(format!("{name}_stdout.txt")), &run.stdout);
        let _ = std::fs::write(k.join(format!("{name}_stderr.txt")), &run.stderr);
        let _ = std::fs::write(k.join(format!("{name}_command.txt")), &run.command);
    }
    let report = match hammer::parse_report(&run.stdout) {
        Some(r) if run.ok => r,
        _ => return Err(GpuError::invalid(ncu::failure_reason(&run))),
    };
    let kernels = match plan.counters {
        CounterSource::Ncu => ncu::parse_csv(&run.stdout)?,
        CounterSource::Cupti => cupti_kernels(&plan.metrics, &report),
    };
    let counters = per_kernel(&report, &kernels, plan.kernels.len())?;
    let how = if plan.counters == CounterSource::Cupti { format!("{how}, {} pass(es)", report.passes) } else { how };
    Ok((report, counters, how))
}

/// The child's CUPTI values as ncu's rows: one entry per launch, the metrics by name.
fn cupti_kernels(metrics: &[String], report: &HammerReport) -> Vec<ncu::KernelMetrics> {
    report
        .values
        .iter()
        .enumerate()
        .map(|(id, v)| ncu::KernelMetrics { id, values: metrics.iter().cloned().zip(v.iter().copied()).collect() })
        .collect()
}

/// The operations a plan's kernels use.
fn ops_of_metrics(plan: &HammerPlan) -> Vec<HammerOp> {
    let mut ops: Vec<HammerOp> = plan.kernels.iter().flatten().map(|l| l.2).collect();
    ops.sort();
    ops.dedup();
    ops
}

/// The timing check of the partition (timing.rs), from the child's timed laps; its JSON carries
/// each timed SM's partition bit (`far_mask`), which `l2.slices.function` reads.
fn timing_finding(out: &mut ProbeOutput, lines: &[u64], report: &HammerReport) {
    if report.timing.is_empty() {
        return;
    }
    let Some(class) = out.findings.get(keys::L2_SLICES_PAGE_PARTITION).and_then(|f| partition_classes(lines, &f.value))
    else {
        return;
    };
    let labels = timing::far_labels(lines, &report.timing);
    let checks = timing::check(&class, &labels);
    let mixed: usize = checks.iter().map(|c| c.classes_mixed).sum();
    let tested: usize = checks.iter().map(|c| c.classes_tested).sum();
    let labelled = checks.iter().any(|c| c.lines > 0);
    let m = format!(
        "after the counters, one first-touch lap over the same {} lines of the same page from SMs {:?} ({} laps \
         each; kernels/sm_map.cu: lines primed at their home slice by reductions, one pointer chase, clock64 per \
         hop), each lap split in two modes (near and far L2 partition, sm_map_fit.rs); every slice class of \
         l2.slices.page_partition must be all near or all far from each SM",
        lines.len(),
        TIME_SMS,
        TIME_REPS
    );
    let value = timing::summary_json(&checks, &labels, lines);
    let f = if !labelled {
        Finding::undetermined("", &m, "no timed lap split into near and far hits")
    } else {
        let conf = if tested > 0 { Confidence::High } else { Confidence::Low };
        let groups = timing_groups(&labels);
        Finding::json(value, "", &m, conf).with_note(&format!(
            "{groups}; {mixed} of {tested} (SM, class) pairs with two or more timed lines mix near and far lines{}",
            if mixed == 0 {
                ": every slice class is all near or all far from every timed SM, as home slices would be"
            } else {
                ": a class of the counters holds lines homed in either L2 partition, so the slices the hammering SM's \
                 counters see are not the lines' home slices but slices of its own partition that serve lines of \
                 both (docs/L2_SLICES.md, \"The timing check\")"
            }
        ))
    };
    out.finding(keys::L2_SLICES_TIMING_CHECK, f);
}

/// How the timed SMs' near/far labels relate: the pairs that label (almost) every line the
/// same way, and those that label (almost) every line the opposite way (the two groups of the
/// per-SM map).
fn timing_groups(labels: &[timing::SmLabels]) -> String {
    let mut same = Vec::new();
    let mut opposite = Vec::new();
    for (i, a) in labels.iter().enumerate() {
        for b in &labels[i + 1..] {
            let (n, d) = timing::opposite(&a.far, &b.far);
            if n == 0 {
                continue;
            }
            let text = format!("SM {} and SM {} ({} of {n})", a.sm, b.sm, if d * 2 > n { d } else { n - d });
            if d * 20 <= n {
                same.push(text);
            } else if d * 20 >= 19 * n {
                opposite.push(text);
            }
        }
    }
    format!(
        "near/far labels alike: {}; opposite: {}",
        if same.is_empty() { "none".to_string() } else { same.join(", ") },
        if opposite.is_empty() { "none".to_string() } else { opposite.join(", ") }
    )
}

/// The partition finding's classes back as a class per sampled line.
fn partition_classes(lines: &[u64], value: &Value) -> Option<Vec<Option<usize>>> {
    let groups = value.get("classes")?.as_array()?;
    let mut class = vec![None; lines.len()];
    for (c, g) in groups.iter().enumerate() {
        for x in g.as_array()? {
            let o = u64::from_str_radix(x.as_str()?.trim_start_matches("0x"), 16).ok()?;
            if let Some(i) = lines.iter().position(|&l| l == o) {
                class[i] = Some(c);
            }
        }
    }
    Some(class)
}

/// The counters of one plan kernel: per operation (indexed by its op code) the max and the sum over
/// slices of its sectors; the read counter's avg; the fabric counter's max and sum. NaN where not
/// collected.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counters {
    pub max: [f64; 4],
    pub sum: [f64; 4],
    pub read_avg: f64,
    pub fab_max: f64,
    pub fab_sum: f64,
}

impl Counters {
    #[cfg(test)]
    /// Only the read counter (the previous one-operation design).
    pub fn read_only(max: f64, sum: f64, avg: f64, fab_max: f64, fab_sum: f64) -> Self {
        let nan = f64::NAN;
        Counters { max: [max, nan, nan, nan], sum: [sum, nan, nan, nan], read_avg: avg, fab_max, fab_sum }
    }
}

/// Match ncu's results (in launch order) to the plan's kernels through the child's launch records;
/// launches that found no block on the SM are skipped.
fn per_kernel(report: &HammerReport, kernels: &[ncu::KernelMetrics], planned: usize) -> GpuResult<Vec<Counters>> {
    if kernels.len() != report.records.len() {
        return Err(GpuError::invalid(format!(
            "ncu profiled {} launches, the child made {}",
            kernels.len(),
            report.records.len()
        )));
    }
    let mut out: Vec<Option<Counters>> = vec![None; planned];
    for (km, rec) in kernels.iter().zip(&report.records) {
        if rec.cycles == 0 || rec.kernel >= planned {
            continue;
        }
        let g = |s: String| km.values.get(&s).copied().unwrap_or(f64::NAN);
        let f = ncu::FABRIC;
        out[rec.kernel] = Some(Counters {
            max: HammerOp::ALL.map(|o| g(format!("{}.max", ncu::tex_metric(o)))),
            sum: HammerOp::ALL.map(|o| g(format!("{}.sum", ncu::tex_metric(o)))),
            read_avg: g(format!("{}.avg", ncu::TEX_READ)),
            fab_max: g(format!("{f}.max")),
            fab_sum: g(format!("{f}.sum")),
        });
    }
    out.into_iter()
        .enumerate()
        .map(|(k, c)| c.ok_or_else(|| GpuError::invalid(format!("no counters for planned kernel {k}"))))
        .collect()
}

/// The counters as CSV (kept with MEMSCOPE_SLICES_KEEP; the replay tests read this layout).
pub fn counters_csv(counters: &[Counters]) -> String {
    let mut text = String::from(
        "# kernel,read_max,read_sum,read_avg,write_max,write_sum,atom_max,atom_sum,red_max,red_sum,fab_max,fab_sum\n",
    );
    for (k, c) in counters.iter().enumerate() {
        text.push_str(&format!(
            "{k},{},{},{},{},{},{},{},{},{},{},{}\n",
            c.max[0],
            c.sum[0],
            c.read_avg,
            c.max[1],
            c.sum[1],
            c.max[2],
            c.sum[2],
            c.max[3],
            c.sum[3],
            c.fab_max,
            c.fab_sum
        ));
    }
    text
}

/// Parse `counters_csv`'s layout (lines starting with # skipped; "NaN" where not collected).
#[cfg(test)]
pub fn parse_counters_csv(text: &str) -> Option<Vec<Counters>> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<f64> = l.split(',').map(|x| x.trim().parse().ok()).collect::<Option<_>>()?;
            (f.len() == 12).then(|| Counters {
                max: [f[1], f[4], f[6], f[8]],
                sum: [f[2], f[5], f[7], f[9]],
                read_avg: f[3],
                fab_max: f[10],
                fab_sum: f[11],
            })
        })
        .collect()
}

/// Sectors counted per planned access of each operation (its counter's sum over the accesses the
/// kernel's experiment of that operation planned), per experiment.
fn per_access(counters: &[Counters], batches: &[Batch]) -> Vec<Vec<f64>> {
    let mut v: Vec<Vec<f64>> = vec![Vec::new(); 4];
    for b in batches {
        let x = counters[b.kernel].sum[b.op] / b.weights.iter().sum::<u64>() as f64;
        if x.is_finite() {
            v[b.op].push(x);
        }
    }
    v
}

/// Sectors counted per planned access, per operation: the median over experiments (~1 when every
/// access is one sector at L2; 0.25 for the H200's reads, one sector per 4 warp loads), taken as
/// the nearest power of two when within 2 % of it (stray sectors in the sums would otherwise
/// shift the decode of the largest maxes by a fraction of a unit).
fn scales(counters: &[Counters], batches: &[Batch]) -> [f64; 4] {
    let v = per_access(counters, batches);
    std::array::from_fn(|op| if v[op].is_empty() { f64::NAN } else { snap_scale(memscope_core::stats::median(&v[op])) })
}

/// `x` as the nearest power of two when within 2 % of it, else `x`.
fn snap_scale(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return x;
    }
    let p = 2f64.powi(x.log2().round() as i32);
    if (x / p - 1.0).abs() <= 0.02 {
        p
    } else {
        x
    }
}

/// A warning per operation whose sectors counted per planned access differ between experiments
/// (the decode divides every experiment's max by one median scale).
fn noise_warnings(counters: &[Counters], batches: &[Batch]) -> Vec<String> {
    let v = per_access(counters, batches);
    let mut out = Vec::new();
    for op in HammerOp::ALL {
        let x = &v[op.code() as usize];
        if x.is_empty() {
            continue;
        }
        let (lo, hi) = x.iter().fold((f64::INFINITY, 0.0f64), |(l, h), &y| (l.min(y), h.max(y)));
        if hi > 1.05 * lo {
            out.push(format!(
                "l2.slices: {} sectors per planned access vary between experiments ({lo:.3}..{hi:.3})",
                op.name()
            ));
        }
    }
    out
}

/// Each experiment's max over slices in weight units' sectors: its operation's max divided by that
/// operation's scale.
fn decoded_maxes(counters: &[Counters], batches: &[Batch], scale: &[f64; 4]) -> Vec<f64> {
    batches.iter().map(|b| counters[b.kernel].max[b.op] / scale[b.op]).collect()
}

/// With a reference design in the same child (`Design::Both`), say on the partition finding
/// whether the reference finds the same partition of the same page.
fn compare_with_reference(
    out: &mut ProbeOutput,
    lines: &[u64],
    batches: &[Batch],
    reference: &[Batch],
    counters: &[Counters],
) {
    let main =
        fit::assign(lines.len(), batches, &decoded_maxes(counters, batches, &scales(counters, batches)), UNIT, true);
    let rs = scales(counters, reference);
    let refa = fit::assign(lines.len(), reference, &decoded_maxes(counters, reference, &rs), UNIT, true);
    let (pairs, differ) = fit::partition_disagreements(&main.class, &refa.class);
    let text = format!(
        "same-page check: the one-experiment-per-kernel design ({} kernels, run first in the same child on the same \
         page) finds {} slices among {} determined lines; the two partitions disagree on {differ} of {pairs} pairs",
        fit::kernel_count(reference),
        refa.classes,
        refa.class.iter().flatten().count()
    );
    if let Some(f) = out.findings.get_mut(keys::L2_SLICES_PAGE_PARTITION) {
        f.note = Some(match f.note.take() {
            Some(n) => format!("{n}. {text}"),
            None => text.clone(),
        });
    }
    if differ > 0 || pairs == 0 {
        out.warnings.push(format!("l2.slices: {text}"));
    }
}

fn undetermined_all(out: &mut ProbeOutput, method: &str, why: &str) {
    for (k, unit) in
        [(keys::L2_SLICES_COUNT, "slices"), (keys::L2_SLICES_PAGE_PARTITION, ""), (keys::L2_SLICES_PAGE_MASKS, "")]
    {
        out.finding(k, Finding::undetermined(unit, method, why));
    }
}

/// With several pages (`MEMSCOPE_SLICES_PAGES`), how their partitions relate, on the partition
/// finding's note: slices seen, shared with the first page, offset pairs that differ.
fn cross_page_note(out: &mut ProbeOutput, pages: Option<fit::CrossPage>) {
    let Some(c) = pages else { return };
    let differ: Vec<String> = c.against_first[1..].iter().map(|(p, d)| format!("{d}/{p}")).collect();
    let text = format!(
        "Across {} adjacent pages of one allocation (the same offsets in each): {} slices seen in all, per page {:?}, \
         slices shared with the first page {:?}; offset pairs whose same/different answer differs from the first \
         page's: {}",
        c.pages,
        c.slices_seen,
        c.per_page_seen,
        c.shared_with_first,
        differ.join(", ")
    );
    if let Some(f) = out.findings.get_mut(keys::L2_SLICES_PAGE_PARTITION) {
        f.note = Some(match f.note.take() {
            Some(n) => format!("{n}. {text}"),
            None => text,
        });
    }
}

/// Group sampled offsets by class as hex strings (the partition as data).
fn classes_json(lines: &[u64], class: &[Option<usize>]) -> Value {
    let k = class.iter().flatten().max().map(|m| m + 1).unwrap_or(0);
    let mut groups: Vec<Vec<String>> = vec![Vec::new(); k];
    for (o, c) in lines.iter().zip(class) {
        if let Some(c) = c {
            groups[*c].push(format!("{o:#x}"));
        }
    }
    json!(groups)
}

fn fit_json(f: &LinearFit) -> Value {
    json!({
        "linear": f.linear,
        "masks": f.masks.iter().map(|m| format_mask(*m)).collect::<Vec<_>>(),
        "same_slice_xor_basis": f.same_basis.iter().map(|m| format_mask(*m)).collect::<Vec<_>>(),
        "violating_pairs": f.violations,
        "pairs": f.pairs,
    })
}

fn points(lines: &[u64], a: &Assignment) -> Vec<(u64, usize)> {
    lines.iter().zip(&a.class).filter_map(|(&o, c)| c.map(|c| (o, c))).collect()
}

/// Findings from the measured counters (pure given its inputs).
pub fn analyze(
    out: &mut ProbeOutput,
    m: &str,
    lines: &[u64],
    batches: &[Batch],
    counters: &[Counters],
    report: &HammerReport,
) {
    let n = lines.len();
    let sc = scales(counters, batches);
    let s = sc[0];
    let tex = decoded_maxes(counters, batches, &sc);
    // Slice count: sum / avg of the read counter of the kernel with the largest read sum (avg has
    // two decimals).
    let mine: std::collections::BTreeSet<usize> = batches.iter().map(|b| b.kernel).collect();
    let big = mine
        .iter()
        .map(|&k| &counters[k])
        .filter(|c| c.sum[0].is_finite())
        .max_by(|a, b| a.sum[0].total_cmp(&b.sum[0]));
    match big.and_then(|c| fit::instances(c.sum[0], c.read_avg)) {
        Some(k) => out.finding(
            keys::L2_SLICES_COUNT,
            Finding::integer(
                k,
                "slices",
                &format!("{} .sum / .avg: the number of lts instances", ncu::TEX_READ),
                Confidence::High,
            )
            .with_note("ncu's count of L2 slice (lts) units, whatever the sampled page reaches"),
        ),
        None => out.finding(
            keys::L2_SLICES_COUNT,
            Finding::undetermined("slices", m, "sum / avg of the per-slice counter is not close to an integer"),
        ),
    }
    let a = fit::assign(n, batches, &tex, UNIT, true);
    let determined = a.class.iter().filter(|c| c.is_some()).count();
    let clear = determined as f64 / n as f64;
    let per_op: Vec<String> = HammerOp::ALL
        .iter()
        .filter(|o| sc[o.code() as usize].is_finite())
        .map(|o| format!("{} {:.3}", o.name(), sc[o.code() as usize]))
        .collect();
    out.finding(
        keys::L2_SLICES_CLEAR_FRACTION,
        Finding::number(clear, "ratio", m, Confidence::High).with_note(&format!(
            "{determined} of {n} sampled lines have a clear max in every experiment that tested them and consistent \
             answers; {} of {} experiments clear; {} contradicting pairs; sectors counted per access: {}",
            a.clear_kernels,
            a.kernels,
            a.conflicts,
            per_op.join(", ")
        )),
    );
    // The in-page findings describe the first page (the only one unless several were asked for).
    let first_page: Vec<(u64, usize)> = points(lines, &a).into_iter().filter(|p| p.0 < hammer::PAGE_BYTES).collect();
    let tex_fit = fit::fit_linear(&first_page);
    let part_note = format!(
        "slices seen from SM {SM}: the slice whose TEX-source read counter took a line's loads. {} distinct among \
         {determined} determined lines of {n} sampled. XOR-linear over bits 7..20: {} ({} of {} pairs violate). \
         Page 2 MiB-aligned by cuMemAlloc: {} (page base {:#x}). {PHYSICAL_NOTE}",
        a.classes, tex_fit.linear, tex_fit.violations, tex_fit.pairs, report.alloc_2mib_aligned, report.page_base
    );
    let conf = if clear >= 0.9 && a.conflicts == 0 { Confidence::High } else { Confidence::Medium };
    if determined < 2 {
        out.finding(keys::L2_SLICES_PAGE_PARTITION, Finding::undetermined("", m, "no line had a clear max counter"));
    } else {
        out.finding(
            keys::L2_SLICES_PAGE_PARTITION,
            Finding::json(json!({"slices_seen": a.classes, "lines": determined, "classes": classes_json(lines, &a.class), "fit": fit_json(&tex_fit)}), "", m, conf)
                .with_note(&part_note),
        );
        out.finding(
            keys::L2_SLICES_PAGE_SLICES_SEEN,
            Finding::integer(a.classes as u64, "slices", m, conf).with_note(&part_note),
        );
        match fit::occupancy_estimate(determined, a.classes) {
            Some((est, lo, hi)) => out.finding(
                keys::L2_SLICES_PAGE_SLICES_ESTIMATE,
                Finding::number(est.round(), "slices", m, Confidence::Low).with_note(&format!(
                    "how many slices the page's lines reach as seen from SM {SM}, if lines fall on them uniformly: the \
                     number S for which {determined} random lines are expected to show {} distinct slices (90% \
                     interval {lo:.0}..{hi:.0}, normal approximation)",
                    a.classes
                )),
            ),
            None => out.finding(
                keys::L2_SLICES_PAGE_SLICES_ESTIMATE,
                Finding::undetermined("slices", m, "no two sampled lines shared a slice: the sample bounds nothing"),
            ),
        }
    }
    if tex_fit.linear && determined >= 2 {
        let masks: Vec<Value> = tex_fit.masks.iter().map(|x| json!(format_mask(*x))).collect();
        out.finding(
            keys::L2_SLICES_PAGE_MASKS,
            Finding::json(Value::Array(masks), "", m, conf).with_note(&format!(
                "the slice of a line within the page is a function of these {} parities of the offset (any invertible \
                 combination is equivalent); 2^{} classes predicted, {} seen. {PHYSICAL_NOTE}",
                tex_fit.masks.len(),
                tex_fit.masks.len(),
                a.classes
            )),
        );
    } else {
        out.finding(
            keys::L2_SLICES_PAGE_MASKS,
            Finding::undetermined(
                "",
                m,
                &format!(
                    "the sampled partition is not XOR-linear over bits 7..20: {} of {} pairs in different slices have \
                     their XOR in the span of same-slice differences, which spans {} of the 14 bits, so {} parities of \
                     the offset are constant on every slice (a non-linear term such as the mod-3 digit of seed \
                     000's 4090 function; the partition itself is in l2.slices.page_partition)",
                    tex_fit.violations,
                    tex_fit.pairs,
                    tex_fit.same_basis.len(),
                    tex_fit.masks.len()
                ),
            ),
        );
    }
    cross_page_note(out, fit::cross_page(lines, &a.class, hammer::PAGE_BYTES));
    // The fabric counter sums every operation: it is read only on kernels with one read experiment.
    let mut per_kernel_count: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for b in batches {
        *per_kernel_count.entry(b.kernel).or_default() += 1;
    }
    let far_batches: Vec<Batch> =
        batches.iter().filter(|b| b.op == 0 && per_kernel_count[&b.kernel] == 1).cloned().collect();
    let fab: Vec<f64> = far_batches.iter().map(|b| counters[b.kernel].fab_max / s).collect();
    far_findings(out, lines, &far_batches, &fab, counters);
}

/// Near/far for the pinned SM and the far lines' home slices, from the fabric counter.
fn far_findings(out: &mut ProbeOutput, lines: &[u64], batches: &[Batch], fab: &[f64], counters: &[Counters]) {
    let n = lines.len();
    let (labels, clear) = fit::far_labels(n, batches, fab, UNIT);
    let far = labels.iter().filter(|l| **l == Some(true)).count();
    let near = labels.iter().filter(|l| **l == Some(false)).count();
    let mine: std::collections::BTreeSet<usize> = batches.iter().map(|b| b.kernel).collect();
    let fab_total: f64 = mine.iter().map(|&k| counters[k].fab_sum).filter(|x| x.is_finite()).sum();
    let tex_total: f64 = mine.iter().map(|&k| counters[k].sum[0]).filter(|x| x.is_finite()).sum();
    let key = keys::L2_SLICES_FAR_FRACTION;
    let fm = format!(
        "{} .max decoded like the TEX counter (sectors that crossed between the two L2 partitions)",
        ncu::FABRIC
    );
    if far == 0 || near == 0 {
        out.finding(
            key,
            Finding::undetermined(
                "ratio",
                &fm,
                &format!(
                    "the fabric counter did not split the lines into near and far for SM {SM} ({near} near, {far} far, \
                     {clear} of {} read-only kernels clear, {fab_total:.0} fabric sectors in all, against {:.0} TEX read \
                     sectors): either every sampled line is in SM {SM}'s L2 partition, or far lines are served through a slice of \
                     that partition without fabric traffic per load; l2.slices.timing_check, which times the lines from SMs \
                     of both partitions, tells them apart. Near/far undetermined by the counters",
                    batches.len(),
                    tex_total
                ),
            ),
        );
        return;
    }
    let fa = fit::assign(n, batches, fab, UNIT, false);
    let class: Vec<Option<usize>> =
        fa.class.iter().zip(&labels).map(|(c, l)| if *l == Some(true) { *c } else { None }).collect();
    let homes = class.iter().flatten().collect::<std::collections::HashSet<_>>().len();
    let far_pts: Vec<(u64, usize)> = lines.iter().zip(&class).filter_map(|(&o, c)| c.map(|c| (o, c))).collect();
    let ffit = fit::fit_linear(&far_pts);
    let far_lines: Vec<String> =
        lines.iter().zip(&labels).filter(|(_, l)| **l == Some(true)).map(|(o, _)| format!("{o:#x}")).collect();
    out.finding(
        key,
        Finding::number(far as f64 / (far + near) as f64, "ratio", &fm, Confidence::Medium).with_note(&format!(
            "{far} of {} labelled lines reach their slice over the fabric from SM {SM} (far partition), {near} do not \
             (near); {clear} of {} read-only kernels clear",
            far + near,
            batches.len()
        )),
    );
    out.finding(
        keys::L2_SLICES_FAR_PARTITION,
        Finding::json(
            json!({"far_lines": far_lines, "far_slices_seen": homes, "classes": classes_json(lines, &class), "fit": fit_json(&ffit)}),
            "",
            &fm,
            Confidence::Medium,
        )
        .with_note("far lines grouped by the slice whose fabric counter took their loads (their home slice in the other partition)"),
    );
}

impl Probe for SlicesProbe {
    fn key(&self) -> &'static str {
        "l2.slices"
    }
    fn description(&self) -> &'static str {
        "GPU L2 slice count and slice sharing within a 2 MiB page (ncu max-counter method)"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        cuda_only(target)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        ctx.progress.message("l2.slices: running ncu on `memscope hammer-lines`");
        let keep = std::env::var_os("MEMSCOPE_SLICES_KEEP").map(std::path::PathBuf::from);
        run_gpu(ctx, |t, quick| measure(t, quick, keep))
    }
}

#[cfg(test)]
mod tests {
    use super::hammer::test_plan;
    use super::*;
    use memscope_core::gf2;
    use rand::Rng;
    use rand::SeedableRng;

    /// Counters of every kernel of `batches` under a ground truth: `slice_of` per line, `far` lines
    /// whose sectors also cross the fabric, `scale` sectors counted per access of each operation,
    /// and up to `noise` stray sectors on every slice an operation touched (the H200's maxes lie
    /// 0..8 sectors above a multiple of the unit).
    pub(super) fn simulate(
        lines: &[u64],
        batches: &[Batch],
        slice_of: &dyn Fn(u64) -> usize,
        far: &dyn Fn(u64) -> bool,
        scale: [f64; 4],
        noise: u64,
        seed: u64,
    ) -> Vec<Counters> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut out = Vec::new();
        for k in 0..fit::kernel_count(batches) {
            let mut per: Vec<std::collections::HashMap<usize, f64>> = vec![Default::default(); 4];
            let mut fab: std::collections::HashMap<usize, f64> = Default::default();
            for b in batches.iter().filter(|b| b.kernel == k) {
                for (&x, &w) in b.members.iter().zip(&b.weights) {
                    let s = slice_of(lines[x]);
                    *per[b.op].entry(s).or_default() += w as f64 * scale[b.op];
                    if far(lines[x]) {
                        *fab.entry(s).or_default() += w as f64 * scale[b.op];
                    }
                }
            }
            let mut c = Counters { max: [0.0; 4], sum: [0.0; 4], read_avg: 0.0, fab_max: 0.0, fab_sum: 0.0 };
            for (op, slices) in per.iter().enumerate() {
                for v in slices.values() {
                    let v = v + rng.gen_range(0..=noise) as f64;
                    c.max[op] = c.max[op].max(v);
                    c.sum[op] += v;
                }
            }
            c.read_avg = (c.sum[0] / 96.0 * 100.0).round() / 100.0;
            for s in 0..96 {
                let v = fab.get(&s).copied().unwrap_or(0.0);
                c.fab_max = c.fab_max.max(v);
                c.fab_sum += v;
            }
            out.push(c);
        }
        out
    }

    fn report() -> HammerReport {
        HammerReport {
            alloc_ptr: 1 << 21,
            alloc_2mib_aligned: true,
            page_base: 1 << 21,
            records: vec![],
            values: vec![],
            passes: 0,
            timing: vec![],
        }
    }

    /// The whole analysis on counters made from a known linear slice function and a known far set,
    /// in every design.
    #[test]
    fn analyze_reports_count_partition_masks_and_far_lines() {
        let masks = [0x0012_3480u64, 0x0008_0d00, 0x001c_0080, 0x0001_8200, 0x0010_0300];
        let lines = fit::sample_lines(48, SEED);
        let far = |o: u64| gf2::parity(o & 0x0004_0080) == 1;
        let slice = |o: u64| gf2::apply(&masks, o) as usize;
        for design in [Design::Pairs, Design::Packed] {
            let (batches, _) = experiments(design, lines.len());
            let counters = simulate(&lines, &batches, &slice, &far, [0.25, 1.0, 1.0, 1.0], 3, 1);
            let mut out = ProbeOutput::default();
            analyze(&mut out, "test", &lines, &batches, &counters, &report());
            assert_eq!(out.findings["l2.slices.count"].value, json!(96), "{design:?}");
            assert_eq!(out.findings["l2.slices.clear_fraction"].as_f64(), Some(1.0), "{design:?}");
            let got: Vec<u64> = out.findings["l2.slices.page_masks"]
                .value
                .as_array()
                .unwrap()
                .iter()
                .map(|v| gf2::parse_mask(v.as_str().unwrap()).unwrap())
                .collect();
            assert!(gf2::same_row_space(&got, &masks), "{design:?}");
            let truth_far = lines.iter().filter(|&&o| far(o)).count();
            let f = out.findings["l2.slices.far_fraction"].as_f64().expect("far lines labelled");
            if design == Design::Pairs {
                assert_eq!(f, truth_far as f64 / lines.len() as f64);
            }
            let far_lines = &out.findings["l2.slices.far_partition"].value["far_lines"];
            for l in far_lines.as_array().unwrap() {
                let o = u64::from_str_radix(l.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
                assert!(far(o), "{design:?}: {o:#x} called far");
            }
            assert!(noise_warnings(&counters, &batches).is_empty());
        }
    }

    /// A non-linear slice function over 47 slices with noise and per-operation scales (reads one
    /// sector per 4 accesses, the others one per access): the packed design finds the same
    /// partition as the one-experiment-per-kernel design, which is the truth, with a third of the
    /// kernels; `Both` says so in the partition's note.
    #[test]
    fn the_packed_design_finds_the_truth_with_a_quarter_of_the_kernels() {
        let lines = fit::sample_lines(LINES_FULL, SEED);
        let slice = |o: u64| (((o >> 7) * 2_654_435_761) >> 7) as usize % 47;
        let near = |_: u64| false;
        let truth: Vec<usize> = lines.iter().map(|&o| slice(o)).collect();
        let (pairs, _) = experiments(Design::Pairs, lines.len());
        let (packed, _) = experiments(Design::Packed, lines.len());
        assert_eq!(fit::kernel_count(&pairs), 798);
        assert_eq!(fit::kernel_count(&packed), 256 + 11);
        let scale = [0.25, 1.0, 1.0, 1.0];
        for (batches, seed) in [(&pairs, 2), (&packed, 3)] {
            let counters = simulate(&lines, batches, &slice, &near, scale, 8, seed);
            let sc = scales(&counters, batches);
            let dm = decoded_maxes(&counters, batches, &sc);
            let a = fit::assign(lines.len(), batches, &dm, UNIT, true);
            assert!(a.class.iter().all(|c| c.is_some()), "every line determined");
            assert_eq!(a.conflicts, 0);
            let t: Vec<Option<usize>> = truth.iter().map(|&x| Some(x)).collect();
            assert_eq!(fit::partition_disagreements(&a.class, &t).1, 0);
        }
        let (main, reference) = experiments(Design::Both, lines.len());
        let all: Vec<Batch> = reference.iter().chain(&main).cloned().collect();
        let counters = simulate(&lines, &all, &slice, &near, scale, 8, 4);
        let mut out = ProbeOutput::default();
        analyze(&mut out, "test", &lines, &main, &counters, &report());
        compare_with_reference(&mut out, &lines, &main, &reference, &counters);
        let note = out.findings["l2.slices.page_partition"].note.clone().unwrap();
        assert!(note.contains("disagree on 0 of 8128 pairs"), "{note}");
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        assert_eq!(out.findings["l2.slices.far_fraction"].confidence, Confidence::Undetermined);
    }

    /// A partition the reference design disagrees with is a warning, not a silent note.
    #[test]
    fn a_disagreeing_reference_is_a_warning() {
        let lines = fit::sample_lines(24, SEED);
        let (main, reference) = experiments(Design::Both, lines.len());
        let all: Vec<Batch> = reference.iter().chain(&main).cloned().collect();
        let slice = |o: u64| (o >> 7) as usize % 5;
        let mut counters = simulate(&lines, &all, &slice, &|_| false, [1.0; 4], 0, 5);
        // The reference's kernels see a different page: another function.
        let other = simulate(&lines, &reference, &|o| (o >> 8) as usize % 5, &|_| false, [1.0; 4], 0, 6);
        counters[..other.len()].copy_from_slice(&other);
        let mut out = ProbeOutput::default();
        analyze(&mut out, "test", &lines, &main, &counters, &report());
        compare_with_reference(&mut out, &lines, &main, &reference, &counters);
        assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
        assert!(out.warnings[0].contains("disagree"));
    }

    #[test]
    fn plans_carry_one_experiment_per_operation_per_kernel() {
        let lines = fit::sample_lines(40, SEED);
        let (batches, _) = experiments(Design::Packed, lines.len());
        let kernels = plan_kernels(&lines, &batches);
        assert_eq!(kernels.len(), fit::kernel_count(&batches));
        for (k, lines_k) in kernels.iter().enumerate() {
            let ops: Vec<usize> = batches.iter().filter(|b| b.kernel == k).map(|b| b.op).collect();
            let mut uniq = ops.clone();
            uniq.dedup();
            assert_eq!(uniq, ops, "kernel {k}: one experiment per operation");
            assert!(lines_k.len() <= hammer::MAX_LINES_PER_KERNEL);
        }
        let plan = HammerPlan { sm: Some(SM), warps: WARPS, pages: 1, kernels, ..test_plan() };
        plan.validate().unwrap();
        assert_eq!(Design::parse("both"), Some(Design::Both));
        assert_eq!(Design::parse("all"), None);
    }

    /// Several pages: the same offsets in each, every pair tested across pages, and the partition
    /// finding's note says how the pages' partitions relate (here a linear hash with frame bits:
    /// the same partition, other slices). The slice function is another probe's.
    #[test]
    fn several_pages_are_related_in_the_partition_note() {
        let lines = page_lines(3, LINES_FULL);
        assert_eq!(lines.len(), 3 * LINES_PER_PAGE);
        assert_eq!(lines[LINES_PER_PAGE], hammer::PAGE_BYTES);
        let (batches, _) = experiments(Design::Packed, lines.len());
        let plan =
            HammerPlan { sm: Some(SM), warps: WARPS, pages: 3, kernels: plan_kernels(&lines, &batches), ..test_plan() };
        plan.validate().unwrap();
        let masks = [0x0012_3480u64, 0x0028_0d00, 0x005c_0080, 0x0001_8200];
        let counters =
            simulate(&lines, &batches, &|a| gf2::apply(&masks, a) as usize, &|_| false, [0.25, 1.0, 1.0, 1.0], 8, 7);
        let mut out = ProbeOutput::default();
        analyze(&mut out, "test", &lines, &batches, &counters, &report());
        let note = out.findings[keys::L2_SLICES_PAGE_PARTITION].note.clone().unwrap();
        assert!(note.contains("Across 3 adjacent pages") && note.contains("0/496, 0/496"), "{note}");
        assert!(!out.findings.contains_key(keys::L2_SLICES_FUNCTION), "l2.slices.function is its own probe");
        assert!(out.findings["l2.slices.page_masks"].confidence != Confidence::Undetermined, "page 0 alone is linear");
    }

    /// CUPTI's values (one row per launch, the plan's metrics in order) decode to the same
    /// counters as ncu's rows; a launch that found no block on the SM is skipped.
    #[test]
    fn cupti_values_become_the_counters_of_their_kernels() {
        let metrics: Vec<String> = ncu::metric_list(&PACKED_OPS).split(',').map(String::from).collect();
        let n = metrics.len();
        let rec = |kernel, cycles| hammer::HammerRecord { kernel, smid: 0, cycles };
        let report = HammerReport {
            records: vec![rec(0, 0), rec(0, 9), rec(1, 9)],
            values: vec![vec![-1.0; n], (0..n).map(|i| i as f64).collect(), (0..n).map(|i| 100.0 + i as f64).collect()],
            ..report()
        };
        let c = per_kernel(&report, &cupti_kernels(&metrics, &report), 2).unwrap();
        let at = |name: &str| metrics.iter().position(|m| m == name).unwrap() as f64;
        assert_eq!(c[0].max[0], at("lts__t_sectors_srcunit_tex_op_read.max"));
        assert_eq!(c[0].sum[3], at("lts__t_sectors_srcunit_tex_op_red.sum"));
        assert_eq!(c[1].fab_max, 100.0 + at("lts__t_sectors_srcunit_ltcfabric.max"));
        assert!(c[0].max[1].is_nan(), "writes are not read");
        let short = HammerReport { values: vec![vec![0.0; n]], ..report.clone() };
        assert!(per_kernel(&short, &cupti_kernels(&metrics, &short), 2).is_err(), "a launch without values");
    }

    /// The timing check on a simulated page: the partition from the counters, laps whose far
    /// lines are whole slices (odd slices far from SM 0, even ones from SM 2): no class mixes near
    /// and far, and SMs 0 and 2 see opposite halves.
    #[test]
    fn the_timing_check_agrees_with_a_partition_of_whole_slices() {
        let lines = fit::sample_lines(48, SEED);
        let slice = |o: u64| ((o >> 7).wrapping_mul(2_654_435_761) >> 9) as usize % 16;
        let (batches, _) = experiments(Design::Packed, lines.len());
        let counters = simulate(&lines, &batches, &slice, &|_| false, [0.25, 1.0, 1.0, 1.0], 4, 9);
        let lap = |sm: u32, far_odd: bool| timing::TimedLap {
            sm,
            lines: lines.clone(),
            first_touch: lines
                .iter()
                .enumerate()
                .map(|(i, &o)| if (slice(o) % 2 == 1) == far_odd { 455 } else { 282 } + i as u32 % 7)
                .collect(),
            warm: lines.iter().map(|_| 282).collect(),
            warm_cycles_per_hop: 275.0,
        };
        let rep = HammerReport { timing: vec![lap(0, true), lap(2, false), lap(0, true)], ..report() };
        let mut out = ProbeOutput::default();
        analyze(&mut out, "test", &lines, &batches, &counters, &rep);
        timing_finding(&mut out, &lines, &rep);
        let f = &out.findings[keys::L2_SLICES_TIMING_CHECK];
        assert_eq!(f.confidence, Confidence::High);
        let note = f.note.clone().unwrap();
        assert!(note.contains("opposite: SM 0 and SM 2 (48 of 48); 0 of "), "{note}");
        assert_eq!(f.value["pairs"][0]["lines_opposite"], f.value["pairs"][0]["lines_both"]);
        assert_eq!(f.value["pairs"][0]["lines_both"], json!(48));
        // Far lines chosen by another function than the slices (home partition independent of
        // the slice the counters see): classes mix near and far, and the note says what that means.
        let home_far = |o: u64| (o >> 12) % 2 == 1;
        let lap2 = |sm: u32, flip: bool| timing::TimedLap {
            sm,
            lines: lines.clone(),
            first_touch: lines.iter().map(|&o| if home_far(o) != flip { 455 } else { 282 }).collect(),
            warm: lines.iter().map(|_| 282).collect(),
            warm_cycles_per_hop: 275.0,
        };
        let rep2 = HammerReport { timing: vec![lap2(0, false), lap2(2, true)], ..report() };
        let mut out2 = ProbeOutput::default();
        analyze(&mut out2, "test", &lines, &batches, &counters, &rep2);
        timing_finding(&mut out2, &lines, &rep2);
        let note2 = out2.findings[keys::L2_SLICES_TIMING_CHECK].note.clone().unwrap();
        assert!(note2.contains("not the lines' home slices") && !note2.contains("; 0 of "), "{note2}");
        // The partition bit SM 0's labels give (far exactly on offset bit 12), as l2.slices.function
        // reads it from the finding.
        let bit = function_probe::timed_partition_bit(&out2.findings, SM).unwrap();
        assert_eq!((bit.mask, bit.far_when_parity_is, bit.held_out), (0x1000, Some(1), Some((24, 24))));
        assert!(bit.text().contains(&format!("parity(offset & {}) is 1", format_mask(0x1000))), "{}", bit.text());
        assert!(!out2.findings.contains_key(keys::L2_SLICES_FUNCTION), "l2.slices.function is its own probe");
        // No laps: no finding.
        let mut quiet = ProbeOutput::default();
        timing_finding(&mut quiet, &lines, &report());
        assert!(!quiet.findings.contains_key(keys::L2_SLICES_TIMING_CHECK));
    }

    #[test]
    fn scales_snap_to_powers_of_two_only_when_close() {
        assert_eq!(snap_scale(0.25004), 0.25);
        assert_eq!(snap_scale(0.2495), 0.25);
        assert_eq!(snap_scale(1.01), 1.0);
        assert_eq!(snap_scale(0.3), 0.3);
        assert!(snap_scale(f64::NAN).is_nan());
    }

    #[test]
    fn counters_round_trip_through_their_csv() {
        let c = vec![
            Counters::read_only(1.0, 2.0, 3.0, 4.0, 5.0),
            Counters {
                max: [1.0, 2.0, 3.0, 4.0],
                sum: [5.0, 6.0, 7.0, 8.0],
                read_avg: 0.5,
                fab_max: 9.0,
                fab_sum: 10.0,
            },
        ];
        let back = parse_counters_csv(&counters_csv(&c)).unwrap();
        assert_eq!(back[1], c[1]);
        assert!(back[0].max[1].is_nan() && back[0].max[0] == 1.0);
        assert!(parse_counters_csv("0,1,2").is_none());
    }

    /// The plan as the H200 ran it in results/h200/l2-slices-packed (MEMSCOPE_SLICES_DESIGN=both),
    /// folded into one number by the same fold the results README's script used on its plan.json.
    fn plan_fingerprint(kernels: &[Vec<(u64, u64, HammerOp)>]) -> u64 {
        let m: u128 = (1 << 61) - 1;
        let mut h: u128 = 0;
        for (k, kern) in kernels.iter().enumerate() {
            for (j, &(o, l, op)) in kern.iter().enumerate() {
                let term = o as u128 * 7 + l as u128 * 13 + op.code() as u128 * 17 + k as u128 * 19 + j as u128;
                h = (h * 1_000_003 + term) % m;
            }
        }
        h as u64
    }

    /// The packed design read by CUPTI in the child on the H200 (results/h200/l2-slices-cupti,
    /// run cupti1): two read maxes lay 17 sectors (0.27 units) above their multiple, which the
    /// symmetric quarter-unit window left unclear (116 of 128 lines); the upward window reads every
    /// experiment, and the 116 lines keep their partition.
    #[test]
    fn the_h200_cupti_run_replays_with_every_line_determined() {
        let counters = parse_counters_csv(include_str!("slices_h200_cupti_counters.csv")).unwrap();
        let lines = fit::sample_lines(LINES_FULL, SEED);
        let (batches, _) = experiments(Design::Packed, lines.len());
        assert_eq!(counters.len(), fit::kernel_count(&batches));
        let mut out = ProbeOutput::default();
        analyze(&mut out, "replay", &lines, &batches, &counters, &report());
        assert_eq!(out.findings["l2.slices.count"].value, json!(94));
        assert_eq!(out.findings["l2.slices.clear_fraction"].as_f64(), Some(1.0));
        assert_eq!(out.findings["l2.slices.page_slices_seen"].value, json!(42));
        let sc = scales(&counters, &batches);
        let dm = decoded_maxes(&counters, &batches, &sc);
        let a = fit::assign(lines.len(), &batches, &dm, UNIT, true);
        assert_eq!(a.conflicts, 0);
        // The quarter-unit window of the previous decode: 116 lines, the same partition.
        let strict: Vec<f64> = dm
            .iter()
            .map(|&m| {
                let u = m / UNIT as f64;
                if (u - u.round()).abs() <= 0.25 {
                    m
                } else {
                    f64::NAN
                }
            })
            .collect();
        let s = fit::assign(lines.len(), &batches, &strict, UNIT, true);
        assert_eq!(s.class.iter().flatten().count(), 116);
        assert_eq!(fit::partition_disagreements(&a.class, &s.class), (6670, 0));
    }

    /// Both designs in one child on one H200 page (results/h200/l2-slices-packed): the packed
    /// design, which is the plan that ran, finds every line, 44 slices, and the same partition as
    /// the one-experiment-per-kernel design (0 of 8128 pairs differ).
    #[test]
    fn the_h200_same_page_check_replays_to_identical_partitions() {
        let counters = parse_counters_csv(include_str!("slices_h200_both_counters.csv")).unwrap();
        let lines = fit::sample_lines(LINES_FULL, SEED);
        let (main, reference) = experiments(Design::Both, lines.len());
        let all: Vec<Batch> = reference.iter().chain(&main).cloned().collect();
        assert_eq!(plan_fingerprint(&plan_kernels(&lines, &all)), 1_373_034_860_699_276_899, "the plan that ran");
        assert_eq!(counters.len(), fit::kernel_count(&all));
        let mut out = ProbeOutput::default();
        analyze(&mut out, "replay", &lines, &main, &counters, &report());
        compare_with_reference(&mut out, &lines, &main, &reference, &counters);
        assert_eq!(out.findings["l2.slices.count"].value, json!(94));
        assert_eq!(out.findings["l2.slices.clear_fraction"].as_f64(), Some(1.0));
        assert_eq!(out.findings["l2.slices.page_slices_seen"].value, json!(44));
        let note = out.findings["l2.slices.page_partition"].note.clone().unwrap();
        assert!(
            note.contains("finds 44 slices among 128 determined lines; the two partitions disagree on 0 of 8128 pairs"),
            "{note}"
        );
        assert!(out.warnings.is_empty(), "{:?}", out.warnings);
        let sc = scales(&counters, &main);
        assert_eq!((sc[0], sc[2], sc[3]), (0.25, 1.0, 1.0), "sectors per access: reads, atomics, reductions");
        assert!(noise_warnings(&counters, &main).is_empty());
    }

    /// The committed H200 run (results/h200/l2-slices) replayed through the analysis:
    /// the counters of its 798 kernels, in plan order, from ncu 2025.3.1.
    #[test]
    fn the_h200_run_replays_to_its_findings() {
        let counters: Vec<Counters> = include_str!("slices_h200_counters.csv")
            .lines()
            .filter(|l| !l.starts_with('#'))
            .enumerate()
            .map(|(i, l)| {
                let f: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
                assert_eq!(f[0] as usize, i, "plan order");
                Counters::read_only(f[1], f[2], f[3], f[4], f[5])
            })
            .collect();
        let lines = fit::sample_lines(LINES_FULL, SEED);
        let (batches, _) = experiments(Design::Pairs, lines.len());
        assert_eq!(counters.len(), fit::kernel_count(&batches));
        assert!((scales(&counters, &batches)[0] - 0.25).abs() < 0.001, "one sector per 4 warp loads on the H200");
        let report = HammerReport {
            alloc_ptr: 0,
            alloc_2mib_aligned: true,
            page_base: 0,
            records: vec![],
            values: vec![],
            passes: 0,
            timing: vec![],
        };
        let mut out = ProbeOutput::default();
        analyze(&mut out, "replay", &lines, &batches, &counters, &report);
        assert_eq!(out.findings["l2.slices.count"].value, json!(94));
        assert_eq!(out.findings["l2.slices.clear_fraction"].as_f64(), Some(1.0));
        assert_eq!(out.findings["l2.slices.page_slices_seen"].value, json!(43));
        assert_eq!(out.findings["l2.slices.page_masks"].confidence, Confidence::Undetermined);
        assert_eq!(out.findings["l2.slices.far_fraction"].confidence, Confidence::Undetermined);
        let est = out.findings["l2.slices.page_slices_estimate"].as_f64().unwrap();
        assert!((40.0..=55.0).contains(&est), "{est}");
        assert!(noise_warnings(&counters, &batches).is_empty());
    }
}
