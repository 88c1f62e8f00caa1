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
    /// (the "type 7" definition of Hyndman and Fan, as numpy's default).
    pub fn percentile(&self, p: f64) -> f64 {
        let p = p.clamp(0.0, 100.0);
        let n = self.sorted.len();
        if n == 1 {
            return self.sorted[0];
        }
        let rank = p / 100.0 * (n - 1) as f64;
        let lo = rank.floor() as usize;
        let hi = rank.ceil() as usize;
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
    /// deterministic for a given `seed`. Cost: O(resamples * n log n).
    pub fn bootstrap_median_ci(&self, level: f64, resamples: usize, seed: u64) -> [f64; 2] {
        let n = self.sorted.len();
        if n == 1 {
            return [self.sorted[0]; 2];
        }
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut medians = Vec::with_capacity(resamples);
        let mut buf = vec![0.0; n];
        for _ in 0..resamples.max(1) {
            for slot in buf.iter_mut() {
                *slot = self.sorted[rng.gen_range(0..n)];
            }
            medians.push(Sample::new(&buf).expect("finite").median());
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

/// Median of a slice (convenience; panics on empty or non-finite input only in debug builds'
/// callers' eyes: returns NaN for empty input).
pub fn median(values: &[f64]) -> f64 {
    Sample::new(values).map(|s| s.median()).unwrap_or(f64::NAN)
}

/// A least-squares line y = intercept + slope * x.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinearFit {
    pub slope: f64,
    pub intercept: f64,
    /// Coefficient of determination: 1 - SS_res / SS_tot (1.0 when y is constant and fitted
    /// exactly).
    pub r_squared: f64,
    /// Standard error of the slope.
    pub slope_stderr: f64,
}

/// Ordinary least squares over (x, y) points, e.g. time versus iteration count: the slope is the
/// per-iteration cost with fixed overhead in the intercept.
pub fn linear_fit(x: &[f64], y: &[f64]) -> Result<LinearFit, StatsError> {
    let n = x.len().min(y.len());
    if n < 2 {
        return Err(StatsError::TooFew { need: 2, got: n });
    }
    for v in x.iter().chain(y.iter()) {
        if !v.is_finite() {
            return Err(StatsError::NonFinite(*v));
        }
    }
    let nf = n as f64;
    let mx = x[..n].iter().sum::<f64>() / nf;
    let my = y[..n].iter().sum::<f64>() / nf;
    let sxx: f64 = x[..n].iter().map(|v| (v - mx) * (v - mx)).sum();
    if sxx == 0.0 {
        return Err(StatsError::DegenerateX);
    }
    let sxy: f64 = x[..n].iter().zip(&y[..n]).map(|(a, b)| (a - mx) * (b - my)).sum();
    let slope = sxy / sxx;
    let intercept = my - slope * mx;
    let ss_res: f64 = x[..n].iter().zip(&y[..n]).map(|(a, b)| (b - intercept - slope * a).powi(2)).sum();
    let ss_tot: f64 = y[..n].iter().map(|b| (b - my).powi(2)).sum();
    let r_squared = if ss_tot == 0.0 {
        if ss_res == 0.0 {
            1.0
        } else {
            0.0
        }
    } else {
        1.0 - ss_res / ss_tot
    };
    let slope_stderr = if n > 2 { (ss_res / (nf - 2.0) / sxx).sqrt() } else { 0.0 };
    Ok(LinearFit { slope, intercept, r_squared, slope_stderr })
}
