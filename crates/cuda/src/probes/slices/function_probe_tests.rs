//! Tests of function_probe.rs without a GPU: the map's layout (the first page full, probe lines on
//! the others) and the variables that override it, the partition bit read from an
//! `l2.slices.timing_check` finding (present, missing, undetermined, another SM, no bit), and the
//! findings from the H200 map that the probe's code path took (results/h200/l2-slices-function,
//! one page), from labels that are no residue, and from a map that failed. The frame function's
//! findings on the probe's layout: slice_frame_function_tests.rs.

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
fn the_map_is_a_full_page_and_probe_lines_of_7_more_from_sm_0_unless_the_variables_say_otherwise() {
    let cfg = MapConfig::from_vars(vars(&[])).unwrap();
    assert_eq!((cfg.pages, cfg.spec.as_str(), cfg.sm, cfg.probe_offsets.len()), (8, DEFAULT_SPEC, 0, 400));
    let lines = cfg.lines();
    assert_eq!(lines.len(), 4096 + 7 * 400);
    assert_eq!(cfg.line_count(), lines.len());
    // Page 0: every line set with bits 7 and 9 clear.
    let page0: std::collections::BTreeSet<u64> = lines[..4096].iter().copied().collect();
    assert_eq!(page0.len(), 4096);
    assert!(page0.iter().all(|&a| a < PAGE_BYTES && a % 128 == 0 && a & 0x280 == 0));
    // Pages 1-7: the same 400 of page 0's offsets in each, addresses from the first page's base.
    for k in 1..8u64 {
        let page = &lines[4096 + (k as usize - 1) * 400..4096 + k as usize * 400];
        assert!(page.iter().all(|&a| a / PAGE_BYTES == k && page0.contains(&(a % PAGE_BYTES))));
        let offs: Vec<u64> = page.iter().map(|a| a % PAGE_BYTES).collect();
        assert_eq!(offs, cfg.probe_offsets);
    }
    let distinct: std::collections::BTreeSet<u64> = cfg.probe_offsets.iter().copied().collect();
    assert_eq!(distinct.len(), 400);
    // 178-188 s on the H200 (results/h200/l2-slices-function-probe).
    assert!((cfg.estimate_secs() - 6896.0 * 101.3 / 4096.0).abs() < 1e-9 && cfg.estimate_secs().round() == 171.0);

    let cfg = MapConfig::from_vars(vars(&[
        ("MEMSCOPE_SLICES_MAP", "3"),
        ("MEMSCOPE_SLICES_MAP_OFFSETS", "random:64"),
        ("MEMSCOPE_SLICES_MAP_SM", "2"),
    ]))
    .unwrap();
    assert_eq!((cfg.pages, cfg.offsets.len(), cfg.sm), (3, 64, 2));
    let lines = cfg.lines();
    assert_eq!(lines.len(), 192, "probe lines past the offsets: every offset on every page");
    assert_eq!(lines[64], PAGE_BYTES + lines[0], "the same offsets in each page, in order");
    let one = MapConfig::from_vars(vars(&[("MEMSCOPE_SLICES_MAP", "1")])).unwrap();
    assert_eq!(one.lines().len(), 4096, "one page: the full page alone");
    let cfg = MapConfig::from_vars(vars(&[("MEMSCOPE_SLICES_MAP_PROBE_LINES", "100"), ("MEMSCOPE_SLICES_MAP", "64")]))
        .unwrap();
    assert_eq!(cfg.lines().len(), 4096 + 63 * 100);
    assert_eq!(cfg.lines().last().map(|a| a / PAGE_BYTES), Some(63));

    for (k, v, says) in [
        ("MEMSCOPE_SLICES_MAP", "0", "accepted: 1 to 64"),
        ("MEMSCOPE_SLICES_MAP", "65", "accepted: 1 to 64"),
        ("MEMSCOPE_SLICES_MAP", "one", "accepted: 1 to 64"),
        ("MEMSCOPE_SLICES_MAP_OFFSETS", "grid:3:4", "MEMSCOPE_SLICES_MAP_OFFSETS=\"grid:3:4\""),
        ("MEMSCOPE_SLICES_MAP_PROBE_LINES", "0", "accepted: 1 to 16384"),
        ("MEMSCOPE_SLICES_MAP_PROBE_LINES", "16385", "accepted: 1 to 16384"),
        ("MEMSCOPE_SLICES_MAP_PROBE_LINES", "many", "accepted: 1 to 16384"),
        ("MEMSCOPE_SLICES_MAP_SM", "-1", "accepted: an SM number"),
    ] {
        let e = MapConfig::from_vars(vars(&[(k, v)])).unwrap_err().to_string();
        assert!(e.contains(&format!("{k}=")) && e.contains(v) && e.contains(says), "{k}={v}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
    // Over the map's limit: every value that set the count named.
    let e = MapConfig::from_vars(vars(&[("MEMSCOPE_SLICES_MAP", "64"), ("MEMSCOPE_SLICES_MAP_PROBE_LINES", "1000")]))
        .unwrap_err()
        .to_string();
    for part in [
        "MEMSCOPE_SLICES_MAP=64",
        "MEMSCOPE_SLICES_MAP_PROBE_LINES=1000",
        "bits:8+10-20",
        "67096 lines",
        "at most 32768",
    ] {
        assert!(e.contains(part), "{part}: {e}");
    }
    assert!(!e.contains('\n'), "{e}");
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
    let e = timed_partition_bit(&BTreeMap::new(), 0).unwrap_err().to_string();
    assert!(e.contains("l2.slices.timing_check is missing") && e.contains("partition bit's mask"), "{e}");
    // Undetermined: its reason is carried.
    let mut und = BTreeMap::new();
    und.insert(
        keys::L2_SLICES_TIMING_CHECK.to_string(),
        Finding::undetermined("", "test", "no timed lap split into near and far hits"),
    );
    let e = timed_partition_bit(&und, 0).unwrap_err().to_string();
    assert!(e.contains("undetermined (no timed lap split into near and far hits)"), "{e}");
    // An SM the check did not time.
    let e = timed_partition_bit(&earlier, 5).unwrap_err().to_string();
    assert!(e.contains("timed no lap from SM 5") && e.contains("[0, 2]"), "{e}");
    // An SM whose labels fitted no bit (summary_json writes null).
    let e = timed_partition_bit(&timing_check(serde_json::Value::Null), 2).unwrap_err().to_string();
    assert!(e.contains("fitted no partition bit to SM 2's"), "{e}");
    let e = timed_partition_bit(&timing_check(json!("0xzz")), 2).unwrap_err().to_string();
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
    let cfg = MapConfig::from_vars(vars(&[("MEMSCOPE_SLICES_MAP", "1")])).unwrap();
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
    // One page: no frame function, and no page to leave out.
    assert!(f.value["function"].get("frame").is_none() && note.contains("no frame function: 1 page(s) mapped"));
    let frames = &out.findings[keys::L2_SLICES_FRAME_HELD_OUT_ACCURACY];
    assert_eq!(frames.confidence, Confidence::Undetermined, "{frames:?}");
}

#[test]
fn labels_that_are_no_residue_or_no_map_leave_all_three_undetermined_with_why() {
    let cfg = MapConfig::from_vars(vars(&[("MEMSCOPE_SLICES_MAP", "1")])).unwrap();
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
    for k in [keys::L2_SLICES_FUNCTION, keys::L2_SLICES_HELD_OUT_ACCURACY, keys::L2_SLICES_FRAME_HELD_OUT_ACCURACY] {
        let f = &out.findings[k];
        assert_eq!(f.confidence, Confidence::Undetermined, "{k}");
        let why = f.note.clone().unwrap();
        assert!(why.starts_with("slice labels over 1 adjacent page(s)") && why.contains("residue"), "{k}: {why}");
    }
    let failed = MapRun {
        lines: cfg.lines(),
        labels: Err(crate::gpu::GpuError::invalid("the serving child exited")),
        secs: 3.0,
    };
    let mut out = ProbeOutput::default();
    function_from_map(&mut out, &cfg, &bit, &failed);
    let why = out.findings[keys::L2_SLICES_HELD_OUT_ACCURACY].note.clone().unwrap();
    assert_eq!(why, "slice labels over 1 page(s): not measured (the serving child exited); no labels");
    assert_eq!(map_summary(&cfg, &failed.lines, &failed.labels, failed.secs), why.trim_end_matches("; no labels"));
    assert_eq!(out.findings[keys::L2_SLICES_FRAME_HELD_OUT_ACCURACY].note.as_deref(), Some(why.as_str()));
}
