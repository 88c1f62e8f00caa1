//! The `penalty` probe on a simulated hierarchy with known latencies (docs/SM_MEMORIES.md; miss penalties):
//! after `line` and `latency`, the L1 miss penalty is the simulated L2 hit less the L1 hit, the
//! far-partition penalty the far hit less the near one, and the L2 miss penalty DRAM less the near
//! hit (the simulator's refresh waits add their mean to DRAM; outliers cancel in each difference of
//! one instrument).

use memscope_core::{keys, Finding, Probe};
use memscope_probe::{l1::line::LineProbe, latency::penalty::PenaltyProbe, latency::LatencyProbe};
use memscope_sim::hierarchy::Hierarchy;
use memscope_sim::SimTarget;
use std::collections::BTreeMap;

#[test]
fn penalties_match_the_simulated_levels() {
    let mut h = Hierarchy { name: "penalty".into(), seed: 31, ..Hierarchy::default() };
    h.page_bytes = 64 << 10;
    h.l1.hit_ns = 20.0;
    h.l2.slices = 4;
    h.l2.ways = 8;
    h.l2.sets_per_slice = 512;
    h.l2.hit_ns = 100.0;
    h.l2.partitions = 2;
    h.l2.far_hit_ns = Some(160.0);
    h.dram.latency_ns = 300.0;
    h.dram.refresh_stall_ns = 200.0;
    h.dram.refresh_fraction = 0.02;
    h.noise.jitter_ns = 2.0;
    h.noise.outlier_fraction = 0.01;
    h.noise.seed = 31;
    let mut t = SimTarget::new(h.clone()).unwrap();
    let probes: [&dyn Probe; 3] = [&LineProbe, &LatencyProbe, &PenaltyProbe];
    let found: BTreeMap<String, Finding> =
        memscope_session::Session::silent(false).run_probes_on(&mut t, probes).expect_ok().findings;
    let num = |k: &str| found.get(k).and_then(|f| f.as_f64());
    let close = |k: &str, want: f64, tol: f64| {
        let got = num(k);
        assert!(
            got.is_some_and(|g| (g - want).abs() <= tol),
            "{k}: got {got:?}, want {want} +- {tol} ({:?})",
            found.get(k)
        );
    };
    close(keys::L1_MISS_PENALTY_NS, h.l2.hit_ns - h.l1.hit_ns, 2.0);
    // The far level is a median of per-hop times (outliers drop out), the near hit a mean over
    // every hop (the outliers' mean included): the instruments differ, and so does the penalty by
    // that mean. The probe's note says the terms come from different instruments.
    let outliers = h.noise.outlier_fraction * h.noise.outlier_ns / 2.0;
    close(keys::L2_FAR_PENALTY_NS, 160.0 - (h.l2.hit_ns + outliers), 2.0);
    let refresh = h.dram.refresh_fraction * h.dram.refresh_stall_ns / 2.0;
    close(keys::L2_MISS_PENALTY_NS, h.dram.latency_ns + refresh - h.l2.hit_ns, 5.0);
    let note = |k: &str| found[k].note.clone().unwrap_or_default();
    assert!(note(keys::L1_MISS_PENALTY_NS).contains("same instrument"), "{}", note(keys::L1_MISS_PENALTY_NS));
    assert!(note(keys::L2_FAR_PENALTY_NS).contains("different instruments"), "{}", note(keys::L2_FAR_PENALTY_NS));
}
