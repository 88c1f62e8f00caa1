//! `l2pool`: what the L2 eviction-set search (`l2ways`, `l2policy`) takes from the rest of the
//! run (the same outcome run after run). Three things:
//!
//! - the scale of the random pools: the L2 segment one SM's chase sees
//!   (`l2.segment_capacity_bytes`), else the driver's L2 size from the target details
//!   (`l2_cache_bytes_attribute`: the whole L2, every partition), else `l2.capacity_bytes`; the
//!   pools grow from a fraction of it until their missing lines thrash, so a hint that is off by
//!   the partition count only costs scans;
//! - the level a pool's hop must exceed to count as missing the SM's near L2: below a far
//!   partition's hits as well as DRAM (seed 000 has one L2; on a partitioned L2 an SM keeps copies
//!   of far lines in its near partition, and a copy evicted from an over-full near set is served
//!   from the far partition at a latency near the old hit/DRAM midpoint, so those lines fell on
//!   either side of it at random and a set of "always missing" lines did not thrash by itself);
//! - the capacities whose set count the occupancy estimate may confirm.

use crate::measure::{earlier_u64, Levels, Timing};
use memscope_core::keys;
use memscope_core::{Confidence, Finding, TargetInfo};
use std::collections::BTreeMap;

/// Where the pool sizes come from.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolHint {
    pub bytes: u64,
    /// The finding or detail it was read from.
    pub source: &'static str,
    /// A measurement of what one SM sees (pools start at half of it), or the driver's size of
    /// the whole L2 (pools start at a quarter: a partition may hold half of it).
    pub measured: bool,
}

/// The driver attribute of the L2 size in the target details (CUDA targets), when present.
pub fn driver_l2_bytes(info: &TargetInfo) -> Option<u64> {
    info.details.get("l2_cache_bytes_attribute").and_then(|v| v.as_u64()).filter(|&b| b >= 4096)
}

/// The pool scale, or `None` when nothing in the run says how large the L2 is.
pub fn pool_hint(earlier: &BTreeMap<String, Finding>, info: &TargetInfo) -> Option<PoolHint> {
    let found = |k: &str| earlier_u64(earlier, k).filter(|&b| b >= 4096);
    let segment = || {
        found(keys::L2_SEGMENT_CAPACITY_BYTES).map(|bytes| PoolHint {
            bytes,
            source: keys::L2_SEGMENT_CAPACITY_BYTES,
            measured: true,
        })
    };
    match driver_l2_bytes(info) {
        // A driver reports the whole L2 (and l2.capacity_bytes is that attribute): the segment
        // one SM's chase sees scales the pool, else the attribute.
        Some(bytes) => {
            segment().or(Some(PoolHint { bytes, source: "the driver's L2 size attribute", measured: false }))
        }
        // No driver (simulated targets): the measured capacity (a retained-line count, exact),
        // else the segment (a half-way footprint, above the capacity under RRIP insertion).
        None => found(keys::L2_CAPACITY_BYTES)
            .map(|bytes| PoolHint { bytes, source: keys::L2_CAPACITY_BYTES, measured: true })
            .or_else(segment),
    }
}

/// Pool sizes tried, as fractions of the hint, smallest first (the growth of 1.25 per step
/// keeps the missing fraction from jumping past the few-percent range the reduction likes), up
/// to 4 times the hint (the buffer holds `BUFFER_CAPACITIES`, 8): a search that finds its set in
/// a smaller pool never tries the larger ones. The hint can fall well short of what one SM's sets
/// hold: on an L2 of three partitions that keeps near copies of far lines, the half-way
/// footprint (`l2.segment_capacity_bytes`, the hint where a driver reports the size) read half a
/// partition's capacity (seed 1041: 0.77 of 1.5 MiB; far hits lifting the mean latency past
/// half-way is the likely cause, not confirmed), and the missing lines of
/// pools up to twice it did not thrash on their own (7 of the 200 mutated draws, each of
/// three partitions with the driver's size;
/// crates/probe/tests/probe/random_hierarchies.rs); pools to four times it found the sets.
pub fn pool_fractions(hint: &PoolHint) -> Vec<f64> {
    let all = [0.25, 0.3125, 0.39, 0.5, 0.625, 0.75, 0.875, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0, 4.0];
    let from = if hint.measured { 0.5 } else { 0.25 };
    all.into_iter().filter(|&f| f >= from).collect()
}

