//! Discovery on simulated hierarchies: the seeds' RTX 4090 preset and random hierarchies in the
//! simulated-hierarchy JSON format ("Hidden hierarchies"), each recovered exactly (ways,
//! sets, masks up to change of basis, indexing, TLB entries, page size, row size, L2 ways and
//! replacement policy, L2 sets whenever reported; latencies within 2%, refresh stall within 10%). The random ones are kept small (L2 of a few MiB) so the whole
//! file runs in CI time; `random_hierarchies_many` (60 hierarchies) is #[ignore]d:
//! `cargo test --release -p memscope-probe --test probe discovery:: -- --ignored`.

use memscope_core::gf2;
use memscope_core::{Confidence, Finding, Target};
use memscope_sim::hierarchy::{Hierarchy, Indexing, Mask, Replacement};
use memscope_sim::SimTarget;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

fn discover(t: &mut dyn Target) -> (BTreeMap<String, Finding>, Vec<String>) {
    let probes = memscope_probe::probes();
    let run = memscope_session::Session::silent(false).run_probes_on(t, probes.iter().map(|p| p.as_ref()));
    for (key, r) in run.statuses.iter().filter(|(_, r)| r.duration_s > 2.0) {
        eprintln!("  probe {key} took {:.1} s", r.duration_s);
    }
    (run.findings, run.failures)
}

fn int(f: &BTreeMap<String, Finding>, k: &str) -> Option<u64> {
    f.get(k).and_then(|x| x.value.as_u64())
}
fn num(f: &BTreeMap<String, Finding>, k: &str) -> Option<f64> {
    f.get(k).and_then(|x| x.value.as_f64())
}
fn text<'a>(f: &'a BTreeMap<String, Finding>, k: &str) -> Option<&'a str> {
    f.get(k).and_then(|x| x.value.as_str())
}
fn masks(f: &BTreeMap<String, Finding>) -> Option<Vec<u64>> {
    f.get("l1.index_masks")?.value.as_array()?.iter().map(|v| v.as_str().and_then(gf2::parse_mask)).collect()
}

