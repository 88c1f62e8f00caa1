//! The `tlb` probe alone on random simulated hierarchies ("Hidden hierarchies": TLB 8..64
//! entries, pages 64 KiB..2 MiB, LRU or FIFO, misses of 2..20 ns, small L2s with plain or physical
//! indexing, jitter up to 2% of the L2 hit and 1% outliers): entries, page, miss cost within 2%,
//! replacement and scope must come out exactly. About 25 s in CI (40 hierarchies); `MEMSCOPE_TLB_SEEDS=a..b`
//! picks other seeds.

use memscope_core::{Finding, Probe};
use memscope_probe::tlb::TlbProbe;
use memscope_sim::hierarchy::{Hierarchy, Indexing, Replacement};
use memscope_sim::SimTarget;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

fn random_tlb_hierarchy(seed: u64) -> Hierarchy {
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x7157);
    let mut h = Hierarchy { name: format!("tlb-random-{seed}"), seed, ..Hierarchy::default() };
    let pick = |r: &mut rand_chacha::ChaCha8Rng, v: &[u64]| v[r.gen_range(0..v.len())];
    h.page_bytes = pick(&mut r, &[64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20]);
    h.clock_hz = r.gen_range(1.0e9..2.8e9);
    h.tlb.entries = r.gen_range(8..=64);
    h.tlb.miss_ns = r.gen_range(2.0..20.0);
    h.tlb.replacement = if r.gen_bool(0.6) { Replacement::Lru } else { Replacement::Fifo };
    h.l1.hit_ns = r.gen_range(10.0..40.0);
    h.l2.slices = pick(&mut r, &[1, 2, 4]) as u32;
    h.l2.ways = r.gen_range(4..=16);
    h.l2.sets_per_slice = pick(&mut r, &[256, 512, 1024]) as u32;
    h.l2.indexing = if r.gen_bool(0.7) { Indexing::Physical } else { Indexing::Virtual };
    h.l2.replacement = if r.gen_bool(0.5) { Replacement::Rrip } else { Replacement::Lru };
    h.l2.hit_ns = h.l1.hit_ns * r.gen_range(3.0..8.0);
    h.dram.latency_ns = h.l2.hit_ns * r.gen_range(1.6..3.0);
    h.noise.jitter_ns = h.l2.hit_ns * r.gen_range(0.0..0.02);
    h.noise.outlier_fraction = r.gen_range(0.0..0.01);
    h.noise.seed = seed;
    h
}

fn check(h: &Hierarchy, f: &BTreeMap<String, Finding>) -> Vec<String> {
    let mut bad = Vec::new();
    let int = |k: &str| f.get(k).and_then(|x| x.value.as_u64());
    let text = |k: &str| f.get(k).and_then(|x| x.value.as_str());
    let why = |k: &str| f.get(k).map(|x| format!("{:?} {:?}", x.value, x.note)).unwrap_or_default();
    if int("tlb.l1.entries") != Some(h.tlb.entries as u64) {
        bad.push(format!("entries {} want {}", why("tlb.l1.entries"), h.tlb.entries));
    }
    if int("tlb.page_bytes") != Some(h.page_bytes) {
        bad.push(format!("page {} want {}", why("tlb.page_bytes"), h.page_bytes));
    }
    match f.get("tlb.l1.miss_ns").and_then(|x| x.value.as_f64()) {
        Some(m) if (m - h.tlb.miss_ns).abs() <= 0.02 * h.tlb.miss_ns => {}
        _ => bad.push(format!("miss {} want {:.2}", why("tlb.l1.miss_ns"), h.tlb.miss_ns)),
    }
    let rep = if h.tlb.replacement == Replacement::Lru { "lru" } else { "fifo" };
    if text("tlb.l1.replacement") != Some(rep) {
        bad.push(format!("replacement {} want {rep}", why("tlb.l1.replacement")));
    }
    if text("tlb.l1.scope") != Some("sm") {
        bad.push(format!("scope {} want sm", why("tlb.l1.scope")));
    }
    bad
}

/// Each seed's hierarchy on its own target, side by side (crate::side_by_side).
fn run(seeds: std::ops::Range<u64>) {
    let seeds: Vec<u64> = seeds.collect();
    let failures = crate::side_by_side::map(&seeds, |&seed| {
        let h = random_tlb_hierarchy(seed);
        let mut t = SimTarget::new(h.clone()).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let out = memscope_session::Session::silent(false).run_probes_on(&mut t, [&TlbProbe as &dyn Probe]);
        assert!(out.failures.is_empty(), "seed {seed}: {:?}", out.failures);
        let bad = check(&h, &out.findings);
        (!bad.is_empty()).then(|| {
            format!(
                "seed {seed} (entries {}, page {}, {:?}, miss {:.2} ns, L2 hit {:.1} ns, jitter {:.2} ns): {}",
                h.tlb.entries,
                h.page_bytes,
                h.tlb.replacement,
                h.tlb.miss_ns,
                h.l2.hit_ns,
                h.noise.jitter_ns,
                bad.join("; ")
            )
        })
    });
    let failures: Vec<String> = failures.into_iter().flatten().collect();
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn tlb_recovered_on_random_hierarchies() {
    let range = std::env::var("MEMSCOPE_TLB_SEEDS").ok().and_then(|v| {
        let (a, b) = v.split_once("..")?;
        Some(a.parse().ok()?..b.parse().ok()?)
    });
    run(range.unwrap_or(0..40));
}
