//! Cost of the simulator's parts one at a time (speed work, docs/PERFORMANCE.md): N random operations of
//! each kind (default 5,000,000; `N=...` in the environment), printing ns per operation. Run under
//! `valgrind --tool=callgrind` with a small N and one part's name to count instructions per
//! operation (the per-part cost on a machine without hardware counters):
//!
//!     cargo build --release -p memscope-sim --example sim_parts
//!     ./target/release/examples/sim_parts                     # all parts, timed
//!     N=200000 valgrind --tool=callgrind ./target/release/examples/sim_parts "l1 load"
//!
//! A part runs when its name contains the first argument (no argument: all). Subtract the
//! instruction count of a run with a name matching nothing (`none`) for the set-up. `dram access
//! random` is `Dram::access`, `dram access lean` `Dram::access_lean`; `chase dram` (only when
//! named) is a chase of N DRAM-bound hops through `SimTarget`: the difference of two N over
//! their difference is the instructions a hop.
use memscope_sim::cache::Cache;
use memscope_sim::dram::Dram;
use memscope_sim::hierarchy::Replacement;
use memscope_sim::tlb::{SplitMix, Tlb};
use memscope_sim::SimTarget;
use std::hint::black_box;
use std::time::Instant;

/// One load, out of line: under callgrind the inclusive cost of `load1` per call is the cost of a
/// load with its call (the parts below on 256 sets use it). It returns what a caller reads: the
/// missing sectors, whether the tag hit (bit 4), whether a line was evicted (bit 5).
#[inline(never)]
fn load1(c: &mut Cache, set: usize, line: u64, sectors: u8) -> u8 {
    let o = c.load(set, line, sectors);
    o.missing | u8::from(o.tag_hit) << 4 | u8::from(o.evicted.is_some()) << 5
}

