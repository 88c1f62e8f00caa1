//! Tests of the `l2.sm_map` analysis (sm_map_fit.rs, sm_map.rs `analyze`) on synthetic laps with
//! known ground truth: two L2 partitions (or one), SMs interleaved between them, noise, stalls,
//! repetitions where the prime failed, and SMs with their own near and far latencies.

use super::sm_map::{analyze, Method};
use super::sm_map_fit::*;
use rand::{Rng, SeedableRng};

const HZ: f64 = 2.0e9;
const OVERHEAD: f64 = 15.0;

/// The synthetic chip: line i's home partition, SM s's partition, and each SM's near and far
/// cycles (truth, without the recording overhead).
struct Chip {
    home: Vec<u8>,
    part: Vec<u8>,
    near: Vec<f64>,
    far: Vec<f64>,
}

fn chip(sms: u32, lines: usize, partitions: u8, seed: u64) -> Chip {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let home = (0..lines).map(|_| rng.gen_range(0..partitions)).collect();
    // Interleaved: even SMs in partition 0, odd in 1 (a GPC-major numbering would look so).
    let part = (0..sms).map(|s| (s % partitions as u32) as u8).collect();
    let near = (0..sms).map(|s| 280.0 + (s % 7) as f64 * 2.0).collect();
    let far = (0..sms).map(|s| 480.0 + (s % 5) as f64 * 4.0).collect();
    Chip { home, part, near, far }
}

/// One repetition on SM `sm`: first touches near or far by home (noise up to `noise` cycles, one
/// line in 200 a stall at DRAM's 700), the warm laps all near; `primed`: false leaves every line
/// near (copies from an earlier chase).
fn rep(c: &Chip, sm: u32, noise: f64, primed: bool, rng: &mut impl Rng) -> Rep {
    let s = sm as usize;
    let mut jitter = || rng.gen_range(-noise..=noise);
    let first_touch = c
        .home
        .iter()
        .map(|&h| {
            let base = if h == c.part[s] || !primed { c.near[s] } else { c.far[s] };
            base + OVERHEAD + jitter()
        })
        .collect::<Vec<f64>>();
    let mut first_touch = first_touch;
    for i in (0..first_touch.len()).step_by(200) {
        first_touch[i] = 1400.0;
    }
    let warm_recorded: Vec<f64> = c.home.iter().map(|_| c.near[s] + OVERHEAD + jitter()).collect();
    Rep {
        first_touch,
        warm_recorded,
        warm_cycles: c.near[s],
        warm_ns: c.near[s] / HZ * 1e9,
        l1_cycles: 32.0,
        l1_ns: 32.0 / HZ * 1e9,
    }
}

fn entries(c: &Chip, reps: usize, noise: f64, seed: u64) -> Vec<SmEntry> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..c.part.len() as u32)
        .map(|sm| {
            let r: Vec<Rep> = (0..reps).map(|_| rep(c, sm, noise, true, &mut rng)).collect();
            SmEntry::new(sm, &r)
        })
        .collect()
}

fn method() -> Method {
    Method { lines: 512, reps: 3, quick: false }
}

#[test]
fn two_modes_are_found_with_noise_and_stalls_left_out() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let mut v: Vec<f64> =
        (0..300).map(|i| if i % 3 == 0 { 500.0 } else { 300.0 } + rng.gen_range(-10.0..10.0)).collect();
    v[7] = 5000.0;
    let m = two_modes(&v, 900.0).expect("two modes");
    assert_eq!(m.far.len(), 100);
    assert_eq!(m.near.len(), 199, "the stall is in neither mode");
    assert!(m.far.iter().all(|&i| i % 3 == 0) && !m.near.contains(&7));
    assert!((m.near_median - 300.0).abs() < 3.0 && (m.far_median - 500.0).abs() < 3.0, "{m:?}");
    assert!(m.threshold > 310.0 && m.threshold < 490.0);
}

