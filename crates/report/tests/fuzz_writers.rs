//! Property-based fuzzing (proptest, bounded case counts so CI time stays in seconds) of the two
//! parsers and the report writers (docs/GUIDE.md): any text or mutated document gives `Ok` or an
//! error, never a panic; for any finding and series text and numbers (control characters, HTML,
//! formulas, values near f64::MAX, NaN, infinities), the terminal table has no control
//! character, the Markdown no raw HTML tag, the CSV no cell a spreadsheet would evaluate, and
//! the HTML page is produced.

use memscope_core::{Confidence, Finding, Series};
use memscope_results::Results;
use memscope_sim::hierarchy::Hierarchy;
use proptest::prelude::*;
use serde_json::{json, Value};

fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,24}",
        "[=+@\\-][A-Za-z0-9(),\"' |!]{0,16}",
        "<[a-z]{1,8}>[^<]{0,8}</[a-z]{1,8}>",
        "[\\x00-\\x1f\\x7f\\u{9b}\\u{202e}a-z\\[;]{0,16}",
        Just("\u{1b}[2J\u{1b}[H".to_string()),
    ]
}

fn hostile_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>(),
        Just(f64::MAX),
        Just(-f64::MAX),
        Just(f64::MIN_POSITIVE),
        Just(5e-324),
        Just(f64::INFINITY),
        Just(f64::NAN),
        Just(0.0),
        (-1e6..1e6f64),
    ]
}

fn results_with(text: &[String], nums: &[f64]) -> Results {
    let mut r = memscope_results::sample::results();
    let t = |i: usize| text[i % text.len()].clone();
    let n = |i: usize| nums[i % nums.len()];
    r.target.name = t(0);
    for (i, (_, f)) in r.findings.iter_mut().enumerate() {
        f.note = Some(t(i + 1));
        f.method = t(i + 2);
        if i % 2 == 0 {
            f.value = json!(n(i));
        }
    }
    let mut f = Finding::number(n(3), "ns", &t(4), Confidence::Low);
    f.note = Some(t(5));
    r.findings.insert(t(6), f);
    let xs: Vec<f64> = (0..8).map(|i| n(i + 7)).collect();
    let ys: Vec<f64> = (0..8).map(|i| n(i + 15)).collect();
    for (_, s) in r.series.iter_mut() {
        s.x = xs.clone();
        s.y = ys.clone();
        s.marks = vec![n(23)];
        s.description = t(7);
    }
    r.series.insert(
        "l1.latency_hostile".into(),
        Series {
            description: t(8),
            x_name: t(9),
            x_unit: "bytes".into(),
            y_name: "latency".into(),
            y_unit: "ns".into(),
            x: xs,
            y: ys,
            y_spread: None,
            marks: vec![n(24)],
        },
    );
    r
}

/// `md` without its code spans (a run of n backticks, not backslash-escaped, up to the next run
/// of exactly n; CommonMark's rule).
fn strip_code_spans(md: &str) -> String {
    let b: Vec<char> = md.chars().collect();
    let (mut out, mut i) = (String::new(), 0);
    let run = |i: usize| b[i..].iter().take_while(|c| **c == '`').count();
    while i < b.len() {
        if b[i] == '\\' && i + 1 < b.len() {
            // a backslash escape (`\``) opens no span
            out.push(b[i]);
            out.push(b[i + 1]);
            i += 2;
            continue;
        }
        if b[i] != '`' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let n = run(i);
        let mut j = i + n;
        let mut close = None;
        while j < b.len() {
            if b[j] == '`' {
                let m = run(j);
                if m == n {
                    close = Some(j + m);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => i = end,
            None => {
                out.extend(&b[i..i + n]);
                i += n;
            }
        }
    }
    out
}

fn no_controls(s: &str) -> bool {
    !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
}

/// The records of a CSV document, each a list of cells (RFC 4180: quoted cells may hold commas,
/// line breaks and doubled quotes).
fn records(csv: &str) -> Vec<Vec<String>> {
    let (mut out, mut rec, mut cur, mut quoted) = (Vec::new(), Vec::new(), String::new(), false);
    let mut chars = csv.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => rec.push(std::mem::take(&mut cur)),
            ('\n', false) => {
                rec.push(std::mem::take(&mut cur));
                out.push(std::mem::take(&mut rec));
            }
            (c, _) => cur.push(c),
        }
    }
    if !cur.is_empty() || !rec.is_empty() {
        rec.push(cur);
        out.push(rec);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn writers_stay_clean(text in prop::collection::vec(hostile_text(), 1..12), nums in prop::collection::vec(hostile_f64(), 1..32)) {
        let r = results_with(&text, &nums);
        prop_assert!(no_controls(&memscope_report::table::summary(&r)), "control character in the table");
        let md = memscope_report::markdown::to_string(&r);
        // (a code span shows `<` literally: only text outside code spans could be HTML)
        let outside = strip_code_spans(&md);
        prop_assert!(!outside.contains('<'), "raw '<' in Markdown: {:?}", outside.lines().filter(|l| l.contains('<')).collect::<Vec<_>>());
        let csv = memscope_report::csv::to_string(&r);
        for rec in records(&csv).iter().skip(1) {
            for c in rec {
                let formula = c.starts_with(['=', '+', '@', '\t', '\r']) || c.starts_with('-');
                prop_assert!(!formula || c.trim().parse::<f64>().is_ok(), "formula cell {c:?} in {rec:?}");
            }
        }
        let html = memscope_report::html::report(&r, None);
        prop_assert!(html.trim_end().ends_with("</html>"));
        prop_assert!(no_controls(&memscope_report::compare::text(&r, &memscope_results::sample::results())));
    }

    #[test]
    fn parsers_never_panic_on_text(s in "\\PC{0,200}") {
        let _ = Hierarchy::from_json_str(&s);
        let _ = Results::from_json(s.as_bytes());
    }

    #[test]
    fn parsers_never_panic_on_mutated_documents(node in 0usize..4096, v in hostile_value()) {
        let h = serde_json::to_value(Hierarchy::default()).unwrap();
        let _ = Hierarchy::from_value(&replace_nth(&h, node, &v));
        let r = serde_json::to_value(memscope_results::sample::results()).unwrap();
        if let Err(e) = Results::from_json(replace_nth(&r, node, &v).to_string().as_bytes()) {
            prop_assert!(!e.is_empty());
        }
    }
}

fn hostile_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(|x| json!(x)),
        any::<u64>().prop_map(|x| json!(x)),
        hostile_f64().prop_map(|x| json!(x)),
        hostile_text().prop_map(|x| json!(x)),
        Just(Value::Null),
        Just(json!([])),
        Just(json!({})),
        Just(json!({"masks": ["0x80"]})),
    ]
}

