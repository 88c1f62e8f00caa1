//! Discovery on simulated L2s whose slice function is a residue of XOR parities (the form
//! memscope measured on the H200: memscope_sim::hash_residue, docs/L2_SLICES.md): the first
//! generator's hierarchies (random_hierarchies.rs `mutated_rtx4090`, every other part redrawn as
//! there) with the L2's slice function redrawn as a residue modulo the slices per partition (a
//! partition bit where there are two partitions), 2-6 terms more than the modulus needs over
//! offset bits 7-20 of a 2 MiB page, weights 2^k or random, a random share and, in half the draws,
//! a frame function. Scored as random_hierarchies.rs scores: exact, undetermined with a reason, or
//! wrong. `residue_ci_seeds` runs in CI; the sweep is #[ignore]d:
//! `MEMSCOPE_RESIDUE_SWEEP=40 cargo test --release -p memscope-probe --test probe random_residue:: -- --ignored --nocapture`
//! (MEMSCOPE_RESIDUE_FROM its first seed, 7000; MEMSCOPE_RESIDUE_SEEDS, comma-separated, just those).

use crate::random_hierarchies::{mutated_rtx4090, run_set, seeds};
use memscope_sim::hash_residue::{FrameShare, PageShare, Residue, ResidueTerm};
use memscope_sim::hierarchy::{HashFunction, Hierarchy, Mask};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Offset bits the residue's masks read: the line's (bit 7) up to the top of a 2 MiB page.
const OFFSET_BITS: std::ops::Range<u32> = 7..21;

/// The first generator's hierarchy with a residue slice function.
pub(crate) fn residue_l2(seed: u64) -> Hierarchy {
    let mut h = mutated_rtx4090(seed);
    h.name = format!("residue-l2-{seed}");
    let mut r = ChaCha8Rng::seed_from_u64(seed ^ 0x0e51_d0e5);
    let partition = h.l2.partitions == 2;
    let modulus = if partition { h.l2.slices / 2 } else { h.l2.slices } as u64;
    let need = 64 - (modulus.max(2) - 1).leading_zeros();
    let n = need as usize + r.gen_range(2..=6usize);
    let field: u64 = OFFSET_BITS.map(|b| 1u64 << b).sum();
    let random_weights = r.gen_bool(0.3);
    let terms: Vec<ResidueTerm> = (0..n)
        .map(|k| {
            let mut m = 0;
            while m == 0 {
                m = r.gen::<u64>() & r.gen::<u64>() & field;
            }
            let weight = if random_weights { r.gen_range(1..modulus.max(2)) } else { (1u64 << (k % 40)) % modulus };
            ResidueTerm { mask: Mask(m), weight: weight % modulus }
        })
        .collect();
    let partition_mask = if partition { Mask((r.gen::<u64>() & field) | 1 << 12) } else { Mask(0) };
    let share = PageShare {
        flips: Mask(r.gen::<u64>() & ((1u64 << n) - 1)),
        constant: r.gen_range(0..modulus),
        partition: if partition { r.gen_range(0..2) } else { 0 },
    };
    let frame = r.gen_bool(0.5).then(|| FrameShare {
        flip_masks: (0..n).map(|_| Mask(r.gen::<u64>() & 0xff)).collect(),
        partition_mask: Mask(if partition { r.gen::<u64>() & 0xff } else { 0 }),
        constant_step: r.gen_range(0..modulus),
    });
    let residue = Residue { modulus, terms, partition_mask, page_bytes: 2 << 20, share, frame };
    h.l2.slice_function = HashFunction::Residue { residue };
    h
}

/// Every draw validates and fits the simulator's budget.
#[test]
fn every_residue_draw_is_a_valid_simulated_hierarchy() {
    for seed in 0..400 {
        let h = residue_l2(seed);
        h.validate().unwrap_or_else(|e| panic!("{}: {e}", h.name));
        memscope_sim::budget::check(&h, memscope_sim::budget::DEFAULT_BUDGET_BYTES)
            .unwrap_or_else(|e| panic!("{}: {e}", h.name));
        assert!(matches!(h.l2.slice_function, HashFunction::Residue { .. }), "{}", h.name);
    }
}

/// The CI seeds: three residue hierarchies, none with a wrong finding (7008's residue reaches a
/// quarter of its partition's sets, which `l2.sets` counts).
#[test]
fn residue_ci_seeds() {
    let t = run_set("residue L2, CI seeds", [2u64, 5, 7008].into_iter().map(residue_l2));
    assert!(t.failures.is_empty(), "{}", t.failures.join("\n"));
}

#[test]
#[ignore = "the sweep: minutes; run before a submission (module comment)"]
fn residue_sweep() {
    let n: u64 = std::env::var("MEMSCOPE_RESIDUE_SWEEP").ok().and_then(|v| v.parse().ok()).unwrap_or(40);
    let from: u64 = std::env::var("MEMSCOPE_RESIDUE_FROM").ok().and_then(|v| v.parse().ok()).unwrap_or(7000);
    let t = run_set("residue L2", seeds("MEMSCOPE_RESIDUE_SEEDS", from, n).into_iter().map(residue_l2));
    assert!(t.failures.is_empty(), "{}", t.failures.join("\n"));
}
