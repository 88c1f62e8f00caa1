//! Tests of the partition bit over many pages (partition_pages.rs) on synthetic labels with known
//! ground truth: an affine function of the physical address with page frames the fit never sees,
//! with wrong and missing labels; consecutive frames; the simulator's seed-000 4090 slice function
//! (its parity bit and its mod-3 digit); a function with a mod-3 digit; a frame-dependent mask;
//! and the H200's labels replayed.

use super::partition_pages::*;
use memscope_core::gf2;
use rand::{Rng, SeedableRng};

const PAGE: u64 = 2 << 20;

/// Labels of `pages` random frames under `far(physical address)`, with `wrong` of the labels
/// flipped and `missing` left out (fractions).
fn pages_of(far: &dyn Fn(u64) -> bool, pages: usize, wrong: f64, missing: f64, seed: u64) -> Vec<Vec<Option<bool>>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let frames: Vec<u64> = (0..pages).map(|_| rng.gen_range(0..1 << 14)).collect();
    pages_at(far, &frames, wrong, missing, seed)
}

/// Labels of pages at the given frames (as `pages_of`).
fn pages_at(far: &dyn Fn(u64) -> bool, frames: &[u64], wrong: f64, missing: f64, seed: u64) -> Vec<Vec<Option<bool>>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    frames
        .iter()
        .map(|&frame| {
            (0..PAGE_LINES)
                .map(|x| {
                    let a = frame * PAGE + x as u64 * 128;
                    if rng.gen_bool(missing) {
                        None
                    } else {
                        Some(far(a) ^ rng.gen_bool(wrong))
                    }
                })
                .collect()
        })
        .collect()
}

#[test]
fn an_affine_partition_with_unknown_frames_is_recovered_and_predicts_held_out_lines() {
    // The mask reads frame bits too (21..34): the page's constant is that unknown share.
    let truth = 0x2_3a40_0000u64 | 0xab000;
    let far = |a: u64| gf2::parity(a & truth) == 1;
    let train = pages_of(&far, 12, 0.002, 0.01, 1);
    let fit = fit_offset_mask(&train).unwrap();
    assert_eq!(fit.mask, truth & OFFSET_BITS);
    let (n, ok) = fit.agreement();
    assert!(ok as f64 / n as f64 > 0.995, "{ok} of {n}");
    // Other pages (other frames): constant from 5 lines, every other line predicted.
    let test = pages_of(&far, 12, 0.002, 0.01, 2);
    let (ok, total, blind) = held_out(fit.mask, &test, &probe_lines(5));
    assert_eq!(blind, 0);
    assert!(total > 12 * 16000 && ok as f64 / total as f64 > 0.99, "{ok} of {total}");
}

#[test]
fn consecutive_frames_give_the_frame_mask_and_predict_pages_no_line_of_which_was_probed() {
    // The whole-address hash reads frame bits 0, 1, 3, 5, 6 (address bits 21..27) and bit 35.
    let truth = 0x8_0000_0000u64 | (0b110_1011 << 21) | 0xab000;
    let far = |a: u64| gf2::parity(a & truth) == 1;
    let first = 8 + 128 * 37;
    let frames: Vec<u64> = (0..64).map(|i| first + i).collect();
    let pages = pages_at(&far, &frames, 0.002, 0.01, 8);
    let fit = fit_offset_mask(&pages).unwrap();
    assert_eq!(fit.mask, 0xab000);
    let known: Vec<(usize, u8)> = fit.constants.iter().copied().enumerate().collect();
    let fits = fit_frames(&known, frame_bits(64), None);
    assert!(fits.iter().any(|f| (f.frame_mask, f.first_frame_mod) == (0b110_1011, first % 128)), "{fits:?}");
    // Another allocation 37 frames on: the first frame and constant from one line on each probe
    // page; every line of the other 49 pages predicted.
    let later: Vec<u64> = (0..64).map(|i| first + 37 + i).collect();
    let test = pages_at(&far, &later, 0.002, 0.01, 9);
    let probes = probe_pages(64);
    assert_eq!(probes.len(), 15);
    let (ok, total, _) = held_out_pages(0xab000, 0b110_1011, &test, &probes, &probe_lines(1)).unwrap();
    assert!(total > 49 * 16000 && ok as f64 / total as f64 > 0.99, "{ok} of {total}");
    // Pages at scattered frames: no frame function over 7 bits fits 64 of them.
    let scattered = pages_of(&far, 64, 0.0, 0.0, 10);
    let c = fit_offset_mask(&scattered).unwrap().constants;
    assert_eq!((frame_bits(64), frame_bits(128), frame_bits(512)), (7, 8, 10));
    assert!(fit_frames(&c.iter().copied().enumerate().collect::<Vec<_>>(), frame_bits(64), None).is_empty());
}

