//! The files a session writes (docs/GUIDE.md): every results-file write goes through here
//! (atomic, with its run state), so the latest state of each file, the planned probes and a
//! continuing child process are known to whoever must mark the files interrupted on a signal
//! (the binary's run guard). After `interrupt` no further write lands.

use crate::SessionError;
use memscope_results::{Results, RunPhase, RunState};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

#[derive(Default)]
struct State {
    /// Every results file written, with its latest content.
    files: Vec<(PathBuf, Results)>,
    /// Planned probes ("KEY@TARGET") in run order.
    plan: Vec<String>,
    /// A continuing child process running now (it writes the same files).
    child: Option<u32>,
    /// Marked interrupted: later writes are dropped.
    closed: bool,
}

/// Shared record of a session's files; clones share it.
#[derive(Clone, Default)]
pub struct Ledger {
    state: Arc<Mutex<State>>,
}

/// What `Ledger::interrupt` did.
#[derive(Debug, Clone, PartialEq)]
pub struct Interrupted {
    /// Planned probes with no record in any file.
    pub probes_not_run: Vec<String>,
    /// The files marked interrupted.
    pub written: Vec<PathBuf>,
}

impl Ledger {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The probes ("KEY@TARGET") the run plans, in run order.
    pub fn set_plan(&self, plan: Vec<String>) {
        self.lock().plan = plan;
    }

    /// A continuing child started (`Some(pid)`) or ended (`None`).
    pub fn set_child(&self, pid: Option<u32>) {
        self.lock().child = pid;
    }

    /// The continuing child running now.
    pub fn child(&self) -> Option<u32> {
        self.lock().child
    }

    /// Every file written so far, with its latest content.
    pub fn files(&self) -> Vec<(PathBuf, Results)> {
        self.lock().files.clone()
    }

    /// The planned probes with no record in any file written so far.
    pub fn not_run(&self) -> Vec<String> {
        not_run(&self.lock())
    }

    /// Write `doc` to `path` atomically with its run state `phase`, and remember it.
    pub fn write(&self, path: &Path, doc: &mut Results, phase: RunPhase) -> Result<(), SessionError> {
        let mut st = self.lock();
        if st.closed {
            return Ok(());
        }
        doc.run = Some(RunState { state: phase, signal: None, probes_not_run: Vec::new() });
        memscope_results::json::write_atomic(path, &memscope_results::json::to_bytes(doc))
            .map_err(|e| SessionError::Write { path: path.to_path_buf(), message: e.to_string() })?;
        match st.files.iter_mut().find(|(p, _)| p == path) {
            Some((_, d)) => *d = doc.clone(),
            None => st.files.push((path.to_path_buf(), doc.clone())),
        }
        Ok(())
    }

    /// Write another output of the session (the merged file, `--json`) atomically, unless the
    /// session was interrupted: holding the same lock as `interrupt`, so a signal never ends the
    /// process in the middle of the write (no stray temp file).
    pub fn write_bytes(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let st = self.lock();
        if st.closed {
            return Ok(());
        }
        memscope_results::json::write_atomic(path, bytes)
    }

    /// Mark every file written so far and not finished interrupted by `signal` ("SIGINT") at
    /// `at`, with the planned probes not run; each file is first re-read from disk (the latest atomic write,
    /// this process's or a continuing child's). No write lands afterwards.
    pub fn interrupt(&self, signal: &str, at: &str) -> Interrupted {
        let mut st = self.lock();
        st.closed = true;
        for (path, doc) in st.files.iter_mut() {
            if let Some(d) = std::fs::read(&*path).ok().and_then(|b| Results::from_json(&b).ok()) {
                *doc = d;
            }
        }
        let missing = not_run(&st);
        let mut written = Vec::new();
        for (path, doc) in st.files.iter_mut() {
            // (a file its run finished is never relabelled: the run ended before the signal)
            if doc.run.as_ref().map(|r| r.state) == Some(RunPhase::Finished) {
                continue;
            }
            doc.run = Some(RunState {
                state: RunPhase::Interrupted,
                signal: Some(signal.into()),
                probes_not_run: missing.clone(),
            });
            doc.environment.insert("interrupted_at".into(), serde_json::json!(at));
            if memscope_results::json::write_atomic(path, &memscope_results::json::to_bytes(doc)).is_ok() {
                written.push(path.clone());
            }
        }
        Interrupted { probes_not_run: missing, written }
    }
}

fn not_run(st: &State) -> Vec<String> {
    st.plan.iter().filter(|k| !st.files.iter().any(|(_, d)| d.probes.contains_key(*k))).cloned().collect()
}
