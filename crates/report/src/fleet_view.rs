//! The fleet view of `memscope compare` over three or more files (or a merged file), as a
//! terminal table and as a self-contained HTML page: per model, per finding, the median and each
//! member's ratio to it, ranks, and the outliers marked; for every finding with an outlier, a
//! plot of each member's value over the median.

use crate::fleet::{Cell, Direction, Flag, Fleet, Group, Row};
use crate::svg::{self, esc, Axis, Line, Plot, Style};
use crate::units;
use std::fmt::Write;

fn direction_text(d: Direction) -> &'static str {
    match d {
        Direction::HigherWorse => "higher is worse",
        Direction::LowerWorse => "lower is worse",
        Direction::Either => "no worse direction",
    }
}

fn median_text(r: &Row) -> String {
    match r.median {
        Some(m) => units::number(m, &r.unit),
        None => "-".into(),
    }
}

/// A cell for the terminal: the ratio to the median (or the value), `!` for worse, `~` differs.
fn cell_text(c: &Cell) -> String {
    let mark = match c.flag {
        Some(Flag::Worse) => " !",
        Some(Flag::Differs) => " ~",
        None => "",
    };
    match c.ratio {
        Some(r) => format!("{r:.3}{mark}"),
        None => {
            let mut t: String = c.text.chars().take(8).collect();
            if c.text.chars().count() > 8 {
                t.push('…');
            }
            format!("{t}{mark}")
        }
    }
}

fn rule_text(f: &Fleet) -> String {
    let pct = units::sig(f.tolerance * 100.0, 3);
    format!(
        "flagged (groups of 3 or more): ! more than {pct} % from the median in the worse direction (times: higher, rates: lower); ~ differs by more than {pct} % (units without a worse direction) or in value; never within 3 MADs of the member's own spread or under 0.01 ns"
    )
}

fn outlier_line(f: &Fleet, r: &Row, c: &Cell) -> String {
    let who = &f.units[c.unit].label;
    match (c.ratio, r.median) {
        (Some(ratio), Some(m)) => format!(
            "{who}: {} {} = {}× the median {} ({}{} %, {})",
            r.key,
            c.text,
            units::sig(ratio, 4),
            units::number(m, &r.unit),
            if ratio >= 1.0 { "+" } else { "" },
            units::sig((ratio - 1.0) * 100.0, 3),
            match c.flag {
                Some(Flag::Worse) => direction_text(r.direction).to_string(),
                _ => "differs".into(),
            }
        ),
        _ => format!("{who}: {} {} differs from the others", r.key, c.text),
    }
}

/// The fleet view for the terminal (control characters from the files escaped).
pub fn text(f: &Fleet) -> String {
    let mut out =
        format!("fleet: {} targets in {} group(s) by model\n{}\n", f.units.len(), f.groups.len(), rule_text(f));
    for g in &f.groups {
        let _ = writeln!(out, "\n{} ({} targets)", g.name, g.units.len());
        for (n, u) in g.units.iter().enumerate() {
            let _ = writeln!(out, "  [{}] {}  ({})", n + 1, f.units[*u].label, f.units[*u].source);
        }
        let _ = write!(out, "  {:<34} {:>13}", "finding (ratio to the median)", "median");
        for n in 0..g.units.len() {
            let _ = write!(out, " {:>9}", format!("[{}]", n + 1));
        }
        out.push('\n');
        for r in &g.rows {
            let _ = write!(out, "  {:<34} {:>13}", r.key, median_text(r));
            for u in &g.units {
                let t = r.cells.iter().find(|c| c.unit == *u).map(cell_text).unwrap_or_else(|| "-".into());
                let _ = write!(out, " {t:>9}");
            }
            out.push('\n');
        }
    }
    let outliers = f.outliers();
    if outliers.is_empty() {
        out.push_str("\nno outliers\n");
    } else {
        let _ = writeln!(out, "\noutliers ({}):", outliers.len());
        for (_, r, c) in outliers {
            let _ = writeln!(out, "  {}", outlier_line(f, r, c));
        }
    }
    crate::hygiene::terminal(&out)
}

const FLEET_CSS: &str = "td.out{background:#fde2e1;font-weight:600}td.diff{background:#fff3cd}.scroll{overflow-x:auto;max-width:100%}td.num{text-align:right;white-space:nowrap}";

fn html_cell(c: Option<&Cell>) -> String {
    let Some(c) = c else { return "<td class=\"num\">-</td>".into() };
    let (class, attr) = match c.flag {
        Some(Flag::Worse) => ("num out", " data-outlier=\"worse\""),
        Some(Flag::Differs) => ("num diff", " data-outlier=\"differs\""),
        None => ("num", ""),
    };
    let mut body = esc(&c.text);
    if let Some(r) = c.ratio {
        let _ = write!(body, "<br>{}×", esc(&units::sig(r, 4)));
    }
    if let Some(k) = c.rank {
        let _ = write!(body, " <small>#{k}</small>");
    }
    format!("<td class=\"{class}\"{attr}>{body}</td>")
}

