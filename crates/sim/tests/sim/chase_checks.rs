//! Chase address checks: a repeated address is refused and named (the smallest repeated one),
//! whether the list is dense (bitmap check) or sparse (sorted check).

use memscope_core::{CachePath, ChaseSpec, Target, TargetError};
use memscope_sim::SimTarget;

fn err(t: &mut SimTarget, addrs: Vec<u64>) -> Option<String> {
    match t.chase(&ChaseSpec::new(addrs, CachePath::L1Cached, 10)) {
        Err(TargetError::BadSpec(m)) => Some(m),
        Err(e) => Some(format!("other error {e}")),
        Ok(_) => None,
    }
}

#[test]
fn repeated_addresses_are_refused_and_named() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let b = t.alloc(256 << 20).unwrap();
    let dense: Vec<u64> = (0..1000).map(|i| b.base + i * 128).collect();
    assert_eq!(err(&mut t, dense.clone()), None);
    let mut dup = dense.clone();
    dup[900] = b.base + 700 * 128;
    dup[10] = b.base + 5 * 128;
    assert_eq!(err(&mut t, dup), Some(format!("address {:#x} appears twice", b.base + 5 * 128)));
    // sparse: two addresses 200 MiB apart plus a repeat
    let sparse = vec![b.base + (200 << 20), b.base + 8, b.base + (200 << 20)];
    assert_eq!(err(&mut t, sparse), Some(format!("address {:#x} appears twice", b.base + (200 << 20))));
    assert_eq!(err(&mut t, vec![b.base + (200 << 20), b.base + 8]), None);
    assert_eq!(err(&mut t, vec![b.base + 8]), None);
}

#[test]
fn misaligned_and_unmapped_addresses_are_named() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let a = t.alloc(1 << 20).unwrap();
    let b = t.alloc(1 << 20).unwrap();
    let mut v: Vec<u64> = (0..100).map(|i| a.base + i * 128).collect();
    v[40] += 4;
    assert_eq!(err(&mut t, v), Some(format!("addrs[40] = {:#x} is not 8-byte aligned", a.base + 40 * 128 + 4)));
    // both buffers: checked address by address; the gap between them is not mapped
    let gap = a.base + (1 << 20) + 128;
    let v = vec![a.base, b.base + 128, gap, b.base];
    assert!(!b.contains(gap) && !a.contains(gap));
    assert_eq!(err(&mut t, v), Some(format!("addrs[2] = {gap:#x} is not inside a live buffer")));
    assert_eq!(err(&mut t, vec![a.base, b.base + 128, b.base]), None);
}

#[test]
fn chase_work_counts_every_simulated_hop() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let a = t.alloc(1 << 20).unwrap();
    let addrs: Vec<u64> = (0..64).map(|i| a.base + i * 128).collect();
    let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, 1000);
    spec.warmup_laps = 2;
    spec.repeats = 3;
    t.chase(&spec).unwrap();
    spec.warps = 4;
    t.chase(&spec).unwrap();
    let w = t.chase_work();
    assert_eq!(w.chases, 2);
    // warm-up: every address twice; timed: hops x repeats per chain
    assert_eq!(w.hops, (2 * 64 + 3 * 1000) + (2 * 64 + 3 * 1000 * 4));
    assert!(w.cpu_s > 0.0);
}
