//! Random hierarchies of the kind the discovery tests generate (ways 2..32, random XOR index
//! masks, TLB 8..64 entries, pages 64 KiB..2 MiB, rows 512 B..8 KiB, noise): they validate, run,
//! and a chase returns each level's latency; noise is seeded and reproducible.

use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_sim::hierarchy::{HashFunction, Hierarchy, Mask};
use memscope_sim::tlb::SplitMix;
use memscope_sim::SimTarget;

/// `n` independent random masks over bits lo..hi.
fn masks(rng: &mut SplitMix, n: u32, lo: u32, hi: u32) -> Vec<Mask> {
    loop {
        let ms: Vec<u64> = (0..n)
            .map(|i| {
                let r = rng.next_u64() & (((1u64 << (hi - lo)) - 1) << lo);
                r | (1u64 << (lo + i)) // keep a distinct low bit so they stay independent
            })
            .collect();
        let mut basis: Vec<u64> = Vec::new();
        for &m in &ms {
            let mut x = m;
            for &b in &basis {
                x = x.min(x ^ b);
            }
            if x != 0 {
                basis.push(x);
                basis.sort_unstable_by(|a, b| b.cmp(a));
            }
        }
        if basis.len() == ms.len() {
            return ms.into_iter().map(Mask).collect();
        }
    }
}

fn random_hierarchy(seed: u64) -> Hierarchy {
    let mut r = SplitMix(seed);
    let mut h = Hierarchy {
        name: format!("random {seed}"),
        page_bytes: 1 << (16 + r.below(6)), // 64 KiB .. 2 MiB
        ..Hierarchy::default()
    };
    h.tlb.entries = 8 + r.below(57) as u32;
    h.l1.ways = 2 + r.below(31) as u32;
    let l1_bits = 3 + r.below(4) as u32;
    h.l1.sets = 1 << l1_bits;
    h.l1.index_masks = masks(&mut r, l1_bits, 7, 33);
    h.l2.ways = 2 + r.below(31) as u32;
    let slice_bits = r.below(4) as u32;
    let set_bits = 6 + r.below(4) as u32;
    h.l2.slices = 1 << slice_bits;
    h.l2.sets_per_slice = 1 << set_bits;
    h.l2.set_function = HashFunction::Masks { masks: masks(&mut r, set_bits, 7, 34) };
    h.l2.slice_function = HashFunction::Masks { masks: masks(&mut r, slice_bits, 7, 34) };
    h.dram.row_bytes = 1 << (9 + r.below(5));
    h.dram.refresh_stall_ns = 100.0 + r.below(200) as f64;
    h.dram.refresh_fraction = 0.01;
    h.noise.jitter_ns = 0.5;
    h.noise.outlier_fraction = 0.001;
    h.noise.seed = seed;
    h
}

#[test]
fn random_hierarchies_validate_and_chase_at_their_latencies() {
    for seed in 1..=12 {
        let h = random_hierarchy(seed);
        let text = h.to_json_pretty();
        let back = Hierarchy::from_json_str(&text).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        assert_eq!(back, h);
        let mut t = SimTarget::new(h.clone()).unwrap();
        let b = t.alloc(8 << 20).unwrap();
        // two lines: always L1-resident (ways >= 2)
        let r = t.chase(&ChaseSpec::new(vec![b.base, b.base + 128], CachePath::L1Cached, 4000)).unwrap();
        let m = r.ns_per_hop.iter().sum::<f64>() / r.ns_per_hop.len() as f64;
        assert!((m - h.l1.hit_ns).abs() < 1.0, "seed {seed}: L1 {m}");
        // the same two lines through L2
        let r = t.chase(&ChaseSpec::new(vec![b.base, b.base + 128], CachePath::L1Bypass, 4000)).unwrap();
        let m = r.ns_per_hop.iter().sum::<f64>() / r.ns_per_hop.len() as f64;
        assert!((m - h.l2.hit_ns).abs() < 1.5, "seed {seed}: L2 {m}");
    }
}

#[test]
fn noise_is_seeded_and_reproducible() {
    let run = |seed: u64| {
        let mut h = random_hierarchy(3);
        h.noise.seed = seed;
        h.noise.jitter_ns = 2.0;
        let mut t = SimTarget::new(h).unwrap();
        let b = t.alloc(1 << 20).unwrap();
        let mut spec = ChaseSpec::new(vec![b.base, b.base + 256], CachePath::L1Cached, 1000);
        spec.per_hop = true;
        t.chase(&spec).unwrap().per_hop_ns.unwrap()
    };
    let (a, b, c) = (run(5), run(5), run(6));
    assert_eq!(a, b);
    assert_ne!(a, c);
    let mean = a.iter().sum::<f64>() / a.len() as f64;
    let sd = (a.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / a.len() as f64).sqrt();
    assert!(sd > 1.5 && sd < 40.0, "jitter sd {sd}");
}