/// Compare everything a discovery run must recover; returns the list of mismatches.
fn check(h: &Hierarchy, f: &BTreeMap<String, Finding>) -> Vec<String> {
    let mut bad = Vec::new();
    let mut eq = |k: &str, got: Option<u64>, want: u64| {
        if got != Some(want) {
            bad.push(format!("{k}: got {got:?}, want {want} ({:?})", f.get(k).and_then(|x| x.note.clone())));
        }
    };
    eq("l1.line_bytes", int(f, "l1.line_bytes"), h.l1.line_bytes as u64);
    eq("l1.sector_bytes", int(f, "l1.sector_bytes"), h.l1.sector_bytes as u64);
    eq("l1.ways", int(f, "l1.ways"), h.l1.ways as u64);
    eq("l1.sets", int(f, "l1.sets"), h.l1.sets as u64);
    eq("tlb.l1.entries", int(f, "tlb.l1.entries"), h.tlb.entries as u64);
    eq("tlb.page_bytes", int(f, "tlb.page_bytes"), h.page_bytes);
    eq("dram.row_bytes", int(f, "dram.row_bytes"), h.dram.row_bytes);
    let mut close = |k: &str, want: f64, tol: f64| match num(f, k) {
        Some(g) if (g - want).abs() <= tol * want => {}
        g => bad.push(format!("{k}: got {g:?}, want {want} within {}%", tol * 100.0)),
    };
    // Level latencies are means over every hop (seed 000's instrument), so the simulated noise's
    // outliers (uniform in (0, outlier_ns]) add their mean, and DRAM's refresh waits (uniform in
    // (0, stall] on a refresh_fraction of accesses) theirs.
    let outliers = h.noise.outlier_fraction * h.noise.outlier_ns / 2.0;
    let refresh = h.dram.refresh_fraction * h.dram.refresh_stall_ns / 2.0;
    close("l1.hit_latency_ns", h.l1.hit_ns + outliers, 0.02);
    close("l2.hit_latency_ns", h.l2.hit_ns + outliers, 0.02);
    close("dram.latency_ns", h.dram.latency_ns + outliers + refresh, 0.02);
    close("tlb.l1.miss_ns", h.tlb.miss_ns, 0.02);
    // A refresh stall is within 10 %, or undetermined because the lap's two halves (or the
    // likelihood of its edge) do not reproduce it (crates/probe/src/dram/refresh.rs): never wrong.
    let unresolved = f
        .get("dram.refresh_stall_ns")
        .is_some_and(|x| x.value.is_null() && x.note.as_deref().is_some_and(|n| n.contains("not resolved")));
    if h.dram.refresh_fraction > 0.0 && !unresolved {
        close("dram.refresh_stall_ns", h.dram.refresh_stall_ns, 0.10);
    }
    let ind = |i: Indexing| if i == Indexing::Virtual { "virtual" } else { "physical" };
    for (k, want) in [("l1.indexing", ind(h.l1.indexing)), ("l2.indexing", ind(h.l2.indexing))] {
        if text(f, k) != Some(want) {
            bad.push(format!("{k}: got {:?}, want {want}", f.get(k)));
        }
    }
    let rep = if h.tlb.replacement == Replacement::Lru { "lru" } else { "fifo" };
    if text(f, "tlb.l1.replacement") != Some(rep) {
        bad.push(format!("tlb.l1.replacement: got {:?}, want {rep}", f.get("tlb.l1.replacement")));
    }
    if text(f, "tlb.l1.scope") != Some("sm") {
        bad.push(format!("tlb.l1.scope: got {:?}", f.get("tlb.l1.scope")));
    }
    // L2 geometry and policy (l2ways, l2policy): ways exact; sets exact when reported (it is
    // undetermined when the capacity knee and the occupancy estimate disagree), the estimate
    // within 5% (it runs up to ~4% high under 2% jitter of the L2 hit); the policy by its signature.
    if int(f, "l2.ways") != Some(h.l2.ways as u64) {
        bad.push(format!("l2.ways: got {:?}, want {}", f.get("l2.ways"), h.l2.ways));
    }
    let sets = (h.l2.slices * h.l2.sets_per_slice) as u64;
    if f.get("l2.sets").is_some_and(|x| !x.value.is_null()) && int(f, "l2.sets") != Some(sets) {
        bad.push(format!("l2.sets: got {:?}, want {sets}", f.get("l2.sets")));
    }
    match num(f, "l2.sets_estimate") {
        Some(g) if (g - sets as f64).abs() <= 0.05 * sets as f64 => {}
        g => bad.push(format!("l2.sets_estimate: got {g:?}, want {sets} within 5%")),
    }
    let pol = match h.l2.replacement {
        Replacement::Lru => "lru",
        Replacement::Fifo => "fifo",
        Replacement::Rrip => "rrip",
    };
    if text(f, "l2.policy") != Some(pol) {
        bad.push(format!("l2.policy: got {:?}, want {pol}", f.get("l2.policy")));
    }
    let want: Vec<u64> = h.l1.index_masks.iter().map(|m| m.0).collect();
    match masks(f) {
        Some(got) if gf2::same_row_space(&got, &want) => {}
        got => bad.push(format!("l1.index_masks: got {got:x?}, want {want:x?} (up to basis)")),
    }
    bad
}

