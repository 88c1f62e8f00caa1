//! Tests of function_probe.rs without a GPU: the map's defaults and the variables that override
//! them, the partition bit read from an `l2.slices.timing_check` finding (present, missing,
//! undetermined, another SM, no bit), and the findings from the H200 map that the probe's code
//! path took (results/h200/l2-slices-function), from labels that are no residue, and from a map
//! that failed.

use super::function_probe::{function_from_map, map_summary, timed_partition_bit, MapConfig, MapRun};
use super::h200_maps::h200;
use super::hammer::PAGE_BYTES;
use super::map::SliceMap;
use super::map_layout::DEFAULT_SPEC;
use memscope_core::keys;
use memscope_core::{Confidence, Finding, ProbeOutput};
use serde_json::json;
use std::collections::BTreeMap;

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let m: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |k: &str| m.get(k).cloned()
}

#[test]
fn the_map_is_a_full_page_from_sm_0_unless_the_variables_say_otherwise() {
    let cfg = MapConfig::from_vars(vars(&[])).unwrap();
    assert_eq!((cfg.pages, cfg.spec.as_str(), cfg.sm), (1, DEFAULT_SPEC, 0));
    let lines = cfg.lines();
    assert_eq!(lines.len(), 4096, "every line set of the page with bits 7 and 9 clear");
    assert!(lines.iter().all(|&a| a < PAGE_BYTES && a % 128 == 0 && a & 0x280 == 0));
    let distinct: std::collections::BTreeSet<u64> = lines.iter().copied().collect();
    assert_eq!(distinct.len(), 4096);

    let cfg = MapConfig::from_vars(vars(&[
        ("MEMSCOPE_SLICES_MAP", "3"),
        ("MEMSCOPE_SLICES_MAP_OFFSETS", "random:64"),
        ("MEMSCOPE_SLICES_MAP_SM", "2"),
    ]))
    .unwrap();
    assert_eq!((cfg.pages, cfg.offsets.len(), cfg.sm), (3, 64, 2));
    let lines = cfg.lines();
    assert_eq!(lines.len(), 192);
    assert_eq!(lines[64], PAGE_BYTES + lines[0], "the same offsets in each page");

    for (k, v, says) in [
        ("MEMSCOPE_SLICES_MAP", "0", "accepted: 1 to 64"),
        ("MEMSCOPE_SLICES_MAP", "65", "accepted: 1 to 64"),
        ("MEMSCOPE_SLICES_MAP", "one", "accepted: 1 to 64"),
        ("MEMSCOPE_SLICES_MAP_OFFSETS", "grid:3:4", "MEMSCOPE_SLICES_MAP_OFFSETS=\"grid:3:4\""),
        ("MEMSCOPE_SLICES_MAP_SM", "-1", "accepted: an SM number"),
        ("MEMSCOPE_SLICES_MAP", "9", "at most 32768"),
    ] {
        let e = MapConfig::from_vars(vars(&[(k, v)])).unwrap_err();
        assert!(e.contains(&format!("{k}=")) && e.contains(v) && e.contains(says), "{k}={v}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

/// An `l2.slices.timing_check` finding as timing.rs's `summary_json` writes it, SMs 0 and 2.
fn timing_check(far_mask_sm2: serde_json::Value) -> BTreeMap<String, Finding> {
    let value = json!({
        "sms": [
            {"far_mask": "0xab000", "far_when_parity_is": 1, "far_mask_rank": 15, "far_mask_held_out": [64, 64],
             "sm": 0, "lines": 128, "far_lines": 60},
            {"far_mask": far_mask_sm2, "far_when_parity_is": 0, "far_mask_rank": 14, "far_mask_held_out": [63, 64],
             "sm": 2, "lines": 128, "far_lines": 68},
        ],
        "pairs": [{"sms": [0, 2], "lines_both": 128, "lines_opposite": 128}],
    });
    let mut m = BTreeMap::new();
    m.insert(keys::L2_SLICES_TIMING_CHECK.to_string(), Finding::json(value, "", "test", Confidence::High));
    m
}

#[test]
fn the_partition_bit_is_read_from_the_timing_check_of_the_maps_sm() {
    let earlier = timing_check(json!("0xab000"));
    let b0 = timed_partition_bit(&earlier, 0).unwrap();
    assert_eq!(
        (b0.sm, b0.mask, b0.far_when_parity_is, b0.rank, b0.held_out),
        (0, 0xab000, Some(1), Some(15), Some((64, 64)))
    );
    let text = b0.text();
    assert!(text.contains("far from SM 0 by timing when parity(offset & 0xab000) is 1"), "{text}");
    assert!(text.contains("15 independent equations") && text.contains("64 of 64 held-out lines"), "{text}");
    let b2 = timed_partition_bit(&earlier, 2).unwrap();
    assert_eq!((b2.mask, b2.far_when_parity_is, b2.held_out), (0xab000, Some(0), Some((63, 64))));

    // Missing: l2.slices did not run or timed nothing.
    let e = timed_partition_bit(&BTreeMap::new(), 0).unwrap_err();
    assert!(e.contains("l2.slices.timing_check is missing") && e.contains("partition bit's mask"), "{e}");
    // Undetermined: its reason is carried.
    let mut und = BTreeMap::new();
    und.insert(
        keys::L2_SLICES_TIMING_CHECK.to_string(),
        Finding::undetermined("", "test", "no timed lap split into near and far hits"),
    );
    let e = timed_partition_bit(&und, 0).unwrap_err();
    assert!(e.contains("undetermined (no timed lap split into near and far hits)"), "{e}");
    // An SM the check did not time.
    let e = timed_partition_bit(&earlier, 5).unwrap_err();
    assert!(e.contains("timed no lap from SM 5") && e.contains("[0, 2]"), "{e}");
    // An SM whose labels fitted no bit (summary_json writes null).
    let e = timed_partition_bit(&timing_check(serde_json::Value::Null), 2).unwrap_err();
    assert!(e.contains("fitted no partition bit to SM 2's"), "{e}");
    let e = timed_partition_bit(&timing_check(json!("0xzz")), 2).unwrap_err();
    assert!(e.contains("\"0xzz\" is not a hex mask"), "{e}");
}

/// The H200 map the probe's code path took (4096 line sets of one page from SM 0) with the
/// timing check's mask: the function determined and every held-out line predicted.
fn h200_function_map() -> MapRun {
    let points = h200("function");
    let lines: Vec<u64> = points.iter().map(|p| p.page as u64 * PAGE_BYTES + p.offset).collect();
    let label: Vec<Option<usize>> = points.iter().map(|p| Some(p.label)).collect();
    let labels = label.iter().flatten().collect::<std::collections::BTreeSet<_>>().len();
    MapRun { lines, labels: Ok(SliceMap { label, labels, kernels: 4788, stages: 4 }), secs: 101.3 }
}

#[test]
fn the_h200_map_gives_the_function_with_the_timing_checks_mask() {
    let cfg = MapConfig::from_vars(vars(&[])).unwrap();
    let run = h200_function_map();
    let mut ran: Vec<u64> = run.lines.iter().map(|a| a % PAGE_BYTES).collect();
    let mut planned = cfg.lines();
    ran.sort_unstable();
    planned.sort_unstable();
    assert_eq!(ran, planned, "the committed map labelled the lines of the default map");
    let bit = timed_partition_bit(&timing_check(json!("0xab000")), 0).unwrap();
    let mut out = ProbeOutput::default();
    function_from_map(&mut out, &cfg, &bit, &run);
    let f = &out.findings[keys::L2_SLICES_FUNCTION];
    let acc = &out.findings[keys::L2_SLICES_HELD_OUT_ACCURACY];
    assert_eq!(f.confidence, Confidence::High, "{f:?}");
    assert_eq!(acc.as_f64(), Some(1.0), "{acc:?}");
    assert_eq!(acc.confidence, Confidence::High);
    let note = f.note.clone().unwrap();
    assert!(note.contains("parity(offset & 0xab000) is 1"), "{note}");
    assert!(note.contains("4096 of 4096 lines labelled, 47 slices seen in all, per page [47]"), "{note}");
    assert!(f.method.contains("bits:8+10-20") && f.method.contains("mask 0xab000"), "{}", f.method);
}

#[test]
fn labels_that_are_no_residue_or_no_map_leave_both_undetermined_with_why() {
    let cfg = MapConfig::from_vars(vars(&[])).unwrap();
    let bit = timed_partition_bit(&timing_check(json!("0xab000")), 0).unwrap();
    let run = h200_function_map();
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(11);
    let noise = MapRun {
        labels: run.labels.map(|m| SliceMap {
            label: m.label.iter().map(|_| Some(rand::Rng::gen_range(&mut rng, 0..47))).collect(),
            ..m
        }),
        ..run
    };
    let mut out = ProbeOutput::default();
    function_from_map(&mut out, &cfg, &bit, &noise);
    for k in [keys::L2_SLICES_FUNCTION, keys::L2_SLICES_HELD_OUT_ACCURACY] {
        let f = &out.findings[k];
        assert_eq!(f.confidence, Confidence::Undetermined, "{k}");
        let why = f.note.clone().unwrap();
        assert!(why.starts_with("slice labels over 1 adjacent page(s)") && why.contains("residue"), "{k}: {why}");
    }
    let failed = MapRun { lines: cfg.lines(), labels: Err("the serving child exited".into()), secs: 3.0 };
    let mut out = ProbeOutput::default();
    function_from_map(&mut out, &cfg, &bit, &failed);
    let why = out.findings[keys::L2_SLICES_HELD_OUT_ACCURACY].note.clone().unwrap();
    assert_eq!(why, "slice labels over 1 page(s): not measured (the serving child exited); no labels");
    assert_eq!(map_summary(&cfg, &failed.labels, failed.secs), why.trim_end_matches("; no labels"));
}
