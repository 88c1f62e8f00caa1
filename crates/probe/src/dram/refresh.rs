//! DRAM refresh stalls from one cold lap's per-hop times (seed 000 appendix "DRAM refresh"): most
//! hops take the DRAM latency, a small share wait up to a hard ceiling; the excess over the median
//! is fitted by a two-piece density (refresh stalls uniform up to the stall length, rare outliers
//! spread wider): the breakpoint is the stall, the mass above the outlier floor the fraction. Pure,
//! tested on synthetic hop times.

use memscope_core::stats::median;
use memscope_core::Series;

/// Histogram of per-hop excess over the median (the refresh-stall signature of seed 000: most hops
/// at zero excess, stalls spread evenly up to a hard ceiling). Bins of `bin_ns` from 0 up to the
/// largest excess; x = bin start in ns, y = hops in the bin. Hops below the median are left out.
pub fn excess_histogram(per_hop: &[f64], bin_ns: f64) -> Series {
    let base = median(per_hop);
    let ex: Vec<f64> = per_hop.iter().map(|t| t - base).filter(|e| *e >= 0.0).collect();
    let top = ex.iter().cloned().fold(0.0_f64, f64::max);
    let bins = ((top / bin_ns).floor() as usize + 1).clamp(1, 4096);
    let mut y = vec![0.0; bins];
    for e in ex {
        y[((e / bin_ns) as usize).min(bins - 1)] += 1.0;
    }
    Series {
        description: format!("per-hop excess over the median DRAM hop ({base:.1} ns), one cold dependent lap"),
        x_name: "excess latency".into(),
        x_unit: "ns".into(),
        y_name: "hops".into(),
        y_unit: "count".into(),
        x: (0..bins).map(|i| i as f64 * bin_ns).collect(),
        y,
        y_spread: None,
        marks: Vec::new(),
    }
}

/// Result of the refresh fit.
#[derive(Debug, Clone, PartialEq)]
pub struct RefreshFit {
    pub stall_ns: f64,
    pub fraction: f64,
    /// Points attributed to refresh.
    pub points: f64,
}

/// Pure: fit the per-hop times of cold DRAM accesses. `floor_ns` is the excess below which a hop
/// counts as plain (jitter).
///
/// The stall is the hard ceiling of the refresh waits, not the edge of a uniform band: a dependent
/// chase meets the refreshes at phases of its own, so the waits below the ceiling can bunch (low or
/// high, seen on the simulator). Outliers form a sparse tail above it (their rare sums with a stall
/// lie further out: the largest 1% of the excess, at least 3 points, is left out). The ceiling is
/// found from the top down: the highest point whose `m` nearest points below are at least 2.5
/// times as dense as everything from them up (`m` = max(20, k/25)); without one, the band has no
/// tail and ends at its largest point. The edge is then placed by a two-density likelihood fit
/// near it, and debiased like the maximum of a uniform sample. The edge must be resolved: the
/// breaks whose likelihood lies within [`EDGE_SUPPORT`] of the best (a likelihood-ratio interval,
/// about 95 %) must span at most [`EDGE_TOLERANCE`] of it either way; where outliers are nearly as
/// dense as the band (few stalled hops, outliers over a range not much wider than the stall) they
/// do not, and the stall is not determined (`Err` with the interval); so is a break that one band
/// to the top explains nearly as well (a likelihood gain between [`EDGE_SUPPORT`] and 10). `Err`
/// also when there is no band of stalled hops above the floor, and when the fits of the lap's
/// alternate hops (two halves) do not both give its stall within [`EDGE_TOLERANCE`].
pub fn analyze_refresh(per_hop: &[f64], floor_ns: f64) -> Result<RefreshFit, String> {
    let fit = fit_once(per_hop, floor_ns)?;
    // The fit again on each half of the hops (alternate hops, so both halves span the lap): a
    // stall the two halves do not reproduce within EDGE_TOLERANCE is not determined by this lap.
    // (Halves rather than bootstrap resamples: the edge is a maximum-like statistic, which
    // resampling with replacement does not reproduce even when it is sharp.)
    let half = |k: usize| -> Vec<f64> { per_hop.iter().skip(k).step_by(2).copied().collect() };
    let halves = [fit_once(&half(0), floor_ns), fit_once(&half(1), floor_ns)];
    let agrees = |h: &Result<RefreshFit, String>| {
        h.as_ref().is_ok_and(|f| (f.stall_ns / fit.stall_ns - 1.0).abs() <= EDGE_TOLERANCE)
    };
    if !halves.iter().all(agrees) {
        let show = |h: &Result<RefreshFit, String>| match h {
            Ok(f) => format!("{:.0} ns", f.stall_ns),
            Err(why) => format!("none ({why})"),
        };
        return Err(format!(
            "the stall's edge is not resolved: {:.0} ns from the whole lap, {} and {} from its alternate hops (more than {:.0} % apart)",
            fit.stall_ns,
            show(&halves[0]),
            show(&halves[1]),
            EDGE_TOLERANCE * 100.0
        ));
    }
    Ok(fit)
}

