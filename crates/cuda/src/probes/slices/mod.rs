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

pub mod counters;
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
#[cfg(test)]
mod probe_tests;
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
use counters::{counters_csv, decoded_maxes, noise_warnings, per_kernel, scales, Counters};
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
