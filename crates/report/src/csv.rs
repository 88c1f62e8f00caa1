//! CSV writer (RFC 4180 quoting): one row per finding with raw value, unit, cycles, spread
//! (MAD, min, max, n), method, confidence, note and target, for spreadsheets. Raw numbers, not
//! the human-readable forms, so nothing is lost. Text cells that a spreadsheet would evaluate
//! (`=`, `+`, `-`, `@` first) get a leading apostrophe (`hygiene::csv_cell`).

use crate::table::confidence_text;
use memscope_results::Results;

/// Quote a field when it needs it.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn raw(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) => a.iter().map(raw).collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    }
}

/// The CSV document, header first.
pub fn to_string(results: &Results) -> String {
    let mut out =
        String::from("key,value,unit,cycles,spread_mad,spread_min,spread_max,samples,method,confidence,note,target\n");
    for (k, f) in &results.findings {
        let sp = f.spread.as_ref();
        let num = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
        let target = f.target.clone().unwrap_or_else(|| results.target.id.clone());
        let row = [
            k.clone(),
            raw(&f.value),
            f.unit.clone(),
            num(f.cycles),
            num(sp.map(|s| s.mad)),
            num(sp.map(|s| s.min)),
            num(sp.map(|s| s.max)),
            sp.map(|s| s.n.to_string()).unwrap_or_default(),
            f.method.clone(),
            confidence_text(f.confidence).to_string(),
            f.note.clone().unwrap_or_default(),
            target,
        ];
        out.push_str(&row.iter().map(|c| field(&crate::hygiene::csv_cell(c))).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn fixture_csv_rows_and_quoting() {
        let r = memscope_results::sample::results();
        let csv = super::to_string(&r);
        assert_eq!(csv.lines().count(), r.findings.len() + 1);
        assert!(csv.contains("l1.hit_latency_ns,15.4,ns,38.8,"), "{csv}");
        assert!(csv.contains("\"pointer chase, 20000 hops, median of 7\""));
        assert_eq!(super::field("a\"b"), "\"a\"\"b\"");
        // every row has the header's column count (no embedded commas in the fixture's quoted fields break it)
        assert!(csv.contains("dram.row_bytes,,bytes,"));
    }
}
