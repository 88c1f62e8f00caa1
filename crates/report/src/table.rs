//! The terminal summary of a results file: one row per finding (value, unit, spread, confidence),
//! then waived and failed probes with their reasons.

use crate::results::{ProbeStatus, Results};
use serde_json::Value;

/// Format a finding value for a table cell.
pub fn format_value(v: &Value) -> String {
    match v {
        Value::Null => "undetermined".into(),
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.fract() == 0.0 && x.abs() < 1e15 => format!("{}", x as i64),
            Some(x) if x.abs() >= 1e6 || x.abs() < 1e-3 => format!("{x:.4e}"),
            Some(x) => format!("{x:.2}"),
            None => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(format_value).collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    }
}

/// The summary table as text.
pub fn summary(results: &Results) -> String {
    let mut out = String::new();
    let t = &results.target;
    out.push_str(&format!("memscope results for {} ({})\n", t.name, t.id));
    out.push_str(&format!("{:<34} {:>16} {:<8} {:>12} {}\n", "finding", "value", "unit", "spread(MAD)", "confidence"));
    for (k, f) in &results.findings {
        let spread = f.spread.as_ref().map(|s| format!("{:.3}", s.mad)).unwrap_or_default();
        let mut value = format_value(&f.value);
        if value.len() > 16 {
            value = format!("{}...", &value[..13]);
        }
        out.push_str(&format!("{:<34} {:>16} {:<8} {:>12} {:?}\n", k, value, f.unit, spread, f.confidence));
    }
    for (k, p) in &results.probes {
        match p.status {
            ProbeStatus::Failed => out.push_str(&format!("FAILED  {k}: {}\n", p.reason.as_deref().unwrap_or(""))),
            ProbeStatus::Waived => out.push_str(&format!("waived  {k}: {}\n", p.reason.as_deref().unwrap_or(""))),
            ProbeStatus::Ok => {}
        }
    }
    out
}