#[test]
fn one_mode_or_too_few_lines_is_no_split() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
    let v: Vec<f64> = (0..300).map(|_| 300.0 + rng.gen_range(-10.0..10.0)).collect();
    assert_eq!(two_modes(&v, 900.0), None, "one noisy mode");
    // A handful of slow lines (under 5 %) is not a mode.
    let mut w = v.clone();
    for x in w.iter_mut().take(6) {
        *x = 500.0;
    }
    assert_eq!(two_modes(&w, 900.0), None);
    assert_eq!(two_modes(&v[..5], 900.0), None);
    // Close modes (ratio under 1.2) are not two partitions.
    let close: Vec<f64> = (0..100).map(|i| if i % 2 == 0 { 300.0 } else { 340.0 }).collect();
    assert_eq!(two_modes(&close, 900.0), None);
}

#[test]
fn each_sm_gets_its_own_near_and_far_less_the_overhead() {
    let c = chip(12, 512, 2, 1);
    let e = entries(&c, 3, 8.0, 2);
    for x in &e {
        let s = x.sm as usize;
        assert_eq!(x.reps_split, 3);
        let (near, _) = med_mad(&x.near);
        let (far, _) = med_mad(&x.far);
        assert!((near - c.near[s]).abs() < 3.0, "SM {s}: near {near} vs {}", c.near[s]);
        assert!((far - c.far[s]).abs() < 3.0, "SM {s}: far {far} vs {}", c.far[s]);
        let truth_far: Vec<Option<bool>> = c.home.iter().map(|&h| Some(h != c.part[s])).collect();
        let got = x.far_lines();
        // The stalled lines (every 200th) are unclassified; every other line is right.
        for (i, (g, t)) in got.iter().zip(&truth_far).enumerate() {
            if i % 200 != 0 {
                assert_eq!(g, t, "SM {s} line {i}");
            }
        }
    }
}

#[test]
fn interleaved_partitions_group_by_the_lines_they_find_far() {
    let c = chip(16, 512, 2, 5);
    let e = entries(&c, 3, 8.0, 6);
    let g = group_sms(&e);
    assert_eq!(g, vec![(0..16).step_by(2).collect::<Vec<u32>>(), (1..16).step_by(2).collect()]);
    // One partition: no far mode anywhere, so no SM splits and there are no groups.
    let one = chip(8, 512, 1, 7);
    let e1 = entries(&one, 3, 8.0, 8);
    assert!(e1.iter().all(|x| x.reps_split == 0));
    assert!(group_sms(&e1).is_empty());
}

#[test]
fn a_failed_prime_loses_its_repetition_not_the_sm() {
    let c = chip(4, 512, 2, 9);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(10);
    let reps: Vec<Rep> = (0..3).map(|k| rep(&c, 1, 8.0, k != 1, &mut rng)).collect();
    let e = SmEntry::new(1, &reps);
    assert_eq!((e.reps, e.reps_split), (3, 2));
    assert_eq!(e.near.len(), 2);
    assert!((med_mad(&e.far).0 - c.far[1]).abs() < 3.0);
}