fn group_plots(f: &Fleet, g: &Group, gi: usize, figs: &mut Vec<String>) {
    for r in g.rows.iter().filter(|r| r.median.is_some() && r.cells.iter().any(|c| c.flag.is_some())) {
        let mut plain = vec![];
        let mut flagged = vec![];
        let mut plain_labels = vec![];
        let mut flagged_labels = vec![];
        for (n, u) in g.units.iter().enumerate() {
            let Some(c) = r.cells.iter().find(|c| c.unit == *u) else { continue };
            let Some(ratio) = c.ratio else { continue };
            let label = format!("[{}] {}: {}", n + 1, f.units[*u].label, c.text);
            if c.flag.is_some() {
                flagged.push(((n + 1) as f64, ratio));
                flagged_labels.push(label);
            } else {
                plain.push(((n + 1) as f64, ratio));
                plain_labels.push(label);
            }
        }
        let mut p = Plot::new(
            &format!("fleet-{gi}-{}", figs.len()),
            &format!("{}: each member over the median", r.key),
            Axis { label: "member [number]".into(), unit: String::new(), log: false },
            Axis { label: "value / median [ratio]".into(), unit: String::new(), log: false },
        );
        for (name, color, pts, labels) in
            [("within", svg::PALETTE[0], plain, plain_labels), ("flagged", svg::PALETTE[1], flagged, flagged_labels)]
        {
            if !pts.is_empty() {
                p.lines.push(Line {
                    name: name.into(),
                    color: color.into(),
                    style: Style::Points,
                    points: pts,
                    labels,
                });
            }
        }
        p.hmarks.push((1.0, "median".into()));
        figs.push(format!(
            "<figure data-finding=\"{}\">{}<figcaption>{}</figcaption></figure>",
            esc(&r.key),
            svg::render(&p),
            esc(&format!("{} ({}, {}): median {}", r.key, r.unit, direction_text(r.direction), median_text(r)))
        ));
    }
}

/// The fleet view as a self-contained HTML page.
pub fn html(f: &Fleet) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>memscope compare: fleet of {} targets</title><style>{}{}</style></head><body><main>",
        f.units.len(),
        crate::html::CSS,
        FLEET_CSS
    );
    let _ = write!(
        h,
        "<h1>memscope compare: the fleet</h1><p class=\"sub\">{} targets in {} group(s) by model. {}</p>",
        f.units.len(),
        f.groups.len(),
        esc(&rule_text(f).replace("! ", "red: ").replace("; ~ ", "; yellow: "))
    );
    let outliers = f.outliers();
    h.push_str("<h2>Outliers</h2>");
    if outliers.is_empty() {
        h.push_str("<p id=\"outliers\">none</p>");
    } else {
        h.push_str("<ul id=\"outliers\">");
        for (_, r, c) in &outliers {
            let _ = write!(h, "<li>{}</li>", esc(&outlier_line(f, r, c)));
        }
        h.push_str("</ul>");
    }
    let mut figs = vec![];
    for (gi, g) in f.groups.iter().enumerate() {
        let _ = write!(h, "<h2>{} ({} targets)</h2><ol class=\"note\">", esc(&g.name), g.units.len());
        for u in &g.units {
            let _ = write!(h, "<li><code>{}</code> ({})</li>", esc(&f.units[*u].label), esc(&f.units[*u].source));
        }
        let _ = write!(
            h,
            "</ol><div class=\"scroll\"><table class=\"t fleet\" id=\"fleet-{gi}\"><tr><th>finding</th><th>median</th>"
        );
        for n in 0..g.units.len() {
            let _ = write!(h, "<th>[{}]</th>", n + 1);
        }
        h.push_str("</tr>");
        for r in &g.rows {
            let _ = write!(
                h,
                "<tr><td><code>{}</code><br><small>{}</small></td><td class=\"num\">{}</td>",
                crate::html::breakable_key(&r.key),
                esc(direction_text(r.direction)),
                esc(&median_text(r))
            );
            for u in &g.units {
                h.push_str(&html_cell(r.cells.iter().find(|c| c.unit == *u)));
            }
            h.push_str("</tr>");
        }
        h.push_str("</table></div>");
        group_plots(f, g, gi, &mut figs);
    }
    if !figs.is_empty() {
        let _ = write!(h, "<h2>Findings with outliers</h2><div class=\"plots\">{}</div>", figs.join(""));
    }
    h.push_str("</main><script>document.body.dataset.rendered='ok';document.body.dataset.plots=document.querySelectorAll('svg.plot').length;document.body.dataset.outliers=document.querySelectorAll('td[data-outlier]').length;</script></body></html>\n");
    h
}
