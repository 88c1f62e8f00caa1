//! The within-run repeatability check of `cpu.latency`'s capacities (docs/TRUST.md, "The CPU
//! lane's capacities on a shared machine"): each footprint's repeats, in time order, are dealt
//! alternately into two halves (the 1st, 3rd, 5th ... and the 2nd, 4th, 6th ...), the levels are
//! read again from each half's fastest-repeat curve, and a capacity that the two halves do not
//! reproduce within [`AGREEMENT`] is reported undetermined with the three values, instead of a
//! number that moves from run to run. The capacities come from the fastest repeats, because other
//! processes (and, on a shared host, other guests on the same core or its sibling hyperthread)
//! only ever add latency; each half spans the whole run, so both see its quiet moments, and they
//! agree when those moments were enough to give every footprint near a step an undisturbed
//! repeat, and disagree when the value rests on a single lucky repeat or on none.

use memscope_core::keys;
use memscope_core::{Finding, ProbeOutput};

/// Capacities read from the two halves must agree with the whole run's within this fraction.
pub const AGREEMENT: f64 = 0.10;

/// Each footprint's repeats in time order, dealt alternately into two halves (a footprint with a
/// single repeat gives it to both).
pub fn halves(samples: &[Vec<f64>]) -> (Vec<Vec<f64>>, Vec<Vec<f64>>) {
    samples
        .iter()
        .map(|s| {
            if s.len() < 2 {
                (s.clone(), s.clone())
            } else {
                (s.iter().step_by(2).copied().collect(), s.iter().skip(1).step_by(2).copied().collect())
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
                    "the capacity moves within the run: {whole:.0} B from all repeats, {} from one half of each footprint's repeats (dealt alternately), {} from the other (more than {:.0} % apart); other processes on the core or its sibling evicted the chase's lines in most repeats near the step, so its fastest repeat is not yet the undisturbed level",
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
    fn halves_deal_the_repeats_alternately() {
        let (a, b) = halves(&[vec![1.0, 2.0, 3.0, 4.0, 5.0], vec![5.0]]);
        assert_eq!(a, vec![vec![1.0, 3.0, 5.0], vec![5.0]]);
        assert_eq!(b, vec![vec![2.0, 4.0], vec![5.0]]);
        assert_eq!(fastest(&b), vec![2.0, 5.0]);
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
        assert!(f.note.as_deref().unwrap().contains("1500000 B from one half"), "{:?}", f.note);
        let mut out = with(2_000_000.0);
        apply(&mut out, &ProbeOutput::default(), &with(2_000_000.0));
        assert!(out.findings["cpu.l2.capacity_bytes"].note.as_deref().unwrap().contains("no such level"));
    }
}
