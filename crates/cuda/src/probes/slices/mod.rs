//! `l2.slices`: the number of L2 slices and which lines of a 2 MiB page share a slice, by seed 000's
//! max-counter method (appendix, "The L2 slice function"). Nsight Compute reports the per-slice
//! sector counter only as min/max/avg/sum over the slices, so the probe runs `ncu` on a child
//! `memscope hammer-lines` whose kernels hammer an anchor line and up to 11 others with binary load
//! weights from one pinned SM (fit.rs: every pair of sampled lines tested once), reads each
//! kernel's max, and fits the partition over address bits 7..20 with GF(2). Within a 2 MiB page the
//! low 21 bits are the same virtually and physically; the page frame (bits 21 and up) stays unknown.

pub mod fit;
#[cfg(test)]
mod fit_tests;
pub mod hammer;
pub mod ncu;

use super::{cuda_only, run_gpu};
use crate::gpu::{GpuError, GpuResult};
use crate::CudaTarget;
use fit::{Assignment, Batch, LinearFit};
use hammer::{HammerPlan, HammerReport};
use memscope_core::gf2::format_mask;
use memscope_core::keys;
use memscope_core::{Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

pub struct SlicesProbe;

/// Loads per weight unit (a multiple of 8 chains x 32 warps).
const UNIT: u64 = 256;
/// Warps of the hammering block.
const WARPS: u32 = 32;
/// The SM that issues every load (near and far slices are relative to it).
const SM: u32 = 0;
/// Sampled lines: full and --quick.
const LINES_FULL: usize = 128;
const LINES_QUICK: usize = 40;
const SEED: u64 = 0x5_11ce;

/// What stays unknown whatever the counters say.
pub const PHYSICAL_NOTE: &str = "within one 2 MiB page the low 21 address bits are the same virtually and \
     physically, so the partition of the page's lines is physical; the page frame (physical bits 21 and up, which \
     the slice hash also uses) is unknown without a page-table walker, so which slice a line of another page lands \
     on, and the slice function across pages, stay undetermined";

fn method(n: usize, kernels: usize) -> String {
    format!(
        "ncu {} (max over slices) on `memscope hammer-lines`: {kernels} kernels, each one anchor line and up to {} \
         others of {n} sampled lines of a 2 MiB-aligned page, binary load weights (unit {UNIT} loads), \
         ld.volatile.global from {WARPS} warps of one block pinned on SM {SM}; every pair tested once",
        ncu::TEX_READ,
        fit::GROUP
    )
}

/// The probe body on a CUDA target.
fn measure(t: &mut CudaTarget, quick: bool, keep: Option<std::path::PathBuf>) -> Result<ProbeOutput, ProbeError> {
    let started = Instant::now();
    let mut out = ProbeOutput::default();
    let n = if quick { LINES_QUICK } else { LINES_FULL };
    let lines = fit::sample_lines(n, SEED);
    let batches = fit::design(n, UNIT);
    let m = method(n, batches.len());
    let Some(ncu_path) = ncu::find_ncu() else {
        let why =
            "Nsight Compute (ncu) is not on PATH or in /usr/local/cuda/bin: the per-slice L2 counters cannot be read";
        undetermined_all(&mut out, &m, why);
        return Ok(out);
    };
    let Some(child) = memscope_core::helper::self_command() else {
        undetermined_all(&mut out, &m, memscope_core::helper::NO_SELF_COMMAND);
        return Ok(out);
    };
    let dir = std::env::temp_dir().join(format!("memscope-slices-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| ProbeError::Failed(format!("{}: {e}", dir.display())))?;
    let plan = HammerPlan {
        sm: Some(SM),
        warps: WARPS,
        kernels: batches
            .iter()
            .map(|b| b.members.iter().zip(&b.weights).map(|(&x, &w)| (lines[x], w)).collect())
            .collect(),
    };
    let plan_path = dir.join("plan.json");
    let plan_text = serde_json::to_string(&plan).map_err(|e| ProbeError::Failed(e.to_string()))?;
    std::fs::write(&plan_path, &plan_text).map_err(|e| ProbeError::Failed(format!("{}: {e}", plan_path.display())))?;
    let args = ncu::ncu_args(&child, &plan_path, t.gpu.ordinal);
    let run = ncu::run_ncu(&ncu_path, &args, Duration::from_secs(if quick { 120 } else { 300 }));
    let _ = std::fs::remove_dir_all(&dir);
    let run = match run {
        Ok(r) => r,
        Err(e) => {
            undetermined_all(&mut out, &m, &e.to_string());
            return Ok(out);
        }
    };
    if let Some(k) = keep {
        let _ = std::fs::create_dir_all(&k);
        let _ = std::fs::write(k.join("plan.json"), &plan_text);
        let _ = std::fs::write(k.join("ncu_stdout.txt"), &run.stdout);
        let _ = std::fs::write(k.join("ncu_stderr.txt"), &run.stderr);
        let _ = std::fs::write(k.join("ncu_command.txt"), &run.command);
    }
    let (report, kernels) = match (hammer::parse_report(&run.stdout), ncu::parse_csv(&run.stdout)) {
        (Some(r), Ok(k)) if run.ok => (r, k),
        _ => {
            undetermined_all(&mut out, &m, &ncu::failure_reason(&run));
            return Ok(out);
        }
    };
    let counters = match per_kernel(&report, &kernels, batches.len()) {
        Ok(c) => c,
        Err(e) => {
            undetermined_all(&mut out, &m, &e.to_string());
            return Ok(out);
        }
    };
    analyze(&mut out, &m, &lines, &batches, &counters, &report);
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

/// The counters of one plan kernel: tex max, tex sum, tex avg, fabric max, fabric sum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counters {
    pub tex_max: f64,
    pub tex_sum: f64,
    pub tex_avg: f64,
    pub fab_max: f64,
    pub fab_sum: f64,
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
        let g = |s: &str| km.values.get(s).copied().unwrap_or(f64::NAN);
        let (t, f) = (ncu::TEX_READ, ncu::FABRIC);
        out[rec.kernel] = Some(Counters {
            tex_max: g(&format!("{t}.max")),
            tex_sum: g(&format!("{t}.sum")),
            tex_avg: g(&format!("{t}.avg")),
            fab_max: g(&format!("{f}.max")),
            fab_sum: g(&format!("{f}.sum")),
        });
    }
    out.into_iter()
        .enumerate()
        .map(|(k, c)| c.ok_or_else(|| GpuError::invalid(format!("no counters for planned kernel {k}"))))
        .collect()
}

/// Sectors counted per planned load (TEX sum over planned loads), median over kernels: ~1 when every
/// load is one sector at L2.
fn scale(counters: &[Counters], batches: &[Batch]) -> f64 {
    let v: Vec<f64> = counters
        .iter()
        .zip(batches)
        .map(|(c, b)| c.tex_sum / b.weights.iter().sum::<u64>() as f64)
        .filter(|x| x.is_finite())
        .collect();
    if v.is_empty() {
        f64::NAN
    } else {
        memscope_core::stats::median(&v)
    }
}

/// A warning when the sectors counted per planned load differ between kernels (the decode divides
/// every kernel's max by one median scale).
fn noise_warnings(counters: &[Counters], batches: &[Batch]) -> Vec<String> {
    let v: Vec<f64> = counters
        .iter()
        .zip(batches)
        .map(|(c, b)| c.tex_sum / b.weights.iter().sum::<u64>() as f64)
        .filter(|x| x.is_finite())
        .collect();
    let (lo, hi) = v.iter().fold((f64::INFINITY, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
    if v.is_empty() || hi > 1.05 * lo {
        vec![format!("l2.slices: TEX read sectors per planned load vary between kernels ({lo:.3}..{hi:.3})")]
    } else {
        vec![]
    }
}

fn undetermined_all(out: &mut ProbeOutput, method: &str, why: &str) {
    for (k, unit) in
        [(keys::L2_SLICES_COUNT, "slices"), (keys::L2_SLICES_PAGE_PARTITION, ""), (keys::L2_SLICES_PAGE_MASKS, "")]
    {
        out.finding(k, Finding::undetermined(unit, method, why));
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
    let s = scale(counters, batches);
    let tex: Vec<f64> = counters.iter().map(|c| c.tex_max / s).collect();
    let fab: Vec<f64> = counters.iter().map(|c| c.fab_max / s).collect();
    // Slice count: sum / avg of the kernel with the largest sum (avg has two decimals).
    let big = counters.iter().max_by(|a, b| a.tex_sum.total_cmp(&b.tex_sum));
    match big.and_then(|c| fit::instances(c.tex_sum, c.tex_avg)) {
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
    out.finding(
        keys::L2_SLICES_CLEAR_FRACTION,
        Finding::number(clear, "ratio", m, Confidence::High).with_note(&format!(
            "{determined} of {n} sampled lines have a clear max in every kernel that tested them and consistent \
             answers; {} of {} kernels clear; {} contradicting pairs; {s:.3} sectors counted per load",
            a.clear_kernels, a.kernels, a.conflicts
        )),
    );
    let tex_fit = fit::fit_linear(&points(lines, &a));
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
    far_findings(out, lines, batches, &fab, counters);
}

/// Near/far for the pinned SM and the far lines' home slices, from the fabric counter.
fn far_findings(out: &mut ProbeOutput, lines: &[u64], batches: &[Batch], fab: &[f64], counters: &[Counters]) {
    let n = lines.len();
    let (labels, clear) = fit::far_labels(n, batches, fab, UNIT);
    let far = labels.iter().filter(|l| **l == Some(true)).count();
    let near = labels.iter().filter(|l| **l == Some(false)).count();
    let fab_total: f64 = counters.iter().map(|c| c.fab_sum).filter(|x| x.is_finite()).sum();
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
                     {clear} of {} kernels clear, {fab_total:.0} fabric sectors in all, against {:.0} TEX sectors): \
                     either every sampled line is in SM {SM}'s L2 partition, or far lines are served through a slice of \
                     that partition without fabric traffic per load; telling them apart needs the same run from an SM \
                     of the other partition, or timing. Near/far slices undetermined",
                    batches.len(),
                    counters.iter().map(|c| c.tex_sum).filter(|x| x.is_finite()).sum::<f64>()
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
             (near); {clear} of {} kernels clear",
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
    use super::*;
    use memscope_core::gf2;

    /// The whole analysis on counters made from a known linear slice function and a known far set.
    #[test]
    fn analyze_reports_count_partition_masks_and_far_lines() {
        let masks = [0x0012_3480u64, 0x0008_0d00, 0x001c_0080, 0x0001_8200, 0x0010_0300];
        let lines = fit::sample_lines(48, SEED);
        let batches = fit::design(lines.len(), UNIT);
        let far = |o: u64| gf2::parity(o & 0x0004_0080) == 1;
        let counters: Vec<Counters> = batches
            .iter()
            .map(|b| {
                let mut tex = std::collections::HashMap::new();
                let mut fab = std::collections::HashMap::new();
                for (&x, &w) in b.members.iter().zip(&b.weights) {
                    let s = gf2::apply(&masks, lines[x]);
                    *tex.entry(s).or_insert(3u64) += w;
                    if far(lines[x]) {
                        *fab.entry(s).or_insert(0u64) += w;
                    }
                }
                let sum: u64 = tex.values().sum();
                Counters {
                    tex_max: *tex.values().max().unwrap() as f64,
                    tex_sum: sum as f64,
                    tex_avg: ((sum as f64 / 96.0) * 100.0).round() / 100.0,
                    fab_max: fab.values().copied().max().unwrap_or(0) as f64,
                    fab_sum: fab.values().sum::<u64>() as f64,
                }
            })
            .collect();
        let report = HammerReport { alloc_ptr: 1 << 21, alloc_2mib_aligned: true, page_base: 1 << 21, records: vec![] };
        let mut out = ProbeOutput::default();
        analyze(&mut out, "test", &lines, &batches, &counters, &report);
        assert_eq!(out.findings["l2.slices.count"].value, json!(96));
        assert_eq!(out.findings["l2.slices.clear_fraction"].as_f64(), Some(1.0));
        let got: Vec<u64> = out.findings["l2.slices.page_masks"]
            .value
            .as_array()
            .unwrap()
            .iter()
            .map(|v| gf2::parse_mask(v.as_str().unwrap()).unwrap())
            .collect();
        assert!(gf2::same_row_space(&got, &masks));
        let truth_far = lines.iter().filter(|&&o| far(o)).count() as f64 / lines.len() as f64;
        assert_eq!(out.findings["l2.slices.far_fraction"].as_f64(), Some(truth_far));
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
                Counters { tex_max: f[1], tex_sum: f[2], tex_avg: f[3], fab_max: f[4], fab_sum: f[5] }
            })
            .collect();
        let lines = fit::sample_lines(LINES_FULL, SEED);
        let batches = fit::design(lines.len(), UNIT);
        assert_eq!(counters.len(), batches.len());
        assert!((scale(&counters, &batches) - 0.25).abs() < 0.001, "one sector per 4 warp loads on the H200");
        let report = HammerReport { alloc_ptr: 0, alloc_2mib_aligned: true, page_base: 0, records: vec![] };
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
