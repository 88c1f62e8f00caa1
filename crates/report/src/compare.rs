//! `memscope compare A B`: every finding the two results files share, both values and the ratio
//! B/A, as a terminal table and as a self-contained HTML page (the table plus each shared series
//! of A and B overlaid on one plot). Findings present in only one file are listed after. The
//! header names both targets, a warning says when A and B are different devices, and a finding
//! whose values moved beyond their spread (docs/READING.md "Compare") is marked.

use crate::svg::{self, esc, Axis, Line, Plot, Style};
use crate::{table, units};
use memscope_results::Results;
use std::fmt::Write;

/// One shared finding.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: String,
    pub a: String,
    pub b: String,
    /// B / A for numbers in the same unit.
    pub ratio: Option<f64>,
    pub same: bool,
    /// The two values differ by more than their spread allows: more than 3 MADs (the larger of
    /// the two) when a spread is recorded, more than 5 % when neither has one.
    pub moved: bool,
}

/// Whether B moved from A beyond their spread (see `Row::moved`).
fn moved(fa: &memscope_core::Finding, fb: &memscope_core::Finding) -> bool {
    let (Some(x), Some(y)) = (fa.as_f64(), fb.as_f64()) else { return false };
    if fa.unit != fb.unit {
        return false;
    }
    let mad = fa.spread.iter().chain(fb.spread.iter()).map(|s| s.mad).reduce(f64::max);
    match mad {
        Some(m) => (y - x).abs() > 3.0 * m && (y - x).abs() > 1e-9 * x.abs().max(y.abs()),
        None => x != 0.0 && ((y - x) / x).abs() > 0.05,
    }
}

/// The two targets by name and id ("NVIDIA H200 (cuda:0)").
fn target_name(r: &Results) -> String {
    format!("{} ({})", r.target.name, r.target.id)
}

/// A warning when A and B are not the same kind of device (their differences are then the
/// devices', not run-to-run noise).
pub fn device_warning(a: &Results, b: &Results) -> Option<String> {
    (a.target.name != b.target.name || a.target.kind != b.target.kind).then(|| {
        format!(
            "A and B are different devices ({} and {}): their differences include the devices', not only run-to-run noise",
            target_name(a),
            target_name(b)
        )
    })
}

/// The shared findings, and the keys only in A and only in B.
pub fn rows(a: &Results, b: &Results) -> (Vec<Row>, Vec<String>, Vec<String>) {
    let mut shared = vec![];
    let mut only_a = vec![];
    for (k, fa) in &a.findings {
        match b.findings.get(k) {
            Some(fb) => {
                let ratio = match (fa.as_f64(), fb.as_f64()) {
                    (Some(x), Some(y)) if fa.unit == fb.unit && x != 0.0 => Some(y / x),
                    _ => None,
                };
                shared.push(Row {
                    key: k.clone(),
                    a: table::value_text(fa),
                    b: table::value_text(fb),
                    ratio,
                    same: fa.value == fb.value && fa.unit == fb.unit,
                    moved: moved(fa, fb),
                });
            }
            None => only_a.push(k.clone()),
        }
    }
    let only_b = b.findings.keys().filter(|k| !a.findings.contains_key(*k)).cloned().collect();
    (shared, only_a, only_b)
}

fn ratio_text(r: &Row) -> String {
    match r.ratio {
        Some(x) => format!("{}×", units::sig(x, 3)),
        None if r.same => "same".into(),
        None => "differs".into(),
    }
}

