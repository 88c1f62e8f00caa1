//! Eviction-set search cost on the simulated RTX 4090: threshold group testing must
//! take at most a tenth of the chases of one-at-a-time dropping (seed 000 footnote 2) for a
//! 4096-line candidate pool. The baseline itself takes a minute of simulation and is #[ignore]d:
//! `cargo test --release -p memscope-probe --test probe evset_chases:: -- --ignored --nocapture`.

use memscope_core::{CachePath, Target};
use memscope_probe::evset::{calibrate_l1, check_minimal, reduce_groups, reduce_linear, Oracle};
use memscope_probe::measure::Meter;
use memscope_sim::SimTarget;

fn setup(t: &mut SimTarget) -> (u64, Vec<u64>) {
    let buf = t.alloc(4096 * 128 + (1 << 16)).unwrap();
    (buf.base, (0..4096u64).map(|i| buf.base + i * 128).collect())
}

#[test]
fn group_testing_takes_a_tenth_of_the_baseline_bound() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let (base, mut pool) = setup(&mut t);
    let mut m = Meter::new(&mut t, 5);
    let levels = calibrate_l1(&mut m, &pool[..8]).unwrap();
    let o = Oracle { path: CachePath::L1Cached, levels, threshold: 0.5 };
    m.shuffle(&mut pool);
    let r = reduce_groups(&mut m, &o, &pool, 20_000).unwrap();
    assert_eq!(r.set.len(), 5);
    let (full, fit) = check_minimal(&mut m, &o, &r.set).unwrap();
    assert!(full && fit == 5);
    // One-at-a-time dropping tests every member once: 4096 chases for this pool.
    eprintln!("group testing: {} chases (base {base:#x})", r.chases);
    assert!(r.chases * 10 <= 4096, "{} chases", r.chases);
}

#[test]
#[ignore = "the one-at-a-time baseline over 4096 lines simulates ~10^8 hops"]
fn baseline_one_at_a_time() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let (_, mut pool) = setup(&mut t);
    let mut m = Meter::new(&mut t, 5);
    let levels = calibrate_l1(&mut m, &pool[..8]).unwrap();
    let o = Oracle { path: CachePath::L1Cached, levels, threshold: 0.5 };
    m.shuffle(&mut pool);
    let start = std::time::Instant::now();
    let r = reduce_linear(&mut m, &o, &pool).unwrap();
    eprintln!("one at a time: {} chases, {} lines left, {:.1} s", r.chases, r.set.len(), start.elapsed().as_secs_f64());
    let mut m2 = Meter::new(m.target, 6);
    let g = reduce_groups(&mut m2, &o, &pool, 20_000).unwrap();
    eprintln!("group testing: {} chases, {} lines", g.chases, g.set.len());
    assert!(g.chases * 10 <= r.chases);
}
