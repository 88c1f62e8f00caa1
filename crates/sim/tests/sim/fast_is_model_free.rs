//! The simulator's speed kernels (src/fast/, docs/ARCHITECTURE.md "The simulator") depend on nothing
//! of the model: the model uses them, never the reverse. A scan of their sources outside the unit
//! tests (which compare with the model) finds no path into the rest of the crate.

use std::path::PathBuf;

/// A kernel file's code before its unit tests.
fn code_before_tests(text: &str) -> &str {
    text.find("#[cfg(test)]\nmod tests").map_or(text, |i| &text[..i])
}

/// The crate paths `code` names outside `crate::fast`.
fn model_paths(code: &str) -> Vec<String> {
    code.match_indices("crate::")
        .map(|(i, _)| code[i..].split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).next().unwrap_or(""))
        .filter(|p| !p.starts_with("crate::fast"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_speed_kernels_name_nothing_of_the_model() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src").join("fast");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).expect("src/fast").flatten().map(|e| e.path()).collect();
    files.retain(|p| p.extension().is_some_and(|x| x == "rs"));
    assert!(files.len() >= 4, "the scan found the kernels: {files:?}");
    for p in files {
        let text = std::fs::read_to_string(&p).expect("read");
        let code = code_before_tests(&text);
        let named = model_paths(code);
        assert!(named.is_empty(), "{} names the model: {named:?}", p.display());
        assert!(!code.contains("super::super"), "{} reaches above fast/", p.display());
    }
}

#[test]
fn the_scan_sees_a_model_path() {
    assert_eq!(model_paths("use crate::cache::Cache; use crate::fast::simd;"), vec!["crate::cache::Cache".to_string()]);
    assert_eq!(code_before_tests("a\n#[cfg(test)]\nmod tests { use crate::tlb::SplitMix; }"), "a\n");
}
