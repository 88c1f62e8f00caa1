//! Tests of slice_frame_function.rs and of the frame function in `l2.slices.function`'s finding:
//! a synthetic residue with a known frame function (synthetic_frames.rs) laid out as the probe
//! lays out its map (the first page full, 400 probe lines on each of 7 more), its labels named
//! arbitrarily as a run names them and some of them wrong; the conversion into the simulator's
//! frame form (memscope_sim::hash_residue); the committed H200 maps that fit the layout
//! (results/h200/l2-slices-frames: two full consecutive pages; 16 and 8 consecutive pages read
//! through the full page's model of another run); and the reasons it stays undetermined.

use super::function_probe::{function_from_map, MapConfig, MapRun, TimedBit};
use super::h200_maps::h200;
use super::hammer::PAGE_BYTES;
use super::map::SliceMap;
use super::slice_fit::{pages_of, Point};
use super::slice_frame_function::*;
use super::slice_frames::predicted_share;
use super::slice_function::{function_findings, function_value};
use super::slice_mod::{fit_residue, PageTerms};
use super::synthetic_frames::{class, truth_residue, FRAME_FLIPS, FRAME_PARTITION, MASKS, PARTITION};
use memscope_core::keys;
use memscope_core::{Confidence, Finding, ProbeOutput};
use memscope_sim::hash_residue::{PageShare, Residue};
use memscope_sim::hierarchy::Mask;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::{BTreeMap, HashMap};

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |k: &str| m.get(k).cloned()
}

fn bit() -> TimedBit {
    TimedBit { sm: 0, mask: PARTITION, far_when_parity_is: Some(1), rank: None, held_out: None }
}

/// The truth's class of an offset on a true frame.
fn truth_class(frame: u64, offset: u64) -> usize {
    let r = truth_residue();
    let (p, y) = r.slice_with(offset, &r.share_at(frame * PAGE_BYTES));
    class(p, y) as usize
}

/// A run's naming of the 47 classes: a seeded permutation onto arbitrary numbers.
fn naming(seed: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..47).map(|c| 1000 + 7 * c).collect();
    v.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
    v
}

/// The probe's map of `cfg` on the truth from true frame `first` on, named by `names`, one line
/// in `wrong_every` (0: none) given another class's label. Returns the run and the wrong lines.
fn probe_map(cfg: &MapConfig, first: u64, names: &[usize], wrong_every: usize) -> (MapRun, usize) {
    let lines = cfg.lines();
    let mut wrong = 0;
    let label: Vec<Option<usize>> = lines
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let c = truth_class(first + a / PAGE_BYTES, a % PAGE_BYTES);
            if wrong_every > 0 && i % wrong_every == 3 {
                wrong += 1;
                Some(names[(c + 1 + i % 5) % 47])
            } else {
                Some(names[c])
            }
        })
        .collect();
    let run = MapRun { lines, labels: Ok(SliceMap { label, labels: 47, kernels: 0, stages: 0 }), secs: 1.0 };
    (run, wrong)
}

/// Lines whose label is not the one most lines of their simulated slice carry, and the simulated
/// slices seen. `lines`: (address in the simulator, label).
fn inconsistent(r: &Residue, lines: &[(u64, usize)]) -> (usize, usize) {
    let mut by: HashMap<u32, HashMap<usize, usize>> = HashMap::new();
    for &(a, l) in lines {
        *by.entry(r.slice_index(a)).or_default().entry(l).or_default() += 1;
    }
    let off: usize = by.values().map(|m| m.values().sum::<usize>() - m.values().max().unwrap()).sum();
    (off, by.len())
}

fn residue_of(f: &Finding) -> Residue {
    let r: Residue = serde_json::from_value(f.value["function"].clone()).unwrap();
    r.check().unwrap();
    r
}

#[test]
fn frame_bits_cover_the_pages_span_and_one_more() {
    assert_eq!([1, 2, 3, 8, 9, 12, 16, 64].map(frame_bits), [1, 2, 3, 4, 5, 5, 5, 7]);
}

