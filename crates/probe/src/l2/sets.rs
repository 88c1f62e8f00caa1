//! `l2sets`: the L2 set count from occupancy (`l2ways`): random lines land in the sets
//! like balls in bins, so the fraction of a pool that lies in over-full sets (more pool lines than
//! ways: they miss on every lap) fixes the number of sets through a Poisson tail; the count
//! reported is an L2 size / (ways x line) that the estimate's range confirms.

/// Poisson tail `P(X >= k)` for mean `lambda`.
pub fn poisson_tail(lambda: f64, k: u64) -> f64 {
    let mut term = (-lambda).exp();
    let mut below = 0.0;
    for i in 0..k {
        below += term;
        term *= lambda / (i + 1) as f64;
    }
    (1.0 - below).max(0.0)
}

/// Pure: the number of sets for which `n` random lines leave a fraction `missing` of them in
/// over-full sets (a line misses when at least `ways` other pool lines share its set: Poisson
/// with mean `(n - 1) / sets`). `None` when the fraction is 0 or 1 (no information).
pub fn sets_from_missing(n: usize, ways: u64, missing: f64) -> Option<f64> {
    if !(missing > 0.0 && missing < 1.0) || n < 2 {
        return None;
    }
    // The tail grows with the mean, so bisect on log(sets).
    let (mut lo, mut hi) = (0.0f64, 40.0f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        let lambda = (n - 1) as f64 / mid.exp2();
        if poisson_tail(lambda, ways) > missing {
            lo = mid; // too few sets: too many misses
        } else {
            hi = mid;
        }
    }
    Some((0.5 * (lo + hi)).exp2())
}

/// An occupancy estimate of the number of sets with its 3-sigma range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SetsEstimate {
    pub sets: f64,
    pub lo: f64,
    pub hi: f64,
    pub pool_lines: usize,
    pub missing_fraction: f64,
}

/// Pure: the estimate with a 3-sigma range from the binomial noise of the number of over-full
/// sets (missing lines come in clusters of about `ways + 1`), widened by 2% for model error (sampling from a finite buffer lowers the variance: the estimate runs 0-2% high).
pub fn estimate_sets(n: usize, ways: u64, missing_lines: usize) -> Option<SetsEstimate> {
    let f = missing_lines as f64 / n as f64;
    let sets = sets_from_missing(n, ways, f)?;
    let sigma = (f * (1.0 - f) * (ways + 1) as f64 / n as f64).sqrt();
    let a = sets_from_missing(n, ways, (f + 3.0 * sigma).min(0.999_999)).unwrap_or(0.0);
    let b = sets_from_missing(n, ways, (f - 3.0 * sigma).max(1e-9)).unwrap_or(f64::INFINITY);
    Some(SetsEstimate { sets, lo: a * 0.98, hi: b * 1.02, pool_lines: n, missing_fraction: f })
}

