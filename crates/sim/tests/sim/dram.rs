//! DRAM model (seed 000 footnotes 13-14): with two reads in flight, a second row of the same bank
//! costs an activate more (~15x a same-row read); with one read in flight rows close in between.

use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_sim::dram::Dram;
use memscope_sim::SimTarget;

#[test]
fn conflicts_cost_an_activate_same_row_does_not() {
    let h = memscope_sim::presets::rtx4090();
    let mut d = Dram::new(&h);
    let x = 0x1234_5600u64;
    let (bx, rx, _) = d.locate(0, x);
    let y = (1..100_000u64)
        .map(|k| x + k * 1024)
        .find(|&y| {
            let (by, ry, _) = d.locate(0, y);
            by == bx && ry != rx
        })
        .unwrap();
    // footnote 13: 2^5, 2^6, 2^7, 2^9 and 2^8 ^ 2^14 keep the row; 2^8 alone does not
    for dlt in [0x20u64, 0x40, 0x80, 0x200, 0x4100] {
        assert_eq!(d.locate(0, x ^ dlt).1, rx, "{dlt:#x}");
    }
    assert_ne!(d.locate(0, x ^ 0x100).1, rx);
    let pair = |d: &mut Dram, y: u64| {
        d.reset();
        d.access(0, x, 1e6, 1.0);
        d.access(0, y, 1e6, 1.0).extra_ns
    };
    let same = pair(&mut d, x ^ 0x80);
    let conflict = pair(&mut d, y);
    assert!(same < 4.0, "same row {same}");
    assert!(conflict > 40.0 && conflict < 60.0, "conflict {conflict}");
    // one read in flight: the row is closed again when the next arrives (no row hit)
    d.reset();
    d.access(0, x, 1e6, 1.0);
    assert!(!d.access(0, x ^ 0x80, 1e6 + 255.4, 1.0).row_hit);
}

#[test]
fn two_warps_in_flight_see_the_conflict_through_the_target() {
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let b = t.alloc(64 << 20).unwrap();
    let px = t.physical_address(b.base).unwrap();
    let d = memscope_sim::dram::Dram::new(t.hierarchy());
    let c = |pa: u64| {
        let s = memscope_sim::hash::slice_rtx4090(pa);
        s / 3
    };
    let (bx, rx, _) = d.locate(c(px), px);
    let off = (1..(64u64 << 20) / 1024)
        .map(|k| k * 1024)
        .find(|&o| {
            let py = t.physical_address(b.base + o).unwrap();
            let (by, ry, _) = d.locate(c(py), py);
            c(py) == c(px) && by == bx && ry != rx
        })
        .unwrap();
    let pair = |t: &mut SimTarget, y: u64| {
        t.flush().unwrap();
        let mut spec = ChaseSpec::new(vec![b.base, y], CachePath::L1Bypass, 1);
        spec.warps = 2;
        spec.warmup_laps = 0;
        spec.repeats = 1;
        t.chase(&spec).unwrap().ns_per_hop[0]
    };
    let same = pair(&mut t, b.base + 0x80);
    let conflict = pair(&mut t, b.base + off);
    assert!(conflict - same > 15.0, "same row {same}, conflict {conflict}");
}