/// The comparison as a terminal table (control characters from the files escaped).
pub fn text(a: &Results, b: &Results) -> String {
    let (shared, only_a, only_b) = rows(a, b);
    let mut out = format!("memscope compare: {} vs {}\n", target_name(a), target_name(b));
    out.push_str(&format!("A: {}\nB: {}\n", table::provenance_line(a), table::provenance_line(b)));
    if let Some(w) = device_warning(a, b) {
        out.push_str(&format!("warning: {w}\n"));
    }
    let n_moved = shared.iter().filter(|r| r.moved).count();
    out.push_str(&format!(
        "{n_moved} of {} shared findings moved beyond their spread (marked *; see docs/READING.md)\n\n",
        shared.len()
    ));
    out.push_str(&format!("  {:<34} {:>22} {:>22} {:>10}\n", "finding", "A", "B", "B/A"));
    for r in &shared {
        let mark = if r.moved { "*" } else { " " };
        out.push_str(&format!("{mark} {:<34} {:>22} {:>22} {:>10}\n", r.key, r.a, r.b, ratio_text(r)));
    }
    if shared.is_empty() {
        out.push_str("(no finding in common)\n");
    }
    if !only_a.is_empty() {
        out.push_str(&format!("\nonly in A: {}\n", only_a.join(", ")));
    }
    if !only_b.is_empty() {
        out.push_str(&format!("only in B: {}\n", only_b.join(", ")));
    }
    crate::hygiene::terminal(&out)
}

