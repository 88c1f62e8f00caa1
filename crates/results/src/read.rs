//! Reading a results file (docs/CONTRACTS.md): its size and counts checked against the limits
//! ("Limits"), the schema tag, the parse, and, when it is not a `Results`, where it is wrong: the
//! JSON path of the first value that keeps it from being one (`findings["l1.hit_latency_ns"].value`,
//! `series["l1.latency"].x[3]`, `probes["latency@cpu"].status`), with serde's message for it.
//! Found without a path-tracking deserializer: each entry of `findings`/`series`/`probes` is parsed
//! alone, and inside a failing entry one field (or array element) at a time is replaced by the same
//! field of a valid exemplar; the field whose replacement makes the entry parse is the culprit, and
//! the search goes on inside it.

use memscope_core::{Finding, Series, TargetInfo};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::results::{
    ProbeRecord, Results, RunState, ToolInfo, MAX_FINDINGS, MAX_FLEET_MEMBERS, MAX_RESULTS_BYTES, MAX_SERIES_POINTS,
    SCHEMA,
};

/// Arrays longer than this are named as a whole (an element scan re-parses the entry each time).
const MAX_SCANNED_ELEMENTS: usize = 1024;

fn run_exemplar() -> Value {
    json!({"state": "interrupted", "signal": "SIGINT", "probes_not_run": ["p@cpu"]})
}

fn finding_exemplar() -> Value {
    json!({"value": 1.0, "unit": "ns", "spread": {"mad": 0.0, "min": 1.0, "max": 1.0, "ci95": [1.0, 1.0], "n": 1},
        "cycles": 1.0, "method": "m", "confidence": "high", "note": "n", "target": "cpu"})
}

fn series_exemplar() -> Value {
    json!({"description": "d", "x_name": "x", "x_unit": "bytes", "y_name": "y", "y_unit": "ns",
        "x": [1.0], "y": [1.0], "y_spread": [0.0], "marks": [1.0]})
}

fn target_exemplar() -> Value {
    json!({"kind": "cpu", "id": "cpu", "name": "n", "clock_hz": 1.0, "bypass_supported": false,
        "aliasing_supported": false, "per_hop_supported": false, "units": 1, "details": {}})
}

fn probe_exemplar() -> Value {
    json!({"target": "cpu", "status": "ok", "reason": "r", "duration_s": 0.0, "warnings": ["w"]})
}

fn tool_exemplar() -> Value {
    json!({"name": "memscope", "version": "0", "git_commit": "c", "command": ["memscope"]})
}

/// `.name` for plain names, `["a.b"]` otherwise (finding keys have dots).
fn key_path(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        format!(".{k}")
    } else {
        format!("[{}]", serde_json::to_string(k).unwrap_or_default())
    }
}

/// The path below `bad` of the culprit, given `ok(v)`: whether the whole entry parses with this
/// subtree replaced by `v`. Depth is bounded by the exemplar's.
fn find(bad: &Value, good: &Value, ok: &dyn Fn(&Value) -> bool) -> String {
    match (bad, good) {
        (Value::Object(b), Value::Object(g)) => {
            for (k, bv) in b {
                let mut c = b.clone();
                match g.get(k) {
                    Some(gv) => c.insert(k.clone(), gv.clone()),
                    None => c.remove(k),
                };
                if ok(&Value::Object(c)) {
                    let here = key_path(k);
                    return match g.get(k) {
                        Some(gv) => {
                            let inner = |x: &Value| {
                                let mut c = b.clone();
                                c.insert(k.clone(), x.clone());
                                ok(&Value::Object(c))
                            };
                            format!("{here}{}", find(bv, gv, &inner))
                        }
                        None => here,
                    };
                }
            }
            String::new()
        }
        (Value::Array(b), Value::Array(g)) if !g.is_empty() && b.len() <= MAX_SCANNED_ELEMENTS => {
            for (i, bv) in b.iter().enumerate() {
                let gv = &g[i.min(g.len() - 1)];
                let mut c = b.clone();
                c[i] = gv.clone();
                if ok(&Value::Array(c)) {
                    let inner = |x: &Value| {
                        let mut c = b.clone();
                        c[i] = x.clone();
                        ok(&Value::Array(c))
                    };
                    return format!("[{i}]{}", find(bv, gv, &inner));
                }
            }
            String::new()
        }
        _ => String::new(),
    }
}

