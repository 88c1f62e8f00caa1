//! Statistics for measurements (criterion.rs-style, checked against hand-computed answers):
//! a checked `Sample`, median, percentiles, MAD, trimmed mean, a bootstrap confidence interval of
//! the median, and least-squares slopes over iteration counts with R-squared (seed 000 appendix:
//! take times and counters as slopes so that fixed overhead cancels).

use crate::finding::Spread;
use rand::{Rng, SeedableRng};

/// Errors building a sample or a fit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("empty sample")]
    Empty,
    #[error("sample contains a non-finite value ({0})")]
    NonFinite(f64),
    #[error("need at least {need} points, got {got}")]
    TooFew { need: usize, got: usize },
    #[error("x values are all equal: no slope")]
    DegenerateX,
    #[error("x has {x} values but y has {y}")]
    LengthMismatch { x: usize, y: usize },
}

/// A non-empty set of finite measurements, kept sorted. Cost: O(n log n) to build, O(1) for
/// order statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    sorted: Vec<f64>,
}

impl Sample {
    /// Build a sample; rejects empty input and NaN/infinite values.
    pub fn new(values: &[f64]) -> Result<Self, StatsError> {
        if values.is_empty() {
            return Err(StatsError::Empty);
        }
        if let Some(&bad) = values.iter().find(|v| !v.is_finite()) {
            return Err(StatsError::NonFinite(bad));
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(|a, b| a.partial_cmp(b).expect("finite"));
        Ok(Sample { sorted })
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }
    pub fn is_empty(&self) -> bool {
        false
    }
    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }
    pub fn min(&self) -> f64 {
        self.sorted[0]
    }
    pub fn max(&self) -> f64 {
        self.sorted[self.sorted.len() - 1]
    }
    pub fn mean(&self) -> f64 {
        self.sorted.iter().sum::<f64>() / self.sorted.len() as f64
    }

    /// Percentile `p` in [0, 100] by linear interpolation between closest ranks
    /// (the "type 7" definition of Hyndman and Fan, as numpy's default). `p` outside [0, 100] is
    /// clamped; a NaN `p` gives NaN.
    pub fn percentile(&self, p: f64) -> f64 {
        if p.is_nan() {
            return f64::NAN;
        }
        let p = p.clamp(0.0, 100.0);
        let n = self.sorted.len();
        if n == 1 {
            return self.sorted[0];
        }
        let rank = p / 100.0 * (n - 1) as f64;
        let lo = (rank.floor() as usize).min(n - 1);
        let hi = (rank.ceil() as usize).min(n - 1);
        let frac = rank - lo as f64;
        self.sorted[lo] + (self.sorted[hi] - self.sorted[lo]) * frac
    }

    pub fn median(&self) -> f64 {
        self.percentile(50.0)
    }

    /// Median absolute deviation from the median (unscaled).
    pub fn mad(&self) -> f64 {
        let m = self.median();
        let dev: Vec<f64> = self.sorted.iter().map(|v| (v - m).abs()).collect();
        Sample::new(&dev).expect("finite").median()
    }

    /// Mean after dropping `fraction` (0..0.5) of the samples at each end.
    pub fn trimmed_mean(&self, fraction: f64) -> f64 {
        let n = self.sorted.len();
        let k = ((n as f64) * fraction.clamp(0.0, 0.499)).floor() as usize;
        let kept = &self.sorted[k..n - k];
        kept.iter().sum::<f64>() / kept.len() as f64
    }

