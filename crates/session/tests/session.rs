//! The run loop on simulated targets (docs/ARCHITECTURE.md): a failing or panicking probe is recorded and the
//! rest still run; `needs` adds the probes needed; the file is rewritten after every probe (seen
//! mid-run through the observer); a target unusable after a fault stops with the reason when no
//! fresh process can continue; an interruption marks the files and no later write lands; several
//! simulated GPUs in parallel give the findings they give one at a time; the CPU lane never works
//! while a probe that runs alone runs.

use memscope_core::{
    Applicability, Buffer, ChaseResult, ChaseSpec, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput,
    Target, TargetError, TargetInfo,
};
use memscope_results::{ProbeStatus, Results, RunPhase};
use memscope_session::{Observer, PlannedTarget, ProbeProgress, RunPlan, Session};
use memscope_sim::hierarchy::Hierarchy;
use memscope_sim::SimTarget;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A probe that finds `key.found` = 1, or fails, panics or is waived.
struct Scripted {
    key: &'static str,
    does: Does,
}

#[derive(Clone, Copy, PartialEq)]
enum Does {
    Find,
    Fail,
    Panic,
    Waive,
    /// Finds `<key>.found` = the earlier `first.found` + 1 (absent: fails).
    ReadEarlier,
}

impl Probe for Scripted {
    fn key(&self) -> &'static str {
        self.key
    }
    fn description(&self) -> &'static str {
        "scripted probe of the session tests"
    }
    fn applicability(&self, _t: &TargetInfo) -> Applicability {
        if self.does == Does::Waive {
            Applicability::Waived("waived by the test".into())
        } else {
            Applicability::Applicable
        }
    }
    fn needs(&self) -> &'static [&'static str] {
        if self.does == Does::ReadEarlier {
            &["first"]
        } else {
            &[]
        }
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let mut out = ProbeOutput::default();
        let v = match self.does {
            Does::Find | Does::Waive => 1.0,
            Does::Fail => return Err(ProbeError::Failed("scripted failure".into())),
            Does::Panic => panic!("scripted panic"),
            Does::ReadEarlier => {
                let first = ctx.earlier.get("first.found").and_then(|f| f.as_f64());
                first.ok_or_else(|| ProbeError::Failed("no first.found".into()))? + 1.0
            }
        };
        // (a touch of the target, so the probe really runs on it)
        let b = ctx.target.alloc(4096)?;
        ctx.target.free(b);
        out.finding(&format!("{}.found", self.key), Finding::number(v, "count", "scripted", Confidence::High));
        Ok(out)
    }
}

fn probe(key: &'static str, does: Does) -> Box<dyn Probe> {
    Box::new(Scripted { key, does })
}

fn small_sim() -> SimTarget {
    let mut h = Hierarchy { name: "session-test".into(), seed: 5, ..Hierarchy::default() };
    h.l2.slices = 2;
    h.l2.sets_per_slice = 64;
    h.noise.seed = 5;
    SimTarget::new(h).unwrap()
}

#[test]
fn a_failing_or_panicking_probe_is_recorded_and_the_rest_still_run() {
    let mut t = small_sim();
    let id = t.info().id;
    let probes = [
        probe("first", Does::Find),
        probe("bad", Does::Fail),
        probe("boom", Does::Panic),
        probe("off", Does::Waive),
        probe("last", Does::Find),
    ];
    let run = Session::silent(true).run_probes_on(&mut t, probes.iter().map(|p| p.as_ref()));
    let status = |k: &str| run.statuses[&format!("{k}@{id}")].clone();
    assert_eq!(status("first").status, ProbeStatus::Ok);
    assert_eq!(status("bad").status, ProbeStatus::Failed);
    assert_eq!(status("bad").reason.as_deref(), Some("scripted failure"));
    assert_eq!(status("boom").status, ProbeStatus::Failed);
    assert_eq!(status("boom").reason.as_deref(), Some("internal error: scripted panic"));
    assert_eq!(status("off").status, ProbeStatus::Waived);
    assert_eq!(status("last").status, ProbeStatus::Ok);
    assert_eq!(run.failures.len(), 2, "{:?}", run.failures);
    assert!(run.failures[0].starts_with(&format!("bad@{id}: ")), "{:?}", run.failures);
    // findings of the probes that ran, tagged by the target; none of the waived one
    assert_eq!(run.findings["last.found"].target.as_deref(), Some(id.as_str()));
    assert!(run.findings.contains_key("first.found"));
    assert!(!run.findings.contains_key("off.found"));
}