#[test]
fn the_probes_layout_gives_the_frame_function_that_predicts_every_line_of_every_mapped_page() {
    // Default layout: 4096 line sets of page 0, 400 of them on pages 1-7. True frames 0x5_1231..
    // (1 modulo 8): page 7 (frame ...38) alone sets the frame's bit 3.
    let cfg = MapConfig::from_vars(vars(&[])).unwrap();
    let names = naming(3);
    let first_true = 0x5_1231;
    let (run, wrong) = probe_map(&cfg, first_true, &names, 499);
    let mut out = ProbeOutput::default();
    function_from_map(&mut out, &cfg, &bit(), &run);
    let f = &out.findings[keys::L2_SLICES_FUNCTION];
    assert_eq!(f.confidence, Confidence::High, "{f:?}");
    let r = residue_of(f);
    let frame = r.frame.clone().expect("the frame function");
    assert_eq!((r.modulus, r.terms.len(), frame.constant_step), (47, 10, 1024 % 47), "{r:?}");
    let shares = f.value["shares"].as_array().unwrap();
    let first = shares[0]["frame"].as_u64().unwrap();
    for (k, s) in shares.iter().enumerate() {
        assert_eq!((s["page"].as_u64(), s["frame"].as_u64()), (Some(k as u64), Some(first + k as u64)));
    }
    let note = f.note.clone().unwrap();
    assert!(note.contains(&format!("page k is frame {first} + k")) && note.contains("extrapolated"), "{note}");
    // The truth's function: the same masks and, from the true first frame modulo 16 (the lowest
    // of the four that fit: 1, 5, 9, 13), the truth's frame masks within the frame bits the pages
    // vary (0x6b's bits 0, 1 and 3 for the partition).
    assert!(note.contains("4 first frames fit the shares ([1, 5, 9, 13] modulo 16)"), "{note}");
    assert_eq!(first, first_true % 16);
    assert_eq!(r.terms.iter().map(|t| t.mask.0).collect::<Vec<_>>(), MASKS);
    assert_eq!(frame.flip_masks.iter().map(|m| m.0).collect::<Vec<_>>(), FRAME_FLIPS);
    assert_eq!(frame.partition_mask.0, FRAME_PARTITION & 0xf);
    // The simulator with the finding's function, page k at frame first + k: every line of every
    // mapped page (all 4096 line sets, not only the 400 probe lines) on a simulated slice whose
    // lines all carry one label; 94 slices, two per label.
    let mut all = Vec::new();
    for k in 0..8u64 {
        for &o in &cfg.offsets {
            all.push(((first + k) * PAGE_BYTES + o, names[truth_class(first_true + k, o)]));
        }
    }
    assert_eq!(inconsistent(&r, &all), (0, 94));
    // The map's own lines, wrong labels and all: only those are off.
    let m = run.labels.as_ref().unwrap();
    let mapped: Vec<(u64, usize)> = run
        .lines
        .iter()
        .zip(&m.label)
        .map(|(&a, l)| ((first + a / PAGE_BYTES) * PAGE_BYTES + a % PAGE_BYTES, l.unwrap()))
        .collect();
    let (off, _) = inconsistent(&r, &mapped);
    assert!(off <= wrong, "{off} of {wrong}");
    // Pages 1-6 left out are predicted from the others' shares (only their wrong labels missed);
    // page 7's frame sets a bit no other page varies: not predicted, and the note says so.
    let h = &out.findings[keys::L2_SLICES_FRAME_HELD_OUT_ACCURACY];
    let note = h.note.clone().unwrap();
    assert!(note.contains("page 7 (its frame sets a bit no other page varies)"), "{note}");
    assert!(note.contains("of 2800 lines of 7 pages left out"), "{note}");
    let wrong_1_6 = (4096..4096 + 6 * 400).filter(|i| i % 499 == 3).count();
    assert_eq!(h.as_f64(), Some((2400 - wrong_1_6) as f64 / 2800.0), "{note}");
    assert_eq!(h.confidence, Confidence::Medium);
    let acc = out.findings[keys::L2_SLICES_HELD_OUT_ACCURACY].as_f64().unwrap();
    assert!((0.99..1.0).contains(&acc), "{acc}");
}

