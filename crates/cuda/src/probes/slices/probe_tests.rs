//! Tests of `l2.slices` (mod.rs): its counters decoded under a simulated ground truth (seed 000
//! appendix, "The L2 slice function"), the plans, CUPTI's and ncu's counters matched to kernels,
//! and replays of the H200's recorded counters.

use super::counters::{parse_counters_csv, snap_scale};
use super::hammer::test_plan;
use super::*;
use memscope_core::gf2;
use rand::Rng;
use rand::SeedableRng;

/// Counters of every kernel of `batches` under a ground truth: `slice_of` per line, `far` lines
/// whose sectors also cross the fabric, `scale` sectors counted per access of each operation,
/// and up to `noise` stray sectors on every slice an operation touched (the H200's maxes lie
/// 0..8 sectors above a multiple of the unit).
pub(super) fn simulate(
    lines: &[u64],
    batches: &[Batch],
    slice_of: &dyn Fn(u64) -> usize,
    far: &dyn Fn(u64) -> bool,
    scale: [f64; 4],
    noise: u64,
    seed: u64,
) -> Vec<Counters> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for k in 0..fit::kernel_count(batches) {
        let mut per: Vec<std::collections::HashMap<usize, f64>> = vec![Default::default(); 4];
        let mut fab: std::collections::HashMap<usize, f64> = Default::default();
        for b in batches.iter().filter(|b| b.kernel == k) {
            for (&x, &w) in b.members.iter().zip(&b.weights) {
                let s = slice_of(lines[x]);
                *per[b.op].entry(s).or_default() += w as f64 * scale[b.op];
                if far(lines[x]) {
                    *fab.entry(s).or_default() += w as f64 * scale[b.op];
                }
            }
        }
        let mut c = Counters { max: [0.0; 4], sum: [0.0; 4], read_avg: 0.0, fab_max: 0.0, fab_sum: 0.0 };
        for (op, slices) in per.iter().enumerate() {
            for v in slices.values() {
                let v = v + rng.gen_range(0..=noise) as f64;
                c.max[op] = c.max[op].max(v);
                c.sum[op] += v;
            }
        }
        c.read_avg = (c.sum[0] / 96.0 * 100.0).round() / 100.0;
        for s in 0..96 {
            let v = fab.get(&s).copied().unwrap_or(0.0);
            c.fab_max = c.fab_max.max(v);
            c.fab_sum += v;
        }
        out.push(c);
    }
    out
}

fn report() -> HammerReport {
    HammerReport {
        alloc_ptr: 1 << 21,
        alloc_2mib_aligned: true,
        page_base: 1 << 21,
        records: vec![],
        values: vec![],
        passes: 0,
        timing: vec![],
    }
}

