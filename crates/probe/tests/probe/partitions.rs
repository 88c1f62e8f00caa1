//! The latency probe on simulated hierarchies (`latency`): the exact L2 capacity seen from
//! one SM (reverse-lap count of retained lines) and the far-L2 level of a partitioned L2 (the
//! simulator's near/far partition mode, `l2.partitions` = 2 and `l2.far_hit_ns`).

use memscope_core::{Finding, Probe, Target};
use memscope_probe::{l1::line::LineProbe, latency::LatencyProbe};
use memscope_sim::hierarchy::{Hierarchy, Indexing, Replacement};
use memscope_sim::SimTarget;
use std::collections::BTreeMap;

fn latency(t: &mut dyn Target) -> BTreeMap<String, Finding> {
    let probes: [&dyn Probe; 2] = [&LineProbe, &LatencyProbe];
    memscope_session::Session::silent(false).run_probes_on(t, probes).expect_ok().findings
}

fn num(f: &BTreeMap<String, Finding>, k: &str) -> Option<f64> {
    f.get(k).and_then(|x| x.value.as_f64())
}

/// A small L2 with the given partitioning, noise and policy.
fn small(seed: u64, partitions: u32, replacement: Replacement, indexing: Indexing) -> Hierarchy {
    let mut h = Hierarchy { name: format!("partitions-{seed}"), seed, ..Hierarchy::default() };
    h.page_bytes = 64 << 10;
    h.l1.hit_ns = 20.0;
    h.l2.slices = 4;
    h.l2.ways = 8;
    h.l2.sets_per_slice = 512;
    h.l2.replacement = replacement;
    h.l2.indexing = indexing;
    h.l2.hit_ns = 100.0;
    h.l2.partitions = partitions;
    h.l2.far_hit_ns = (partitions > 1).then_some(160.0);
    h.dram.latency_ns = 260.0;
    h.dram.refresh_stall_ns = 200.0;
    h.dram.refresh_fraction = 0.02;
    h.noise.jitter_ns = 2.0;
    h.noise.outlier_fraction = 0.01;
    h.noise.seed = seed;
    h
}

#[test]
fn l2_capacity_is_exact_on_one_partition() {
    for (seed, rep, ind) in [
        (1, Replacement::Lru, Indexing::Physical),
        (2, Replacement::Rrip, Indexing::Virtual),
        (3, Replacement::Rrip, Indexing::Physical),
    ] {
        let h = small(seed, 1, rep, ind);
        let want = (h.l2.slices * h.l2.sets_per_slice * h.l2.ways * h.l2.line_bytes) as f64;
        let f = latency(&mut SimTarget::new(h).unwrap());
        let got = num(&f, "l2.capacity_bytes");
        assert_eq!(got, Some(want), "seed {seed}: {:?}", f.get("l2.capacity_bytes"));
        assert!(f["l2.far_hit_latency_ns"].value.as_f64().is_none(), "seed {seed}: {:?}", f["l2.far_hit_latency_ns"]);
    }
}

#[test]
fn far_l2_partition_is_recovered() {
    // Far hits in the middle, close to DRAM (a far/DRAM mix has a DRAM-like mean) and close to the
    // near hit; LRU and RRIP.
    for (seed, rep, far) in [
        (4, Replacement::Lru, 160.0),
        (5, Replacement::Rrip, 160.0),
        (6, Replacement::Rrip, 225.0),
        (7, Replacement::Lru, 125.0),
    ] {
        let mut h = small(seed, 2, rep, Indexing::Physical);
        h.l2.far_hit_ns = Some(far);
        let f = latency(&mut SimTarget::new(h.clone()).unwrap());
        let got = num(&f, "l2.far_hit_latency_ns");
        assert!(
            got.is_some_and(|g| (g - far).abs() <= 0.02 * far),
            "seed {seed}: {:?}",
            f.get("l2.far_hit_latency_ns")
        );
        // The near hit is a mean over every hop: the noise's outliers (uniform in (0, outlier_ns])
        // add their mean.
        let near = num(&f, "l2.hit_latency_ns").unwrap();
        let want = h.l2.hit_ns + h.noise.outlier_fraction * h.noise.outlier_ns / 2.0;
        assert!(
            (near - want).abs() <= 0.02 * want,
            "seed {seed}: near {near}, want {want} ({:?})",
            f.get("l2.hit_latency_ns")
        );
        // Seen from one SM: more than the near partition, less than both.
        let cap = num(&f, "l2.capacity_bytes").unwrap();
        let all = (h.l2.slices * h.l2.sets_per_slice * h.l2.ways * h.l2.line_bytes) as f64;
        assert!(cap > 0.5 * all && cap < all, "seed {seed}: {:?}", f.get("l2.capacity_bytes"));
    }
}

#[test]
fn rtx4090_l2_capacity() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let h = t.hierarchy().clone();
    let f = latency(&mut t);
    let want = (h.l2.slices * h.l2.sets_per_slice * h.l2.ways * h.l2.line_bytes) as f64;
    assert_eq!(num(&f, "l2.capacity_bytes"), Some(want), "{:?}", f.get("l2.capacity_bytes"));
}
