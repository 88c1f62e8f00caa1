//! A GPGPU-Sim / Accel-Sim `gpgpusim.config` from one results file (docs/SIMULATORS.md). Every option of
//! the base (`base::SM90_H200`) is written; those memscope can set come from the findings or the
//! driver's values, the rest keep the base value, and each line's comment says which and why.
//! Conventions follow Accel-Sim's tuner (accel-sim-framework util/tuner/GPU_Microbenchmark):
//! `-gpgpu_l1_latency` is the L1 hit in core cycles, `-gpgpu_l2_rop_latency` the L2 hit minus
//! the L1 hit, `-dram_latency` the DRAM latency minus the L2 hit (l1_lat.cu, l2_lat.cu,
//! mem_lat.cu); HBM channels are 128 bits wide (hw_def/common/common.h); the DRAM clock domain
//! is the memory clock x 2 / `-dram_data_command_freq_ratio` (system_config.cu); DRAM timings
//! are the base's cycle counts scaled to the new DRAM clock (mem_config.cu scales its reference
//! timings the same way). GPGPU-Sim indexes cache sets with a power-of-two mask
//! (gpu-cache.cc `hash_function`), so the L2 set count is a power of two.

use crate::base::{self, BASE, XBAR_BASE};
use memscope_core::{Confidence, Finding, TargetInfo};
use std::collections::BTreeMap;

/// One written option: name, value, and where the value came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub option: &'static str,
    pub value: String,
    /// "measured: ...", "driver: ...", "derived: ..." or "base SM90_H200: ...".
    pub source: String,
}

/// The exported files: (file name, text).
#[derive(Debug, Clone)]
pub struct Export {
    pub files: Vec<(String, String)>,
    pub entries: Vec<Entry>,
}

/// Why there is no export.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportError(pub String);

impl std::fmt::Display for ExportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ExportError {}

struct Found<'a>(&'a BTreeMap<String, Finding>);

impl Found<'_> {
    fn num(&self, key: &str) -> Option<f64> {
        let f = self.0.get(key)?;
        if f.confidence == Confidence::Undetermined {
            return None;
        }
        f.value.as_f64().filter(|v| v.is_finite() && *v > 0.0)
    }
    fn why(&self, key: &str) -> String {
        match self.0.get(key) {
            None => format!("no {key} finding"),
            Some(f) if f.confidence == Confidence::Undetermined => format!("{key} undetermined"),
            Some(_) => format!("{key} not usable"),
        }
    }
}

fn pow2_floor(x: f64) -> u64 {
    if x < 1.0 {
        return 1;
    }
    1u64 << (63 - (x as u64).leading_zeros())
}

/// The base value with its cache fields (`S:sets:line:ways,rest`) split off.
fn cache_rest(option: &str) -> String {
    let v = base::value(option).unwrap_or("");
    v.split_once(',').map(|(_, r)| r.to_string()).unwrap_or_default()
}

