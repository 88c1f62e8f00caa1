//! Human-readable formatting of finding values by unit (ns/µs, B/KiB/MiB, GB/s, TFLOP/s, cycles)
//! for the terminal datasheet, Markdown, HTML and plot axes. Units are those of `Finding::unit`
//! (docs/CONTRACTS.md, the results JSON); unknown units fall back to the number plus the unit text.

use serde_json::Value;

/// A number with `sig` significant digits, no exponent for ordinary magnitudes, trailing zeros
/// trimmed ("15.4", "1008", "0.0213").
pub fn sig(x: f64, sig: usize) -> String {
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".into();
    }
    let mag = x.abs().log10().floor() as i32;
    if !(-4..15).contains(&mag) {
        let s = format!("{:.*e}", sig.saturating_sub(1), x);
        return match s.split_once('e') {
            Some((m, e)) if m.contains('.') => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
            _ => s,
        };
    }
    let decimals = (sig as i32 - 1 - mag).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// An integer with thin grouping ("4,194,304").
pub fn grouped(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// Seconds, scaled to ns, µs, ms or s.
pub fn seconds(s: f64) -> String {
    let a = s.abs();
    if a == 0.0 {
        "0 s".into()
    } else if a < 1e-12 {
        // below a thousandth of a nanosecond: zero within any timer's resolution
        "≈ 0 ns".into()
    } else if a < 1e-6 {
        format!("{} ns", sig(s * 1e9, 4))
    } else if a < 1e-3 {
        format!("{} µs", sig(s * 1e6, 4))
    } else if a < 1.0 {
        format!("{} ms", sig(s * 1e3, 4))
    } else {
        format!("{} s", sig(s, 4))
    }
}

/// Bytes in binary units (B, KiB, MiB, GiB, TiB): exact multiples print without decimals.
pub fn bytes(b: f64) -> String {
    const NAMES: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    while v.abs() >= 1024.0 && i + 1 < NAMES.len() {
        v /= 1024.0;
        i += 1;
    }
    if v.fract() == 0.0 {
        format!("{} {}", v as i64, NAMES[i])
    } else {
        format!("{} {}", sig(v, 4), NAMES[i])
    }
}

/// A rate with SI prefixes: `rate(1.008e12, "B/s")` is "1.008 TB/s".
pub fn si(x: f64, unit: &str) -> String {
    let a = x.abs();
    let (div, p) = if a >= 1e15 {
        (1e15, "P")
    } else if a >= 1e12 {
        (1e12, "T")
    } else if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!("{} {p}{unit}", sig(x / div, 4))
}

/// A number in `unit` (a `Finding::unit`), human-readable with its unit.
pub fn number(x: f64, unit: &str) -> String {
    match unit {
        "ns" | "us" | "µs" | "ms" | "s" if x == 0.0 => format!("0 {unit}"),
        "ns" => seconds(x * 1e-9),
        "us" | "µs" => seconds(x * 1e-6),
        "ms" => seconds(x * 1e-3),
        "s" => seconds(x),
        "bytes" | "B" => bytes(x),
        "bytes/s" | "B/s" => si(x, "B/s"),
        "flops/s" | "FLOP/s" => si(x, "FLOP/s"),
        "flops" => si(x, "FLOP"),
        "Hz" | "hz" => si(x, "Hz"),
        "bytes/cycle" => format!("{} B/cycle", sig(x, 4)),
        "ops/s" => si(x, "op/s"),
        "ops/cycle" => format!("{} op/cycle", sig(x, 4)),
        "cycles" => format!("{} cycles", sig(x, 4)),
        "ratio" | "fraction" => {
            if (0.0..=1.0).contains(&x) {
                format!("{} %", sig(x * 100.0, 3))
            } else {
                sig(x, 4)
            }
        }
        "" | "count" => plain(x),
        u => {
            let n = plain(x);
            format!("{n} {u}")
        }
    }
}

fn plain(x: f64) -> String {
    // Whole numbers, and any count of 1000 or more (an estimate like 36918.4 sits next to 36,864
    // in the same table), print as grouped integers.
    if (x.fract() == 0.0 || x.abs() >= 1000.0) && x.abs() < 1e15 {
        grouped(x.round() as i64)
    } else {
        sig(x, 4)
    }
}

/// A finding value (number, string, list or null) in `unit`.
pub fn value(v: &Value, unit: &str) -> String {
    match v {
        Value::Null => "undetermined".into(),
        Value::Number(n) => n.as_f64().map(|x| number(x, unit)).unwrap_or_else(|| n.to_string()),
        Value::String(s) if s.is_empty() => "(empty text)".into(),
        Value::String(s) => s.clone(),
        Value::Array(a) if a.is_empty() => "none".into(),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(|x| value(x, "")).collect();
            let all_num = a.iter().all(Value::is_number);
            if all_num && !unit.is_empty() {
                format!("{} {unit}", parts.join(", "))
            } else {
                parts.join(", ")
            }
        }
        Value::Object(o) => {
            o.iter().map(|(k, x)| format!("{}: {}", k.replace('_', " "), value(x, ""))).collect::<Vec<_>>().join("; ")
        }
    }
}

