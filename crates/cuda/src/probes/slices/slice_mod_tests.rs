//! Tests of slice_mod.rs on synthetic slice functions with known truth (a residue modulo 47 of ten
//! XOR terms with a per-frame share: masks recovered, held-out lines predicted by line, by page
//! and from another run; wrong labels; families it must refuse) and on the H200's committed maps.

use super::h200_maps::h200;
use super::map_layout::MapOffsets;
use super::slice_fit::{relabel_mismatches, Point};
use super::slice_mod::*;
use memscope_core::gf2;

const PARTITION: u64 = 0xab000;
const FULL: &str = "bits:8+10-20";
const GRID: &str = "grid:7:15,grid:12:20";

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Ten masks over offset bits 8 and 10..20 (bits 7 and 9 never matter), independent of each
/// other and of the partition mask.
fn masks() -> Vec<u64> {
    let bits = 0x1f_fd00u64;
    let m: Vec<u64> = (0..10u64).map(|k| mix(k + 77) & bits).collect();
    let mut all = m.clone();
    all.push(PARTITION);
    assert_eq!(gf2::rank(&all), 11, "synthetic masks independent");
    m
}

/// The class seen from one partition: (0, z) and (1, z ^ 1) for z < 40, (1, z) above; then a
/// run's naming.
fn class(p: u8, z: u64, naming: u64) -> usize {
    let c = if p == 0 || z >= 40 { z } else { z ^ 1 };
    ((c * naming + 5) % 47) as usize
}

/// The truth: y = sum 2^k (parity(offset & m_k) ^ flip_k(frame)) + c(frame) mod 47, partition bit
/// parity(offset & 0xab000) ^ parity(frame & 0x6b).
fn truth(m: &[u64], frame: u64, offset: u64, naming: u64) -> usize {
    let flips = mix(frame) & 0x3ff;
    let y = m.iter().enumerate().fold(mix(frame ^ 0x55) % 47, |acc, (k, &mk)| {
        let f = u64::from(gf2::parity(offset & mk)) ^ (flips >> k & 1);
        (acc + (f << k)) % 47
    });
    class(gf2::parity(offset & PARTITION) ^ gf2::parity(frame & 0x6b), y, naming)
}