/// The whole export of one results file. `source`: how the header names the results file.
pub fn export(target: &TargetInfo, findings: &BTreeMap<String, Finding>, source: &str) -> Result<Export, ExportError> {
    if target.effective_capabilities().host_cores {
        return Err(ExportError(format!(
            "target {} ({}) is a CPU: export accel-sim needs the results of a GPU run",
            target.id, target.name
        )));
    }
    let f = Found(findings);
    let gpu_keys = ["l1.hit_latency_ns", "l2.hit_latency_ns", "dram.latency_ns", "l1.ways", "l2.ways"];
    if !gpu_keys.iter().any(|k| f.num(k).is_some()) {
        return Err(ExportError(format!(
            "no GPU latency or geometry finding for target {}: export accel-sim needs the results of a GPU run",
            target.id
        )));
    }
    let mut set: BTreeMap<&'static str, (String, String)> = BTreeMap::new();
    let mut put = |o: &'static str, v: String, s: String| {
        set.insert(o, (v, s));
    };
    let clock_mhz = target.clock_hz.filter(|c| *c > 0.0).map(|c| c / 1e6);
    let det = |k: &str| target.details.get(k);
    // identity and SM count
    if let Some(cc) = det("compute_capability").and_then(|v| v.as_str()) {
        if let Some((ma, mi)) = cc.split_once('.') {
            put("-gpgpu_compute_capability_major", ma.into(), format!("driver: compute_capability {cc}"));
            put("-gpgpu_compute_capability_minor", mi.into(), format!("driver: compute_capability {cc}"));
            let both = format!("{ma}{mi}");
            put("-gpgpu_ptx_force_max_capability", both.clone(), format!("driver: compute_capability {cc}"));
            put("-gpgpu_coalesce_arch", both, format!("driver: compute_capability {cc}"));
        }
    }
    if target.units > 0 {
        put("-gpgpu_n_clusters", target.units.to_string(), "driver: target.units (multiprocessor count)".into());
        put(
            "-gpgpu_n_cores_per_cluster",
            "1".into(),
            "derived: one SM per cluster, as Accel-Sim's tuner writes".into(),
        );
    }
    if let Some(s) = det("max_shared_per_sm_bytes_attribute").and_then(|v| v.as_u64()) {
        for o in ["-gpgpu_shmem_size", "-gpgpu_shmem_sizeDefault"] {
            put(o, s.to_string(), "driver: max_shared_per_sm_bytes_attribute".into());
        }
    }
    // clocks: core measured, DRAM from the driver's memory clock, interconnect and L2 from base
    let base_clocks: Vec<&str> = base::value("-gpgpu_clock_domains").unwrap_or("").split(':').collect();
    let ratio: f64 = base::value("-dram_data_command_freq_ratio").and_then(|v| v.parse().ok()).unwrap_or(2.0);
    let dram_mhz = det("memory_clock_khz_attribute").and_then(|v| v.as_f64()).map(|k| k / 1e3 * 2.0 / ratio);
    let core = clock_mhz.map(|c| format!("{c:.0}")).unwrap_or_else(|| base_clocks[0].to_string());
    let dram = dram_mhz.map(|d| format!("{d:.0}")).unwrap_or_else(|| base_clocks[3].to_string());
    put(
        "-gpgpu_clock_domains",
        format!("{core}:{}:{}:{dram}", base_clocks[1], base_clocks[2]),
        format!(
            "core: {}; interconnect and L2: base {BASE} (not measured); DRAM: {}",
            if clock_mhz.is_some() { "measured target.clock_hz" } else { "base (no clock measured)" },
            if dram_mhz.is_some() {
                format!("driver memory_clock_khz_attribute x 2 / dram_data_command_freq_ratio {ratio}")
            } else {
                "base".into()
            }
        ),
    );
    // latencies in core cycles, the tuner's differences
    let cyc = |ns: f64| clock_mhz.map(|c| ns * c / 1e3);
    let l1 = f.num("l1.hit_latency_ns").and_then(cyc);
    let l2 = f.num("l2.hit_latency_ns").and_then(cyc);
    let dr = f.num("dram.latency_ns").and_then(cyc);
    if let Some(c) = l1 {
        put("-gpgpu_l1_latency", format!("{c:.0}"), format!("measured: l1.hit_latency_ns = {c:.1} cycles"));
    }
    if let (Some(a), Some(b)) = (l1, l2) {
        put(
            "-gpgpu_l2_rop_latency",
            format!("{:.0}", b - a),
            format!("measured: l2.hit_latency_ns - l1.hit_latency_ns = {b:.1} - {a:.1} cycles"),
        );
    }
    if let (Some(b), Some(d)) = (l2, dr) {
        put(
            "-dram_latency",
            format!("{:.0}", d - b),
            format!("measured: dram.latency_ns - l2.hit_latency_ns = {d:.1} - {b:.1} cycles"),
        );
    }
    // L1 geometry
    let (l1w, l1s, l1l) = (f.num("l1.ways"), f.num("l1.sets"), f.num("l1.line_bytes"));
    if let (Some(w), Some(s), Some(l)) = (l1w, l1s, l1l) {
        put(
            "-gpgpu_cache:dl1",
            format!("S:{s:.0}:{l:.0}:{w:.0},{}", cache_rest("-gpgpu_cache:dl1")),
            format!("measured: l1.sets, l1.line_bytes, l1.ways; policies, set function and MSHRs base {BASE} (GPGPU-Sim has no option for the measured XOR index masks)"),
        );
    }
    if let Some(c) = f.num("l1.capacity_bytes") {
        put(
            "-gpgpu_unified_l1d_size",
            format!("{:.0}", c / 1024.0),
            "measured: l1.capacity_bytes / 1024 (L1 with the smallest shared-memory carveout)".into(),
        );
    }
    // L2: slices = sub-partitions, channels, sets
    let subs: u64 = base::value("-gpgpu_n_sub_partition_per_mchannel").and_then(|v| v.parse().ok()).unwrap_or(2);
    let slices = f.num("l2.slices.count").map(|s| s as u64).filter(|s| s % subs == 0);
    let bus = det("memory_bus_width_bits_attribute").and_then(|v| v.as_u64());
    let n_mem = match (slices, bus) {
        (Some(s), b) => {
            let check = b
                .map(|b| format!("; the driver's {b}-bit bus / 128-bit HBM channels = {}", b / 128))
                .unwrap_or_default();
            put(
                "-gpgpu_n_mem",
                (s / subs).to_string(),
                format!("measured: l2.slices.count {s} / {subs} sub-partitions per channel (base){check}"),
            );
            Some(s / subs)
        }
        (None, Some(b)) if b >= 128 => {
            put(
                "-gpgpu_n_mem",
                (b / 128).to_string(),
                format!(
                    "driver: memory_bus_width_bits_attribute {b} / 128-bit HBM channels ({})",
                    f.why("l2.slices.count")
                ),
            );
            Some(b / 128)
        }
        _ => None,
    };
    let cap = det("l2_cache_bytes_attribute").and_then(|v| v.as_f64());
    let (w2, l2l) = (f.num("l2.ways"), f.num("l2.line_bytes"));
    if let (Some(n), Some(cap), Some(w), Some(l)) = (n_mem, cap, w2, l2l) {
        let per = cap / (n * subs) as f64 / (w * l);
        let sets = pow2_floor(per);
        let total = sets as f64 * w * l * (n * subs) as f64;
        put(
            "-gpgpu_cache:dl2",
            format!("S:{sets}:{l:.0}:{w:.0},{}", cache_rest("-gpgpu_cache:dl2")),
            format!(
                "measured l2.ways and l2.line_bytes; sets: the driver's {cap:.0} B over {} sub-partitions is {per:.1} sets, \
                 rounded down to a power of two (GPGPU-Sim masks set indices): {:.1} MiB modeled ({:.0} %); policies and MSHRs base {BASE}",
                n * subs,
                total / 1048576.0,
                100.0 * total / cap
            ),
        );
    }
    if f.num("l2.far_hit_latency_ns").is_some() {
        put(
            "-gpgpu_n_chiplet_partition",
            "2".into(),
            "derived: two L2 hit plateaus (l2.hit_latency_ns, l2.far_hit_latency_ns)".into(),
        );
    }
    // DRAM timing: base cycle counts scaled to the DRAM clock
    let base_dram: Option<f64> = base_clocks.get(3).and_then(|v| v.parse().ok());
    if let (Some(d), Some(b)) = (dram_mhz, base_dram) {
        let scaled: Vec<String> = base::value("-gpgpu_dram_timing_opt")
            .unwrap_or("")
            .split(':')
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) if !matches!(k, "nbk" | "nbkgrp" | "CCD") => {
                    let c: f64 = v.parse().unwrap_or(0.0);
                    format!("{k}={:.0}", (c * d / b).round())
                }
                _ => kv.to_string(),
            })
            .collect();
        put("-gpgpu_dram_timing_opt", scaled.join(":"), format!("derived: base {BASE} HBM3 timings scaled from its {b:.0} MHz DRAM clock to {d:.0} MHz (an approximation: the timings were not measured)"));
    }
    // write: base order, then the crossbar
    let slice_function_known =
        findings.get("l2.slices.function").is_some_and(|f| f.confidence != Confidence::Undetermined);
    let mut entries = Vec::new();
    for (o, v) in base::SM90_H200.iter().chain(base::XBAR) {
        let e = match set.remove(o) {
            Some((value, source)) if option_value_ok(&value) => Entry { option: o, value, source },
            Some((value, _)) => Entry {
                option: o,
                value: v.to_string(),
                source: format!(
                    "base {}: the value from the results file ({:?}) is not a usable option value",
                    if base::XBAR.iter().any(|(x, _)| x == o) { XBAR_BASE } else { BASE },
                    value.chars().take(40).collect::<String>()
                ),
            },
            None => {
                let why = if *o == "-gpgpu_memory_partition_indexing" && slice_function_known {
                    SLICE_FUNCTION_NOT_EXPRESSIBLE
                } else {
                    not_measured(o)
                };
                let b = if base::XBAR.iter().any(|(x, _)| x == o) { XBAR_BASE } else { BASE };
                Entry { option: o, value: v.to_string(), source: format!("base {b}: {why}") }
            }
        };
        entries.push(e);
    }
    let text = render(&entries, target, findings, source);
    Ok(Export { files: vec![("gpgpusim.config".into(), text)], entries })
}

