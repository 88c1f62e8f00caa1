//! The pure analyses of the `smem` probe (docs/SM_MEMORIES.md): the bank count and bank width that explain a
//! table of a warp's access cost by lane stride (lane i reads 4-byte word i x stride; a bank serves
//! one word per cycle, lanes reading the same word share it), and the carveout steps from the
//! largest block footprint of which two blocks stay resident on one SM. Tested on synthetic
//! timings, noisy ones too: the simulator models no shared memory.

use memscope_core::stats::median;
use std::collections::{BTreeMap, BTreeSet};

/// Lanes of a warp.
pub const LANES: u64 = 32;

/// Bank counts and widths (bytes) the fit considers.
pub const BANK_COUNTS: [u64; 6] = [4, 8, 16, 32, 64, 128];
pub const BANK_WIDTHS: [u64; 3] = [4, 8, 16];

/// The conflict degree of one warp's 4-byte loads, lane i at word i * `stride_words`, for `banks`
/// banks of `width_bytes`: the most distinct bank words any one bank must deliver (lanes that read
/// the same bank word are served together).
pub fn conflict_degree(stride_words: u64, banks: u64, width_bytes: u64) -> u64 {
    let mut per_bank: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    for lane in 0..LANES {
        let word = lane * stride_words * 4 / width_bytes.max(1);
        per_bank.entry(word % banks.max(1)).or_default().insert(word);
    }
    per_bank.values().map(|w| w.len() as u64).max().unwrap_or(1)
}

/// One candidate bank layout fitted to the table.
#[derive(Debug, Clone, PartialEq)]
pub struct BankCandidate {
    pub banks: u64,
    pub width_bytes: u64,
    /// Cycles per extra way of conflict (the slope of cost against degree).
    pub cycles_per_way: f64,
    /// The fitted cost of a degree-0 access (the intercept).
    pub base_cycles: f64,
    /// Root-mean-square relative residual (residual over the measured cost).
    pub rel_rms: f64,
}

/// The bank layout that explains a conflict table, and how clearly.
#[derive(Debug, Clone, PartialEq)]
pub struct BankFit {
    pub best: BankCandidate,
    /// The best candidate with a different degree pattern (None when no other candidate fits).
    pub runner_up: Option<BankCandidate>,
    /// Degree of each stride under the best layout.
    pub degrees: Vec<u64>,
    /// A 2-way access costs hardly more than a 1-way one (under 1.3x): the low end is bound by something
    /// other than the banks (issue), so a 1-way and a 2-way access look alike and layouts with the
    /// same row size (32 banks of 4 bytes, 16 of 8) cannot be told apart.
    pub floored: bool,
}

impl BankFit {
    /// How many times worse the runner-up explains the table (infinite without one).
    pub fn separation(&self) -> f64 {
        match &self.runner_up {
            Some(r) => r.rel_rms / self.best.rel_rms.max(1e-12),
            None => f64::INFINITY,
        }
    }

    /// The n-way table: (degree, median cycles of the strides with that degree), by degree.
    pub fn by_degree(&self, cycles: &[f64]) -> Vec<(u64, f64)> {
        let mut groups: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
        for (d, c) in self.degrees.iter().zip(cycles) {
            groups.entry(*d).or_default().push(*c);
        }
        groups.into_iter().map(|(d, v)| (d, median(&v))).collect()
    }
}

/// Weighted least squares of y = a + b x with weights 1 / y^2 (the noise of a timing is relative):
/// (a, b, root-mean-square relative residual). None for fewer than 2 distinct x.
fn relative_fit(x: &[f64], y: &[f64]) -> Option<(f64, f64, f64)> {
    let w: Vec<f64> = y.iter().map(|v| 1.0 / (v * v).max(1e-300)).collect();
    let sw: f64 = w.iter().sum();
    let mx = x.iter().zip(&w).map(|(a, w)| a * w).sum::<f64>() / sw;
    let my = y.iter().zip(&w).map(|(b, w)| b * w).sum::<f64>() / sw;
    let sxx: f64 = x.iter().zip(&w).map(|(a, w)| w * (a - mx) * (a - mx)).sum();
    if sxx <= 0.0 || x.iter().all(|&v| v == x[0]) {
        return None;
    }
    let sxy: f64 = x.iter().zip(y).zip(&w).map(|((a, b), w)| w * (a - mx) * (b - my)).sum();
    let b = sxy / sxx;
    let a = my - b * mx;
    let ss: f64 = x.iter().zip(y).map(|(xi, yi)| ((yi - a - b * xi) / yi).powi(2)).sum();
    Some((a, b, (ss / x.len() as f64).sqrt()))
}