#[test]
fn pages_left_out_are_predicted_unless_the_first_frames_that_fit_the_others_disagree() {
    // True frames 0x5_1232.. (2 modulo 4): every page left out gets its share from the others'.
    // From 0x5_1230 (0 modulo 4) the first frames that fit the other pages give pages 3 and 4
    // different shares: not predicted, and the note says why.
    let cfg = MapConfig::from_vars(vars(&[])).unwrap();
    for (first_true, ratio, says) in [
        (0x5_1232, 1.0, "every page left out got a share"),
        (
            0x5_1230,
            5.0 / 7.0,
            "page 3 (the first frames that fit the other pages give it different shares); page 4 (the first frames",
        ),
    ] {
        let (run, _) = probe_map(&cfg, first_true, &naming(5), 0);
        let mut out = ProbeOutput::default();
        function_from_map(&mut out, &cfg, &bit(), &run);
        let h = &out.findings[keys::L2_SLICES_FRAME_HELD_OUT_ACCURACY];
        assert_eq!(h.as_f64(), Some(ratio), "{h:?}");
        assert_eq!(h.confidence, if ratio == 1.0 { Confidence::High } else { Confidence::Medium });
        assert!(h.note.clone().unwrap().contains(says), "{h:?}");
    }
}

#[test]
fn the_frame_form_is_the_share_fits_in_the_simulators_terms() {
    // ShareFit::share(page) (slice_frames.rs) and the simulator's share_at(frame) of the same
    // fit written as `frame` (frame 0's share, constant_step): equal on every page the fit
    // predicts, the mapped ones and those past them.
    let cfg = MapConfig::from_vars(vars(&[])).unwrap();
    let (run, _) = probe_map(&cfg, 0x9_77a3, &naming(7), 0);
    let labels = run.labels.as_ref().unwrap();
    let points: Vec<Point> = run
        .lines
        .iter()
        .zip(&labels.label)
        .map(|(&a, l)| Point { page: (a / PAGE_BYTES) as usize, offset: a % PAGE_BYTES, label: l.unwrap() })
        .collect();
    let model = fit_residue(&points, PARTITION, 8).unwrap();
    let ff = frame_function(&model, &points).unwrap();
    let r: Residue = serde_json::from_value(function_value(&ff.form.model, &PageTerms::default(), Some(&ff))).unwrap();
    r.check().unwrap();
    let sim = |s: PageTerms| PageShare { flips: Mask(s.flips), constant: s.constant, partition: s.partition };
    let mut compared = 0;
    for page in 0..64 {
        if let Some(s) = ff.fit.share(page) {
            assert_eq!(r.share_at(ff.frame_of(page) * PAGE_BYTES), sim(s), "page {page}");
            compared += 1;
        }
    }
    assert!(compared >= 8, "{compared}");
    // The mapped pages' shares are the fit's.
    for &(page, s) in &ff.form.shares {
        assert_eq!(ff.fit.share(page), Some(s), "page {page}");
    }
}

