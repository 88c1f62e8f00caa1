//! A simulated hierarchy calibrated from a real GPU's results (docs/SIMULATORS.md; the data flow: "sim presets
//! calibrated from findings"; docs/SIMULATORS.md). A pure function of the results' findings and target:
//! every hierarchy field is set from a finding (measured), from the driver's values in
//! `target.details` / `target.units`, derived from those by a stated rule, or kept from the base
//! preset with the reason, and each field's source is one row of `Calibration::rows` (and of the
//! hierarchy's `provenance` map). A results file without GPU findings is refused.

pub mod l2;
pub mod source;

use crate::hierarchy::{Hierarchy, Indexing, Mask, Replacement};
use memscope_core::keys;
use memscope_core::{Confidence, Finding, TargetInfo};
use serde_json::Value;
use source::{Kind, Sources};
use std::collections::BTreeMap;

pub use source::Row;

/// A calibrated hierarchy and where each of its fields came from.
#[derive(Debug, Clone)]
pub struct Calibration {
    pub hierarchy: Hierarchy,
    /// One row per hierarchy field, by field name.
    pub rows: Vec<Row>,
}

/// Why a results file gives no hierarchy.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CalibrateError {
    /// A CPU-only run, or a run whose GPU findings are all missing or undetermined.
    #[error("{0}")]
    NoGpuFindings(String),
    /// The values found give a hierarchy that does not validate (the field is named).
    #[error("the findings give an invalid hierarchy: {0}")]
    Invalid(String),
}

/// Finding keys a GPU calibration reads (a results file with none of them determined is refused).
pub const GPU_KEYS: &[&str] = &[
    keys::L1_HIT_LATENCY_NS,
    keys::L1_WAYS,
    keys::L1_SETS,
    keys::L1_LINE_BYTES,
    keys::L1_SECTOR_BYTES,
    keys::L1_INDEX_MASKS,
    keys::L1_INDEXING,
    keys::TLB_L1_ENTRIES,
    keys::TLB_L1_MISS_NS,
    keys::TLB_L1_REPLACEMENT,
    keys::TLB_PAGE_BYTES,
    keys::L2_HIT_LATENCY_NS,
    keys::L2_FAR_HIT_LATENCY_NS,
    keys::L2_WAYS,
    keys::L2_LINE_BYTES,
    keys::L2_INDEXING,
    keys::L2_POLICY,
    keys::L2_CAPACITY_BYTES,
    keys::L2_SLICES_COUNT,
    keys::L2_SLICES_FUNCTION,
    keys::DRAM_LATENCY_NS,
    keys::DRAM_ROW_BYTES,
    keys::DRAM_REFRESH_STALL_NS,
    keys::DRAM_REFRESH_FRACTION,
    keys::BW_READ_BYTES_PER_S,
    keys::STORE_ISSUE_CYCLES,
    keys::STORE_EGRESS_BYTES_PER_CYCLE,
];

/// The findings of one results file, with the reason a key gives no value.
struct Found<'a>(&'a BTreeMap<String, Finding>);

impl Found<'_> {
    fn get(&self, key: &str) -> Result<&Finding, String> {
        match self.0.get(key) {
            None => Err(format!("no {key} finding")),
            Some(f) if f.confidence == Confidence::Undetermined || f.value.is_null() => {
                let why = f.note.as_deref().unwrap_or("no reason given");
                let why: String = why.chars().take(100).collect();
                Err(format!("{key} undetermined: {why}"))
            }
            Some(f) => Ok(f),
        }
    }
    fn num(&self, key: &str) -> Result<f64, String> {
        let v = self.get(key)?.value.as_f64().ok_or_else(|| format!("{key} is not a number"))?;
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(format!("{key} = {v} is not a finite number >= 0"))
        }
    }
    fn count(&self, key: &str) -> Result<u32, String> {
        let v = self.num(key)?;
        if v >= 1.0 && v.fract() == 0.0 && v <= u32::MAX as f64 {
            Ok(v as u32)
        } else {
            Err(format!("{key} = {v} is not a whole count"))
        }
    }
    fn text(&self, key: &str) -> Result<&str, String> {
        self.get(key)?.value.as_str().ok_or_else(|| format!("{key} is not text"))
    }
}