/// Pure: the levels that tell a near-L2 hit from anything slower. `hit_ns` and `dram_ns` are
/// the calibration's hit and cold levels, `hits` the hit chase (for the floor and the spread),
/// `far_ns` a far partition's hit latency where the latency probe found one. The upper level is
/// the far hit when it lies between, and at most halfway to DRAM, so the threshold (the
/// midpoint) sits at most a quarter of the way from the hit to DRAM: a hop served by the far
/// partition counts as a miss of the near one. The threshold stays at least a tenth of the way
/// and 8 MADs of the hit chase above the hit (a far finding from another instrument, one
/// without per-hop records, may sit lower than these per-hop times). Where the threshold puts
/// more than 5% of the hit chase's hops above it (far hits in a fitting pool: a far partition
/// that keeps no copies, so it is part of the L2 this SM sees), the plain midpoint to DRAM is
/// used. Returns the levels and how they were set.
pub fn near_levels(hit_ns: f64, dram_ns: f64, far_ns: Option<f64>, hits: &Timing) -> (Levels, String) {
    let plain = Levels::new(hit_ns, dram_ns).with_floor_from(hits);
    let gap = dram_ns - hit_ns;
    let far = far_ns.filter(|&f| f > hit_ns && f < dram_ns);
    let mad = hits.sample().map_or(0.0, |s| s.mad());
    let lowest_mid = hit_ns + (0.1 * gap).max(8.0 * mad);
    let upper = far.map_or(hit_ns + 0.5 * gap, |f| f.min(hit_ns + 0.5 * gap)).max(2.0 * lowest_mid - hit_ns);
    let near = Levels::new(hit_ns, upper).with_floor_from(hits);
    if near.floor > 0.05 || near.mid() >= plain.mid() {
        let why = format!(
            "hops above {:.1} ns counted as misses (the hit/DRAM midpoint: {:.0}% of a fitting pool's hops lie above the near-L2 threshold {:.1} ns)",
            plain.mid(),
            100.0 * near.floor,
            near.mid()
        );
        return (plain, why);
    }
    let why = match far {
        Some(f) => format!(
            "hops above {:.1} ns counted as misses of the near L2 (from its hit {hit_ns:.1} ns towards the far partition's {f:.1} ns or a quarter of the way to DRAM {dram_ns:.1} ns)",
            near.mid()
        ),
        None => format!(
            "hops above {:.1} ns counted as misses (a quarter of the way from the L2 hit {hit_ns:.1} ns to DRAM {dram_ns:.1} ns, below any far partition's hits)",
            near.mid()
        ),
    };
    (near, why)
}

