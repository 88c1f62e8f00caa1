//! Output hygiene for text that comes from input files (a results file's target name, a finding's
//! note, a method string): terminal text with control characters made visible (an ANSI escape
//! in a target name must not clear the screen), Markdown with HTML and emphasis markup escaped,
//! CSV cells that a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, tab, CR first)
//! neutralised with a leading apostrophe (the OWASP advice for CSV injection), HTML with markup,
//! quotes and control characters escaped. One function per output kind, used by every writer of
//! that kind (JSON: `json::to_pretty`; simulator configs: the exporter's `config_comment`).

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
/// inside, control characters dropped, line breaks as spaces, pipes escaped for tables. Text
/// with `<` or `>` is written as escaped text (`markdown`) instead.
pub fn markdown_code(s: &str) -> String {
    // (HTML markup stays out of the page even as code: such text is escaped instead)
    if s.contains(['<', '>']) {
        return markdown(s);
    }
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

/// A CSV cell that no spreadsheet evaluates and that holds no control character: line breaks and
/// tabs as spaces, other control characters and bidi overrides as visible escapes; text starting
/// with `=`, `+`, `-`, `@` gets a leading apostrophe, unless the whole cell is a number ("-1.5"
/// stays a number).
pub fn csv_cell(s: &str) -> String {
    let s: String = if s.chars().any(needs_escape) || s.contains(['\n', '\t']) {
        s.chars()
            .map(|c| match c {
                '\n' | '\r' | '\t' => " ".to_string(),
                c if needs_escape(c) => c.escape_unicode().to_string(),
                c => c.to_string(),
            })
            .collect()
    } else {
        s.to_string()
    };
    let risky = s.trim_start().starts_with(['=', '+', '-', '@']);
    if risky && s.trim().parse::<f64>().is_err() {
        format!("'{s}")
    } else {
        s
    }
}

/// Text for HTML (element content and quoted attribute values): `& < > " '` as entities, control
/// characters other than newline and tab and bidi overrides as visible escapes (`\u{1b}`).
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if needs_escape(c) => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
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
    fn html_escapes_markup_quotes_and_controls() {
        assert_eq!(html("<script>'x'&\"y\"</script>"), "&lt;script&gt;&#39;x&#39;&amp;&quot;y&quot;&lt;/script&gt;");
        assert_eq!(html("a\u{1b}[2J\u{7}\u{9b}\u{202e}b\nc"), "a\\u{1b}[2J\\u{7}\\u{9b}\\u{202e}b\nc");
    }

    #[test]
    fn csv_cells_hold_no_control_characters() {
        assert_eq!(csv_cell("a\nb\u{1b}c\u{85}"), "a b\\u{1b}c\\u{85}");
        assert_eq!(csv_cell("\t=1+2"), "' =1+2");
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
