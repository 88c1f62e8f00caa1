//! The latency probe's parts (crates/probe/src/latency.rs): dense footprints visited 4 KiB block
//! by block, the footprint sweep, plateau analysis of its curves, the DRAM stop level, the far-L2
//! cluster of per-hop times, capacity bisection and the retained-line count of the L2 as one SM
//! sees it (seed 000 appendix, "A latency chase"). Pure analyses are tested on synthetic curves.

use crate::measure::{count_retained, Levels, Meter, Timing};
use memscope_core::knee::{detect_plateaus, Plateau};
use memscope_core::stats::Sample;
use memscope_core::{CachePath, Confidence, Finding, ProbeError};
use rand::seq::SliceRandom;

/// Footprint-ordered addresses: `n` lines of `stride` bytes from `base`, visited block by block
/// (4 KiB blocks in address order), shuffled within each block.
pub fn dense_lines(m: &mut Meter<'_>, base: u64, stride: u64, n: u64) -> Vec<u64> {
    let per_block = (4096 / stride).max(1);
    let mut out = Vec::with_capacity(n as usize);
    let mut i = 0;
    while i < n {
        let end = (i + per_block).min(n);
        let mut block: Vec<u64> = (i..end).map(|k| base + k * stride).collect();
        block.shuffle(m.rng());
        out.extend(block);
        i = end;
    }
    out
}

/// One point of a sweep.
#[derive(Debug, Clone)]
pub struct Point {
    pub bytes: u64,
    pub typical_ns: f64,
    pub timing: Timing,
}

/// What the sweeps say, reduced by `analyze`.
#[derive(Debug, Clone, PartialEq)]
pub struct Levels3 {
    /// Plateaus of the L1-cached sweep.
    pub cached: Vec<Plateau>,
    /// Plateaus of the L1-bypassing sweep.
    pub bypass: Vec<Plateau>,
}

/// Pure analysis: plateaus of both curves (x = bytes, y = typical ns per hop).
pub fn analyze(cached: &[(f64, f64)], bypass: &[(f64, f64)]) -> Levels3 {
    let split = |v: &[(f64, f64)]| -> (Vec<f64>, Vec<f64>) { v.iter().copied().unzip() };
    let (cx, cy) = split(cached);
    let (bx, by) = split(bypass);
    Levels3 { cached: detect_plateaus(&cx, &cy, 1.15), bypass: detect_plateaus(&bx, &by, 1.15) }
}

/// Intermediate plateaus of the bypassing curve strictly between the L2 hit level and DRAM.
pub fn intermediate(bypass: &[Plateau], l2_ns: f64, dram_ns: f64) -> Vec<&Plateau> {
    bypass.iter().filter(|p| p.latency > l2_ns * 1.1 && p.latency < dram_ns * 0.9).collect()
}

pub(crate) fn sweep(
    m: &mut Meter<'_>,
    base: u64,
    stride: u64,
    max_bytes: u64,
    path: CachePath,
    stop: Option<DramLevel>,
    progress: &dyn memscope_core::Progress,
) -> Result<Vec<Point>, ProbeError> {
    let mut out: Vec<Point> = Vec::new();
    let mut k = 0u32;
    loop {
        // Half-octave steps from 4 KiB to 1 MiB, then octaves (large chases cost the most).
        let exp = if k <= 16 { k as f64 / 2.0 } else { (k - 8) as f64 };
        let bytes = ((4096.0 * 2f64.powf(exp)) as u64 / stride).max(1) * stride;
        k += 1;
        if bytes > max_bytes {
            break;
        }
        let lines = dense_lines(m, base, stride, bytes / stride);
        let t = m.chase(&lines, path, 1, 4000, 1)?;
        let typical = t.typical_ns();
        out.push(Point { bytes, typical_ns: typical, timing: t });
        progress.advance(1);
        // Stop once the mean hop (every hop, not the median: a mix of far-L2 hits and DRAM has
        // a DRAM median) reaches the stop level (DRAM).
        if let Some(s) = stop {
            let n = out.len();
            if n >= 2 && at_level(&out[n - 1], &s) {
                break;
            }
        }
    }
    Ok(out)
}