#[test]
fn pages_past_the_map_are_predicted_where_every_first_frame_agrees() {
    // The allocation's pages 8-15 (not mapped): where every first frame that fits the eight
    // mapped pages gives a page one share, the simulator with the finding's function puts each of
    // its lines on a slice of one label, the same label the mapped pages gave that slice.
    let cfg = MapConfig::from_vars(vars(&[])).unwrap();
    let names = naming(9);
    // Frames 2-9 modulo 16 mapped: the fits (first frames 2, 6, 10, 14 modulo 16) agree on the
    // next eight.
    let first_true = 0x5_1202;
    let (run, _) = probe_map(&cfg, first_true, &names, 0);
    let points: Vec<Point> = run
        .lines
        .iter()
        .zip(&run.labels.as_ref().unwrap().label)
        .map(|(&a, l)| Point { page: (a / PAGE_BYTES) as usize, offset: a % PAGE_BYTES, label: l.unwrap() })
        .collect();
    let model = fit_residue(&points, PARTITION, 8).unwrap();
    let ff = frame_function(&model, &points).unwrap();
    let r: Residue = serde_json::from_value(function_value(&ff.form.model, &PageTerms::default(), Some(&ff))).unwrap();
    let first = ff.frame_of(0);
    let mut lines: Vec<(u64, usize)> =
        points.iter().map(|p| ((first + p.page as u64) * PAGE_BYTES + p.offset, p.label)).collect();
    let mut past = 0;
    for k in 8..16u64 {
        if predicted_share(&ff.form.fits, k as usize).is_ok() {
            past += 1;
            lines.extend(
                cfg.offsets.iter().map(|&o| ((first + k) * PAGE_BYTES + o, names[truth_class(first_true + k, o)])),
            );
        }
    }
    assert_eq!((past, ff.first_frames.len()), (8, 4), "{:?}", ff.first_frames);
    assert_eq!(inconsistent(&r, &lines), (0, 94), "{past} pages past the map");
}

/// The labelled lines of a committed map on the probe's layout `cfg` (lines it lacks unlabelled).
fn as_probe_map(cfg: &MapConfig, points: &[Point]) -> MapRun {
    let by: HashMap<(usize, u64), usize> = points.iter().map(|p| ((p.page, p.offset), p.label)).collect();
    let lines = cfg.lines();
    let label: Vec<Option<usize>> =
        lines.iter().map(|&a| by.get(&((a / PAGE_BYTES) as usize, a % PAGE_BYTES)).copied()).collect();
    MapRun { lines, labels: Ok(SliceMap { label, labels: 47, kernels: 0, stages: 0 }), secs: 1.0 }
}

#[test]
fn the_h200_pair_on_the_probes_layout_gives_a_frame_function_but_no_held_out_check() {
    // Two full consecutive pages of one allocation (results/h200/l2-slices-frames/pair), taken as
    // the probe takes two pages: the first full, 400 lines of the second. The frame function fits
    // (two pages always do) and names every line of both full pages; leaving a page out needs 3.
    let cfg = MapConfig::from_vars(vars(&[("MEMSCOPE_SLICES_MAP", "2")])).unwrap();
    let pair = h200("pair");
    let run = as_probe_map(&cfg, &pair);
    assert!(run.labels.as_ref().unwrap().label.iter().all(Option::is_some), "the pair map has the layout's lines");
    let mut out = ProbeOutput::default();
    function_from_map(&mut out, &cfg, &bit(), &run);
    let f = &out.findings[keys::L2_SLICES_FUNCTION];
    let r = residue_of(f);
    assert!(r.frame.is_some(), "{:?}", f.value);
    assert_eq!(r.frame.as_ref().unwrap().constant_step, 1024 % 47);
    let first = f.value["shares"][0]["frame"].as_u64().unwrap();
    let lines: Vec<(u64, usize)> =
        pair.iter().map(|p| ((first + p.page as u64) * PAGE_BYTES + p.offset, p.label)).collect();
    assert_eq!(lines.len(), 8192);
    assert_eq!(inconsistent(&r, &lines), (0, 94));
    let h = &out.findings[keys::L2_SLICES_FRAME_HELD_OUT_ACCURACY];
    assert_eq!(h.confidence, Confidence::Undetermined);
    assert!(h.note.clone().unwrap().starts_with("2 page(s) mapped: leaving one out needs at least 3"), "{h:?}");
}

