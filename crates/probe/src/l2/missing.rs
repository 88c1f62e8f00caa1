//! The lines of a random pool that miss an SM's near L2 partition on every lap, and which level
//! served their misses (docs/TRUST.md): DRAM (their home is the near partition, or there is one
//! partition) or the far partition (copies of far-homed lines evicted from the near one). The
//! `l2ways` reduction takes the DRAM-served lines, `l2copies` the far-served ones.

use crate::measure::{Levels, Meter, Timing};
use memscope_core::{CachePath, ProbeError};

/// Pure: the members slow (above the levels' midpoint) on every recorded visit of a per-hop
/// chase over `set` (hop `i` visits `set[i % n]`), each with the median of its visits' times.
pub fn always_slow(levels: &Levels, set: &[u64], per_hop_ns: &[f64]) -> Vec<(u64, f64)> {
    let n = set.len();
    let mut fast = vec![false; n];
    let mut visits: Vec<Vec<f64>> = vec![Vec::new(); n];
    for (i, &x) in per_hop_ns.iter().enumerate() {
        visits[i % n].push(x);
        if x <= levels.mid() {
            fast[i % n] = true;
        }
    }
    set.iter()
        .zip(visits)
        .enumerate()
        .filter(|(i, (_, v))| !v.is_empty() && !fast[*i])
        .map(|(_, (&a, v))| (a, memscope_core::stats::median(&v)))
        .collect()
}

/// The lines of a pool that missed the near L2 on every lap, split by where their misses were
/// served: from DRAM (their home is the near partition, or there is one partition) or from a far
/// partition (copies of far-homed lines evicted from the near partition, served at about
/// `l2.far_hit_latency_ns`). The associativity search reduces the DRAM-served lines only: on the
/// H200, before this split, one search in three settled on an 8-line set where the near lines'
/// sets take 17 (a set that involved far-served lines; its cause is not established), and four
/// searches in four found 17 lines with it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MissingLines {
    pub dram: Vec<u64>,
    pub far: Vec<u64>,
}

impl MissingLines {
    pub fn total(&self) -> usize {
        self.dram.len() + self.far.len()
    }
}

/// Pure: the per-hop time that separates misses served by a far partition from misses served by
/// DRAM: the midpoint of `far_ns` and `dram_ns` where the far level lies between the near hit
/// and at most 80 % of the way to DRAM (closer, the two cannot be told apart by one hop), else
/// `None` (every missing line counts as DRAM-served).
pub fn far_split_ns(hit_ns: f64, far_ns: Option<f64>, dram_ns: f64) -> Option<f64> {
    let far = far_ns.filter(|&f| f > hit_ns && f < hit_ns + 0.8 * (dram_ns - hit_ns))?;
    Some(0.5 * (far + dram_ns))
}

/// Pure: split always-slow lines (with their median miss time) at `split_ns`.
pub fn split_missing(slow: &[(u64, f64)], split_ns: Option<f64>) -> MissingLines {
    let mut out = MissingLines::default();
    for &(a, t) in slow {
        match split_ns {
            Some(s) if t < s => out.far.push(a),
            _ => out.dram.push(a),
        }
    }
    out
}

/// What the scans left out as far-served misses, for the notes.
pub fn far_note(far_missing: &[usize], split_ns: Option<f64>) -> String {
    match split_ns {
        Some(s) => format!(
            "missing lines served by a far partition (median miss below {s:.1} ns) left out of the reduction: {far_missing:?}"
        ),
        None => "no far partition level to split misses by: every missing line reduced".to_string(),
    }
}

/// One warm-up lap and two timed laps over `pool`; returns the lines that missed on both, split
/// at `split_ns` (`far_split_ns`).
pub fn missing_lines(
    m: &mut Meter<'_>,
    levels: &Levels,
    pool: &[u64],
    split_ns: Option<f64>,
) -> Result<MissingLines, ProbeError> {
    m.target.flush()?;
    let t: Timing = m.chase(pool, CachePath::L1Bypass, 2, 0, 1)?;
    let h = t.per_hop_ns.ok_or_else(|| ProbeError::Failed("the target recorded no per-hop times".into()))?;
    Ok(split_missing(&always_slow(levels, pool, &h), split_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn always_slow_needs_every_visit() {
        let lv = Levels::new(100.0, 200.0);
        let set = [1u64, 2, 3];
        let h = [190.0, 120.0, 160.0, 180.0, 110.0, 140.0];
        assert_eq!(always_slow(&lv, &set, &h), vec![(1, 185.0)]);
    }

    #[test]
    fn misses_split_by_the_level_that_served_them() {
        // The H200's per-hop levels: near hit 150, far 260, DRAM 345.
        let s = far_split_ns(150.0, Some(260.0), 345.0).unwrap();
        assert!((s - 302.5).abs() < 1e-9);
        // A far level too close to DRAM (beyond 80 % of the way) or outside: no split.
        assert_eq!(far_split_ns(150.0, Some(330.0), 345.0), None);
        assert_eq!(far_split_ns(150.0, Some(140.0), 345.0), None);
        assert_eq!(far_split_ns(150.0, None, 345.0), None);
        let slow = [(1u64, 262.0), (2, 350.0), (3, 301.0), (4, 340.0)];
        let m = split_missing(&slow, Some(s));
        assert_eq!((m.dram.clone(), m.far.clone()), (vec![2, 4], vec![1, 3]));
        assert_eq!(m.total(), 4);
        assert_eq!(split_missing(&slow, None).dram.len(), 4);
    }
}
