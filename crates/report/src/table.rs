//! The terminal summary of a results file, laid out like a device datasheet: findings grouped by
//! level (L1, shared memory, TLB, constant cache, texture / read-only, L2, DRAM, atomics,
//! bandwidth, launch, peak, store, fence, CPU), each value with a human-readable unit, its
//! cycles, spread and confidence; then waived and failed probes with
//! their reasons. The grouping is shared by the Markdown and HTML writers.

use crate::units;
use memscope_core::{Confidence, Finding};
use memscope_results::{ProbeStatus, Results};
use serde_json::Value;

/// Datasheet sections in order: (key prefix, title). Bookkeeping (see `is_bookkeeping`) has its
/// own last section; anything else lands in "Other".
pub const SECTIONS: &[(&str, &str)] = &[
    ("l1", "L1 cache"),
    ("smem", "Shared memory"),
    ("tlb", "TLB"),
    ("const", "Constant cache"),
    ("tex", "Texture / read-only"),
    ("l2", "L2 cache"),
    ("dram", "DRAM"),
    ("atomics", "Atomics"),
    ("bw", "Bandwidth"),
    ("launch", "Launch"),
    ("peak", "Peak arithmetic"),
    ("store", "Store path"),
    ("fence", "Fences"),
    ("coalesce", "Coalescing"),
    ("link", "Host link"),
    ("latency", "Chase instrument"),
    ("cpu", "CPU"),
];

/// The title of the section of probe bookkeeping: how many experiments a probe ran, not a
/// property of the hardware.
pub const BOOKKEEPING: &str = "Experiment counts (how much the probes ran, not hardware properties)";

/// Keys that count a probe's own work (eviction-set chases, hops, pool sizes).
pub fn is_bookkeeping(key: &str) -> bool {
    key.starts_with("evset.") || key.rsplit('.').next().is_some_and(|last| last.starts_with("evset_"))
}

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
    let mut bookkeeping = Vec::new();
    for (k, f) in &results.findings {
        let prefix = k.split('.').next().unwrap_or("");
        if is_bookkeeping(k) {
            bookkeeping.push((k.as_str(), f));
            continue;
        }
        match SECTIONS.iter().position(|(p, _)| *p == prefix) {
            Some(i) => out[i].1.push((k.as_str(), f)),
            None => other.push((k.as_str(), f)),
        }
    }
    out.push(("Other".into(), other));
    out.push((BOOKKEEPING.into(), bookkeeping));
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
    // (the unit is in the value column: "2.5 Gop/s" beside "global distinct ops")
    for suffix in ["_ns", "_bytes_per_s", "_flops_per_s", "_per_s", "_bytes", "_s", "_cycles", "_hz"] {
        if let Some(s) = name.strip_suffix(suffix) {
            name = s.to_string();
            break;
        }
    }
    // The constant cache's second level reads as mt4g names it ("l1_5" -> "l1.5").
    name.replace("l1_5", "l1.5").replace('_', " ")
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

/// The second opinion of a finding in one line: the other instrument's value, how far apart and
/// whether the two agree (None without one).
pub fn check_text(f: &Finding) -> Option<String> {
    let c = f.check.as_ref()?;
    let apart = units::sig(100.0 * c.rel_diff, 3);
    let tolerance = units::sig(100.0 * c.tolerance, 2);
    let verdict = if c.agrees {
        format!("agrees (within the {tolerance} % tolerance)")
    } else {
        format!(
            "DISAGREES: the two instruments are more than the {tolerance} % tolerance apart, so the value is in doubt \
             and its confidence was lowered one step (docs/READING.md)"
        )
    };
    Some(format!("{} by {}: {apart} % apart, {verdict}", units::number(c.value, &f.unit), c.method))
}

/// Every warning of the run (probe warnings, such as a cache size that disagrees with the OS's,
/// or a clock that moved during a probe), as (probe@target, text), in key order.
pub fn warnings(results: &Results) -> Vec<(&str, &str)> {
    results.probes.iter().flat_map(|(k, p)| p.warnings.iter().map(move |w| (k.as_str(), w.as_str()))).collect()
}

