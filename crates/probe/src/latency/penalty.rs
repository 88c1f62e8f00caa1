//! `penalty`: miss penalties per level ("the difference between the level's hit and the
//! next level's hit, as measured by the same instrument"), from the `latency` probe's findings:
//! the L1 miss penalty is the L2 hit through the L1-cached path less the L1 hit, the L2 miss
//! penalty DRAM less the near-L2 hit, the far-partition penalty the far-L2 hit less the near one.
//! Each says whether its two terms come from the same instrument (seed 000's whole-chase time over
//! hops, `Meter::latency` / `Meter::cold_latency`) or not (the far-L2 level comes from per-hop
//! records less their measured overhead). Generic: runs on the simulator too.

use crate::measure::gpu_applicability;
use memscope_core::keys;
use memscope_core::{Applicability, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo};
use std::collections::BTreeMap;

pub struct PenaltyProbe;

/// (penalty key, hit key, next level's key, what the penalty is).
pub const PAIRS: [(&str, &str, &str, &str); 3] = [
    (
        keys::L1_MISS_PENALTY_NS,
        keys::L1_HIT_LATENCY_NS,
        keys::L2_HIT_LATENCY_L1_PATH_NS,
        "l2.hit_latency_l1_path_ns less l1.hit_latency_ns (an L1 miss served by L2, through the L1-cached path)",
    ),
    (
        keys::L2_MISS_PENALTY_NS,
        keys::L2_HIT_LATENCY_NS,
        keys::DRAM_LATENCY_NS,
        "dram.latency_ns less l2.hit_latency_ns (L1-bypassing loads)",
    ),
    (
        keys::L2_FAR_PENALTY_NS,
        keys::L2_HIT_LATENCY_NS,
        keys::L2_FAR_HIT_LATENCY_NS,
        "l2.far_hit_latency_ns less l2.hit_latency_ns (the far partition's extra distance)",
    ),
];

/// Whether a finding's method is seed 000's uninstrumented whole-chase instrument.
fn whole_chase(f: &Finding) -> bool {
    f.method.starts_with("uninstrumented")
}

/// The penalty of `next` over `hit`: their difference in ns and, where both have them, cycles;
/// undetermined when either is missing or undetermined. The note names both terms' values and
/// whether they come from the same instrument; the confidence is the weaker of the two, one step
/// lower when the instruments differ.
pub fn penalty(hit: Option<&Finding>, next: Option<&Finding>, what: &str) -> Finding {
    let (h, n) = match (hit, next) {
        (Some(h), Some(n)) => (h, n),
        _ => return Finding::undetermined("ns", what, "a term was not measured in this run"),
    };
    let (Some(hv), Some(nv)) = (h.as_f64(), n.as_f64()) else {
        let why = [(h, "hit"), (n, "next level")]
            .iter()
            .filter(|(f, _)| f.as_f64().is_none())
            .map(|(f, w)| format!("the {w} is undetermined ({})", f.note.clone().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join("; ");
        return Finding::undetermined("ns", what, &why);
    };
    let rank = |c: Confidence| -> u8 {
        match c {
            Confidence::High => 3,
            Confidence::Medium => 2,
            Confidence::Low => 1,
            Confidence::Undetermined => 0,
        }
    };
    let same = whole_chase(h) && whole_chase(n);
    let mut r = rank(h.confidence).min(rank(n.confidence));
    if !same {
        r = r.saturating_sub(1).max(1);
    }
    let conf = match r {
        3 => Confidence::High,
        2 => Confidence::Medium,
        _ => Confidence::Low,
    };
    let mut f = Finding::number(nv - hv, "ns", what, conf);
    if let (Some(a), Some(b)) = (h.cycles, n.cycles) {
        f = f.with_cycles(b - a);
    }
    let instrument = if same {
        "both terms from the same instrument (uninstrumented whole-chase time over hops)".to_string()
    } else {
        format!("the terms come from different instruments: hit by \"{}\"; next level by \"{}\"", h.method, n.method)
    };
    f.with_note(&format!("{nv:.2} ns - {hv:.2} ns; {instrument}"))
}

/// Every penalty the findings allow.
pub fn analyze(earlier: &BTreeMap<String, Finding>) -> Vec<(&'static str, Finding)> {
    PAIRS.iter().map(|&(k, a, b, what)| (k, penalty(earlier.get(a), earlier.get(b), what))).collect()
}

impl Probe for PenaltyProbe {
    fn key(&self) -> &'static str {
        "penalty"
    }
    fn description(&self) -> &'static str {
        "miss penalties per level (L1, L2, far L2 partition) from the latency probe's levels"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        gpu_applicability(info, true)
    }
    fn needs(&self) -> &'static [&'static str] {
        &["latency"]
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let mut out = ProbeOutput::default();
        for (k, f) in analyze(ctx.earlier) {
            out.finding(k, f);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lat(ns: f64, cycles: f64, method: &str) -> Finding {
        Finding::number(ns, "ns", method, Confidence::High).with_cycles(cycles)
    }

    #[test]
    fn penalties_from_levels_say_their_instruments() {
        let u = "uninstrumented pointer chase on SM 0 (...)";
        let mut e = BTreeMap::new();
        e.insert(keys::L1_HIT_LATENCY_NS.to_string(), lat(19.5, 37.0, u));
        e.insert(keys::L2_HIT_LATENCY_L1_PATH_NS.to_string(), lat(140.0, 266.0, u));
        e.insert(keys::L2_HIT_LATENCY_NS.to_string(), lat(135.0, 256.5, u));
        e.insert(keys::DRAM_LATENCY_NS.to_string(), lat(480.0, 912.0, "uninstrumented cold laps over 4096 lines"));
        e.insert(
            keys::L2_FAR_HIT_LATENCY_NS.to_string(),
            Finding::number(210.0, "ns", "intermediate plateau, less the per-hop overhead", Confidence::Medium),
        );
        let got: BTreeMap<_, _> = analyze(&e).into_iter().collect();
        let l1 = &got[keys::L1_MISS_PENALTY_NS];
        assert!((l1.as_f64().unwrap() - 120.5).abs() < 1e-9 && l1.cycles == Some(229.0), "{l1:?}");
        assert_eq!(l1.confidence, Confidence::High);
        assert!(l1.note.as_ref().unwrap().contains("same instrument"));
        assert!((got[keys::L2_MISS_PENALTY_NS].as_f64().unwrap() - 345.0).abs() < 1e-9);
        let far = &got[keys::L2_FAR_PENALTY_NS];
        assert!((far.as_f64().unwrap() - 75.0).abs() < 1e-9 && far.cycles.is_none(), "{far:?}");
        assert_eq!(far.confidence, Confidence::Low);
        assert!(far.note.as_ref().unwrap().contains("different instruments"), "{far:?}");
        // A missing or undetermined term: undetermined, with the reason.
        e.insert(keys::L2_FAR_HIT_LATENCY_NS.to_string(), Finding::undetermined("ns", "sweep", "one partition"));
        e.remove(keys::L1_HIT_LATENCY_NS);
        let got: BTreeMap<_, _> = analyze(&e).into_iter().collect();
        assert!(got[keys::L1_MISS_PENALTY_NS].as_f64().is_none());
        let far = &got[keys::L2_FAR_PENALTY_NS];
        assert!(far.as_f64().is_none() && far.note.as_ref().unwrap().contains("one partition"), "{far:?}");
    }
}
