//! The latency probe's levels from its sweeps (seed 000 appendix, "A latency chase"): plateaus
//! of both curves, intermediate (far-L2) plateaus, and the far-L2 cluster of per-hop times for
//! when the medians show none. Pure analyses, tested on synthetic curves.

use super::sweep::{DramLevel, Point};
use crate::measure::Timing;
use memscope_core::knee::{detect_plateaus, Plateau};
use memscope_core::stats::Sample;

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

#[cfg(test)]
mod tests {
    use super::super::sweep::at_level;
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
