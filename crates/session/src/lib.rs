//! memscope-session: the run loop (docs/ARCHITECTURE.md). A `Session` runs probes on targets that come in
//! opened (`Box<dyn Target>`), into `memscope/1` results documents: applicability, the probes a
//! probe needs, progress through an `Observer`, fault containment (a probe's error is its status;
//! after a fault that leaves a target unusable the rest continue in a fresh process started
//! through `memscope_core::helper::self_command`), findings tagged by target, the atomic rewrite
//! after every probe (through the `Ledger`) until `Session::finish` marks the documents finished and
//! writes the merged file of several, several GPUs in parallel and the CPU lane beside
//! them. The binary (`memscope run`) is wiring: options, opening targets, signals, the summary.

mod cpu_lane;
mod gate;
mod gpus;
mod ledger;
mod observer;
mod run;
mod select;
mod target_run;

pub use cpu_lane::{allowed_cpus, pin_thread, split_cores};
pub use gate::GateLog;
pub use ledger::{Interrupted, Ledger};
pub use observer::{Observer, ProbeProgress, Silent};
pub use run::{plan, snapshot, PlannedTarget, RunOutcome, RunPlan, Snapshot};
pub use select::{select, with_needs, UnknownProbe};
pub use target_run::{refresh_target, FaultHook, QUICK_MARK};

use memscope_core::{Finding, Probe, Series, Target};
use memscope_results::{ProbeRecord, Results, RunPhase};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why a session stopped (a probe's own failure is not one: it is recorded as its status).
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// A results file could not be written.
    #[error("cannot write {}: {message}", path.display())]
    Write { path: PathBuf, message: String },
    /// The results file to continue cannot be read (bad input).
    #[error("{0}")]
    Continue(String),
    /// The file a continuing child wrote cannot be read back.
    #[error("{0}")]
    Reread(String),
    /// The continuing child could not be started or waited for.
    #[error("{0}")]
    Child(String),
    /// A lane's thread ended outside a probe.
    #[error("{0}")]
    Thread(String),
}

impl SessionError {
    /// Bad input rather than a failure of the run (exit 2 in the binary).
    pub fn is_usage(&self) -> bool {
        matches!(self, SessionError::Continue(_))
    }
}

/// What a target unusable after a fault does with the probes left.
pub enum Continuation {
    /// Record them as not run, with the reason.
    Stop,
    /// Continue them in a fresh `memscope run --continue-from FILE` process (`out`: its `--out`
    /// folder; `quiet`: pass `--quiet`).
    FreshProcess { out: PathBuf, quiet: bool },
}

/// A run's settings, observer and ledger.
pub struct Session {
    /// Smaller sweeps and fewer repetitions.
    pub quick: bool,
    observer: Box<dyn Observer>,
    ledger: Ledger,
    fault: Option<FaultHook>,
    continuation: Continuation,
    /// Keeps the CPU lane out of host-timed probes (gate.rs).
    gate: gate::Gate,
}

/// What a probe list produced on one target (`Session::run_probes_on`).
#[derive(Debug, Clone, Default)]
pub struct ProbeRun {
    /// Findings, tagged by the target.
    pub findings: BTreeMap<String, Finding>,
    pub series: BTreeMap<String, Series>,
    /// Per "KEY@TARGET": status, reason, duration.
    pub statuses: BTreeMap<String, ProbeRecord>,
    /// One line per failed probe.
    pub failures: Vec<String>,
}

impl ProbeRun {
    /// The warnings of every probe that ran.
    pub fn warnings(&self) -> Vec<String> {
        self.statuses.values().flat_map(|r| r.warnings.iter().cloned()).collect()
    }

    /// Panic naming the failed probes (tests: a probe that must succeed).
    pub fn expect_ok(self) -> Self {
        assert!(self.failures.is_empty(), "probe(s) failed: {}", self.failures.join("; "));
        self
    }
}

/// The document and target back from `Session::run_into`.
pub struct TargetRun {
    pub doc: Results,
    pub target: Box<dyn Target>,
    /// One line per failed probe.
    pub failures: Vec<String>,
}

