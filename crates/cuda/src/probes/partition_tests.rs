//! Tests of `l2.partition`'s analysis (partition_fit.rs) on synthetic first-touch cycles with known
//! masks and page constants (noise, slower far lines, a wrong first line per lap, flipped labels),
//! the undetermined cases (one partition, two SMs alike, labels too noisy), and the H200's
//! committed labels (results/h200/l2-partition) replayed.

use super::partition_fit::*;
use super::slices::partition_pages::{LabelRun, PAGE_LINES};
use memscope_core::{gf2, keys, Confidence};
use rand::{Rng, SeedableRng};

/// One lap's cycles per page: far (from this SM) = parity(offset & mask) XOR c[page] XOR invert;
/// near about `near`, far about `far` (a tenth of them 40 % slower still), +-12 cycles of noise,
/// `flip` of the lines given the other mode, and the start line's hop slow (1500 cycles).
fn lap(mask: u64, consts: &[u8], invert: bool, flip: f64, start: usize, seed: u64) -> Vec<Vec<u16>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let (near, far) = if invert { (288.0, 480.0) } else { (296.0, 470.0) };
    consts
        .iter()
        .map(|&c| {
            (0..PAGE_LINES)
                .map(|x| {
                    if x == start {
                        return 1500;
                    }
                    let mut f = (gf2::parity((x as u64 * 128) & mask) ^ c) == 1;
                    f ^= invert;
                    f ^= rng.gen_bool(flip);
                    let base = if !f {
                        near
                    } else if rng.gen_bool(0.1) {
                        far * 1.4
                    } else {
                        far
                    };
                    (base + rng.gen_range(-12.0..12.0)) as u16
                })
                .collect()
        })
        .collect()
}

fn consts(pages: usize, seed: u64) -> Vec<u8> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..pages).map(|_| rng.gen_range(0..2u8)).collect()
}

const START: usize = 4242;

fn method() -> Method {
    Method { pages: 16, quick: false }
}

#[test]
fn a_known_mask_is_recovered_from_two_opposite_sms_with_noise() {
    for (i, &mask) in [0xab000u64, 0x15300, 0x80, 0x1f_ff80].iter().enumerate() {
        let c = consts(16, i as u64);
        let starts = vec![START; 16];
        let a = label_lap(0, &lap(mask, &c, false, 0.001, START, 10 + i as u64), &starts).unwrap();
        let b = label_lap(2, &lap(mask, &c, true, 0.001, START, 20 + i as u64), &starts).unwrap();
        assert!((a.near_cycles - 296.0).abs() < 5.0 && (a.next_cycles - 470.0).abs() < 5.0, "{a:?}");
        let fit = fit_and_check(&a, &b).unwrap();
        assert_eq!(fit.mask, mask, "{mask:#x}");
        assert_eq!(fit.mask_other, mask);
        assert!(fit.accuracy() > 0.995 && fit.accuracy() < 1.0, "{}", fit.accuracy());
        assert_eq!(fit.test_pages, (1..16).step_by(2).collect::<Vec<_>>());
        // The start line of every page and lap is left unlabelled, nothing else (no cycles >= 2000).
        assert_eq!(fit.labelled, 2 * 16 * (PAGE_LINES - 1));
        let out = analyze(Some(&a), Ok(&b), &method(), &[], 1.234);
        let f = &out.findings[keys::L2_PARTITION_OFFSET_MASK];
        assert_eq!(f.value.as_str(), Some(gf2::format_mask(mask).as_str()));
        assert_eq!(f.confidence, Confidence::High);
        let acc = out.findings[keys::L2_PARTITION_HELD_OUT_ACCURACY].as_f64().unwrap();
        assert!((acc - fit.accuracy()).abs() < 1e-12);
        assert_eq!(out.findings[keys::L2_PARTITION_LINES_LABELLED].as_f64(), Some(fit.labelled as f64));
        assert_eq!(out.findings[keys::L2_PARTITION_SMS].value, serde_json::json!([0, 2]));
        assert_eq!(out.findings[keys::L2_PARTITION_PROBE_SECONDS].as_f64(), Some(1.23));
        let h = &out.series["l2.partition.first_touches_other"];
        assert_eq!(
            h.y.iter().sum::<f64>() as usize,
            16 * (PAGE_LINES - 1),
            "the start lines' 1500 cycles are off the axis"
        );
        let peak = h.x[h.y.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0];
        assert!((280.0..=296.0).contains(&peak), "{peak}");
    }
}

#[test]
fn a_wrong_first_line_kept_in_every_lap_does_not_move_the_mask() {
    let c = consts(16, 7);
    let a = label_lap(0, &lap(0xab000, &c, false, 0.0, START, 1), &[]).unwrap();
    let b = label_lap(2, &lap(0xab000, &c, true, 0.0, START, 2), &[]).unwrap();
    // The start line (1500 cycles) is labelled far in both laps: wrong in one of them per page.
    assert!(a.labels.iter().all(|p| p[START] == Some(true)));
    let fit = fit_and_check(&a, &b).unwrap();
    assert_eq!(fit.mask, 0xab000);
    assert_eq!(fit.labelled, 2 * 16 * PAGE_LINES);
    let wrong = fit.held_out_total - fit.held_out_correct;
    assert!((1..=8).contains(&wrong), "{wrong} wrong of {}", fit.held_out_total);
    // Every wrong line is a start line: 1500 cycles, above the split, the lap's first hop.
    assert_eq!(fit.wrong.len(), wrong);
    assert!(fit.wrong.iter().all(|w| w.line == START && w.cycles == Some(1500)), "{:?}", fit.wrong);
    let mut hop_of_line: Vec<usize> = (0..PAGE_LINES).map(|x| x + 100).collect();
    hop_of_line[START] = 0;
    let text = wrong_text(&fit, [&a, &b], &hop_of_line);
    let (in_a, in_b) =
        (fit.wrong.iter().filter(|w| w.lap == 0).count(), fit.wrong.iter().filter(|w| w.lap == 1).count());
    assert!(
        text.contains(&format!(
            "SM 0: {in_a} (0 at or below the split, {in_a} above; median 1500 cycles), {in_a} within"
        )) && text.contains(&format!("SM 2: {in_b} (0 at or below")),
        "{text}"
    );
}