/// A slow level where a sweep stops (DRAM; the L2 for the L1-cached sweep) and its control: per-hop
/// shares of a chase that only meets that level (for DRAM one cold lap, every hop a miss).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DramLevel {
    pub ns: f64,
    /// Share of the cold lap's hops faster than 0.9 `ns` (a wide DRAM spread puts some there).
    pub fast: f64,
    /// Share of the cold lap's hops strictly between 1.1 x the L2 hit and 0.9 `ns`.
    pub between: f64,
}

impl DramLevel {
    pub fn new(cold: &Timing, ns: f64, l2_ns: f64) -> Self {
        DramLevel {
            ns,
            fast: cold.fraction_in(f64::NEG_INFINITY, 0.9 * ns).unwrap_or(0.0),
            between: cold.fraction_in(1.1 * l2_ns, 0.9 * ns).unwrap_or(0.0),
        }
    }
}

/// Whether a sweep point has reached DRAM: its median and mean hop (outliers included) are within
/// 7%, and (per-hop times) no more of its hops are faster than 0.9 x DRAM than in a cold lap, so a
/// footprint whose hops split between far-L2 hits and DRAM does not count.
pub(crate) fn at_level(p: &Point, dram: &DramLevel) -> bool {
    p.typical_ns > 0.93 * dram.ns
        && p.timing.mean_ns() > 0.93 * dram.ns
        && p.timing.fraction_in(f64::NEG_INFINITY, 0.9 * dram.ns).is_none_or(|f| f <= dram.fast + 0.2)
}

/// A far-L2 level from per-hop times, for when the medians show no plateau (a footprint whose
/// hops split between far-L2 hits and DRAM has a median at either level): the sweep point whose
/// hops fall most often strictly between the L2 hit level and DRAM (`(1.1 l2, 0.9 dram)`), in a
/// tight cluster (MAD within 3% of its median), at least 20 points of percentage more often than
/// in a cold DRAM lap (the control: a wide DRAM spread puts hops there too). Returns (median ns of
/// the cluster, fraction of hops in it, footprint in bytes).
pub fn far_mode(points: &[Point], l2_ns: f64, dram: &DramLevel) -> Option<(f64, f64, u64)> {
    let (lo, hi) = (l2_ns * 1.1, dram.ns * 0.9);
    let inside = |p: &Point| -> Option<(Vec<f64>, usize)> {
        let h = p.timing.per_hop_ns.as_ref().filter(|h| !h.is_empty())?;
        Some((h.iter().copied().filter(|&t| t > lo && t < hi).collect(), h.len()))
    };
    let base = dram.between;
    let mut best: Option<(f64, f64, u64)> = None;
    for p in points {
        let Some((w, n)) = inside(p) else { continue };
        let f = w.len() as f64 / n as f64;
        if f < base + 0.2 || w.len() < 50 {
            continue;
        }
        let Ok(s) = Sample::new(&w) else { continue };
        if s.mad() > 0.03 * s.median() {
            continue;
        }
        if best.is_none_or(|(_, bf, _)| f > bf) {
            best = Some((s.median(), f, p.bytes));
        }
    }
    best
}

/// Median of the recorded hops strictly between `lo` and `hi` ns, when at least 50 fall there.
pub fn cluster_median(t: &Timing, lo: f64, hi: f64) -> Option<f64> {
    let h = t.per_hop_ns.as_ref()?;
    let w: Vec<f64> = h.iter().copied().filter(|&x| x > lo && x < hi).collect();
    (w.len() >= 50).then(|| memscope_core::stats::median(&w))
}

/// Smallest line count in `(lo, hi]` at which a chase over the first `n` lines misses (at least
/// `threshold` misses per lap beyond `baseline`), by bisection; `lo` fits, `hi` misses.
#[allow(clippy::too_many_arguments)]
pub fn bisect_capacity(
    m: &mut Meter<'_>,
    base: u64,
    stride: u64,
    path: CachePath,
    levels: Levels,
    mut lo: u64,
    mut hi: u64,
    threshold_fraction: f64,
    steps: u32,
) -> Result<(u64, u64), ProbeError> {
    let mut steps_done = 0;
    while hi - lo > 1 && steps_done < steps {
        let mid = lo + (hi - lo) / 2;
        let lines = dense_lines(m, base, stride, mid);
        let t = m.chase(&lines, path, 2, 4000, 1)?;
        let (misses, sigma) = levels.misses_per_lap(&t, lines.len());
        if misses >= (threshold_fraction * mid as f64).max(0.5).max(4.0 * sigma) {
            hi = mid;
        } else {
            lo = mid;
        }
        steps_done += 1;
    }
    Ok((lo, hi))
}

