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
