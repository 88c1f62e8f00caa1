//! Tests of the calibration on the committed H200 run (tests/data/h200-full-run1.json)
//! and on CPU-only input.

use super::*;
use crate::presets;

fn h200() -> (TargetInfo, BTreeMap<String, Finding>) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/h200-full-run1.json");
    let v: Value = serde_json::from_slice(&std::fs::read(path).expect("committed H200 results")).unwrap();
    let t: TargetInfo = serde_json::from_value(v["target"].clone()).unwrap();
    let f: BTreeMap<String, Finding> = serde_json::from_value(v["findings"].clone()).unwrap();
    (t, f)
}

fn run(t: &TargetInfo, f: &BTreeMap<String, Finding>) -> Result<Calibration, CalibrateError> {
    calibrate(presets::preset("rtx4090").unwrap(), "rtx4090", t, f, "test")
}

fn row<'a>(c: &'a Calibration, field: &str) -> &'a Row {
    c.rows.iter().find(|r| r.field == field).unwrap_or_else(|| panic!("no row for {field}"))
}

#[test]
fn the_h200_gets_its_own_geometry_and_driver_values() {
    let (t, f) = h200();
    let c = run(&t, &f).unwrap();
    let h = &c.hierarchy;
    assert_eq!(h.sm.count, 132);
    assert_eq!((h.l2.slices, h.l2.sets_per_slice, h.l2.ways, h.l2.line_bytes), (96, 320, 16, 128));
    let l2_bytes = h.l2.slices as u64 * h.l2.sets_per_slice as u64 * h.l2.ways as u64 * h.l2.line_bytes as u64;
    assert_eq!(l2_bytes, 62_914_560, "the driver's 60 MiB exactly");
    assert_eq!(h.l2.partitions, 2);
    assert_eq!(h.page_bytes, 16 << 20);
    assert_eq!(h.dram.capacity_bytes, 150_109_880_320 / (16 << 20) * (16 << 20));
    assert_eq!(h.dram.controllers, 6016 / 128);
    assert_eq!(row(&c, "sm.count").kind, Kind::Driver);
    assert_eq!(row(&c, "dram.capacity_bytes").kind, Kind::Driver);
    assert_eq!(row(&c, "l2.capacity_bytes").kind, Kind::Driver);
    assert!(row(&c, "l2.slices").detail.contains("l2.slices.count = 94"), "{:?}", row(&c, "l2.slices"));
    // every measured field equals its finding
    let num = |k: &str| f[k].value.as_f64().unwrap();
    assert_eq!(h.l1.hit_ns, num("l1.hit_latency_ns"));
    assert_eq!(h.l2.hit_ns, num("l2.hit_latency_ns"));
    assert_eq!(h.l2.far_hit_ns, Some(num("l2.far_hit_latency_ns")));
    assert_eq!(h.dram.latency_ns, num("dram.latency_ns"));
    assert_eq!(h.tlb.miss_ns, num("tlb.l1.miss_ns"));
    assert_eq!(h.tlb.entries as f64, num("tlb.l1.entries"));
    assert_eq!((h.l1.ways, h.l1.sets), (4, 512));
    assert_eq!(h.l1.index_masks.len(), 9);
    assert_eq!(h.clock_hz, t.clock_hz.unwrap());
    assert_eq!(h.sm.port_bytes_per_cycle, num("store.egress_bytes_per_cycle"));
    for r in &c.rows {
        if r.kind == Kind::Measured {
            assert!(f.contains_key(r.detail.split(' ').next().unwrap()) || r.field == "clock_hz", "{r:?}");
        }
    }
    // undetermined findings stay defaults and say why
    assert_eq!(row(&c, "dram.row_bytes").kind, Kind::Default);
    assert!(row(&c, "dram.row_bytes").detail.contains("undetermined"), "{:?}", row(&c, "dram.row_bytes"));
}

#[test]
fn every_field_has_a_source_and_the_default_names_the_base() {
    let (t, f) = h200();
    let c = run(&t, &f).unwrap();
    let prov = c.hierarchy.provenance.as_ref().unwrap();
    for (field, _) in leftovers(&c.hierarchy) {
        assert!(prov.contains_key(&field), "{field} has no provenance");
    }
    for r in c.rows.iter().filter(|r| r.kind == Kind::Default) {
        assert!(r.detail.contains("rtx4090 preset"), "{r:?}");
    }
    // the result runs on the simulator
    crate::SimTarget::new(c.hierarchy.clone()).expect("the calibrated H200 builds");
}

#[test]
fn calibration_is_a_pure_function_of_the_results() {
    let (t, f) = h200();
    let a = run(&t, &f).unwrap().hierarchy.to_json_pretty();
    let b = run(&t, &f).unwrap().hierarchy.to_json_pretty();
    assert_eq!(a, b);
}