/// `Some("PATH: message")` when `v` is not a `T`.
fn entry<T: DeserializeOwned>(path: &str, v: &Value, good: &Value) -> Option<String> {
    let e = serde_json::from_value::<T>(v.clone()).err()?;
    let ok = |x: &Value| serde_json::from_value::<T>(x.clone()).is_ok();
    Some(format!("{path}{}: {e}", find(v, good, &ok)))
}

fn map_of<T: DeserializeOwned>(doc: &Value, name: &str, good: &Value) -> Option<String> {
    match doc.get(name)? {
        Value::Object(m) => m.iter().find_map(|(k, v)| entry::<T>(&format!("{name}{}", key_path(k)), v, good)),
        other => Some(format!("{name}: must be an object of entries (got {})", kind(other))),
    }
}

/// A value's JSON kind, for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The first problem of a document that is JSON with the right schema tag but not a `Results`,
/// as "PATH: message"; `None` when none is found here (the caller keeps serde's message).
pub fn locate(doc: &Value) -> Option<String> {
    let Value::Object(top) = doc else {
        return Some(format!("(top level): must be an object (got {})", kind(doc)));
    };
    for required in ["tool", "target", "environment", "findings", "series"] {
        if !top.contains_key(required) {
            return Some(format!("(top level): missing field {required:?}"));
        }
    }
    if !top["environment"].is_object() {
        return Some(format!("environment: must be an object (got {})", kind(&top["environment"])));
    }
    entry::<ToolInfo>("tool", &top["tool"], &tool_exemplar())
        .or_else(|| entry::<TargetInfo>("target", &top["target"], &target_exemplar()))
        .or_else(|| match top.get("targets") {
            Some(Value::Array(ts)) => ts
                .iter()
                .enumerate()
                .find_map(|(i, t)| entry::<TargetInfo>(&format!("targets[{i}]"), t, &target_exemplar())),
            Some(Value::Null) | None => None,
            Some(other) => Some(format!("targets: must be an array (got {})", kind(other))),
        })
        .or_else(|| map_of::<Finding>(doc, "findings", &finding_exemplar()))
        .or_else(|| map_of::<Series>(doc, "series", &series_exemplar()))
        .or_else(|| map_of::<ProbeRecord>(doc, "probes", &probe_exemplar()))
        .or_else(|| entry::<RunState>("run", top.get("run")?, &run_exemplar()))
        .or_else(|| fleet(top.get("fleet")?))
}

/// The first problem of a merged file's members (`fleet[i].results...` for their documents).
fn fleet(v: &Value) -> Option<String> {
    let Value::Array(members) = v else {
        return Some(format!("fleet: must be an array (got {})", kind(v)));
    };
    members.iter().enumerate().find_map(|(i, m)| {
        let Value::Object(o) = m else {
            return Some(format!("fleet[{i}]: must be an object (got {})", kind(m)));
        };
        for (field, required) in [("id", true), ("host", true), ("source", true), ("job", false)] {
            match o.get(field) {
                Some(Value::String(_)) => {}
                None if !required => {}
                None => return Some(format!("fleet[{i}]: missing field {field:?}")),
                Some(other) => return Some(format!("fleet[{i}].{field}: must be a string (got {})", kind(other))),
            }
        }
        if let Some(r) = o.get("rank").filter(|r| !r.is_u64()) {
            return Some(format!("fleet[{i}].rank: must be a whole number (got {})", kind(r)));
        }
        let Some(doc) = o.get("results") else {
            return Some(format!("fleet[{i}]: missing field \"results\""));
        };
        let inner = locate(doc)?;
        Some(match inner.strip_prefix("(top level)") {
            Some(rest) => format!("fleet[{i}].results{rest}"),
            None => format!("fleet[{i}].results.{inner}"),
        })
    })
}