#[test]
fn the_simulators_4090_slice_function_gives_its_linear_bit_and_not_its_mod_3_digit() {
    // Seed 000's RTX 4090 function in the simulator: slice / 18 is one parity of the address
    // (mask 0x76a990400), slice % 3 a digit with (a >> 15) mod 3 in it. Frames unknown to the fit.
    use memscope_sim::hash::slice_rtx4090;
    let linear = |a: u64| slice_rtx4090(a) / 18 == 1;
    let pages = pages_of(&linear, 8, 0.001, 0.0, 11);
    let fit = fit_offset_mask(&pages).unwrap();
    assert_eq!(fit.mask, 0x7_6a99_0400 & OFFSET_BITS);
    let (ok, total, _) = held_out(fit.mask, &pages_of(&linear, 8, 0.001, 0.0, 12), &probe_lines(3));
    assert!(ok as f64 / total as f64 > 0.99, "{ok} of {total}");
    let digit = |a: u64| slice_rtx4090(a).is_multiple_of(3);
    let fit = fit_offset_mask(&pages_of(&digit, 8, 0.0, 0.0, 13)).unwrap();
    let (ok, total, _) = held_out(fit.mask, &pages_of(&digit, 8, 0.0, 0.0, 14), &probe_lines(3));
    assert!((ok as f64 / total as f64) < 0.9, "{ok} of {total}");
}

#[test]
fn a_mod_3_digit_is_not_mistaken_for_an_offset_mask() {
    // Far when (a >> 12) mod 3 is 0, XOR a parity: no offset mask with a per-page constant fits.
    let far = |a: u64| (a >> 12).is_multiple_of(3) ^ (gf2::parity(a & 0x2b000) == 1);
    let pages = pages_of(&far, 8, 0.0, 0.0, 3);
    let fit = fit_offset_mask(&pages).unwrap();
    let (n, ok) = fit.agreement();
    assert!((ok as f64 / n as f64) < 0.9, "{ok} of {n}");
    let (ok, total, _) = held_out(fit.mask, &pages_of(&far, 8, 0.0, 0.0, 4), &probe_lines(5));
    assert!((ok as f64 / total as f64) < 0.9, "{ok} of {total}");
}

#[test]
fn a_mask_that_depends_on_the_frame_fails_on_the_pages_it_was_not_fitted_for() {
    // Frames with bit 21 set use another offset mask.
    let far = |a: u64| {
        let m = if a & (1 << 21) == 0 { 0xab000 } else { 0x5b000 };
        gf2::parity(a & m) == 1
    };
    let pages = pages_of(&far, 16, 0.0, 0.0, 5);
    let fit = fit_offset_mask(&pages).unwrap();
    let worst = fit.per_page.iter().map(|&(n, ok)| ok as f64 / n as f64).fold(1.0, f64::min);
    assert!(worst < 0.9, "every page fits: {worst}");
}

