//! The HTML report (docs/READING.md): one self-contained page (inline SVG, CSS and a few lines of script,
//! nothing fetched) with provenance, the discovered hierarchy as a diagram, every series as a plot
//! (latency versus footprint with knees and level lines, bandwidth versus size per pattern, the
//! stride sweep, histograms, anything else by its x/y names and units), the roofline of a model
//! run (seed 003) when one is given, every finding with spread, method and confidence, and the
//! probes that were waived or failed with their reasons.

use crate::svg::{self, esc, Axis, Line, Plot, Style};
use crate::table::{self, confidence_text};
use crate::{diagram, roofline, units};
use memscope_core::Series;
use memscope_results::{ProbeStatus, Results};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The report's style sheet.
pub const CSS: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
main{max-width:1340px;margin:0 auto;padding:18px 24px 60px}
h1{font-size:24px;margin:6px 0 2px}h2{font-size:19px;margin:30px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}
.sub{color:#555;margin:0 0 12px}.note{color:#555;font-size:13px}
table.t{border-collapse:collapse;font-size:13px;background:#fff}
table.t th,table.t td{border:1px solid #e0e0e0;padding:3px 8px;text-align:left;vertical-align:top}
table.t th{background:#f0f2f5;font-weight:600}
table#findings{width:100%;min-width:1000px;table-layout:fixed}table#findings td,table#findings th{overflow-wrap:break-word}table#findings td.num{white-space:normal}
table#findings td.wide,table#findings td.txt{min-width:0;max-width:none}table#findings td.id{overflow-wrap:anywhere}
table#findings col.k{width:16%}table#findings col.v{width:11%}table#findings col.c{width:7%}table#findings col.s{width:12%}
table#findings col.m{width:19%}table#findings col.f{width:11%}table#findings col.n{width:16%}table#findings col.g{width:8%}
.warn{color:#b3541e}table.t td.wide{min-width:220px}table.t td.txt{min-width:180px;max-width:300px;overflow-wrap:break-word}table.t td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.t tr.sec td{background:#eef3f8;font-weight:600}
.c-high{color:#11772d}.c-medium{color:#8a6d00}.c-low{color:#b3541e}.c-undetermined{color:#888;font-style:italic}
.plots{display:flex;flex-wrap:wrap;gap:14px}.plots figure{margin:0;background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:6px;max-width:100%;box-sizing:border-box}
svg.plot{max-width:100%;height:auto}.scroll{overflow-x:auto;max-width:100%}p code,li code{overflow-wrap:anywhere}
@media (max-width:700px){main{padding:10px 10px 40px}h1{font-size:20px}}
figcaption{font-size:12px;color:#555;max-width:584px;padding:0 4px}
svg.plot text{font-size:11px;fill:#333}svg.plot .pt{font-size:13px;font-weight:600;text-anchor:middle}
svg.plot .tx{text-anchor:middle}svg.plot .ty{text-anchor:end}svg.plot .xl,svg.plot .yl{text-anchor:middle;font-size:12px}
svg.plot .grid{stroke:#eee}svg.plot .frame{fill:none;stroke:#999}
svg.plot .vmark{stroke:#c0392b;stroke-dasharray:4 3;stroke-width:1.5}svg.plot .ml{fill:#c0392b;font-size:10px}
svg.plot .hmark{stroke:#7f8c8d;stroke-dasharray:2 3}svg.plot .hl{fill:#555;font-size:10px}
svg.diagram{background:#fff;border:1px solid #e3e3e3;border-radius:6px;max-width:none;height:auto}
svg.diagram .lvl rect{fill:#eaf2fb;stroke:#0072B2}svg.diagram .tlb rect{fill:#fdf1e6;stroke:#D55E00}
svg.diagram .dram rect{fill:#e9f7f0;stroke:#009E73}svg.diagram .src{fill:#f3f3f3;stroke:#777}
svg.diagram .bt{font-weight:700;font-size:13px;text-anchor:middle}svg.diagram .bl{font-size:11.5px;text-anchor:middle}
svg.diagram .lane-t{font-weight:700;font-size:12px}svg.diagram .arrow{stroke:#555;stroke-width:1.5}
.dot{display:inline-block;width:9px;height:9px;border-radius:50%;margin-right:5px}
.prov{max-width:900px}.prov code{overflow-wrap:anywhere}.prov td:first-child{color:#555;white-space:nowrap}code{font-size:12px}
table.peer,table.links{border-collapse:collapse;font-size:13px;background:#fff;margin:8px 0}
table.peer th,table.peer td,table.links th,table.links td{border:1px solid #e0e0e0;padding:3px 8px;text-align:right}
table.peer caption{text-align:left;font-weight:600;padding:4px 0}table.peer td.outlier{background:#fde3d9;color:#b3541e;font-weight:600}
table.peer td.na{color:#999}table.links td:first-child{text-align:left}
details pre{max-height:320px;overflow:auto;background:#f6f6f6;padding:6px;font-size:11px}summary{cursor:pointer;color:#0072B2}
"#;

/// A series with its key.
type Member<'a> = (&'a str, &'a Series);
/// Series sharing one plot, under their group name.
type Group<'a> = (String, Vec<Member<'a>>);

/// Group series into plots: same top-level key, same x quantity (a stride never shares an axis
/// with a footprint), same x and y units.
fn plot_groups(results: &Results) -> Vec<Group<'_>> {
    let mut groups: BTreeMap<(String, String, String, String), Vec<Member<'_>>> = BTreeMap::new();
    for (k, s) in &results.series {
        let top = k.split('.').next().unwrap_or(k).to_string();
        let hist = k.contains("hist");
        let gk = if hist { k.clone() } else { top };
        groups.entry((gk, s.x_name.clone(), s.x_unit.clone(), s.y_unit.clone())).or_default().push((k.as_str(), s));
    }
    let mut out: Vec<Group<'_>> = groups.into_iter().map(|((g, _, _, _), v)| (g, v)).collect();
    // Path order: latency first, then bandwidth, the CPU, DRAM, the rest.
    let rank = |g: &str| ["latency", "bw", "cpu", "dram"].iter().position(|p| g.starts_with(p)).unwrap_or(9);
    out.sort_by_key(|(g, _)| rank(g));
    out
}

pub(crate) fn wants_log(vals: impl Iterator<Item = f64>, unit: &str) -> bool {
    let v: Vec<f64> = vals.filter(|x| x.is_finite()).collect();
    if v.is_empty() || v.iter().any(|x| *x <= 0.0) {
        return false;
    }
    let (lo, hi) = v.iter().fold((f64::INFINITY, 0f64), |(a, b), x| (a.min(*x), b.max(*x)));
    let ratio = hi / lo;
    // Sizes span decades; latencies from L1 (~1 ns) to DRAM (~100 ns) need log y to show both.
    // Rates too: a cache-resident sweep runs 100x faster than one from DRAM, and a linear axis
    // flattens the slow one onto zero.
    (matches!(unit, "bytes" | "B") && ratio >= 16.0)
        || (matches!(unit, "ns" | "GB/s" | "bytes/s" | "B/s") && ratio >= 30.0)
        || ratio >= 1000.0
}

pub(crate) fn axis_label(name: &str, unit: &str) -> String {
    let u = match unit {
        "bytes/s" => "B/s",
        "flops/s" => "FLOP/s",
        "" => return name.to_string(),
        u => u,
    };
    format!("{name} [{u}]")
}

/// Findings that are level latencies in the same family as a series group (GPU or CPU).
fn level_lines(results: &Results, cpu: bool) -> Vec<(f64, String)> {
    results
        .findings
        .iter()
        .filter(|(k, f)| {
            f.unit == "ns"
                && k.starts_with("cpu.") == cpu
                && (k.ends_with("hit_latency_ns") || k.ends_with(".latency_ns"))
        })
        .filter_map(|(k, f)| {
            let level = k.rsplit_once('.').map(|p| p.0).unwrap_or(k).to_uppercase();
            f.as_f64().map(|v| (v, format!("{level} {}", units::number(v, "ns"))))
        })
        .collect()
}

const MAX_POINTS: usize = 2000;

/// The capacity finding a latency-versus-footprint series runs into: the L1 for the cached path,
/// the L2 for the path that bypasses L1.
fn capacity_for(series_key: &str) -> Option<&'static str> {
    match series_key {
        "latency.l1_cached" => Some(memscope_core::keys::L1_CAPACITY_BYTES),
        "latency.l1_bypass" => Some(memscope_core::keys::L2_CAPACITY_BYTES),
        _ => None,
    }
}

/// One figure per series group.
fn plots(results: &Results) -> Vec<String> {
    let mut out = vec![];
    for (i, (group, series)) in plot_groups(results).iter().enumerate() {
        let first = series[0].1;
        let hist = group.contains("hist");
        let x_log = !hist && wants_log(series.iter().flat_map(|(_, s)| s.x.iter().copied()), &first.x_unit);
        // Histograms: log counts when the tail is 100x rarer than the mode (empty bins are not drawn).
        let y_log = if hist {
            let nz: Vec<f64> = series.iter().flat_map(|(_, s)| s.y.iter().copied()).filter(|y| *y > 0.0).collect();
            let (lo, hi) = nz.iter().fold((f64::INFINITY, 0f64), |(a, b), y| (a.min(*y), b.max(*y)));
            hi / lo >= 100.0
        } else {
            wants_log(series.iter().flat_map(|(_, s)| s.y.iter().copied()), &first.y_unit)
        };
        // The title names the series and its axes; the description is the caption (below).
        let title = if series.len() == 1 {
            format!("{}: {} versus {}", series[0].0, first.y_name, first.x_name)
        } else {
            format!("{} versus {} ({})", first.y_name, first.x_name, group)
        };
        let mut p = Plot::new(
            &format!("plot-{i}-{}", group.replace(|c: char| !c.is_ascii_alphanumeric(), "-")),
            &title,
            Axis { label: axis_label(&first.x_name, &first.x_unit), unit: first.x_unit.clone(), log: x_log },
            Axis { label: axis_label(&first.y_name, &first.y_unit), unit: first.y_unit.clone(), log: y_log },
        );
        let mut caption = vec![];
        for (j, (k, s)) in series.iter().enumerate() {
            let n = s.x.len().min(s.y.len());
            let step = n.div_ceil(MAX_POINTS).max(1);
            if step > 1 {
                caption.push(format!("{k}: every {step}th of {n} points shown"));
            }
            let points = (0..n).step_by(step).map(|i| (s.x[i], s.y[i])).collect();
            let style = if hist {
                Style::Bars
            } else if n > 400 {
                Style::Points
            } else {
                Style::LinePoints
            };
            let name = k.strip_prefix(&format!("{group}.")).unwrap_or(k).to_string();
            p.lines.push(Line { name, color: svg::series_colour(j).into(), style, points, labels: vec![] });
            if s.x_name == "stride" && k.starts_with("cpu.stride") {
                // The stride probe marks the line and twice the line (seed 002's pair); the plot
                // marks the one line size found, from the finding.
                if let Some(line) = results.findings.get(memscope_core::keys::CPU_LINE_BYTES).and_then(|f| f.as_f64()) {
                    p.vmarks.push((line, format!("line {} (cpu.line_bytes)", units::number(line, "bytes"))));
                }
            } else if s.marks.is_empty() {
                // No knee in the curve itself (e.g. the sweep stops one point past the L1): mark
                // the level's capacity finding instead, named as such.
                if let Some((fk, cap)) =
                    capacity_for(k).and_then(|fk| results.findings.get(fk).and_then(|f| f.as_f64()).map(|v| (fk, v)))
                {
                    p.vmarks.push((cap, format!("{} ({fk})", units::number(cap, "bytes"))));
                }
            } else {
                for m in &s.marks {
                    p.vmarks.push((*m, format!("knee {}", units::tick(*m, &s.x_unit))));
                }
            }
            caption.push(format!("{k}: {}", s.description));
            if s.y_unit == "sectors" && k.contains("per_request") {
                // A warp's request touches at most 32 sectors (32 lanes); more is the estimate's
                // error, not a count, and the plot says so.
                p.hmarks.push((32.0, "32: most a warp can touch".into()));
                let over: Vec<String> =
                    s.x.iter()
                        .zip(&s.y)
                        .filter(|(_, y)| **y > 32.0)
                        .map(|(x, y)| format!("{} at stride {}", units::sig(*y, 3), units::number(*x, &s.x_unit)))
                        .collect();
                if !over.is_empty() {
                    caption.push(format!(
                        "above the 32 sectors a warp can touch, so an overestimate of the timing method: {}",
                        over.join(", ")
                    ));
                }
            }
        }
        p.vmarks.sort_by(|a, b| a.0.total_cmp(&b.0));
        p.vmarks.dedup_by(|a, b| (a.0 - b.0).abs() <= 1e-9 * a.0.abs());
        if first.y_unit == "ns" && matches!(first.x_unit.as_str(), "bytes" | "B") {
            p.hmarks = level_lines(results, group.starts_with("cpu"));
            caption.push("dashed red: detected knees; dotted grey: level latencies from the findings".into());
        }
        let mut fig = format!("<figure data-series=\"{}\">", esc(group));
        fig.push_str(&svg::render(&p));
        if !caption.is_empty() {
            let _ = write!(fig, "<figcaption>{}</figcaption>", esc(&caption.join("; ")));
        }
        fig.push_str("</figure>");
        out.push(fig);
    }
    out
}

fn provenance(results: &Results) -> String {
    let t = &results.target;
    let mut rows: Vec<(String, String)> = vec![
        ("device".into(), esc(&format!("{} ({})", t.name, t.id))),
        ("units".into(), esc(&format!("{} {}s", t.units, t.capabilities.unit_name))),
    ];
    if let Some(hz) = t.clock_hz {
        rows.push(("clock used for cycles".into(), esc(&units::si(hz, "Hz"))));
    }
    // Scalars print as text; objects and lists fold into a <details> with pretty JSON.
    let scalar = |v: &Value| match v {
        Value::String(s) => esc(s),
        Value::Null => "—".into(),
        Value::Object(_) | Value::Array(_) => format!(
            "<details><summary>JSON ({} bytes)</summary><pre>{}</pre></details>",
            v.to_string().len(),
            esc(&serde_json::to_string_pretty(v).unwrap_or_default())
        ),
        other => esc(&other.to_string()),
    };
    for (k, v) in &t.details {
        rows.push((k.replace('_', " "), scalar(v)));
    }
    for (k, v) in &results.environment {
        rows.push((k.replace('_', " "), scalar(v)));
    }
    if results.targets.len() > 1 {
        let ids: Vec<String> = results.targets.iter().map(|t| format!("{} ({})", t.name, t.id)).collect();
        rows.push(("targets".into(), esc(&ids.join("; "))));
    }
    rows.push(("tool".into(), esc(&format!("{} {}", results.tool.name, results.tool.version))));
    rows.push(("git commit".into(), esc(results.tool.git_commit.as_deref().unwrap_or("unknown"))));
    rows.push(("command".into(), esc(&results.tool.command.join(" "))));
    let mut s = String::from("<div class=\"scroll\"><table class=\"t prov\">");
    for (k, v) in rows {
        let _ = write!(s, "<tr><td>{}</td><td><code>{v}</code></td></tr>", esc(&k));
    }
    s.push_str("</table></div>");
    s
}

/// A finding key, escaped, with a line-break opportunity after each dot and underscore, so a
/// narrow column breaks `l2.hit_latency_l1_path_ns` between its parts, never inside a word.
pub fn breakable_key(key: &str) -> String {
    esc(key).replace('.', ".<wbr>").replace('_', "_<wbr>")
}

/// Escaped text with its `backticked` spans as <code> (an unpaired backtick stays as it is).
pub fn inline_code(escaped: &str) -> String {
    let parts: Vec<&str> = escaped.split('`').collect();
    if parts.len().is_multiple_of(2) {
        return escaped.to_string();
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| if i % 2 == 1 { format!("<code>{p}</code>") } else { p.to_string() })
        .collect()
}

fn findings_table(results: &Results) -> String {
    let mut s = String::from(
        "<div class=\"scroll\"><table class=\"t\" id=\"findings\"><colgroup><col class=\"k\"><col class=\"v\"><col class=\"c\"><col class=\"s\"><col class=\"m\"><col class=\"f\"><col class=\"n\"><col class=\"g\"></colgroup><tr><th>key</th><th>value</th><th>cycles</th><th>spread (MAD, min–max)</th><th>method</th><th>confidence</th><th>note</th><th>target</th></tr>",
    );
    for (title, rows) in table::sections(results) {
        let _ = write!(s, "<tr class=\"sec\"><td colspan=\"8\">{}</td></tr>", esc(&title));
        for (k, f) in rows {
            let spread = f
                .spread
                .as_ref()
                .filter(|_| f.value.is_number())
                .map(|sp| {
                    format!(
                        "± {} ({} – {}, n={})",
                        units::number(sp.mad, &f.unit),
                        units::number(sp.min, &f.unit),
                        units::number(sp.max, &f.unit),
                        sp.n
                    )
                })
                .unwrap_or_default();
            let conf = confidence_text(f.confidence);
            let _ = write!(
                s,
                "<tr><td><code>{}</code></td><td class=\"{}\" title=\"{}\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"wide\">{}</td><td class=\"c-{conf}\">{conf}</td><td class=\"wide\">{}</td><td class=\"id\">{}</td></tr>",
                breakable_key(k),
                if f.value.is_number() { "num" } else { "txt" },
                esc(&f.value.to_string()),
                esc(&table::value_text(f)).replace('_', "_<wbr>"),
                esc(&table::cycles_text(f)),
                esc(&spread),
                esc(&f.method).replace('_', "_<wbr>"),
                inline_code(&esc(&match (f.note.as_deref(), table::check_text(f)) {
                    (Some(n), Some(c)) => format!("{n}; second opinion: {c}"),
                    (None, Some(c)) => format!("second opinion: {c}"),
                    (n, None) => n.unwrap_or("").to_string(),
                }))
                .replace('_', "_<wbr>"),
                breakable_key(f.target.as_deref().unwrap_or("")).replace(':', ":<wbr>").replace('/', "/<wbr>")
            );
        }
    }
    s.push_str("</table></div>");
    s
}

fn probes_table(results: &Results) -> String {
    let not_ok: Vec<_> = results.probes.iter().filter(|(_, p)| p.status != ProbeStatus::Ok).collect();
    let ok = results.probes.len() - not_ok.len();
    let mut s = format!("<p>{ok} probe runs completed, {} waived or failed.</p>", not_ok.len());
    if !not_ok.is_empty() {
        s.push_str("<div class=\"scroll\"><table class=\"t\" id=\"probes\"><tr><th>probe@target</th><th>status</th><th>reason</th></tr>");
        for (k, p) in not_ok {
            let st = if p.status == ProbeStatus::Failed { "failed" } else { "waived" };
            let _ = write!(
                s,
                "<tr><td><code>{}</code></td><td>{st}</td><td>{}</td></tr>",
                esc(k),
                esc(p.reason.as_deref().unwrap_or(""))
            );
        }
        s.push_str("</table></div>");
    }
    s
}

/// Render the report. `model` is a model run (model.json or a results file's "model" section),
/// drawn as a roofline with its scoring table when it holds operations.
pub fn report(results: &Results, model: Option<&Value>) -> String {
    let figs = plots(results);
    let model_view = model.and_then(roofline::parse);
    let mut h = String::with_capacity(64 * 1024);
    let title = format!("memscope report: {}", table::targets_title(results));
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{CSS}</style></head><body><main>",
        esc(&title)
    );
    let _ = write!(h, "<h1>{}</h1><p class=\"sub\">{}</p>", esc(&title), esc(&table::provenance_line(results)));
    if let Some(c) = crate::clocks::clocks_line(results) {
        let _ = write!(h, "<p class=\"sub\">{}</p>", esc(&c));
    }
    h.push_str("<section id=\"hierarchy-section\"><h2>Discovered hierarchy</h2>");
    let _ = write!(h, "<div class=\"scroll\">{}</div>", diagram::render(results));
    let _ = write!(
        h,
        "<p class=\"note\">Command: <code>{}</code> · full provenance (host, OS, driver, clocks before and after) <a href=\"#provenance\">below</a>.</p>",
        esc(&results.tool.command.join(" "))
    );
    h.push_str("</section><section id=\"plots\"><h2>Measurements</h2>");
    if figs.is_empty() {
        h.push_str("<p class=\"note\">The results file holds no series.</p>");
    }
    let _ = write!(h, "<div class=\"plots\">{}</div></section>", figs.join(""));
    if let Some(s) = crate::links_view::section(results) {
        h.push_str(&s);
    }
    match (&model_view, model) {
        (Some(m), _) => h.push_str(&roofline::section(m)),
        (None, Some(_)) => h.push_str(
            "<section id=\"model\"><h2>Bottleneck model</h2><p class=\"note\">A model section was given but holds no operations with FLOPs, bytes and a measured time.</p></section>",
        ),
        _ => {}
    }
    h.push_str("<section><h2>Findings</h2>");
    h.push_str(&findings_table(results));
    h.push_str("</section><section><h2>Probes waived or failed</h2>");
    h.push_str(&probes_table(results));
    h.push_str("</section><section id=\"provenance\"><h2>Provenance</h2>");
    h.push_str(&provenance(results));
    h.push_str("</section></main>");
    // Marks the page as rendered (the browser test reads these attributes from the DOM).
    h.push_str(
        "<script>(function(){var b=document.body;b.dataset.plots=document.querySelectorAll('svg.plot').length;\
         b.dataset.diagram=document.querySelectorAll('#hierarchy g.lvl').length;\
         b.dataset.findings=Math.max(0,document.querySelectorAll('#findings tr').length-1);\
         b.dataset.peer=document.querySelectorAll('#interconnect table.peer').length;b.dataset.rendered='ok';})();</script>",
    );
    h.push_str("</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_report_has_every_part() {
        let r = memscope_results::sample::results();
        let model = serde_json::json!({"ceilings": {"bandwidth_bytes_per_s": 9e11, "peak_flops_per_s": 8e13, "launch_floor_s": 3e-6},
            "operations": [{"name": "add", "flops": 1e6, "bytes": 1.2e7, "measured_s": 2e-5, "predicted_s": 1.4e-5, "regime": "memory"}]});
        let h = report(&r, Some(&model));
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert!(
            !h.contains("http://") || h.matches("http://").all(|_| h.contains("xmlns=\"http://www.w3.org/2000/svg\""))
        );
        assert!(!h.contains("src=\"http") && !h.contains("href=\"http"));
        // latency, bw, cpu.stride, dram.refresh_hist -> 4 groups, + roofline + scoring
        assert_eq!(h.matches("<svg class=\"plot\"").count(), 6, "plots");
        assert!(h.contains("id=\"hierarchy\""));
        assert!(h.contains("needs a real GPU"));
        assert!(h.contains("knee 128K"));
        assert!(h.contains("fixture host") || h.contains("fixture-host"));
    }

    /// Pages fit a phone: viewport meta, plots that scale, tables and the diagram in their own
    /// scrolling boxes, keys that break at dots and underscores, backticks as code.
    #[test]
    fn pages_are_responsive_and_keys_break_between_words() {
        let r = memscope_results::sample::results();
        let h = report(&r, None);
        assert!(h.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"));
        assert!(CSS.contains("svg.plot{max-width:100%;height:auto}") && CSS.contains(".scroll{overflow-x:auto"));
        assert!(h.contains("<div class=\"scroll\"><table class=\"t\" id=\"findings\">"));
        assert!(h.contains("<div class=\"scroll\"><svg id=\"hierarchy\""));
        assert!(!CSS.contains("overflow-wrap:anywhere}table#findings"), "findings cells must not break inside words");
        assert_eq!(breakable_key("l2.hit_ns"), "l2.<wbr>hit_<wbr>ns");
        assert_eq!(inline_code("run `memscope list` first"), "run <code>memscope list</code> first");
        assert_eq!(inline_code("a ` b"), "a ` b");
        let c = crate::compare::html(&r, &r);
        assert!(
            c.contains("name=\"viewport\"") && c.contains("<div class=\"scroll\"><table class=\"t\" id=\"compare\">")
        );
    }

    #[test]
    fn strides_and_footprints_never_share_an_axis() {
        let mut r = memscope_results::sample::results();
        r.series.clear();
        let s = |xn: &str| series("d", xn, "bytes", "latency", "ns", vec![64.0, 4096.0, 65536.0], vec![1.0, 2.0, 3.0]);
        r.series.insert("cpu.by_stride".into(), s("stride"));
        r.series.insert("cpu.by_footprint".into(), s("footprint"));
        r.series.insert("cpu.by_footprint_2".into(), s("footprint"));
        assert_eq!(plot_groups(&r).len(), 2, "one plot per x quantity");
    }

    fn series(key_desc: &str, xn: &str, xu: &str, yn: &str, yu: &str, x: Vec<f64>, y: Vec<f64>) -> Series {
        Series {
            description: key_desc.into(),
            x_name: xn.into(),
            x_unit: xu.into(),
            y_name: yn.into(),
            y_unit: yu.into(),
            x,
            y,
            y_spread: None,
            marks: vec![],
        }
    }

    #[test]
    fn plots_say_what_the_data_cannot() {
        use memscope_core::{Confidence, Finding};
        let mut r = memscope_results::sample::results();
        r.series.clear();
        // A stride sweep whose probe marked line and twice the line: one mark, the line.
        let mut st =
            series("strided copy", "stride", "bytes", "speed", "GB/s", vec![16.0, 64.0, 256.0], vec![11.0, 12.0, 20.0]);
        st.marks = vec![64.0, 128.0];
        r.series.insert("cpu.stride".into(), st);
        let cached = series(
            "cache-resident",
            "stride",
            "bytes",
            "speed",
            "GB/s",
            vec![16.0, 64.0, 256.0],
            vec![38.0, 40.0, 1300.0],
        );
        r.series.insert("cpu.stride.cached".into(), cached);
        r.findings.insert("cpu.line_bytes".into(), Finding::integer(64, "bytes", "stride", Confidence::High));
        // A coalescing estimate above what a warp can touch.
        let co =
            series("estimated sectors", "stride", "bytes", "sectors", "sectors", vec![4.0, 128.0], vec![4.0, 38.6]);
        r.series.insert("coalesce.sectors_per_request".into(), co);
        // An L1 sweep without a knee of its own: the capacity finding is marked.
        let l1 = series(
            "chase",
            "footprint",
            "bytes",
            "latency",
            "ns",
            vec![4096.0, 65536.0, 262144.0],
            vec![15.4, 15.4, 127.4],
        );
        r.series.insert("latency.l1_cached".into(), l1);
        let h = report(&r, None);
        assert!(h.contains("line 64 B (cpu.line_bytes)"), "stride plot marks the line");
        assert!(!h.contains("knee 128B") && !h.contains("knee 64B"), "no second knee for one line");
        assert!(h.contains("speed [GB/s] (log scale)"), "a 100x spread of rates needs a log axis");
        assert!(h.contains("32: most a warp can touch") && h.contains("38.6 at stride 128 B"), "38.6 sectors flagged");
        assert!(h.contains("128 KiB (l1.capacity_bytes)"), "L1 capacity marked where the curve has no knee");
        assert!(!h.contains('…'), "nothing cut");
    }
}