fn detail_u64(t: &TargetInfo, key: &str) -> Result<u64, String> {
    match t.details.get(key) {
        None => Err(format!("the driver's {key} is not in the results")),
        Some(v) => {
            v.as_u64().filter(|v| *v > 0).ok_or_else(|| format!("details.{key} = {v} is not a positive integer"))
        }
    }
}

fn indexing(s: &str) -> Option<Indexing> {
    match s {
        s if s.starts_with("virt") => Some(Indexing::Virtual),
        s if s.starts_with("phys") => Some(Indexing::Physical),
        _ => None,
    }
}

fn masks(f: &Finding) -> Option<Vec<Mask>> {
    let Value::Array(a) = &f.value else { return None };
    a.iter()
        .map(|v| match v {
            Value::String(s) => crate::hierarchy::parse_u64(s).map(Mask),
            Value::Number(n) => n.as_u64().map(Mask),
            _ => None,
        })
        .collect()
}

/// Findings of `extra` (another run on the same GPU: a probe run on request, say) that
/// `findings` lacks or left undetermined, copied in; returns the keys taken, in order.
pub fn fill_from(findings: &mut BTreeMap<String, Finding>, extra: &BTreeMap<String, Finding>) -> Vec<String> {
    let usable = |f: &Finding| f.confidence != Confidence::Undetermined && !f.value.is_null();
    let mut taken = Vec::new();
    for (k, f) in extra {
        if usable(f) && !findings.get(k).is_some_and(usable) {
            findings.insert(k.clone(), f.clone());
            taken.push(k.clone());
        }
    }
    taken
}

/// Whether the results hold anything a GPU calibration can use.
fn check_gpu(target: &TargetInfo, findings: &BTreeMap<String, Finding>) -> Result<(), CalibrateError> {
    if target.effective_capabilities().host_cores {
        return Err(CalibrateError::NoGpuFindings(format!(
            "target {} ({}) is a CPU: sim calibrate needs the results of a GPU run (memscope run --target cuda:N)",
            target.id, target.name
        )));
    }
    let found = Found(findings);
    if !GPU_KEYS.iter().any(|k| found.get(k).is_ok()) {
        return Err(CalibrateError::NoGpuFindings(format!(
            "no GPU finding (l1.*, l2.*, tlb.*, dram.*) is determined for target {}: sim calibrate needs the results of a GPU run",
            target.id
        )));
    }
    Ok(())
}