/// `doc` with its `n`-th node (depth first, modulo the node count) replaced by `v`.
fn replace_nth(doc: &Value, n: usize, v: &Value) -> Value {
    fn count(x: &Value) -> usize {
        1 + match x {
            Value::Object(m) => m.values().map(count).sum(),
            Value::Array(a) => a.iter().map(count).sum(),
            _ => 0,
        }
    }
    fn go(x: &mut Value, n: &mut usize, v: &Value) -> bool {
        if *n == 0 {
            *x = v.clone();
            return true;
        }
        *n -= 1;
        match x {
            Value::Object(m) => m.values_mut().any(|c| go(c, n, v)),
            Value::Array(a) => a.iter_mut().any(|c| go(c, n, v)),
            _ => false,
        }
    }
    let mut out = doc.clone();
    let mut k = n % count(doc);
    go(&mut out, &mut k, v);
    out
}

/// Text a terminal, a page or a reader would act on: C0 controls but newline and tab, C1
/// controls, bidirectional overrides.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn payload_text() -> impl Strategy<Value = String> {
    prop_oneof![
        hostile_text(),
        "[\\u{80}-\\u{9f}\\u{202a}-\\u{202e}\\u{2066}-\\u{2069}<>\"'&\\n\\r\\x1b\\x07a-zé€😀]{0,24}",
        Just("\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{7}".to_string()),
        Just("<script>alert(1)</script>\u{9b}2J\u{202e}".to_string()),
    ]
}

/// `doc` with the `n`-th object key (depth first, modulo the key count) renamed to `key`.
fn rename_nth_key(doc: &Value, n: usize, key: &str) -> Value {
    fn keys(x: &Value) -> usize {
        match x {
            Value::Object(m) => m.len() + m.values().map(keys).sum::<usize>(),
            Value::Array(a) => a.iter().map(keys).sum(),
            _ => 0,
        }
    }
    fn go(x: &mut Value, n: &mut usize, key: &str) -> bool {
        match x {
            Value::Object(m) => {
                if *n < m.len() {
                    let old = m.keys().nth(*n).cloned().expect("key");
                    let v = m.remove(&old).expect("value");
                    m.insert(key.to_string(), v);
                    return true;
                }
                *n -= m.len();
                m.values_mut().any(|c| go(c, n, key))
            }
            Value::Array(a) => a.iter_mut().any(|c| go(c, n, key)),
            _ => false,
        }
    }
    let mut out = doc.clone();
    let total = keys(doc);
    if total > 0 {
        let mut k = n % total;
        go(&mut out, &mut k, key);
    }
    out
}