/// A random small hierarchy in the simulated-hierarchy JSON of docs/CONTRACTS.md.
fn random_hierarchy(seed: u64) -> Hierarchy {
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut h = Hierarchy { name: format!("random-{seed}"), seed, ..Hierarchy::default() };
    let pick = |r: &mut rand_chacha::ChaCha8Rng, v: &[u64]| v[r.gen_range(0..v.len())];
    h.page_bytes = pick(&mut r, &[64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20]);
    h.clock_hz = r.gen_range(1.0e9..2.8e9);
    h.tlb.entries = r.gen_range(8..=64);
    h.tlb.miss_ns = r.gen_range(2.0..20.0);
    h.tlb.replacement = if r.gen_bool(0.7) { Replacement::Lru } else { Replacement::Fifo };
    // L1: line 64/128, ways 2..32, 2^3 .. 2^8 sets, XOR masks over bits up to 31 (inside the page
    // when physically indexed: nothing a program does can flip physical bits above the page).
    h.l1.line_bytes = pick(&mut r, &[64, 128]) as u32;
    h.l1.sector_bytes = 32;
    h.l1.ways = r.gen_range(2..=32);
    let bits = r.gen_range(3..=8u32);
    h.l1.sets = 1 << bits;
    h.l1.indexing = if r.gen_bool(0.6) { Indexing::Virtual } else { Indexing::Physical };
    let lo = h.l1.line_bytes.trailing_zeros();
    let hi = if h.l1.indexing == Indexing::Physical { h.page_bytes.trailing_zeros() } else { 32 };
    loop {
        let ms: Vec<u64> = (0..bits).map(|_| r.gen_range(1u64..1 << (hi - lo)) << lo).collect();
        if gf2::rank(&ms) == bits as usize {
            h.l1.index_masks = ms.into_iter().map(Mask).collect();
            break;
        }
    }
    h.l1.replacement = if r.gen_bool(0.8) { Replacement::Lru } else { Replacement::Fifo };
    h.l1.hit_ns = r.gen_range(10.0..40.0);
    // L2: small, plain defaults for the functions.
    h.l2.line_bytes = 128;
    h.l2.slices = pick(&mut r, &[1, 2, 4]) as u32;
    h.l2.ways = r.gen_range(4..=16);
    h.l2.sets_per_slice = pick(&mut r, &[256, 512, 1024]) as u32;
    h.l2.indexing = if r.gen_bool(0.7) { Indexing::Physical } else { Indexing::Virtual };
    h.l2.replacement = if r.gen_bool(0.5) { Replacement::Rrip } else { Replacement::Lru };
    h.l2.hit_ns = h.l1.hit_ns * r.gen_range(3.0..8.0);
    h.dram.latency_ns = h.l2.hit_ns * r.gen_range(1.6..3.0);
    h.dram.row_bytes = pick(&mut r, &[512, 1024, 2048, 4096, 8192]);
    h.dram.refresh_stall_ns = r.gen_range(100.0..400.0);
    h.dram.refresh_fraction = r.gen_range(0.01..0.03);
    h.dram.capacity_bytes = 24 << 30;
    // Jitter up to 2% of the L1 hit; the #[ignore]d sweep (seeds >= 100) uses 2% of the L2 hit.
    let scale = if seed >= 100 { h.l2.hit_ns } else { h.l1.hit_ns };
    h.noise.jitter_ns = scale * r.gen_range(0.0..0.02);
    h.noise.outlier_fraction = r.gen_range(0.0..0.01);
    h.noise.seed = seed;
    h
}

