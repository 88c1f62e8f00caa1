//! The option syntax of a GPGPU-Sim configuration file, as its option parser reads one
//! (gpgpu-sim_distribution src/option_parser.cc, `ParseFile`): a `#` starts a comment to the end
//! of the line, the rest is a stream of whitespace-separated tokens, each option name (`-name`)
//! followed by one value token (a value in double quotes may hold spaces). Used to check what the
//! exporter writes.

/// One option of a parsed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opt {
    /// 1-based line of the option name.
    pub line: usize,
    /// The name with its leading dash ("-gpgpu_n_mem").
    pub name: String,
    pub value: String,
}

/// Parse a configuration's text; the error names the line and the token.
pub fn parse(text: &str) -> Result<Vec<Opt>, String> {
    let mut tokens: Vec<(usize, String)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split('#').next().unwrap_or("");
        let mut rest = code.trim_start();
        while !rest.is_empty() {
            let (tok, tail) = if let Some(q) = rest.strip_prefix('"') {
                let end = q.find('"').ok_or_else(|| format!("line {}: unclosed quote in {rest:?}", i + 1))?;
                (format!("\"{}\"", &q[..end]), &q[end + 1..])
            } else {
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                (rest[..end].to_string(), &rest[end..])
            };
            tokens.push((i + 1, tok));
            rest = tail.trim_start();
        }
    }
    let mut out = Vec::new();
    let mut it = tokens.into_iter();
    while let Some((line, name)) = it.next() {
        let ok = name.len() > 1
            && name.starts_with('-')
            && name[1..].starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
        if !ok {
            return Err(format!("line {line}: {name:?} is not an option name (-name)"));
        }
        let Some((_, value)) = it.next() else {
            return Err(format!("line {line}: option {name} has no value"));
        };
        if value.starts_with('-') && value[1..].starts_with(|c: char| c.is_ascii_alphabetic()) {
            return Err(format!("line {line}: option {name} has no value (next token {value})"));
        }
        out.push(Opt { line, name, value });
    }
    Ok(out)
}

/// The option names of the committed list (data/accel-sim-options.txt), without comments.
pub fn known_names() -> Vec<&'static str> {
    include_str!("../data/accel-sim-options.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_comments_and_quotes() {
        let o = parse("# top\n-a 1 # note\n\n-b \"x y\" -c S:4:128:64,L:T:m:L:L\n").unwrap();
        let got: Vec<(&str, &str, usize)> = o.iter().map(|x| (x.name.as_str(), x.value.as_str(), x.line)).collect();
        assert_eq!(got, vec![("-a", "1", 2), ("-b", "\"x y\"", 4), ("-c", "S:4:128:64,L:T:m:L:L", 4)]);
    }

    #[test]
    fn malformed_text_is_refused_with_its_line() {
        assert!(parse("-a\n").unwrap_err().contains("line 1"));
        assert!(parse("-a -b 2\n").unwrap_err().contains("no value"));
        assert!(parse("x 1\n").unwrap_err().contains("not an option name"));
        assert!(parse("-a \"open\n").unwrap_err().contains("unclosed"));
    }

    #[test]
    fn the_list_has_the_core_options() {
        let names = known_names();
        for n in ["-gpgpu_cache:dl2", "-gpgpu_n_mem", "-gpgpu_clock_domains", "-dram_latency", "-network_mode"] {
            assert!(names.contains(&n), "{n}");
        }
        assert!(names.len() > 100);
    }
}
