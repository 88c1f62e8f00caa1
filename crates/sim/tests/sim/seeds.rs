//! Checks from the seeds: a contiguous 72 MiB fills every slot of every L2 slice without
//! thrashing; 8,192 L2-resident lines from exactly k predicted slices (one slice ~36x slower in
//! throughput than all); a 512 MB store sweep sends 4,194,304 write requests carrying 16,777,216
//! sectors to L2; aliased mappings behave as footnotes 3 and 6 say.

use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_sim::hash::{set_index, slice_rtx4090};
use memscope_sim::replay::{replay, Kernel, MemOp, ReplayOptions};
use memscope_sim::timeline::Op;
use memscope_sim::SimTarget;

#[test]
fn contiguous_72_mib_fills_every_slot_of_every_slice() {
    // the functions: every (slice, set) gets exactly 16 of the 589,824 lines
    let mut count = vec![0u8; 36 * 1024];
    for line in 0..(72u64 << 20) / 128 {
        let a = line * 128;
        count[(slice_rtx4090(a) * 1024 + set_index(a)) as usize] += 1;
    }
    assert!(count.iter().all(|&c| c == 16), "min {:?} max {:?}", count.iter().min(), count.iter().max());
    // the cache: after one lap, a second lap over the same 72 MiB hits L2 on every hop
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let b = t.alloc_contiguous(72 << 20, 0).unwrap();
    let addrs: Vec<u64> = (0..(72u64 << 20) / 128).map(|i| b.base + i * 128).collect();
    let n = addrs.len() as u64;
    let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, n);
    spec.warmup_laps = 1;
    spec.repeats = 1;
    t.chase(&spec).unwrap();
    t.machine().reset_stats();
    spec.warmup_laps = 0;
    t.chase(&spec).unwrap();
    let s = t.stats();
    assert_eq!(s.l2_read_requests, n);
    assert_eq!(s.l2_read_hits, n, "{} DRAM reads", s.dram_reads);
    for slice in 0..36 {
        for set in 0..1024 {
            assert_eq!(t.machine().l2_lines_in(slice, set), 16);
        }
    }
}

/// Every warp loads `per_warp` lines of the pool, the pool cycled `laps` times.
struct Loads {
    lines: Vec<u64>,
    per_warp: usize,
    laps: usize,
}

impl Kernel for Loads {
    fn warps(&self) -> u64 {
        (self.lines.len() * self.laps / self.per_warp) as u64
    }
    fn ops(&self, w: u64, loads: &mut Vec<MemOp>, _stores: &mut Vec<MemOp>) {
        for j in 0..self.per_warp {
            let i = (w as usize * self.per_warp + j) % self.lines.len();
            loads.push(MemOp { op: Op::LoadB, va: self.lines[i], bytes: 128 });
        }
    }
}

/// Modeled time to load the pool of 8,192 lines drawn from slices `0..k` (after warming L2).
fn slice_throughput_time_ns(k: u32) -> f64 {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let b = t.alloc_contiguous(256 << 20, 1 << 30).unwrap();
    let mut lines = Vec::new();
    let mut a = b.base;
    while lines.len() < 8192 {
        let pa = t.physical_address(a).unwrap();
        if slice_rtx4090(pa) < k {
            lines.push(a);
        }
        a += 128;
    }
    let m = t.machine();
    for &l in &lines {
        m.load(0, l, 128, true, 0.0);
    }
    // occupancy: every line resident, only in the k chosen slices
    m.reset_stats();
    let k_lines = Loads { lines: lines.clone(), per_warp: 4, laps: 8 };
    let (tot, _) = replay(m, &k_lines, 1e6, ReplayOptions { record_warps: 0, sms: None, bypass_l1: true });
    let s = &m.stats;
    assert_eq!(s.l2_read_hits, s.l2_read_requests, "all L2-resident");
    assert_eq!(s.slice_requests.iter().filter(|&&c| c > 0).count() as u32, k);
    tot.time_ns
}

