//! The terminal summary of a results file, laid out like a device datasheet: findings grouped by
//! level (L1, TLB, L2, DRAM, bandwidth, launch, peak, store, fence, CPU), each value with a
//! human-readable unit, its cycles, spread and confidence; then waived and failed probes with
//! their reasons. The grouping is shared by the Markdown and HTML writers.

use crate::results::{ProbeStatus, Results};
use crate::units;
use memscope_core::{Confidence, Finding};
use serde_json::Value;

/// Datasheet sections in order: (key prefix, title). Anything else lands in "Other".
pub const SECTIONS: &[(&str, &str)] = &[
    ("l1", "L1 cache"),
    ("tlb", "TLB"),
    ("l2", "L2 cache"),
    ("dram", "DRAM"),
    ("bw", "Bandwidth"),
    ("launch", "Launch"),
    ("peak", "Peak arithmetic"),
    ("store", "Store path"),
    ("fence", "Fences"),
    ("cpu", "CPU"),
];

/// Format a finding value for a table cell (kept for callers of the first version).
pub fn format_value(v: &Value) -> String {
    units::value(v, "")
}

/// Findings grouped into datasheet sections: (title, [(key, finding)]), sections in
/// `SECTIONS` order, then "Other"; empty sections left out.
pub fn sections(results: &Results) -> Vec<(String, Vec<(&str, &Finding)>)> {
    let mut out: Vec<(String, Vec<(&str, &Finding)>)> =
        SECTIONS.iter().map(|(_, t)| (t.to_string(), Vec::new())).collect();
    let mut other = Vec::new();
    for (k, f) in &results.findings {
        let prefix = k.split('.').next().unwrap_or("");
        match SECTIONS.iter().position(|(p, _)| *p == prefix) {
            Some(i) => out[i].1.push((k.as_str(), f)),
            None => other.push((k.as_str(), f)),
        }
    }
    out.push(("Other".into(), other));
    out.retain(|(_, v)| !v.is_empty());
    out
}

/// A readable quantity name from a key: section prefix and unit suffix dropped, underscores to
/// spaces ("l1.hit_latency_ns" -> "hit latency", "cpu.l1d.capacity_bytes" -> "l1d capacity").
pub fn quantity(key: &str) -> String {
    let mut parts: Vec<&str> = key.split('.').collect();
    if parts.len() > 1 && SECTIONS.iter().any(|(p, _)| *p == parts[0]) {
        parts.remove(0);
    }
    let mut name = parts.join(" ");
    for suffix in ["_ns", "_bytes_per_s", "_flops_per_s", "_bytes", "_s", "_cycles", "_hz"] {
        if let Some(s) = name.strip_suffix(suffix) {
            name = s.to_string();
            break;
        }
    }
    name.replace('_', " ")
}

/// The value of a finding, human-readable with unit.
pub fn value_text(f: &Finding) -> String {
    units::value(&f.value, &f.unit)
}

/// The spread as "± MAD" in the finding's unit (empty when not measured).
pub fn spread_text(f: &Finding) -> String {
    match &f.spread {
        Some(s) if f.value.is_number() => format!("± {} (n={})", units::number(s.mad, &f.unit), s.n),
        _ => String::new(),
    }
}

/// Cycles, when recorded.
pub fn cycles_text(f: &Finding) -> String {
    f.cycles.map(|c| format!("{} cyc", units::sig(c, 4))).unwrap_or_default()
}

/// Confidence as a lowercase word.
pub fn confidence_text(c: Confidence) -> &'static str {
    match c {
        Confidence::High => "high",
        Confidence::Medium => "medium",
        Confidence::Low => "low",
        Confidence::Undetermined => "undetermined",
    }
}

/// One line of provenance: device, target id, clock, date, tool version and commit.
pub fn provenance_line(results: &Results) -> String {
    let t = &results.target;
    let mut parts = vec![format!("{} ({})", t.name, t.id)];
    if let Some(hz) = t.clock_hz {
        parts.push(format!("clock {}", units::si(hz, "Hz")));
    }
    if let Some(d) = t.details.get("driver").and_then(Value::as_str) {
        parts.push(format!("driver {d}"));
    }
    if let Some(d) = results.environment.get("started_at").and_then(Value::as_str) {
        parts.push(d.to_string());
    }
    let mut tool = format!("{} {}", results.tool.name, results.tool.version);
    if let Some(c) = &results.tool.git_commit {
        tool.push_str(&format!(" @{}", &c[..c.len().min(10)]));
    }
    parts.push(tool);
    parts.join(" · ")
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n.saturating_sub(1)).collect();
        format!("{t}…")
    }
}

/// The summary table as text.
pub fn summary(results: &Results) -> String {
    let mut out = String::new();
    out.push_str(&format!("memscope datasheet: {}\n", provenance_line(results)));
    if results.targets.len() > 1 {
        let ids: Vec<&str> = results.targets.iter().map(|t| t.id.as_str()).collect();
        out.push_str(&format!("targets: {}\n", ids.join(", ")));
    }
    if let Some(c) = crate::clocks::clocks_line(results) {
        out.push_str(&format!("{c}\n"));
    }
    let header = format!("  {:<30} {:>22} {:>12} {:>22}  {}\n", "", "value", "cycles", "spread (MAD)", "confidence");
    for (title, rows) in sections(results) {
        out.push('\n');
        out.push_str(&format!("{title}\n"));
        out.push_str(&header);
        for (k, f) in rows {
            let conf = confidence_text(f.confidence);
            out.push_str(&format!(
                "  {:<30} {:>22} {:>12} {:>22}  {}\n",
                clip(&quantity(k), 30),
                clip(&value_text(f), 22),
                cycles_text(f),
                spread_text(f),
                conf
            ));
            if f.confidence == Confidence::Undetermined {
                if let Some(n) = &f.note {
                    out.push_str(&format!("  {:<30} why: {}\n", "", clip(n, 80)));
                }
            }
        }
    }
    // Probes not run, one line per (status, target, reason) listing the probe keys.
    let mut grouped: std::collections::BTreeMap<(bool, &str, &str), Vec<&str>> = Default::default();
    for (k, p) in results.probes.iter().filter(|(_, p)| p.status != ProbeStatus::Ok) {
        let probe = k.split('@').next().unwrap_or(k);
        let reason = p.reason.as_deref().unwrap_or("");
        grouped.entry((p.status == ProbeStatus::Waived, p.target.as_str(), reason)).or_default().push(probe);
    }
    if !grouped.is_empty() {
        out.push_str("\nProbes not run\n");
        for ((waived, target, reason), keys) in grouped {
            let what = if waived { "waived" } else { "FAILED" };
            out.push_str(&format!("  {what:<7} on {target}: {} — {reason}\n", keys.join(", ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample;

    #[test]
    fn summary_groups_by_level_with_units() {
        let r = sample::results();
        let s = summary(&r);
        let l1 = s.find("L1 cache").expect("L1 section");
        let l2 = s.find("L2 cache").expect("L2 section");
        let dram = s.find("\nDRAM").expect("DRAM section");
        assert!(l1 < l2 && l2 < dram, "sections out of order:\n{s}");
        assert!(s.contains("15.4 ns"), "{s}");
        assert!(s.contains("128 KiB"), "{s}");
        assert!(s.contains("waived"), "{s}");
        assert_eq!(quantity("l1.hit_latency_ns"), "hit latency");
        assert_eq!(quantity("cpu.l1d.capacity_bytes"), "l1d capacity");
    }
}
