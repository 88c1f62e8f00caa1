//! The hostile-input corpus, generated (deterministically, from a seed) rather than
//! stored: simulated-hierarchy files and results files mutated from valid ones (hostile numbers
//! at every numeric field, wrong types, missing and unknown fields, wrong schemas, control
//! characters, formula and HTML text, values near f64::MAX, long arrays), the specific failures
//! the fuzzing pass found, and bad arguments for every subcommand.

use serde_json::{json, Value};

/// SplitMix64: a small seeded generator (the corpus must be the same in every CI run).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

/// Values that break arithmetic, sizes and types.
pub fn hostile_values() -> Vec<Value> {
    vec![
        json!(0),
        json!(1),
        json!(-1),
        json!(3),
        json!(65536),
        json!(2147483648u64),
        json!(4294967295u64),
        json!(4294967296u64),
        json!(9007199254740993u64),
        json!(9223372036854775808u64),
        json!(18446744073709551615u64),
        json!(1e308),
        json!(-1e308),
        json!(1.7976931348623157e308),
        json!(5e-324),
        json!(0.5),
        json!(-0.0),
        json!("1"),
        json!("0x"),
        json!("0xffffffffffffffffff"),
        json!("\u{1b}[2J\u{1b}[H"),
        json!(null),
        json!(true),
        json!([]),
        json!([1, 2, 3]),
        json!({}),
        json!({"masks": []}),
        json!({"masks": ["0x80", "0x80"]}),
    ]
}

/// Every path (as keys) to a leaf of `v`, arrays included by index.
fn leaves(v: &Value, here: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                here.push(json!(k));
                leaves(c, here, out);
                here.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate().take(4) {
                here.push(json!(i));
                leaves(c, here, out);
                here.pop();
            }
            out.push(here.clone());
        }
        _ => out.push(here.clone()),
    }
}