impl Results {
    /// Parse a results file, checking the schema tag. An error names where the file is wrong, as
    /// a JSON path (`findings["l1.hit_latency_ns"].value: invalid type ...`).
    pub fn from_json(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() > MAX_RESULTS_BYTES {
            return Err(format!(
                "the file is over {} MiB (MAX_RESULTS_BYTES, docs/CONTRACTS.md \"Limits\")",
                MAX_RESULTS_BYTES >> 20
            ));
        }
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        check_counts(&v, "")?;
        if !v.is_object() {
            return Err(format!("not a memscope results file: the top level is {}, not an object", kind(&v)));
        }
        match v.get("schema") {
            Some(Value::String(s)) if s == SCHEMA => {}
            Some(Value::String(other)) => return Err(format!("schema is {other:?}, expected {SCHEMA:?}")),
            Some(other) => return Err(format!("schema is {other} ({}), expected the string {SCHEMA:?}", kind(other))),
            None => return Err(format!("no \"schema\" field (expected {SCHEMA:?})")),
        }
        match serde_json::from_value::<Results>(v.clone()) {
            Ok(mut r) => {
                // (files written before targets carried capability flags)
                r.target.fill_legacy_capabilities();
                r.targets.iter_mut().for_each(|t| t.fill_legacy_capabilities());
                Ok(r)
            }
            Err(e) => Err(format!("not a memscope results file: {}", locate(&v).unwrap_or(e.to_string()))),
        }
    }
}

