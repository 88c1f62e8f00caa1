//! Tests of the slice analysis on synthetic counters with known ground truth (fit.rs).

use super::fit::*;
use memscope_core::gf2;
use rand::Rng;
use rand::SeedableRng;

const UNIT: u64 = 256;

/// Per-slice sector counts of one kernel under a ground truth, plus noise: every slice gets up to
/// `noise` stray sectors (the plan read, say). Returns the max over slices.
fn simulated_max(
    b: &Batch,
    lines: &[u64],
    slice_of: &dyn Fn(u64) -> Option<usize>,
    noise: u64,
    rng: &mut impl Rng,
) -> f64 {
    let mut per: std::collections::HashMap<usize, u64> = std::collections::HashMap::new();
    for (&x, &w) in b.members.iter().zip(&b.weights) {
        if let Some(s) = slice_of(lines[x]) {
            *per.entry(s).or_default() += w;
        }
    }
    for s in 0..64 {
        *per.entry(s).or_default() += rng.gen_range(0..=noise);
    }
    per.values().copied().max().unwrap_or(0) as f64
}

/// Same partition (class ids may differ): i, j in one class exactly when truth says so.
fn same_partition(class: &[Option<usize>], truth: &[usize]) -> bool {
    (0..truth.len()).all(|i| {
        (0..truth.len()).all(|j| match (class[i], class[j]) {
            (Some(a), Some(b)) => (a == b) == (truth[i] == truth[j]),
            _ => true,
        })
    })
}

#[test]
fn the_sample_is_distinct_lines_with_the_single_bits_first() {
    let s = sample_lines(100, 7);
    assert_eq!(s.len(), 100);
    assert_eq!(&s[..3], &[0, 128, 256]);
    assert_eq!(s[14], 1 << 20);
    let set: std::collections::HashSet<_> = s.iter().collect();
    assert_eq!(set.len(), 100);
    assert!(s.iter().all(|o| o % LINE_BYTES == 0 && *o < (2 << 20)));
    assert_eq!(sample_lines(100, 7), s, "seeded");
}

#[test]
fn the_design_tests_every_pair_once_with_a_dominant_anchor() {
    let n = 30;
    let d = design(n, UNIT);
    let mut seen = std::collections::HashSet::new();
    for b in &d {
        assert!(b.members.len() <= GROUP + 1);
        let others: u64 = b.weights[1..].iter().sum();
        assert!(b.weights[0] > others, "the anchor outweighs all others together");
        assert!(b.weights.iter().all(|w| w % (8 * 32) == 0), "loads fit 32 warps x 8 chains");
        for &x in &b.members[1..] {
            assert!(seen.insert((b.members[0], x)), "pair tested twice");
        }
    }
    assert_eq!(seen.len(), n * (n - 1) / 2);
}

#[test]
fn the_packed_design_tests_every_pair_once_with_one_experiment_per_operation() {
    for n in [2, 3, 7, 30, 40, 127, 128] {
        let d = design_packed(n, UNIT, &[0, 2, 3]);
        let mut seen = std::collections::HashSet::new();
        for b in &d {
            assert!(b.members.len() >= 2 && b.members.len() <= GROUP + 1, "n {n}");
            let others: u64 = b.weights[1..].iter().sum();
            assert!(b.weights[0] > others, "the anchor outweighs all others together");
            assert!([0, 2, 3].contains(&b.op));
            for &x in &b.members[1..] {
                let key = (b.members[0].min(x), b.members[0].max(x));
                assert!(seen.insert(key), "n {n}: pair {key:?} tested twice");
            }
        }
        assert_eq!(seen.len(), n * (n - 1) / 2, "n {n}: every pair");
        for k in 0..kernel_count(&d) {
            let mut ops: Vec<usize> = d.iter().filter(|b| b.kernel == k).map(|b| b.op).collect();
            let len = ops.len();
            ops.dedup();
            assert_eq!(ops.len(), len, "n {n}, kernel {k}: an operation twice");
            let mut anchors: Vec<usize> = d.iter().filter(|b| b.kernel == k).map(|b| b.members[0]).collect();
            anchors.dedup();
            assert_eq!(anchors.len(), 1, "n {n}, kernel {k}: the experiments of a kernel share their anchor");
        }
    }
    assert_eq!(kernel_count(&design_packed(128, UNIT, &[0, 2, 3])), 256);
    assert_eq!(kernel_count(&design_packed(128, UNIT, &[0, 1, 2, 3])), 256, "6 chunks padded to 8");
    assert_eq!(kernel_count(&design_packed(40, UNIT, &[0, 2, 3])), 40);
    assert_eq!(kernel_count(&design(128, UNIT)), 798);
}