#[test]
fn cpu_only_results_are_refused() {
    let (mut t, f) = h200();
    let cpu: BTreeMap<String, Finding> =
        f.iter().filter(|(k, _)| k.starts_with("cpu.")).map(|(k, v)| (k.clone(), v.clone())).collect();
    let e = run(&t, &cpu).unwrap_err();
    assert!(matches!(e, CalibrateError::NoGpuFindings(_)), "{e}");
    t.kind = "cpu".into();
    t.id = "cpu".into();
    let e = run(&t, &f).unwrap_err();
    assert!(e.to_string().contains("is a CPU"), "{e}");
}

#[test]
fn without_driver_details_the_measured_capacity_and_base_slices_are_used() {
    let (mut t, f) = h200();
    t.details.clear();
    let c = run(&t, &f).unwrap();
    let h = &c.hierarchy;
    // 28549248 B / 2 KiB sets = 13940 sets (rounded down), nearest split to 94 slices
    assert_eq!(row(&c, "l2.capacity_bytes").kind, Kind::Measured);
    assert_eq!(h.l2.slices as u64 * h.l2.sets_per_slice as u64, 28_549_248 / 2048);
    assert_eq!(row(&c, "dram.capacity_bytes").kind, Kind::Default);
}

#[test]
fn what_the_gpu_did_not_see_is_not_modelled_and_the_driver_size_is_carried() {
    let (t, mut f) = h200();
    let undetermined = |unit: &str| Finding::undetermined(unit, "m", "not separable from jitter");
    f.insert(keys::DRAM_ROW_BYTES.into(), undetermined("bytes"));
    f.insert(keys::DRAM_REFRESH_FRACTION.into(), undetermined("ratio"));
    f.insert(keys::DRAM_REFRESH_STALL_NS.into(), undetermined("ns"));
    f.insert(keys::L2_FAR_COPY_WAYS.into(), Finding::integer(7, "count", "m", memscope_core::Confidence::Low));
    let c = run(&t, &f).unwrap();
    let h = &c.hierarchy;
    assert_eq!(h.dram.activate_ns, 0.0, "no open-row saving modelled");
    assert_eq!((h.dram.refresh_fraction, h.dram.refresh_stall_ns), (0.0, 0.0), "no refresh modelled");
    for field in ["dram.activate_ns", "dram.refresh_fraction"] {
        assert_eq!(row(&c, field).kind, Kind::Derived, "{field}");
        assert!(row(&c, field).detail.contains("not separable from jitter"), "{:?}", row(&c, field));
    }
    assert_eq!(h.l2.driver_reported_bytes, Some(62_914_560));
    assert_eq!(row(&c, "l2.driver_reported_bytes").kind, Kind::Driver);
    assert_eq!(h.l2.far_copy_ways, Some(7));
    // The simulated target reports the driver's size as a CUDA target does.
    let sim = crate::SimTarget::new(h.clone()).unwrap();
    use memscope_core::Target;
    assert_eq!(sim.info().details["l2_cache_bytes_attribute"], serde_json::json!(62_914_560u64));
    // A far-copy count equal to the ways is no separate structure.
    f.insert(keys::L2_FAR_COPY_WAYS.into(), Finding::integer(16, "count", "m", memscope_core::Confidence::Low));
    assert_eq!(run(&t, &f).unwrap().hierarchy.l2.far_copy_ways, None);
}

/// The l2.slices.function finding of the probe's own map on the H200
/// (results/h200/l2-slices-function), in the structured form the probe now writes.
fn h200_function_finding() -> Finding {
    let share = crate::hash_h200::parse_share("0x3e4:38:0").unwrap();
    let function = serde_json::to_value(crate::hash_h200::h200_function(share)).unwrap();
    let value = serde_json::json!({"formula": "slice = (P, y) ...", "function": function,
        "shares": [{"page": 0, "flips": "0x3e4", "constant": 38, "partition": 0}]});
    Finding::json(value, "", "slice map", memscope_core::Confidence::High)
}