fn main() {
    let n: usize = std::env::var("N").map(|v| v.parse().expect("N: a count")).unwrap_or(5_000_000);
    let only = std::env::args().nth(1);
    let part = |name: &str, f: &mut dyn FnMut() -> u64| {
        if only.as_ref().is_some_and(|a| !name.contains(a.as_str())) {
            return;
        }
        let s = Instant::now();
        let x = f();
        println!("{name:44} {:6.1} ns/op ({x})", s.elapsed().as_secs_f64() * 1e9 / n as f64);
    };
    let mut r = SplitMix(1);
    let sets: Vec<u32> = (0..n + 16).map(|_| r.below(36864) as u32).collect();
    // L2 lines: physical, below 2^32; L1 lines: virtual, sharing their high 32 bits
    let lines: Vec<u64> = (0..n + 16).map(|_| r.below(1 << 23) + (1 << 30)).collect();
    let va_line = |l: u64| (1u64 << 40) + l;
    let full = |policy| {
        let mut c = Cache::new(36864, 16, policy, 8);
        for i in 0..36864 * 16 {
            c.load(i % 36864, (i as u64) + (1 << 29), 1);
        }
        c
    };
    if only.as_ref().is_none_or(|a| a.contains("l2 load")) {
        let mut l2 = full(Replacement::Rrip);
        part("l2 load rrip 36864x16 random, no prefetch", &mut || {
            (0..n).map(|i| l2.load(sets[i] as usize, lines[i], 15).missing as u64).sum()
        });
        part("l2 load rrip 36864x16 random, prefetch 8", &mut || {
            let mut a = 0;
            for i in 0..n {
                l2.prefetch(sets[i + 8] as usize);
                a += l2.load(sets[i] as usize, lines[i], 15).missing as u64;
            }
            a
        });
        let mut l2l = full(Replacement::Lru);
        part("l2 load lru 36864x16 random, prefetch 8", &mut || {
            let mut a = 0;
            for i in 0..n {
                l2l.prefetch(sets[i + 8] as usize);
                a += l2l.load(sets[i] as usize, lines[i], 15).missing as u64;
            }
            a
        });
    }
    let mut small = Cache::new(256, 16, Replacement::Rrip, 8);
    part("small l2 load rrip 256x16 (misses)", &mut || {
        (0..n).map(|i| load1(&mut small, sets[i] as usize % 256, lines[i], 15) as u64).sum()
    });
    let mut hits = Cache::new(256, 16, Replacement::Rrip, 8);
    part("small l2 load rrip 256x16 (hits)", &mut || {
        (0..n).map(|i| load1(&mut hits, (lines[i] % 4000) as usize % 256, lines[i] % 4000, 15) as u64).sum()
    });
    let mut st = Cache::new(256, 16, Replacement::Rrip, 8);
    part("small l2 store rrip 256x16 (8-dirty rule)", &mut || {
        (0..n).map(|i| st.store(sets[i] as usize % 256, lines[i] % 8192, 1, 1, true, true).missing as u64).sum()
    });
    let mut l1 = Cache::new(256, 4, Replacement::Lru, 0);
    part("l1 load lru 256x4 (misses)", &mut || {
        (0..n).map(|i| load1(&mut l1, sets[i] as usize % 256, va_line(lines[i]), 1) as u64).sum()
    });
    let mut l1h = Cache::new(256, 4, Replacement::Lru, 0);
    part("l1 load lru 256x4 (hits)", &mut || {
        (0..n).map(|i| load1(&mut l1h, (lines[i] % 1000) as usize % 256, va_line(lines[i] % 1000), 1) as u64).sum()
    });
    let mut tlb = Tlb::new(16, true);
    part("tlb lookup+insert 16 entries, 512 pages", &mut || {
        let mut a = 0;
        for &l in &lines[..n] {
            let p = l % 512;
            if tlb.lookup(p).is_none() {
                tlb.insert(p, p);
                a += 1;
            }
        }
        a
    });
    part("tlb lookup 16 entries, 16 pages (hits)", &mut || {
        let mut a = 0;
        for &l in &lines[..n] {
            let p = l % 16;
            if tlb.lookup(p).is_none() {
                tlb.insert(p, p);
                a += 1;
            }
        }
        a
    });
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let h = t.hierarchy().clone();
    let buf = memscope_core::Target::alloc(&mut t, 1 << 30).unwrap();
    let m = t.machine();
    part("machine.pre random 1 GiB", &mut || {
        (0..n).map(|i| black_box(m.pre(buf.base + ((lines[i] & ((1 << 23) - 1)) << 7), 8)).pa & 1).sum()
    });
    let mut d = Dram::new(&h);
    part("dram access random", &mut || {
        let (mut a, mut now) = (0.0, 0.0);
        for i in 0..n {
            a += d.access(sets[i] % 12, lines[i] << 7, now, 1.0).extra_ns;
            now += 200.0;
        }
        a as u64
    });
    if only.as_ref().is_some_and(|a| "chase dram hops (1 Mi lines of 1 GiB)".contains(a.as_str())) {
        // (only when asked: a chase of N hops after one of 1,000, to count instructions a hop)
        let mut v: Vec<u64> = (0..1u64 << 20).map(|i| buf.base + i * 1024).collect();
        let mut x = 7u64;
        for i in (1..v.len()).rev() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            v.swap(i, (x >> 33) as usize % (i + 1));
        }
        let mut spec = memscope_core::ChaseSpec::new(v, memscope_core::CachePath::L1Cached, 1000);
        (spec.warmup_laps, spec.repeats) = (0, 1);
        memscope_core::Target::chase(&mut t, &spec).unwrap();
        spec.hops = n as u64;
        part("chase dram hops (1 Mi lines of 1 GiB)", &mut || {
            memscope_core::Target::chase(&mut t, &spec).unwrap().ns_per_hop[0] as u64
        });
    }
    let mut d = Dram::new(&h);
    part("dram access lean random", &mut || {
        let (mut a, mut now) = (0.0, 0.0);
        for i in 0..n {
            a += d.access_lean(sets[i] % 12, lines[i] << 7, now, 1.0).0;
            now += 200.0;
        }
        a as u64
    });
}
