//! A run killed mid-way leaves a valid results file: results are re-written atomically after every
//! probe (temp file + rename), so whatever was measured before the kill is readable.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn killed_run_leaves_a_valid_results_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_memscope"))
        .args(["run", "--target", "sim:rtx4090", "--quiet", "--out"])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start memscope");
    let results = dir.path().join("results.json");
    let started = Instant::now();
    // Wait for the first probe's results (the file is written before the first probe too,
    // with no probe recorded), then kill without warning.
    let has_probe = || {
        std::fs::read(&results)
            .ok()
            .and_then(|b| memscope_results::Results::from_json(&b).ok())
            .is_some_and(|d| !d.probes.is_empty())
    };
    while !has_probe() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("memscope ended ({status}) before writing any results");
        }
        assert!(started.elapsed() < Duration::from_secs(120), "no results file after 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(150));
    let finished_before_kill = child.try_wait().unwrap().is_some();
    let _ = child.kill();
    let _ = child.wait();
    let bytes = std::fs::read(&results).unwrap();
    let doc = memscope_results::Results::from_json(&bytes).expect("valid results after a kill");
    assert_eq!(doc.schema, "memscope/1");
    assert!(!doc.probes.is_empty(), "at least one probe recorded");
    if !finished_before_kill {
        assert!(doc.environment.get("finished_at").is_none(), "an interrupted run has no finish time");
    }
    // No temp file is left looking like a results file.
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        assert!(name == "results.json" || name == ".memscope.lock" || name.ends_with(".tmp"), "unexpected file {name}");
    }
}
