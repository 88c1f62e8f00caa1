use memscope_core::hierarchy::{Hierarchy, Indexing, Mask, Replacement};
use memscope_core::{gf2, CachePath, ChaseSpec, Target};
use rand::{Rng, SeedableRng};
include!("/tmp/gen.rs");
fn main() {
    let seed: u64 = std::env::args().nth(1).unwrap().parse().unwrap();
    let h = random_hierarchy(seed);
    dump(seed);
    println!(
        "page {} entries {} tlb {:?} l2 {:?}",
        h.page_bytes,
        h.tlb.entries,
        h.tlb.replacement,
        (h.l2.indexing, h.l2.slices, h.l2.sets_per_slice, h.l2.ways)
    );
    let mut t = memscope_sim::SimTarget::new(h.clone()).unwrap();
    let buf = t.alloc(257 * (8 << 20)).unwrap();
    let e = h.tlb.entries as u64;
    for n in [e - 1, e, e + 1, e + 2, e + 3, 2 * e] {
        for w in [1u32, 2] {
            t.flush().unwrap();
            let addrs: Vec<u64> = (0..n).map(|i| memscope_probe::tlb::page_line(buf.base, h.page_bytes, i)).collect();
            let mut sp = ChaseSpec::new(addrs, CachePath::L1Bypass, (n * 8).max(2000));
            sp.warmup_laps = 2;
            sp.per_hop = true;
            sp.repeats = 1;
            sp.warps = w;
            let r = t.chase(&sp).unwrap();
            let hh = r.per_hop_ns.unwrap();
            let mut so = hh.clone();
            so.sort_by(|a, b| a.partial_cmp(b).unwrap());
            println!("n {n} w {w}: med {:.1} first {:?}", so[so.len() / 2], &hh[..6]);
        }
    }
}
#[allow(dead_code)]
fn dump(seed: u64) {
    std::fs::write(format!("/tmp/h{seed}.json"), serde_json::to_string(&random_hierarchy(seed)).unwrap()).unwrap();
}
