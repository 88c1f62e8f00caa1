//! Tests of slice_fit.rs on synthetic slice functions with known truth: a table over an XOR hash
//! of the whole address (the family: kernel, table and page shifts recovered, held-out lines
//! predicted), the same with wrong labels, and the seed's family with a mod-3 digit of high
//! address bits (not of the family: the held-out accuracy says so).

use super::h200_maps::h200;
use super::map_layout::MapOffsets;
use super::slice_fit::*;
use memscope_core::gf2;

/// A hash of the whole address to 9 bits, blind to bit 7 and to bits 12 ^ 13 and 16 ^ 19 (its
/// kernel over the offset, with two more vectors), then a table of 47 slices. The offset alone
/// reaches every hash value, so every frame's share is a shift by some offset.
fn hash(a: u64) -> u64 {
    let rows = [
        0x1_28b4_0100u64,
        0xe_8e30_0200,
        0x1_1e30_1400,
        0x9_0c04_1800,
        0xf_29d4_1000,
        0x3_8984_5000,
        0x2_4ec4_9000,
        0xa_e961_0000,
        0x5_f546_0000,
    ];
    let b = |i: u32| (a >> i) & 1;
    // Bit 7 dropped, bits 12 and 13 read only as their XOR, and so bits 16 and 19.
    let a = (a & !0x9_3080) | ((b(12) ^ b(13)) << 12) | ((b(16) ^ b(19)) << 16);
    gf2::apply(&rows, a)
}

fn table_slice(a: u64) -> usize {
    ((hash(a).wrapping_mul(0x2545_f491_4f6c_dd1d) >> 17) % 47) as usize
}

fn points(f: &dyn Fn(u64) -> usize, frames: &[u64], spec: &str) -> Vec<Point> {
    let offs = MapOffsets::parse(spec).unwrap().offsets(3);
    frames
        .iter()
        .enumerate()
        .flat_map(|(page, &fr)| offs.iter().map(move |&o| Point { page, offset: o, label: f((fr << 21) | o) }))
        .collect()
}

const G: &str = "grid:7:15,grid:12:20";

#[test]
fn a_table_over_an_xor_hash_is_recovered_and_predicts_held_out_lines() {
    let pts = points(&table_slice, &[0x1234, 0x1235], G);
    let k = fit_kernel(&agreements(&pts, OFFSET_BITS), 8, 0.99);
    // The hash's kernel over offsets bits 7..20 that the grids' differences reach.
    for v in [0x80u64, 0x3000, 0x9_0000] {
        assert_eq!(gf2::reduce(&k.basis, v), 0, "{v:#x} in the kernel");
    }
    assert_eq!(k.violations, 0);
    // Held out by line over four pages (over two, 2 % of the cosets have no line in training).
    let four = points(&table_slice, &[0x1234, 0x1235, 0x1236, 0x1237], G);
    let (_, by_line) = held_out_by_line(&four, OFFSET_BITS, 5, 8, 0.99);
    assert!(by_line.accuracy() > 0.99, "{by_line:?}");
    // Another run: other frames, labels named otherwise; the table from four pages (two pages
    // see 448 of its 512 entries).
    let other = points(&|a| (table_slice(a) * 7 + 3) % 47, &[0x5_0077, 0x5_0078], G);
    let across = held_out_across(&four, &other, OFFSET_BITS, 200, &k.basis);
    assert!(across.accuracy() > 0.99, "{across:?}");
    let six = points(&table_slice, &[0x40, 0x41, 0x42, 0x43, 0x44, 0x45], G);
    let by_page = held_out_by_page(&six, OFFSET_BITS, 100, &k.basis);
    assert!(by_page.accuracy() > 0.99, "{by_page:?}");
}

#[test]
fn symmetries_are_the_kernel_and_the_renamings() {
    // A table over the hash whose entries at x and x ^ 1 are a fixed renaming of each other
    // (slice s and s ^ 1): the hash bit 0 flips the slice's low bit.
    let f = |a: u64| {
        let h = hash(a);
        (((h >> 1).wrapping_mul(0x2545_f491_4f6c_dd1d) >> 20) % 23 * 2 + (h & 1)) as usize
    };
    let pts = points(&f, &[0x77], "grid:7:20");
    let sym = symmetries(&pts, OFFSET_BITS, 8);
    let k = fit_kernel(&agreements(&pts, OFFSET_BITS), 8, 1.0);
    let kernel: Vec<u64> = sym.iter().filter(|s| !s.renames).map(|s| s.delta).collect();
    assert!(!kernel.is_empty() && kernel.iter().all(|&d| gf2::reduce(&k.basis, d) == 0));
    assert_eq!(kernel.len(), (1 << k.basis.len()) - 1, "every kernel vector");
    // The renamings: the differences whose hash is exactly bit 0 (twice the kernel's count).
    let renames: Vec<u64> = sym.iter().filter(|s| s.renames).map(|s| s.delta).collect();
    assert_eq!(renames.len(), 1 << k.basis.len());
    assert!(renames.iter().all(|&d| hash(d) == 1), "{renames:x?}");
}

#[test]
fn wrong_labels_cost_only_their_lines() {
    let pts: Vec<Point> = points(&table_slice, &[0x99, 0x9a], G)
        .into_iter()
        .enumerate()
        .map(|(i, p)| if i % 97 == 5 { Point { label: (p.label + 1) % 47, ..p } } else { p })
        .collect();
    let k = fit_kernel(&agreements(&pts, OFFSET_BITS), 8, 0.95);
    assert_eq!(gf2::reduce(&k.basis, 0x80), 0);
    let (_, h) = held_out_by_line(&pts, OFFSET_BITS, 5, 8, 0.95);
    assert!(h.accuracy() > 0.97 && h.accuracy() < 1.0, "{h:?}");
}

