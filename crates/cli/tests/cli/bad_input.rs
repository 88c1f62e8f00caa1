//! The bad-input contract of docs/CONTRACTS.md: exit code 2 and one line naming the offending value and
//! what is accepted; no panic, no backtrace, no earlier results file damaged.

use std::process::{Command, Output};

fn memscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memscope")).args(args).env("RUST_BACKTRACE", "1").output().expect("run memscope")
}

/// Exit 2, a single line on stderr containing `needle`, no panic text.
fn assert_usage_error(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "want one line, got: {stderr}");
    assert!(stderr.contains(needle), "{needle:?} not named in: {stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"), "panic: {stderr}");
}

#[test]
fn unknown_target_is_named() {
    let out = memscope(&["run", "--target", "foo", "--out", "/tmp/memscope-test-unused"]);
    assert_usage_error(&out, "foo");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cpu"), "accepted values listed");
}

#[test]
fn unknown_sim_preset_is_named() {
    let out = memscope(&["run", "--target", "sim:nosuchgpu"]);
    assert_usage_error(&out, "nosuchgpu");
}

#[test]
fn unknown_probe_is_named_and_results_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    std::fs::write(&results, b"{\"schema\": \"memscope/1\", \"earlier\": true}\n").unwrap();
    let out = memscope(&["run", "--target", "cpu", "--probes", "nosuch", "--out", dir.path().to_str().unwrap()]);
    assert_usage_error(&out, "nosuch");
    assert_eq!(std::fs::read(&results).unwrap(), b"{\"schema\": \"memscope/1\", \"earlier\": true}\n");
}

#[test]
fn unwritable_out_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    // A folder below a regular file can never be created, even as root.
    let bad = file.join("sub");
    let out = memscope(&["run", "--target", "cpu", "--out", bad.to_str().unwrap()]);
    assert_usage_error(&out, "sub");
}

#[test]
fn unknown_flag_is_named_with_the_usage_line() {
    // Argument errors print clap's whole message: the error naming the value first, then usage.
    let out = memscope(&["run", "--frobnicate"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.lines().next().unwrap_or("").contains("--frobnicate"), "first line names it: {stderr}");
    assert!(stderr.contains("Usage: memscope run"), "usage line: {stderr}");
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
}

#[test]
fn bad_sim_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("h.json");
    std::fs::write(&f, b"{\"name\": \"x\", \"bogus_field\": 1}").unwrap();
    let out = memscope(&["run", "--target", &format!("sim:{}", f.display()), "--out", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!dir.path().join("results.json").exists(), "no results for a run that never started");
}

#[test]
fn size_that_does_not_parse_is_named() {
    // A value clap's parser refuses: clap's message, whose first line names the value and what is
    // accepted, then the hint to --help.
    let out = memscope(&["sim", "chase", "--preset", "rtx4090", "--footprint", "12x"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    let first = stderr.lines().next().unwrap_or("");
    assert!(first.contains("12x") && first.contains("KiB"), "value and accepted forms on the first line: {stderr}");
    assert!(stderr.contains("--help"), "the hint: {stderr}");
}
