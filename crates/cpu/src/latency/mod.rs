//! `cpu.latency`: latency versus footprint of a random single-cycle pointer chase over the host's
//! cache lines (seed 000 appendix, "the latency chase", on the CPU), segmented into levels by the
//! knee detector of `memscope_core::knee`: L1d, L2, L3 hit latency and capacity, DRAM latency.
//!
//! Plan (crate::latency_sweep, crate::sweep): footprints from 4 KiB, two per octave, up to 1.5 octaves into DRAM (or to
//! twice the OS-reported last-level cache: at least 64 MiB, at most 1 GiB), then refined to
//! eight per octave where the curve changes; one buffer of the largest footprint (2 MiB pages
//! where the kernel gives them, so TLB misses do not raise the far plateaus); each footprint
//! chases its lines in a fresh random order (a random cycle defeats the prefetchers), on sixteen
//! placements (random draws of the buffer's 4 KiB pages; with `--quick` eight outside the L2's
//! band, 256 KiB..4 MiB). Measure: warm-up laps, then `repeats`
//! timed runs per placement, in `passes` passes over all footprints. Analyze: per footprint the
//! median over placements of each one's fastest repeat, plateaus with at least three points
//! differing by 1.4x; capacities compared with what the OS reports (crate::oscheck).

use crate::latency_sweep::{plan, MAX_BRACKET_RATIO, MIN_POINTS, MIN_STEP_RATIO};
use crate::sysinfo;
use memscope_core::keys;
use memscope_core::knee::{detect_plateaus_with, KneeConfig, Plateau};
use memscope_core::stats::Sample;
use memscope_core::{
    Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, Series, TargetInfo,
};

/// The CPU latency-versus-footprint probe.
pub struct CpuLatency;

impl Probe for CpuLatency {
    fn key(&self) -> &'static str {
        "cpu.latency"
    }
    fn description(&self) -> &'static str {
        "CPU latency vs footprint (random pointer chase, adaptive footprints from 4 KiB into DRAM): L1d/L2/L3 latency and capacity beside the OS-reported sizes, DRAM latency"
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        Applicability::only_if(target.capabilities.host_cores, "CPU-only probe")
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let p = plan(ctx.quick, sysinfo::os_llc_bytes(), sysinfo::os_line_bytes());
        let (x, curve, samples, pages, note) = crate::latency_sweep::measure(ctx, &p)?;
        let x: Vec<f64> = x.iter().map(|&f| f as f64).collect();
        let method = format!(
            "random single-cycle pointer chase over {} B lines, adaptive footprints (2 per octave, 8 per octave where latency changes by over {:.0} %, up to 1.5 octaves into DRAM), each on {} placements over {}..{} B and {} elsewhere (random draws of the buffer's 4 KiB pages, the same for every footprint), {note} x {} repeats of up to {} hops per placement, curve = median over the placements of each one's fastest repeat, levels read from its lower envelope (smallest at this or any larger footprint); {pages}",
            p.line_bytes,
            (crate::sweep::REFINE_RATIO - 1.0) * 100.0,
            p.placements,
            crate::latency_sweep::L2_BAND_BYTES[0],
            crate::latency_sweep::L2_BAND_BYTES[1],
            p.other_placements,
            p.repeats,
            p.hops
        );
        // Cycles at the clock measured right after the sweep (the target's details record it).
        let before_hz = ctx.target.info().clock_hz;
        let hz = match ctx.target_as::<crate::CpuTarget>() {
            Some(t) => t.remeasure_clock(),
            None => before_hz,
        };
        let method = match (before_hz, hz) {
            (Some(b), Some(a)) => format!(
                "{method}; cycles at {:.3} GHz measured right after the sweep ({:.3} GHz when the target opened)",
                a / 1e9,
                b / 1e9
            ),
            _ => method,
        };
        let (os_caches, cpuid) = (sysinfo::os_caches(), crate::cpuid::read());
        let os_l1d_bytes = crate::oscheck::reported(1, &os_caches, &cpuid).map(|(c, _)| c.size_bytes as f64);
        let mut out = analyze(&x, &curve, &samples, hz, os_l1d_bytes, &method);
        crate::oscheck::annotate(&mut out, &os_caches, &cpuid, &crate::oscheck::host_now());
        let huge_ok = pages.contains("hugetlbfs") || (pages.starts_with("THP: ") && !pages.starts_with("THP: 0 of"));
        if !huge_ok {
            out.warnings
                .push(format!("huge pages not obtained ({pages}): TLB misses may raise the L3 and DRAM plateaus"));
        }
        Ok(out)
    }
}

