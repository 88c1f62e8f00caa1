//! Diagnostic: ns per hop of a random single-cycle chase at a few footprints.
//! `cargo run --release -p memscope-cpu --example chase_scan -- GROUP_PAGES KIB...`
//! GROUP_PAGES 0: one random cycle over all lines; N > 0: lines random within groups of N 4 KiB
//! pages, groups in random order (fewer TLB misses, same cache reuse distance).
use memscope_core::{CachePath, ChaseSpec, Target};
use rand::seq::SliceRandom;
use rand::SeedableRng;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let group: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(0);
    let kibs: Vec<u64> = args.iter().skip(1).filter_map(|a| a.parse().ok()).collect();
    let mut t = memscope_cpu::CpuTarget::new().unwrap();
    let max = kibs.iter().max().copied().unwrap_or(64) * 1024;
    let buf = t.alloc(max).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    for &k in &kibs {
        let n = k * 1024 / 64;
        let order: Vec<u64> = if group == 0 {
            let mut o: Vec<u64> = (0..n).collect();
            o.shuffle(&mut rng);
            o
        } else if args.iter().any(|a| a == "split") {
            let per = group * 64;
            let mut groups: Vec<u64> = (0..n.div_ceil(per)).collect();
            groups.shuffle(&mut rng);
            let mut o = Vec::new();
            for parity in 0..2 {
                for &g in &groups {
                    let mut v: Vec<u64> = (g * per..((g + 1) * per).min(n)).filter(|l| l % 2 == parity).collect();
                    v.shuffle(&mut rng);
                    o.extend(v);
                }
            }
            o
        } else {
            let per = group * 64;
            let mut groups: Vec<Vec<u64>> =
                (0..n.div_ceil(per)).map(|g| (g * per..((g + 1) * per).min(n)).collect()).collect();
            groups.shuffle(&mut rng);
            groups
                .iter_mut()
                .flat_map(|g| {
                    g.shuffle(&mut rng);
                    g.clone()
                })
                .collect()
        };
        let mut best = f64::MAX;
        for _ in 0..3 {
            let mut s = ChaseSpec::new(order.iter().map(|i| buf.addr(i * 64)).collect(), CachePath::L1Cached, 400_000);
            s.repeats = 3;
            s.warmup_laps = 2;
            let r = t.chase(&s).unwrap();
            best = best.min(memscope_core::stats::median(&r.ns_per_hop));
        }
        println!("{k:>8} KiB  {best:.2}");
    }
}