/// Build a hierarchy from the findings and target of a results file on top of `base` (named
/// `base_name` in the provenance). `name`: the hierarchy's name.
pub fn calibrate(
    base: Hierarchy,
    base_name: &str,
    target: &TargetInfo,
    findings: &BTreeMap<String, Finding>,
    name: &str,
) -> Result<Calibration, CalibrateError> {
    check_gpu(target, findings)?;
    let f = Found(findings);
    let mut h = base.clone();
    let mut src = Sources::default();
    h.name = name.to_string();
    src.set("name", name, Kind::Derived, format!("from the results' target {} ({})", target.name, target.id));
    match target.clock_hz.filter(|c| c.is_finite() && *c > 0.0) {
        Some(c) => {
            h.clock_hz = c;
            let how = target.details.get("clock_method").and_then(Value::as_str).unwrap_or("the target's clock");
            src.set("clock_hz", c, Kind::Measured, format!("target.clock_hz ({how})"));
        }
        None => src.set("clock_hz", h.clock_hz, Kind::Default, "the results give no target.clock_hz"),
    }
    if target.units > 0 {
        h.sm.count = target.units;
        src.set("sm.count", target.units, Kind::Driver, "target.units (the driver's multiprocessor count)");
    }
    // ---- TLB and page
    let int = |field: &str, key: &str, slot: &mut u32, src: &mut Sources| match f.count(key) {
        Ok(v) => {
            *slot = v;
            src.set(field, v, Kind::Measured, key);
        }
        Err(why) => src.set(field, *slot, Kind::Default, why),
    };
    int("tlb.entries", keys::TLB_L1_ENTRIES, &mut h.tlb.entries, &mut src);
    int("l1.ways", keys::L1_WAYS, &mut h.l1.ways, &mut src);
    int("l1.line_bytes", keys::L1_LINE_BYTES, &mut h.l1.line_bytes, &mut src);
    int("l1.sector_bytes", keys::L1_SECTOR_BYTES, &mut h.l1.sector_bytes, &mut src);
    int("l2.ways", keys::L2_WAYS, &mut h.l2.ways, &mut src);
    int("l2.line_bytes", keys::L2_LINE_BYTES, &mut h.l2.line_bytes, &mut src);
    let ns = |field: &str, key: &str, slot: &mut f64, src: &mut Sources| match f.num(key) {
        Ok(v) => {
            *slot = v;
            src.set(field, v, Kind::Measured, key);
        }
        Err(why) => src.set(field, *slot, Kind::Default, why),
    };
    ns("tlb.miss_ns", keys::TLB_L1_MISS_NS, &mut h.tlb.miss_ns, &mut src);
    ns("l1.hit_ns", keys::L1_HIT_LATENCY_NS, &mut h.l1.hit_ns, &mut src);
    ns("l2.hit_ns", keys::L2_HIT_LATENCY_NS, &mut h.l2.hit_ns, &mut src);
    ns("dram.latency_ns", keys::DRAM_LATENCY_NS, &mut h.dram.latency_ns, &mut src);
    ns("dram.refresh_stall_ns", keys::DRAM_REFRESH_STALL_NS, &mut h.dram.refresh_stall_ns, &mut src);
    match f.num(keys::DRAM_REFRESH_FRACTION).and_then(|v| if v < 1.0 { Ok(v) } else { Err(format!("{v} >= 1")) }) {
        Ok(v) => {
            h.dram.refresh_fraction = v;
            src.set("dram.refresh_fraction", v, Kind::Measured, "dram.refresh_fraction");
        }
        Err(why) => {
            // The GPU's run saw no refresh stalls it could tell from jitter: the preset models
            // none, so its own run says undetermined as the GPU's did (not the base's stalls).
            h.dram.refresh_fraction = 0.0;
            h.dram.refresh_stall_ns = 0.0;
            src.set(
                "dram.refresh_fraction",
                0.0,
                Kind::Derived,
                format!("dram.refresh_fraction undetermined on the GPU ({why}): no refresh stalls modelled"),
            );
            src.set("dram.refresh_stall_ns", 0.0, Kind::Derived, "no refresh stalls modelled (dram.refresh_fraction)");
        }
    }
    match f.text(keys::TLB_L1_REPLACEMENT).map(|s| s.to_ascii_lowercase()) {
        Ok(s) if s == "lru" || s == "fifo" => {
            h.tlb.replacement = if s == "lru" { Replacement::Lru } else { Replacement::Fifo };
            src.set("tlb.replacement", &s, Kind::Measured, "tlb.l1.replacement");
        }
        Ok(s) => {
            src.set("tlb.replacement", "as base", Kind::Default, format!("tlb.l1.replacement {s:?} is not modeled"))
        }
        Err(why) => src.set("tlb.replacement", format!("{:?}", h.tlb.replacement).to_lowercase(), Kind::Default, why),
    }
    match f.num(keys::TLB_PAGE_BYTES) {
        Ok(v) if v >= 4096.0 && (v as u64).is_power_of_two() => {
            h.page_bytes = v as u64;
            src.set("page_bytes", v, Kind::Measured, "tlb.page_bytes");
        }
        Ok(v) => src.set("page_bytes", h.page_bytes, Kind::Default, format!("tlb.page_bytes = {v} is no power of two")),
        Err(why) => src.set("page_bytes", h.page_bytes, Kind::Default, why),
    }
    // ---- L1
    match f.get(keys::L1_INDEX_MASKS).ok().and_then(masks) {
        Some(m) => {
            let n = m.len();
            h.l1.index_masks = m;
            h.l1.sets = 1 << n;
            src.set("l1.index_masks", format!("{n} masks"), Kind::Measured, "l1.index_masks");
            src.set("l1.sets", h.l1.sets, Kind::Derived, format!("2^{n}: one set bit per measured index mask"));
            if let Ok(s) = f.count(keys::L1_SETS) {
                if s != h.l1.sets {
                    src.set("l1.sets", h.l1.sets, Kind::Derived, format!("2^{n} index masks (l1.sets says {s})"));
                }
            }
        }
        None => {
            h.l1.index_masks.clear();
            src.set("l1.index_masks", "plain bits", Kind::Default, "no l1.index_masks: plain bits above the line");
            match f.count(keys::L1_SETS) {
                Ok(s) if s.is_power_of_two() => {
                    h.l1.sets = s;
                    src.set("l1.sets", s, Kind::Measured, "l1.sets");
                }
                _ => src.set("l1.sets", h.l1.sets, Kind::Default, "no power-of-two l1.sets finding"),
            }
        }
    }
    for (field, key, slot) in
        [("l1.indexing", keys::L1_INDEXING, &mut h.l1.indexing), ("l2.indexing", keys::L2_INDEXING, &mut h.l2.indexing)]
    {
        match f.text(key).map(indexing) {
            Ok(Some(i)) => {
                *slot = i;
                src.set(field, format!("{i:?}").to_lowercase(), Kind::Measured, key);
            }
            Ok(None) => {
                src.set(field, format!("{slot:?}").to_lowercase(), Kind::Default, format!("{key} not understood"))
            }
            Err(why) => src.set(field, format!("{slot:?}").to_lowercase(), Kind::Default, why),
        }
    }
    src.set(
        "l1.replacement",
        format!("{:?}", h.l1.replacement).to_lowercase(),
        Kind::Default,
        "memscope has no L1 replacement probe",
    );
    // ---- L2 partitions, far latency, policy
    match f.num(keys::L2_FAR_HIT_LATENCY_NS) {
        Ok(v) => {
            h.l2.far_hit_ns = Some(v);
            h.l2.partitions = 2;
            src.set("l2.far_hit_ns", v, Kind::Measured, "l2.far_hit_latency_ns");
            src.set(
                "l2.partitions",
                2,
                Kind::Derived,
                "two L2 hit plateaus (l2.hit_latency_ns, l2.far_hit_latency_ns): near and far partition",
            );
        }
        Err(why) => {
            h.l2.far_hit_ns = None;
            h.l2.partitions = 1;
            src.set("l2.far_hit_ns", "none", Kind::Derived, format!("{why}: one partition"));
            src.set("l2.partitions", 1, Kind::Derived, "no far-L2 plateau measured");
        }
    }
    // Far copies in fewer ways than the near sets have (measured on the H200); else shared.
    match f.num(keys::L2_FAR_COPY_WAYS) {
        Ok(w) if h.l2.partitions > 1 && (w as u32) < h.l2.ways && w >= 1.0 => {
            h.l2.far_copy_ways = Some(w as u32);
            src.set("l2.far_copy_ways", w as u32, Kind::Measured, keys::L2_FAR_COPY_WAYS);
        }
        other => {
            h.l2.far_copy_ways = None;
            let why = match other {
                Ok(w) if h.l2.partitions > 1 => {
                    format!("l2.far_copy_ways {w} = l2.ways: copies share the near sets' ways")
                }
                Ok(_) => "one partition: no far copies".to_string(),
                Err(why) => format!("{why}: copies share the near sets' ways"),
            };
            src.set("l2.far_copy_ways", "none", Kind::Default, why);
        }
    }
    match f.text(keys::L2_POLICY).map(|s| s.to_ascii_lowercase()) {
        Ok(s) if ["lru", "fifo", "rrip", "rrpv"].iter().any(|p| s.starts_with(p)) => {
            h.l2.replacement = match &s[..3] {
                "lru" => Replacement::Lru,
                "fif" => Replacement::Fifo,
                _ => Replacement::Rrip,
            };
            src.set("l2.replacement", &s, Kind::Measured, "l2.policy");
        }
        Ok(s) => src.set("l2.replacement", "as base", Kind::Default, format!("l2.policy {s:?} is not modeled")),
        Err(why) => src.set("l2.replacement", format!("{:?}", h.l2.replacement).to_lowercase(), Kind::Default, why),
    }
    geometry(&mut h, &base, base_name, target, &f, &mut src);
    dram_and_sm(&mut h, target, &f, &mut src);
    // every field left: the base preset's value, with the reason
    for (field, value) in leftovers(&h) {
        if !src.has(&field) {
            src.set(
                &field,
                value,
                Kind::Default,
                format!("{base_name} preset: memscope measures nothing that sets it"),
            );
        }
    }
    for row in src.rows() {
        if row.kind == Kind::Default && !row.detail.contains(base_name) {
            src.set(&row.field, &row.value, Kind::Default, format!("{base_name} preset: {}", row.detail));
        }
    }
    h.provenance = Some(src.provenance());
    h.validate().map_err(|e| CalibrateError::Invalid(e.to_string()))?;
    Ok(Calibration { hierarchy: h, rows: src.rows() })
}

