//! Profiling helper: a chase of 5 M hops over N lines (argument 1, default 262,144 = 32 MiB),
//! ld.global.cg, or ld.global.ca with a second argument; prints hops per CPU second.
use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_sim::target::thread_cpu_s;
use memscope_sim::SimTarget;

fn main() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let buf = t.alloc(1 << 30).unwrap();
    let n: u64 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(262_144);
    let mut v: Vec<u64> = (0..n).map(|i| buf.base + i * 128).collect();
    let mut x = 7u64;
    for i in (1..v.len()).rev() {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        v.swap(i, (x >> 33) as usize % (i + 1));
    }
    let mut spec = ChaseSpec::new(
        v,
        if std::env::args().nth(2).is_some() { CachePath::L1Cached } else { CachePath::L1Bypass },
        std::env::var("HOPS").map(|h| h.parse().unwrap()).unwrap_or(5_000_000),
    );
    spec.warmup_laps = 0;
    spec.repeats = 1;
    let (s, c) = (std::time::Instant::now(), thread_cpu_s());
    let r = t.chase(&spec).unwrap();
    let c = thread_cpu_s() - c;
    let hops = spec.hops as f64 / 1e6;
    println!("{:5.2} M hops per CPU s ({:?} wall) {:?}", hops / c, s.elapsed(), r.ns_per_hop);
}