/// The whole analysis on counters made from a known linear slice function and a known far set,
/// in every design.
#[test]
fn analyze_reports_count_partition_masks_and_far_lines() {
    let masks = [0x0012_3480u64, 0x0008_0d00, 0x001c_0080, 0x0001_8200, 0x0010_0300];
    let lines = fit::sample_lines(48, SEED);
    let far = |o: u64| gf2::parity(o & 0x0004_0080) == 1;
    let slice = |o: u64| gf2::apply(&masks, o) as usize;
    for design in [Design::Pairs, Design::Packed] {
        let (batches, _) = experiments(design, lines.len());
        let counters = simulate(&lines, &batches, &slice, &far, [0.25, 1.0, 1.0, 1.0], 3, 1);
        let mut out = ProbeOutput::default();
        analyze(&mut out, "test", &lines, &batches, &counters, &report());
        assert_eq!(out.findings["l2.slices.count"].value, json!(96), "{design:?}");
        assert_eq!(out.findings["l2.slices.clear_fraction"].as_f64(), Some(1.0), "{design:?}");
        let got: Vec<u64> = out.findings["l2.slices.page_masks"]
            .value
            .as_array()
            .unwrap()
            .iter()
            .map(|v| gf2::parse_mask(v.as_str().unwrap()).unwrap())
            .collect();
        assert!(gf2::same_row_space(&got, &masks), "{design:?}");
        let truth_far = lines.iter().filter(|&&o| far(o)).count();
        let f = out.findings["l2.slices.far_fraction"].as_f64().expect("far lines labelled");
        if design == Design::Pairs {
            assert_eq!(f, truth_far as f64 / lines.len() as f64);
        }
        let far_lines = &out.findings["l2.slices.far_partition"].value["far_lines"];
        for l in far_lines.as_array().unwrap() {
            let o = u64::from_str_radix(l.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
            assert!(far(o), "{design:?}: {o:#x} called far");
        }
        assert!(noise_warnings(&counters, &batches).is_empty());
    }
}

/// A non-linear slice function over 47 slices with noise and per-operation scales (reads one
/// sector per 4 accesses, the others one per access): the packed design finds the same
/// partition as the one-experiment-per-kernel design, which is the truth, with a third of the
/// kernels; `Both` says so in the partition's note.
#[test]
fn the_packed_design_finds_the_truth_with_a_quarter_of_the_kernels() {
    let lines = fit::sample_lines(LINES_FULL, SEED);
    let slice = |o: u64| (((o >> 7) * 2_654_435_761) >> 7) as usize % 47;
    let near = |_: u64| false;
    let truth: Vec<usize> = lines.iter().map(|&o| slice(o)).collect();
    let (pairs, _) = experiments(Design::Pairs, lines.len());
    let (packed, _) = experiments(Design::Packed, lines.len());
    assert_eq!(fit::kernel_count(&pairs), 798);
    assert_eq!(fit::kernel_count(&packed), 256 + 11);
    let scale = [0.25, 1.0, 1.0, 1.0];
    for (batches, seed) in [(&pairs, 2), (&packed, 3)] {
        let counters = simulate(&lines, batches, &slice, &near, scale, 8, seed);
        let sc = scales(&counters, batches);
        let dm = decoded_maxes(&counters, batches, &sc);
        let a = fit::assign(lines.len(), batches, &dm, UNIT, true);
        assert!(a.class.iter().all(|c| c.is_some()), "every line determined");
        assert_eq!(a.conflicts, 0);
        let t: Vec<Option<usize>> = truth.iter().map(|&x| Some(x)).collect();
        assert_eq!(fit::partition_disagreements(&a.class, &t).1, 0);
    }
    let (main, reference) = experiments(Design::Both, lines.len());
    let all: Vec<Batch> = reference.iter().chain(&main).cloned().collect();
    let counters = simulate(&lines, &all, &slice, &near, scale, 8, 4);
    let mut out = ProbeOutput::default();
    analyze(&mut out, "test", &lines, &main, &counters, &report());
    compare_with_reference(&mut out, &lines, &main, &reference, &counters);
    let note = out.findings["l2.slices.page_partition"].note.clone().unwrap();
    assert!(note.contains("disagree on 0 of 8128 pairs"), "{note}");
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert_eq!(out.findings["l2.slices.far_fraction"].confidence, Confidence::Undetermined);
}

/// A partition the reference design disagrees with is a warning, not a silent note.
#[test]
fn a_disagreeing_reference_is_a_warning() {
    let lines = fit::sample_lines(24, SEED);
    let (main, reference) = experiments(Design::Both, lines.len());
    let all: Vec<Batch> = reference.iter().chain(&main).cloned().collect();
    let slice = |o: u64| (o >> 7) as usize % 5;
    let mut counters = simulate(&lines, &all, &slice, &|_| false, [1.0; 4], 0, 5);
    // The reference's kernels see a different page: another function.
    let other = simulate(&lines, &reference, &|o| (o >> 8) as usize % 5, &|_| false, [1.0; 4], 0, 6);
    counters[..other.len()].copy_from_slice(&other);
    let mut out = ProbeOutput::default();
    analyze(&mut out, "test", &lines, &main, &counters, &report());
    compare_with_reference(&mut out, &lines, &main, &reference, &counters);
    assert_eq!(out.warnings.len(), 1, "{:?}", out.warnings);
    assert!(out.warnings[0].contains("disagree"));
}

#[test]
fn plans_carry_one_experiment_per_operation_per_kernel() {
    let lines = fit::sample_lines(40, SEED);
    let (batches, _) = experiments(Design::Packed, lines.len());
    let kernels = plan_kernels(&lines, &batches);
    assert_eq!(kernels.len(), fit::kernel_count(&batches));
    for (k, lines_k) in kernels.iter().enumerate() {
        let ops: Vec<usize> = batches.iter().filter(|b| b.kernel == k).map(|b| b.op).collect();
        let mut uniq = ops.clone();
        uniq.dedup();
        assert_eq!(uniq, ops, "kernel {k}: one experiment per operation");
        assert!(lines_k.len() <= hammer::MAX_LINES_PER_KERNEL);
    }
    let plan = HammerPlan { sm: Some(SM), warps: WARPS, pages: 1, kernels, ..test_plan() };
    plan.validate().unwrap();
    assert_eq!(Design::parse("both"), Some(Design::Both));
    assert_eq!(Design::parse("all"), None);
}

/// Several pages: the same offsets in each, every pair tested across pages, and the partition
/// finding's note says how the pages' partitions relate (here a linear hash with frame bits:
/// the same partition, other slices). The slice function is another probe's.
#[test]
fn several_pages_are_related_in_the_partition_note() {
    let lines = page_lines(3, LINES_FULL);
    assert_eq!(lines.len(), 3 * LINES_PER_PAGE);
    assert_eq!(lines[LINES_PER_PAGE], hammer::PAGE_BYTES);
    let (batches, _) = experiments(Design::Packed, lines.len());
    let plan =
        HammerPlan { sm: Some(SM), warps: WARPS, pages: 3, kernels: plan_kernels(&lines, &batches), ..test_plan() };
    plan.validate().unwrap();
    let masks = [0x0012_3480u64, 0x0028_0d00, 0x005c_0080, 0x0001_8200];
    let counters =
        simulate(&lines, &batches, &|a| gf2::apply(&masks, a) as usize, &|_| false, [0.25, 1.0, 1.0, 1.0], 8, 7);
    let mut out = ProbeOutput::default();
    analyze(&mut out, "test", &lines, &batches, &counters, &report());
    let note = out.findings[keys::L2_SLICES_PAGE_PARTITION].note.clone().unwrap();
    assert!(note.contains("Across 3 adjacent pages") && note.contains("0/496, 0/496"), "{note}");
    assert!(!out.findings.contains_key(keys::L2_SLICES_FUNCTION), "l2.slices.function is its own probe");
    assert!(out.findings["l2.slices.page_masks"].confidence != Confidence::Undetermined, "page 0 alone is linear");
}

/// CUPTI's values (one row per launch, the plan's metrics in order) decode to the same
/// counters as ncu's rows; a launch that found no block on the SM is skipped.
#[test]
fn cupti_values_become_the_counters_of_their_kernels() {
    let metrics: Vec<String> = ncu::metric_list(&PACKED_OPS).split(',').map(String::from).collect();
    let n = metrics.len();
    let rec = |kernel, cycles| hammer::HammerRecord { kernel, smid: 0, cycles };
    let report = HammerReport {
        records: vec![rec(0, 0), rec(0, 9), rec(1, 9)],
        values: vec![vec![-1.0; n], (0..n).map(|i| i as f64).collect(), (0..n).map(|i| 100.0 + i as f64).collect()],
        ..report()
    };
    let c = per_kernel(&report, &cupti_kernels(&metrics, &report), 2).unwrap();
    let at = |name: &str| metrics.iter().position(|m| m == name).unwrap() as f64;
    assert_eq!(c[0].max[0], at("lts__t_sectors_srcunit_tex_op_read.max"));
    assert_eq!(c[0].sum[3], at("lts__t_sectors_srcunit_tex_op_red.sum"));
    assert_eq!(c[1].fab_max, 100.0 + at("lts__t_sectors_srcunit_ltcfabric.max"));
    assert!(c[0].max[1].is_nan(), "writes are not read");
    let short = HammerReport { values: vec![vec![0.0; n]], ..report.clone() };
    assert!(per_kernel(&short, &cupti_kernels(&metrics, &short), 2).is_err(), "a launch without values");
}

/// The timing check on a simulated page: the partition from the counters, laps whose far
/// lines are whole slices (odd slices far from SM 0, even ones from SM 2): no class mixes near
/// and far, and SMs 0 and 2 see opposite halves.
#[test]
fn the_timing_check_agrees_with_a_partition_of_whole_slices() {
    let lines = fit::sample_lines(48, SEED);
    let slice = |o: u64| ((o >> 7).wrapping_mul(2_654_435_761) >> 9) as usize % 16;
    let (batches, _) = experiments(Design::Packed, lines.len());
    let counters = simulate(&lines, &batches, &slice, &|_| false, [0.25, 1.0, 1.0, 1.0], 4, 9);
    let lap = |sm: u32, far_odd: bool| timing::TimedLap {
        sm,
        lines: lines.clone(),
        first_touch: lines
            .iter()
            .enumerate()
            .map(|(i, &o)| if (slice(o) % 2 == 1) == far_odd { 455 } else { 282 } + i as u32 % 7)
            .collect(),
        warm: lines.iter().map(|_| 282).collect(),
        warm_cycles_per_hop: 275.0,
    };
    let rep = HammerReport { timing: vec![lap(0, true), lap(2, false), lap(0, true)], ..report() };
    let mut out = ProbeOutput::default();
    analyze(&mut out, "test", &lines, &batches, &counters, &rep);
    timing_finding(&mut out, &lines, &rep);
    let f = &out.findings[keys::L2_SLICES_TIMING_CHECK];
    assert_eq!(f.confidence, Confidence::High);
    let note = f.note.clone().unwrap();
    assert!(note.contains("opposite: SM 0 and SM 2 (48 of 48); 0 of "), "{note}");
    assert_eq!(f.value["pairs"][0]["lines_opposite"], f.value["pairs"][0]["lines_both"]);
    assert_eq!(f.value["pairs"][0]["lines_both"], json!(48));
    // Far lines chosen by another function than the slices (home partition independent of
    // the slice the counters see): classes mix near and far, and the note says what that means.
    let home_far = |o: u64| (o >> 12) % 2 == 1;
    let lap2 = |sm: u32, flip: bool| timing::TimedLap {
        sm,
        lines: lines.clone(),
        first_touch: lines.iter().map(|&o| if home_far(o) != flip { 455 } else { 282 }).collect(),
        warm: lines.iter().map(|_| 282).collect(),
        warm_cycles_per_hop: 275.0,
    };
    let rep2 = HammerReport { timing: vec![lap2(0, false), lap2(2, true)], ..report() };
    let mut out2 = ProbeOutput::default();
    analyze(&mut out2, "test", &lines, &batches, &counters, &rep2);
    timing_finding(&mut out2, &lines, &rep2);
    let note2 = out2.findings[keys::L2_SLICES_TIMING_CHECK].note.clone().unwrap();
    assert!(note2.contains("not the lines' home slices") && !note2.contains("; 0 of "), "{note2}");
    // The partition bit SM 0's labels give (far exactly on offset bit 12), as l2.slices.function
    // reads it from the finding.
    let bit = function_probe::timed_partition_bit(&out2.findings, SM).unwrap();
    assert_eq!((bit.mask, bit.far_when_parity_is, bit.held_out), (0x1000, Some(1), Some((24, 24))));
    assert!(bit.text().contains(&format!("parity(offset & {}) is 1", format_mask(0x1000))), "{}", bit.text());
    assert!(!out2.findings.contains_key(keys::L2_SLICES_FUNCTION), "l2.slices.function is its own probe");
    // No laps: no finding.
    let mut quiet = ProbeOutput::default();
    timing_finding(&mut quiet, &lines, &report());
    assert!(!quiet.findings.contains_key(keys::L2_SLICES_TIMING_CHECK));
}

#[test]
fn scales_snap_to_powers_of_two_only_when_close() {
    assert_eq!(snap_scale(0.25004), 0.25);
    assert_eq!(snap_scale(0.2495), 0.25);
    assert_eq!(snap_scale(1.01), 1.0);
    assert_eq!(snap_scale(0.3), 0.3);
    assert!(snap_scale(f64::NAN).is_nan());
}

#[test]
fn counters_round_trip_through_their_csv() {
    let c = vec![
        Counters::read_only(1.0, 2.0, 3.0, 4.0, 5.0),
        Counters { max: [1.0, 2.0, 3.0, 4.0], sum: [5.0, 6.0, 7.0, 8.0], read_avg: 0.5, fab_max: 9.0, fab_sum: 10.0 },
    ];
    let back = parse_counters_csv(&counters_csv(&c)).unwrap();
    assert_eq!(back[1], c[1]);
    assert!(back[0].max[1].is_nan() && back[0].max[0] == 1.0);
    assert!(parse_counters_csv("0,1,2").is_none());
}

/// The plan as the H200 ran it in results/h200/l2-slices-packed (MEMSCOPE_SLICES_DESIGN=both),
/// folded into one number by the same fold the results README's script used on its plan.json.
fn plan_fingerprint(kernels: &[Vec<(u64, u64, HammerOp)>]) -> u64 {
    let m: u128 = (1 << 61) - 1;
    let mut h: u128 = 0;
    for (k, kern) in kernels.iter().enumerate() {
        for (j, &(o, l, op)) in kern.iter().enumerate() {
            let term = o as u128 * 7 + l as u128 * 13 + op.code() as u128 * 17 + k as u128 * 19 + j as u128;
            h = (h * 1_000_003 + term) % m;
        }
    }
    h as u64
}

/// The packed design read by CUPTI in the child on the H200 (results/h200/l2-slices-cupti,
/// run cupti1): two read maxes lay 17 sectors (0.27 units) above their multiple, which the
/// symmetric quarter-unit window left unclear (116 of 128 lines); the upward window reads every
/// experiment, and the 116 lines keep their partition.
#[test]
fn the_h200_cupti_run_replays_with_every_line_determined() {
    let counters = parse_counters_csv(include_str!("slices_h200_cupti_counters.csv")).unwrap();
    let lines = fit::sample_lines(LINES_FULL, SEED);
    let (batches, _) = experiments(Design::Packed, lines.len());
    assert_eq!(counters.len(), fit::kernel_count(&batches));
    let mut out = ProbeOutput::default();
    analyze(&mut out, "replay", &lines, &batches, &counters, &report());
    assert_eq!(out.findings["l2.slices.count"].value, json!(94));
    assert_eq!(out.findings["l2.slices.clear_fraction"].as_f64(), Some(1.0));
    assert_eq!(out.findings["l2.slices.page_slices_seen"].value, json!(42));
    let sc = scales(&counters, &batches);
    let dm = decoded_maxes(&counters, &batches, &sc);
    let a = fit::assign(lines.len(), &batches, &dm, UNIT, true);
    assert_eq!(a.conflicts, 0);
    // The quarter-unit window of the previous decode: 116 lines, the same partition.
    let strict: Vec<f64> = dm
        .iter()
        .map(|&m| {
            let u = m / UNIT as f64;
            if (u - u.round()).abs() <= 0.25 {
                m
            } else {
                f64::NAN
            }
        })
        .collect();
    let s = fit::assign(lines.len(), &batches, &strict, UNIT, true);
    assert_eq!(s.class.iter().flatten().count(), 116);
    assert_eq!(fit::partition_disagreements(&a.class, &s.class), (6670, 0));
}

/// Both designs in one child on one H200 page (results/h200/l2-slices-packed): the packed
/// design, which is the plan that ran, finds every line, 44 slices, and the same partition as
/// the one-experiment-per-kernel design (0 of 8128 pairs differ).
#[test]
fn the_h200_same_page_check_replays_to_identical_partitions() {
    let counters = parse_counters_csv(include_str!("slices_h200_both_counters.csv")).unwrap();
    let lines = fit::sample_lines(LINES_FULL, SEED);
    let (main, reference) = experiments(Design::Both, lines.len());
    let all: Vec<Batch> = reference.iter().chain(&main).cloned().collect();
    assert_eq!(plan_fingerprint(&plan_kernels(&lines, &all)), 1_373_034_860_699_276_899, "the plan that ran");
    assert_eq!(counters.len(), fit::kernel_count(&all));
    let mut out = ProbeOutput::default();
    analyze(&mut out, "replay", &lines, &main, &counters, &report());
    compare_with_reference(&mut out, &lines, &main, &reference, &counters);
    assert_eq!(out.findings["l2.slices.count"].value, json!(94));
    assert_eq!(out.findings["l2.slices.clear_fraction"].as_f64(), Some(1.0));
    assert_eq!(out.findings["l2.slices.page_slices_seen"].value, json!(44));
    let note = out.findings["l2.slices.page_partition"].note.clone().unwrap();
    assert!(
        note.contains("finds 44 slices among 128 determined lines; the two partitions disagree on 0 of 8128 pairs"),
        "{note}"
    );
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    let sc = scales(&counters, &main);
    assert_eq!((sc[0], sc[2], sc[3]), (0.25, 1.0, 1.0), "sectors per access: reads, atomics, reductions");
    assert!(noise_warnings(&counters, &main).is_empty());
}

/// The committed H200 run (results/h200/l2-slices) replayed through the analysis:
/// the counters of its 798 kernels, in plan order, from ncu 2025.3.1.
#[test]
fn the_h200_run_replays_to_its_findings() {
    let counters: Vec<Counters> = include_str!("slices_h200_counters.csv")
        .lines()
        .filter(|l| !l.starts_with('#'))
        .enumerate()
        .map(|(i, l)| {
            let f: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            assert_eq!(f[0] as usize, i, "plan order");
            Counters::read_only(f[1], f[2], f[3], f[4], f[5])
        })
        .collect();
    let lines = fit::sample_lines(LINES_FULL, SEED);
    let (batches, _) = experiments(Design::Pairs, lines.len());
    assert_eq!(counters.len(), fit::kernel_count(&batches));
    assert!((scales(&counters, &batches)[0] - 0.25).abs() < 0.001, "one sector per 4 warp loads on the H200");
    let report = HammerReport {
        alloc_ptr: 0,
        alloc_2mib_aligned: true,
        page_base: 0,
        records: vec![],
        values: vec![],
        passes: 0,
        timing: vec![],
    };
    let mut out = ProbeOutput::default();
    analyze(&mut out, "replay", &lines, &batches, &counters, &report);
    assert_eq!(out.findings["l2.slices.count"].value, json!(94));
    assert_eq!(out.findings["l2.slices.clear_fraction"].as_f64(), Some(1.0));
    assert_eq!(out.findings["l2.slices.page_slices_seen"].value, json!(43));
    assert_eq!(out.findings["l2.slices.page_masks"].confidence, Confidence::Undetermined);
    assert_eq!(out.findings["l2.slices.far_fraction"].confidence, Confidence::Undetermined);
    let est = out.findings["l2.slices.page_slices_estimate"].as_f64().unwrap();
    assert!((40.0..=55.0).contains(&est), "{est}");
    assert!(noise_warnings(&counters, &batches).is_empty());
}
