//! Tests of page_shift.rs: synthetic pages with known shifts and renamings (recovered, held-out
//! lines predicted), pages of random labels (not reproduced), a reference with a known renaming
//! symmetry, shifts affine in the frame number against random ones; then the H200's maps of
//! results/h200/l2-slices-frames against the full page of results/h200/l2-slices-grid.

use super::page_shift::*;
use super::slice_fit::points_from_map;
use rand::{seq::SliceRandom, Rng, SeedableRng};
use std::collections::HashMap;

/// The H200's partition bit within a page (docs/L2_SLICES.md).
const MASK: u64 = 0xab000;
/// Offset bits a slice can differ by on the H200 (bits 7 and 9 never change it).
const BITS: [u32; 12] = [8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20];

/// Every offset over `BITS`: the 4096 line sets of a full map, also the shift candidates.
fn line_sets() -> Vec<u64> {
    (0..1u64 << BITS.len())
        .map(|k| BITS.iter().enumerate().filter(|(i, _)| k >> i & 1 == 1).map(|(_, b)| 1 << b).sum())
        .collect()
}

fn random_reference(rng: &mut impl Rng) -> PageMap {
    line_sets().into_iter().map(|o| (o, rng.gen_range(0..47))).collect()
}

/// A page that reads `reference` at `o ^ shift`, renamed by one random bijection per parity.
fn shifted_page(reference: &PageMap, shift: u64, rng: &mut impl Rng) -> PageMap {
    let mut rename = [(0..47).collect::<Vec<usize>>(), (0..47).collect()];
    rename.iter_mut().for_each(|r| r.shuffle(rng));
    reference
        .keys()
        .map(|&o| (o, rename[memscope_core::gf2::parity(o & MASK) as usize][reference[&(o ^ shift)]]))
        .collect()
}

#[test]
fn a_shifted_and_renamed_page_is_recovered_and_predicts_held_out_lines() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let reference = random_reference(&mut rng);
    let cands = line_sets();
    for shift in [0x0, 0xd000, 0x1f3000, 0x500] {
        let page = shifted_page(&reference, shift, &mut rng);
        let (fit, h) = held_out(&reference, &page, MASK, &cands, 2).unwrap();
        assert_eq!(fit.shift, shift);
        assert_eq!(fit.consistency, 1.0);
        assert!(h.accuracy() >= 0.99, "{}", h.accuracy());
    }
}

#[test]
fn a_page_of_random_labels_is_not_reproduced() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
    let reference = random_reference(&mut rng);
    let page = random_reference(&mut rng);
    let (fit, h) = held_out(&reference, &page, MASK, &line_sets(), 2).unwrap();
    assert!(fit.consistency < 0.5 && h.accuracy() < 0.2, "{} {}", fit.consistency, h.accuracy());
}

#[test]
fn a_renaming_symmetry_of_the_reference_is_found_and_no_other() {
    // Labels on the cosets of {0, 0x1100}: o and o ^ 0x1100 carry labels swapped by a fixed
    // involution (label l <-> 46 - l).
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
    let mut reference = PageMap::new();
    for o in line_sets() {
        if !reference.contains_key(&o) {
            let l = rng.gen_range(0..47);
            reference.insert(o, l);
            reference.insert(o ^ 0x1100, 46 - l);
        }
    }
    assert_eq!(renaming_symmetries(&reference, MASK, &line_sets()), vec![0x1100]);
}

#[test]
fn shifts_affine_in_the_frame_number_are_found_and_random_ones_are_not() {
    // shift(f) = c ^ H f over frame bits 0..4, base frame 5 (consecutive pages 5, 6, ...).
    let h = [0xc100u64, 0x2c00, 0x2000, 0x0900, 0x4400];
    let shift = |f: u64| h.iter().enumerate().filter(|(i, _)| f >> i & 1 == 1).fold(0x8500, |a, (_, &m)| a ^ m);
    let shifts: Vec<u64> = (5..21).map(shift).collect();
    let (bases, redundant) = affine_in_frame(&shifts, &[], 32);
    assert!(bases.contains(&5), "{bases:?}");
    assert!(redundant >= 8, "{redundant}");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(14);
    let cands = line_sets();
    let random: Vec<u64> = (0..16).map(|_| cands[rng.gen_range(0..cands.len())]).collect();
    assert!(affine_in_frame(&random, &[], 32).0.is_empty());
}

/// A map of results/h200 as page -> offset -> label.
fn h200(bytes: &[u8]) -> HashMap<usize, PageMap> {
    use std::io::Read;
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut json).unwrap();
    let mut pages: HashMap<usize, PageMap> = HashMap::new();
    for p in points_from_map(&serde_json::from_slice(&json).unwrap()).unwrap() {
        pages.entry(p.page).or_default().insert(p.offset, p.label);
    }
    pages
}

fn full_reference() -> PageMap {
    h200(include_bytes!("../../../../../results/h200/l2-slices-grid/full-map.json.gz")).remove(&0).unwrap()
}

#[test]
fn the_h200_full_pages_of_other_frames_are_the_reference_shifted_and_renamed() {
    // The next page of one allocation and a page 8 GiB further (another process): fitted on every
    // other line set, the other half predicted.
    let reference = full_reference();
    let pair = h200(include_bytes!("../../../../../results/h200/l2-slices-frames/pair-map.json.gz"));
    let skip = h200(include_bytes!("../../../../../results/h200/l2-slices-frames/skip-map.json.gz"));
    // The pair's first page is the reference's frame: shift 0, labels unchanged.
    let (same, score) = held_out(&reference, &pair[&0], MASK, &line_sets(), 2).unwrap();
    assert_eq!((same.shift, score.right, score.total), (0, 2048, 2048));
    for page in [&pair[&1], &skip[&0]] {
        let (fit, h) = held_out(&reference, page, MASK, &line_sets(), 2).unwrap();
        assert_eq!(fit.consistency, 1.0, "{:#x}", fit.shift);
        assert_eq!((h.right, h.total), (2048, 2048), "{:#x}", fit.shift);
        assert_eq!(fit.renaming.len(), 94);
    }
}

#[test]
fn the_h200_shifts_of_sixteen_consecutive_pages_are_affine_in_the_frame_number() {
    let reference = full_reference();
    let cands = line_sets();
    let symmetries = renaming_symmetries(&reference, MASK, &cands);
    assert_eq!(symmetries.len(), 3, "{symmetries:x?}");
    for (bytes, pages) in [
        (&include_bytes!("../../../../../results/h200/l2-slices-frames/grid16-map.json.gz")[..], 16),
        (&include_bytes!("../../../../../results/h200/l2-slices-frames/skip8-map.json.gz")[..], 8),
    ] {
        let maps = h200(bytes);
        let mut shifts = Vec::new();
        for k in 0..pages {
            let lines: Vec<(u64, usize)> = maps[&k].iter().map(|(&o, &l)| (o, l)).collect();
            let fit = fit_page(&reference, &lines, MASK, &cands).unwrap();
            assert_eq!(fit.consistency, 1.0, "page {k}");
            shifts.push(fit.shift);
        }
        let (bases, redundant) = affine_in_frame(&shifts, &symmetries, 32);
        assert!(!bases.is_empty(), "{shifts:x?}");
        if pages == 16 {
            assert!(redundant >= 9, "{redundant}");
        }
    }
}