/// Where the datasheet's columns are explained, for footers and `--help`.
pub const READING_DOC: &str = "docs/READING.md (value, cycles, spread (MAD), check:, confidence, warnings)";

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

/// Every target of the file by name, for titles: "NVIDIA H200" or, with the CPU in the same file,
/// "NVIDIA H200 (cuda:0) and Intel Xeon (cpu)".
pub fn targets_title(results: &Results) -> String {
    let mut all: Vec<&memscope_core::TargetInfo> = vec![&results.target];
    for t in &results.targets {
        if !all.iter().any(|a| a.id == t.id) {
            all.push(t);
        }
    }
    if all.len() == 1 {
        return all[0].name.clone();
    }
    let names: Vec<String> = all.iter().map(|t| format!("{} ({})", t.name, t.id)).collect();
    match names.split_last() {
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
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
        tool.push_str(&format!(" @{}", c.chars().take(10).collect::<String>()));
    }
    parts.push(tool);
    parts.join(" · ")
}

/// A value for the terminal: scalars and lists in full; objects (and lists of objects) by their
/// scalar fields, with nested lists and objects as their sizes (the full value is in the results
/// file, the Markdown and the HTML report).
pub fn terminal_value(f: &Finding) -> String {
    fn brief(v: &Value) -> String {
        match v {
            Value::Array(a) if a.len() == 1 => "1 entry".into(),
            Value::Array(a) => format!("{} entries", a.len()),
            Value::Object(o) => format!("{} fields", o.len()),
            other => units::value(other, ""),
        }
    }
    fn fields(o: &serde_json::Map<String, Value>) -> String {
        let shown = o.iter().map(|(k, v)| format!("{}: {}", k.replace('_', " "), brief(v))).collect::<Vec<_>>();
        let nested = o.values().any(|v| v.is_array() || v.is_object());
        format!("{}{}", shown.join("; "), if nested { " (in full in the HTML report)" } else { "" })
    }
    match &f.value {
        Value::Object(o) => fields(o),
        Value::Array(a) if a.iter().any(Value::is_object) => a
            .iter()
            .map(|x| match x {
                Value::Object(o) => fields(o),
                other => brief(other),
            })
            .collect::<Vec<_>>()
            .join("; "),
        _ => value_text(f),
    }
}

