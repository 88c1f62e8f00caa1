//! The latency probe's footprint sweep (seed 000 appendix, "A latency chase"): dense footprints
//! visited 4 KiB block by block, the half-octave sweep that stops at DRAM, the quarter-octave
//! refinement between the near-L2 and DRAM levels, and the DRAM stop level with its control.

use crate::measure::{Meter, Timing};
use memscope_core::{CachePath, ProbeError};
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

/// Adds points between the last near-L2 point and the first DRAM point of an L1-bypassing sweep
/// at quarter octaves, so an intermediate (far-L2) plateau gets enough points to be seen.
pub(crate) fn refine_toward_dram(
    m: &mut Meter<'_>,
    base: u64,
    stride: u64,
    bypass: &mut Vec<Point>,
    l2_ns: f64,
    dram: &DramLevel,
) -> Result<(), ProbeError> {
    let last_l2 = bypass.iter().rposition(|p| p.typical_ns < l2_ns * 1.1);
    let first_dram = bypass.iter().position(|p| at_level(p, dram));
    let (Some(i), Some(j)) = (last_l2, first_dram) else { return Ok(()) };
    if j <= i {
        return Ok(());
    }
    let (lo, hi) = (bypass[i].bytes as f64, bypass[j].bytes as f64);
    let mut extra = Vec::new();
    let mut f = lo * 2f64.powf(0.25);
    while f < hi * 0.97 {
        let bytes = (f as u64 / stride).max(1) * stride;
        if !bypass.iter().any(|p| p.bytes == bytes) {
            let lines = dense_lines(m, base, stride, bytes / stride);
            let t = m.chase(&lines, CachePath::L1Bypass, 1, 4000, 1)?;
            extra.push(Point { bytes, typical_ns: t.typical_ns(), timing: t });
        }
        f *= 2f64.powf(0.25);
    }
    bypass.extend(extra);
    bypass.sort_by_key(|p| p.bytes);
    Ok(())
}
