//! The latency probe's capacities (seed 000 appendix, "A latency chase"): bisection on the line
//! count of a dense footprint (the L1, and the L2 fallback) and the retained-line count of the L2
//! as one SM sees it (`measure::count_retained`).

use super::sweep::{at_level, dense_lines, DramLevel, Point};
use crate::measure::{count_retained, Levels, Meter, Retained};
use memscope_core::{CachePath, Confidence, Finding, ProbeError};

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
/// dense footprint in address order, twice the first all-DRAM footprint of the sweep, then twice
/// that and again while the last two counts differ (at most [`COUNT_MULTIPLES`]). A set keeps
/// min(its lines, ways) of them, so the count is every way of every set only when each set got at
/// least `ways` lines of the footprint; behind pages smaller than the L2's index span the frames
/// land at random, so the lines per set vary (whole pages at a time) and at twice the capacity a
/// few sets can get fewer than `ways` (a 4-way L2 counted 32 lines short: one page). Two
/// footprints that count the same say no set was short; a count that still grows at the largest
/// footprint is reported as a lower bound (Low confidence, which `l2.sets` does not confirm
/// against). A hop is a hit below the midpoint between the slowest cache level plus the cost of a
/// TLB miss (the first hop into each page misses the TLB) and DRAM. `Err` (with the reason)
/// without per-hop times, without an all-DRAM point, or when the levels are too close to classify.
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
    // (footprint bytes, lines, count) of each footprint counted.
    let mut counts: Vec<(u64, usize, Retained)> = Vec::new();
    for multiple in COUNT_MULTIPLES {
        let bytes = (multiple * first_dram.bytes).min(max_bytes) / stride * stride;
        if counts.last().is_some_and(|c| c.0 >= bytes) {
            break; // the buffer ends here
        }
        let lines: Vec<u64> = (0..bytes / stride).map(|k| base + k * stride).collect();
        let Some(r) = count_retained(m, &lines, CachePath::L1Bypass, threshold, 4)? else {
            return Ok(Err("no per-hop times for the exact count".into()));
        };
        if r.hits * stride >= bytes {
            return Ok(Err(format!("every line of the {bytes}-byte footprint counted as retained")));
        }
        if r.false_hit_fraction > MAX_FALSE_HIT_FRACTION {
            // Misses as fast as hits are too common to subtract (seen on the H200: a dense fill
            // lap in address order is partly served fast by DRAM); the caller falls back to the
            // knee.
            return Ok(Err(format!(
                "the retained-line count was not used: {:.1}% of the hops of an all-miss fill lap were as fast as a hit (threshold {threshold:.1} ns; {} of {} lines counted)",
                100.0 * r.false_hit_fraction,
                r.raw_hits,
                lines.len()
            )));
        }
        let settled = counts.last().is_some_and(|c| c.2.hits == r.hits);
        counts.push((bytes, lines.len(), r));
        if settled {
            break;
        }
    }
    let settled = counts.len() >= 2 && counts[counts.len() - 2].2.hits == counts[counts.len() - 1].2.hits;
    let &(bytes, n_lines, r) = counts.iter().max_by_key(|c| (c.2.hits, c.0)).expect("at least one count");
    let method = "lines still cached after one fill lap, read back in reverse order (capacity seen from one SM)";
    let each: Vec<String> = counts.iter().map(|c| format!("{} lines of a {}-byte footprint", c.2.hits, c.0)).collect();
    let mut note = format!(
        "resolution {stride} bytes (one line) under LRU, FIFO or RRIP insertion: {} of {n_lines} lines of a {bytes}-byte footprint hit below {threshold:.1} ns (fastest of {} runs per hop); counted: {}; with a partitioned L2, lines cached in both partitions count once",
        r.raw_hits,
        r.runs,
        each.join(", ")
    );
    let mut conf = Confidence::Medium;
    if !settled {
        note += "; a lower bound: the count still grew at the largest footprint counted (sets that got fewer lines than ways: pages placed at random behind a physically indexed L2)";
        conf = Confidence::Low;
    }
    if r.false_hit_fraction > 0.0 {
        note += &format!(
            "; {:.2}% of the hops of an all-miss fill lap were as fast as a hit, so the count is corrected to {} lines and approximate",
            100.0 * r.false_hit_fraction,
            r.hits
        );
        conf = Confidence::Low;
    }
    Ok(Ok(Finding::integer(r.hits * stride, "bytes", method, conf).with_note(&note)))
}

/// The footprints the retained-line count tries, as multiples of the sweep's first all-DRAM
/// footprint, until two give the same count.
pub(crate) const COUNT_MULTIPLES: [u64; 3] = [2, 4, 8];

/// Largest share of an all-miss lap's hops that may pass for hits before the retained-line count
/// is abandoned for the knee.
pub(crate) const MAX_FALSE_HIT_FRACTION: f64 = 0.05;