/// Pure: the set count reported: `capacity / (ways * line)` of the candidate capacity
/// (`l2pool::set_candidates`) that is whole and inside the occupancy estimate's range, with the
/// candidate's name; otherwise the reason it is undetermined (every candidate listed). Where the
/// range admits candidates of different set counts (a wide range from few missing lines), none
/// is chosen.
pub fn analyze_l2_sets(
    candidates: &[(u64, String)],
    ways: u64,
    line: u64,
    est: Option<SetsEstimate>,
) -> Result<(u64, String), String> {
    if candidates.is_empty() {
        return Err(
            "no exact L2 size in the run (l2.capacity_bytes of Medium confidence or more, the driver's attribute) to confirm"
                .into(),
        );
    }
    let per_set = ways * line;
    let Some(e) = est else { return Err("the occupancy scan gave no estimate (no line or every line missed)".into()) };
    let show = format!(
        "occupancy estimate {:.0} sets (3 sigma {:.0}..{:.0}; {:.3} of {} random lines missed)",
        e.sets, e.lo, e.hi, e.missing_fraction, e.pool_lines
    );
    let mut tried = Vec::new();
    let mut inside: Vec<(u64, &String)> = Vec::new();
    for (c, what) in candidates {
        if c % per_set != 0 {
            tried.push(format!(
                "{what} {c} bytes is not a whole number of {ways}-way sets of {line} bytes ({:.1})",
                *c as f64 / per_set as f64
            ));
            continue;
        }
        let s = c / per_set;
        if (s as f64) < e.lo || (s as f64) > e.hi {
            tried.push(format!("{what} {c} bytes gives {s} sets, outside the estimate's range"));
            continue;
        }
        inside.push((s, what));
    }
    match inside.as_slice() {
        [] => Err(format!("{}; {show}", tried.join("; "))),
        [(s, what), rest @ ..] if rest.iter().all(|(t, _)| t == s) => Ok((*s, (*what).clone())),
        several => Err(format!(
            "the estimate's range admits {}: not one size; {show}",
            several.iter().map(|(s, what)| format!("{s} sets ({what})")).collect::<Vec<_>>().join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_tail_and_sets_inverse() {
        assert!((poisson_tail(2.0, 0) - 1.0).abs() < 1e-12);
        assert!((poisson_tail(2.0, 1) - (1.0 - (-2.0f64).exp())).abs() < 1e-12);
        let (n, ways, sets) = (40_000usize, 8u64, 5000.0f64);
        let f = poisson_tail((n - 1) as f64 / sets, ways);
        let s = sets_from_missing(n, ways, f).unwrap();
        assert!((s - sets).abs() < 1e-6 * sets, "{s}");
        assert_eq!(sets_from_missing(n, ways, 0.0), None);
    }

    #[test]
    fn sets_analysis() {
        let est =
            SetsEstimate { sets: 36_900.0, lo: 36_000.0, hi: 37_800.0, pool_lines: 500_000, missing_fraction: 0.4 };
        let c = |v: &[u64]| v.iter().map(|&b| (b, format!("c{b}"))).collect::<Vec<_>>();
        assert_eq!(analyze_l2_sets(&c(&[72 << 20]), 16, 128, Some(est)), Ok((36_864, format!("c{}", 72 << 20))));
        assert!(analyze_l2_sets(&c(&[64 << 20]), 16, 128, Some(est)).is_err());
        assert!(analyze_l2_sets(&c(&[(72 << 20) + 128]), 16, 128, Some(est)).is_err());
        assert!(analyze_l2_sets(&[], 16, 128, Some(est)).is_err());
        // The whole L2 of two partitions is out of range; half of it is what one SM sees.
        assert_eq!(analyze_l2_sets(&c(&[144 << 20, 72 << 20]), 16, 128, Some(est)).map(|s| s.0), Ok(36_864));
        // A range wide enough for a half and a third of the driver's size chooses neither.
        let wide = SetsEstimate { lo: 20_000.0, hi: 40_000.0, ..est };
        let why = analyze_l2_sets(&c(&[144 << 20, 72 << 20, 48 << 20]), 16, 128, Some(wide)).unwrap_err();
        assert!(why.contains("admits 36864 sets") && why.contains("24576 sets"), "{why}");
        // The H200 (results/h200/final-run, run B): 60 MiB from the driver, 16 ways of 128 B, the
        // estimate 14591..15432 sets: half the driver's size, 15360 sets, as before the third and
        // the quarter were candidates.
        let h200 =
            SetsEstimate { sets: 15_008.0, lo: 14_591.0, hi: 15_432.0, pool_lines: 236_277, missing_fraction: 0.5076 };
        let d: u64 = 60 << 20;
        let got = analyze_l2_sets(&c(&[d, d / 2, d / 3, d / 4]), 16, 128, Some(h200));
        assert_eq!(got, Ok((15_360, format!("c{}", d / 2))));
    }
}
