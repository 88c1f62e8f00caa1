//! Markdown writer: the datasheet (findings grouped by level with human-readable units, cycles,
//! spread, method, confidence), provenance, the series list and the waived or failed probes, for
//! pasting into issues and notes. Returns a String; only the CLI writes files.

use crate::table::{self, confidence_text};
use memscope_results::{ProbeStatus, Results};

/// Text from the results file, escaped (HTML, Markdown markup, pipes, control characters).
fn cell(s: &str) -> String {
    crate::hygiene::markdown(s)
}

fn code(s: &str) -> String {
    crate::hygiene::markdown_code(s)
}

/// The Markdown document.
pub fn to_string(results: &Results) -> String {
    let mut out = format!(
        "# memscope: {}\n\n{}\n\n",
        cell(&table::targets_title(results)),
        cell(&table::provenance_line(results))
    );
    if let Some(c) = crate::clocks::clocks_line(results) {
        out.push_str(&format!("{}\n\n", cell(&c)));
    }
    if !results.tool.command.is_empty() {
        out.push_str(&format!("Command: {}\n\n", code(&results.tool.command.join(" "))));
    }
    for (title, rows) in table::sections(results) {
        out.push_str(&format!(
            "## {title}\n\n| quantity | key | value | cycles | spread (MAD) | method | confidence |\n"
        ));
        out.push_str("|---|---|--:|--:|--:|---|---|\n");
        for (k, f) in rows {
            let mut conf = confidence_text(f.confidence).to_string();
            if let Some(n) = &f.note {
                conf.push_str(&format!(" ({n})"));
            }
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} |\n",
                cell(&table::quantity(k)),
                code(k),
                cell(&table::value_text(f)),
                cell(&table::cycles_text(f)),
                cell(&table::spread_text(f)),
                cell(&f.method),
                cell(&conf)
            ));
        }
        out.push('\n');
    }
    if !results.series.is_empty() {
        out.push_str("## Series\n\n| key | description | x | y | points |\n|---|---|---|---|--:|\n");
        for (k, s) in &results.series {
            out.push_str(&format!(
                "| {} | {} | {} [{}] | {} [{}] | {} |\n",
                code(k),
                cell(&s.description),
                cell(&s.x_name),
                cell(&s.x_unit),
                cell(&s.y_name),
                cell(&s.y_unit),
                s.x.len()
            ));
        }
        out.push('\n');
    }
    let not_ok: Vec<_> = results.probes.iter().filter(|(_, p)| p.status != ProbeStatus::Ok).collect();
    if !not_ok.is_empty() {
        out.push_str("## Probes waived or failed\n\n| probe | status | reason |\n|---|---|---|\n");
        for (k, p) in not_ok {
            let st = if p.status == ProbeStatus::Failed { "failed" } else { "waived" };
            out.push_str(&format!("| {} | {st} | {} |\n", code(k), cell(p.reason.as_deref().unwrap_or(""))));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn fixture_markdown_has_sections_and_escapes_pipes() {
        let md = super::to_string(&memscope_results::sample::results());
        assert!(md.contains("## L1 cache"));
        assert!(md.contains("| hit latency | `l1.hit_latency_ns` | 15.4 ns | 38.8 cyc |"), "{md}");
        assert!(md.contains("## Probes waived or failed"));
        assert!(md.lines().filter(|l| l.starts_with('|')).all(|l| l.ends_with('|')));
    }
}