#[test]
fn page_constants_affine_in_the_page_number_are_found_and_others_are_not() {
    let numbers: Vec<u64> = (100..164).collect();
    let affine: Vec<u8> = numbers.iter().map(|&n| gf2::parity(n & 0b1011) ^ 1).collect();
    // One solution of several (bits 6 and 7 XOR to 1 on 100..163): it must reproduce every constant.
    let (m, c, rank) = constants_affine_in(&numbers, &affine).unwrap();
    assert!(numbers.iter().zip(&affine).all(|(&n, &a)| gf2::parity(n & m) ^ c == a));
    assert_eq!(m & 0b111111, 0b1011);
    assert!(rank >= 7);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
    let random: Vec<u8> = numbers.iter().map(|_| rng.gen_range(0..2)).collect();
    assert!(constants_affine_in(&numbers, &random).is_none());
}

#[test]
fn the_split_lies_between_the_near_mode_and_the_next_with_two_or_three_modes() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    // Two modes (near 300, far 470), and three (some far lines at 660 instead of 470).
    for slow in [0.0, 0.5] {
        let truth: Vec<bool> = (0..4000).map(|_| rng.gen_bool(0.5)).collect();
        let mut cycles: Vec<u16> = truth
            .iter()
            .map(|&f| match (f, rng.gen_bool(slow)) {
                (false, _) => 300,
                (true, false) => 470,
                (true, true) => 660,
            } + rng.gen_range(0..25u16))
            .collect();
        // Stray slow hits (1 %) and values left out.
        for c in cycles.iter_mut().step_by(100) {
            *c = rng.gen_range(700..2000);
        }
        cycles[5] = 0;
        cycles[6] = 9000;
        let (near, next, split) = near_far_split(cycles.iter().copied()).unwrap();
        assert!((near - 312.0).abs() < 3.0 && (next - 482.0).abs() < 3.0, "{near} {next}");
        let l = labels(&cycles, split);
        assert_eq!((l[5], l[6]), (None, None));
        let wrong = l.iter().zip(&truth).skip(1).filter(|(l, &t)| l.is_some_and(|l| l != t)).count();
        assert!(wrong <= 40, "{wrong} wrong labels");
    }
    assert!(near_far_split([0u16, 300, 301, 302, 2500]).is_none());
}

#[test]
fn the_peer_file_is_read_and_a_bad_one_is_named() {
    let (pages, laps) = (2usize, 3usize);
    let mut b: Vec<u8> = Vec::new();
    for w in [PEER_MAGIC, pages as u64, laps as u64, PAGE_LINES as u64, 0x7f00_0000_0000, 11, 0, 0] {
        b.extend(w.to_le_bytes());
    }
    for sm in [0u32, 2, 0] {
        b.extend(sm.to_le_bytes());
    }
    for i in 0..pages * laps * PAGE_LINES {
        b.extend(((i % 997) as u16).to_le_bytes());
    }
    let run = parse_peer(&b).unwrap();
    assert_eq!((run.base, run.seed, run.skip_pages, run.lap_sms.clone()), (0x7f00_0000_0000, 11, 0, vec![0, 2, 0]));
    assert_eq!(run.cycles[1][2][5], (((PAGE_LINES * 5 + 5) % 997) as u16));
    assert!(parse_peer(&b[..b.len() - 2]).unwrap_err().to_string().contains("bytes"));
    let mut bad = b.clone();
    bad[0] ^= 1;
    assert!(parse_peer(&bad).unwrap_err().to_string().contains("magic"));
}

/// The H200's labels (results/h200/l2-partition): seven peer runs in three device calls.
fn h200_run(n: usize) -> LabelRun {
    use std::io::Read;
    let bytes: &[u8] = match n {
        1 => include_bytes!("../../../../../results/h200/l2-partition/labels-run1.json.gz"),
        2 => include_bytes!("../../../../../results/h200/l2-partition/labels-run2.json.gz"),
        3 => include_bytes!("../../../../../results/h200/l2-partition/labels-run3.json.gz"),
        4 => include_bytes!("../../../../../results/h200/l2-partition/labels-run4.json.gz"),
        5 => include_bytes!("../../../../../results/h200/l2-partition/labels-run5.json.gz"),
        6 => include_bytes!("../../../../../results/h200/l2-partition/labels-run6.json.gz"),
        _ => include_bytes!("../../../../../results/h200/l2-partition/labels-run7.json.gz"),
    };
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut json).unwrap();
    serde_json::from_slice(&json).unwrap()
}

