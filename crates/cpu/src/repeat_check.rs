//! The within-run repeatability check of `cpu.latency`'s capacities (docs/TRUST.md, "Discovery on
//! unusual hierarchies"): each footprint's repeats are split in time order into an earlier and a
//! later half, the levels are read again from each half's fastest-repeat curve, and a capacity
//! that the two halves do not reproduce within [`AGREEMENT`] is reported undetermined with the
//! three values, instead of a number that moves from run to run. On a shared machine the other
//! processes that run on the same core between the chase's time slices evict its lines, so what
//! a level holds for the chase changes with the load; the halves see the load at different times.

use memscope_core::keys;
use memscope_core::{Finding, ProbeOutput};

/// Capacities read from the two halves must agree with the whole run's within this fraction.
pub const AGREEMENT: f64 = 0.10;

/// Each footprint's repeats in time order, split into the earlier and the later half (a footprint
/// with a single repeat gives it to both).
pub fn halves(samples: &[Vec<f64>]) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    samples
        .iter()
        .map(|s| {
            let mid = s.len() / 2;
            if mid == 0 {
                (s.clone(), s.clone())
            } else {
                (s[..mid].to_vec(), s[mid..].to_vec())
            }
        })
        .unzip()
}

/// The fastest repeat of each footprint.
pub fn fastest(samples: &[Vec<f64>]) -> Vec<f64> {
    samples.iter().map(|s| s.iter().cloned().fold(f64::INFINITY, f64::min)).collect()
}

/// Whether any footprint has two repeats or more (else the halves are the run itself).
pub fn splittable(samples: &[Vec<f64>]) -> bool {
    samples.iter().any(|s| s.len() >= 2)
}

/// Replace each cache capacity of `out` that `earlier` and `later` (the same analysis on the two
/// halves) do not reproduce within [`AGREEMENT`] by an undetermined finding naming the values.
pub fn apply(out: &mut ProbeOutput, earlier: &ProbeOutput, later: &ProbeOutput) {
    for level in ["l1d", "l2", "l3"] {
        let key = keys::cpu_capacity_bytes(level);
        let Some(whole) = out.findings.get(&key).and_then(|f| f.value.as_f64()) else { continue };
        let half = |o: &ProbeOutput| o.findings.get(&key).and_then(|f| f.value.as_f64());
        let (a, b) = (half(earlier), half(later));
        let agrees = |v: Option<f64>| v.is_some_and(|v| (v / whole - 1.0).abs() <= AGREEMENT);
        if agrees(a) && agrees(b) {
            continue;
        }
        let show = |v: Option<f64>| v.map_or("no such level".to_string(), |v| format!("{v:.0} B"));
        let method = out.findings[&key].method.clone();
        out.findings.insert(
            key,
            Finding::undetermined(
                "bytes",
                &method,
                &format!(
                    "the capacity moves within the run: {whole:.0} B from all repeats, {} from the earlier half of each footprint's repeats, {} from the later half (more than {:.0} % apart); other processes running on the core between the chase's time slices evict its lines, so what the level holds for it changes with the load",
                    show(a),
                    show(b),
                    AGREEMENT * 100.0
                ),
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_core::Confidence;

    fn with(level_bytes: f64) -> ProbeOutput {
        let mut o = ProbeOutput::default();
        o.finding(
            &keys::cpu_capacity_bytes("l2"),
            Finding::integer(level_bytes as u64, "bytes", "m", Confidence::Medium),
        );
        o
    }

    #[test]
    fn halves_split_in_time_order() {
        let (a, b) = halves(&[vec![1.0, 2.0, 3.0, 4.0], vec![5.0]]);
        assert_eq!(a, vec![vec![1.0, 2.0], vec![5.0]]);
        assert_eq!(b, vec![vec![3.0, 4.0], vec![5.0]]);
        assert_eq!(fastest(&b), vec![3.0, 5.0]);
        assert!(splittable(&[vec![1.0], vec![1.0, 2.0]]) && !splittable(&[vec![1.0]]));
    }

    #[test]
    fn a_capacity_the_halves_do_not_reproduce_is_undetermined() {
        let mut out = with(2_000_000.0);
        apply(&mut out, &with(1_950_000.0), &with(2_100_000.0));
        assert_eq!(out.findings["cpu.l2.capacity_bytes"].as_f64(), Some(2_000_000.0));
        apply(&mut out, &with(1_500_000.0), &with(2_000_000.0));
        let f = &out.findings["cpu.l2.capacity_bytes"];
        assert!(f.value.is_null());
        assert!(f.note.as_deref().unwrap().contains("1500000 B from the earlier half"), "{:?}", f.note);
        let mut out = with(2_000_000.0);
        apply(&mut out, &ProbeOutput::default(), &with(2_000_000.0));
        assert!(out.findings["cpu.l2.capacity_bytes"].note.as_deref().unwrap().contains("no such level"));
    }
}
