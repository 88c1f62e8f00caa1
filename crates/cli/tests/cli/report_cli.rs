//! `memscope report` and `memscope compare` end to end: the exit-2 contract for a missing or
//! malformed results file (one line naming the file), the Markdown and CSV files, the summary
//! table, and compare's ratios. Uses a results file written by `memscope report`'s own library
//! fixture (memscope_results::sample, not a measurement), so no probe has to run.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_memscope");

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("run memscope");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn fixture(dir: &std::path::Path, name: &str, l1_ns: f64) -> String {
    let mut r = memscope_results::sample::results();
    r.findings.get_mut("l1.hit_latency_ns").unwrap().value = serde_json::json!(l1_ns);
    let p = dir.join(name);
    std::fs::write(&p, memscope_results::json::to_bytes(&r)).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn missing_or_malformed_results_exit_2_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.json");
    let (code, _, err) = run(&["report", missing.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("nope.json"), "{err}");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"schema\": \"memscope/1\", \"tool\": 3}").unwrap();
    let (code, _, err) = run(&["report", bad.to_str().unwrap(), "--html", dir.path().join("x.html").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.json") && err.trim().lines().count() == 1, "{err}");
    assert!(!dir.path().join("x.html").exists(), "no output for bad input");
    let good = fixture(dir.path(), "a.json", 15.4);
    let (code, _, err) = run(&["compare", good.as_str(), missing.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("nope.json"), "{err}");
}

#[test]
fn report_and_compare_read_gzip_results_files() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let plain = fixture(dir.path(), "a.json", 15.4);
    let gz = dir.path().join("b.json.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(&std::fs::read(&plain).unwrap()).unwrap();
    std::fs::write(&gz, e.finish().unwrap()).unwrap();
    let gz = gz.to_str().unwrap();
    let (code, out, err) = run(&["report", gz]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("L1 cache") && out.contains("15.4 ns"), "{out}");
    let (code, out, err) = run(&["compare", plain.as_str(), gz]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("15.4"), "{out}");
    // Cut short: exit 2, one line naming the file.
    let cut = dir.path().join("cut.json.gz");
    let bytes = std::fs::read(gz).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let (code, _, err) = run(&["report", cut.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cut.json.gz") && err.trim().lines().count() == 1, "{err}");
}

#[test]
fn report_writes_md_and_csv_and_prints_the_datasheet() {
    let dir = tempfile::tempdir().unwrap();
    let a = fixture(dir.path(), "a.json", 15.4);
    let (code, out, _) = run(&["report", a.as_str()]);
    assert_eq!(code, 0);
    assert!(out.contains("L1 cache") && out.contains("15.4 ns"), "{out}");
    let md = dir.path().join("r.md");
    let csv = dir.path().join("r.csv");
    let (code, _, err) = run(&["report", a.as_str(), "--md", md.to_str().unwrap(), "--csv", csv.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&md).unwrap().contains("| hit latency | `l1.hit_latency_ns` | 15.4 ns |"));
    assert!(std::fs::read_to_string(&csv).unwrap().starts_with("key,value,unit,"));
}

#[test]
fn compare_prints_both_values_and_the_ratio() {
    let dir = tempfile::tempdir().unwrap();
    let a = fixture(dir.path(), "a.json", 15.4);
    let b = fixture(dir.path(), "b.json", 30.8);
    let html = dir.path().join("c.html");
    let (code, out, err) = run(&["compare", a.as_str(), b.as_str(), "--html", html.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // Each row starts with its mark (`*`: moved beyond its spread) and a space.
    let line = out.lines().find(|l| l.get(2..).is_some_and(|r| r.starts_with("l1.hit_latency_ns"))).expect("l1 row");
    assert!(line.contains("15.4 ns") && line.contains("30.8 ns") && line.contains("2×"), "{line}");
    assert!(line.starts_with('*'), "a doubled latency is marked as moved: {line}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("id=\"compare\""));
}