/// Capacities whose `capacity / (ways * line)` the occupancy estimate may confirm, each with
/// what it is: the capacity finding, the driver's size and a half, a third and a quarter of it
/// (one of two, three or four partitions: what one SM's sets are on a partitioned L2; the
/// estimate's range, a few per cent wide, admits at most one of them). Duplicates are dropped.
pub fn set_candidates(earlier: &BTreeMap<String, Finding>, info: &TargetInfo) -> Vec<(u64, String)> {
    let mut v: Vec<(u64, String)> = Vec::new();
    // A capacity of Low confidence is a lower bound (the bisection's, or a retained-line count
    // that still grew at its largest footprint): not a size to confirm a set count against.
    let exact_capacity =
        earlier.get(keys::L2_CAPACITY_BYTES).filter(|f| matches!(f.confidence, Confidence::High | Confidence::Medium));
    if let Some(c) = exact_capacity.and_then(|f| f.value.as_u64()) {
        v.push((c, keys::L2_CAPACITY_BYTES.into()));
    }
    if let Some(d) = driver_l2_bytes(info) {
        v.push((d, "the driver's L2 size".into()));
        // One SM's sets on an L2 of k partitions: the driver counts them all.
        for (k, what) in [(2, "half"), (3, "a third of"), (4, "a quarter of")] {
            if d % k == 0 {
                v.push((d / k, format!("{what} the driver's L2 size (one of {k} partitions)")));
            }
        }
    }
    // Not l2.segment_capacity_bytes: a half-way footprint interpolated between bisection points
    // is an estimate, and a whole number of sets near it need not be the count (a partitioned L2
    // read 1605 sets for 1536 from it).
    let mut seen = Vec::new();
    v.retain(|(c, _)| {
        let new = !seen.contains(c);
        seen.push(*c);
        new
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(attr: Option<u64>) -> TargetInfo {
        use memscope_core::Target;
        let mut i = crate::testsim::ToyCache::new(2, 2, 64, vec![0x40]).info();
        if let Some(a) = attr {
            i.details.insert("l2_cache_bytes_attribute".into(), a.into());
        }
        i
    }

    fn with(keys: &[(&str, u64)]) -> BTreeMap<String, Finding> {
        keys.iter().map(|(k, v)| (k.to_string(), Finding::integer(*v, "bytes", "given", Confidence::High))).collect()
    }

    #[test]
    fn hint_prefers_segment_then_driver_then_capacity() {
        let e = with(&[("l2.capacity_bytes", 60 << 20), ("l2.segment_capacity_bytes", 28 << 20)]);
        assert_eq!(pool_hint(&e, &info(Some(60 << 20))).unwrap().source, "l2.segment_capacity_bytes");
        let e = with(&[("l2.capacity_bytes", 27 << 20)]);
        let h = pool_hint(&e, &info(Some(60 << 20))).unwrap();
        assert_eq!((h.bytes, h.measured), (60 << 20, false));
        assert_eq!(pool_fractions(&h)[0], 0.25);
        let h = pool_hint(&e, &info(None)).unwrap();
        assert_eq!((h.bytes, h.measured), (27 << 20, true));
        assert_eq!(pool_fractions(&h)[0], 0.5);
        assert_eq!(pool_hint(&BTreeMap::new(), &info(None)), None);
    }

    #[test]
    fn the_largest_pool_is_four_hints_and_fits_the_buffer_with_room() {
        let h = PoolHint { bytes: 1 << 20, source: "given", measured: true };
        let f = pool_fractions(&h);
        assert_eq!(*f.last().unwrap(), 4.0);
        assert!(f.windows(2).all(|w| w[1] > w[0] && w[1] / w[0] <= 1.34), "{f:?}");
        // Random lines of a buffer of BUFFER_CAPACITIES hints: the largest pool takes half of them.
        assert!(4.0 * 2.0 <= crate::l2::ways::BUFFER_CAPACITIES as f64);
    }

    #[test]
    fn near_threshold_below_far_hits() {
        let hits = Timing { means_ns: vec![158.0], per_hop_ns: Some(vec![158.0; 100]) };
        // The H200's levels: near 158, far 256, DRAM 349: far hits count as misses.
        let (lv, _) = near_levels(158.0, 349.0, Some(256.0), &hits);
        assert!(lv.mid() < 210.0 && lv.mid() > 190.0, "{lv:?}");
        let (lv, _) = near_levels(158.0, 349.0, Some(200.0), &hits);
        assert!((lv.mid() - 179.0).abs() < 1e-9, "{lv:?}");
        // A far finding below a tenth of the way: the threshold stays there.
        let (lv, _) = near_levels(158.0, 349.0, Some(170.0), &hits);
        assert!((lv.mid() - 177.1).abs() < 1e-9, "{lv:?}");
        // Spread hits: at least 8 MADs above the hit.
        let wide: Vec<f64> = (0..100).map(|i| 158.0 + if i % 2 == 0 { 4.0 } else { -4.0 }).collect();
        let wide = Timing { means_ns: vec![158.0], per_hop_ns: Some(wide) };
        let (lv, _) = near_levels(158.0, 349.0, Some(200.0), &wide);
        assert!((lv.mid() - (158.0 + 32.0)).abs() < 1e-9, "{lv:?}");
        let (lv, _) = near_levels(158.0, 349.0, None, &hits);
        assert!((lv.mid() - (158.0 + 0.25 * 191.0)).abs() < 1e-9, "{lv:?}");
        // A fitting pool with far hits above that threshold: the plain midpoint.
        let mut h = vec![158.0; 50];
        h.extend(vec![256.0; 50]);
        let mixed = Timing { means_ns: vec![207.0], per_hop_ns: Some(h) };
        let (lv, why) = near_levels(158.0, 349.0, Some(256.0), &mixed);
        assert!((lv.mid() - 253.5).abs() < 1e-9, "{lv:?} {why}");
    }

    #[test]
    fn set_candidates_in_order_without_duplicates() {
        let e = with(&[("l2.capacity_bytes", 60 << 20), ("l2.segment_capacity_bytes", 28 << 20)]);
        let c: Vec<u64> = set_candidates(&e, &info(Some(60 << 20))).into_iter().map(|x| x.0).collect();
        assert_eq!(c, vec![60 << 20, 30 << 20, 20 << 20, 15 << 20]);
        // A capacity of Low confidence is a lower bound, not a size to confirm sets against.
        let mut e = with(&[("l2.capacity_bytes", 60 << 20), ("l2.segment_capacity_bytes", 28 << 20)]);
        e.get_mut("l2.capacity_bytes").unwrap().confidence = Confidence::Low;
        let c: Vec<u64> = set_candidates(&e, &info(None)).into_iter().map(|x| x.0).collect();
        assert!(c.is_empty(), "{c:?}");
    }
}