fn points(frames: &[u64], spec: &str, naming: u64) -> Vec<Point> {
    let m = masks();
    let offs = MapOffsets::parse(spec).unwrap().offsets(3);
    frames
        .iter()
        .enumerate()
        .flat_map(|(page, &fr)| {
            let m = m.clone();
            offs.iter().map(move |&o| Point { page, offset: o, label: truth(&m, fr, o, naming) }).collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_residue_function_is_recovered_and_predicts_held_out_lines() {
    let pts = points(&[0x1234, 0x1235], FULL, 1);
    let model = fit_residue(&pts, PARTITION, 8).unwrap();
    assert_eq!(model.modulus, 47);
    let mut got: Vec<(u32, u64)> = model.terms.iter().map(|t| (t.exponent, t.mask)).collect();
    got.sort_unstable();
    let want: Vec<(u32, u64)> = masks().into_iter().enumerate().map(|(k, m)| (k as u32, m)).collect();
    assert_eq!(got, want, "every term's mask and weight");
    // Half the lines held out: every one predicted.
    let (_, by_line) = residue_held_out_by_line(&pts, PARTITION, 2, 8).unwrap();
    assert_eq!((by_line.right, by_line.unpredicted), (by_line.total, 0), "{by_line:?}");
    // Whole pages held out: each page's share from 64 probe lines of its own, the model from the
    // other pages.
    let three = points(&[0x77, 0x78, 0x5_0001], FULL, 1);
    let by_page = residue_held_out_by_page(&three, PARTITION, 64, 8).unwrap();
    assert!(by_page.accuracy() > 0.99, "{by_page:?}");
    // Another run on grids of two pages (every line of the first 64 KiB, every 4 KiB step):
    // other frames, labels named otherwise.
    let other = points(&[0x9_3311, 0x9_3312], GRID, 7);
    let (across, _) = residue_held_out_across(&model, &other, 200);
    assert!(across.accuracy() > 0.99, "{across:?}");
}

#[test]
fn wrong_labels_cost_only_their_lines() {
    let pts: Vec<Point> = points(&[0x99], FULL, 1)
        .into_iter()
        .enumerate()
        .map(|(i, p)| if i % 97 == 5 { Point { label: (p.label + 1) % 47, ..p } } else { p })
        .collect();
    let (model, h) = residue_held_out_by_line(&pts, PARTITION, 2, 8).unwrap();
    assert_eq!(model.terms.len(), 10);
    assert!(h.accuracy() > 0.97 && h.accuracy() < 1.0, "{h:?}");
}

#[test]
fn other_families_are_refused() {
    // 16 XOR classes times a mod-3 digit of high bits (seed 000's family), one of 48 folded.
    let seed = |o: u64| {
        let s = gf2::apply(&[0x0ab_1080u64, 0x15_2300, 0x2e_4500, 0x7_8900], o) as usize * 3 + ((o >> 15) % 3) as usize;
        if s == 47 {
            13
        } else {
            s
        }
    };
    // A table of 47 slices over a 9-bit XOR hash.
    let table = |o: u64| {
        (mix(gf2::apply(&[0x1_0100u64, 0x2_0400, 0x4_0800, 0x8_1000, 0x10_2000, 0x6000, 0xc000, 0x18000, 0x3_0000], o))
            % 47) as usize
    };
    let offs = MapOffsets::parse(FULL).unwrap().offsets(3);
    for f in [&seed as &dyn Fn(u64) -> usize, &table] {
        let pts: Vec<Point> = offs.iter().map(|&o| Point { page: 0, offset: o, label: f(o) }).collect();
        match residue_held_out_by_line(&pts, PARTITION, 2, 8) {
            Err(e) => assert!(matches!(e, ResidueFitError::NoCycle { .. } | ResidueFitError::NotTwoOdd { .. }), "{e}"),
            Ok((_, h)) => assert!(h.accuracy() < 0.9, "{h:?}"),
        }
    }
}

#[test]
fn the_h200_slice_within_a_partition_is_a_residue_mod_47_of_ten_xor_terms() {
    let full = h200("full");
    let model = fit_residue(&full, PARTITION, 8).unwrap();
    assert_eq!((model.modulus, model.terms.len()), (47, 10), "{model:?}");
    // Every line of the page, and half of them held out.
    let all = full.iter().filter(|p| model.predict(p.page, p.offset) == Some(p.label)).count();
    assert_eq!(all, 4096);
    let (_, half) = residue_held_out_by_line(&full, PARTITION, 2, 8).unwrap();
    assert!(half.accuracy() >= 0.99, "{half:?}");
    // The classes: (0, z) and (1, z') with z' = z on 7 labels, so 0x1100 (partition bit only)
    // renames 40 labels in 20 pairs.
    let mut nodes: std::collections::HashMap<usize, Vec<(u8, u64)>> = Default::default();
    for (&k, &l) in &model.names {
        nodes.entry(l).or_default().push(k);
    }
    assert!(nodes.values().all(|v| v.len() == 2));
    assert_eq!(nodes.values().filter(|v| v[0].1 == v[1].1).count(), 7);
    // The two-page grids (another machine, another process): each page from the other page's
    // model and 64 probe lines of its own, and from the full page's model with 200 probe lines
    // per page; SM 2's view of the first page; bits 7-11 with 16-20 of the first page.
    let a = h200("sm0a");
    // One page of a grid is too sparse to fit on: the fit says so.
    let one: Vec<Point> = a.iter().filter(|p| p.page == a[0].page).copied().collect();
    assert!(fit_residue(&one, PARTITION, 8).is_err());
    for name in ["sm0a", "sm2", "sm0c"] {
        let test = h200(name);
        let (across, shares) = residue_held_out_across(&model, &test, 200);
        assert!(across.accuracy() >= 0.99, "{name}: {across:?}");
        if name == "sm0a" {
            // The adjacent page: its constant 2^10 modulo 47 above the first page's, as if the
            // frame's lowest bit (address bit 21) were the sum's bit 10 after bits 17-20's 6-9.
            let (c0, c1) = (shares[0].1.constant, shares[1].1.constant);
            assert_eq!((c1 + 47 - c0) % 47, 1024 % 47, "{shares:?}");
        }
    }
    assert_eq!(relabel_mismatches(&a, &full), (0, 624));
}

#[test]
fn the_h200_frame_moves_the_residue_by_2_to_the_10_and_flips_terms_linearly() {
    // Eight adjacent pages of another process, 64 lines each: the full page's model, each page's
    // share from 32 of its lines, the other 32 predicted.
    let model = fit_residue(&h200("full"), PARTITION, 8).unwrap();
    let (h, shares) = residue_held_out_across(&model, &h200("map8"), 200);
    assert_eq!(h.total, 256);
    assert!(h.accuracy() >= 0.95, "{h:?}");
    // From page to page the constant grows by 2^10 mod 47, carries and all: the frame number
    // enters the sum as an integer above bits 17-20 (the sum's bits 6-9).
    for w in shares.windows(2) {
        assert_eq!((w[1].1.constant + 47 - w[0].1.constant) % 47, 1024 % 47, "{shares:?}");
    }
    // The flips are XOR-linear in consecutive frame numbers: the steps that change only the
    // frame's bit 0 (every other one) flip the same terms, and so do the two that change bits 0
    // and 1 (the first frame is 1 modulo 4).
    let step: Vec<u64> = shares.windows(2).map(|w| w[0].1.flips ^ w[1].1.flips).collect();
    assert!(step[1] == step[3] && step[3] == step[5], "{step:x?}");
    assert_eq!(step[0], step[4], "{step:x?}");
    // The partition bit's constant follows the frame's bits 0, 1 and 3 (the partition probe's
    // frame mask 0x16b or 0x1eb) from a first frame 1 modulo 8.
    let part: Vec<u8> = shares.iter().map(|s| s.1.partition).collect();
    let want: Vec<u8> = (1u64..9).map(|f| gf2::parity(f & 0b1011) ^ gf2::parity(1 & 0b1011)).collect();
    assert_eq!(part, want);
}

#[test]
fn one_page_fits_the_reflected_form_too_and_pages_of_both_partition_constants_do_not() {
    // Frames 0x1234 and 0x1235 have different partition constants (0x6b: bit 0).
    let two = points(&[0x1234, 0x1235], FULL, 1);
    let model = fit_residue(&two, PARTITION, 8).unwrap();
    let page0: Vec<Point> = two.iter().filter(|p| p.page == 0).copied().collect();
    let mut other = model.reflected();
    assert_eq!(other.explained(&page0), 4096, "the same labels on the reference page");
    let page1: Vec<(u64, usize)> = two.iter().filter(|p| p.page == 1).map(|p| (p.offset, p.label)).collect();
    let (pt, n) = other.align_page(&page1);
    other.pages.insert(1, pt);
    assert_eq!(model.explained(&two), 8192);
    assert!(n < 4096 && other.explained(&two) < 8192, "{n}");
}

#[test]
fn the_h200_pages_of_other_frames_and_runs_are_predicted_from_the_full_page() {
    // The full page's model (one machine, one process); each page of four other processes on two
    // other machine starts gets its share from 200 of its lines (400 on the lone far page, whose
    // 200 left two labels' names between the runs unknown) and every other line is predicted:
    // the next page of one allocation, a page 8 GiB on, 16 consecutive pages, 8 pages 4 GiB on.
    let model = fit_residue(&h200("full"), PARTITION, 8).unwrap();
    // And the page `memscope run --probes l2.slices` mapped with 1024 pages held first (a third
    // machine), whose own fit gave the same ten masks (400 lines: 200 leave two labels unnamed).
    for (name, probes, lines) in
        [("pair", 200, 7792), ("skip", 400, 3696), ("grid16", 200, 4992), ("skip8", 200, 2496), ("function", 400, 3696)]
    {
        let (h, _) = residue_held_out_across(&model, &h200(name), probes);
        assert_eq!((h.right, h.total), (lines, lines), "{name}: {h:?}");
    }
}

#[test]
fn the_function_finding_is_given_only_where_the_residue_predicts_held_out_lines() {
    use super::slice_function::function_findings;
    // The H200's full page: the function, with its held-out accuracy.
    let found = function_findings(&h200("full"), PARTITION, "test").unwrap();
    let (function, accuracy) = (found.function, found.accuracy);
    assert!(function.value["formula"].as_str().is_some_and(|v| v.contains("mod 47")), "{function:?}");
    assert!(accuracy.as_f64().is_some_and(|a| a >= 0.99), "{accuracy:?}");
    // Labels that are no residue: the reason, no function.
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(5);
    let noise: Vec<Point> =
        h200("full").into_iter().map(|p| Point { label: rand::Rng::gen_range(&mut rng, 0..47), ..p }).collect();
    assert!(function_findings(&noise, PARTITION, "test").is_err());
}

#[test]
fn the_simulators_h200_function_is_the_fitted_one() {
    // memscope_sim::hash_h200 (what `memscope hash slice --target h200` evaluates) against the
    // residue fitted on the probe's own map of results/h200/l2-slices-function: the same masks
    // in the same order, so every line's (partition bit, residue) agrees under the page's share.
    use memscope_sim::hash_h200::{h200_slice, H200_RESIDUE_MASKS};
    use memscope_sim::hash_residue::PageShare;
    use memscope_sim::hierarchy::Mask;
    let points = h200("function");
    let model = fit_residue(&points, PARTITION, 8).unwrap();
    let masks: Vec<u64> = model.terms.iter().map(|t| t.mask).collect();
    assert_eq!(masks, H200_RESIDUE_MASKS, "{model:?}");
    assert!(model.terms.iter().enumerate().all(|(k, t)| t.exponent as usize == k));
    let pt = model.pages[&points[0].page];
    let share = PageShare { flips: Mask(pt.flips), constant: pt.constant, partition: pt.partition };
    assert!(points.iter().all(|p| h200_slice(p.offset, &share) == model.slice(p.offset, &pt)));
}

#[test]
fn the_function_findings_value_is_the_simulators_residue_form() {
    // The l2.slices.function finding of the probe's own map (results/h200/l2-slices-function)
    // carries the function in the simulated-hierarchy JSON's residue form, which `sim calibrate`
    // reads: it parses, passes the hierarchy's checks, is the simulator's H200 function with that
    // page's share, and gives every labelled line of the map the model's (partition bit, residue).
    use memscope_sim::hash_h200::{h200_function, parse_share};
    use memscope_sim::hash_residue::Residue;
    let points = h200("function");
    let found = super::slice_function::function_findings(&points, PARTITION, "test").unwrap();
    let (function, accuracy) = (found.function, found.accuracy);
    assert!(accuracy.as_f64().is_some_and(|a| a >= 0.99), "{accuracy:?}");
    let r: Residue = serde_json::from_value(function.value["function"].clone()).unwrap();
    r.check().unwrap();
    assert_eq!(r, h200_function(parse_share("0x3e4:38:0").unwrap()));
    assert_eq!(function.value["shares"][0]["page"], 0);
    assert!(function.value["formula"].as_str().unwrap().contains("mod 47"));
    let model = fit_residue(&points, PARTITION, 8).unwrap();
    let pt = model.pages[&points[0].page];
    assert!(points.iter().all(|p| r.slice_with(p.offset, &r.share) == model.slice(p.offset, &pt)));
}