#[test]
fn needs_add_the_probes_needed_and_their_findings_reach_the_probe() {
    let all = || vec![probe("first", Does::Find), probe("other", Does::Find), probe("second", Does::ReadEarlier)];
    let picked = memscope_session::select(all(), &["second".to_string()], false).unwrap();
    let keys: Vec<&str> = picked.iter().map(|p| p.key()).collect();
    assert_eq!(keys, ["first", "second"], "registry order, the needed probe first");
    // a continued run reads the earlier findings from its file: nothing added
    let cont = memscope_session::select(all(), &["second".to_string()], true).unwrap();
    assert_eq!(cont.iter().map(|p| p.key()).collect::<Vec<_>>(), ["second"]);
    let e = memscope_session::select(all(), &["nope".to_string()], false).err().unwrap();
    assert_eq!(e.to_string(), "no probe \"nope\" (accepted: first, other, second)");
    let run = Session::silent(true).run_probes_on(&mut small_sim(), picked.iter().map(|p| p.as_ref())).expect_ok();
    assert_eq!(run.findings["second.found"].as_f64(), Some(2.0));
    // given earlier findings stand in for a probe that ran before, and are not returned
    let mut given = std::collections::BTreeMap::new();
    given.insert("first.found".to_string(), Finding::number(41.0, "count", "given", Confidence::High));
    let run = Session::silent(true).run_probes_with(&mut small_sim(), [picked[1].as_ref()], given).expect_ok();
    assert_eq!(run.findings["second.found"].as_f64(), Some(42.0));
    assert!(!run.findings.contains_key("first.found"));
}

/// Records, at every write, the number of probe records in the file as read back from disk.
#[derive(Default)]
struct Watcher {
    seen: Mutex<Vec<(PathBuf, usize, Option<RunPhase>)>>,
}

struct NoBar;
impl memscope_core::Progress for NoBar {
    fn start(&self, _total: u64, _message: &str) {}
    fn advance(&self, _n: u64) {}
    fn message(&self, _message: &str) {}
}
impl ProbeProgress for NoBar {
    fn finish(&self, _outcome: &str) {}
}

impl Observer for &'static Watcher {
    fn probe_started(&self, _target: &str, _probe: &str, _shown: bool) -> Box<dyn ProbeProgress> {
        Box::new(NoBar)
    }
    fn file_written(&self, path: &Path, doc: &Results) {
        let on_disk = Results::from_json(&std::fs::read(path).unwrap()).unwrap();
        assert_eq!(on_disk.probes, doc.probes, "the file holds the document just written");
        self.seen.lock().unwrap().push((path.to_path_buf(), on_disk.probes.len(), on_disk.run.map(|r| r.state)));
    }
}

#[test]
fn the_file_is_rewritten_after_every_probe_and_the_document_and_target_come_back() {
    let watcher: &'static Watcher = Box::leak(Box::default());
    let session = Session::new(true, Box::new(watcher));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.json");
    let t = small_sim();
    let info = t.info();
    let doc = Results::new(
        memscope_results::ToolInfo {
            name: "memscope".into(),
            version: "test".into(),
            git_commit: None,
            command: vec![],
        },
        info.clone(),
        Default::default(),
    );
    let probes = vec![probe("first", Does::Find), probe("bad", Does::Fail), probe("last", Does::Find)];
    let back = session.run_into(Box::new(t), &info.id, &probes, doc, &path).unwrap();
    let seen = watcher.seen.lock().unwrap().clone();
    let counts: Vec<usize> = seen.iter().map(|s| s.1).collect();
    assert_eq!(counts, [0, 1, 2, 3], "written before the first probe and after each");
    assert!(seen.iter().all(|s| s.0 == path && s.2 == Some(RunPhase::InProgress)));
    assert_eq!(back.doc.probes.len(), 3);
    assert_eq!(back.failures.len(), 1);
    assert_eq!(session.ledger().files().len(), 1);
    // the target is usable again for a caller's own work on the same document
    let mut target = back.target;
    assert!(target.alloc(4096).is_ok());
}