    /// Bootstrap 95% (or `level`) confidence interval of the median, `resamples` resamples,
    /// deterministic for a given `seed`. Cost: O(resamples * n).
    ///
    /// A resample draws `n` positions of the sorted values; as the values are sorted, the
    /// resample's j-th smallest value is the value at its j-th smallest drawn position, so the
    /// positions are counted (no sort) and the two middle ones looked up: the same medians, bit
    /// for bit, as sorting each resample.
    pub fn bootstrap_median_ci(&self, level: f64, resamples: usize, seed: u64) -> [f64; 2] {
        let n = self.sorted.len();
        if n == 1 {
            return [self.sorted[0]; 2];
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut medians = Vec::with_capacity(resamples);
        let mut counts = vec![0u32; n];
        // the ranks `percentile(50)` interpolates between
        let rank = 0.5 * (n - 1) as f64;
        let (lo, hi, frac) = (rank.floor() as usize, rank.ceil() as usize, rank - rank.floor());
        for _ in 0..resamples.max(1) {
            counts.fill(0);
            for _ in 0..n {
                counts[rng.gen_range(0..n)] += 1;
            }
            let (i, j) = drawn_ranks(&counts, lo, hi);
            let (a, b) = (self.sorted[i], self.sorted[j]);
            medians.push(a + (b - a) * frac);
        }
        let ms = Sample::new(&medians).expect("finite");
        let tail = (1.0 - level.clamp(0.0, 1.0)) / 2.0 * 100.0;
        [ms.percentile(tail), ms.percentile(100.0 - tail)]
    }

    /// The spread record of a finding: MAD, min, max, bootstrap CI of the median, n.
    pub fn spread(&self) -> Spread {
        let ci = if self.len() >= 3 { Some(self.bootstrap_median_ci(0.95, 500, 1)) } else { None };
        Spread { mad: self.mad(), min: self.min(), max: self.max(), ci95: ci, n: self.len() }
    }
}

/// The positions holding the `lo`-th and `hi`-th smallest draws (0-based, `lo <= hi` < the
/// number of draws), given how often each position was drawn: one pass.
fn drawn_ranks(counts: &[u32], lo: usize, hi: usize) -> (usize, usize) {
    let (mut seen, mut first) = (0usize, None);
    for (i, &c) in counts.iter().enumerate() {
        seen += c as usize;
        if seen > lo && first.is_none() {
            first = Some(i);
        }
        if seen > hi {
            return (first.unwrap_or(i), i);
        }
    }
    unreachable!("hi < the number of draws")
}

/// Median of a slice (convenience): NaN for empty input or input with a non-finite value.
pub fn median(values: &[f64]) -> f64 {
    Sample::new(values).map(|s| s.median()).unwrap_or(f64::NAN)
}

/// A least-squares line y = intercept + slope * x.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinearFit {
    pub slope: f64,
    pub intercept: f64,
    /// Coefficient of determination of the fitted line (with intercept): 1 - SS_res / SS_tot, with
    /// SS_tot taken around the mean of y. In [0, 1] for this model; 1.0 when y is constant (the
    /// horizontal line fits it exactly).
    pub r_squared: f64,
    /// Standard error of the slope.
    pub slope_stderr: f64,
}