/// The counts that size a reader's work, checked on the parsed JSON before it becomes a
/// `Results`; `at` is the document's path ("fleet[3].results." for a member).
fn check_counts(v: &Value, at: &str) -> Result<(), String> {
    if let Some(f) = v.get("findings").and_then(Value::as_object) {
        if f.len() > MAX_FINDINGS {
            return Err(format!("{at}findings: {} findings, at most {MAX_FINDINGS} (MAX_FINDINGS)", f.len()));
        }
    }
    if let Some(series) = v.get("series").and_then(Value::as_object) {
        let mut points = 0usize;
        for s in series.values() {
            if let Some(o) = s.as_object() {
                points += o.values().filter_map(Value::as_array).map(Vec::len).sum::<usize>();
            }
        }
        if points > MAX_SERIES_POINTS {
            return Err(format!("{at}series: {points} points in all, at most {MAX_SERIES_POINTS} (MAX_SERIES_POINTS)"));
        }
    }
    if let Some(fleet) = v.get("fleet").and_then(Value::as_array) {
        if fleet.len() > MAX_FLEET_MEMBERS {
            return Err(format!("{at}fleet: {} members, at most {MAX_FLEET_MEMBERS}", fleet.len()));
        }
        for (i, m) in fleet.iter().enumerate() {
            if let Some(r) = m.get("results") {
                check_counts(r, &format!("{at}fleet[{i}].results."))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_member_of_a_merged_file() {
        let tool = crate::sample::results().tool;
        let m = crate::merge::merge(vec![("a.json".into(), crate::sample::results())], tool, "t");
        let mut d = serde_json::to_value(&m).unwrap();
        d["fleet"][0]["results"]["findings"]["l1.line_bytes"]["confidence"] = json!(5);
        let e = crate::Results::from_json(&serde_json::to_vec(&d).unwrap()).unwrap_err();
        assert!(e.contains("fleet[0].results.findings[\"l1.line_bytes\"].confidence"), "{e}");
        let mut d = serde_json::to_value(&m).unwrap();
        d["fleet"][0]["host"] = json!([1]);
        let e = crate::Results::from_json(&serde_json::to_vec(&d).unwrap()).unwrap_err();
        assert!(e.contains("fleet[0].host: must be a string"), "{e}");
    }

    fn doc_with(finding: Value) -> Value {
        let mut d = serde_json::to_value(crate::sample::results()).unwrap();
        d["findings"]["l1.hit_latency_ns"] = finding;
        d
    }

    #[test]
    fn names_the_finding_and_its_field() {
        let mut f = finding_exemplar();
        f["cycles"] = json!("1");
        let e = locate(&doc_with(f)).unwrap();
        assert!(e.starts_with("findings[\"l1.hit_latency_ns\"].cycles: invalid type: string"), "{e}");
        let mut f = finding_exemplar();
        f["spread"]["ci95"] = json!([1.0, "x"]);
        let e = locate(&doc_with(f)).unwrap();
        assert!(e.starts_with("findings[\"l1.hit_latency_ns\"].spread.ci95[1]:"), "{e}");
        let mut f = finding_exemplar();
        f.as_object_mut().unwrap().remove("unit");
        let e = locate(&doc_with(f)).unwrap();
        assert!(e.starts_with("findings[\"l1.hit_latency_ns\"]: missing field `unit`"), "{e}");
        let mut f = finding_exemplar();
        f["confidence"] = json!("sure");
        assert!(locate(&doc_with(f))
            .unwrap()
            .starts_with("findings[\"l1.hit_latency_ns\"].confidence: unknown variant"));
    }

    #[test]
    fn names_series_elements_and_probe_fields() {
        let mut d = serde_json::to_value(crate::sample::results()).unwrap();
        let k = d["series"].as_object().unwrap().keys().next().unwrap().clone();
        d["series"][&k]["x"][2] = json!("2");
        let e = locate(&d).unwrap();
        assert!(e.starts_with(&format!("series[{}].x[2]:", serde_json::to_string(&k).unwrap())), "{e}");
        let mut d = serde_json::to_value(crate::sample::results()).unwrap();
        d["probes"] = json!({"latency@cpu": {"target": "cpu", "status": "done", "duration_s": 1.0}});
        assert!(locate(&d).unwrap().starts_with("probes[\"latency@cpu\"].status: unknown variant"));
        let mut d = serde_json::to_value(crate::sample::results()).unwrap();
        d["target"]["units"] = json!(-1);
        assert!(locate(&d).unwrap().starts_with("target.units:"));
    }

    /// `"schema": 1` is a wrong schema, not a missing one.
    #[test]
    fn a_number_schema_is_a_wrong_schema() {
        let mut d = serde_json::to_value(crate::sample::results()).unwrap();
        d["schema"] = json!(1);
        let e = crate::Results::from_json(d.to_string().as_bytes()).unwrap_err();
        assert_eq!(e, "schema is 1 (a number), expected the string \"memscope/1\"");
        d.as_object_mut().unwrap().remove("schema");
        let e = crate::Results::from_json(d.to_string().as_bytes()).unwrap_err();
        assert!(e.starts_with("no \"schema\" field"), "{e}");
        d["schema"] = json!("memscope/1");
        d["findings"]["l1.hit_latency_ns"]["value"] = json!({"x": 1});
        assert!(crate::Results::from_json(d.to_string().as_bytes()).is_ok(), "a value may be any JSON");
        d["findings"]["l1.hit_latency_ns"]["spread"] = json!({"mad": "1", "min": 0.0, "max": 0.0, "n": 1});
        let e = crate::Results::from_json(d.to_string().as_bytes()).unwrap_err();
        assert!(e.starts_with("not a memscope results file: findings[\"l1.hit_latency_ns\"].spread.mad: invalid type: string \"1\", expected f64"), "{e}");
    }
}