/// L2 slices, sets and index functions; DRAM capacity and controllers that depend on them.
fn geometry(h: &mut Hierarchy, base: &Hierarchy, base_name: &str, t: &TargetInfo, f: &Found, src: &mut Sources) {
    h.l2.driver_reported_bytes = detail_u64(t, "l2_cache_bytes_attribute").ok();
    match h.l2.driver_reported_bytes {
        Some(b) => src.set("l2.driver_reported_bytes", b, Kind::Driver, "details.l2_cache_bytes_attribute"),
        None => src.set("l2.driver_reported_bytes", "none", Kind::Default, "the run reports no driver L2 size"),
    }
    let (cap, cap_src) = match detail_u64(t, "l2_cache_bytes_attribute") {
        Ok(c) => (Some(c), (Kind::Driver, "details.l2_cache_bytes_attribute".to_string())),
        Err(why) => match f.num(keys::L2_CAPACITY_BYTES) {
            Ok(c) => (Some(c as u64), (Kind::Measured, format!("l2.capacity_bytes ({why})"))),
            Err(why2) => (None, (Kind::Default, format!("{why}; {why2}"))),
        },
    };
    let per_set = h.l2.ways as u64 * h.l2.line_bytes as u64;
    let keep_base = |h: &mut Hierarchy, src: &mut Sources, why: String| {
        h.l2.slices = base.l2.slices;
        h.l2.sets_per_slice = base.l2.sets_per_slice;
        h.l2.slice_function = base.l2.slice_function.clone();
        h.l2.set_function = base.l2.set_function.clone();
        if h.l2.ways != base.l2.ways || h.l2.line_bytes != base.l2.line_bytes {
            h.l2.set_function = crate::hierarchy::HashFunction::Masks { masks: Vec::new() };
            h.l2.slice_function = crate::hierarchy::HashFunction::Masks { masks: Vec::new() };
            h.l2.slices = h.l2.slices.next_power_of_two();
            h.l2.sets_per_slice = h.l2.sets_per_slice.next_power_of_two();
        }
        for k in ["l2.slices", "l2.sets_per_slice", "l2.slice_function", "l2.set_function"] {
            src.set(k, "as base", Kind::Default, why.clone());
        }
    };
    let Some(cap) = cap.filter(|c| *c >= per_set) else {
        keep_base(h, src, format!("no L2 capacity: {}", cap_src.1));
        return;
    };
    src.set("l2.capacity_bytes", cap, cap_src.0, cap_src.1.clone());
    let total_sets = cap / per_set;
    let want = f.count(keys::L2_SLICES_COUNT);
    let want_n = *want.as_ref().unwrap_or(&base.l2.slices);
    let partitions = h.l2.partitions;
    let parts_ok = h.sm.count.is_multiple_of(partitions);
    let p = if parts_ok { partitions } else { 1 };
    if !parts_ok {
        h.l2.partitions = 1;
        h.l2.far_hit_ns = None;
        src.set("l2.partitions", 1, Kind::Derived, format!("{partitions} partitions do not divide {} SMs", h.sm.count));
    }
    // The measured slice function, or why it sets nothing (no usable finding, or it does not fit).
    let unmeasured = match f.get(keys::L2_SLICES_FUNCTION).and_then(l2::residue_of) {
        Ok(m) => match measured_geometry(h, &m, total_sets, &cap_src.1, f, src) {
            Ok(()) => return,
            Err(why) => why,
        },
        Err(why) => why,
    };
    let Some(g) = l2::factor(total_sets, want_n, p) else {
        keep_base(h, src, format!("{total_sets} sets have no split into slices that {p} partitions divide"));
        return;
    };
    let exact = if cap.is_multiple_of(per_set) { "" } else { " (rounded down to whole sets)" };
    h.l2.slices = g.slices;
    h.l2.sets_per_slice = g.sets_per_slice;
    let from = format!("{} / ({} ways x {} B lines){exact}", cap_src.1, h.l2.ways, h.l2.line_bytes);
    match &want {
        Ok(n) if *n == g.slices => src.set("l2.slices", g.slices, Kind::Measured, "l2.slices.count"),
        Ok(n) => src.set("l2.slices", g.slices, Kind::Derived, format!("l2.slices.count = {n}; {}; {from}", g.rule)),
        Err(why) => src.set(
            "l2.slices",
            g.slices,
            Kind::Derived,
            format!("{why}: the split nearest the {base_name} preset's {} slices; {}; {from}", base.l2.slices, g.rule),
        ),
    }
    src.set("l2.sets_per_slice", g.sets_per_slice, Kind::Derived, format!("{from}, over {} slices", g.slices));
    let (slice_fn, set_fn) = l2::functions(&g, h.l2.line_bytes);
    let why = match f.get(keys::L2_SLICES_PAGE_MASKS) {
        Ok(_) => format!(
            "{unmeasured}; l2.slices.page_masks are masks of one page's slice classes, not a whole slice function"
        ),
        Err(w) => format!("{unmeasured}; {w}"),
    };
    let text = |x: &crate::hierarchy::HashFunction| serde_json::to_string(x).unwrap_or_default();
    let even = "chosen so consecutive lines spread evenly over sets and slices";
    src.set("l2.slice_function", text(&slice_fn), Kind::Derived, format!("not measured ({why}); {even}"));
    let why = f.get(keys::L2_SETS).err().unwrap_or_else(|| "memscope has no L2 set-function probe".into());
    src.set("l2.set_function", text(&set_fn), Kind::Derived, format!("not measured ({why}); {even}"));
    h.l2.slice_function = slice_fn;
    h.l2.set_function = set_fn;
    if h.l2.dirty_clean_threshold.is_some_and(|t| t > h.l2.ways) {
        h.l2.dirty_clean_threshold = None;
        src.set(
            "l2.dirty_clean_threshold",
            "half the ways",
            Kind::Derived,
            "the base threshold exceeds the measured ways",
        );
    }
}

