//! The latency instrument against a simulated target whose instrument has a cost (docs/TRUST.md): the
//! simulator charges every recorded hop `noise.per_hop_record_ns` and every launch
//! `noise.launch_ns`, as per-hop clock reads and launches do on a GPU. Level latencies must still
//! come out at the hierarchy's own values (they are taken from uninstrumented chases), the overhead
//! must be measured, and the host clock's second opinion must agree. A latency path that timed its
//! own per-hop records would be 9 ns high here and fail.

use memscope_core::{Finding, Target};
use memscope_sim::SimTarget;
use std::collections::BTreeMap;

fn run(t: &mut dyn Target, keys: &[&str]) -> BTreeMap<String, Finding> {
    let probes: Vec<_> = memscope_probe::probes().into_iter().filter(|p| keys.contains(&p.key())).collect();
    memscope_session::Session::silent(false).run_probes_on(t, probes.iter().map(|p| p.as_ref())).expect_ok().findings
}

#[test]
fn level_latencies_exclude_the_per_hop_instrument() {
    let mut h = memscope_sim::presets::rtx4090();
    h.noise.per_hop_record_ns = 9.0;
    h.noise.launch_ns = 4000.0;
    let want = [("l1.hit_latency_ns", h.l1.hit_ns), ("l2.hit_latency_ns", h.l2.hit_ns)];
    let mut t = SimTarget::new(h).unwrap();
    let f = run(&mut t, &["line", "latency"]);
    for (key, ns) in want {
        let got = &f[key];
        let v = got.as_f64().unwrap();
        assert!((v - ns).abs() <= 0.01 * ns, "{key}: {v} ns, want {ns} ({got:?})");
        let check = got.check.as_ref().unwrap_or_else(|| panic!("{key} has no second opinion"));
        assert!(check.agrees, "{key}: host clock {} vs {v} ({check:?})", check.value);
        assert!(got.spread.is_some() && got.cycles.is_some(), "{key}: {got:?}");
    }
    let ovh = f["latency.per_hop_overhead_ns"].as_f64().unwrap();
    assert!((ovh - 9.0).abs() < 0.5, "overhead {ovh}");
    // DRAM: the mean of cold laps carries the page's first TLB miss and row hits, so the
    // hierarchy's latency is matched within 5%; the second opinion still agrees.
    let dram = &f["dram.latency_ns"];
    let v = dram.as_f64().unwrap();
    assert!((v - 255.4).abs() <= 0.05 * 255.4, "dram {v} ({dram:?})");
    assert!(dram.check.as_ref().is_some_and(|c| c.agrees), "{dram:?}");
    // The segment one SM sees is reported on every target with per-hop times.
    assert!(f.contains_key("l2.segment_capacity_bytes"), "{:?}", f.keys().collect::<Vec<_>>());
}

#[test]
fn a_second_opinion_that_disagrees_lowers_confidence() {
    use memscope_core::Confidence;
    let f = Finding::number(100.0, "ns", "m", Confidence::High).with_check(110.0, "other", 0.03);
    let c = f.check.as_ref().unwrap();
    assert!(!c.agrees && (c.rel_diff - 0.1).abs() < 1e-12);
    assert_eq!(f.confidence, Confidence::Medium);
    assert!(f.note.as_deref().unwrap().contains("10.0%"), "{:?}", f.note);
    let g = Finding::number(100.0, "ns", "m", Confidence::High).with_check(102.0, "other", 0.03);
    assert!(g.check.unwrap().agrees && g.confidence == Confidence::High);
}
