//! Micro-benchmark of the L2 slice/set functions: popcount form (`IndexFn`) against byte tables
//! (`FastIndex`), ns per evaluation on random 35-bit addresses.
use memscope_sim::hash::IndexFn;
use memscope_sim::machine::index::FastIndex;
use std::time::Instant;
fn main() {
    let addrs: Vec<u64> = (0..1u64 << 20).map(|i| (i.wrapping_mul(0x9E3779B97F4A7C15) >> 29) << 7).collect();
    for f in [IndexFn::SliceRtx4090, IndexFn::SeedSet] {
        let fast = FastIndex::new(&f);
        for pass in 0..2 {
            let t = Instant::now();
            let mut x = 0u32;
            for _ in 0..5 {
                for &a in &addrs {
                    x = x.wrapping_add(if pass == 0 { f.eval(a) } else { fast.eval(a) });
                }
            }
            let ns = t.elapsed().as_secs_f64() * 1e9 / (5 * addrs.len()) as f64;
            println!("{f:?} {}: {ns:.1} ns/eval ({x})", if pass == 0 { "popcount" } else { "tables" });
        }
    }
}