#[test]
fn a_measured_slice_function_sets_the_slices_and_runs_on_the_simulator() {
    let (t, mut f) = h200();
    f.insert(keys::L2_SLICES_FUNCTION.into(), h200_function_finding());
    let c = run(&t, &f).unwrap();
    let h = &c.hierarchy;
    // 2 partitions x 47; 30720 sets of the 60 MiB over 94 slices: 326 whole sets each
    assert_eq!((h.l2.slices, h.l2.sets_per_slice, h.l2.partitions), (94, 326, 2));
    assert!(
        matches!(&h.l2.slice_function, crate::hierarchy::HashFunction::Residue { residue } if residue.modulus == 47)
    );
    assert_eq!(row(&c, "l2.slice_function").kind, Kind::Measured);
    assert!(row(&c, "l2.slice_function").detail.contains("every frame"), "{:?}", row(&c, "l2.slice_function"));
    assert!(row(&c, "l2.slices").detail.contains("l2.slices.count agrees (94)"), "{:?}", row(&c, "l2.slices"));
    assert!(row(&c, "l2.sets_per_slice").detail.contains("left out"), "{:?}", row(&c, "l2.sets_per_slice"));
    // The hierarchy round-trips through its JSON and the simulator sends each line to the slice
    // the function names: partition P lines to slices 47P..47P+46.
    let back = Hierarchy::from_json_str(&h.to_json_pretty()).unwrap();
    assert_eq!((&back.l2.slice_function, &back.l2.set_function), (&h.l2.slice_function, &h.l2.set_function));
    let sim = crate::SimTarget::new(back).unwrap();
    let share = crate::hash_h200::parse_share("0x3e4:38:0").unwrap();
    let f_sim = crate::hash::IndexFn::slice(&sim.hierarchy().l2_slice_function());
    for a in (0..(4u64 << 21)).step_by(0x1100 * 7) {
        let (p, y) = crate::hash_h200::h200_slice(a, &share);
        assert_eq!(f_sim.eval(a), p as u32 * 47 + y as u32, "{a:#x}");
    }
}

#[test]
fn a_slice_function_finding_without_its_structure_falls_back_with_the_reason() {
    let (t, mut f) = h200();
    let text = Finding::text("slice = (P, y) ...", "slice map", memscope_core::Confidence::High);
    f.insert(keys::L2_SLICES_FUNCTION.into(), text);
    let c = run(&t, &f).unwrap();
    assert_eq!((c.hierarchy.l2.slices, c.hierarchy.l2.sets_per_slice), (96, 320));
    let r = row(&c, "l2.slice_function");
    assert!(r.kind == Kind::Derived && r.detail.contains("no structured function"), "{r:?}");
    // A function whose modulus disagrees with its terms' weights is refused, named.
    let mut bad = h200_function_finding();
    bad.value["function"]["terms"][3]["weight"] = serde_json::json!(47);
    f.insert(keys::L2_SLICES_FUNCTION.into(), bad);
    let r2 = run(&t, &f).unwrap();
    assert!(row(&r2, "l2.slice_function").detail.contains("terms[3].weight"), "{:?}", row(&r2, "l2.slice_function"));
}

#[test]
fn another_runs_findings_fill_only_what_the_first_lacks() {
    let (_, mut f) = h200();
    let before_hit = f[keys::L2_HIT_LATENCY_NS].clone();
    let mut extra = BTreeMap::new();
    extra.insert(keys::L2_SLICES_FUNCTION.to_string(), h200_function_finding());
    extra.insert(keys::L2_HIT_LATENCY_NS.to_string(), Finding::number(1.0, "ns", "m", memscope_core::Confidence::High));
    extra.insert(keys::DRAM_ROW_BYTES.to_string(), Finding::undetermined("bytes", "m", "no"));
    let taken = fill_from(&mut f, &extra);
    assert_eq!(taken, vec![keys::L2_SLICES_FUNCTION.to_string()]);
    assert_eq!(f[keys::L2_HIT_LATENCY_NS], before_hit, "a determined finding is kept");
}

#[test]
fn a_measured_frame_function_goes_into_the_preset() {
    let (t, mut f) = h200();
    let mut finding = h200_function_finding();
    let frame = serde_json::json!({"flip_masks": ["0x1", "0x0", "0x2", "0x0", "0x0", "0x0", "0x0", "0x0", "0x0", "0x4"],
        "partition_mask": "0x3", "constant_step": 5});
    finding.value["function"]["frame"] = frame;
    f.insert(keys::L2_SLICES_FUNCTION.into(), finding);
    let c = run(&t, &f).unwrap();
    let crate::hierarchy::HashFunction::Residue { residue } = &c.hierarchy.l2.slice_function else { panic!() };
    let fr = residue.frame.as_ref().expect("the frame function kept");
    assert_eq!((fr.constant_step, fr.partition_mask), (5, Mask(3)));
    assert!(
        row(&c, "l2.slice_function").detail.contains("fitted over 1 mapped pages"),
        "{:?}",
        row(&c, "l2.slice_function")
    );
}

#[test]
fn a_measured_function_with_more_slices_than_sets_is_declined_with_the_reason() {
    let (t, mut f) = h200();
    let mut finding = h200_function_finding();
    finding.value["function"]["modulus"] = serde_json::json!(40_000);
    f.insert(keys::L2_SLICES_FUNCTION.into(), finding);
    let c = run(&t, &f).unwrap();
    assert_eq!((c.hierarchy.l2.slices, c.hierarchy.l2.sets_per_slice), (96, 320), "the split of the capacity");
    let r = row(&c, "l2.slice_function");
    assert!(r.kind == Kind::Derived && r.detail.contains("80000 slices do not each get a set of 30720"), "{r:?}");
}