/// Why the partition indexing keeps the base value when the slice function was measured.
const SLICE_FUNCTION_NOT_EXPRESSIBLE: &str = "the measured slice function (l2.slices.function; on the H200 a residue modulo 47 of XOR parities, docs/L2_SLICES.md) is not XOR-linear, and Accel-Sim's partition indexings (consecutive, XOR permutation, IPOLY, PAE, random) express no other";

/// Why an option keeps the base value.
fn not_measured(o: &str) -> &'static str {
    match o {
        "-gpgpu_memory_partition_indexing" => "the slice function was not measured as an XOR function (l2.slices.page_masks)",
        "-gpgpu_n_sub_partition_per_mchannel" => "not measured (ncu counts slices, not slices per channel)",
        "-network_mode" | "-icnt_in_buffer_limit" | "-icnt_out_buffer_limit" | "-icnt_subnets" | "-icnt_flit_size" | "-icnt_arbiter_algo" => {
            "the built-in crossbar, so no interconnect file is needed (the SM90_H200 islip file's node count would not match)"
        }
        o if o.starts_with("-ptx_opcode") || o.contains("_units") || o.contains("pipeline") => {
            "instruction latencies and units are not measured by memscope"
        }
        o if o.contains("dram") || o.contains("mem_") => "DRAM organisation not measured",
        _ => "not measured by memscope",
    }
}