/// Hit latency of a level: the lower quartile of the curve over the plateau's footprints. On a
/// flat plateau it equals the median; on a sloped one (TLB reach ending inside the level, other
/// processes' traffic at large footprints) the upper end moves with the plateau's extent, which
/// shifted the median by 7% between two dev-machine runs against 2% for the lower quartile.
fn level_latency(
    key: &str,
    pl: &Plateau,
    curve: &[f64],
    samples: &[Vec<f64>],
    clock_hz: Option<f64>,
    method: &str,
) -> Finding {
    let pooled: Vec<f64> = samples[pl.points.clone()].iter().flatten().copied().collect();
    let (s, c) = match (Sample::new(&pooled), Sample::new(&curve[pl.points.clone()])) {
        (Ok(s), Ok(c)) => (s, c),
        (Err(e), _) | (_, Err(e)) => return Finding::undetermined("ns", method, &format!("{key}: {e}")),
    };
    let value = c.percentile(25.0);
    let rel = s.mad() / s.median();
    let conf = if pl.points.len() >= 4 && rel < 0.05 { Confidence::High } else { Confidence::Medium };
    let mut f = Finding::number(
        value,
        "ns",
        &format!(
            "{method}; lower quartile over the {} footprints {}..{} B on the plateau (median {:.4} ns; spread: all their repeats)",
            pl.points.len(),
            pl.x_first,
            pl.x_last,
            c.median()
        ),
        conf,
    )
    .with_spread(s.spread());
    if let Some(hz) = clock_hz {
        f = f.with_cycles(value * hz / 1e9);
    }
    f
}

/// The footprint where half of a chase's hops miss this level: where the curve `y` first crosses
/// the arithmetic mean of the level's latency and the next level's `hi` (log-footprint
/// interpolation between the two points around the crossing). With randomly placed 4 KiB pages
/// (a VM on a host with small pages) a W-way physically indexed cache of capacity C chased over a
/// footprint F misses on a fraction P(Poisson(W F / C) >= W) of the hops, which is one half at
/// F = C (1 - 1/(3W)) whatever the miss penalty; the crossing of the geometric mean lies where
/// that fraction is (sqrt(lo hi) - lo) / (hi - lo), so it moves with the next level's latency
/// (at a 100x penalty, at 0.7 C) and with the load on the machine. `None` for a sharp step (the
/// first point past the level is already over the mean) or no clear next level.
pub fn half_miss_point(pl: &Plateau, hi: f64, x: &[f64], y: &[f64]) -> Option<f64> {
    let lo = pl.latency;
    if hi.is_nan() || hi <= lo * MIN_STEP_RATIO {
        return None;
    }
    let target = 0.5 * (lo + hi);
    let j = (pl.points.end.max(1)..x.len().min(y.len())).find(|&j| y[j] >= target)?;
    if j == pl.points.end {
        // A sharp step: the first point past the level is already half-way; the knee says more.
        return None;
    }
    let (y0, y1) = (y[j - 1].min(target), y[j]);
    let t = if y1 > y0 { (target - y0) / (y1 - y0) } else { 1.0 };
    let (a, b) = (x[j - 1].ln(), x[j].ln());
    Some((a + t * (b - a)).exp())
}

/// Where the next level begins: the median of its first [`NEXT_LEVEL_POINTS`] footprints on the
/// lower envelope `y`; what the L1d's misses meet (its step is sharp). A next level's plateau
/// often slopes upward (page walks, the far part of a sliced L3, a VM's share of the L3 running
/// out) and ends wherever the sweep and the host's load let it, so its whole-plateau latency
/// moves from run to run.
pub fn next_level_start(next: &Plateau, y: &[f64]) -> f64 {
    let end = (next.points.start + NEXT_LEVEL_POINTS).min(next.points.end).min(y.len());
    if next.points.start >= end {
        return next.latency;
    }
    memscope_core::stats::median(&y[next.points.start..end])
}

/// Footprints at the start of the next level that give its latency for [`next_level_start`].
pub const NEXT_LEVEL_POINTS: usize = 3;