/// The comparison as a self-contained HTML page.
pub fn html(a: &Results, b: &Results) -> String {
    let (shared, only_a, only_b) = rows(a, b);
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>memscope compare: {} vs {}</title><style>{}tr.moved td{{background:#fff3cd}}</style></head><body><main>",
        esc(&a.target.name),
        esc(&b.target.name),
        crate::html::CSS
    );
    let _ = write!(
        h,
        "<h1>memscope compare: {} vs {}</h1><p class=\"sub\"><b>A</b>: {}<br><b>B</b>: {}</p>",
        esc(&target_name(a)),
        esc(&target_name(b)),
        esc(&table::provenance_line(a)),
        esc(&table::provenance_line(b))
    );
    if let Some(w) = device_warning(a, b) {
        let _ = write!(h, "<p class=\"warn\" id=\"device-warning\">Warning: {}</p>", esc(&w));
    }
    let n_moved = shared.iter().filter(|r| r.moved).count();
    let _ = write!(
        h,
        "<h2>Shared findings</h2><p class=\"note\">{n_moved} of {} moved beyond their spread (highlighted): more than 3 MADs apart, or more than 5 % where no spread was recorded.</p><div class=\"scroll\"><table class=\"t\" id=\"compare\"><tr><th>finding</th><th>A</th><th>B</th><th>B / A</th></tr>",
        shared.len()
    );
    for r in &shared {
        // Numbers align right; long text (mask lists) wraps.
        let c = if r.ratio.is_some() { "num" } else { "txt" };
        let _ = write!(
            h,
            "<tr{}><td><code>{}</code></td><td class=\"{c}\">{}</td><td class=\"{c}\">{}</td><td class=\"num\">{}</td></tr>",
            if r.moved { " class=\"moved\"" } else { "" },
            crate::html::breakable_key(&r.key),
            esc(&r.a).replace('_', "_<wbr>"),
            esc(&r.b).replace('_', "_<wbr>"),
            esc(&ratio_text(r))
        );
    }
    h.push_str("</table></div>");
    for (label, keys) in [("Only in A", &only_a), ("Only in B", &only_b)] {
        if !keys.is_empty() {
            let _ = write!(h, "<p><b>{label}</b>: <code>{}</code></p>", esc(&keys.join(", ")));
        }
    }
    let mut figs = vec![];
    for (k, sa) in &a.series {
        let Some(sb) = b.series.get(k) else { continue };
        if sa.x_unit != sb.x_unit || sa.y_unit != sb.y_unit {
            continue;
        }
        // The report's axis rules: log where the values span decades (sizes, L1-to-DRAM latency).
        let logx = crate::html::wants_log(sa.x.iter().chain(&sb.x).copied(), &sa.x_unit);
        let logy = crate::html::wants_log(sa.y.iter().chain(&sb.y).copied(), &sa.y_unit);
        let mut p = Plot::new(
            &format!("cmp-{}", figs.len()),
            &format!("{k}: {} versus {}", sa.y_name, sa.x_name),
            Axis { label: crate::html::axis_label(&sa.x_name, &sa.x_unit), unit: sa.x_unit.clone(), log: logx },
            Axis { label: crate::html::axis_label(&sa.y_name, &sa.y_unit), unit: sa.y_unit.clone(), log: logy },
        );
        for (i, (name, s)) in [("A", sa), ("B", sb)].into_iter().enumerate() {
            let pts = s.x.iter().zip(&s.y).map(|(x, y)| (*x, *y)).collect();
            p.lines.push(Line {
                name: name.into(),
                color: svg::PALETTE[i].into(),
                style: Style::LinePoints,
                points: pts,
                labels: vec![],
            });
        }
        figs.push(format!(
            "<figure data-series=\"{}\">{}<figcaption>{}</figcaption></figure>",
            esc(k),
            svg::render(&p),
            esc(&format!("{k}: {}", sa.description))
        ));
    }
    if !figs.is_empty() {
        let _ = write!(h, "<h2>Shared series</h2><div class=\"plots\">{}</div>", figs.join(""));
    }
    h.push_str("</main><script>document.body.dataset.rendered='ok';document.body.dataset.plots=document.querySelectorAll('svg.plot').length;</script></body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_of_shared_findings() {
        let a = memscope_results::sample::results();
        let mut b = memscope_results::sample::results();
        b.findings.get_mut("l1.hit_latency_ns").unwrap().value = serde_json::json!(30.8);
        b.findings.remove("cpu.l1d.capacity_bytes");
        let (rows, only_a, only_b) = rows(&a, &b);
        let l1 = rows.iter().find(|r| r.key == "l1.hit_latency_ns").unwrap();
        assert_eq!(l1.ratio, Some(2.0));
        assert_eq!(only_a, ["cpu.l1d.capacity_bytes"]);
        assert!(only_b.is_empty());
        let t = text(&a, &b);
        assert!(t.contains("2×"), "{t}");
        assert!(html(&a, &b).contains("id=\"compare\""));
    }

    #[test]
    fn header_names_both_targets_and_warns_on_different_devices() {
        let a = memscope_results::sample::results();
        let mut b = memscope_results::sample::results();
        assert!(device_warning(&a, &b).is_none());
        assert!(!text(&a, &b).contains("warning:"));
        b.target.name = "Another GPU".into();
        b.target.id = "cuda:1".into();
        let t = text(&a, &b);
        assert!(
            t.starts_with(&format!("memscope compare: {} ({}) vs Another GPU (cuda:1)", a.target.name, a.target.id)),
            "{t}"
        );
        assert!(t.contains("warning: A and B are different devices"), "{t}");
        let h = html(&a, &b);
        assert!(h.contains("id=\"device-warning\"") && h.contains("Another GPU (cuda:1)"), "header or warning missing");
    }

    #[test]
    fn a_finding_that_moved_beyond_its_spread_is_marked() {
        let a = memscope_results::sample::results();
        let mut b = memscope_results::sample::results();
        let f = b.findings.get_mut("l1.hit_latency_ns").unwrap();
        let x = f.as_f64().unwrap();
        let mad = f.spread.as_ref().map(|s| s.mad).unwrap_or(0.0);
        // within 3 MADs: not marked; well beyond: marked
        f.value = serde_json::json!(x + 2.0 * mad);
        let (r, _, _) = rows(&a, &b);
        assert!(mad > 0.0, "the sample's latency has a spread");
        assert!(!r.iter().find(|r| r.key == "l1.hit_latency_ns").unwrap().moved, "2 MADs is within the spread");
        b.findings.get_mut("l1.hit_latency_ns").unwrap().value = serde_json::json!(x * 2.0 + 10.0 * mad);
        let (r, _, _) = rows(&a, &b);
        assert!(r.iter().find(|r| r.key == "l1.hit_latency_ns").unwrap().moved);
        assert!(
            r.iter().filter(|r| r.key != "l1.hit_latency_ns").all(|r| !r.moved),
            "identical findings are never marked"
        );
        let t = text(&a, &b);
        assert!(t.contains("1 of") && t.contains("* l1.hit_latency_ns"), "{t}");
        assert!(html(&a, &b).contains("<tr class=\"moved\">"));
    }
}
