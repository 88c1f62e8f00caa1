//! Tests of map.rs (the adaptive slice labels over many pages) on simulated counters with known
//! truth: a non-linear slice function of the whole address (so the pages differ), noise on every
//! counter, slices the seed never saw, and an unclear kernel.

use super::counters::Counters;
use super::fit::{self, Batch};
use super::map::{map_lines, Counting};
use super::map_layout::{grid_of_mask, LayoutError, MapOffsets, DEFAULT_SPEC};
use super::probe_tests::simulate;
use super::{PACKED_OPS, SEED, UNIT};
use crate::gpu::GpuResult;

/// The simulator as a counter source: each call simulates the kernels of its batches.
struct Sim<'a> {
    slice: &'a dyn Fn(u64) -> usize,
    noise: u64,
    calls: u64,
    /// Corrupt the read max of this kernel of the second call (an unclear experiment).
    spoil: Option<usize>,
}

impl Counting for Sim<'_> {
    fn count(&mut self, lines: &[u64], batches: &[Batch]) -> GpuResult<Vec<Counters>> {
        self.calls += 1;
        let mut c =
            simulate(lines, batches, self.slice, &|_| false, [0.25, 1.0, 1.0, 1.0], self.noise, SEED + self.calls);
        if let (Some(k), 2) = (self.spoil, self.calls) {
            c[k].max[0] += 0.5 * UNIT as f64 * 0.25;
        }
        Ok(c)
    }
}

fn ops() -> Vec<usize> {
    PACKED_OPS.iter().map(|o| o.code() as usize).collect()
}

fn lines(pages: u64, per: usize) -> Vec<u64> {
    let off = fit::sample_lines(per, SEED);
    (0..pages).flat_map(|p| off.iter().map(move |o| p * (2 << 20) + o)).collect()
}