/// Capacity of L2 or L3: the miss point ([`miss_point`], where [`MISS_FRACTION`] of the hops
/// miss) from the level's own latency (the lower quartile of its footprints) to the latency at
/// twice that point (at most at `limit`), never below the knee; the knee-or-midpoint rule of [`level_capacity`] for a sharp
/// step or when there is no next level (`limit` None).
fn cache_capacity(pl: &Plateau, limit: Option<f64>, x: &[f64], y: &[f64], spread: &[f64], method: &str) -> Finding {
    let lo = lower_quartile(&y[pl.points.clone()]);
    let found = limit.and_then(|l| miss_point(lo, pl.points.end, l, x, y));
    let (Some(knee), Some((half, hi))) = (pl.capacity, found) else {
        return level_capacity(pl, x, method);
    };
    let value = half.max(knee);
    if let Some((f, rel)) = crossing_spread(value, x, spread) {
        if rel > MAX_CROSSING_SPREAD {
            return Finding::undetermined(
                "bytes",
                method,
                &format!(
                    "the placements disagree where the capacity is read: their spread (MAD) is {:.0} % of the latency at {f:.0} B, over the {:.0} % that the placements' page colours give; placements that stayed slow through every pass (another thread sharing the core's cache) move the crossing ({value:.0} B here) from run to run",
                    rel * 100.0,
                    MAX_CROSSING_SPREAD * 100.0
                ),
            );
        }
    }
    Finding::integer(
        value.round() as u64,
        "bytes",
        &format!(
            "{method}; miss point: footprint where latency has gone {:.0} % of the way from this level's {lo:.2} ns to the {hi:.2} ns at twice that footprint (where nearly every hop misses; log-footprint interpolation); with randomly placed pages {:.0} % of the hops miss there, at 0.92-0.95 of the capacity of an 8- to 16-way cache", MISS_FRACTION * 100.0, MISS_FRACTION * 100.0
        ),
        if pl.points.len() >= 4 { Confidence::High } else { Confidence::Medium },
    )
    .with_note(&format!(
        "latency starts rising after {} B (knee {knee:.0} B); {:.0} % of the hops miss at {half:.0} B; the crossing of the two levels' geometric mean (moves with the next level's latency) at {:.0} B",
        pl.x_last,
        MISS_FRACTION * 100.0,
        pl.midpoint.unwrap_or(f64::NAN)
    ))
}

/// The most the placements of a footprint next to a capacity's crossing may spread (MAD over
/// their values, relative to the footprint's value; `spread`) before the capacity is
/// undetermined. The placements are the same draws of pages in every run, so the spread their
/// page colours give repeats from run to run: 1-8 % beside the crossing on the AMD dev VM (40
/// runs) and 3-13 % on the H200 machine's Xeon host (in runs that agree within 8 %); the host's
/// runs that read the L2 7-13 % low had 18-44 % there (placements slowed in every pass, the run's
/// L1d often rising early too).
pub const MAX_CROSSING_SPREAD: f64 = 0.15;