/// Longest run of digits accepted in an option value (a 64-bit count has 20; a measured value
/// with more than 12 is no hardware's).
const MAX_VALUE_DIGITS: usize = 12;

/// Whether `value` is an option value GPGPU-Sim can read as memscope meant it: only letters,
/// digits and `:,._=-`, no non-finite number (`inf`, `NaN`), no run of more than
/// `MAX_VALUE_DIGITS` digits, at most 200 characters.
fn option_value_ok(value: &str) -> bool {
    let mut run = 0;
    for c in value.chars() {
        if !(c.is_ascii_alphanumeric() || ":,._=-".contains(c)) {
            return false;
        }
        run = if c.is_ascii_digit() { run + 1 } else { 0 };
        if run > MAX_VALUE_DIGITS {
            return false;
        }
    }
    !value.is_empty()
        && value.len() <= 200
        && !value.split([':', ',', '=']).any(|p| {
            let p = p.trim_start_matches('-').to_ascii_lowercase();
            p == "inf" || p == "nan" || p == "infinity"
        })
}

/// Text from the results file for a `#` comment of the config: control characters (a newline
/// would start a live option line) and bidirectional overrides written as visible `\u{..}`
/// escapes, `#` dropped.
pub fn config_comment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            out.push_str(&c.escape_unicode().to_string());
        } else if c != '#' {
            out.push(c);
        }
    }
    out
}

fn render(entries: &[Entry], t: &TargetInfo, findings: &BTreeMap<String, Finding>, source: &str) -> String {
    let measured = entries.iter().filter(|e| !e.source.starts_with("base ")).count();
    let mut s = String::new();
    s.push_str("# GPGPU-Sim / Accel-Sim configuration written by `memscope export accel-sim`\n");
    s.push_str(&format!(
        "# from {}: {} ({}), {} findings\n",
        config_comment(source),
        config_comment(&t.name),
        config_comment(&t.id),
        findings.len()
    ));
    s.push_str(&format!(
        "# {measured} of {} options from measurement or the driver; every other value is the public {BASE}\n",
        entries.len()
    ));
    s.push_str(
        "# tested configuration (accel-sim/gpgpu-sim_distribution configs/tested-cfgs/SM90_H200, commit 01f6fc4),\n",
    );
    s.push_str("# the crossbar lines SM86_RTX3070's; each line's comment says which. Not written: trace.config\n");
    s.push_str("# (Accel-Sim's instruction latencies, not measured: take the base's) and power-model files.\n");
    let width = entries.iter().map(|e| e.option.len() + e.value.len() + 1).max().unwrap_or(0).min(60);
    for e in entries {
        let line = format!("{} {}", e.option, e.value);
        s.push_str(&format!("{line:<width$}  # {}\n", config_comment(&e.source)));
    }
    s
}