/// The L2 geometry from a measured slice function (`l2.slices.function`): its slice count, the
/// sets that fit the capacity in that many slices (rounded down), a modular set function. Err
/// (nothing set): why the function does not fit the hierarchy (its partitions, its capacity).
fn measured_geometry(
    h: &mut Hierarchy,
    m: &l2::MeasuredSlices,
    total_sets: u64,
    cap_from: &str,
    f: &Found,
    src: &mut Sources,
) -> Result<(), String> {
    let slices = m.residue.slices();
    let partitioned = m.residue.partition_mask.0 != 0;
    if (partitioned && h.l2.partitions > 2) || !slices.is_multiple_of(h.l2.partitions as u64) {
        return Err(format!(
            "the measured slice function's {slices} slices{} do not split into the {} partitions",
            if partitioned { " (two partitions by its partition bit)" } else { "" },
            h.l2.partitions
        ));
    }
    let Some(g) = l2::whole_sets(total_sets, slices) else {
        return Err(format!("the measured slice function's {slices} slices do not each get a set of {total_sets}"));
    };
    h.l2.slices = g.slices;
    h.l2.sets_per_slice = g.sets_per_slice;
    let count = match f.count(keys::L2_SLICES_COUNT) {
        Ok(n) if n as u64 == slices => format!("; l2.slices.count agrees ({n})"),
        Ok(n) => format!("; l2.slices.count = {n} differs"),
        Err(why) => format!("; {why}"),
    };
    let parts = if partitioned {
        format!("2 partitions x {}", m.residue.modulus)
    } else {
        format!("{slices} slices, no partition bit")
    };
    src.set("l2.slices", g.slices, Kind::Measured, format!("l2.slices.function: {parts}{count}"));
    src.set(
        "l2.sets_per_slice",
        g.sets_per_slice,
        Kind::Derived,
        format!("{cap_from} / ({} ways x {} B lines) over {} slices; {}", h.l2.ways, h.l2.line_bytes, g.slices, g.rule),
    );
    let function = crate::hierarchy::HashFunction::Residue { residue: m.residue.clone() };
    let text = |x: &crate::hierarchy::HashFunction| serde_json::to_string(x).unwrap_or_default();
    src.set("l2.slice_function", text(&function), Kind::Measured, format!("l2.slices.function; {}", m.frames_note));
    let (_, set_fn) = l2::functions(&g, h.l2.line_bytes);
    let why = f.get(keys::L2_SETS).err().unwrap_or_else(|| "memscope has no L2 set-function probe".into());
    src.set(
        "l2.set_function",
        text(&set_fn),
        Kind::Derived,
        format!("not measured ({why}); chosen so consecutive lines spread evenly over a slice's sets"),
    );
    h.l2.slice_function = function;
    h.l2.set_function = set_fn;
    Ok(())
}

