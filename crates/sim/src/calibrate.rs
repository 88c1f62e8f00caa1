//! A simulated hierarchy calibrated from measured findings (DESIGN.md data flow: "sim presets
//! calibrated from findings"): every finding key of the results JSON that names a hierarchy field
//! (`l1.hit_latency_ns`, `l1.ways`, `l1.index_masks`, `tlb.l1.entries`, `l2.*`, `dram.*`, ...)
//! replaces the base preset's value; every field left at the base value is listed in
//! `provenance` as "default", so nothing pretends to be measured.

use memscope_core::hierarchy::{HashFunction, Hierarchy, Indexing, Mask};
use memscope_core::{Confidence, Finding};
use serde_json::Value;
use std::collections::BTreeMap;

/// Fields the calibration can set, with the finding key that sets each.
pub const MAPPED: &[(&str, &str)] = &[
    ("l1.hit_ns", "l1.hit_latency_ns"),
    ("l1.ways", "l1.ways"),
    ("l1.sets", "l1.sets"),
    ("l1.line_bytes", "l1.line_bytes"),
    ("l1.sector_bytes", "l1.sector_bytes"),
    ("l1.index_masks", "l1.index_masks"),
    ("l1.indexing", "l1.indexing"),
    ("tlb.entries", "tlb.l1.entries"),
    ("tlb.miss_ns", "tlb.l1.miss_ns"),
    ("page_bytes", "tlb.page_bytes"),
    ("l2.hit_ns", "l2.hit_latency_ns"),
    ("l2.far_hit_ns", "l2.far_hit_latency_ns"),
    ("l2.ways", "l2.ways"),
    ("l2.line_bytes", "l2.line_bytes"),
    ("l2.indexing", "l2.indexing"),
    ("l2.capacity_bytes", "l2.capacity_bytes"),
    ("dram.latency_ns", "dram.latency_ns"),
    ("dram.row_bytes", "dram.row_bytes"),
    ("dram.refresh_stall_ns", "dram.refresh_stall_ns"),
    ("dram.refresh_fraction", "dram.refresh_fraction"),
];

fn measured(prov: &mut BTreeMap<String, String>, field: &str, key: &str, v: &dyn std::fmt::Display) {
    prov.insert(field.to_string(), format!("measured: {key} = {v}"));
}

fn num(f: &Finding) -> Option<f64> {
    if f.confidence == Confidence::Undetermined {
        return None;
    }
    f.value.as_f64()
}

fn indexing(f: &Finding) -> Option<Indexing> {
    match f.value.as_str()? {
        s if s.starts_with("virt") => Some(Indexing::Virtual),
        s if s.starts_with("phys") => Some(Indexing::Physical),
        _ => None,
    }
}

fn masks(f: &Finding) -> Option<Vec<Mask>> {
    let Value::Array(a) = &f.value else { return None };
    a.iter()
        .map(|v| match v {
            Value::String(s) => memscope_core::hierarchy::parse_u64(s).map(Mask),
            Value::Number(n) => n.as_u64().map(Mask),
            _ => None,
        })
        .collect()
}

