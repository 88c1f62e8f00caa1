//! Simulator throughput benchmark (docs/PERFORMANCE.md "Simulator"): line accesses per second on
//! one core through the full path (L1 lookup, TLB, L2 slice and set functions, L2, DRAM), and the
//! wall time of a 16 Mi-element vadd replay.
//!
//! Run: `cargo run --release -p memscope-sim --example sim_bench`

use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_sim::{vadd::run_vadd, SimTarget};
use std::time::Instant;

fn shuffled(base: u64, n: u64, stride: u64, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).map(|i| base + i * stride).collect();
    let mut x = seed;
    for i in (1..v.len()).rev() {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        v.swap(i, (x >> 33) as usize % (i + 1));
    }
    v
}

fn main() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let buf = t.alloc(1 << 30).unwrap();
    for (what, n, stride, path) in [
        ("L1-resident chase (ld.ca)", 512u64, 128u64, CachePath::L1Cached),
        ("L2-resident chase (ld.cg, 32 MiB)", 262_144, 128, CachePath::L1Bypass),
        ("DRAM chase (ld.ca, 1 GiB: L1, TLB and L2 miss)", 8_388_608, 128, CachePath::L1Cached),
    ] {
        let mut spec = ChaseSpec::new(shuffled(buf.base, n, stride, 7), path, 5_000_000);
        spec.warmup_laps = 0;
        spec.repeats = 1;
        let t0 = Instant::now();
        let r = t.chase(&spec).unwrap();
        let s = t0.elapsed().as_secs_f64();
        println!("{what:50} {:>6.1} M line accesses/s  ({:.1} ns/hop simulated)", 5e6 / s / 1e6, r.ns_per_hop[0]);
    }
    t.free(buf);
    let t0 = Instant::now();
    let (rep, _) = run_vadd(&mut t, 16_777_216, 0).unwrap();
    let s = t0.elapsed().as_secs_f64();
    println!(
        "vadd n=16777216: {:.2} s wall, {} requests = {:.1} M requests/s; modeled {:.1} us, {:.0} GB/s",
        s,
        rep.stats.l1_load_requests + rep.stats.l1_store_requests,
        (rep.stats.l1_load_requests + rep.stats.l1_store_requests) as f64 / s / 1e6,
        rep.time_ns / 1e3,
        rep.gb_per_s
    );
    println!("{}", serde_json::to_string(&rep).unwrap());
}
