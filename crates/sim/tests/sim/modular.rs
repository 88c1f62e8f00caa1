//! The modular index functions (`{"divisor_bytes": D, "modulo": N}`) that non-power-of-two L2
//! slice and set counts need (docs/SIMULATORS.md): they parse, validate against the counts they index, and
//! a simulated L2 of 6 slices x 96 sets holds exactly its capacity with every slice used evenly.

use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_sim::hierarchy::{HashFunction, Hierarchy};
use memscope_sim::SimTarget;

fn small() -> Hierarchy {
    let mut h = Hierarchy::default();
    h.l2.slices = 6;
    h.l2.sets_per_slice = 96;
    h.l2.ways = 4;
    h.l2.set_function = HashFunction::Modular { divisor_bytes: 128, modulo: 96 };
    h.l2.slice_function = HashFunction::Modular { divisor_bytes: 128 * 96, modulo: 6 };
    h.dram.capacity_bytes = 1 << 30;
    h
}

#[test]
fn modular_functions_parse_and_validate() {
    let h = small();
    h.validate().unwrap();
    let back = Hierarchy::from_json_str(&h.to_json_pretty()).unwrap();
    assert_eq!(back.l2.slice_function, h.l2.slice_function);
    let mut bad = small();
    bad.l2.slice_function = HashFunction::Modular { divisor_bytes: 128 * 96, modulo: 5 };
    assert!(bad.validate().unwrap_err().to_string().starts_with("l2.slice_function.modulo"));
    let mut bad = small();
    bad.l2.set_function = HashFunction::Modular { divisor_bytes: 100, modulo: 96 };
    assert!(bad.validate().unwrap_err().to_string().starts_with("l2.set_function.divisor_bytes"));
}

fn chase(t: &mut SimTarget, bytes: u64) -> (f64, Vec<u64>) {
    let buf = t.alloc(bytes).unwrap();
    let mut addrs: Vec<u64> = (0..bytes / 128).map(|i| buf.base + i * 128).collect();
    let mut x = 7u64;
    for i in (1..addrs.len()).rev() {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        addrs.swap(i, ((x >> 33) % (i as u64 + 1)) as usize);
    }
    let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, 4 * bytes / 128);
    spec.repeats = 1;
    t.machine().reset_stats();
    t.chase(&spec).unwrap();
    let s = t.stats().clone();
    t.free(buf);
    (s.l2_read_hits as f64 / s.l2_read_requests as f64, s.slice_requests)
}

#[test]
fn the_l2_holds_its_capacity_and_spreads_lines_evenly() {
    let capacity = 6 * 96 * 4 * 128; // 294,912 B
    let mut t = SimTarget::new(small()).unwrap();
    // a contiguous footprint of exactly the capacity: every line has a way of its own
    let (hits, slices) = chase(&mut t, capacity);
    assert!(hits > 0.7, "hit fraction {hits} at the capacity (the first lap misses)");
    let (lo, hi) = (slices.iter().min().unwrap(), slices.iter().max().unwrap());
    assert!(*hi as f64 <= *lo as f64 * 1.05, "slices used unevenly: {slices:?}");
    let (hits2, _) = chase(&mut t, 2 * capacity);
    assert!(hits2 < 0.3, "hit fraction {hits2} at twice the capacity");
}
