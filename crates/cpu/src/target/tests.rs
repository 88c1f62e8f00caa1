//! Tests of the CPU target: allocation, chase validation, single and interleaved chains, flush,
//! per-hop timing, and that an L1-sized chase is faster than a DRAM-sized one.

use super::*;
use memscope_core::CachePath;

fn lines(buf: &Buffer, n: u64, stride: u64) -> Vec<u64> {
    (0..n).map(|i| buf.addr(i * stride)).collect()
}

#[test]
fn info_describes_the_host() {
    let t = CpuTarget::new().unwrap();
    let i = t.info();
    assert_eq!((i.kind.as_str(), i.id.as_str()), ("cpu", "cpu"));
    assert!(!i.name.is_empty() && i.units >= 1);
    assert!(!i.bypass_supported && !i.aliasing_supported && !i.gpu_hierarchy);
    assert!(i.details.contains_key("huge_pages_obtained"));
    assert!(i.details.contains_key("thp_mode"));
}

#[test]
fn alloc_is_aligned_and_recorded() {
    let mut t = CpuTarget::new().unwrap();
    let b = t.alloc(3 << 20).unwrap();
    assert_eq!(b.base % (2 << 20), 0);
    assert_eq!(b.bytes, 3 << 20);
    assert!(!t.page_note(&b).is_empty());
    assert_eq!(t.info().details["mapped_bytes"], serde_json::json!(6u64 << 20));
    t.free(b);
    assert!(t.alloc(0).is_err());
}

#[test]
fn chase_rejects_bad_specs() {
    let mut t = CpuTarget::new().unwrap();
    let b = t.alloc(1 << 16).unwrap();
    let bad = |t: &mut CpuTarget, addrs: Vec<u64>| t.chase(&ChaseSpec::new(addrs, CachePath::L1Cached, 100)).is_err();
    assert!(bad(&mut t, vec![]));
    assert!(bad(&mut t, vec![b.addr(4)]), "misaligned");
    assert!(bad(&mut t, vec![b.addr(0), b.addr(64), b.addr(0)]), "duplicate");
    assert!(bad(&mut t, vec![b.addr(0), b.base + b.bytes]), "outside");
    let mut s = ChaseSpec::new(lines(&b, 4, 64), CachePath::L1Cached, 100);
    s.warps = 8;
    assert!(t.chase(&s).is_err(), "more chains than addresses");
    // A valid chase after the rejected ones still works (the duplicate map was reset).
    assert!(t.chase(&ChaseSpec::new(lines(&b, 8, 64), CachePath::L1Cached, 1000)).is_ok());
}

#[test]
fn small_chase_is_fast_and_big_chase_is_slow() {
    let mut t = CpuTarget::new().unwrap();
    let b = t.alloc(64 << 20).unwrap();
    let mut small = ChaseSpec::new(lines(&b, 64, 64), CachePath::L1Cached, 200_000);
    small.repeats = 5;
    let r = t.chase(&small).unwrap();
    assert_eq!(r.ns_per_hop.len(), 5);
    let fast = memscope_core::stats::median(&r.ns_per_hop);
    // A random order over 64 MiB of lines: DRAM (or at least far cache) latency.
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut order: Vec<u64> = (0..(64u64 << 20) / 64).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(1));
    let addrs: Vec<u64> = order.iter().map(|i| b.addr(i * 64)).collect();
    let mut big = ChaseSpec::new(addrs, CachePath::L1Cached, 200_000);
    big.warmup_laps = 0;
    big.repeats = 3;
    let slow = memscope_core::stats::median(&t.chase(&big).unwrap().ns_per_hop);
    assert!(fast > 0.05 && fast < 20.0, "L1 hop {fast} ns");
    assert!(slow > 4.0 * fast, "DRAM hop {slow} ns vs L1 {fast} ns");
}

#[test]
fn interleaved_chains_and_per_hop() {
    let mut t = CpuTarget::new().unwrap();
    let b = t.alloc(1 << 20).unwrap();
    let mut s = ChaseSpec::new(lines(&b, 256, 64), CachePath::L1Cached, 10_000);
    s.warps = 4;
    s.per_hop = true;
    s.sm = Some(0);
    let r = t.chase(&s).unwrap();
    assert!(r.ns_per_hop.iter().all(|&v| v > 0.0));
    if t.info().per_hop_supported {
        let h = r.per_hop_ns.expect("per-hop times");
        assert_eq!(h.len(), 10_000);
        assert!(h.iter().all(|v| v.is_finite() && *v >= 0.0));
    } else {
        assert!(r.per_hop_ns.is_none());
    }
    // Every chain still forms a cycle: each address was written with an address of the list.
    let set: std::collections::HashSet<u64> = s.addrs.iter().copied().collect();
    for &a in &s.addrs {
        let next = unsafe { std::ptr::read_volatile(a as *const u64) };
        assert!(set.contains(&next));
    }
    t.flush().unwrap();
}