/// Fit every (bank count, width) candidate to `cycles` (per warp access, one per stride in
/// `strides`) as cost = base + slope x degree (relative residuals: a small cost counts as much as a
/// large one), and keep the one with the smallest residual. Candidates whose degree pattern is
/// identical to a better one are not runners-up. None when the table is too short, not positive,
/// or no candidate has a positive slope.
pub fn fit_banks(strides: &[u64], cycles: &[f64]) -> Option<BankFit> {
    if strides.len() < 4 || strides.len() != cycles.len() || cycles.iter().any(|c| !c.is_finite() || *c <= 0.0) {
        return None;
    }
    let mean = cycles.iter().sum::<f64>() / cycles.len() as f64;
    let mut fits: Vec<(BankCandidate, Vec<u64>)> = Vec::new();
    for &banks in &BANK_COUNTS {
        for &width in &BANK_WIDTHS {
            let d: Vec<u64> = strides.iter().map(|&s| conflict_degree(s, banks, width)).collect();
            let x: Vec<f64> = d.iter().map(|&v| v as f64).collect();
            let Some((a, b, rel_rms)) = relative_fit(&x, cycles) else { continue };
            if b <= 1e-6 * mean {
                continue;
            }
            let c = BankCandidate { banks, width_bytes: width, cycles_per_way: b, base_cycles: a, rel_rms };
            fits.push((c, d));
        }
    }
    // Best first; at equal residual the smaller layout (fewer banks, narrower) first.
    fits.sort_by(|a, b| {
        a.0.rel_rms.total_cmp(&b.0.rel_rms).then(a.0.banks.cmp(&b.0.banks)).then(a.0.width_bytes.cmp(&b.0.width_bytes))
    });
    let (best, degrees) = fits.first().cloned()?;
    let runner_up = fits.iter().skip(1).find(|(_, d)| *d != degrees).map(|(c, _)| c.clone());
    let mut fit = BankFit { best, runner_up, degrees, floored: false };
    let table = fit.by_degree(cycles);
    let at = |d: u64| table.iter().find(|t| t.0 == d).map(|t| t.1);
    fit.floored = matches!((at(1), at(2)), (Some(c1), Some(c2)) if c2 < 1.3 * c1);
    Some(fit)
}

/// The largest value in `[lo, hi]` (multiples of `step` above `lo`) for which `pred` holds, given
/// that `pred(lo)` holds and `pred` is monotone (true then false). Binary search; None when `pred(lo)`
/// is false. Errors from `pred` pass through.
pub fn largest_true<E>(
    lo: u64,
    hi: u64,
    step: u64,
    mut pred: impl FnMut(u64) -> Result<bool, E>,
) -> Result<Option<u64>, E> {
    let step = step.max(1);
    if !pred(lo)? {
        return Ok(None);
    }
    // Invariant: pred(lo + a * step) is true, pred(lo + b * step) false (or beyond hi).
    let (mut a, mut b) = (0u64, (hi.saturating_sub(lo)) / step + 1);
    while b - a > 1 {
        let m = a + (b - a) / 2;
        if pred(lo + m * step)? {
            a = m;
        } else {
            b = m;
        }
    }
    Ok(Some(lo + a * step))
}