#[test]
fn the_h200_frames_maps_through_the_full_pages_model_give_the_frame_function_and_its_held_out_pages() {
    // 16 consecutive pages and 8 pages 4 GiB on (512 lines a page), and the 8 adjacent pages of
    // results/h200/l2-partition/map8 (64 lines a page), read through the full page's model of
    // another run (as the probe reads its pages through its first page's model): the simulator
    // with the frame function puts every line of each map on a slice whose lines all carry one
    // label; each page but the first left out is predicted from the others' shares (map8: 13 of
    // its 384 lines missed), but the last, whose frame sets a bit no other page varies.
    let model = fit_residue(&h200("full"), PARTITION, 8).unwrap();
    for (name, right, total) in [("grid16", 7168, 7680), ("skip8", 3072, 3584), ("map8", 371, 448)] {
        let points = h200(name);
        let pages = pages_of(&points).len();
        let ff = frame_function(&model, &points).unwrap();
        let r: Residue =
            serde_json::from_value(function_value(&ff.form.model, &PageTerms::default(), Some(&ff))).unwrap();
        r.check().unwrap();
        let lines: Vec<(u64, usize)> =
            points.iter().map(|p| (ff.frame_of(p.page) * PAGE_BYTES + p.offset, p.label)).collect();
        assert_eq!(inconsistent(&r, &lines).0, 0, "{name}");
        let h = frame_held_out_finding(&model, &points, &Ok(ff), "test");
        let note = h.note.clone().unwrap();
        assert!(
            note.starts_with(&format!("{right} of {total} lines of {} pages left out", pages - 1)),
            "{name}: {note}"
        );
        assert!(
            note.contains(&format!("page {} (its frame sets a bit no other page varies)", pages - 1)),
            "{name}: {note}"
        );
        assert_eq!(h.as_f64(), Some(right as f64 / total as f64));
    }
}

#[test]
fn one_page_or_shares_off_the_frames_leave_the_frame_function_out_with_why() {
    // One page (the probe's own map, results/h200/l2-slices-function): the function with the
    // page's share for every frame, no frame function, the frame check undetermined.
    let f = function_findings(&h200("function"), PARTITION, "test").unwrap();
    assert!(f.function.value["function"].get("frame").is_none());
    assert!(f.function.note.clone().unwrap().contains("no frame function: 1 page(s) mapped"), "{:?}", f.function);
    assert_eq!(f.frame_accuracy.confidence, Confidence::Undetermined);
    assert!(f.frame_accuracy.note.clone().unwrap().starts_with("1 page(s) mapped"), "{:?}", f.frame_accuracy);
    // Page 3 on another frame (not consecutive): its share follows no frame function with the
    // others; the function stays, the frame function is left out and the check says why.
    let cfg = MapConfig::from_vars(vars(&[])).unwrap();
    let names = naming(11);
    let lines = cfg.lines();
    let label: Vec<Option<usize>> = lines
        .iter()
        .map(|&a| {
            let page = a / PAGE_BYTES;
            let frame = if page == 3 { 0x7_0005 } else { 0x5_1230 + page };
            Some(names[truth_class(frame, a % PAGE_BYTES)])
        })
        .collect();
    let run = MapRun { lines, labels: Ok(SliceMap { label, labels: 47, kernels: 0, stages: 0 }), secs: 1.0 };
    let mut out = ProbeOutput::default();
    function_from_map(&mut out, &cfg, &bit(), &run);
    let f = &out.findings[keys::L2_SLICES_FUNCTION];
    assert_eq!(f.confidence, Confidence::High);
    assert!(f.value["function"].get("frame").is_none(), "{:?}", f.value["function"]);
    assert!(f.note.clone().unwrap().contains("no frame function: the "), "{:?}", f.note);
    let h = &out.findings[keys::L2_SLICES_FRAME_HELD_OUT_ACCURACY];
    assert_eq!(h.confidence, Confidence::Undetermined);
    assert!(h.note.clone().unwrap().starts_with("no frame function: the 8 mapped pages"), "{h:?}");
}