/// One fit of [`analyze_refresh`], without the resampling check.
fn fit_once(per_hop: &[f64], floor_ns: f64) -> Result<RefreshFit, String> {
    let base = median(per_hop);
    let n = per_hop.len() as f64;
    let mut ex: Vec<f64> = per_hop.iter().map(|t| t - base).filter(|&e| e > floor_ns).collect();
    if ex.len() < 20 {
        return Err(format!("{} hops above the floor: too few for a band of stalled hops", ex.len()));
    }
    ex.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
    let top = ex[ex.len() - 1 - (ex.len() / 100).max(2)];
    ex.retain(|&e| e <= top);
    let k = ex.len();
    let m = 20.max(k / 25);
    if k < m + 2 {
        return Err(format!("{k} hops above the floor: too few for a band of stalled hops"));
    }
    // Highest dense-below / sparse-above point.
    let mut edge = k - 1;
    for i in (m - 1..k).rev() {
        let span = ex[i] - ex[i + 1 - m];
        if span <= 0.0 || top <= ex[i + 1 - m] {
            continue;
        }
        let dense = (m - 1) as f64 / span;
        let union = (k - 1 - i + m - 1) as f64 / (top - ex[i + 1 - m]);
        if dense >= 2.5 * union {
            edge = i;
            break;
        }
    }
    // Two densities over the points from 2m below the edge up: the break of largest likelihood
    // (when it beats one density by more than 10 and the lower density is the higher one).
    let r = &ex[edge.saturating_sub(2 * m)..];
    let a = r[0] - 1e-9 * r[0].abs().max(1.0);
    let nr = r.len();
    let ll1 = nr as f64 * (nr as f64 / (top - a)).ln();
    let mut lls: Vec<(f64, usize)> = Vec::new();
    for (j, &b) in r.iter().enumerate().take(nr - 1).skip(9) {
        let (n1, n2) = ((j + 1) as f64, (nr - j - 1) as f64);
        let (w1, w2) = (b - a, top - b);
        if w1 <= 0.0 || w2 <= 0.0 {
            continue;
        }
        lls.push((n1 * (n1 / w1).ln() + n2 * (n2 / w2).ln(), j));
    }
    let best = lls
        .iter()
        .copied()
        .fold(None, |b: Option<(f64, usize)>, x| if b.is_none_or(|b| x.0 > b.0) { Some(x) } else { b });
    let j = match best {
        Some((ll, j)) if ll - ll1 > 10.0 && (j + 1) as f64 / (r[j] - a) > (nr - j - 1) as f64 / (top - r[j]) => {
            let support: Vec<f64> = lls.iter().filter(|x| x.0 >= ll - EDGE_SUPPORT).map(|x| r[x.1]).collect();
            let (lo, hi) = support.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &v| (l.min(v), h.max(v)));
            if lo < r[j] * (1.0 - EDGE_TOLERANCE) || hi > r[j] * (1.0 + EDGE_TOLERANCE) {
                return Err(format!(
                    "the stall's edge is not resolved against the outliers: breaks from {lo:.0} to {hi:.0} ns of excess are within {EDGE_SUPPORT} of the best likelihood (at {:.0} ns), more than {:.0} % either way",
                    r[j],
                    EDGE_TOLERANCE * 100.0
                ));
            }
            j
        }
        // A break that beats one density, but not clearly: a band ending below the top with
        // outliers above it, or one band to the top; the two give different stalls.
        Some((ll, j)) if ll - ll1 > EDGE_SUPPORT => {
            return Err(format!(
                "the stall's edge is not resolved against the outliers: a break at {:.0} ns of excess is {:.1} more likely (log) than one band to {top:.0} ns, between {EDGE_SUPPORT} and the 10 that decides",
                r[j],
                ll - ll1
            ));
        }
        _ => nr - 1,
    };
    let s_obs = r[j];
    let n1 = ex.iter().filter(|&&e| e <= s_obs).count() as f64;
    let n2 = k as f64 - n1;
    let outlier_density = if top > s_obs { n2 / (top - s_obs) } else { 0.0 };
    let refresh_pts = (n1 - outlier_density * (s_obs - floor_ns)).max(0.0);
    if refresh_pts < 10.0 || s_obs <= floor_ns {
        return Err(format!(
            "{refresh_pts:.0} stalled hops below {s_obs:.0} ns of excess beyond the outliers' share: no band"
        ));
    }
    // Unbiased upper edge of a uniform sample; add back the part hidden below the floor.
    let stall = s_obs + (s_obs - floor_ns) / refresh_pts;
    let fraction = refresh_pts / n * stall / (stall - floor_ns);
    Ok(RefreshFit { stall_ns: stall, fraction, points: refresh_pts })
}

