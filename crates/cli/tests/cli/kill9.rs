//! Runs own their output (docs/GUIDE.md): kill -9 at several moments of a run (a simulated GPU and the
//! CPU, small probe sets, `--quick`) leaves a valid results file, marked in progress, holding a
//! prefix of the run's probes with every finding of them as the complete run has it; SIGTERM and
//! SIGINT mark the file interrupted and list the probes that did not run; a second run on the
//! same `--out` exits 2 naming the first one's pid, and a killed run's lock is taken over.

use memscope_results::{ProbeStatus, Results, RunPhase};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The run under test and its probes in run order (targets in --target order, probes in registry
/// order).
const TARGETS: &str = "sim:rtx4090,cpu";
const PROBES: &str = "line,latency,indexing,l2ways,cpu.stride";
const PLAN: [&str; 5] =
    ["line@sim:rtx4090", "latency@sim:rtx4090", "indexing@sim:rtx4090", "l2ways@sim:rtx4090", "cpu.stride@cpu"];

fn start(out: &Path, targets: &str, probes: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_memscope"))
        .args(["run", "--target", targets, "--probes", probes, "--quick", "--quiet", "--out"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start memscope")
}

fn load(out: &Path) -> Option<Results> {
    let bytes = std::fs::read(out.join("results.json")).ok()?;
    Some(Results::from_json(&bytes).expect("a results file that exists is always valid"))
}

/// Probes with a record (ok or failed), in plan order; they must be a prefix of the plan.
fn recorded_prefix(doc: &Results) -> usize {
    let done: Vec<bool> =
        PLAN.iter().map(|k| doc.probes.get(*k).is_some_and(|p| p.status != ProbeStatus::Waived)).collect();
    let k = done.iter().take_while(|d| **d).count();
    assert!(done[k..].iter().all(|d| !d), "recorded probes are not a prefix of the plan: {done:?}");
    k
}

#[test]
fn kill9_at_several_moments_keeps_every_finished_probe() {
    // the complete run, for reference and for its length
    let full = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let status = start(full.path(), TARGETS, PROBES).wait().unwrap();
    let length = t0.elapsed();
    assert!(status.code().is_some_and(|c| c == 0 || c == 1), "{status}");
    let reference = load(full.path()).expect("results of the complete run");
    assert_eq!(reference.run.as_ref().map(|r| r.state), Some(RunPhase::Finished));
    assert_eq!(recorded_prefix(&reference), PLAN.len());

    for fraction in [0.0, 0.15, 0.35, 0.6, 0.85] {
        let dir = tempfile::tempdir().unwrap();
        let mut child = start(dir.path(), TARGETS, PROBES);
        let at = Duration::from_millis(30).max(length.mul_f64(fraction));
        std::thread::sleep(at);
        let exited = child.try_wait().unwrap().is_some();
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let Some(doc) = load(dir.path()) else {
            // only before the targets were opened can there be no file yet
            assert!(fraction < 0.1, "no results file after a kill at {at:?} of {length:?}");
            continue;
        };
        let k = recorded_prefix(&doc);
        if !exited {
            // In progress; or finished, when the kill landed between the run's last write and
            // its exit (then every probe is recorded).
            let state = doc.run.as_ref().map(|r| r.state);
            let finished_first = state == Some(RunPhase::Finished) && k == PLAN.len();
            assert!(state == Some(RunPhase::InProgress) || finished_first, "kill at {at:?}: {state:?}, {k} probes");
        }
        // every finding the killed run has is the complete run's (same key, same target)
        for (key, f) in &doc.findings {
            let r = reference.findings.get(key).unwrap_or_else(|| panic!("{key}: not in the complete run"));
            assert_eq!(f.target, r.target, "{key}");
        }
        // and the probes that finished brought their findings: the sim's first probe has some
        if k > 0 {
            assert!(
                doc.findings.keys().any(|key| key.starts_with("l1.") || key.starts_with("l2.")),
                "{k} probes, no finding"
            );
        }
        eprintln!("kill -9 at {at:?} of {length:?}: {k} of {} probes recorded", PLAN.len());
    }
}

#[test]
fn sigterm_marks_the_file_interrupted_with_the_probes_not_run() {
    for (sig, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        let dir = tempfile::tempdir().unwrap();
        let mut child = start(dir.path(), TARGETS, PROBES);
        // wait for the first probe's record, then signal
        let t0 = Instant::now();
        while load(dir.path()).is_none_or(|d| recorded_prefix(&d) == 0) {
            assert!(t0.elapsed() < Duration::from_secs(120), "no probe after 120 s");
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let out = child.wait_with_output().unwrap();
        let doc = load(dir.path()).unwrap();
        let state = doc.run.clone().unwrap();
        if state.state == RunPhase::Finished {
            continue; // the run ended before the signal arrived
        }
        assert_eq!(out.status.code(), Some(1), "{name}: exit 1 (partial results written)");
        assert_eq!(state.state, RunPhase::Interrupted);
        assert_eq!(state.signal.as_deref(), Some(name));
        let k = recorded_prefix(&doc);
        let not_run: Vec<&str> = state.probes_not_run.iter().map(String::as_str).collect();
        assert_eq!(not_run, PLAN[k..].to_vec(), "{name}: not-run probes are the rest of the plan");
        assert!(!not_run.is_empty());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("interrupted by {name}")), "{stderr}");
        assert!(!dir.path().join(".memscope.lock").exists(), "the lock is removed");
    }
}

#[test]
fn a_second_run_on_the_same_out_is_refused_and_a_killed_runs_lock_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = start(dir.path(), "sim:rtx4090", "line,latency,indexing,l2ways");
    let lock = dir.path().join(".memscope.lock");
    let t0 = Instant::now();
    while !lock.exists() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let second = Command::new(env!("CARGO_BIN_EXE_memscope"))
        .args(["run", "--target", "sim:rtx4090", "--probes", "line", "--quick", "--quiet", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    let first_done = first.try_wait().unwrap().is_some();
    if !first_done {
        let stderr = String::from_utf8_lossy(&second.stderr);
        assert_eq!(second.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&format!("pid {}", first.id())), "{stderr}");
    }
    let _ = first.kill();
    let _ = first.wait();
    // the killed run's lock names a dead process: the next run takes it over
    let third = Command::new(env!("CARGO_BIN_EXE_memscope"))
        .args(["run", "--target", "sim:rtx4090", "--probes", "line", "--quick", "--quiet", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(third.status.code(), Some(0), "{}", String::from_utf8_lossy(&third.stderr));
    assert!(!lock.exists());
    assert_eq!(load(dir.path()).unwrap().run.unwrap().state, RunPhase::Finished);
}