/// Ordinary least squares over (x, y) points, e.g. time versus iteration count: the slope is the
/// per-iteration cost with fixed overhead in the intercept.
pub fn linear_fit(x: &[f64], y: &[f64]) -> Result<LinearFit, StatsError> {
    if x.len() != y.len() {
        return Err(StatsError::LengthMismatch { x: x.len(), y: y.len() });
    }
    let n = x.len();
    if n < 2 {
        return Err(StatsError::TooFew { need: 2, got: n });
    }
    for v in x.iter().chain(y.iter()) {
        if !v.is_finite() {
            return Err(StatsError::NonFinite(*v));
        }
    }
    // Exact tests, not `sxx == 0.0`: the mean of equal values need not equal them in floating
    // point (0.1 * 3 / 3), which would leave a tiny non-zero sxx and a meaningless slope.
    if x.iter().all(|&v| v == x[0]) {
        return Err(StatsError::DegenerateX);
    }
    if y.iter().all(|&v| v == y[0]) {
        return Ok(LinearFit { slope: 0.0, intercept: y[0], r_squared: 1.0, slope_stderr: 0.0 });
    }
    let nf = n as f64;
    let mx = x.iter().sum::<f64>() / nf;
    let my = y.iter().sum::<f64>() / nf;
    let sxx: f64 = x.iter().map(|v| (v - mx) * (v - mx)).sum();
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let syy: f64 = y.iter().map(|b| (b - my) * (b - my)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    // SS_res from the reported line, SS_tot as the squared deviations of y around its mean
    // (criterion.rs had a typo in its SS_tot, bheisler/criterion.rs PR #896; the hand-computed
    // test below pins both sums).
    let ss_res: f64 = x.iter().zip(y).map(|(a, b)| (b - intercept - slope * a).powi(2)).sum();
    let r_squared = (1.0 - ss_res / syy).clamp(0.0, 1.0);
    let slope_stderr = if n > 2 { (ss_res / (nf - 2.0) / sxx).sqrt() } else { 0.0 };
    Ok(LinearFit { slope, intercept, r_squared, slope_stderr })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::Rng;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
    }

    #[test]
    fn rejects_bad_samples() {
        assert_eq!(Sample::new(&[]), Err(StatsError::Empty));
        assert_eq!(Sample::new(&[1.0, f64::INFINITY]), Err(StatsError::NonFinite(f64::INFINITY)));
        assert!(matches!(Sample::new(&[f64::NAN]), Err(StatsError::NonFinite(_))));
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn order_statistics_by_hand() {
        // Sorted: 1 2 3 4 100. Type-7 percentile rank = p/100 * (n-1).
        let s = Sample::new(&[4.0, 100.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.sorted(), &[1.0, 2.0, 3.0, 4.0, 100.0]);
        assert_eq!(s.median(), 3.0);
        assert_eq!(s.percentile(25.0), 2.0); // rank 1
        assert!(close(s.percentile(90.0), 61.6, 1e-12)); // rank 3.6: 4 + 0.6 * 96 (numpy: 61.6)
        assert_eq!(s.percentile(0.0), 1.0);
        assert_eq!(s.percentile(100.0), 100.0);
        assert_eq!(s.percentile(-5.0), 1.0);
        assert_eq!(s.percentile(150.0), 100.0);
        assert!(s.percentile(f64::NAN).is_nan());
        // |x - 3| = 2 1 0 1 97 -> sorted 0 1 1 2 97 -> MAD 1.
        assert_eq!(s.mad(), 1.0);
        assert!(close(s.mean(), 22.0, 1e-12));
        // 20% trimmed: drop one at each end -> mean(2, 3, 4) = 3.
        assert_eq!(s.trimmed_mean(0.2), 3.0);
        assert!(close(s.trimmed_mean(0.0), 22.0, 1e-12));
        // Even count: median interpolates; |x - 2.5| = 1.5 .5 .5 1.5 -> MAD 1.
        let e = Sample::new(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(e.median(), 2.5);
        assert_eq!(e.mad(), 1.0);
        assert!(close(e.percentile(10.0), 1.3, 1e-12)); // rank 0.3
        let one = Sample::new(&[7.0]).unwrap();
        assert_eq!((one.median(), one.mad(), one.percentile(99.0), one.trimmed_mean(0.45)), (7.0, 0.0, 7.0, 7.0));
        assert_eq!(one.bootstrap_median_ci(0.95, 100, 3), [7.0, 7.0]);
    }

    /// The bootstrap by counting drawn positions gives, bit for bit, the interval of sorting each
    /// resample (the definition), on odd and even sizes, with ties and one repeated value.
    #[test]
    fn bootstrap_by_counts_equals_sorting_each_resample() {
        fn by_sorting(s: &Sample, level: f64, resamples: usize, seed: u64) -> [f64; 2] {
            let n = s.len();
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let medians: Vec<f64> = (0..resamples)
                .map(|_| {
                    let buf: Vec<f64> = (0..n).map(|_| s.sorted()[rng.gen_range(0..n)]).collect();
                    Sample::new(&buf).unwrap().median()
                })
                .collect();
            let ms = Sample::new(&medians).unwrap();
            let tail = (1.0 - level) / 2.0 * 100.0;
            [ms.percentile(tail), ms.percentile(100.0 - tail)]
        }
        for (n, seed) in [(2usize, 1u64), (3, 2), (4, 3), (41, 9), (100, 4), (257, 5)] {
            let v: Vec<f64> = (0..n).map(|i| 100.0 + ((i * 7919) % 13) as f64 * 0.37 + (i % 3) as f64).collect();
            let s = Sample::new(&v).unwrap();
            for level in [0.95, 0.5] {
                assert_eq!(s.bootstrap_median_ci(level, 300, seed), by_sorting(&s, level, 300, seed), "n = {n}");
            }
        }
        let same = Sample::new(&[5.5; 9]).unwrap();
        assert_eq!(same.bootstrap_median_ci(0.95, 50, 1), [5.5, 5.5]);
    }

    #[test]
    fn bootstrap_ci_is_deterministic_and_brackets_the_median() {
        let v: Vec<f64> = (0..41).map(|i| 10.0 + ((i * 37) % 41) as f64 * 0.1).collect();
        let s = Sample::new(&v).unwrap();
        let a = s.bootstrap_median_ci(0.95, 400, 9);
        assert_eq!(a, s.bootstrap_median_ci(0.95, 400, 9));
        assert!(a[0] <= s.median() && s.median() <= a[1], "{a:?}");
        assert!(a[0] >= s.min() && a[1] <= s.max());
        // A 50% interval sits inside the 95% one.
        let b = s.bootstrap_median_ci(0.5, 400, 9);
        assert!(b[0] >= a[0] && b[1] <= a[1], "{b:?} vs {a:?}");
        let sp = s.spread();
        assert_eq!((sp.n, sp.min, sp.max, sp.mad), (41, s.min(), s.max(), s.mad()));
        assert!(sp.ci95.is_some());
        assert!(Sample::new(&[1.0, 2.0]).unwrap().spread().ci95.is_none());
    }

    #[test]
    fn linear_fit_by_hand() {
        // x = 1..5, y = 2 4 5 4 5. mean x 3, mean y 4; Sxx = 10, Sxy = 6 -> slope 0.6,
        // intercept 2.2; fitted 2.8 3.4 4.0 4.6 5.2; residuals -.8 .6 1 -.6 -.2 -> SS_res 2.4;
        // SS_tot = 4 + 0 + 1 + 0 + 1 = 6 -> R^2 = 0.6; stderr = sqrt(2.4 / 3 / 10).
        let f = linear_fit(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 4.0, 5.0, 4.0, 5.0]).unwrap();
        assert!(close(f.slope, 0.6, 1e-12));
        assert!(close(f.intercept, 2.2, 1e-12));
        assert!(close(f.r_squared, 0.6, 1e-12), "{}", f.r_squared);
        assert!(close(f.slope_stderr, 0.08f64.sqrt(), 1e-12));
        // A large fixed overhead (intercept) must not lower R^2 of an exact line: time = 5e6 +
        // 3 * iterations, as in a slope over iteration counts.
        let x: Vec<f64> = (1..=8).map(|i| (i * 1000) as f64).collect();
        let y: Vec<f64> = x.iter().map(|v| 5e6 + 3.0 * v).collect();
        let g = linear_fit(&x, &y).unwrap();
        assert!(close(g.slope, 3.0, 1e-9) && close(g.intercept, 5e6, 1e-9));
        assert!(g.r_squared > 1.0 - 1e-9);
        // Uncorrelated y: slope 0, R^2 0. x = -1 0 1 -1 0 1, y = 1 0 1 1 0 1: Sxy = 0.
        let h = linear_fit(&[-1.0, 0.0, 1.0, -1.0, 0.0, 1.0], &[1.0, 0.0, 1.0, 1.0, 0.0, 1.0]).unwrap();
        assert!(h.slope.abs() < 1e-12 && h.r_squared.abs() < 1e-12);
    }

    #[test]
    fn linear_fit_edge_cases() {
        assert_eq!(linear_fit(&[1.0], &[1.0]), Err(StatsError::TooFew { need: 2, got: 1 }));
        assert_eq!(linear_fit(&[1.0, 2.0], &[1.0]), Err(StatsError::LengthMismatch { x: 2, y: 1 }));
        // 0.1 * 3 / 3 != 0.1 in floating point: equal x must still be caught.
        assert_eq!(linear_fit(&[0.1, 0.1, 0.1], &[1.0, 2.0, 3.0]), Err(StatsError::DegenerateX));
        assert!(matches!(linear_fit(&[1.0, f64::NAN], &[1.0, 2.0]), Err(StatsError::NonFinite(_))));
        let c = linear_fit(&[1.0, 2.0, 3.0], &[0.1, 0.1, 0.1]).unwrap();
        assert_eq!((c.slope, c.intercept, c.r_squared), (0.0, 0.1, 1.0));
        let two = linear_fit(&[1.0, 3.0], &[2.0, 6.0]).unwrap();
        assert!(close(two.slope, 2.0, 1e-12) && two.slope_stderr == 0.0);
    }

    fn values() -> impl Strategy<Value = Vec<f64>> {
        prop::collection::vec(-1e6f64..1e6, 1..60)
    }

    proptest! {
        #[test]
        fn median_between_min_and_max(v in values()) {
            let s = Sample::new(&v).unwrap();
            prop_assert!(s.min() <= s.median() && s.median() <= s.max());
            prop_assert!(s.min() <= s.trimmed_mean(0.1) + 1e-6 && s.trimmed_mean(0.1) <= s.max() + 1e-6);
        }

        #[test]
        fn mad_is_nonnegative_and_bounded(v in values()) {
            let s = Sample::new(&v).unwrap();
            prop_assert!(s.mad() >= 0.0);
            prop_assert!(s.mad() <= s.max() - s.min() + 1e-9);
        }

        #[test]
        fn percentile_is_monotone(v in values(), a in 0.0f64..100.0, b in 0.0f64..100.0) {
            let s = Sample::new(&v).unwrap();
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            prop_assert!(s.percentile(lo) <= s.percentile(hi) + 1e-9);
        }

        #[test]
        fn order_does_not_matter(mut v in values()) {
            let a = Sample::new(&v).unwrap();
            v.reverse();
            let b = Sample::new(&v).unwrap();
            prop_assert_eq!(a.median(), b.median());
            prop_assert_eq!(a.mad(), b.mad());
        }

        #[test]
        fn shift_and_scale_invariance(v in values(), c in -1e3f64..1e3, k in 0.01f64..100.0) {
            let s = Sample::new(&v).unwrap();
            let shifted: Vec<f64> = v.iter().map(|x| x + c).collect();
            let scaled: Vec<f64> = v.iter().map(|x| x * k).collect();
            let t = Sample::new(&shifted).unwrap();
            let u = Sample::new(&scaled).unwrap();
            let tol = 1e-9 * (1.0 + s.max().abs().max(s.min().abs()) * k.max(1.0) + c.abs());
            prop_assert!((t.median() - (s.median() + c)).abs() <= tol);
            prop_assert!((t.mad() - s.mad()).abs() <= tol);
            prop_assert!((u.median() - s.median() * k).abs() <= tol * 10.0);
            prop_assert!((u.mad() - s.mad() * k).abs() <= tol * 10.0);
            prop_assert!((u.percentile(30.0) - s.percentile(30.0) * k).abs() <= tol * 10.0);
        }

        #[test]
        fn exact_line_is_recovered(a in -1e3f64..1e3, b in -1e3f64..1e3,
                                   xs in prop::collection::btree_set(-10_000i32..10_000, 2..40)) {
            let x: Vec<f64> = xs.iter().map(|&v| v as f64).collect();
            let y: Vec<f64> = x.iter().map(|v| a + b * v).collect();
            let f = linear_fit(&x, &y).unwrap();
            prop_assert!((f.slope - b).abs() <= 1e-9 * (1.0 + b.abs()));
            prop_assert!((f.intercept - a).abs() <= 1e-6 * (1.0 + a.abs() + b.abs()));
            prop_assert!(b == 0.0 || f.r_squared > 1.0 - 1e-9);
        }

        #[test]
        fn r_squared_is_a_fraction(pts in prop::collection::vec((-1e3f64..1e3, -1e3f64..1e3), 3..40)) {
            let (x, y): (Vec<f64>, Vec<f64>) = pts.into_iter().unzip();
            if let Ok(f) = linear_fit(&x, &y) {
                prop_assert!((0.0..=1.0).contains(&f.r_squared));
                prop_assert!(f.slope_stderr >= 0.0);
            }
        }

        #[test]
        fn bootstrap_ci_within_range(v in prop::collection::vec(0.0f64..100.0, 3..30), seed in 0u64..1000) {
            let s = Sample::new(&v).unwrap();
            let ci = s.bootstrap_median_ci(0.95, 200, seed);
            prop_assert!(s.min() <= ci[0] && ci[0] <= ci[1] && ci[1] <= s.max());
        }
    }
}
