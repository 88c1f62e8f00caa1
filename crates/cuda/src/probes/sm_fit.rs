//! Pure analyses of the SM-memory probes (constant cache, read-only/texture path, what
//! shares storage with L1): the levels of a latency-versus-footprint curve (crates/core knee.rs),
//! the fetch unit of a stride experiment (seed 000 footnote 5: a miss fetches one unit, so an
//! ascending walk over a footprint that misses costs `min(1, stride / unit)` misses a hop), and the
//! verdicts of the interference experiment (mt4g's "sharedWith": fill one, time the other) and of
//! the instances-per-SM experiment. Tested here on synthetic timings, noisy ones too.

use memscope_core::knee::{detect_plateaus_with, KneeConfig};
use memscope_core::stats::median;

/// The first two levels of a latency-versus-footprint curve.
#[derive(Debug, Clone, PartialEq)]
pub struct TwoLevels {
    /// The first plateau's latency (the hit level of the cache under study).
    pub hit: f64,
    /// Indices of the points on the first plateau.
    pub hit_points: std::ops::Range<usize>,
    /// The knee: where the first level ends (knee.rs `Plateau::capacity`), when the curve leaves it.
    pub capacity: Option<f64>,
    /// The next level's latency (the second plateau), when there is one.
    pub next: Option<f64>,
    /// Indices of the points on the second plateau.
    pub next_points: Option<std::ops::Range<usize>>,
}

/// The levels of a curve (x ascending, y > 0): steps of at least 25 %; None when no plateau.
pub fn two_levels(x: &[f64], y: &[f64]) -> Option<TwoLevels> {
    let cfg = KneeConfig { min_step_ratio: 1.25, min_points: 2 };
    let p = detect_plateaus_with(x, y, &cfg);
    let first = p.first()?;
    let second = p.get(1);
    Some(TwoLevels {
        hit: first.latency,
        hit_points: first.points.clone(),
        capacity: first.capacity,
        next: second.map(|s| s.latency),
        next_points: second.map(|s| s.points.clone()),
    })
}

/// The fetch unit of a stride experiment: (stride bytes, ns per hop) in ascending stride, over a
/// footprint that misses the cache under study. The latency rises with the stride while several
/// hops share a unit and is flat from the unit on. The unit is the smallest stride whose latency
/// is within 10 % of the rise from the first point to the top (the median of the two largest
/// strides), provided every larger stride stays within 20 % of the top and the stride before it
/// is clearly below (at most 75 % of the rise). None otherwise (no rise, or no clear step).
pub fn fetch_unit(strides: &[u64], ns: &[f64]) -> Option<u64> {
    let n = strides.len();
    if n < 3 || ns.len() != n || ns.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let top = median(&ns[n - 2..]);
    let y0 = ns[0];
    let rise = top - y0;
    if rise <= 0.1 * y0.abs().max(1e-9) {
        return None;
    }
    let f = |v: f64| (v - y0) / rise;
    let u = (1..n).find(|&i| f(ns[i]) >= 0.9)?;
    if ns[u..].iter().any(|&v| f(v) < 0.8) || f(ns[u - 1]) > 0.75 {
        return None;
    }
    Some(strides[u])
}

/// How one sharing run reads: how much of the victim's own eviction an aggressor caused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Share {
    /// The aggressor evicted the victim as its own kind does (>= 50 %): shared storage.
    Yes,
    /// Less than 15 %: separate storage.
    No,
    /// In between: part of the storage is shared, or the replacement spares some lines.
    Partial,
}

/// The fraction of the self-eviction an aggressor caused: (after - before) / (self_after -
/// self_before), where `self_*` is the run with an aggressor of the victim's own kind (the
/// positive control). None when the control shows no eviction (less than 10 % slower).
pub fn share_fraction(before: f64, after: f64, self_before: f64, self_after: f64) -> Option<f64> {
    let gap = self_after - self_before;
    let separable = gap.is_finite() && gap > 0.1 * self_before.abs();
    if !separable || !before.is_finite() || !after.is_finite() {
        return None;
    }
    Some((after - before) / gap)
}

/// The verdict of a fraction.
pub fn classify(fraction: f64) -> Share {
    if fraction >= 0.5 {
        Share::Yes
    } else if fraction < 0.15 {
        Share::No
    } else {
        Share::Partial
    }
}