/// The larger relative spread of the two measured footprints around `value` (`spread[i]`, already
/// relative), with its footprint; `None` when `value` lies outside the measured footprints.
fn crossing_spread(value: f64, x: &[f64], spread: &[f64]) -> Option<(f64, f64)> {
    let j = x.iter().rposition(|&f| f <= value)?;
    [j, j + 1]
        .into_iter()
        .filter(|&i| i < x.len().min(spread.len()) && spread[i].is_finite())
        .map(|i| (x[i], spread[i]))
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The lower quartile of `v` (NaN when empty).
fn lower_quartile(v: &[f64]) -> f64 {
    Sample::new(v).map(|s| s.percentile(25.0)).unwrap_or(f64::NAN)
}

/// The fraction of a chase's hops that miss a level at the footprint [`miss_point`] reads as
/// its capacity. With randomly placed pages a W-way cache of capacity C misses on
/// P(Poisson(W F / C) >= W) of the hops at footprint F: 45 % at F = 0.92 C (W = 8) to 0.95 C
/// (W = 16), one half at 0.96-0.98 C. Below one half because the latency at twice the footprint,
/// the end of the scale, is the least certain reading: on a VM whose L3 other guests share, a
/// neighbour's L3 traffic adds L3 misses there in some runs (seen on the AMD dev VM: 14.2 ns
/// against 12.8-13.5 ns in nine other runs, the L3 running out from 3 MiB), and the crossing
/// moves by the fraction times that error (half-way read 1.08 MiB in that run, 0.97-1.01 MiB in
/// the others; crate::repeat_curve_tests).
pub const MISS_FRACTION: f64 = 0.45;

/// The miss point of a level whose hit latency is `lo` and whose first footprint past it is
/// `x[start]`: the footprint `h` where the lower envelope `y` crosses `lo` plus [`MISS_FRACTION`]
/// of the way to the latency at `2 h` (at most at `limit`: for the L2 the last footprint before
/// DRAM, where a VM's share of the L3 is under twice the L2), found by fixed-point
/// iteration from `x[start]`; with the latency at `2 h`. With randomly placed pages a W-way cache
/// at twice its capacity has nearly every set over-full (all but 1 % of them at W = 8,
/// P(Poisson(2W) < W)), so every hop there misses, while the next level still holds the
/// footprint: its latency is what the misses at the capacity meet. The iteration starts where
/// latency has risen by the levels' ratio (1.4x) and climbs. Read from the curve alone, the
/// point does not depend on where the knee detector begins or ends the next level (it begins a
/// plateau anywhere in the last part of a gradual transition, and a sloped next level, page walks
/// or the far part of a sliced L3, moves its typical latency with its extent). `None` for a sharp
/// step (the first footprint past the level already over the target) or no step.
pub fn miss_point(lo: f64, start: usize, limit: f64, x: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    let n = x.len().min(y.len());
    if start == 0 || start >= n || !lo.is_finite() {
        return None;
    }
    let cross = |target: f64| -> Option<f64> {
        let j = (start..n).find(|&j| y[j] >= target)?;
        if j == start {
            return None;
        }
        let (y0, y1) = (y[j - 1].min(target), y[j]);
        let t = if y1 > y0 { (target - y0) / (y1 - y0) } else { 1.0 };
        Some((x[j - 1].ln() + t * (x[j].ln() - x[j - 1].ln())).exp())
    };
    // From where latency has left the level by the levels' ratio: the iteration then climbs to
    // the miss point (the crossing grows with the latency at twice the footprint).
    let mut h = cross(lo * MIN_STEP_RATIO).unwrap_or(x[start]);
    let mut hi = f64::NAN;
    for _ in 0..100 {
        hi = envelope_at(x, y, (2.0 * h).min(limit))?;
        let next = cross(lo + MISS_FRACTION * (hi - lo))?;
        let done = (next / h - 1.0).abs() < 1e-4;
        h = next;
        if done {
            break;
        }
    }
    (hi > lo * MIN_STEP_RATIO).then_some((h, hi))
}

/// The curve `y` at footprint `f` (log-footprint interpolation between the points around it).
fn envelope_at(x: &[f64], y: &[f64], f: f64) -> Option<f64> {
    let n = x.len().min(y.len());
    let j = (0..n).find(|&j| x[j] >= f)?;
    if j == 0 || x[j] == f {
        return Some(y[j]);
    }
    let t = (f.ln() - x[j - 1].ln()) / (x[j].ln() - x[j - 1].ln());
    Some(y[j - 1] + t * (y[j] - y[j - 1]))
}

/// Capacity of a level. A sharp step (the first footprint past the plateau is already more than
/// half-way, in log latency, to the next level): the knee (`Plateau::capacity`). A gradual
/// transition: the transition midpoint (`Plateau::midpoint`), because on hosts whose physical
/// pages are 4 KiB and randomly placed (VMs; this project's dev machine) set conflicts in the
/// physically indexed L2/L3 start at about half the capacity, while the point where half the
/// transition is done stays near the capacity.
fn level_capacity(pl: &Plateau, x: &[f64], method: &str) -> Finding {
    match (pl.midpoint, pl.capacity) {
        (Some(mid), Some(knee)) => {
            let next = x.get(pl.points.end).copied().unwrap_or(knee);
            let sharp = mid <= next * 1.0001;
            if sharp && next > pl.x_last * MAX_BRACKET_RATIO {
                return Finding::undetermined(
                    "bytes",
                    method,
                    &format!(
                        "a sharp step between {:.0} B (last footprint on the level) and {next:.0} B (first past it): the capacity can lie anywhere in that bracket, {:.0} % wide, more than the {:.0} % it must repeat to; the sweep's refinement did not reach this step (a disturbed pass or the time budget)",
                        pl.x_last,
                        (next / pl.x_last - 1.0) * 100.0,
                        (MAX_BRACKET_RATIO - 1.0) * 100.0
                    ),
                );
            }
            Finding::integer(
                if sharp { knee.round() as u64 } else { mid.round() as u64 },
                "bytes",
                &format!(
                    "{method}; {}",
                    if sharp {
                        "sharp step: knee (last footprint on the plateau, moved toward the next by its hit fraction)"
                    } else {
                        "gradual transition: footprint where latency crosses the geometric mean of this level and the next (log-log interpolation)"
                    }
                ),
                if sharp && pl.points.len() >= 4 { Confidence::High } else { Confidence::Medium },
            )
            .with_note(&format!(
                "latency starts rising after {} B (knee {:.0} B); half-way to the next level at {:.0} B{}",
                pl.x_last,
                knee,
                mid,
                if sharp { "" } else { " (gradual transition: conflict misses or shared use start before the capacity)" }
            ))
        }
        _ => Finding::undetermined("bytes", method, "the curve ends on this level"),
    }
}

/// Capacity of the L1d. Its set index lies inside the page (a virtually indexed, physically
/// tagged L1: capacity at most ways x page), so no page placement spreads its step; but the share
/// of hops that miss just below and just past the capacity moves from run to run (a pseudo-LRU
/// keeping some lines past it: a third to four fifths at 50496 B on the 48 KiB Xeon dev VM; the
/// chase's own stack and code taking a few ways just below it: 44 % of the way to the L2 at
/// 29 KiB of a 32 KiB AMD L1d in one run). So the value is read on the grid, never interpolated
/// from that share: the last footprint where fewer than half the hops miss (latency under the
/// mean of the L1d's and the next level's), one grid step at most from the capacity wherever
/// the pseudo-LRU puts the share. Undetermined when the bracket around the first footprint past
/// the level is wider than `MAX_BRACKET_RATIO`, or when misses start (latency a tenth above the
/// level) below [`L1D_SHELF`] of that value, or of the OS's figure `os_l1d_bytes` where that is
/// larger: a gradual rise, from another thread sharing the L1 during the run (a busy sibling
/// hyperthread; the Xeon dev VM's loaded runs rose from 32-36 KiB and crossed half-way at
/// 42-44 KiB), which moves with the load. The OS's figure counts because such a thread moves the
/// whole step early, the value with it: one quick run on the H200 host stepped a grid step early
/// (45.2 KiB against 49.3 KiB in the others, OS 48 KiB) with misses from 42432 B, above 7/8 of
/// its own value but under 7/8 of the OS's figure, and read its L2 8 % under the others. No next
/// level: `level_capacity`. The flag: whether it found such a gradual rise (the core's caches
/// were shared during the run).
fn l1d_capacity(
    pl: &Plateau,
    hi: Option<f64>,
    x: &[f64],
    y: &[f64],
    os_l1d_bytes: Option<f64>,
    method: &str,
) -> (Finding, bool) {
    let (Some(knee), Some(hi)) = (pl.capacity, hi) else { return (level_capacity(pl, x, method), false) };
    if hi <= pl.latency * MIN_STEP_RATIO {
        return (level_capacity(pl, x, method), false);
    }
    let next = x.get(pl.points.end).copied().unwrap_or(knee);
    let target = 0.5 * (pl.latency + hi);
    let sharp = y.get(pl.points.end).is_some_and(|&v| v >= target);
    let half = if sharp { Some(next) } else { half_miss_point(pl, hi, x, y) };
    let undetermined = |why: String| Finding::undetermined("bytes", method, &why);
    if let Some((a, b)) = l1d_wide_bracket(pl, target, x, y) {
        let why = format!(
            "a step between {a:.0} B (last footprint known to be on the level or under half-way) and {b:.0} B (next past it): the capacity can lie anywhere in that bracket, {:.0} % wide, more than the {:.0} % it must repeat to; the sweep's refinement did not reach this step (a disturbed pass or the time budget)",
            (b / a - 1.0) * 100.0,
            (MAX_BRACKET_RATIO - 1.0) * 100.0
        );
        return (undetermined(why), false);
    }
    // The last footprint where fewer than half the hops miss: the one before the first footprint
    // past the level's start whose latency reaches the mean.
    let under_half = (pl.points.start..x.len().min(y.len()))
        .find(|&j| y[j] >= target)
        .and_then(|j| j.checked_sub(1))
        .map(|j| x[j].max(knee));
    // Where misses start: the first footprint whose latency is a tenth above the level's (more
    // than an L1 hit moves between runs, 1-3 %).
    let onset = (pl.points.start..x.len().min(y.len())).find(|&j| y[j] > pl.latency * 1.1).map_or(next, |j| x[j]);
    // The shelf is measured from the larger of the value and the OS's figure: another thread's
    // share moves the whole step early, the value with it, so the value alone is no yardstick
    // for where the last way fills.
    let shelf_of = |v: f64| v.max(os_l1d_bytes.unwrap_or(0.0)) * L1D_SHELF;
    match (half, under_half) {
        (Some(h), Some(v)) if onset >= shelf_of(v) => (Finding::integer(
            v.round() as u64,
            "bytes",
            &format!("{method}; L1d: last footprint where fewer than half the hops miss (latency under the mean of this level's {:.2} ns and the next's {hi:.2} ns; its index lies inside the page, so the step is sharp, and the value is read on the grid)", pl.latency),
            if pl.points.len() >= 4 { Confidence::High } else { Confidence::Medium },
        )
        .with_note(&format!(
            "latency leaves the level after {:.0} B (knee {knee:.0} B); half the hops miss at {h:.0} B (interpolated)",
            pl.x_last
        )), false),
        (Some(h), v) => (undetermined(format!(
            "a gradual rise: latency is a tenth above the level from {onset:.0} B, under {:.0} % of {}, and half miss at {h:.0} B; misses that start before the sets' last way fills are another thread sharing the L1 during the run (a busy sibling hyperthread), and where they start moves with the load",
            L1D_SHELF * 100.0,
            match (os_l1d_bytes, v) {
                (Some(os), Some(v)) if os > v => format!(
                    "the OS's figure ({os:.0} B; the last footprint where fewer than half the hops miss, {v:.0} B, lies under it)"
                ),
                (Some(os), None) => format!("the OS's figure ({os:.0} B; no footprint under half-way)"),
                (_, v) => format!(
                    "the last footprint where fewer than half the hops miss ({})",
                    v.map_or("none".to_string(), |v| format!("{v:.0} B"))
                ),
            }
        )), true),
        (None, _) => (level_capacity(pl, x, method), false),
    }
}

/// The bracket of an L1d step wider than `MAX_BRACKET_RATIO`, if any: the one the value is read
/// in, between the last footprint under the half-way latency `target` and the first at or over
/// it; and, where that last footprint under half-way has itself left the level (latency more
/// than the sweep's refinement ratio, crate::sweep::REFINE_RATIO, above it: a share of its hops
/// miss), the bracket below it too, so that where the rise began is known to a grid step. A
/// footprint less than that ratio above the level counts as on it: the sweep never splits such an
/// interval, and its few misses (the sets' last way filling with the chase's own stack and code:
/// 4-8 % above the level at 46336 B, 94 % of the 48 KiB 12-way L1d of the H200 host) leave the
/// capacity near it. The knee detector can end the plateau before such a footprint; the bracket
/// from the plateau's last footprint (32768 B there) then says nothing of where the step is.
fn l1d_wide_bracket(pl: &Plateau, target: f64, x: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    let n = x.len().min(y.len());
    let c = (pl.points.start..n).find(|&j| y[j] >= target)?;
    let wide = |k: usize| (k >= 1 && x[k] > x[k - 1] * MAX_BRACKET_RATIO).then(|| (x[k - 1], x[k]));
    if c == 0 {
        return None;
    }
    wide(c).or_else(|| if y[c - 1] > pl.latency * crate::sweep::REFINE_RATIO { wide(c - 1) } else { None })
}

/// Where misses may start in a sharp L1d step, as a share of the last footprint where fewer than
/// half the hops miss: where the sets' last way fills ((W-1)/W of the capacity; a few lines of
/// the chase's own stack and code then evict some of its lines: 10-30 % of the way to the L2 at
/// 29-32 KiB of the 32 KiB 8-way L1d of the AMD dev VM), 7/8 at W = 8, the fewest ways of current
/// L1ds. A busy sibling's share of the L1 starts them at two thirds of the capacity (the Xeon dev
/// VM's loaded runs: misses from 30016 and 32768 B, half of them at 42-45 KiB of 48 KiB).
pub const L1D_SHELF: f64 = 7.0 / 8.0;

/// Why the L2's capacity is undetermined in a run whose L1d rose gradually (`l1d_capacity`):
/// another thread shared the core during the run, and the L2, private to the core on every
/// current CPU, is shared with it as well, so the L2's step comes early by whatever share that
/// thread took. On the H200 host one full run of five rose in the L1d from 35648 B (a tenth above
/// the level; 48 KiB L1d) and in the L2 from 1.09 MiB, reading 1.55 MiB
/// against 1.95-2.01 MiB in the other four.
pub const L2_CORE_SHARED: &str = "the L1d rose gradually in this run (another thread shared the core's L1d; see its capacity's note), and the L2 is private to the same core, so that thread took a share of it too: its step comes early by that share, which moves with the load";

/// The curve the levels are read from: at each footprint the smallest latency measured there or
/// at any larger footprint. A random cyclic chase over more lines never hits more often, so the
/// true latency does not fall with the footprint, and every later point bounds it from above;
/// other processes only add latency, so a point that a neighbour's burst raised in every repeat
/// (seen as 3-5x spikes inside the L2 range on the shared dev VM) is replaced by the bound its
/// larger neighbours give, and cannot move a knee from run to run.
pub fn lower_envelope(curve: &[f64]) -> Vec<f64> {
    let mut out = curve.to_vec();
    let mut least = f64::INFINITY;
    for v in out.iter_mut().rev() {
        if v.is_finite() {
            least = least.min(*v);
            *v = least;
        }
    }
    out
}

/// Pure analysis: footprints `x` (bytes, ascending), `curve[i]` the latency the knee detector
/// sees at `x[i]` (crate::latency_sweep::footprint_value), `samples[i]` the ns per hop behind it
/// (each placement's fastest repeat; a curve from elsewhere may give plain repeats). Level
/// assignment: the plateaus before a last one the curve ends on are caches; the first is L1d, the
/// second L2, the longest later one L3; DRAM is the plateau right after L3 (the last plateau when
/// there is no L3). Extra levels are reported as a warning. A
/// capacity that two halves of each footprint's placements (dealt alternately) do not reproduce
/// within 10 % is undetermined (crate::repeat_check).
pub fn analyze(
    x: &[f64],
    curve: &[f64],
    samples: &[Vec<f64>],
    clock_hz: Option<f64>,
    os_l1d_bytes: Option<f64>,
    method: &str,
) -> ProbeOutput {
    use crate::repeat_check;
    let mut out = analyze_curve(x, curve, samples, clock_hz, os_l1d_bytes, method);
    if repeat_check::splittable(samples) {
        let (a, b) = repeat_check::halves(samples);
        let earlier = analyze_curve(x, &repeat_check::values(&a), &a, clock_hz, os_l1d_bytes, method);
        let later = analyze_curve(x, &repeat_check::values(&b), &b, clock_hz, os_l1d_bytes, method);
        repeat_check::apply(&mut out, &earlier, &later);
    }
    out
}

/// [`analyze`] without the repeatability check.
fn analyze_curve(
    x: &[f64],
    curve: &[f64],
    samples: &[Vec<f64>],
    clock_hz: Option<f64>,
    os_l1d_bytes: Option<f64>,
    method: &str,
) -> ProbeOutput {
    let mut out = ProbeOutput::default();
    let y = lower_envelope(curve);
    let mad: Vec<f64> = samples.iter().map(|s| Sample::new(s).map(|s| s.mad()).unwrap_or(f64::NAN)).collect();
    // Each footprint's spread over its placements relative to its value (crossing_spread).
    let rel_mad: Vec<f64> = mad.iter().zip(curve).map(|(m, c)| m / c).collect();
    let levels = detect_plateaus_with(x, &y, &KneeConfig { min_step_ratio: MIN_STEP_RATIO, min_points: MIN_POINTS });
    let marks: Vec<f64> = levels.iter().filter_map(|p| p.midpoint).collect();
    out.series(
        "cpu.latency",
        Series {
            description:
                "CPU pointer-chase latency versus footprint (median over the placements of each one's fastest repeat; y_spread = MAD over the placements; the levels' marks come from its lower envelope)"
                    .into(),
            x_name: "footprint".into(),
            x_unit: "bytes".into(),
            y_name: "latency".into(),
            y_unit: "ns".into(),
            x: x.to_vec(),
            y: curve.to_vec(),
            y_spread: Some(mad),
            marks,
        },
    );
    let ends_on_last = levels.last().is_some_and(|l| l.capacity.is_none());
    // Cache levels: every plateau but a last one the curve ends on (DRAM).
    let caches: &[Plateau] = if levels.len() >= 2 && ends_on_last { &levels[..levels.len() - 1] } else { &levels };
    let l1 = caches.first();
    let l2 = caches.get(1);
    // L3: the widest of the later cache plateaus in octaves (an L3 spans octaves; a TLB-reach
    // step or a page-walk step on a loaded VM spans a fraction of one; and not in points: the
    // sweep refines a gradual L2-to-L3 transition to eight points per octave, and on the AMD dev
    // VM the knee detector once made a level of one such octave that outnumbered the L3's points).
    // DRAM: the plateau right after L3 (later ones are DRAM plus page walks), or the last plateau
    // when there is no L3.
    let octaves = |p: &Plateau| (p.x_last / p.x_first).log2();
    let l3_index = (2..caches.len()).rev().max_by(|&a, &b| octaves(&caches[a]).total_cmp(&octaves(&caches[b])));
    let l3 = l3_index.map(|k| &caches[k]);
    let dram = if levels.len() >= 2 && ends_on_last {
        match l3_index {
            Some(k) => levels.get(k + 1),
            None => levels.last(),
        }
    } else {
        None
    };
    let named = l1.is_some() as usize + l2.is_some() as usize + l3.is_some() as usize + dram.is_some() as usize;
    if levels.len() > named {
        let all: Vec<String> = levels.iter().map(|p| format!("{:.1} ns from {:.0} B", p.latency, p.x_first)).collect();
        out.warnings.push(format!(
            "{} levels found ({}); L1d, L2 are the first two, L3 the longest later cache level, DRAM the level after it",
            levels.len(),
            all.join(", ")
        ));
    }
    let why = |what: &str| match levels.len() {
        0 => "no plateau found in the latency curve".to_string(),
        n => format!("{n} level(s) found; no {what} level between them"),
    };
    // Levels between L2 and L3 less than 2x slower than L2 are the L2's own far end (TLB reach,
    // 4 KiB host pages colouring the physically indexed L2): the L2's capacity is where the last
    // of them ends. A densely refined slow creep forms such a level on the Xeon dev VM.
    let l2_end = match (l2, l3_index) {
        (Some(l2p), Some(k)) if k > 2 && caches[2..k].iter().all(|c| c.latency < 2.0 * l2p.latency) => {
            Some(&caches[k - 1])
        }
        _ => None,
    };
    // Whether the L1d rose gradually (another thread shared the core during the run).
    let mut core_shared = false;
    for (name, lv) in [("l1d", l1), ("l2", l2), ("l3", l3)] {
        match lv {
            Some(pl) => {
                out.finding(&keys::cpu_hit_latency_ns(name), level_latency(name, pl, &y, samples, clock_hz, method));
                // The next level: the plateau after this one (after the L2's far end).
                let next_after =
                    |p: &Plateau| levels.iter().position(|q| q.points == p.points).and_then(|k| levels.get(k + 1));
                // How far the half-miss point of the L2 and L3 may look for its miss latency:
                // the L2 not into DRAM, the L3 to the curve's end.
                let last_x = x.last().copied().unwrap_or(f64::NAN);
                // With no L3 level found, the level after the L2 is what its misses meet, whatever
                // follows it (on the H200 machine's Xeon host an L3 of 65-85 ns and DRAM of
                // 95-120 ns formed one level in some quick runs, which then ended the L2's reach
                // inside its own transition).
                let before_dram = match (l3, dram) {
                    (Some(_), Some(d)) => d.points.start.checked_sub(1).map_or(last_x, |k| x[k]),
                    _ => last_x,
                };
                let limit = |p: &Plateau| next_after(p).map(|_| if name == "l2" { before_dram } else { last_x });
                let cap = match (name, l2_end) {
                    ("l1d", _) => {
                        let (f, shared) = l1d_capacity(
                            pl,
                            next_after(pl).map(|n| next_level_start(n, &y)),
                            x,
                            &y,
                            os_l1d_bytes,
                            method,
                        );
                        core_shared = shared;
                        f
                    }
                    ("l2", _) if core_shared => Finding::undetermined("bytes", method, L2_CORE_SHARED),
                    ("l2", Some(end)) => {
                        // Half the hops miss where latency crosses the mean of the L2's own
                        // latency and the level after its far end: the far end (L2 hits that
                        // pay TLB misses, or the first conflicts) appears in some runs and not
                        // in others, so it must not move the mean.
                        let mut f = cache_capacity(pl, limit(end), x, &y, &rel_mad, method);
                        f.note = Some(format!(
                            "{}; the L2 level continues at {:.2} ns over {:.0}..{:.0} B (under 2x its {:.2} ns: its far end, not a level of its own)",
                            f.note.unwrap_or_default(),
                            end.latency,
                            end.x_first,
                            end.x_last,
                            pl.latency
                        ));
                        f
                    }
                    _ => cache_capacity(pl, limit(pl), x, &y, &rel_mad, method),
                };
                out.finding(&keys::cpu_capacity_bytes(name), cap);
            }
            None => {
                let reason = why(name);
                out.finding(&keys::cpu_hit_latency_ns(name), Finding::undetermined("ns", method, &reason));
                out.finding(&keys::cpu_capacity_bytes(name), Finding::undetermined("bytes", method, &reason));
            }
        }
    }
    let dram_f = match dram {
        Some(pl) => level_latency("dram", pl, &y, samples, clock_hz, method),
        None if levels.is_empty() => Finding::undetermined("ns", method, "no plateau found in the latency curve"),
        None => Finding::undetermined("ns", method, "latency still rising at the largest footprint: no DRAM plateau"),
    };
    out.finding(keys::CPU_DRAM_LATENCY_NS, dram_f);
    out
}

/// The analysis of a measured curve written as "footprint_bytes:latency_ns" pairs (one sample per
/// footprint, no clock) beside the L1d size its OS reported: how the tests replay recorded curves.
#[cfg(test)]
pub(crate) fn analyze_pairs(text: &str, os_l1d_bytes: Option<f64>) -> ProbeOutput {
    let pts: Vec<(f64, f64)> = text
        .split_whitespace()
        .map(|p| p.split_once(':').map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap())).unwrap())
        .collect();
    let x: Vec<f64> = pts.iter().map(|p| p.0).collect();
    let y: Vec<f64> = pts.iter().map(|p| p.1).collect();
    let s: Vec<Vec<f64>> = y.iter().map(|&v| vec![v]).collect();
    analyze(&x, &y, &s, None, os_l1d_bytes, "test")
}

#[cfg(test)]
mod tests;
