//! Output hygiene for text that comes from input files (a results file's target name, a finding's
//! note, a method string): terminal text with control characters made visible (an ANSI escape
//! in a target name must not clear the screen), Markdown with HTML and emphasis markup escaped,
//! CSV cells that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR first)
//! neutralised with a leading apostrophe (the OWASP advice for CSV injection).

/// `s` with every control character except newline written as a visible escape (`\u{1b}`), so
/// printing it cannot move the cursor, recolour or clear the terminal. Tabs are kept. Unicode
/// bidirectional overrides (U+202A-E, U+2066-9) are escaped too.
pub fn terminal(s: &str) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if needs_escape(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Text for a Markdown table cell or line: HTML markup as entities, Markdown punctuation
/// backslash-escaped, pipes escaped, line breaks as spaces, other control characters dropped.
pub fn markdown(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c if needs_escape(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// A Markdown code span holding `s` literally: fenced by one more backtick than the longest run
/// inside, control characters dropped, line breaks as spaces, pipes escaped for tables.
pub fn markdown_code(s: &str) -> String {
    let clean: String = s
        .chars()
        .filter_map(|c| match c {
            '\n' | '\r' => Some(' '),
            c if needs_escape(c) => None,
            c => Some(c),
        })
        .collect();
    let mut longest = 0;
    let mut run = 0;
    for c in clean.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if clean.starts_with('`') || clean.ends_with('`') { " " } else { "" };
    format!("{fence}{pad}{}{pad}{fence}", clean.replace('|', "\\|"))
}

/// A CSV cell that no spreadsheet evaluates: text starting with `=`, `+`, `-`, `@`, tab or CR
/// gets a leading apostrophe, unless the whole cell is a number ("-1.5" stays a number).
pub fn csv_cell(s: &str) -> String {
    let risky = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if risky && s.trim().parse::<f64>().is_err() {
        format!("'{s}")
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_controls_but_keeps_text() {
        assert_eq!(terminal("NVIDIA H200"), "NVIDIA H200");
        assert_eq!(terminal("a\u{1b}[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(terminal("x\u{7}\u{9b}y\n"), "x\\u{7}\\u{9b}y\n");
        assert_eq!(terminal("\u{202e}abc"), "\\u{202e}abc");
        assert!(!terminal("\r\u{8}").contains(['\r', '\u{8}']));
    }

    #[test]
    fn markdown_escapes_html_and_markup() {
        assert_eq!(markdown("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
        assert_eq!(markdown("a|b *c* [x](y)"), "a\\|b \\*c\\* \\[x\\](y)");
        assert_eq!(markdown("l\n2\u{1b}"), "l 2");
        assert_eq!(markdown_code("l1.hit_latency_ns"), "`l1.hit_latency_ns`");
        assert_eq!(markdown_code("a`b"), "``a`b``");
        assert_eq!(markdown_code("`x|"), "`` `x\\| ``");
    }

    #[test]
    fn csv_formulas_are_neutralised_numbers_kept() {
        assert_eq!(csv_cell("=HYPERLINK(\"http://x\")"), "'=HYPERLINK(\"http://x\")");
        assert_eq!(csv_cell("+1+2"), "'+1+2");
        assert_eq!(csv_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_cell("-1.5"), "-1.5");
        assert_eq!(csv_cell("-2e-9"), "-2e-9");
        assert_eq!(csv_cell("-cmd|' /C calc'!A0"), "'-cmd|' /C calc'!A0");
        assert_eq!(csv_cell("pointer chase"), "pointer chase");
    }
}