impl Session {
    /// A session reporting to `observer`; a target unusable after a fault stops its probes.
    pub fn new(quick: bool, observer: Box<dyn Observer>) -> Self {
        Session {
            quick,
            observer,
            ledger: Ledger::default(),
            fault: None,
            continuation: Continuation::Stop,
            gate: gate::Gate::default(),
        }
    }

    /// A quiet session (tests, examples).
    pub fn silent(quick: bool) -> Self {
        Session::new(quick, Box::new(Silent))
    }

    /// What to do with the probes left on a target unusable after a fault.
    pub fn with_continuation(mut self, c: Continuation) -> Self {
        self.continuation = c;
        self
    }

    /// A hook consulted before every probe (see `FaultHook`).
    pub fn with_fault_hook(mut self, hook: FaultHook) -> Self {
        self.fault = Some(hook);
        self
    }

    /// The files this session writes and the probes it plans (shared with a signal guard).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Write `doc` to `path` atomically with its run state, through the ledger.
    pub fn write(&self, path: &Path, doc: &mut Results, phase: RunPhase) -> Result<(), SessionError> {
        self.ledger.write(path, doc, phase)?;
        self.observer.file_written(path, doc);
        Ok(())
    }

    /// Run `probes` in order on `target` (id `target.info().id`) with nothing written: the
    /// production loop, for tests and examples.
    pub fn run_probes_on<'p>(
        &self,
        target: &mut dyn Target,
        probes: impl IntoIterator<Item = &'p dyn Probe>,
    ) -> ProbeRun {
        self.run_probes_with(target, probes, BTreeMap::new())
    }

    /// As `run_probes_on`, the probes reading `given` as earlier findings (as if probes that
    /// found them had run first); `ProbeRun::findings` holds only what the probes produced.
    pub fn run_probes_with<'p>(
        &self,
        target: &mut dyn Target,
        probes: impl IntoIterator<Item = &'p dyn Probe>,
        given: BTreeMap<String, Finding>,
    ) -> ProbeRun {
        let info = target.info();
        let mut doc = Results::new(tool(), info.clone(), Default::default());
        doc.findings = given.clone();
        let mut failures = Vec::new();
        let refs: Vec<&dyn Probe> = probes.into_iter().collect();
        let lane = target_run::Lane { id: &info.id, path: None, shown: true, cpu_lane: false };
        // (with no file, nothing in the loop can fail outside a probe)
        let _ = self.run_lane(target, &refs, &lane, &mut doc, &mut failures);
        doc.findings.retain(|k, f| given.get(k) != Some(f));
        ProbeRun { findings: doc.findings, series: doc.series, statuses: doc.probes, failures }
    }

    /// Run `probes` on one opened `target` (its id `id`) into `doc`, rewriting `path` after
    /// every probe (marked in progress); the document and the target come back, so a caller can
    /// add its own sections to the same document and finish it.
    pub fn run_into(
        &self,
        mut target: Box<dyn Target>,
        id: &str,
        probes: &[Box<dyn Probe>],
        mut doc: Results,
        path: &Path,
    ) -> Result<TargetRun, SessionError> {
        let failures = self.run_on(&mut *target, id, probes, &mut doc, path)?;
        Ok(TargetRun { doc, target, failures })
    }

    /// As `run_into` on a target the caller keeps (a caller that needs the concrete target
    /// afterwards); returns one line per failed probe.
    pub fn run_on(
        &self,
        target: &mut dyn Target,
        id: &str,
        probes: &[Box<dyn Probe>],
        doc: &mut Results,
        path: &Path,
    ) -> Result<Vec<String>, SessionError> {
        let refs: Vec<&dyn Probe> = probes.iter().map(|p| p.as_ref()).collect();
        let mut failures = Vec::new();
        self.write_in_progress(Some(path), doc)?;
        let lane = target_run::Lane { id, path: Some(path), shown: true, cpu_lane: false };
        self.run_lane(target, &refs, &lane, doc, &mut failures)?;
        Ok(failures)
    }
}

/// The tool record of documents made by `run_probes_on`.
fn tool() -> memscope_results::ToolInfo {
    memscope_results::ToolInfo {
        name: "memscope".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: None,
        command: vec![],
    }
}
