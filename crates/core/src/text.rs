//! Numbers in the notes and reasons that probes write for users (docs/READING.md): lists of
//! measurements as plain text with their unit ("15.4, 16.2, 31 ns"), never Rust's debug form.

/// `x` with at most `digits` significant digits, trailing zeros dropped ("15.4", "1008", "0.0213").
pub fn sig(x: f64, digits: usize) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x == 0.0 {
        return "0".into();
    }
    let mag = x.abs().log10().floor() as i32;
    if !(-4..15).contains(&mag) {
        return format!("{:.*e}", digits.saturating_sub(1), x);
    }
    let decimals = (digits as i32 - 1 - mag).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A list of measurements with one unit at the end: "15.4, 16.2, 31 ns" (4 significant digits).
pub fn numbers(xs: &[f64], unit: &str) -> String {
    let list = xs.iter().map(|x| sig(*x, 4)).collect::<Vec<_>>().join(", ");
    if unit.is_empty() || xs.is_empty() {
        list
    } else {
        format!("{list} {unit}")
    }
}

/// An integer with thousands separators ("294,912").
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn lists_read_as_text() {
        assert_eq!(numbers(&[15.4, 16.2123, 31.0], "ns"), "15.4, 16.21, 31 ns");
        assert_eq!(numbers(&[], "ns"), "");
        assert_eq!(grouped(294912), "294,912");
        assert_eq!(grouped(12), "12");
        assert_eq!(sig(0.021349, 3), "0.0213");
    }
}