#[test]
fn the_far_kernels_hold_every_line_once_heaviest_first() {
    let d = design_far(40, UNIT, 7);
    assert_eq!(d.iter().map(|b| b.kernel).collect::<Vec<_>>(), (7..11).collect::<Vec<_>>());
    let mut all: Vec<usize> = d.iter().flat_map(|b| b.members.clone()).collect();
    all.sort();
    assert_eq!(all, (0..40).collect::<Vec<_>>());
    assert!(d.iter().all(|b| b.op == 0 && b.weights[0] > b.weights[1..].iter().sum::<u64>()));
}

#[test]
fn a_pair_answered_two_ways_leaves_both_lines_undetermined() {
    let b1 = Batch { members: vec![0, 1], weights: vec![2 * UNIT, UNIT], kernel: 0, op: 0 };
    let b2 = Batch { members: vec![1, 0], weights: vec![2 * UNIT, UNIT], kernel: 1, op: 0 };
    let b3 = Batch { members: vec![2, 0], weights: vec![2 * UNIT, UNIT], kernel: 2, op: 0 };
    // b1 says 0 and 1 share a slice, b2 says they do not; b3 says 2 is apart from 0.
    let maxes = [3.0 * UNIT as f64, 2.0 * UNIT as f64, 2.0 * UNIT as f64];
    let a = assign(3, &[b1, b2, b3], &maxes, UNIT, true);
    assert_eq!(a.conflicts, 1);
    assert_eq!(a.class[0], None);
    assert_eq!(a.class[1], None);
    assert!(a.class[2].is_some());
}

#[test]
fn partitions_compare_up_to_relabeling() {
    let a = [Some(0), Some(0), Some(1), None];
    let b = [Some(5), Some(5), Some(2), Some(2)];
    assert_eq!(partition_disagreements(&a, &b), (3, 0));
    let c = [Some(1), Some(2), Some(2), Some(0)];
    assert_eq!(partition_disagreements(&a, &c), (3, 2));
}

#[test]
fn decode_accepts_only_clear_multiples() {
    assert_eq!(decode(5.0 * 256.0 + 20.0, 256, 4), Some(5));
    assert_eq!(decode(5.0 * 256.0 + 0.44 * 256.0, 256, 4), Some(5), "strays only add: up to 0.45 units above");
    assert_eq!(decode(5.0 * 256.0 - 20.0, 256, 4), Some(5));
    assert_eq!(decode(5.0 * 256.0 - 30.0, 256, 4), None, "more than 0.1 units below");
    assert_eq!(decode(5.5 * 256.0, 256, 4), None, "half-way is not a clear max");
    assert_eq!(decode(16.0 * 256.0, 256, 4), None, "more than the members can spell");
    assert_eq!(decode(f64::NAN, 256, 4), None);
}

