//! Shared checks of the tests that replay recorded latency curves (crate::latency's tests and the
//! *_curve_tests modules): a capacity read on each run, the disturbed runs undetermined, and how
//! far apart the determined values lie.

use crate::latency::analyze_pairs;
use memscope_core::Finding;

/// max / min - 1 of `v` (the spread the repeat campaigns hold to 10 %).
pub fn spread(v: &[f64]) -> f64 {
    let (lo, hi) = v.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    hi / lo - 1.0
}

/// The finding `key` of each run ("footprint_bytes:latency_ns" pairs, on a host whose OS reports
/// an L1d of `os_l1d_bytes`): the runs of `disturbed` must be undetermined and pass `why` (their
/// finding), every other run determined; returns the determined values in run order.
pub fn read_except(
    runs: &[(&str, &str)],
    key: &str,
    os_l1d_bytes: Option<f64>,
    disturbed: &[&str],
    why: impl Fn(&str, &Finding),
) -> Vec<f64> {
    let mut determined = Vec::new();
    for (run, text) in runs {
        let f = analyze_pairs(text, os_l1d_bytes).findings[key].clone();
        match (disturbed.contains(run), f.as_f64()) {
            (true, v) => {
                assert_eq!(v, None, "{run}");
                why(run, &f);
            }
            (false, Some(v)) => determined.push(v),
            (false, None) => panic!("{run}: {:?}", f.note),
        }
    }
    determined
}

/// A `why` for [`read_except`]: the note contains `text`.
pub fn note_contains(text: &'static str) -> impl Fn(&str, &Finding) {
    move |run, f| assert!(f.note.as_deref().unwrap_or("").contains(text), "{run}: {:?}", f.note)
}
