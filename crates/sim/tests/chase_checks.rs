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
