//! The within-run repeatability check of `cpu.latency`'s capacities (docs/TRUST.md, "The CPU
//! lane's capacities on a shared machine"): each footprint's placements (random draws of the
//! buffer's 4 KiB pages, the same for every footprint; crate::latency_sweep) are dealt
//! alternately into two halves (the 1st, 3rd, 5th ... and the 2nd, 4th, 6th ...), the levels
//! are read again from each half's curve (the median over its placements of each placement's
//! fastest repeat), and a capacity that the two halves do not reproduce within [`AGREEMENT`] is
//! reported undetermined with the three values, instead of a number that moves from run to run.
//! The halves differ in the draw of pages and in the moments their repeats ran, which are what
//! differs from one run to the next: where they agree, the capacity does not rest on a lucky
//! draw of pages or on a repeat that other processes (or, on a shared host, other guests on the
//! same core or its sibling hyperthread) disturbed.

use memscope_core::keys;
use memscope_core::{Finding, ProbeOutput};

/// Capacities read from the two halves must agree with the whole run's within this fraction.
pub const AGREEMENT: f64 = 0.10;

/// Each footprint's placements (their fastest repeats), dealt alternately into two halves (a
/// footprint with a single value gives it to both).
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

/// The value of each footprint (crate::latency_sweep::footprint_value: the median over its
/// placements).
pub fn values(samples: &[Vec<f64>]) -> Vec<f64> {
    samples.iter().map(|s| crate::latency_sweep::footprint_value(s)).collect()
}

/// Whether any footprint has two values or more (else the halves are the run itself).
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
                    "the capacity moves within the run: {whole:.0} B from all placements, {} from one half of them (dealt alternately), {} from the other (more than {:.0} % apart): the value rests on the draw of pages or on repeats that other processes (on the core or its sibling) disturbed near the step",
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
    fn halves_deal_the_placements_alternately() {
        let (a, b) = halves(&[vec![1.0, 2.0, 3.0, 4.0, 5.0], vec![5.0]]);
        assert_eq!(a, vec![vec![1.0, 3.0, 5.0], vec![5.0]]);
        assert_eq!(b, vec![vec![2.0, 4.0], vec![5.0]]);
        assert_eq!(values(&a), vec![3.0, 5.0]);
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
