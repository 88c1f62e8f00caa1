//! The TLB probe's pure analyses (seed 000 footnote 8 and appendix "Page tables and the TLB"):
//! where p sits in each block, the page from the sharing outcomes, the replacement from the hot
//! page's misses, per-position means of a paired chase's hops and a trimmed mean with its standard
//! error. Tested on synthetic outcomes.

use memscope_core::Confidence;

/// p's offset inside block `i`: below 32 KiB, one distinct 128-byte slot per block for the first
/// 256 blocks (an odd multiplier is a bijection modulo 256), so the lines spread over cache sets.
pub fn p_offset(i: u64) -> u64 {
    ((i * 2_654_435_761) % 256) * 128
}

/// Pure: the page is the smallest distance d at which q stops sharing p's translation, given
/// (d, still shares) in ascending d, provided every larger d agrees.
pub fn analyze_page(outcomes: &[(u64, bool)]) -> Option<u64> {
    let i = outcomes.iter().position(|o| !o.1)?;
    outcomes[i..].iter().all(|o| !o.1).then_some(outcomes[i].0)
}

/// Pure: classify replacement from the hot page's miss fraction and the cold pages' miss
/// fraction of a walk over entries + 1 pages in which the hot page is visited `hot_per_lap`
/// times a lap (FIFO evicts it once a lap: a fraction 1 / hot_per_lap of its hops miss).
pub fn analyze_replacement(hot_miss: f64, cold_miss: f64, hot_per_lap: u64) -> Result<&'static str, String> {
    let e = hot_per_lap.max(1) as f64;
    if cold_miss < 0.8 {
        return Err(format!("the cold pages missed on only {:.0}% of hops: neither LRU nor FIFO", cold_miss * 100.0));
    }
    // The decision boundary lies half way between LRU's 0 and FIFO's 1/e, with no gap between
    // the two: a noisy LRU (the hot-page estimate scatters by about 0.05 on the H200) must not
    // flip between "lru" and undetermined from run to run. `replacement_confidence` says how
    // close to the boundary a value is.
    if hot_miss < 0.5 / e {
        Ok("lru")
    } else if hot_miss < 3.0 / e {
        Ok("fifo")
    } else {
        Err(format!(
            "the hot page missed on {:.2}% of its hops: neither LRU (0) nor FIFO (~{:.1}%)",
            hot_miss * 100.0,
            100.0 / e
        ))
    }
}

/// High when the hot page's miss fraction lies within a fifth of FIFO's 1/e of LRU's 0 or of FIFO's
/// value, Medium between (nearer the boundary).
pub fn replacement_confidence(hot_miss: f64, hot_per_lap: u64) -> Confidence {
    let e = hot_per_lap.max(1) as f64;
    if hot_miss < 0.2 / e || (hot_miss - 1.0 / e).abs() < 0.2 / e {
        Confidence::High
    } else {
        Confidence::Medium
    }
}

/// Per-position mean hop over the laps of a single-chain chase whose recorded lap starts at the
/// cycle's first address: hops further than six robust deviations from their position's median
/// (outliers, refresh stalls) are dropped. `None` without per-hop times.
pub fn position_means(per_hop_ns: &[f64], len: usize) -> Option<Vec<f64>> {
    if per_hop_ns.len() < len || len == 0 {
        return None;
    }
    let mut by_pos: Vec<Vec<f64>> = vec![Vec::with_capacity(per_hop_ns.len() / len + 1); len];
    for (j, x) in per_hop_ns.iter().enumerate() {
        by_pos[j % len].push(*x);
    }
    let medians: Vec<f64> = by_pos.iter().map(|v| memscope_core::stats::median(v)).collect();
    let devs: Vec<f64> = by_pos.iter().zip(&medians).flat_map(|(v, m)| v.iter().map(move |x| (x - m).abs())).collect();
    let band = (6.0 * 1.4826 * memscope_core::stats::median(&devs)).max(1e-3);
    Some(
        by_pos
            .iter()
            .zip(&medians)
            .map(|(v, m)| {
                let kept: Vec<f64> = v.iter().copied().filter(|x| (x - m).abs() <= band).collect();
                kept.iter().sum::<f64>() / kept.len().max(1) as f64
            })
            .collect(),
    )
}

/// Mean and standard error of paired differences after trimming a tenth at each end (lines whose
/// cache state differed between two orders are the tails).
pub fn trimmed_mean_se(mut d: Vec<f64>) -> (f64, f64) {
    d.sort_by(|a, b| a.total_cmp(b));
    let cut = d.len() / 10;
    let kept = &d[cut..d.len() - cut];
    let n = kept.len().max(1) as f64;
    let m = kept.iter().sum::<f64>() / n;
    let var = kept.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, (var / n).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_and_replacement_analysis() {
        let o = [(4096, true), (8192, true), (65536, false), (131072, false)];
        assert_eq!(analyze_page(&o), Some(65536));
        assert_eq!(analyze_page(&[(4096, true), (8192, false), (16384, true)]), None);
        assert_eq!(analyze_page(&[(4096, true), (8192, true)]), None);
        assert_eq!(analyze_replacement(0.0, 1.0, 4), Ok("lru"));
        assert_eq!(analyze_replacement(0.25, 1.0, 4), Ok("fifo"));
        // Half way between LRU's 0 and FIFO's 0.25 decides, with no undetermined gap; near it the
        // confidence is lower.
        assert_eq!(analyze_replacement(0.092, 1.0, 4), Ok("lru"));
        assert_eq!(analyze_replacement(0.13, 1.0, 4), Ok("fifo"));
        assert_eq!(replacement_confidence(0.092, 4), Confidence::Medium);
        assert_eq!(replacement_confidence(0.03, 4), Confidence::High);
        assert_eq!(replacement_confidence(0.24, 4), Confidence::High);
        assert!(analyze_replacement(0.9, 1.0, 4).is_err());
        assert!(analyze_replacement(0.0, 0.3, 4).is_err());
        let pm = position_means(&[1.0, 10.0, 1.2, 10.2, 900.0, 10.1, 0.8, 9.9], 2).unwrap();
        assert!((pm[0] - 1.0).abs() < 1e-9 && (pm[1] - 10.05).abs() < 1e-9, "{pm:?}");
        let (m, _) = trimmed_mean_se((0..20).map(|i| if i == 0 { 100.0 } else { 1.0 }).collect());
        assert_eq!(m, 1.0);
    }

    #[test]
    fn p_offsets_are_distinct_slots_below_32k() {
        let mut v: Vec<u64> = (0..256).map(p_offset).collect();
        assert!(v.iter().all(|o| *o < 32 << 10 && o % 128 == 0));
        v.sort();
        v.dedup();
        assert_eq!(v.len(), 256);
    }
}