/// The seed's family: 16 XOR classes times (address >> 15) mod 3, one of 48 slices folded.
fn seed_family(a: u64) -> usize {
    let rows = [0x0ab_1080u64, 0x15_2300, 0x2e_4500, 0x7_8900];
    let s = gf2::apply(&rows, a ^ ((a >> 21) * 0x3_4500)) as usize * 3 + ((a >> 15) % 3) as usize;
    if s == 47 {
        13
    } else {
        s
    }
}

#[test]
fn the_seeds_family_with_a_mod_3_digit_is_not_a_table_over_a_hash() {
    let pts = points(&seed_family, &[0x700, 0x701], G);
    let k = fit_kernel(&agreements(&pts, OFFSET_BITS), 8, 0.99);
    let (_, by_line) = held_out_by_line(&pts, OFFSET_BITS, 5, 8, 0.99);
    let other = points(&seed_family, &[0x9_3311, 0x9_3312], G);
    let across = held_out_across(&pts, &other, OFFSET_BITS, 200, &k.basis);
    // The digit carries across bits 15..20 and the frame: neither split predicts at 99 %.
    assert!(by_line.accuracy() < 0.99 || across.accuracy() < 0.99, "{by_line:?} {across:?}");
}

#[test]
fn the_h200_maps_repeat_and_an_sm_of_the_other_partition_sees_the_same_classes() {
    let (a, b, sm2) = (h200("sm0a"), h200("sm0b"), h200("sm2"));
    assert_eq!((a.len(), b.len(), sm2.len()), (2016, 2016, 1008), "every line labelled");
    assert_eq!(relabel_mismatches(&a, &b), (0, 2016), "the repeat: the same partition");
    // SM 2 (the other L2 partition) and SM 0 on page 0: the same 47 classes, so a label is the
    // index within a partition, the same for a line's home slice and its copy.
    assert_eq!(relabel_mismatches(&a, &sm2), (0, 1008));
    assert_eq!(relabel_mismatches(&sm2, &a), (0, 1008));
    let labels = |p: &[Point]| p.iter().map(|x| x.label).collect::<std::collections::BTreeSet<_>>().len();
    assert_eq!((labels(&a), labels(&sm2)), (47, 47));
}

#[test]
fn the_h200_slice_ignores_bits_7_and_9_and_spreads_each_4_kib_block_over_8_slices() {
    for name in ["sm0a", "sm0c", "sm2"] {
        let p = h200(name);
        let agr = agreements(&p, OFFSET_BITS);
        for a in agr.iter().filter(|a| a.delta.is_power_of_two() && a.pairs > 0) {
            let kept = a.agree == a.pairs;
            assert_eq!(kept, a.delta == 0x80 || a.delta == 0x200, "{name}: bit {:?}", a);
        }
        // Every 4 KiB block whose 8 lines with bits 7 and 9 clear were mapped: 8 slices.
        let mut blocks: std::collections::HashMap<(usize, u64), Vec<usize>> = Default::default();
        for x in p.iter().filter(|x| x.offset & 0x280 == 0) {
            blocks.entry((x.page, x.offset >> 12)).or_default().push(x.label);
        }
        let full: Vec<&Vec<usize>> = blocks.values().filter(|v| v.len() == 8).collect();
        assert!(full.len() >= 16, "{name}");
        for v in full {
            assert_eq!(v.iter().collect::<std::collections::BTreeSet<_>>().len(), 8, "{name}");
        }
    }
}

#[test]
fn the_h200_slice_within_a_partition_is_not_a_table_over_an_xor_hash() {
    let a = h200("sm0a");
    let k = fit_kernel(&agreements(&a, OFFSET_BITS), 8, 0.99);
    // Bits 7 and 9, and one more difference (0x14d00: bits 8, 10, 11, 14, 16) on its 32 pairs.
    assert_eq!(k.basis, [0x14d00, 0x200, 0x80]);
    assert_eq!(k.violations, 0);
    let (_, by_line) = held_out_by_line(&a, OFFSET_BITS, 5, 8, 0.99);
    let by_page = held_out_by_page(&a, OFFSET_BITS, 200, &k.basis);
    // Far from 99 %: the family does not describe the H200 (docs/L2_SLICES.md).
    assert!(by_line.accuracy() < 0.5 && by_page.accuracy() < 0.5, "{by_line:?} {by_page:?}");
}

#[test]
fn the_h200_full_page_has_two_symmetries_and_every_64_kib_block_reaches_every_slice() {
    let full = h200("full");
    assert_eq!(full.len(), 4096, "every line with bits 7 and 9 clear");
    // Another machine, another process: the same partition as the grids' first page.
    assert_eq!(relabel_mismatches(&h200("sm0a"), &full), (0, 624));
    let sym: Vec<(u64, bool)> = symmetries(&full, OFFSET_BITS, 8).iter().map(|s| (s.delta, s.renames)).collect();
    assert_eq!(sym, [(0x1100, true), (0x14d00, false), (0x15c00, true)]);
    let mut blocks: std::collections::HashMap<(u64, u32), std::collections::BTreeSet<usize>> = Default::default();
    for x in &full {
        for shift in [12, 16] {
            blocks.entry((x.offset >> shift, shift)).or_default().insert(x.label);
        }
    }
    for ((_, shift), labels) in blocks {
        assert_eq!(labels.len(), if shift == 12 { 8 } else { 47 });
    }
    let (_, by_line) = held_out_by_line(&full, OFFSET_BITS, 5, 8, 0.99);
    assert_eq!(by_line.right + by_line.unpredicted, by_line.total, "the table never errs, it only lacks cosets");
    assert!(by_line.accuracy() < 0.9, "{by_line:?}");
}
