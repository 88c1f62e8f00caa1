//! The per-slice counters of `l2.slices`' hammer kernels (seed 000 appendix, "The L2 slice
//! function": the max over slices of a per-slice sector counter): the counters of one kernel as
//! Nsight Compute or CUPTI report them, matched to the plan's kernels, kept as CSV, and decoded
//! into each experiment's max in units of planned accesses.

use super::fit::Batch;
use super::hammer::{HammerOp, HammerReport};
use super::ncu;
use crate::gpu::{GpuError, GpuResult};

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
pub(crate) fn per_kernel(
    report: &HammerReport,
    kernels: &[ncu::KernelMetrics],
    planned: usize,
) -> GpuResult<Vec<Counters>> {
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
pub(crate) fn scales(counters: &[Counters], batches: &[Batch]) -> [f64; 4] {
    let v = per_access(counters, batches);
    std::array::from_fn(|op| if v[op].is_empty() { f64::NAN } else { snap_scale(memscope_core::stats::median(&v[op])) })
}

/// `x` as the nearest power of two when within 2 % of it, else `x`.
pub(crate) fn snap_scale(x: f64) -> f64 {
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
pub(crate) fn noise_warnings(counters: &[Counters], batches: &[Batch]) -> Vec<String> {
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
pub(crate) fn decoded_maxes(counters: &[Counters], batches: &[Batch], scale: &[f64; 4]) -> Vec<f64> {
    batches.iter().map(|b| counters[b.kernel].max[b.op] / scale[b.op]).collect()
}
