//! `explain`'s terminal table and its self-contained HTML page (a viewport meta, tables in
//! scrolling boxes), from an `Explanation`. Pure: returns text.

use crate::explain::Explanation;
use std::fmt::Write;

/// Seconds in the unit that reads best (ns, µs, ms, s).
pub fn fmt_s(s: f64) -> String {
    let a = s.abs();
    if a < 1e-6 {
        format!("{:.0} ns", s * 1e9)
    } else if a < 1e-3 {
        format!("{:.2} µs", s * 1e6)
    } else if a < 1.0 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

fn opt_s(s: Option<f64>) -> String {
    s.map(fmt_s).unwrap_or_else(|| "-".into())
}

fn pct(x: Option<f64>) -> String {
    x.map(|x| format!("{:.0} %", (x * 100.0).max(0.0))).unwrap_or_else(|| "-".into())
}

/// The rows the table and the page show: summary lines, then tables of (title, header, rows).
type Table = (String, Vec<&'static str>, Vec<Vec<String>>);

fn summary(x: &Explanation) -> Vec<(String, String)> {
    let d = &x.dispatch_floor;
    let mut v = vec![
        ("trace".into(), x.trace.clone()),
        ("GPU work items".into(), x.kernel_count.to_string()),
        ("device busy (union)".into(), fmt_s(x.device_busy_s)),
        ("sum of kernel durations".into(), fmt_s(x.kernel_sum_s)),
        ("known ops' share of GPU time".into(), pct(Some(x.known_fraction))),
        ("GPU time with no launching op".into(), pct(Some(x.unattributed_fraction))),
        (
            "dispatch floor (framework)".into(),
            format!(
                "{} per op (median of {}), {} per launch call (median of {}), {} between launches",
                opt_s(d.per_op_s),
                d.ops_counted,
                opt_s(d.per_launch_s),
                d.launches_counted,
                opt_s(d.per_kernel_s)
            ),
        ),
        (
            "device idle gaps in steps".into(),
            format!(
                "{} gaps, {} ({} waiting for the host)",
                x.gaps.count,
                fmt_s(x.gaps.total_s),
                fmt_s(x.gaps.waiting_for_host_s)
            ),
        ),
    ];
    match &x.ceilings {
        Some(c) => {
            let mut parts = vec![format!("DRAM {:.3} TB/s ({})", c.dram.value / 1e12, c.dram.key)];
            if let (Some(b), Some(cap)) = (&c.l2_bandwidth, &c.l2_capacity) {
                parts.push(format!("L2 {:.3} TB/s over {:.1} MiB", b.value / 1e12, cap.value / 1048576.0));
            }
            for (p, k) in &c.peaks {
                parts.push(format!("{p} {:.1} TFLOP/s", k.value / 1e12));
            }
            if let Some(f) = &c.kernel_floor {
                parts.push(format!("kernel floor {}", fmt_s(f.value)));
            }
            if let Some(f) = &c.launch_floor {
                parts.push(format!("memscope's launch floor {}", fmt_s(f.value)));
            }
            v.push(("ceilings".into(), parts.join(", ")));
        }
        None => v.push(("ceilings".into(), "none given (--ceilings RESULTS.json bounds every op)".into())),
    }
    v
}

fn tables(x: &Explanation, top: usize) -> Vec<Table> {
    let steps = x
        .steps
        .iter()
        .map(|s| {
            vec![
                s.name.clone(),
                fmt_s(s.wall_s),
                fmt_s(s.host_chain_s),
                fmt_s(s.device_busy_s),
                fmt_s(s.idle_s),
                fmt_s(s.dispatch_s),
                s.top_level_ops.to_string(),
                s.kernels.to_string(),
                s.sets.clone(),
            ]
        })
        .collect();
    let classes = x
        .classes
        .iter()
        .map(|c| {
            vec![
                c.class.name().into(),
                c.ops.to_string(),
                c.kernels.to_string(),
                fmt_s(c.device_s),
                fmt_s(c.bound_s),
                fmt_s(c.lost_s),
                pct(c.efficiency),
            ]
        })
        .collect();
    let names = x
        .op_names
        .iter()
        .take(top)
        .map(|n| vec![n.name.clone(), n.count.to_string(), fmt_s(n.host_median_s), fmt_s(n.device_s), fmt_s(n.lost_s)])
        .collect();
    let mut ranked: Vec<&crate::explain::OpRow> = x.ops.iter().collect();
    ranked.sort_by(|a, b| b.lost_s.unwrap_or(b.device_s).total_cmp(&a.lost_s.unwrap_or(a.device_s)));
    let ops = ranked
        .iter()
        .take(top)
        .map(|o| {
            let dims = serde_json::to_string(&o.input_dims).unwrap_or_default();
            let b = o.bound.as_ref();
            vec![
                o.name.clone(),
                if dims.len() > 48 {
                    format!("{}…", &dims[..dims.char_indices().nth(47).map(|c| c.0).unwrap_or(0)])
                } else {
                    dims
                },
                o.cost.dtype.map(|d| d.name()).unwrap_or("-").into(),
                if o.cost.known { "" } else { "estimated" }.into(),
                format!("{:.3e}", o.cost.flops),
                format!("{:.3e}", o.cost.bytes),
                fmt_s(o.device_s),
                opt_s(b.map(|b| b.bound_s)),
                b.map(|b| b.ceiling.clone()).unwrap_or_else(|| "-".into()),
                pct(o.efficiency),
                opt_s(o.lost_s),
            ]
        })
        .collect();
    vec![
        (
            "Steps".into(),
            vec!["step", "wall", "host chain", "device busy", "device idle", "dispatch", "ops", "kernels", "set by"],
            steps,
        ),
        (
            "Op classes, by time lost against their bounds".into(),
            vec!["class", "ops", "kernels", "device", "bound", "lost", "efficiency"],
            classes,
        ),
        (format!("Op names, by time lost (top {top})"), vec!["op", "count", "host median", "device", "lost"], names),
        (
            format!("Op instances, by time lost (top {top})"),
            vec![
                "op",
                "input dims",
                "dtype",
                "",
                "FLOPs",
                "bytes",
                "measured",
                "bound",
                "ceiling",
                "efficiency",
                "lost",
            ],
            ops,
        ),
    ]
}

/// The terminal report.
pub fn text(x: &Explanation, top: usize) -> String {
    let mut out = String::new();
    for (k, v) in summary(x) {
        let _ = writeln!(out, "{k:<32} {v}");
    }
    for (title, head, rows) in tables(x, top) {
        let _ = writeln!(out, "\n{title}");
        let mut width: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let line = |cells: Vec<String>| {
            cells.iter().enumerate().map(|(i, c)| format!("{c:<w$}", w = width[i])).collect::<Vec<_>>().join("  ")
        };
        let _ = writeln!(out, "{}", line(head.iter().map(|h| h.to_string()).collect()).trim_end());
        for r in rows {
            let _ = writeln!(out, "{}", line(r).trim_end());
        }
    }
    out
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The HTML section (a `<section>` element).
pub fn html_section(x: &Explanation, top: usize) -> String {
    let mut out = String::from(
        "<section class=\"explain\">\n<h2>Explain: a PyTorch trace against the measured ceilings</h2>\n<dl>\n",
    );
    for (k, v) in summary(x) {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(&k), esc(&v));
    }
    out.push_str("</dl>\n");
    for (title, head, rows) in tables(x, top) {
        let _ = writeln!(out, "<h3>{}</h3>\n<div class=\"scroll\"><table>\n<thead><tr>", esc(&title));
        for h in head {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for r in rows {
            out.push_str("<tr>");
            for c in r {
                let _ = write!(out, "<td>{}</td>", esc(&c));
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table></div>\n");
    }
    out.push_str("</section>\n");
    out
}

/// A whole page around the section.
pub fn html_page(x: &Explanation, top: usize) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>memscope explain: {}</title>\n<style>\n\
body{{font-family:system-ui,sans-serif;margin:1rem;max-width:80rem;line-height:1.4}}\n\
dl{{display:grid;grid-template-columns:minmax(10rem,16rem) 1fr;gap:.2rem 1rem}}dt{{font-weight:600}}dd{{margin:0;overflow-wrap:anywhere}}\n\
.scroll{{overflow-x:auto;max-width:100%;border:1px solid #ccc}}\n\
table{{border-collapse:collapse;font-size:.85rem;white-space:nowrap}}th,td{{padding:.2rem .5rem;border-bottom:1px solid #eee;text-align:left}}\n\
@media (max-width:40rem){{dl{{grid-template-columns:1fr}}}}\n</style>\n</head>\n<body>\n{}</body>\n</html>\n",
        esc(&x.trace),
        html_section(x, top)
    )
}