/// DRAM capacity, controllers and line time (bandwidth); SM store issue and port.
fn dram_and_sm(h: &mut Hierarchy, t: &TargetInfo, f: &Found, src: &mut Sources) {
    match detail_u64(t, "memory_total_bytes") {
        Ok(total) if total >= h.page_bytes => {
            let pages = (total / h.page_bytes).min(1 << 26);
            let cap = pages * h.page_bytes;
            h.dram.capacity_bytes = cap.min(1u64 << h.address_bits);
            src.set(
                "dram.capacity_bytes",
                h.dram.capacity_bytes,
                Kind::Driver,
                format!("details.memory_total_bytes = {total}, rounded down to whole {} B pages", h.page_bytes),
            );
        }
        Ok(total) => src.set(
            "dram.capacity_bytes",
            h.dram.capacity_bytes,
            Kind::Default,
            format!("memory_total_bytes {total} < one page"),
        ),
        Err(why) => src.set("dram.capacity_bytes", h.dram.capacity_bytes, Kind::Default, why),
    }
    // HBM/GDDR channels of the bus: 128-bit channels, as Accel-Sim's tuner counts HBM
    match detail_u64(t, "memory_bus_width_bits_attribute") {
        Ok(bits) if bits >= 128 => {
            h.dram.controllers = ((bits / 128) as u32).min(h.l2.slices).max(1);
            src.set(
                "dram.controllers",
                h.dram.controllers,
                Kind::Derived,
                format!("details.memory_bus_width_bits_attribute = {bits} / 128-bit channels (at most l2.slices)"),
            );
        }
        _ => {
            h.dram.controllers = h.dram.controllers.min(h.l2.slices);
            src.set("dram.controllers", h.dram.controllers, Kind::Default, "no memory_bus_width_bits_attribute");
        }
    }
    match f.num(keys::BW_READ_BYTES_PER_S) {
        Ok(bw) if bw > 0.0 => {
            let lanes = (h.dram.controllers * h.dram.channels) as f64;
            h.dram.column_ns = lanes * h.l2.line_bytes as f64 / (bw * 1e-9);
            src.set("dram.column_ns", h.dram.column_ns, Kind::Derived, format!(
                "bw.read_bytes_per_s = {bw:.4e}: {lanes} channels x {} B lines per column_ns give the measured read bandwidth",
                h.l2.line_bytes));
        }
        _ => src.set("dram.column_ns", h.dram.column_ns, Kind::Default, "no bw.read_bytes_per_s finding"),
    }
    match f.num(keys::STORE_ISSUE_CYCLES) {
        Ok(c) if c > 0.0 => {
            h.sm.store_issue_ns = c / h.clock_hz * 1e9;
            src.set(
                "sm.store_issue_ns",
                h.sm.store_issue_ns,
                Kind::Derived,
                format!("store.issue_cycles = {c} at clock_hz"),
            );
        }
        _ => src.set("sm.store_issue_ns", h.sm.store_issue_ns, Kind::Default, "no store.issue_cycles finding"),
    }
    match f.num(keys::STORE_EGRESS_BYTES_PER_CYCLE) {
        Ok(b) if b > 0.0 => {
            h.sm.port_bytes_per_cycle = b;
            src.set("sm.port_bytes_per_cycle", b, Kind::Measured, "store.egress_bytes_per_cycle");
        }
        _ => src.set(
            "sm.port_bytes_per_cycle",
            h.sm.port_bytes_per_cycle,
            Kind::Default,
            "no store.egress_bytes_per_cycle finding",
        ),
    }
    match f.num(keys::DRAM_ROW_BYTES) {
        Ok(v) if v >= 32.0 && (v as u64).is_power_of_two() => {
            h.dram.row_bytes = v as u64;
            src.set("dram.row_bytes", v, Kind::Measured, "dram.row_bytes");
            if h.dram.row_bytes != 1024 {
                h.dram.row_function = crate::hierarchy::RowFunction::Contiguous;
                src.set("dram.row_function", "contiguous", Kind::Derived, "the measured row size is not the 4090's");
            }
        }
        Ok(v) => src.set("dram.row_bytes", h.dram.row_bytes, Kind::Default, format!("dram.row_bytes = {v}")),
        Err(why) => {
            src.set("dram.row_bytes", h.dram.row_bytes, Kind::Default, &why);
            // The GPU showed no open-row saving the row probe could use (the H200, 2026-12-01: 383.3 vs
            // 388.9 ns): the preset models none, so its own run says undetermined as the GPU's.
            h.dram.activate_ns = 0.0;
            src.set(
                "dram.activate_ns",
                0.0,
                Kind::Derived,
                format!("dram.row_bytes undetermined on the GPU ({why}): no open-row saving modelled"),
            );
        }
    }
    if h.l2.partitions > 1 && !h.l2.slices.is_multiple_of(h.l2.partitions) {
        h.l2.partitions = 1;
        h.l2.far_hit_ns = None;
        src.set("l2.partitions", 1, Kind::Derived, "the slice count is not a multiple of the partitions");
    }
}

/// Every hierarchy field with its value, by flattening the JSON two levels deep (`l2.ways`;
/// an index function or a mask list is one field).
fn leftovers(h: &Hierarchy) -> Vec<(String, String)> {
    let mut v = serde_json::to_value(h).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.remove("provenance");
    }
    let mut out = Vec::new();
    flatten("", &v, &mut out);
    out
}

fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) if prefix.matches('.').count() == 0 => {
            for (k, x) in m {
                let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                flatten(&p, x, out);
            }
        }
        x => out.push((prefix.to_string(), x.to_string())),
    }
}

#[cfg(test)]
mod tests;