#[test]
fn a_linear_slice_function_is_recovered_with_noise() {
    // Ground truth: 6 masks over bits 7..20 (64 slices per page), noise up to 40 sectors per slice.
    let masks = [0x0012_3480u64, 0x0008_0d00, 0x001c_0080, 0x0001_8200, 0x0010_0300, 0x0000_6480];
    assert_eq!(gf2::rank(&masks), 6);
    let truth_of = |o: u64| Some(gf2::apply(&masks, o) as usize);
    let lines = sample_lines(96, 3);
    let d = design(lines.len(), UNIT);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let maxes: Vec<f64> = d.iter().map(|b| simulated_max(b, &lines, &truth_of, 40, &mut rng)).collect();
    let a = assign(lines.len(), &d, &maxes, UNIT, true);
    assert_eq!(a.clear_kernels, a.kernels);
    assert_eq!(a.conflicts, 0);
    assert!(a.class.iter().all(|c| c.is_some()));
    let truth: Vec<usize> = lines.iter().map(|&o| truth_of(o).unwrap()).collect();
    assert!(same_partition(&a.class, &truth));
    assert_eq!(a.classes, truth.iter().collect::<std::collections::HashSet<_>>().len());
    let pts: Vec<(u64, usize)> = lines.iter().zip(&a.class).map(|(&o, c)| (o, c.unwrap())).collect();
    let fit = fit_linear(&pts);
    assert!(fit.linear, "{fit:?}");
    assert_eq!(fit.violations, 0);
    assert!(gf2::same_row_space(&fit.masks, &masks), "masks {:x?}", fit.masks);
}

#[test]
fn an_unclear_max_leaves_its_lines_undetermined() {
    let masks = [0x0000_1080u64, 0x0004_0100, 0x0010_2000];
    let truth_of = |o: u64| Some(gf2::apply(&masks, o) as usize);
    let lines = sample_lines(40, 9);
    let d = design(lines.len(), UNIT);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let mut maxes: Vec<f64> = d.iter().map(|b| simulated_max(b, &lines, &truth_of, 10, &mut rng)).collect();
    maxes[5] += UNIT as f64 / 2.0; // not a clear max: half a unit off
    let a = assign(lines.len(), &d, &maxes, UNIT, true);
    assert_eq!(a.clear_kernels, a.kernels - 1);
    for &x in &d[5].members {
        assert_eq!(a.class[x], None, "line {x} of the unclear kernel");
    }
    let truth: Vec<usize> = lines.iter().map(|&o| truth_of(o).unwrap()).collect();
    assert!(same_partition(&a.class, &truth));
    assert!(a.class.iter().filter(|c| c.is_some()).count() >= lines.len() - GROUP - 1);
}

#[test]
fn a_non_linear_partition_is_not_called_linear() {
    // (line index mod 3): three classes, not an XOR partition.
    let lines = sample_lines(60, 5);
    let pts: Vec<(u64, usize)> = lines.iter().map(|&o| (o, ((o / LINE_BYTES) % 3) as usize)).collect();
    let fit = fit_linear(&pts);
    assert!(!fit.linear);
    assert!(fit.violations > 0);
}

#[test]
fn far_lines_are_told_from_the_fabric_counter() {
    // Far when bit 9 of the offset is set; a far line's loads reach its home slice over the fabric.
    let home = [0x0000_1080u64, 0x0004_0100];
    let far = |o: u64| o >> 9 & 1 == 1;
    let fabric_of = |o: u64| if far(o) { Some(gf2::apply(&home, o) as usize) } else { None };
    let lines = sample_lines(40, 11);
    let d = design(lines.len(), UNIT);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let fab: Vec<f64> = d.iter().map(|b| simulated_max(b, &lines, &fabric_of, 20, &mut rng)).collect();
    let (labels, clear) = far_labels(lines.len(), &d, &fab, UNIT);
    assert_eq!(clear, d.len());
    for (i, &o) in lines.iter().enumerate() {
        if let Some(l) = labels[i] {
            assert_eq!(l, far(o), "line {o:#x}");
        }
    }
    assert!(labels.iter().filter(|l| l.is_some()).count() >= lines.len() - 2);
    // The fabric partition of the far lines is their home slice.
    let a = assign(lines.len(), &d, &fab, UNIT, false);
    let class: Vec<Option<usize>> =
        a.class.iter().zip(&labels).map(|(c, l)| if *l == Some(true) { *c } else { None }).collect();
    let truth: Vec<usize> = lines.iter().map(|&o| fabric_of(o).unwrap_or(99)).collect();
    assert!(same_partition(&class, &truth));
}

