//! The near-L2 hit and DRAM levels across TLB regimes, for `l2ways`' hit/miss threshold
//! (docs/TRUST.md "Discovery on unusual hierarchies"). A random pool's chases cover more pages
//! than the L1 TLB holds, the eviction sets they reduce to only a few, so the same hop carries a
//! translation miss in the first and none in the second: a threshold between the hit and DRAM
//! levels of one regime counted L2 hits that missed the TLB as misses, or DRAM reads that hit it
//! as hits (a 4-way L2 read 22 ways behind 4 KiB pages and a 34 ns miss). The threshold must lie
//! above every L2 hit that misses the TLB and below every DRAM read that hits it; where those
//! overlap, one hop cannot tell a translation miss from an L2 miss and the search says so.

use crate::latency::dram_lap::{lap_bytes, row_miss_lines};
use crate::measure::{Meter, Timing};
use memscope_core::{Buffer, CachePath, ProbeError};
use rand::Rng;

/// Lines of the spread hit chases: each spread evenly over the buffer, so with any page up to
/// the buffer over the line count every hop enters another page, and a TLB of fewer entries
/// than lines misses on every hop.
pub const SPREAD_LINES: [u64; 4] = [16, 32, 64, 128];
/// Lines of the cold lap kept within a few pages (`dram_lap::row_miss_lines`).
pub const NEAR_LAP_LINES: u64 = 96;

/// The slowest L2 hit level over the spread chases.
#[derive(Debug, Clone)]
pub struct SlowestHits {
    /// Typical hop of that chase.
    pub ns: f64,
    /// Pages (lines) it visited in turn.
    pub lines: u64,
    pub timing: Timing,
}

/// Chase `SPREAD_LINES` lines spread evenly over `buf` (each at a random line offset inside the
/// first 4 KiB of its share), L1 bypassed; the chase whose typical hop is slowest. Every line
/// hits L2 (at most 128 lines), so the levels differ by translation misses only.
pub fn slowest_hits(m: &mut Meter<'_>, buf: &Buffer, line: u64) -> Result<Option<SlowestHits>, ProbeError> {
    let mut best: Option<SlowestHits> = None;
    for n in SPREAD_LINES {
        let share = buf.bytes / n / line * line;
        if share < line {
            continue;
        }
        let offsets = (share.min(4096) / line).max(1);
        let lines: Vec<u64> = (0..n).map(|i| buf.base + i * share + m.rng().gen_range(0..offsets) * line).collect();
        let t = m.chase(&lines, CachePath::L1Bypass, 16, 2000, 2)?;
        let ns = t.typical_ns();
        if best.as_ref().is_none_or(|b| ns > b.ns) {
            best = Some(SlowestHits { ns, lines: n, timing: t });
        }
    }
    Ok(best)
}

/// The typical hop of a cold lap of row misses within 4 pages read in turn (the page taken as
/// 4 KiB, the fewest entries a TLB is taken to hold: `dram_lap`), so only a page's first hop
/// misses the TLB; `None` when `buf` is too small for it.
pub fn near_dram_ns(m: &mut Meter<'_>, buf: &Buffer, line: u64) -> Result<Option<f64>, ProbeError> {
    if lap_bytes(line, None, None, NEAR_LAP_LINES) > buf.bytes {
        return Ok(None);
    }
    let lap = row_miss_lines(m.rng(), buf.base, line, None, None, NEAR_LAP_LINES);
    Ok(Some(m.cold_lap(&lap.lines, CachePath::L1Bypass)?.typical_ns()))
}