/// Lines of at most `width` characters, broken at spaces or after commas (never cut).
fn wrap_text(s: &str, width: usize) -> Vec<String> {
    let mut lines = vec![];
    let mut cur = String::new();
    for word in s.split(' ') {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// The summary table as text, safe to print (control characters escaped).
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
        let counts = title == BOOKKEEPING;
        for (k, f) in rows {
            // Bookkeeping counts are exact tallies: a confidence says nothing there.
            let conf = if counts { "" } else { confidence_text(f.confidence) };
            // (counts keep their whole key: l2.evset_chases and evset.chases are different tallies)
            let name = if counts { k.replace('_', " ") } else { quantity(k) };
            let value = terminal_value(f);
            let (name_cell, long_name) = if name.chars().count() > 30 { ("", true) } else { (name.as_str(), false) };
            if long_name {
                out.push_str(&format!("  {name}\n"));
            }
            let fits = value.chars().count() <= 22;
            out.push_str(&format!(
                "  {:<30} {:>22} {:>12} {:>22}  {}\n",
                name_cell,
                if fits { value.as_str() } else { "" },
                cycles_text(f),
                spread_text(f),
                conf
            ));
            if !fits {
                for line in wrap_text(&value, 86) {
                    out.push_str(&format!("  {:<4} {line}\n", ""));
                }
            }
            let disagrees = f.check.as_ref().is_some_and(|c| !c.agrees);
            if f.confidence == Confidence::Undetermined || disagrees {
                if let Some(n) = &f.note {
                    for (i, line) in wrap_text(n, 82).iter().enumerate() {
                        out.push_str(&format!("  {:<4} {} {line}\n", "", if i == 0 { "why:" } else { "    " }));
                    }
                }
            }
            if let Some(c) = check_text(f) {
                for (i, line) in wrap_text(&c, 80).iter().enumerate() {
                    out.push_str(&format!("  {:<4} {} {line}\n", "", if i == 0 { "check:" } else { "      " }));
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
    let warned = warnings(results);
    if !warned.is_empty() {
        out.push_str("\nWarnings\n");
        for (probe, text) in warned {
            for (i, line) in wrap_text(&format!("{probe}: {text}"), 96).iter().enumerate() {
                out.push_str(&format!("  {} {line}\n", if i == 0 { "!" } else { " " }));
            }
        }
    }
    out.push_str(&format!("\nHow to read this datasheet: {READING_DOC}\n"));
    // (names, notes and methods come from the results file: no control character reaches the
    // terminal)
    crate::hygiene::terminal(&out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_results::sample;

    #[test]
    fn a_second_opinion_shows_under_its_finding() {
        let f = Finding::number(100.0, "ns", "chase", Confidence::High).with_check(110.0, "another SM", 0.03);
        let t = check_text(&f).unwrap();
        assert!(t.contains("another SM") && t.contains("10 % apart") && t.contains("DISAGREES"), "{t}");
        assert!(t.contains("more than the 3 % tolerance apart") && t.contains("docs/READING.md"), "{t}");
        let g = Finding::number(100.0, "ns", "chase", Confidence::High).with_check(101.0, "host clock", 0.03);
        assert!(check_text(&g).unwrap().contains("agrees"));
        assert!(check_text(&Finding::number(1.0, "ns", "m", Confidence::High)).is_none());
    }

    /// Every warning of the run and every disagreement, with its reason, reaches the terminal.
    #[test]
    fn warnings_and_disagreements_are_shown_with_their_reason() {
        let mut r = sample::results();
        let os = "measured 735 KiB, the OS reports 1 MiB: DISAGREES by more than 25 %";
        let rec = r.probes.values_mut().find(|p| p.status == ProbeStatus::Ok).expect("an ok probe");
        rec.warnings.push(format!("cpu.l2.capacity_bytes: {os}"));
        let mut f = r.findings["l1.hit_latency_ns"].clone().with_check(40.0, "host events", 0.03);
        f.note = Some("the host-event check is 160 % away".into());
        r.findings.insert("l1.hit_latency_ns".into(), f);
        let s = summary(&r);
        let joined: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(s.contains("\nWarnings\n") && joined.contains(os), "{s}");
        assert!(joined.contains("DISAGREES: the two instruments are more than the 3 % tolerance apart"), "{s}");
        assert!(joined.contains("the host-event check is 160 % away"), "the note of a disagreement is shown:\n{s}");
    }

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

    #[test]
    fn constant_and_texture_findings_have_their_sections() {
        let mut r = sample::results();
        let base = r.findings["l1.hit_latency_ns"].clone();
        r.findings.insert("const.l1.hit_latency_ns".into(), base.clone());
        r.findings.insert("tex.nc.hit_latency_ns".into(), base.clone());
        let mut list = base.clone();
        list.value = serde_json::json!(["read-only (ld.global.nc)", "texture"]);
        list.unit = String::new();
        r.findings.insert("l1.shared_with".into(), list);
        let s = summary(&r);
        let (l1, c, t, l2) = (
            s.find("L1 cache").unwrap(),
            s.find("Constant cache").expect("constant section"),
            s.find("Texture / read-only").expect("texture section"),
            s.find("L2 cache").unwrap(),
        );
        assert!(l1 < c && c < t && t < l2, "sections out of order:\n{s}");
        assert!(s.contains("texture") && s.contains("ld.global.nc"), "{s}");
        assert!(!s.contains("\nOther\n"), "{s}");
        assert_eq!(quantity("const.l1.hit_latency_ns"), "l1 hit latency");
        assert_eq!(quantity("const.l1_5.hit_latency_ns"), "l1.5 hit latency");
    }

    #[test]
    fn shared_memory_and_atomics_have_their_sections() {
        let mut r = sample::results();
        let f = |v: f64, unit: &str| Finding::number(v, unit, "m", Confidence::High);
        r.findings.insert("smem.load_latency_ns".into(), f(15.2, "ns").with_cycles(30.0));
        r.findings.insert("smem.banks".into(), Finding::integer(32, "banks", "m", Confidence::High));
        r.findings.insert("atomics.global_same_address_ops_per_s".into(), f(2.5e9, "ops/s"));
        let s = summary(&r);
        let (l1, sm, l2) = (s.find("L1 cache").unwrap(), s.find("Shared memory").unwrap(), s.find("L2 cache").unwrap());
        let (dram, at) = (s.find("\nDRAM").unwrap(), s.find("Atomics").unwrap());
        assert!(l1 < sm && sm < l2 && dram < at, "sections out of order:\n{s}");
        assert!(s.contains("32 banks") && s.contains("2.5 Gop/s") && s.contains("30 cyc"), "{s}");
        assert!(!s.contains("\nOther"), "{s}");
        assert_eq!(quantity("smem.load_latency_ns"), "load latency");
    }

    #[test]
    fn titles_name_every_target() {
        let mut r = sample::results();
        assert_eq!(targets_title(&r), r.target.name);
        let mut cpu = r.target.clone();
        cpu.id = "cpu".into();
        cpu.name = "Some CPU".into();
        r.targets = vec![r.target.clone(), cpu];
        let t = targets_title(&r);
        assert!(t.contains(&r.target.name) && t.ends_with("and Some CPU (cpu)"), "{t}");
        assert!(crate::markdown::to_string(&r).starts_with(&format!("# memscope: {t}\n")));
    }

    #[test]
    fn nothing_is_cut_and_bookkeeping_stands_apart() {
        let mut r = sample::results();
        let masks: Vec<String> = (0..9).map(|i| format!("0x{:x}", 0x201dffd00u64 >> i)).collect();
        let mut f = r.findings["l1.hit_latency_ns"].clone();
        f.value = serde_json::json!(masks);
        f.unit = String::new();
        r.findings.insert("l1.index_masks".into(), f.clone());
        let mut why = f.clone();
        why.value = Value::Null;
        why.confidence = Confidence::Undetermined;
        let reason = "capacity knee 28549248 bytes is not a whole number of 16-way sets of 128 bytes, so the set count is left undetermined rather than rounded";
        why.note = Some(reason.into());
        r.findings.insert("l2.sets".into(), why);
        let mut count = f.clone();
        count.value = serde_json::json!(417030);
        count.unit = "count".into();
        r.findings.insert("l2.evset_hops".into(), count);
        let s = summary(&r);
        assert!(!s.contains('…'), "something was cut:\n{s}");
        for m in &masks {
            assert!(s.contains(m.as_str()), "mask {m} missing:\n{s}");
        }
        let joined: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(joined.contains(reason), "reason not whole:\n{s}");
        let l2 = s.find("\nL2 cache").unwrap();
        let counts = s.find(BOOKKEEPING).expect("bookkeeping section");
        let hops = s.find("evset hops").unwrap();
        assert!(hops > counts && counts > l2, "evset hops belongs under the counts, not L2:\n{s}");
        assert!(!s.contains("\nOther\n"), "no Other section for known keys:\n{s}");
        assert!(s.contains("How to read this datasheet: docs/READING.md"), "{s}");
        // An estimate of 36918.4 sets prints like the 36,864 next to it, not as "36918".
        assert_eq!(units::value(&serde_json::json!(36918.4), "count"), "36,918");
        assert_eq!(units::value(&serde_json::json!(36864), "count"), "36,864");
    }
}
