//! `memscope compare A B`: every finding the two results files share, both values and the ratio
//! B/A, as a terminal table and as a self-contained HTML page (the table plus each shared series
//! of A and B overlaid on one plot). Findings present in only one file are listed after.

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
    let mut out = format!("A: {}\nB: {}\n\n", table::provenance_line(a), table::provenance_line(b));
    out.push_str(&format!("{:<34} {:>22} {:>22} {:>10}\n", "finding", "A", "B", "B/A"));
    for r in &shared {
        out.push_str(&format!("{:<34} {:>22} {:>22} {:>10}\n", r.key, r.a, r.b, ratio_text(r)));
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
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>memscope compare: {} vs {}</title><style>{}</style></head><body><main>",
        esc(&a.target.name),
        esc(&b.target.name),
        crate::html::CSS
    );
    let _ = write!(
        h,
        "<h1>memscope compare</h1><p class=\"sub\"><b>A</b>: {}<br><b>B</b>: {}</p>",
        esc(&table::provenance_line(a)),
        esc(&table::provenance_line(b))
    );
    h.push_str("<h2>Shared findings</h2><table class=\"t\" id=\"compare\"><tr><th>finding</th><th>A</th><th>B</th><th>B / A</th></tr>");
    for r in &shared {
        // Numbers align right; long text (mask lists) wraps.
        let c = if r.ratio.is_some() { "num" } else { "txt" };
        let _ = write!(
            h,
            "<tr><td><code>{}</code></td><td class=\"{c}\">{}</td><td class=\"{c}\">{}</td><td class=\"num\">{}</td></tr>",
            esc(&r.key),
            esc(&r.a),
            esc(&r.b),
            esc(&ratio_text(r))
        );
    }
    h.push_str("</table>");
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
}