/// Build a hierarchy from `findings` on top of `base`. `clock_hz`: the measured clock, when known.
/// Returns an error naming the field when the result does not validate.
pub fn calibrate(
    base: Hierarchy,
    base_name: &str,
    findings: &BTreeMap<String, Finding>,
    clock_hz: Option<f64>,
    name: &str,
) -> Result<Hierarchy, String> {
    let mut h = base;
    let mut prov: BTreeMap<String, String> = BTreeMap::new();
    h.name = name.to_string();
    if let Some(c) = clock_hz.filter(|c| c.is_finite() && *c > 0.0) {
        h.clock_hz = c;
        measured(&mut prov, "clock_hz", "target.clock_hz", &c);
    }
    let get = |k: &str| findings.get(k);
    let as_u32 = |k: &str| get(k).and_then(num).filter(|v| *v >= 1.0 && v.fract() == 0.0).map(|v| v as u32);
    let as_ns = |k: &str| get(k).and_then(num).filter(|v| v.is_finite() && *v >= 0.0);
    if let Some(v) = as_ns("l1.hit_latency_ns") {
        h.l1.hit_ns = v;
        measured(&mut prov, "l1.hit_ns", "l1.hit_latency_ns", &v);
    }
    for (field, key, slot) in [
        ("l1.ways", "l1.ways", &mut h.l1.ways),
        ("l1.sets", "l1.sets", &mut h.l1.sets),
        ("l1.line_bytes", "l1.line_bytes", &mut h.l1.line_bytes),
        ("l1.sector_bytes", "l1.sector_bytes", &mut h.l1.sector_bytes),
        ("tlb.entries", "tlb.l1.entries", &mut h.tlb.entries),
        ("l2.ways", "l2.ways", &mut h.l2.ways),
        ("l2.line_bytes", "l2.line_bytes", &mut h.l2.line_bytes),
    ] {
        if let Some(v) = as_u32(key) {
            *slot = v;
            measured(&mut prov, field, key, &v);
        }
    }
    match get("l1.index_masks").and_then(masks) {
        Some(m) => {
            let n = m.len();
            h.l1.index_masks = m;
            h.l1.sets = 1 << n;
            measured(&mut prov, "l1.index_masks", "l1.index_masks", &format!("{n} masks"));
        }
        None if h.l1.index_masks.len() != h.l1.sets.trailing_zeros() as usize || !h.l1.sets.is_power_of_two() => {
            h.l1.index_masks.clear(); // plain bits
        }
        None => {}
    }
    if let Some(i) = get("l1.indexing").and_then(indexing) {
        h.l1.indexing = i;
        measured(&mut prov, "l1.indexing", "l1.indexing", &format!("{i:?}"));
    }
    if let Some(v) = as_ns("tlb.l1.miss_ns") {
        h.tlb.miss_ns = v;
        measured(&mut prov, "tlb.miss_ns", "tlb.l1.miss_ns", &v);
    }
    if let Some(v) = get("tlb.page_bytes").and_then(num).filter(|v| *v >= 4096.0) {
        h.page_bytes = v as u64;
        measured(&mut prov, "page_bytes", "tlb.page_bytes", &v);
    }
    if let Some(v) = as_ns("l2.hit_latency_ns") {
        h.l2.hit_ns = v;
        measured(&mut prov, "l2.hit_ns", "l2.hit_latency_ns", &v);
    }
    if let Some(v) = as_ns("l2.far_hit_latency_ns") {
        h.l2.far_hit_ns = Some(v);
        if h.l2.partitions < 2 && h.l2.slices.is_multiple_of(2) && h.sm.count.is_multiple_of(2) {
            h.l2.partitions = 2;
        }
        measured(&mut prov, "l2.far_hit_ns", "l2.far_hit_latency_ns", &v);
    }
    if let Some(i) = get("l2.indexing").and_then(indexing) {
        h.l2.indexing = i;
        measured(&mut prov, "l2.indexing", "l2.indexing", &format!("{i:?}"));
    }
    // L2 capacity: keep the slice count, derive sets per slice; a geometry the named functions
    // cannot express falls back to plain-bit functions with a power-of-two split.
    if let Some(cap) = get("l2.capacity_bytes").and_then(num).filter(|v| *v >= 1.0) {
        let cap = cap as u64;
        measured(&mut prov, "l2.capacity_bytes", "l2.capacity_bytes", &cap);
        let per_set = h.l2.ways as u64 * h.l2.line_bytes as u64;
        let total_sets = cap / per_set.max(1);
        let named = matches!(h.l2.slice_function, HashFunction::Named(_));
        if named && total_sets == h.l2.slices as u64 * 1024 {
            h.l2.sets_per_slice = 1024;
        } else if total_sets.is_power_of_two() {
            let slices = h.l2.slices.next_power_of_two().min(total_sets as u32).max(1);
            let slices = if slices as u64 > total_sets { 1 } else { slices };
            h.l2.slices = slices;
            h.l2.sets_per_slice = (total_sets / slices as u64) as u32;
            h.l2.slice_function = HashFunction::Masks { masks: Vec::new() };
            h.l2.set_function = HashFunction::Masks { masks: Vec::new() };
            prov.insert(
                "l2.slice_function".into(),
                "default: plain address bits (the slice function was not measured)".into(),
            );
            prov.insert(
                "l2.set_function".into(),
                "default: plain address bits (the set function was not measured)".into(),
            );
        } else {
            prov.insert(
                "l2.capacity_bytes".into(),
                format!(
                    "measured {cap} bytes, but {total_sets} sets fit no modeled slice/set function; base geometry kept"
                ),
            );
        }
        if h.dram.controllers > h.l2.slices {
            h.dram.controllers = h.l2.slices;
        }
        if h.l2.partitions > 1 && !h.l2.slices.is_multiple_of(h.l2.partitions) {
            h.l2.partitions = 1;
        }
    }
    if let Some(v) = as_ns("dram.latency_ns") {
        h.dram.latency_ns = v;
        measured(&mut prov, "dram.latency_ns", "dram.latency_ns", &v);
    }
    if let Some(v) = get("dram.row_bytes").and_then(num).filter(|v| *v >= 32.0) {
        h.dram.row_bytes = v as u64;
        if h.dram.row_bytes != 1024 {
            h.dram.row_function = memscope_core::hierarchy::RowFunction::Contiguous;
        }
        measured(&mut prov, "dram.row_bytes", "dram.row_bytes", &v);
    }
    if let Some(v) = as_ns("dram.refresh_stall_ns") {
        h.dram.refresh_stall_ns = v;
        measured(&mut prov, "dram.refresh_stall_ns", "dram.refresh_stall_ns", &v);
    }
    if let Some(v) = get("dram.refresh_fraction").and_then(num).filter(|v| (0.0..1.0).contains(v)) {
        h.dram.refresh_fraction = v;
        measured(&mut prov, "dram.refresh_fraction", "dram.refresh_fraction", &v);
    }
    for (field, key) in MAPPED {
        prov.entry(field.to_string()).or_insert_with(|| format!("default ({base_name} preset): no {key} finding"));
    }
    prov.insert(
        "*".into(),
        format!("every field not listed here is the {base_name} preset's value, not a measurement"),
    );
    h.provenance = Some(prov);
    h.validate().map_err(|e| e.to_string())?;
    Ok(h)
}