fn at<'a>(v: &'a mut Value, path: &[Value]) -> Option<&'a mut Value> {
    let mut cur = v;
    for p in path {
        cur = match p {
            Value::String(k) => cur.get_mut(k.as_str())?,
            Value::Number(i) => cur.get_mut(i.as_u64()? as usize)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// One to three random mutations of `base`.
fn mutate(base: &Value, rng: &mut Rng) -> Value {
    let mut v = base.clone();
    let mut paths = Vec::new();
    leaves(base, &mut Vec::new(), &mut paths);
    let hostile = hostile_values();
    for _ in 0..1 + rng.below(3) {
        let path = rng.pick(&paths).clone();
        match rng.below(6) {
            0 if path.len() > 1 => {
                // delete the field
                let (last, parent) = path.split_last().unwrap();
                if let (Some(Value::Object(m)), Value::String(k)) = (at(&mut v, parent), last) {
                    m.remove(k.as_str());
                }
            }
            1 => {
                // an unknown field next to it
                if let Some(Value::Object(m)) = at(&mut v, &path[..path.len().saturating_sub(1)]) {
                    m.insert("\u{1b}]0;pwned\u{7}unknown".into(), json!(1));
                }
            }
            2 | 3 => {
                // a plausible but extreme size: a power of two up to 2^40 (reaches past
                // validation into the simulator's sizing)
                let p = 1u64 << rng.below(41);
                if let Some(x) = at(&mut v, &path).filter(|x| x.is_u64()) {
                    *x = json!(p);
                }
            }
            _ => {
                if let Some(x) = at(&mut v, &path) {
                    *x = rng.pick(&hostile).clone();
                }
            }
        }
    }
    v
}

/// Hierarchy files: the cases, then mutations of the presets (`n` in all, text).
pub fn hierarchies(presets: &[Value], n: usize, rng: &mut Rng) -> Vec<String> {
    let h = &presets[0];
    let mut out: Vec<String> = Vec::new();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut x = h.clone();
        f(&mut x);
        x.to_string()
    };
    // item 1: 65536 x 65536 L2 sets (wrapped a u32 to 0)
    out.push(with(&|x| {
        x["l2"]["slices"] = json!(65536);
        x["l2"]["sets_per_slice"] = json!(65536);
        x["l2"]["slice_function"] = json!({"masks": (23..39).map(|b| format!("{:#x}", 1u64 << b)).collect::<Vec<_>>()});
        x["l2"]["set_function"] = json!({"masks": (7..23).map(|b| format!("{:#x}", 1u64 << b)).collect::<Vec<_>>()});
        x["dram"]["controllers"] = json!(1);
    }));
    // item 2: 1 TiB and 32 GiB L2s, 2^32-1 SMs and TLB entries, 2^31 L1 sets x 64 ways
    for (sets_log, slices_log) in [(24u32, 5u32), (23, 5), (20, 5)] {
        out.push(with(&|x| {
            x["address_bits"] = json!(44);
            x["dram"]["capacity_bytes"] = json!(1u64 << 42);
            x["dram"]["controllers"] = json!(1);
            x["l2"]["slices"] = json!(1u64 << slices_log);
            x["l2"]["sets_per_slice"] = json!(1u64 << sets_log);
            let top = 7 + sets_log;
            x["l2"]["set_function"] =
                json!({"masks": (7..top).map(|b| format!("{:#x}", 1u64 << b)).collect::<Vec<_>>()});
            x["l2"]["slice_function"] =
                json!({"masks": (top..top + slices_log).map(|b| format!("{:#x}", 1u64 << b)).collect::<Vec<_>>()});
        }));
    }
    out.push(with(&|x| x["sm"]["count"] = json!(4294967295u64)));
    out.push(with(&|x| x["tlb"]["entries"] = json!(4294967295u64)));
    out.push(with(&|x| {
        x["l1"]["sets"] = json!(1u64 << 31);
        x["l1"]["ways"] = json!(64);
        x["l1"]["index_masks"] = json!([]);
        x["address_bits"] = json!(63);
    }));
    out.push(with(&|x| {
        x["sm"]["count"] = json!(65536);
        x["tlb"]["entries"] = json!(1 << 24);
    }));
    out.push(with(&|x| x["name"] = json!("\u{1b}[2J\u{1b}[31mred\u{202e}")));
    // not JSON, truncated, nested, huge
    out.push(String::new());
    out.push("{".into());
    out.push(h.to_string()[..h.to_string().len() / 2].to_string());
    out.push("[".repeat(100_000));
    out.push(format!("{{\"clock_hz\": 1{}}}", "0".repeat(400)));
    out.push("null".into());
    out.push("\"\u{1b}[2J\"".into());
    while out.len() < n {
        let base = rng.pick(presets).clone();
        out.push(mutate(&base, rng).to_string());
    }
    out
}

/// Results files: schema cases, writer-hostile text and numbers, then mutations (`n` in all).
pub fn results(base: &Value, n: usize, rng: &mut Rng) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let with = |f: &dyn Fn(&mut Value)| {
        let mut x = base.clone();
        f(&mut x);
        x.to_string()
    };
    for schema in [json!(1), json!(null), json!("memscope/2"), json!(["memscope/1"]), json!("\u{1b}[2J")] {
        out.push(with(&|x| x["schema"] = schema.clone()));
    }
    out.push(with(&|x| {
        x.as_object_mut().unwrap().remove("schema");
    }));
    let first_series = base["series"].as_object().and_then(|m| m.keys().next().cloned()).unwrap_or_default();
    let first_finding = base["findings"].as_object().and_then(|m| m.keys().next().cloned()).unwrap_or_default();
    let s = first_series.clone();
    // item 3: series values near f64::MAX (log-axis ticks), long series, mismatched lengths
    out.push(with(&|x| {
        x["series"][&s]["y"] =
            json!(vec![1.7976931348623157e308; base["series"][&s]["x"].as_array().map_or(1, Vec::len)])
    }));
    out.push(with(&|x| {
        x["series"][&s]["x"] = json!([5e-324, 1.7976931348623157e308]);
        x["series"][&s]["y"] = json!([5e-324, 1.7976931348623157e308]);
        x["series"][&s]["marks"] = json!([1.7976931348623157e308]);
    }));
    out.push(with(&|x| {
        x["series"][&s]["x"] = json!((0..100_000).map(|i| i as f64).collect::<Vec<_>>());
        x["series"][&s]["y"] = json!((0..100_000).map(|i| i as f64).collect::<Vec<_>>());
    }));
    out.push(with(&|x| x["series"][&s]["y"] = json!([1.0])));
    out.push(with(&|x| x["series"][&s]["x"][0] = json!("1")));
    let f = first_finding.clone();
    // item 8: a wrong type inside a finding; item 11: escapes, HTML, formulas in text
    out.push(with(&|x| x["findings"][&f]["value"] = json!("1")));
    out.push(with(&|x| x["findings"][&f]["cycles"] = json!("1")));
    out.push(with(&|x| x["target"]["name"] = json!("\u{1b}[2J\u{1b}[Hcleared")));
    out.push(with(&|x| x["findings"][&f]["note"] = json!("=HYPERLINK(\"http://x\",\"y\")")));
    out.push(with(&|x| x["findings"][&f]["method"] = json!("<script>alert(1)</script> | *x* `y`")));
    out.push(with(&|x| x["findings"]["\u{1b}[31m=cmd|' /C calc'!A0"] = base["findings"][&f].clone()));
    out.push(with(&|x| x["findings"][&f]["value"] = json!(1.7976931348623157e308)));
    out.push(with(&|x| x["findings"] = json!({})));
    out.push(with(&|x| x["findings"] = json!([])));
    out.push(with(&|x| x["probes"] = json!({"p@cpu": {"target": "cpu", "status": "\u{1b}[2J", "duration_s": 1e308}})));
    out.push(String::new());
    out.push("{\"schema\": \"memscope/1\"}".into());
    out.push("[".repeat(100_000));
    while out.len() < n {
        out.push(mutate(base, rng).to_string());
    }
    out
}