/// A simulated GPU that becomes unusable after its first probe (as a GPU after a fault).
struct Poisoned {
    inner: SimTarget,
    probes_run: u32,
}

impl Target for Poisoned {
    fn info(&self) -> TargetInfo {
        self.inner.info()
    }
    fn alloc(&mut self, bytes: u64) -> Result<Buffer, TargetError> {
        self.probes_run += 1;
        self.inner.alloc(bytes)
    }
    fn free(&mut self, buf: Buffer) {
        self.inner.free(buf)
    }
    fn flush(&mut self) -> Result<(), TargetError> {
        self.inner.flush()
    }
    fn chase(&mut self, spec: &ChaseSpec) -> Result<ChaseResult, TargetError> {
        self.inner.chase(spec)
    }
    fn unusable(&self) -> Option<String> {
        (self.probes_run > 0).then(|| "device fault: the context is lost".to_string())
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

#[test]
fn after_a_fault_the_remaining_probes_are_recorded_as_not_run_when_nothing_can_continue_them() {
    let mut t = Poisoned { inner: small_sim(), probes_run: 0 };
    let id = t.info().id;
    let probes = [
        probe("first", Does::Find),
        probe("second", Does::Find),
        probe("waived", Does::Waive),
        probe("third", Does::Find),
    ];
    let run = Session::silent(true).run_probes_on(&mut t, probes.iter().map(|p| p.as_ref()));
    assert_eq!(t.probes_run, 1, "nothing ran on the unusable target");
    assert_eq!(run.statuses[&format!("first@{id}")].status, ProbeStatus::Ok);
    // (a probe waived on the target stays waived, with its own reason: it was never going to run)
    let w = &run.statuses[&format!("waived@{id}")];
    assert_eq!((w.status, w.reason.as_deref()), (ProbeStatus::Waived, Some("waived by the test")));
    for k in ["second", "third"] {
        let r = &run.statuses[&format!("{k}@{id}")];
        assert_eq!(r.status, ProbeStatus::Failed);
        assert!(r.reason.as_deref().unwrap().contains("the context is lost"), "{r:?}");
    }
    assert_eq!(run.failures.len(), 1);
    assert!(run.failures[0].contains("the remaining probes did not run"), "{:?}", run.failures);
}

#[test]
fn an_interruption_marks_every_file_and_no_later_write_lands() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::silent(true);
    let path = dir.path().join("results.json");
    let t = small_sim();
    let info = t.info();
    session.ledger().set_plan(vec![format!("first@{}", info.id), format!("second@{}", info.id)]);
    let tool =
        memscope_results::ToolInfo { name: "memscope".into(), version: "t".into(), git_commit: None, command: vec![] };
    let back = session
        .run_into(
            Box::new(t),
            &info.id,
            &[probe("first", Does::Find)],
            Results::new(tool, info.clone(), Default::default()),
            &path,
        )
        .unwrap();
    assert_eq!(session.ledger().not_run(), [format!("second@{}", info.id)]);
    let done = session.ledger().interrupt("SIGINT", "now");
    assert_eq!(done.written, std::slice::from_ref(&path));
    let mut doc = back.doc;
    session.write(&path, &mut doc, RunPhase::InProgress).unwrap();
    let on_disk = Results::from_json(&std::fs::read(&path).unwrap()).unwrap();
    let run = on_disk.run.unwrap();
    assert_eq!(run.state, RunPhase::Interrupted);
    assert_eq!(run.signal.as_deref(), Some("SIGINT"));
    assert_eq!(run.probes_not_run, [format!("second@{}", info.id)]);
}

fn planned(id: &str) -> PlannedTarget {
    // a small L2 (as crates/probe/tests/probe/partitions.rs), so the latency probe is quick
    let mut h = Hierarchy { name: id.to_string(), seed: 3, ..Hierarchy::default() };
    h.page_bytes = 64 << 10;
    h.l2.slices = 4;
    h.l2.ways = 8;
    h.l2.sets_per_slice = 512;
    h.noise.jitter_ns = 2.0;
    h.noise.seed = 3;
    PlannedTarget { id: id.to_string(), cpu: false, target: Ok(Box::new(SimTarget::new(h).unwrap())), snapshot: None }
}

#[test]
fn parallel_simulated_gpus_give_the_findings_they_give_one_at_a_time() {
    let probes: Vec<Box<dyn Probe>> =
        memscope_probe::probes().into_iter().filter(|p| ["line", "latency"].contains(&p.key())).collect();
    let plan = |out: &Path| RunPlan {
        probes: &probes,
        tool: memscope_results::ToolInfo {
            name: "memscope".into(),
            version: "t".into(),
            git_commit: None,
            command: vec![],
        },
        environment: Default::default(),
        out: out.to_path_buf(),
        continue_from: None,
        cpu_sequential: true,
        one_at_a_time: &[("latency", "the test runs it one GPU at a time")],
    };
    let par_dir = tempfile::tempdir().unwrap();
    let par = Session::silent(false).run(vec![planned("sim:a"), planned("sim:b")], &plan(par_dir.path())).unwrap();
    assert!(par.failures.is_empty(), "{:?}", par.failures);
    let names: Vec<PathBuf> =
        par.docs.iter().map(|(p, _)| p.strip_prefix(par_dir.path()).unwrap().to_path_buf()).collect();
    assert_eq!(names, [PathBuf::from("results.json"), PathBuf::from("results-sim-b.json")]);
    assert!(par.docs[0].1.environment.contains_key("gpu_lanes"));
    for (k, id) in ["sim:a", "sim:b"].iter().enumerate() {
        let one_dir = tempfile::tempdir().unwrap();
        let one = Session::silent(false).run(vec![planned(id)], &plan(one_dir.path())).unwrap();
        let (seq, parallel) = (&one.docs[0].1, &par.docs[k].1);
        assert!(!seq.findings.is_empty());
        assert_eq!(seq.findings, parallel.findings, "{id}");
        assert!(seq.findings.values().all(|f| f.target.as_deref() == Some(*id)));
        let statuses = |d: &Results| d.probes.iter().map(|(k, r)| (k.clone(), r.status)).collect::<Vec<_>>();
        assert_eq!(statuses(seq), statuses(parallel), "{id}");
    }
}

/// What the lane test's probes did and when (seconds from the test's start).
static ACTIVITY: Mutex<Vec<(&'static str, f64, f64)>> = Mutex::new(Vec::new());
static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

fn since_epoch() -> f64 {
    EPOCH.get_or_init(std::time::Instant::now).elapsed().as_secs_f64()
}

/// A probe that works for `steps` x `step_ms` (busy, as a host-heavy probe), reporting progress
/// between steps and logging each step; applies to targets named `on`.
struct Timed {
    key: &'static str,
    on: &'static str,
    steps: u32,
    step_ms: u64,
    alone: bool,
}

impl Probe for Timed {
    fn key(&self) -> &'static str {
        self.key
    }
    fn description(&self) -> &'static str {
        "timed probe of the lane test"
    }
    fn applicability(&self, t: &TargetInfo) -> Applicability {
        if t.name == self.on {
            Applicability::Applicable
        } else {
            Applicability::Waived("another target's".into())
        }
    }
    fn runs_alone(&self) -> bool {
        self.alone
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        ctx.progress.start(self.steps as u64, self.key);
        for _ in 0..self.steps {
            let t0 = since_epoch();
            let until = std::time::Instant::now() + std::time::Duration::from_millis(self.step_ms);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
            ACTIVITY.lock().unwrap().push((self.key, t0, since_epoch()));
            ctx.progress.advance(1);
        }
        Ok(ProbeOutput::default())
    }
}