#[test]
fn the_analysis_reports_medians_over_sms_groups_and_the_reference_sms() {
    let c = chip(16, 512, 2, 11);
    let e = entries(&c, 3, 6.0, 12);
    let out = analyze(&e, Some(HZ), &method(), 1.25);
    let ns = |k: &str| out.findings[k].as_f64().unwrap_or_else(|| panic!("{k}: {:?}", out.findings[k]));
    let truth_ns = |v: &[f64]| memscope_core::stats::median(v) / HZ * 1e9;
    assert!((ns("l2.sm_map.near_hit_latency_ns") - truth_ns(&c.near)).abs() < 1.5);
    assert!((ns("l2.sm_map.far_hit_latency_ns") - truth_ns(&c.far)).abs() < 1.5);
    let near = &out.findings["l2.sm_map.near_hit_latency_ns"];
    assert_eq!(near.spread.as_ref().map(|s| s.n), Some(16), "spread over the 16 SMs");
    assert!(near.cycles.is_some());
    assert!((ns("l2.sm_map.l1_hit_latency_ns") - 16.0).abs() < 1e-9);
    assert!((ns("l2.sm_map.far_fraction") - 0.5).abs() < 0.1);
    let groups = out.findings["l2.sm_map.groups"].value.as_array().expect("groups").clone();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0]["sms"], serde_json::json!((0..16).step_by(2).collect::<Vec<u32>>()));
    let refs = out.findings["l2.sm_map.reference_sms"].value.as_array().expect("refs").clone();
    assert_eq!(refs[0]["sm"], 0);
    assert_eq!(refs[0]["group"], 1);
    assert_eq!(refs[1]["sm"], 15);
    assert_eq!(refs[1]["group"], 2);
    for k in ["l2.sm_map.near_g1", "l2.sm_map.far_g1", "l2.sm_map.near_g2", "l2.sm_map.far_g2", "l2.sm_map.l1_control"]
    {
        let s = &out.series[k];
        assert_eq!(s.x.len(), if k.ends_with("control") { 16 } else { 8 }, "{k}");
        assert_eq!(s.y_spread.as_ref().map(|v| v.len()), Some(s.x.len()));
    }
    assert_eq!(out.series["l2.sm_map.far_g2"].x[0], 1.0);
    assert_eq!(ns("l2.sm_map.probe_seconds"), 1.3);
}

#[test]
fn one_partition_leaves_near_and_far_undetermined_with_the_reason() {
    let c = chip(8, 512, 1, 13);
    let e = entries(&c, 3, 6.0, 14);
    let out = analyze(&e, Some(HZ), &method(), 0.5);
    for k in ["l2.sm_map.near_hit_latency_ns", "l2.sm_map.far_hit_latency_ns", "l2.sm_map.groups"] {
        let f = &out.findings[k];
        assert!(f.value.is_null(), "{k}: {f:?}");
        assert!(f.note.as_deref().is_some_and(|n| !n.is_empty()), "{k}");
    }
    // The controls are still measured.
    assert!(out.findings["l2.sm_map.warm_hit_latency_ns"].as_f64().is_some());
    assert!(out.findings["l2.sm_map.l1_hit_latency_ns"].as_f64().is_some());
}

#[test]
fn without_a_measured_clock_the_warm_laps_give_it() {
    let c = chip(4, 512, 2, 15);
    let e = entries(&c, 3, 6.0, 16);
    let a = analyze(&e, None, &method(), 0.5);
    let b = analyze(&e, Some(HZ), &method(), 0.5);
    let k = "l2.sm_map.far_hit_latency_ns";
    assert!((a.findings[k].as_f64().unwrap() - b.findings[k].as_f64().unwrap()).abs() < 1e-6);
}

/// The map's kernels compile for sm_90 with the intended instructions: the chased loads past L1,
/// the control's through it, the prime as reductions, no local-memory spill; runs when
/// MEMSCOPE_NVRTC_AVAILABLE=1 (scripts/test.sh), skips otherwise.
#[test]
fn the_map_kernels_compile_with_the_intended_loads() {
    if std::env::var("MEMSCOPE_NVRTC_AVAILABLE").as_deref() != Ok("1") {
        eprintln!("skipped: MEMSCOPE_NVRTC_AVAILABLE is not 1");
        return;
    }
    let m = crate::gpu::Module::SmMap;
    let ptx = m.compile("sm_90").unwrap_or_else(|e| panic!("{e}"));
    for f in m.functions() {
        assert!(ptx.contains(&format!(".entry {f}(")), "{f}");
    }
    assert!(ptx.contains("ld.global.cg.u64"), "the chase bypasses L1");
    assert!(ptx.contains("ld.global.ca.u64"), "the control goes through L1");
    assert!(ptx.contains("red.global.add.u64"), "the prime is a reduction");
    assert!(!ptx.contains(".local"), "no local-memory spill");
}