/// Instances of a cache per SM from the same-kind aggressor on other warps: `same` is the
/// fraction evicted by an aggressor on a warp of the victim's sub-partition (warp 4 for victim
/// warp 0), `others` those on the other sub-partitions (warps 1, 2, 3). One instance when every
/// other warp evicts as well (>= 50 %); one per sub-partition (`others.len() + 1`) when the same
/// sub-partition evicts and none of the others do (< 15 %); None otherwise.
pub fn instances(same: f64, others: &[f64]) -> Option<u32> {
    if same < 0.5 || others.is_empty() {
        return None;
    }
    if others.iter().all(|&f| f >= 0.5) {
        Some(1)
    } else if others.iter().all(|&f| f < 0.15) {
        Some(others.len() as u32 + 1)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny deterministic noise source (xorshift), +-amp relative.
    fn noisy(v: &[f64], amp: f64, seed: u64) -> Vec<f64> {
        let mut s = seed | 1;
        v.iter()
            .map(|&x| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let u = (s % 10_000) as f64 / 10_000.0 * 2.0 - 1.0;
                x * (1.0 + amp * u)
            })
            .collect()
    }

    #[test]
    fn two_levels_of_a_constant_cache_curve() {
        // 2 KiB of L1 at 9 ns, then an L1.5 at 55 ns up to the end of the 64 KiB bank.
        let x: Vec<f64> = [256, 512, 1024, 1536, 2048, 2560, 3072, 4096, 8192, 16384, 32768, 65536]
            .iter()
            .map(|&b| b as f64)
            .collect();
        let clean: Vec<f64> = x.iter().map(|&b| if b <= 2048.0 { 9.0 } else { 55.0 }).collect();
        for seed in 1..6 {
            let y = noisy(&clean, 0.03, seed);
            let l = two_levels(&x, &y).unwrap();
            assert!((l.hit - 9.0).abs() < 0.4, "{l:?}");
            assert_eq!(l.capacity, Some(2048.0), "{l:?}");
            assert!((l.next.unwrap() - 55.0).abs() < 2.0, "{l:?}");
        }
        // Flat: one level, no knee.
        let l = two_levels(&x, &noisy(&[10.0; 12], 0.02, 9)).unwrap();
        assert_eq!((l.capacity, l.next), (None, None));
        assert!(two_levels(&[], &[]).is_none());
    }

    #[test]
    fn a_ramp_knee_lands_where_the_ramp_starts() {
        // A random-replacement cache of 240 KiB: the miss share ramps past the capacity.
        let xs = [32.0, 64.0, 128.0, 192.0, 224.0, 240.0, 256.0, 288.0, 384.0, 512.0, 1024.0, 2048.0];
        let x: Vec<f64> = xs.iter().map(|k| k * 1024.0).collect();
        let cap = 240.0 * 1024.0;
        let y: Vec<f64> = x.iter().map(|&f| if f <= cap { 20.0 } else { 20.0 + (1.0 - cap / f) * 110.0 }).collect();
        let l = two_levels(&x, &noisy(&y, 0.01, 3)).unwrap();
        let c = l.capacity.unwrap();
        assert!((240.0 * 1024.0..=256.0 * 1024.0).contains(&c), "{l:?}");
    }

    #[test]
    fn fetch_unit_from_strides() {
        let strides = [4u64, 8, 16, 32, 64, 128, 256, 512];
        // A 64-byte unit: hit 9, miss 55.
        let model = |u: f64| -> Vec<f64> { strides.iter().map(|&s| 9.0 + (s as f64 / u).min(1.0) * 46.0).collect() };
        assert_eq!(fetch_unit(&strides, &model(64.0)), Some(64));
        assert_eq!(fetch_unit(&strides, &model(32.0)), Some(32));
        assert_eq!(fetch_unit(&strides, &model(256.0)), Some(256));
        for seed in 1..8 {
            assert_eq!(fetch_unit(&strides, &noisy(&model(64.0), 0.03, seed)), Some(64), "seed {seed}");
        }
        // Flat (every stride hits): no unit.
        assert_eq!(fetch_unit(&strides, &[9.0; 8]), None);
        // A rise that falls back (no plateau): no unit.
        let bad = [9.0, 15.0, 30.0, 55.0, 20.0, 56.0, 55.0, 55.0];
        assert_eq!(fetch_unit(&strides, &bad), None);
        assert_eq!(fetch_unit(&strides[..2], &[1.0, 2.0]), None);
    }

    #[test]
    fn sharing_verdicts() {
        // Self-eviction: 20 -> 130 ns. An aggressor that does it too, one that does not, one half.
        let f = share_fraction(20.0, 125.0, 20.0, 130.0).unwrap();
        assert_eq!(classify(f), Share::Yes);
        let f = share_fraction(20.5, 21.0, 20.0, 130.0).unwrap();
        assert_eq!(classify(f), Share::No);
        let f = share_fraction(20.0, 60.0, 20.0, 130.0).unwrap();
        assert_eq!(classify(f), Share::Partial);
        // A control without eviction decides nothing.
        assert!(share_fraction(20.0, 125.0, 20.0, 21.0).is_none());
        assert!(share_fraction(f64::NAN, 1.0, 20.0, 130.0).is_none());
    }

    #[test]
    fn instances_per_sm() {
        assert_eq!(instances(0.98, &[0.97, 1.02, 0.95]), Some(1));
        assert_eq!(instances(0.98, &[0.02, -0.01, 0.05]), Some(4));
        assert_eq!(instances(0.98, &[0.9, 0.02, 0.05]), None);
        assert_eq!(instances(0.1, &[0.9, 0.9, 0.9]), None);
    }
}