fn named(name: &str, cpu: bool) -> PlannedTarget {
    let mut t = planned(name);
    t.cpu = cpu;
    t
}

#[test]
fn the_cpu_lane_never_works_while_a_probe_that_runs_alone_runs() {
    if memscope_session::allowed_cpus().len() < 2 {
        eprintln!("skipped: the CPU lane needs two usable CPUs");
        return;
    }
    since_epoch();
    let timed =
        |key, on, steps, step_ms, alone| -> Box<dyn Probe> { Box::new(Timed { key, on, steps, step_ms, alone }) };
    let probes: Vec<Box<dyn Probe>> = vec![
        timed("lane.steps", "lane-cpu", 60, 3, false),
        timed("gpu.before", "gpu", 5, 6, false),
        timed("gpu.alone", "gpu", 10, 6, true),
        timed("gpu.after", "gpu", 5, 6, false),
    ];
    let dir = tempfile::tempdir().unwrap();
    let plan = RunPlan {
        probes: &probes,
        tool: memscope_results::ToolInfo {
            name: "memscope".into(),
            version: "t".into(),
            git_commit: None,
            command: vec![],
        },
        environment: Default::default(),
        out: dir.path().to_path_buf(),
        continue_from: None,
        cpu_sequential: false,
        one_at_a_time: &[],
    };
    let run = Session::silent(false).run(vec![named("gpu", false), named("lane-cpu", true)], &plan).unwrap();
    assert!(run.failures.is_empty(), "{:?}", run.failures);
    let doc = &run.docs[0].1;
    assert_eq!(doc.environment["cpu_lane"]["mode"], "concurrent", "{:?}", doc.environment["cpu_lane"]);
    let log = ACTIVITY.lock().unwrap().clone();
    let span = |key: &str| {
        let v: Vec<_> = log.iter().filter(|(k, _, _)| *k == key).collect();
        (v.iter().map(|x| x.1).fold(f64::INFINITY, f64::min), v.iter().map(|x| x.2).fold(0.0, f64::max))
    };
    let (a0, a1) = span("gpu.alone");
    let lane: Vec<_> = log.iter().filter(|(k, _, _)| *k == "lane.steps").collect();
    assert_eq!(lane.len(), 60);
    for (_, s0, s1) in &lane {
        assert!(*s1 <= a0 || *s0 >= a1, "a lane step ({s0:.4}..{s1:.4}) overlaps the alone probe ({a0:.4}..{a1:.4})");
    }
    // The lane really ran beside the GPU probes: some of its steps before the alone probe, some after.
    assert!(lane.iter().any(|x| x.2 <= a0) && lane.iter().any(|x| x.1 >= a1), "{lane:?} vs {a0}..{a1}");
    // The same from the run's own record.
    let gate = &doc.environment["cpu_lane"]["gate"];
    assert_eq!(gate["alone"].as_array().unwrap().len(), 1, "{gate}");
    assert_eq!(gate["alone"][0][0], "gpu.alone");
    assert_eq!(gate["overlap_s"].as_f64(), Some(0.0), "{gate}");
    assert!(gate["lane_waited_s"].as_f64().unwrap() > 0.0, "{gate}");
}

#[test]
fn every_finding_of_a_quick_run_is_marked_quick() {
    let p = probe("first", Does::Find);
    for quick in [false, true] {
        let mut t = small_sim();
        let run = Session::silent(quick).run_probes_on(&mut t, [p.as_ref()]).expect_ok();
        let f = &run.findings["first.found"];
        let marked = f.note.as_deref().is_some_and(|n| n.starts_with(memscope_session::QUICK_MARK));
        assert_eq!(marked, quick, "{f:?}");
    }
}