/// 47 slices from a hash of the whole address (the frame moves lines between slices).
fn hashed(a: u64) -> usize {
    (((a >> 7).wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> 40) as usize % 47
}

#[test]
fn labels_are_the_true_slices_over_many_pages_with_noise() {
    let lines = lines(6, 64);
    let mut sim = Sim { slice: &hashed, noise: 8, calls: 0, spoil: None };
    let m = map_lines(&mut sim, &lines, 128, UNIT, &ops()).unwrap();
    assert!(m.label.iter().all(|l| l.is_some()), "every line labelled");
    let truth: Vec<Option<usize>> = lines.iter().map(|&a| Some(hashed(a))).collect();
    assert_eq!(fit::partition_disagreements(&m.label, &truth).1, 0, "the labels are the slices");
    let distinct: std::collections::BTreeSet<usize> = truth.iter().flatten().copied().collect();
    assert_eq!(m.labels, distinct.len());
    // Seed (128 lines: 256 kernels), one kernel per other line, and the unseen slices' lines.
    assert!(m.kernels < 256 + (lines.len() - 128) + 40, "{} kernels", m.kernels);
    assert!(m.stages <= 3);
}

#[test]
fn slices_the_seed_never_saw_get_their_own_labels() {
    // The seed page holds slices 0..8 only, the other pages 0..24: most of their slices are new.
    let f = |a: u64| if a < (2 << 20) { hashed(a) % 8 } else { hashed(a) % 24 };
    let lines = lines(3, 64);
    let mut sim = Sim { slice: &f, noise: 4, calls: 0, spoil: None };
    let m = map_lines(&mut sim, &lines, 64, UNIT, &ops()).unwrap();
    let truth: Vec<Option<usize>> = lines.iter().map(|&a| Some(f(a))).collect();
    assert!(m.label.iter().all(|l| l.is_some()));
    assert_eq!(fit::partition_disagreements(&m.label, &truth).1, 0);
    // Seed, classification, then the unmatched lines: every pair of the first 64 of them and the
    // rest classified against all representatives.
    assert!((3..=4).contains(&m.stages), "{} stages", m.stages);
}

#[test]
fn an_unclear_classification_leaves_its_line_undetermined_and_nothing_wrong() {
    let lines = lines(2, 64);
    let mut sim = Sim { slice: &hashed, noise: 0, calls: 0, spoil: Some(5) };
    let m = map_lines(&mut sim, &lines, 64, UNIT, &ops()).unwrap();
    assert_eq!(m.label.iter().filter(|l| l.is_none()).count(), 1, "the spoilt kernel's line");
    assert!(m.label[64 + 5].is_none());
    let truth: Vec<Option<usize>> = lines.iter().map(|&a| Some(hashed(a))).collect();
    assert_eq!(fit::partition_disagreements(&m.label, &truth).1, 0);
}

#[test]
fn classification_reads_back_which_representative_or_none() {
    let reps = [10usize, 11, 12, 13, 14];
    let b = fit::design_classify(&[0, 1], &reps, 256, &[0, 2, 3], 7);
    assert_eq!(b.len(), 6, "one experiment per operation per line");
    assert_eq!(b.iter().map(|x| x.kernel).collect::<Vec<_>>(), [7, 7, 7, 8, 8, 8]);
    assert_eq!(b[0].members, [0, 10, 11]);
    assert_eq!(b[0].weights, [3 * 256, 256, 512]);
    assert_eq!(b[2].members, [0, 14]);
    // Against 2 representatives: 3 units alone, 4 with the first, 5 with the second.
    assert_eq!(fit::decode_classify(3.0 * 256.0 + 5.0, 256, 2), Some(None));
    assert_eq!(fit::decode_classify(4.0 * 256.0, 256, 2), Some(Some(0)));
    assert_eq!(fit::decode_classify(5.0 * 256.0 - 3.0, 256, 2), Some(Some(1)));
    assert_eq!(fit::decode_classify(6.0 * 256.0, 256, 2), None, "more than any answer");
    assert_eq!(fit::decode_classify(3.5 * 256.0, 256, 2), None, "between two answers");
}

#[test]
fn grids_hold_every_line_of_their_bits_and_parts_are_merged_once() {
    let w = grid_of_mask(0xff80);
    assert_eq!(w.len(), 512);
    assert_eq!(w[1], 0x80);
    assert_eq!(*w.last().unwrap(), 0xff80);
    let m = MapOffsets::parse("grid:7:15, grid:12:20").unwrap();
    let o = m.offsets(5);
    assert_eq!(o.len(), 512 + 512 - 16, "bits 12..15 are in both");
    let set: std::collections::BTreeSet<u64> = o.iter().copied().collect();
    assert_eq!(set.len(), o.len());
    assert!(set.contains(&0x1f_f000) && set.contains(&0xff80) && !set.contains(&0x1_0080));
    assert_ne!(o[..16], grid_of_mask(0xff80)[..16], "shuffled so the seed stage spreads");
    assert_eq!(o, m.offsets(5), "deterministic");
    let c = MapOffsets::parse("bits:7-9+16+18-20").unwrap().offsets(5);
    assert_eq!(c.len(), 128);
    assert!(c.contains(&0x1d_0380) && c.contains(&0x1_0000) && !c.contains(&0x2_0000) && !c.contains(&0x400));
    assert_eq!(MapOffsets::parse("bits:7-15").unwrap(), MapOffsets::parse("grid:7:15").unwrap());
}

#[test]
fn random_offsets_are_the_maps_old_sample_and_the_default_is_a_full_page() {
    assert_eq!(MapOffsets::parse("random:64").unwrap().offsets(9), fit::sample_lines(64, 9));
    let full = MapOffsets::parse(DEFAULT_SPEC).unwrap().offsets(9);
    assert_eq!(full.len(), 4096);
    assert_eq!(full.iter().fold(0, |m, o| m | o), 0x1f_fd00, "bits 8 and 10-20, not 7 and 9");
}

#[test]
fn bad_layouts_are_named() {
    for bad in [
        "grid:6:15",
        "grid:9:8",
        "grid:7:21",
        "random:0",
        "random:x",
        "dense",
        "grid:7",
        "bits:7-21",
        "bits:",
        "bits:5",
    ] {
        assert_eq!(MapOffsets::parse(bad), Err(LayoutError::BadPart(bad.to_string())), "{bad}");
    }
    assert_eq!(MapOffsets::parse(" , "), Err(LayoutError::Empty));
}

#[test]
fn a_dense_grid_over_many_pages_is_labelled_in_few_stages_with_few_kernels() {
    // Every line of a 16 KiB window and the bits 12..16 grid in 3 pages; a seed of 64 lines misses
    // many of the 47 slices, so the unmatched lines go round again.
    let off = MapOffsets::parse("grid:7:13,grid:12:16").unwrap().offsets(SEED);
    let lines: Vec<u64> = (0..3u64).flat_map(|p| off.iter().map(move |o| p * (2 << 20) + o)).collect();
    let mut sim = Sim { slice: &hashed, noise: 4, calls: 0, spoil: None };
    let m = map_lines(&mut sim, &lines, 64, UNIT, &ops()).unwrap();
    assert!(m.label.iter().all(|l| l.is_some()));
    let truth: Vec<Option<usize>> = lines.iter().map(|&a| Some(hashed(a))).collect();
    assert_eq!(fit::partition_disagreements(&m.label, &truth).1, 0);
    // One kernel per line beyond the seeds, and a few rounds of pairs among the unmatched.
    assert!(m.kernels < lines.len() + 200, "{} kernels for {} lines in {} stages", m.kernels, lines.len(), m.stages);
    assert!(m.stages >= 4, "the unmatched lines went round again: {} stages", m.stages);
}