/// Every output a results document feeds, for the properties below.
fn all_outputs(r: &Results) -> Vec<(&'static str, String)> {
    let sample = memscope_results::sample::results();
    let tool: memscope_results::ToolInfo =
        serde_json::from_value(json!({"name": "memscope", "version": "0"})).expect("tool");
    let merged = memscope_results::merge::merge(
        vec![("a.json".into(), r.clone()), ("b.json".into(), sample.clone())],
        tool,
        "2026-01-01T00:00:00Z",
    );
    let fleet = memscope_report::fleet::analyse(&merged.fleet, 0.05);
    let mut out = vec![
        ("table", memscope_report::table::summary(r)),
        ("markdown", memscope_report::markdown::to_string(r)),
        ("csv", memscope_report::csv::to_string(r)),
        ("html", memscope_report::html::report(r, None)),
        ("compare", memscope_report::compare::text(r, &sample)),
        ("compare html", memscope_report::compare::html(&sample, r)),
        ("fleet", memscope_report::fleet_view::text(&fleet)),
        ("fleet html", memscope_report::fleet_view::html(&fleet)),
        ("json", String::from_utf8(memscope_results::json::to_bytes(r)).expect("utf-8")),
        ("merged json", String::from_utf8(memscope_results::json::to_bytes(&merged)).expect("utf-8")),
    ];
    if let Ok(t) = memscope_report::nvbandwidth::export(r) {
        out.push(("nvbandwidth", t));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    /// Several mutations at once (values anywhere, keys renamed to hostile text): a document the
    /// reader accepts reaches no output with a character that acts, nor live markup in a page.
    #[test]
    fn accepted_documents_reach_every_writer_clean(
        edits in prop::collection::vec((0usize..4096, hostile_value()), 0..4),
        renames in prop::collection::vec((0usize..4096, payload_text()), 0..4),
        texts in prop::collection::vec((0usize..4096, payload_text()), 1..6),
    ) {
        let mut doc = serde_json::to_value(memscope_results::sample::results()).unwrap();
        for (n, v) in &edits {
            doc = replace_nth(&doc, *n, v);
        }
        for (n, t) in &texts {
            doc = replace_nth(&doc, *n, &json!(t));
        }
        for (n, k) in &renames {
            doc = rename_nth_key(&doc, *n, k);
        }
        let Ok(r) = Results::from_json(doc.to_string().as_bytes()) else { return Ok(()) };
        for (what, text) in all_outputs(&r) {
            let bad: Vec<char> = text.chars().filter(|c| acts(*c)).collect();
            prop_assert!(bad.is_empty(), "{what}: raw {bad:?}");
            if what.contains("html") {
                prop_assert!(!text.contains("<script>alert"), "{what}: live markup");
            }
        }
    }

    /// A commit, a name or an id of any characters (multibyte ones at every byte index).
    #[test]
    fn any_commit_or_name_is_no_panic(commit in "\\PC{0,24}", name in payload_text()) {
        let mut r = memscope_results::sample::results();
        r.tool.git_commit = Some(commit);
        r.target.name = name.clone();
        r.target.id = name;
        for (what, text) in all_outputs(&r) {
            prop_assert!(!text.chars().any(acts), "{what}");
        }
    }

    /// A hierarchy the reader accepts has only finite times within the bound, and a `links`
    /// section within its bounds.
    #[test]
    fn accepted_hierarchies_are_within_their_bounds(edits in prop::collection::vec((0usize..4096, hostile_value()), 1..4)) {
        let mut h = serde_json::to_value(Hierarchy::default()).unwrap();
        h["links"] = json!({"gpus": 4, "index": 1});
        for (n, v) in &edits {
            h = replace_nth(&h, *n, v);
        }
        if let Ok(h) = Hierarchy::from_value(&h) {
            let max = memscope_sim::hierarchy::validate::MAX_TIME_NS;
            for t in [h.noise.jitter_ns, h.noise.outlier_ns, h.l1.hit_ns, h.l2.hit_ns, h.tlb.miss_ns] {
                prop_assert!(t.is_finite() && (0.0..=max).contains(&t), "{t}");
            }
            prop_assert!(h.clock_hz.is_finite() && h.clock_hz >= 1e3);
            if let Some(l) = &h.links {
                prop_assert!(l.gpus <= memscope_core::links::MAX_LINK_GPUS);
                prop_assert!(l.peer_bytes_per_s.is_normal() && l.peer_latency_ns <= max);
            }
        }
    }
}

/// Counts near and past the bounds: documents within them are read, those past them refused
/// with an error naming the count.
#[test]
fn counts_past_the_bounds_are_named() {
    use memscope_results::results::{MAX_FINDINGS, MAX_SERIES_POINTS};
    for points in 0..3 {
        for findings in 0..3 {
            let mut doc = serde_json::to_value(memscope_results::sample::results()).unwrap();
            let key = doc["series"].as_object().unwrap().keys().next().unwrap().clone();
            // (x and y both: twice n points, beside the sample's own few hundred)
            let n = [10, MAX_SERIES_POINTS / 2 - 10_000, MAX_SERIES_POINTS / 2 + 1][points];
            doc["series"][&key]["x"] = json!(vec![1.0; n]);
            doc["series"][&key]["y"] = json!(vec![1.0; n]);
            let f0 = doc["findings"].as_object().unwrap().values().next().unwrap().clone();
            let extra = [0, 10, MAX_FINDINGS + 1][findings];
            for i in 0..extra {
                doc["findings"][format!("k{i}")] = f0.clone();
            }
            let past = points == 2 || findings == 2;
            match Results::from_json(doc.to_string().as_bytes()) {
                Ok(r) => {
                    assert!(!past, "points {points}, findings {findings}: read past a bound");
                    assert!(r.findings.len() <= MAX_FINDINGS);
                }
                Err(e) => {
                    assert!(past, "points {points}, findings {findings}: {e}");
                    assert!(e.contains("findings") || e.contains("series"), "{e}");
                }
            }
        }
    }
}