#[test]
fn one_slice_is_about_36x_slower_than_all_slices() {
    let one = slice_throughput_time_ns(1);
    let all = slice_throughput_time_ns(36);
    let six = slice_throughput_time_ns(6);
    let ratio = one / all;
    assert!((28.0..=38.0).contains(&ratio), "one slice {one} ns, all {all} ns, ratio {ratio}");
    assert!(six < one && six > all, "6 slices in between: {six}");
}

#[test]
fn a_512_mb_store_sweep_sends_4194304_requests_of_16777216_sectors() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let b = t.alloc(512 << 20).unwrap();
    let m = t.machine();
    m.reset_stats();
    // one STG.E per warp: 32 lanes x 4 bytes = one 128-byte line, four sectors
    for (i, line) in (0..(512u64 << 20) / 128).enumerate() {
        m.store((i % 128) as u32, b.base + line * 128, 128, i as f64);
    }
    let s = &m.stats;
    assert_eq!(s.l2_write_requests, 4_194_304);
    assert_eq!(s.l2_write_sectors, 16_777_216);
    // the L2 (72 MiB) cannot hold it: dirty lines went to DRAM, and at most 8 dirty lines... per
    // set were ever allowed to stay before a store (the 8-dirty rule)
    assert!(s.l2_writebacks > 3_000_000, "{}", s.l2_writebacks);
    assert!(s.l2_dirty_cleans > 0);
    assert!(m.l2.dirty_lines() <= 36 * 1024 * 9);
}

#[test]
fn aliases_take_their_own_l1_slot_but_share_l2() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let (a, b) = t.alloc_aliased(4 << 20).unwrap();
    assert_eq!(t.physical_address(a.base + 4096), t.physical_address(b.base + 4096));
    let lines = |base: u64| (0..256u64).map(|i| base + i * 128).collect::<Vec<u64>>();
    // warm A through L1; B (same physical lines) misses the virtual L1 but hits the physical L2
    t.chase(&ChaseSpec::new(lines(a.base), CachePath::L1Cached, 1000)).unwrap();
    let mut spec = ChaseSpec::new(lines(b.base), CachePath::L1Cached, 256);
    spec.warmup_laps = 0;
    spec.repeats = 1;
    let r = t.chase(&spec).unwrap();
    // 127.4 per hop, plus one TLB miss (4.4 ns) for B's page over the 256 hops
    assert!((r.ns_per_hop[0] - (127.4 + 4.4 / 256.0)).abs() < 1e-9, "{:?}", r.ns_per_hop);
}

#[test]
fn far_l2_partition_shows_an_intermediate_plateau() {
    // small two-partition L2 with plain-bit functions: 4 slices x 64 sets x 4 ways x 128 B = 128 KiB
    let text = r#"{"name": "far", "page_bytes": 65536,
        "tlb": {"entries": 64, "miss_ns": 0},
        "l1": {"ways": 2, "sets": 2, "line_bytes": 128, "hit_ns": 20},
        "l2": {"slices": 4, "ways": 4, "sets_per_slice": 64, "line_bytes": 128, "hit_ns": 100,
               "far_hit_ns": 180, "partitions": 2, "replacement": "lru"},
        "dram": {"latency_ns": 400, "capacity_bytes": 1073741824},
        "sm": {"count": 2}}"#;
    let h = memscope_sim::hierarchy::Hierarchy::from_json_str(text).unwrap();
    let mut t = SimTarget::new(h).unwrap();
    let b = t.alloc_contiguous(1 << 20, 0).unwrap();
    let mean = |t: &mut SimTarget, kib: u64| {
        let addrs: Vec<u64> = (0..kib * 1024 / 128).map(|i| b.base + i * 128).collect();
        t.flush().unwrap();
        let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, 4000);
        spec.sm = Some(0);
        t.chase(&spec).unwrap().ns_per_hop[0]
    };
    let near = mean(&mut t, 32); // fits the near partition with copies
    let mid = mean(&mut t, 96); // beyond one partition, within the L2
    let dram = mean(&mut t, 512);
    assert!((near - 100.0).abs() < 1e-9, "{near}");
    assert!(mid > 120.0 && mid < 390.0, "{mid}");
    assert!(dram > 390.0, "{dram}");
}