/// Discover each seed's hierarchy (side by side, crate::side_by_side); failures in seed order.
fn run_random(seeds: std::ops::Range<u64>) {
    let seeds: Vec<u64> = seeds.collect();
    let failures = crate::side_by_side::map(&seeds, |&seed| {
        let h = random_hierarchy(seed);
        let mut t = SimTarget::new(h.clone()).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let start = std::time::Instant::now();
        let (f, mut bad) = discover(&mut t);
        bad.extend(check(&h, &f));
        eprintln!(
            "seed {seed}: {:.1} s, {} mismatches; l2.sets {} (truth {}), estimate {:.0}, {} chases, {} hops",
            start.elapsed().as_secs_f64(),
            bad.len(),
            f.get("l2.sets").map(|x| x.value.to_string()).unwrap_or_default(),
            h.l2.slices * h.l2.sets_per_slice,
            num(&f, "l2.sets_estimate").unwrap_or(f64::NAN),
            int(&f, "l2.evset_chases").unwrap_or(0),
            int(&f, "l2.evset_hops").unwrap_or(0),
        );
        (!bad.is_empty())
            .then(|| format!("seed {seed} ({}):\n  {}", serde_json::to_string(&h).unwrap(), bad.join("\n  ")))
    });
    let failures: Vec<String> = failures.into_iter().flatten().collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rtx4090_preset_is_recovered() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let h = t.hierarchy().clone();
    let (f, mut bad) = discover(&mut t);
    bad.extend(check(&h, &f));
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The L2 probes alone on the seeds' hashed L2s with other policies (the l40s preset: 48 slices,
/// 96 MiB, RRIP; the 4090 with LRU and FIFO). The capacity the pool is sized from is given as the
/// latency probe would find it (its own recovery is checked by the tests above).
#[test]
fn hashed_l2_variants() {
    let mut cases = Vec::new();
    for (preset, policy) in [("l40s", Replacement::Rrip), ("rtx4090", Replacement::Lru), ("rtx4090", Replacement::Fifo)]
    {
        let mut h = memscope_sim::presets::preset(preset).unwrap();
        h.l2.replacement = policy;
        cases.push(h);
    }
    for h in cases {
        let mut t = SimTarget::new(h.clone()).unwrap();
        let l2 = &h.l2;
        let sets = (l2.slices * l2.sets_per_slice) as u64;
        let mut earlier: BTreeMap<String, Finding> = BTreeMap::new();
        let cap = sets * (l2.ways * l2.line_bytes) as u64;
        earlier.insert("l2.capacity_bytes".into(), Finding::integer(cap, "bytes", "given", Confidence::High));
        earlier.insert(
            "l1.line_bytes".into(),
            Finding::integer(h.l1.line_bytes as u64, "bytes", "given", Confidence::High),
        );
        let start = std::time::Instant::now();
        let probes = [
            &memscope_probe::l2::ways::L2WaysProbe as &dyn memscope_core::Probe,
            &memscope_probe::l2::policy::L2PolicyProbe,
        ];
        let run = memscope_session::Session::silent(false).run_probes_with(&mut t, probes, earlier.clone());
        earlier.extend(run.expect_ok().findings);
        let want = match l2.replacement {
            Replacement::Lru => "lru",
            Replacement::Fifo => "fifo",
            Replacement::Rrip => "rrip",
        };
        let name = format!("{} {want}", h.name);
        eprintln!("{name}: {:.1} s", start.elapsed().as_secs_f64());
        assert_eq!(int(&earlier, "l2.ways"), Some(l2.ways as u64), "{name}: {:?}", earlier.get("l2.ways"));
        assert_eq!(int(&earlier, "l2.line_bytes"), Some(l2.line_bytes as u64), "{name}");
        assert_eq!(int(&earlier, "l2.sets"), Some(sets), "{name}: {:?}", earlier.get("l2.sets"));
        assert_eq!(text(&earlier, "l2.policy"), Some(want), "{name}: {:?}", earlier.get("l2.policy"));
    }
}

#[test]
fn random_hierarchies_20() {
    // MEMSCOPE_SEEDS=a..b narrows the run when debugging one hierarchy.
    let range = std::env::var("MEMSCOPE_SEEDS").ok().and_then(|v| {
        let (a, b) = v.split_once("..")?;
        Some(a.parse().ok()?..b.parse().ok()?)
    });
    run_random(range.unwrap_or(1..21));
}

#[test]
#[ignore = "60 hierarchies, several minutes: cargo test --release -p memscope-probe --test probe discovery:: -- --ignored"]
fn random_hierarchies_many() {
    run_random(100..160);
}