/// L2 capacity as seen from one SM (`measure::count_retained`): a fill lap and a reverse lap over a
/// dense footprint twice the first all-DRAM footprint of the sweep (so every set is overfilled),
/// in address order. A hop is a hit below the midpoint between the slowest cache level plus the
/// cost of a TLB miss (the first hop into each page misses the TLB) and DRAM. `None` without
/// per-hop times, without an all-DRAM point, or when the levels are too close to classify.
#[allow(clippy::too_many_arguments)]
pub(crate) fn l2_retained(
    m: &mut Meter<'_>,
    base: u64,
    stride: u64,
    max_bytes: u64,
    bypass: &[Point],
    l2_ns: f64,
    top_ns: f64,
    dram: &DramLevel,
) -> Result<Result<Finding, String>, ProbeError> {
    let dram_ns = dram.ns;
    let Some(first_dram) = bypass.iter().find(|p| at_level(p, dram)) else {
        return Ok(Err("no footprint of the sweep reached DRAM".into()));
    };
    if !m.per_hop() {
        return Ok(Err("no per-hop times for the exact count".into()));
    }
    // Cost of a TLB miss on an L2 hit: one line in each 2 MiB block (a random line of it), more
    // blocks than any L1 TLB has entries, so every hop misses the TLB and hits L2.
    let block = 2u64 << 20;
    let n_blocks = (max_bytes / block).max(1);
    let mut spread: Vec<u64> = (0..n_blocks).map(|k| base + k * block).collect();
    for a in spread.iter_mut() {
        let off = rand::Rng::gen_range(m.rng(), 0..block / stride) * stride;
        *a += off;
    }
    let page_hit = m.chase(&spread, CachePath::L1Bypass, 8, 2000, 2)?;
    let tlb_ns = (page_hit.typical_ns() - l2_ns).max(0.0);
    let hit_top = top_ns + tlb_ns;
    if dram_ns - hit_top < 0.1 * hit_top {
        return Ok(Err("the slowest cache level and DRAM are too close to classify hops".into()));
    }
    let threshold = 0.5 * (hit_top + dram_ns);
    let bytes = (2 * first_dram.bytes).min(max_bytes) / stride * stride;
    let lines: Vec<u64> = (0..bytes / stride).map(|k| base + k * stride).collect();
    let Some(r) = count_retained(m, &lines, CachePath::L1Bypass, threshold, 4)? else {
        return Ok(Err("no per-hop times for the exact count".into()));
    };
    if r.hits * stride >= bytes {
        return Ok(Err("every line of the double footprint counted as retained".into()));
    }
    let method = "lines still cached after one fill lap, read back in reverse order (capacity seen from one SM)";
    let mut note = format!(
        "resolution {stride} bytes (one line) under LRU, FIFO or RRIP insertion: {} of {} lines of a {bytes}-byte footprint hit below {threshold:.1} ns (fastest of {} runs per hop); with a partitioned L2, lines cached in both partitions count once",
        r.raw_hits,
        lines.len(),
        r.runs
    );
    if r.false_hit_fraction > MAX_FALSE_HIT_FRACTION {
        // Misses as fast as hits are too common to subtract (seen on the H200: a dense fill lap
        // in address order is partly served fast by DRAM); the caller falls back to the knee.
        return Ok(Err(format!(
            "the retained-line count was not used: {:.1}% of the hops of an all-miss fill lap were as fast as a hit (threshold {threshold:.1} ns; {} of {} lines counted)",
            100.0 * r.false_hit_fraction,
            r.raw_hits,
            lines.len()
        )));
    }
    let conf = if r.false_hit_fraction > 0.0 {
        note += &format!(
            "; {:.2}% of the hops of an all-miss fill lap were as fast as a hit, so the count is corrected to {} lines and approximate",
            100.0 * r.false_hit_fraction,
            r.hits
        );
        Confidence::Low
    } else {
        Confidence::Medium
    };
    Ok(Ok(Finding::integer(r.hits * stride, "bytes", method, conf).with_note(&note)))
}

