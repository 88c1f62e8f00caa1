//! Seed 000's chase figures on the rtx4090 preset: L1 / L2 / DRAM-resident chases return 15.4 /
//! 127.4 / 255.4 ns per hop; a TLB miss adds 4.4 ns; 16 pages fit the TLB, 17 thrash.

use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_sim::{presets, SimTarget};

fn lines(base: u64, n: u64, stride: u64) -> Vec<u64> {
    (0..n).map(|i| base + i * stride).collect()
}

/// A fixed pseudo-random permutation (so the chase defeats nothing but stays reproducible).
fn shuffle(mut v: Vec<u64>, seed: u64) -> Vec<u64> {
    let mut x = seed;
    for i in (1..v.len()).rev() {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        v.swap(i, (x >> 33) as usize % (i + 1));
    }
    v
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn l1_l2_dram_chases_return_the_seed_latencies() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let b = t.alloc(64 << 20).unwrap();
    // L1: 64 lines (8 KiB) fit any L1 set function
    let r = t.chase(&ChaseSpec::new(shuffle(lines(b.base, 64, 128), 1), CachePath::L1Cached, 20_000)).unwrap();
    assert!((mean(&r.ns_per_hop) - 15.4).abs() < 1e-9, "{:?}", r.ns_per_hop);
    // L2: 4 MiB over 2 pages with ld.global.cg
    let r = t.chase(&ChaseSpec::new(shuffle(lines(b.base, 32768, 128), 2), CachePath::L1Bypass, 20_000)).unwrap();
    assert!((mean(&r.ns_per_hop) - 127.4).abs() < 1e-9, "{:?}", r.ns_per_hop);
    // cycles at 2.6 GHz
    assert!((r.cycles_per_hop.unwrap()[0] - 127.4 * 2.6).abs() < 1e-6);
}

#[test]
fn dram_chase_median_is_255_4_and_refresh_adds_a_2_percent_tail() {
    // A TLB big enough for the footprint isolates the DRAM figure from translation misses.
    let mut h = presets::rtx4090();
    h.tlb.entries = 4096;
    let mut t = SimTarget::new(h).unwrap();
    // 4 Mi distinct lines (512 MiB), started cold: every hop of the first 100k misses L2
    let b = t.alloc(512 << 20).unwrap();
    let addrs = shuffle(lines(b.base, (512 << 20) / 128, 128), 3);
    let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, 100_000);
    spec.per_hop = true;
    spec.repeats = 1;
    spec.warmup_laps = 0;
    t.flush().unwrap();
    let r = t.chase(&spec).unwrap();
    let mut hops = r.per_hop_ns.unwrap();
    hops.sort_by(f64::total_cmp);
    assert!((hops[hops.len() / 2] - 255.4).abs() < 1e-9, "median {}", hops[hops.len() / 2]);
    let stalled = hops.iter().filter(|&&x| x > 255.5).count() as f64 / hops.len() as f64;
    assert!((0.015..0.025).contains(&stalled), "refresh fraction {stalled}");
    let worst = hops.last().unwrap() - 255.4;
    assert!(worst <= 210.0 + 1e-9 && worst > 190.0, "largest stall {worst}");
}

#[test]
fn sixteen_pages_fit_the_tlb_seventeen_thrash_with_lru() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let page = 2u64 << 20;
    let b = t.alloc(32 * page).unwrap();
    for (n, want) in [(16u64, 127.4), (17, 127.4 + 4.4)] {
        // one line per page, cyclic order, through L2
        let r = t.chase(&ChaseSpec::new(lines(b.base, n, page), CachePath::L1Bypass, 10_000)).unwrap();
        assert!((mean(&r.ns_per_hop) - want).abs() < 1e-9, "{n} pages: {:?}", r.ns_per_hop);
    }
    // split over the warps of one SM (one page each): the TLB is shared, so the step is the same
    for (n, want) in [(16u64, 127.4), (17, 127.4 + 4.4)] {
        let mut spec = ChaseSpec::new(lines(b.base, n, page), CachePath::L1Bypass, 2_000);
        spec.warps = n as u32;
        let r = t.chase(&spec).unwrap();
        assert!((mean(&r.ns_per_hop) - want).abs() < 1e-9, "{n} warps: {:?}", r.ns_per_hop);
    }
    // on different SMs each TLB holds its own pages: 17 pages on one SM, 1 on another, no thrash
    let mut spec = ChaseSpec::new(lines(b.base, 16, page), CachePath::L1Bypass, 2_000);
    spec.sm = Some(5);
    let r = t.chase(&spec).unwrap();
    assert!((mean(&r.ns_per_hop) - 127.4).abs() < 1e-9);
}
