//! The Accel-Sim export of the committed H200 run: it parses, names only options of the public
//! configurations (data/accel-sim-options.txt), and its measured lines equal the findings.

use memscope_core::{Finding, TargetInfo};
use memscope_export::{accel_sim, options};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const RUN: &str = "tests/data/h200-full-run1.json";

fn h200() -> (TargetInfo, BTreeMap<String, Finding>) {
    let path = format!("{}/{RUN}", env!("CARGO_MANIFEST_DIR"));
    let v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    (serde_json::from_value(v["target"].clone()).unwrap(), serde_json::from_value(v["findings"].clone()).unwrap())
}

fn opts(text: &str) -> BTreeMap<String, String> {
    options::parse(text).unwrap().into_iter().map(|o| (o.name, o.value)).collect()
}

#[test]
fn the_export_parses_and_names_only_known_options() {
    let (t, f) = h200();
    let e = accel_sim::export(&t, &f, RUN).unwrap();
    let text = &e.files[0].1;
    let parsed = options::parse(text).unwrap();
    let known: BTreeSet<&str> = options::known_names().into_iter().collect();
    let mut seen = BTreeSet::new();
    for o in &parsed {
        assert!(known.contains(o.name.as_str()), "{} (line {}) is not in the public configs", o.name, o.line);
        assert!(seen.insert(o.name.clone()), "{} twice", o.name);
    }
    // every option line carries its source in a comment
    for line in text.lines().filter(|l| l.starts_with('-')) {
        assert!(line.contains("  # "), "{line}");
    }
}

#[test]
fn measured_lines_equal_the_findings() {
    let (t, f) = h200();
    let o = opts(&accel_sim::export(&t, &f, RUN).unwrap().files[0].1);
    let num = |k: &str| f[k].value.as_f64().unwrap();
    let ghz = t.clock_hz.unwrap() / 1e9;
    let cyc = |k: &str| num(k) * ghz;
    assert_eq!(o["-gpgpu_n_clusters"], "132");
    assert_eq!(o["-gpgpu_l1_latency"], format!("{:.0}", cyc("l1.hit_latency_ns")));
    assert_eq!(o["-gpgpu_l2_rop_latency"], format!("{:.0}", cyc("l2.hit_latency_ns") - cyc("l1.hit_latency_ns")));
    assert_eq!(o["-dram_latency"], format!("{:.0}", cyc("dram.latency_ns") - cyc("l2.hit_latency_ns")));
    let n_mem: f64 = o["-gpgpu_n_mem"].parse().unwrap();
    let subs: f64 = o["-gpgpu_n_sub_partition_per_mchannel"].parse().unwrap();
    assert_eq!(n_mem * subs, num("l2.slices.count"));
    let dl2: Vec<&str> = o["-gpgpu_cache:dl2"].split(',').next().unwrap().split(':').collect();
    assert_eq!(dl2[2].parse::<f64>().unwrap(), num("l2.line_bytes"));
    assert_eq!(dl2[3].parse::<f64>().unwrap(), num("l2.ways"));
    assert!(dl2[1].parse::<u64>().unwrap().is_power_of_two());
    let dl1: Vec<&str> = o["-gpgpu_cache:dl1"].split(',').next().unwrap().split(':').collect();
    assert_eq!(dl1[1..], ["512", "128", "4"]);
    assert!(o["-gpgpu_clock_domains"].starts_with("1980:"));
    assert!(o["-gpgpu_clock_domains"].ends_with(":3201"));
}

#[test]
fn cpu_results_are_refused() {
    let (mut t, f) = h200();
    let cpu: BTreeMap<String, Finding> =
        f.iter().filter(|(k, _)| k.starts_with("cpu.")).map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(accel_sim::export(&t, &cpu, RUN).unwrap_err().0.contains("needs the results of a GPU run"));
    t.kind = "cpu".into();
    assert!(accel_sim::export(&t, &f, RUN).unwrap_err().0.contains("is a CPU"));
}

#[test]
fn a_measured_slice_function_accel_sim_cannot_express_is_said_so() {
    // The committed run has l2.slices.function undetermined; the probe's own map of
    // results/h200/l2-slices-function determined it. The partition indexing keeps the base
    // either way, with the reason that holds.
    let (t, mut f) = h200();
    let line = |f: &BTreeMap<String, Finding>| {
        let text = accel_sim::export(&t, f, RUN).unwrap().files[0].1.clone();
        text.lines().find(|l| l.starts_with("-gpgpu_memory_partition_indexing")).unwrap().to_string()
    };
    assert!(line(&f).contains("not measured as an XOR function"), "{}", line(&f));
    f.insert(
        "l2.slices.function".into(),
        Finding::text("slice = (P, y): ... mod 47", "test", memscope_core::Confidence::High),
    );
    assert!(line(&f).contains("express no other"), "{}", line(&f));
    let o = opts(&accel_sim::export(&t, &f, RUN).unwrap().files[0].1);
    assert_eq!(o["-gpgpu_memory_partition_indexing"], base_value());
}

/// The base's partition indexing value.
fn base_value() -> &'static str {
    memscope_export::base::SM90_H200.iter().find(|(o, _)| *o == "-gpgpu_memory_partition_indexing").unwrap().1
}