#[test]
fn the_other_group_is_the_sm_that_labels_opposite() {
    let c = consts(1, 3);
    let a = label_lap(0, &lap(0xab000, &c, false, 0.002, START, 1), &[START]).unwrap();
    let alike = label_lap(1, &lap(0xab000, &c, false, 0.002, START, 2), &[START]).unwrap();
    let opposite = label_lap(2, &lap(0xab000, &c, true, 0.002, START, 3), &[START]).unwrap();
    assert!(!is_other_group(&a.labels, &alike.labels));
    assert!(is_other_group(&a.labels, &opposite.labels));
}

#[test]
fn one_partition_two_alike_sms_and_noisy_labels_are_undetermined_with_the_reason() {
    let starts = vec![START; 8];
    let c = consts(8, 5);
    // One partition: every line near from SM 0 (one mode).
    let one: Vec<Vec<u16>> = lap(0xab000, &c, false, 0.0, START, 1)
        .into_iter()
        .map(|p| p.iter().map(|&x| if x == 1500 { x } else { 300 + (x % 7) }).collect())
        .collect();
    assert!(label_lap(0, &one, &starts).is_none());
    let out = analyze(None, Err(Undetermined::NoModes { sm: 0 }), &method(), &[], 0.5);
    let f = &out.findings[keys::L2_PARTITION_OFFSET_MASK];
    assert_eq!(f.confidence, Confidence::Undetermined);
    assert!(f.note.as_deref().unwrap().contains("one mode"), "{:?}", f.note);
    assert!(out.findings[keys::L2_PARTITION_PROBE_SECONDS].as_f64().is_some());
    // No SM of the other group found.
    let a = label_lap(0, &lap(0xab000, &c, false, 0.001, START, 2), &starts).unwrap();
    let out = analyze(Some(&a), Err(Undetermined::NoOtherGroup { tried: "1..31".into() }), &method(), &[], 0.5);
    let f = &out.findings[keys::L2_PARTITION_HELD_OUT_ACCURACY];
    assert!(f.note.as_deref().unwrap().contains("opposite to SM 0"), "{:?}", f.note);
    assert_eq!(out.findings[keys::L2_PARTITION_LINES_LABELLED].as_f64(), Some((8 * (PAGE_LINES - 1)) as f64));
    // Two SMs that label alike do not split the lines.
    let b = label_lap(1, &lap(0xab000, &c, false, 0.001, START, 3), &starts).unwrap();
    assert!(matches!(fit_and_check(&a, &b), Err(Undetermined::NotSplit { a: 0, b: 1, .. })));
    // A fifth of the labels flipped at random in both laps: the mask's bits still win their votes
    // and most lines are still labelled opposite, but the function predicts too few held-out lines.
    let a = label_lap(0, &lap(0xab000, &c, false, 0.2, START, 4), &starts).unwrap();
    let b = label_lap(2, &lap(0xab000, &c, true, 0.2, START, 5), &starts).unwrap();
    match fit_and_check(&a, &b) {
        Err(Undetermined::TooNoisy { mask, correct, total }) => {
            assert_eq!(mask, "0xab000");
            assert!((correct as f64) < ACCURACY_MIN * total as f64);
        }
        other => panic!("{other:?}"),
    }
    let out = analyze(Some(&a), Ok(&b), &method(), &[], 0.5);
    let f = &out.findings[keys::L2_PARTITION_OFFSET_MASK];
    assert_eq!(f.confidence, Confidence::Undetermined);
    assert!(f.note.as_deref().unwrap().contains("too noisy"), "{:?}", f.note);
}

#[test]
fn the_h200_labels_of_sm_0_and_sm_2_give_mask_0xab000_on_held_out_pages() {
    use std::io::Read;
    let gz: &[u8] = include_bytes!("../../../../results/h200/l2-partition/labels-run1.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(gz).read_to_string(&mut text).unwrap();
    let run: LabelRun = serde_json::from_str(&text).unwrap();
    let laps: Vec<LapLabels> = run.laps[..2]
        .iter()
        .map(|l| LapLabels {
            sm: l.sm,
            near_cycles: l.near_cycles,
            next_cycles: l.next_cycles,
            split_cycles: l.split_cycles,
            labels: l.pages().unwrap()[..32].to_vec(),
            cycles: vec![],
        })
        .collect();
    assert_eq!((laps[0].sm, laps[1].sm), (0, 2));
    assert!(is_other_group(&laps[0].labels[..1], &laps[1].labels[..1]));
    let fit = fit_and_check(&laps[0], &laps[1]).unwrap();
    assert_eq!(fit.mask, 0xab000);
    assert!(fit.accuracy() > 0.9999, "{} of {}", fit.held_out_correct, fit.held_out_total);
}
