//! Parsing of the bottleneck model's ceilings on the command line: a time ("4us", "3.98 µs",
//! "500ns", "2e-6" seconds), a bandwidth ("4.6TB/s", "306.7e9" bytes per second) and an arithmetic
//! rate ("51.3TFLOP/s", "6.3e12" FLOP per second). Prefixes are decimal (SI), as datasheets quote
//! them. Errors are one line naming the text and what is accepted.

/// Split "4.6TB/s" into (4.6, "TB/s"): the longest leading float (an exponent counts only when
/// digits follow the e).
fn split_number(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let b = t.as_bytes();
    let mut end = 0;
    while end < b.len() {
        let c = b[end];
        let exponent = (c == b'e' || c == b'E')
            && end > 0
            && b.get(end + 1).is_some_and(|d| {
                d.is_ascii_digit() || ((*d == b'-' || *d == b'+') && b.get(end + 2).is_some_and(u8::is_ascii_digit))
            });
        if c.is_ascii_digit() || c == b'.' || (end == 0 && (c == b'-' || c == b'+')) {
            end += 1;
        } else if exponent {
            end += 2;
        } else {
            break;
        }
    }
    let v: f64 = t[..end].parse().ok()?;
    Some((v, t[end..].trim()))
}

fn positive(v: f64, flag: &str, text: &str) -> Result<f64, String> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{flag} {text}: must be a positive number"))
    }
}

/// A time in seconds: a plain number is seconds; suffixes s, ms, us, µs, ns.
pub fn seconds(text: &str, flag: &str) -> Result<f64, String> {
    let bad = || format!("{flag} {text:?} is not a time (accepted: 4us, 3.98 µs, 500ns, 2ms, 4e-6 seconds)");
    let (v, unit) = split_number(text).ok_or_else(bad)?;
    let scale = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" | "μs" => 1e-6,
        "ns" => 1e-9,
        _ => return Err(bad()),
    };
    positive(v * scale, flag, text)
}

fn si_prefix(p: &str) -> Option<f64> {
    Some(match p {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        _ => return None,
    })
}

/// A rate per second with `unit` ("B/s" or "FLOP/s"): a plain number, or an SI prefix with or
/// without the unit ("4.6T", "4.6TB/s", "794 TFLOP/s"; "FLOPS" is taken for "FLOP/s").
pub fn rate(text: &str, flag: &str, unit: &str) -> Result<f64, String> {
    let example = if unit == "B/s" { "4.6TB/s, 306.7GB/s, 306.7e9" } else { "51.3TFLOP/s, 794T, 6.3e12" };
    let bad = || format!("{flag} {text:?} is not a rate in {unit} (accepted: {example})");
    let (v, rest) = split_number(text).ok_or_else(bad)?;
    let rest = rest.trim();
    let stripped = [unit, "FLOPS", "FLOP/s", "B/s"]
        .iter()
        .filter(|u| unit != "B/s" || **u == "B/s")
        .find_map(|u| rest.strip_suffix(u))
        .unwrap_or(rest)
        .trim();
    let scale = si_prefix(stripped).ok_or_else(bad)?;
    positive(v * scale, flag, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn times_with_and_without_units() {
        assert_eq!(seconds("2", "--launch"), Ok(2.0));
        assert!((seconds("4us", "--launch").unwrap() - 4e-6).abs() < 1e-18);
        assert!((seconds("3.98 µs", "--launch").unwrap() - 3.98e-6).abs() < 1e-18);
        assert!((seconds("500ns", "--launch").unwrap() - 5e-7).abs() < 1e-18);
        assert!((seconds("12e-6", "--launch").unwrap() - 12e-6).abs() < 1e-18);
        assert!((seconds("8.3e-3s", "--launch").unwrap() - 8.3e-3).abs() < 1e-15);
        assert!(seconds("4 parsecs", "--launch").unwrap_err().contains("4 parsecs"));
        assert!(seconds("-1us", "--launch").unwrap_err().contains("positive"));
        assert!(seconds("", "--launch").is_err());
    }
    #[test]
    fn rates_with_prefixes() {
        assert_eq!(rate("306.7e9", "--bandwidth", "B/s"), Ok(306.7e9));
        assert!((rate("4.6TB/s", "--bandwidth", "B/s").unwrap() - 4.6e12).abs() < 1.0);
        assert!((rate("306.7 GB/s", "--bandwidth", "B/s").unwrap() - 306.7e9).abs() < 1.0);
        assert!((rate("51.3TFLOP/s", "--peak", "FLOP/s").unwrap() - 51.3e12).abs() < 1.0);
        assert!((rate("794T", "--peak", "FLOP/s").unwrap() - 794e12).abs() < 1.0);
        assert!(rate("4.6TFLOP/s", "--bandwidth", "B/s").is_err(), "FLOP/s is not a bandwidth");
        assert!(rate("4.6Q", "--peak", "FLOP/s").unwrap_err().contains("4.6Q"));
        assert!(rate("0", "--peak", "FLOP/s").is_err());
        assert!(rate("inf", "--peak", "FLOP/s").is_err());
    }
}