#[test]
fn instances_from_sum_and_avg() {
    assert_eq!(instances(262_150.0, 2788.83), Some(94));
    assert_eq!(instances(1_048_600.0, 10_922.92), Some(96));
    assert_eq!(instances(133.0, 1.41), None, "too coarse to tell");
    assert_eq!(instances(0.0, 0.0), None);
}

#[test]
fn the_occupancy_estimate_inverts_the_expected_distinct_count() {
    // 128 lines over 47 slices show 44 distinct on average.
    let (est, lo, hi) = occupancy_estimate(128, 44).unwrap();
    assert!((est - 47.0).abs() <= 1.0, "{est}");
    assert!(lo < est && est < hi && lo > 35.0 && hi < 70.0, "{lo}..{hi}");
    assert_eq!(occupancy_estimate(10, 10), None, "no collision bounds nothing");
    // Simulated: 128 uniform lines over 94 slices, many seeds: the interval covers 94 most times.
    let mut covered = 0;
    for seed in 0..50 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let d = (0..128).map(|_| rng.gen_range(0..94)).collect::<std::collections::HashSet<u32>>().len();
        let (_, lo, hi) = occupancy_estimate(128, d).unwrap();
        covered += usize::from(lo <= 94.0 && 94.0 <= hi);
    }
    assert!(covered >= 40, "{covered} of 50");
}

/// Lines of 4 adjacent pages, the same offsets in each, classed by a ground truth.
fn pages_classed(f: &dyn Fn(u64) -> usize) -> (Vec<u64>, Vec<Option<usize>>) {
    let per = sample_lines(40, 9);
    let lines: Vec<u64> = (0..4u64).flat_map(|p| per.iter().map(move |o| p * (2 << 20) + o)).collect();
    let mut ids = std::collections::HashMap::new();
    let class = lines
        .iter()
        .map(|&a| {
            let next = ids.len();
            Some(*ids.entry(f(a)).or_insert(next))
        })
        .collect();
    (lines, class)
}

#[test]
fn a_linear_hash_with_frame_bits_relabels_pages_without_changing_their_partition() {
    // 5 parities, two of them over bits 21 and 22 (the page frame): each page's partition is the
    // same, its slices are others.
    let masks = [0x0012_3480u64, 0x0028_0d00, 0x005c_0080, 0x0001_8200, 0x0010_0300];
    let (lines, class) = pages_classed(&|a| gf2::apply(&masks, a) as usize);
    let c = cross_page(&lines, &class, 2 << 20).unwrap();
    assert_eq!(c.pages, 4);
    assert!(c.against_first.iter().all(|&(pairs, differ)| pairs == 40 * 39 / 2 && differ == 0), "{c:?}");
    assert_eq!(c.shared_with_first[0], c.per_page_seen[0]);
    assert!(c.shared_with_first[1..].iter().any(|&s| s < c.per_page_seen[0]), "frame bits move the slices: {c:?}");
}

#[test]
fn a_digit_of_the_whole_address_changes_the_partition_between_pages() {
    // A mod-3 digit of (a >> 15) that decides which parity splits the line's group (seed 000's
    // 4090 function reads its digits through such arcs): the frame shifts the digit, and the
    // pages' partitions differ, not only their labels.
    let f = |a: u64| {
        let p = gf2::parity(a & 0x0001_2480) as usize;
        let q = gf2::parity(a & 0x0000_4300) as usize;
        match (a >> 15) % 3 {
            0 => p,
            1 => 2 + q,
            _ => 4,
        }
    };
    let (lines, class) = pages_classed(&f);
    let c = cross_page(&lines, &class, 2 << 20).unwrap();
    assert!(c.against_first[1..].iter().any(|&(_, differ)| differ > 0), "{c:?}");
    assert!(cross_page(&lines[..40], &class[..40], 2 << 20).is_none(), "one page relates nothing");
}