#[test]
fn the_h200_page_term_follows_consecutive_frames() {
    // Runs 4 and 5 allocated 37 and 1000 pages before theirs: the frame function's first frame
    // moves by that much (modulo 64: bits 0..5 of the frame number).
    let first = |run: usize, skip: u64| {
        let c = &check_runs(&h200_run(run), &h200_run(run), 1).unwrap()[0];
        assert!(c.frame_masks.contains(&"0x6b".to_string()), "run {run}: {:?}", c.frame_masks);
        let lap = &h200_run(run).laps[0];
        let fit = fit_offset_mask(&lap.pages().unwrap()).unwrap();
        let known: Vec<(usize, u8)> = fit.constants.iter().copied().enumerate().collect();
        let firsts: Vec<u64> =
            fit_frames(&known, 7, Some(&[0x6b])).iter().map(|f| (f.first_frame_mod + 128 - skip % 128) % 64).collect();
        assert!(!firsts.is_empty());
        firsts
    };
    let base = first(1, 0);
    for (run, skip) in [(3, 0), (4, 37), (5, 1000)] {
        let f = first(run, skip);
        assert!(f.iter().any(|x| base.contains(x)), "run {run}: {f:?} against {base:?}");
    }
    // 512 pages (runs 6 and 7, the second after 100 pages): frame bits 0..9 fitted, the masks
    // 0x16b and 0x1eb (frame bit 7 trades against the first frame), 100 frames apart.
    let firsts = |run: usize| {
        let fit = fit_offset_mask(&h200_run(run).laps[0].pages().unwrap()).unwrap();
        let known: Vec<(usize, u8)> = fit.constants.iter().copied().enumerate().collect();
        let fits = fit_frames(&known, frame_bits(known.len()), None);
        let mut masks: Vec<u64> = fits.iter().map(|f| f.frame_mask).collect();
        masks.sort_unstable();
        masks.dedup();
        assert_eq!(masks, vec![0x16b, 0x1eb], "run {run}");
        fits.iter().filter(|f| f.frame_mask == 0x16b).map(|f| f.first_frame_mod % 256).collect::<Vec<_>>()
    };
    let (six, seven) = (firsts(6), firsts(7));
    assert!(six.iter().any(|s| seven.contains(&((s + 100) % 256))), "{six:?} {seven:?}");
}

#[test]
fn the_h200_partition_bit_predicts_held_out_pages_of_other_runs() {
    // Fitted on one run, the constant of each page of another run learned from one line: every
    // lap (SMs of both groups) gives mask 0xab000 and predicts at least 99.9 % of the lines.
    for (train, test) in [(1, 2), (2, 1), (3, 4), (3, 5), (1, 5), (6, 7), (7, 6)] {
        for c in check_runs(&h200_run(train), &h200_run(test), 1).unwrap() {
            assert_eq!(c.mask, "0xab000", "run {train} lap {}", c.lap);
            let acc = c.held_out_correct as f64 / c.held_out_total as f64;
            assert!(c.held_out_total >= 64 * 16383 && acc > 0.999, "runs {train}->{test} lap {}: {acc}", c.lap);
            // Whole pages, no line of which was probed.
            let pages = c.held_out_page_lines_correct as f64 / c.held_out_page_lines as f64;
            assert!(
                c.held_out_page_lines >= 49 * 16384 && pages > 0.999,
                "runs {train}->{test} lap {}: {pages}",
                c.lap
            );
        }
    }
}