/// Log-likelihood below the best break within which a break still counts as supported (a
/// likelihood-ratio interval: 2 x 1.92 is the 95 % point of chi-square with one degree of
/// freedom).
pub const EDGE_SUPPORT: f64 = 1.92;
/// How far either way the supported breaks may lie from the best one (the 10 % the stall is
/// scored to).
pub const EDGE_TOLERANCE: f64 = 0.10;

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn excess_histogram_counts_hops_by_excess() {
        // 90 hops at 100 ns, 10 stalled hops at 100 + 5, 15, ..., 95 ns.
        let mut h = vec![100.0; 90];
        h.extend((0..10).map(|i| 105.0 + 10.0 * i as f64));
        let s = excess_histogram(&h, 10.0);
        assert_eq!(s.x.len(), s.y.len());
        assert_eq!(s.y[0], 91.0, "90 unstalled hops plus the 5 ns one");
        assert_eq!(s.y.iter().sum::<f64>(), 100.0);
        assert_eq!(s.y[9], 1.0);
        assert_eq!(s.x[9], 90.0);
    }

    #[test]
    fn refresh_fit_recovers_stall_and_fraction() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let h: Vec<f64> = (0..30000)
            .map(|_| {
                let mut t = 255.0 + rng.gen_range(-3.0..3.0);
                if rng.gen_bool(0.02) {
                    t += rng.gen_range(0.0..210.0);
                }
                if rng.gen_bool(0.01) {
                    t += rng.gen_range(0.0..1000.0);
                }
                t
            })
            .collect();
        let fit = analyze_refresh(&h, 10.0).unwrap();
        assert!((fit.stall_ns - 210.0).abs() < 21.0, "{fit:?}");
        assert!((fit.fraction - 0.02).abs() < 0.004, "{fit:?}");
        assert!(analyze_refresh(&vec![255.0; 1000], 10.0).is_err());
    }

    #[test]
    fn a_stall_the_outliers_blur_is_undetermined_not_wrong() {
        // One cold lap of 8000 hops with few stalls (0.66 % up to 360 ns) and outliers nearly as
        // dense (0.64 % up to 1000 ns), as a drawn hierarchy had: the fit either finds the stall
        // within 10 % or says the edge is not resolved; over many draws, never a wrong stall.
        let mut undetermined = 0;
        for seed in 0..40 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let h: Vec<f64> = (0..8000)
                .map(|_| {
                    let mut t = 428.0 + rng.gen_range(-1.8..1.8);
                    if rng.gen_bool(0.0066) {
                        t += rng.gen_range(0.0..360.0);
                    }
                    if rng.gen_bool(0.0064) {
                        t += rng.gen_range(0.0..1000.0);
                    }
                    t
                })
                .collect();
            match analyze_refresh(&h, 12.0) {
                Ok(fit) => assert!((fit.stall_ns / 360.0 - 1.0).abs() <= 0.10, "seed {seed}: {fit:?}"),
                Err(why) => {
                    assert!(
                        why.contains("not resolved") || why.contains("no band") || why.contains("too few"),
                        "{why}"
                    );
                    undetermined += 1;
                }
            }
        }
        assert!(undetermined > 0, "the blurred edge should be undetermined at times");
    }
}