/// Hops of the recorded chases at the L1 and L2 levels (the most the CUDA target records).
pub(crate) const RECORDED_HOPS: u64 = 1 << 20;
/// Timed hops of the shorter uninstrumented latency chase (the longer has twice as many).
pub(crate) const PLAIN_HOPS: u64 = 100_000;

/// Largest share of an all-miss lap's hops that may pass for hits before the retained-line count
/// is abandoned for the knee.
pub(crate) const MAX_FALSE_HIT_FRACTION: f64 = 0.05;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_three_levels_and_a_far_plateau() {
        let x: Vec<f64> = (0..24).map(|k| 4096.0 * 2f64.powi(k)).collect();
        let y: Vec<f64> = x
            .iter()
            .map(|&b| {
                if b <= 4e6 {
                    127.0
                } else if b <= 3e7 {
                    200.0
                } else {
                    400.0
                }
            })
            .collect();
        let lv = analyze(
            &[(1.0, 15.0), (2.0, 15.1), (4.0, 127.0), (8.0, 127.0)],
            &x.iter().copied().zip(y).collect::<Vec<_>>(),
        );
        assert_eq!(lv.cached.len(), 2);
        assert_eq!(lv.bypass.len(), 3);
        let mids = intermediate(&lv.bypass, 127.0, 400.0);
        assert_eq!(mids.len(), 1);
        assert!((mids[0].latency - 200.0).abs() < 1e-9);
        assert!(intermediate(&lv.bypass[..1], 127.0, 400.0).is_empty());
    }

    #[test]
    fn far_cluster_between_levels() {
        let point = |bytes: u64, hops: Vec<f64>| Point {
            bytes,
            typical_ns: memscope_core::stats::median(&hops),
            timing: Timing { means_ns: vec![hops.iter().sum::<f64>() / hops.len() as f64], per_hop_ns: Some(hops) },
        };
        let mix = |far: usize, dram: usize, near: usize| -> Vec<f64> {
            let mut v = vec![100.0; near];
            v.extend((0..far).map(|i| 160.0 + (i % 5) as f64 * 0.5));
            v.extend(vec![260.0; dram]);
            v
        };
        let pts =
            vec![point(1 << 20, mix(0, 0, 400)), point(2 << 20, mix(200, 200, 0)), point(8 << 20, mix(0, 400, 0))];
        let cold = |v: Vec<f64>| Timing { means_ns: vec![0.0], per_hop_ns: Some(v) };
        let dram = DramLevel::new(&cold(mix(0, 400, 0)), 260.0, 100.0);
        assert_eq!((dram.fast, dram.between), (0.0, 0.0));
        let (ns, frac, bytes) = far_mode(&pts, 100.0, &dram).unwrap();
        assert!((ns - 161.0).abs() < 1.0, "{ns}");
        assert!((frac - 0.5).abs() < 1e-9);
        assert_eq!(bytes, 2 << 20);
        // DRAM with a wide spread (the control point has as many hops between the levels): none.
        let wide: Vec<f64> = (0..400).map(|i| 180.0 + (i % 100) as f64 * 2.0).collect();
        let pts = vec![point(1 << 20, mix(0, 0, 400)), point(2 << 20, wide.clone()), point(8 << 20, wide.clone())];
        let dram = DramLevel::new(&cold(wide), 260.0, 100.0);
        assert!(far_mode(&pts, 100.0, &dram).is_none());
        // The mixed footprint is not at the DRAM level; the all-DRAM one is.
        let dram = DramLevel::new(&cold(mix(0, 400, 0)), 260.0, 100.0);
        assert!(!at_level(&point(2 << 20, mix(200, 200, 0)), &dram));
        assert!(at_level(&point(8 << 20, mix(0, 400, 0)), &dram));
    }
}
