//! The one parser of numeric command-line values (docs/CONTRACTS.md "Quantities"): counts
//! ("4096", "4k", "16M", "16e6"), model amounts ("1T" FLOPs, "1e9" bytes), times ("4us",
//! "3.98 µs", "500ns", "2ms", "1s"; a bare number is refused: the unit must be written), bandwidths
//! ("4.6TB/s", "306.7e9" bytes per second) and arithmetic rates ("51.3TFLOP/s", "6.3e12" FLOP per
//! second). Counts take binary multiples (k = 1024, as `sim vadd --n 16M` always has: 16M is
//! 16,777,216); amounts and rates take decimal (SI) prefixes, as datasheets quote them. Byte sizes
//! of caches and footprints are `crate::sizes::parse_size`. Errors are one line naming the text
//! and what is accepted.

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

/// A time in seconds, with its unit: s, ms, us, µs, ns. A bare number is refused (a launch floor
/// of "4" would silently mean four seconds).
pub fn seconds(text: &str, flag: &str) -> Result<f64, String> {
    let bad = || format!("{flag} {text:?} is not a time (accepted: 4us, 3.98 µs, 500ns, 2ms, 4e-6s)");
    let (v, unit) = split_number(text).ok_or_else(bad)?;
    let scale = match unit {
        "" => {
            return Err(format!(
                "{flag} {text}: add a unit (s, ms, us or ns), e.g. {text}us or {text}s; a bare number is ambiguous"
            ))
        }
        "s" => 1.0,
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

/// Binary multiples for counts: k/K = 2^10, M = 2^20, G = 2^30, T = 2^40 (also written Ki, Mi,
/// Gi, Ti).
fn binary_prefix(p: &str) -> Option<u64> {
    Some(match p {
        "" => 1,
        "k" | "K" | "Ki" => 1 << 10,
        "M" | "Mi" => 1 << 20,
        "G" | "Gi" => 1 << 30,
        "T" | "Ti" => 1 << 40,
        _ => return None,
    })
}

/// A whole count (elements, matrix dimensions, warps, hops): "4096", "4k" (4096), "16M"
/// (16,777,216), "16e6" (16,000,000), "1_000_000". Refused: fractions, negatives, 2^64 and more.
pub fn count(text: &str) -> Result<u64, String> {
    let bad = || format!("{text:?} is not a count (accepted: 4096, 4k = 4096, 16M = 16777216, 16e6)");
    let t = text.trim().replace('_', "");
    if let Ok(n) = t.parse::<u64>() {
        return Ok(n);
    }
    let (v, prefix) = split_number(&t).ok_or_else(bad)?;
    let mult = binary_prefix(prefix).ok_or_else(bad)?;
    let total = v * mult as f64;
    if !total.is_finite() || total < 0.0 || t.starts_with('-') {
        return Err(format!("{text:?}: a count must not be negative"));
    }
    if total.fract() != 0.0 {
        return Err(format!("{text:?} is not a whole count"));
    }
    // (u64::MAX as f64 is 2^64 itself, one past the largest u64)
    if total >= u64::MAX as f64 {
        return Err(format!("{text:?} is too large (at most {})", u64::MAX));
    }
    Ok(total as u64)
}

/// A non-negative amount of the model (FLOPs, bytes moved): a number with an optional decimal
/// prefix k, M, G, T, P ("1T" = 1e12, "2.5G", "1e9").
pub fn amount(text: &str) -> Result<f64, String> {
    let bad = || format!("{text:?} is not an amount (accepted: 1e12, 1T = 1e12, 2.5G, 4096)");
    let (v, prefix) = split_number(text).ok_or_else(bad)?;
    let total = v * si_prefix(prefix).ok_or_else(bad)?;
    if total.is_finite() && total >= 0.0 {
        Ok(total)
    } else {
        Err(format!("{text:?}: must be a non-negative number"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn counts_take_binary_multiples_and_exponents() {
        assert_eq!(count("4096"), Ok(4096));
        assert_eq!(count("4k"), Ok(4096));
        assert_eq!(count("4K"), Ok(4096));
        assert_eq!(count("16M"), Ok(16 << 20));
        assert_eq!(count("16Mi"), Ok(16 << 20));
        assert_eq!(count("1G"), Ok(1 << 30));
        assert_eq!(count("2T"), Ok(2 << 40));
        assert_eq!(count("16e6"), Ok(16_000_000));
        assert_eq!(count("1.5k"), Ok(1536));
        assert_eq!(count("1_000_000"), Ok(1_000_000));
        assert_eq!(count("18446744073709551615"), Ok(u64::MAX));
        assert!(count("1.5").unwrap_err().contains("whole"));
        assert!(count("-4").is_err());
        assert!(count("4x").unwrap_err().contains("\"4x\""));
        assert!(count("").is_err());
        assert!(count("1e30").unwrap_err().contains("too large"));
    }
    #[test]
    fn amounts_take_decimal_prefixes() {
        assert_eq!(amount("1T"), Ok(1e12));
        assert_eq!(amount("1e12"), Ok(1e12));
        assert_eq!(amount("2.5G"), Ok(2.5e9));
        assert_eq!(amount("0"), Ok(0.0));
        assert!(amount("-1").is_err());
        assert!(amount("1Q").unwrap_err().contains("1Q"));
    }
    #[test]
    fn times_need_their_unit() {
        let bare = seconds("2", "--launch").unwrap_err();
        assert!(bare.contains("--launch 2") && bare.contains("add a unit"), "{bare}");
        assert!(seconds("12e-6", "--launch").unwrap_err().contains("add a unit"));
        assert_eq!(seconds("2s", "--launch"), Ok(2.0));
        assert!((seconds("4us", "--launch").unwrap() - 4e-6).abs() < 1e-18);
        assert!((seconds("3.98 µs", "--launch").unwrap() - 3.98e-6).abs() < 1e-18);
        assert!((seconds("500ns", "--launch").unwrap() - 5e-7).abs() < 1e-18);
        assert!((seconds("12e-6s", "--launch").unwrap() - 12e-6).abs() < 1e-18);
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