/// The distinct carveouts among per-percent readings (bytes), merging values within `tolerance`
/// bytes of each other (the footprint search's granularity), smallest first.
pub fn distinct_steps(readings: &[u64], tolerance: u64) -> Vec<u64> {
    let mut v: Vec<u64> = readings.to_vec();
    v.sort_unstable();
    let mut out: Vec<u64> = Vec::new();
    for x in v {
        match out.last() {
            Some(&last) if x - last <= tolerance => {}
            _ => out.push(x),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn table(banks: u64, width: u64, base: f64, per_way: f64, noise: f64, seed: u64) -> (Vec<u64>, Vec<f64>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let strides: Vec<u64> = (1..=64).collect();
        let cycles = strides
            .iter()
            .map(|&s| {
                let clean = base + per_way * conflict_degree(s, banks, width) as f64;
                clean * (1.0 + noise * (rng.gen::<f64>() * 2.0 - 1.0))
            })
            .collect();
        (strides, cycles)
    }

    #[test]
    fn degrees_of_32_banks_of_4_bytes_are_the_gcd_with_32() {
        for s in 1..=64u64 {
            let g = (1..=32u64).rev().find(|g| s % g == 0 && 32 % g == 0).unwrap();
            assert_eq!(conflict_degree(s, 32, 4), g, "stride {s}");
        }
        // 8-byte banks: neighbouring lanes share a bank word at stride 1.
        assert_eq!(conflict_degree(1, 32, 8), 1);
        assert_eq!(conflict_degree(16, 32, 8), 8);
        assert_eq!(conflict_degree(1, 16, 4), 2);
    }

    #[test]
    fn every_layout_is_recovered_from_a_clean_table() {
        for &banks in &[16u64, 32, 64] {
            for &width in &[4u64, 8] {
                let (s, c) = table(banks, width, 2.0, 1.0, 0.0, 1);
                let f = fit_banks(&s, &c).unwrap();
                assert_eq!((f.best.banks, f.best.width_bytes), (banks, width), "{f:?}");
                assert!((f.best.cycles_per_way - 1.0).abs() < 1e-9);
                assert!(f.separation() > 10.0, "{f:?}");
            }
        }
    }

    #[test]
    fn noisy_tables_still_give_the_layout() {
        for seed in 0..20 {
            for &banks in &[16u64, 32, 64] {
                let (s, c) = table(banks, 4, 1.0, 1.0, 0.05, seed);
                let f = fit_banks(&s, &c).unwrap();
                assert_eq!((f.best.banks, f.best.width_bytes), (banks, 4), "seed {seed}: {f:?}");
                assert!(f.separation() > 1.5 && !f.floored, "seed {seed}: {f:?}");
                assert!((f.best.cycles_per_way - 1.0).abs() < 0.1, "{f:?}");
            }
        }
    }

    #[test]
    fn an_issue_bound_low_end_is_flagged() {
        // Degrees 1 and 2 both cost 2 cycles (the issue rate, not the banks, limits them): the odd
        // strides no longer tell 32 banks of 4 bytes from 16 of 8, and the fit says so.
        let strides: Vec<u64> = (1..=64).collect();
        let c: Vec<f64> = strides.iter().map(|&s| (conflict_degree(s, 32, 4) as f64).max(2.0)).collect();
        let f = fit_banks(&strides, &c).unwrap();
        assert!(f.floored, "{f:?}");
        assert_eq!(f.best.banks * f.best.width_bytes, 128, "the row size is still right: {f:?}");
        // A partial floor (1.5 cycles for a 1-way access) still separates them.
        let c: Vec<f64> = strides.iter().map(|&s| (conflict_degree(s, 32, 4) as f64).max(1.5)).collect();
        let f = fit_banks(&strides, &c).unwrap();
        assert!(!f.floored);
        assert_eq!((f.best.banks, f.best.width_bytes), (32, 4), "{f:?}");
        let t = f.by_degree(&c);
        assert_eq!(t.first(), Some(&(1, 1.5)));
        assert_eq!(t.last(), Some(&(32, 32.0)));
    }

    #[test]
    fn flat_or_bad_tables_give_nothing() {
        let strides: Vec<u64> = (1..=64).collect();
        assert!(fit_banks(&strides, &[5.0; 64]).is_none());
        assert!(fit_banks(&strides[..3], &[1.0, 2.0, 3.0]).is_none());
        let mut c = vec![1.0; 64];
        c[3] = f64::NAN;
        assert!(fit_banks(&strides, &c).is_none());
    }

    #[test]
    fn the_binary_search_finds_the_boundary() {
        let r: Result<Option<u64>, ()> = largest_true(1024, 120_000, 128, |f| Ok(2 * f <= 102_400));
        assert_eq!(r.unwrap(), Some(51_200));
        let r: Result<Option<u64>, ()> = largest_true(1024, 120_000, 128, |_| Ok(false));
        assert_eq!(r.unwrap(), None);
        let r: Result<Option<u64>, ()> = largest_true(1024, 4096, 128, |_| Ok(true));
        assert_eq!(r.unwrap(), Some(4096));
        let e: Result<Option<u64>, &str> =
            largest_true(1024, 4096, 128, |f| if f > 2000 { Err("x") } else { Ok(true) });
        assert_eq!(e, Err("x"));
    }

    #[test]
    fn steps_merge_within_the_tolerance() {
        assert_eq!(distinct_steps(&[8192, 8192, 16384, 16640, 233472, 8192], 256), vec![8192, 16384, 233472]);
        assert!(distinct_steps(&[], 256).is_empty());
    }
}
