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