/// Short tick label for an axis value in `unit` (fewer digits than `number`).
pub fn tick(x: f64, unit: &str) -> String {
    match unit {
        "bytes" | "B" => {
            let s = bytes(x);
            s.replace(" KiB", "K").replace(" MiB", "M").replace(" GiB", "G").replace(" TiB", "T").replace(" B", "B")
        }
        "ns" | "s" | "bytes/s" | "B/s" | "flops/s" | "FLOP/s" => number(x, unit),
        _ => sig(x, 3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits_trim_and_round() {
        assert_eq!(sig(15.4, 4), "15.4");
        assert_eq!(sig(1008.0, 4), "1008");
        assert_eq!(sig(0.021349, 3), "0.0213");
        assert_eq!(sig(2.5e-7, 3), "2.5e-7");
    }

    #[test]
    fn units_scale_to_readable_prefixes() {
        assert_eq!(number(15.4, "ns"), "15.4 ns");
        assert_eq!(number(1234.0, "ns"), "1.234 µs");
        assert_eq!(number(3.5e-6, "s"), "3.5 µs");
        assert_eq!(number(131072.0, "bytes"), "128 KiB");
        assert_eq!(number(75497472.0, "bytes"), "72 MiB");
        assert_eq!(number(1.5e9 * 1024.0, "bytes"), "1.397 TiB");
        assert_eq!(number(1.008e12, "bytes/s"), "1.008 TB/s");
        assert_eq!(number(8.26e13, "flops/s"), "82.6 TFLOP/s");
        assert_eq!(number(0.02, "ratio"), "2 %");
        assert_eq!(number(2.5e9, "ops/s"), "2.5 Gop/s");
        assert_eq!(number(32.0, "ops/cycle"), "32 op/cycle");
        assert_eq!(number(4194304.0, "count"), "4,194,304");
        assert_eq!(number(4.0, "ways"), "4 ways");
        assert_eq!(value(&serde_json::json!(["0x1", "0x2"]), ""), "0x1, 0x2");
        assert_eq!(value(&Value::Null, "ns"), "undetermined");
        // no exponent on a time, no raw JSON, no blank cell
        assert_eq!(number(2.492e-9, "ns"), "≈ 0 ns");
        assert_eq!(
            value(&serde_json::json!({"ways": 16, "sets_per_slice": [1, 2]}), ""),
            "ways: 16; sets per slice: 1, 2"
        );
        assert_eq!(value(&serde_json::json!([]), "ns"), "none");
        assert_eq!(value(&serde_json::json!(""), ""), "(empty text)");
    }
}
