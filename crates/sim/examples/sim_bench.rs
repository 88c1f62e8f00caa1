//! Simulator throughput benchmark (docs/PERFORMANCE.md "Simulator"): line accesses per second on
//! one core through the full path (L1 lookup, TLB, L2 slice and set functions, L2, DRAM), and the
//! wall time of a 16 Mi-element vadd replay.
//!
//! Run: `cargo run --release -p memscope-sim --example sim_bench [l1] [l2] [dram] [vadd]` (no
//! argument: all four).

use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_sim::target::thread_cpu_s;
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

/// Runs of each chase; the figures printed are the median and the best (the machine is shared).
const RUNS: usize = 5;

fn main() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let buf = t.alloc(1 << 30).unwrap();
    println!("line accesses per second, median (best) of {RUNS} runs of 5,000,000 hops each:");
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
    for (name, what, n, stride, path) in [
        ("l1", "L1-resident chase (ld.ca)", 512u64, 128u64, CachePath::L1Cached),
        ("l2", "L2-resident chase (ld.cg, 32 MiB)", 262_144, 128, CachePath::L1Bypass),
        ("dram", "DRAM chase (ld.ca, 1 GiB: L1, TLB and L2 miss)", 8_388_608, 128, CachePath::L1Cached),
    ] {
        if !run(name) {
            continue;
        }
        let mut spec = ChaseSpec::new(shuffled(buf.base, n, stride, 7), path, 5_000_000);
        spec.warmup_laps = 0;
        spec.repeats = 1;
        let (mut cpu, mut wall, mut ns) = (Vec::new(), Vec::new(), 0.0);
        for _ in 0..RUNS {
            t.flush().unwrap();
            let (t0, c0) = (Instant::now(), thread_cpu_s());
            let r = t.chase(&spec).unwrap();
            let (s, c) = (t0.elapsed().as_secs_f64(), thread_cpu_s() - c0);
            cpu.push(5e6 / c / 1e6);
            wall.push(5e6 / s / 1e6);
            ns = r.ns_per_hop[0];
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            (v[v.len() / 2], v[v.len() - 1])
        };
        let ((cm, cb), (wm, wb)) = (med(&mut cpu), med(&mut wall));
        println!(
            "{what:50} {cm:>6.1} ({cb:.1}) M/s per CPU second, {wm:>6.1} ({wb:.1}) M/s per wall second; {ns:.1} ns/hop simulated"
        );
    }
    t.free(buf);
    if !run("vadd") {
        return;
    }
    // vadd: three replays, each on a fresh target (the first one's state as the CLI sees it);
    // `VADD_N=...` in the environment for another size
    let n: u64 = std::env::var("VADD_N").map(|v| v.parse().expect("VADD_N: a count")).unwrap_or(16_777_216);
    let (mut cpu, mut wall, mut last) = (Vec::new(), Vec::new(), None);
    for _ in 0..3 {
        let mut t = SimTarget::from_preset("rtx4090").unwrap();
        let (t0, c0) = (Instant::now(), thread_cpu_s());
        let (rep, _) = run_vadd(&mut t, n, 0).unwrap();
        wall.push(t0.elapsed().as_secs_f64());
        cpu.push(thread_cpu_s() - c0);
        last = Some(rep);
    }
    let rep = last.unwrap();
    cpu.sort_by(f64::total_cmp);
    wall.sort_by(f64::total_cmp);
    let reqs = rep.stats.l1_load_requests + rep.stats.l1_store_requests;
    println!(
        "vadd n={n}, median (best) of 3: {:.2} ({:.2}) s CPU, {:.2} ({:.2}) s wall; {reqs} requests = {:.1} M requests per CPU second; modeled {:.1} us, {:.0} GB/s",
        cpu[1],
        cpu[0],
        wall[1],
        wall[0],
        reqs as f64 / cpu[1] / 1e6,
        rep.time_ns / 1e3,
        rep.gb_per_s
    );
    println!("{}", serde_json::to_string(&rep).unwrap());
}
