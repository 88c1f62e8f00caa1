//! The probe loop on one target (docs/ARCHITECTURE.md): applicability (waived probes recorded), the earlier
//! findings a probe reads, progress through the observer, a probe's error or panic recorded as
//! its status while the rest still run, findings tagged by the target, the document rewritten
//! after every probe, and, after a fault that leaves the target unusable (a GPU fault poisons
//! the process's CUDA state), the remaining probes continued in a fresh process.

use crate::gate::GatedProgress;
use crate::{Continuation, Session, SessionError};
use memscope_core::{Applicability, Probe, ProbeContext, ProbeError, Progress, Target};
use memscope_results::{ProbeRecord, ProbeStatus, Results, RunPhase};
use std::path::Path;
use std::time::Instant;

/// How a finding of a `--quick` run is marked (its note starts with it).
pub const QUICK_MARK: &str = "quick run (--quick: smaller sweeps, fewer repetitions)";

/// One target's run: where its document goes and whether its progress is shown.
pub(crate) struct Lane<'a> {
    pub id: &'a str,
    /// The file rewritten after every probe (None: the document stays in memory).
    pub path: Option<&'a Path>,
    pub shown: bool,
    /// The CPU lane: its probes step out of the gate while a probe runs alone.
    pub cpu_lane: bool,
}

fn record(
    id: &str,
    status: ProbeStatus,
    reason: Option<String>,
    duration_s: f64,
    warnings: Vec<String>,
) -> ProbeRecord {
    ProbeRecord { target: id.into(), status, reason, duration_s, warnings }
}

impl Session {
    /// Write `doc` to `path` (when there is one) marked in progress.
    pub(crate) fn write_in_progress(&self, path: Option<&Path>, doc: &mut Results) -> Result<(), SessionError> {
        match path {
            Some(p) => self.write(p, doc, RunPhase::InProgress),
            None => Ok(()),
        }
    }

    /// Run `probes` on `target`, merging into `doc`; failures are appended to `failures`.
    pub(crate) fn run_lane(
        &self,
        target: &mut dyn Target,
        probes: &[&dyn Probe],
        lane: &Lane<'_>,
        doc: &mut Results,
        failures: &mut Vec<String>,
    ) -> Result<(), SessionError> {
        let id = lane.id;
        let info = target.info();
        for (index, probe) in probes.iter().enumerate() {
            let key = format!("{}@{id}", probe.key());
            if let Applicability::Waived(reason) = probe.applicability(&info) {
                doc.probes.insert(key, record(id, ProbeStatus::Waived, Some(reason), 0.0, vec![]));
                continue;
            }
            let bar = self.observer.probe_started(id, probe.key(), lane.shown);
            let earlier = doc.findings.clone();
            let injected = self.fault.as_ref().and_then(|f| f(probe.key(), &mut *target));
            let shown: &dyn Progress = &*bar;
            let gated = GatedProgress { gate: &self.gate, inner: shown };
            let progress: &dyn Progress = if lane.cpu_lane { &gated } else { shown };
            // The gate (gate.rs): a host-timed probe waits for the CPU lane to step out; the lane
            // works only while no such probe runs.
            let alone = (!lane.cpu_lane && probe.runs_alone()).then(|| self.gate.alone_begin());
            if lane.cpu_lane {
                self.gate.lane_enter();
            }
            let started = Instant::now();
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                if let Some(e) = injected {
                    return Err(e);
                }
                let mut ctx = ProbeContext { target: &mut *target, quick: self.quick, progress, earlier: &earlier };
                probe.run(&mut ctx)
            }));
            let duration_s = started.elapsed().as_secs_f64();
            if lane.cpu_lane {
                self.gate.lane_leave();
            }
            if let Some(from) = alone {
                self.gate.alone_end(probe.key(), from);
            }
            let rec = match outcome {
                Ok(Ok(out)) => {
                    bar.finish(&format!("{} findings", out.findings.len()));
                    for (k, mut f) in out.findings {
                        f.target = Some(id.to_string());
                        if self.quick {
                            f.note = Some(match f.note.take() {
                                Some(n) => format!("{QUICK_MARK}; {n}"),
                                None => QUICK_MARK.to_string(),
                            });
                        }
                        doc.findings.insert(k, f);
                    }
                    doc.series.extend(out.series);
                    record(id, ProbeStatus::Ok, None, duration_s, out.warnings)
                }
                Ok(Err(e)) => {
                    bar.finish("failed");
                    failures.push(format!("{key}: {e}"));
                    record(id, ProbeStatus::Failed, Some(e.to_string()), duration_s, vec![])
                }
                Err(panic) => {
                    bar.finish("failed");
                    let msg = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "panic".into());
                    failures.push(format!("{key}: internal error: {msg}"));
                    record(id, ProbeStatus::Failed, Some(format!("internal error: {msg}")), duration_s, vec![])
                }
            };
            doc.probes.insert(key, rec);
            self.write_in_progress(lane.path, doc)?;
            if let Some(why) = target.unusable() {
                // (a waived probe is recorded here: the fresh process is not asked for it)
                let mut remaining: Vec<&str> = Vec::new();
                for p in &probes[index + 1..] {
                    match p.applicability(&info) {
                        Applicability::Applicable => remaining.push(p.key()),
                        Applicability::Waived(reason) => {
                            let rec = record(id, ProbeStatus::Waived, Some(reason), 0.0, vec![]);
                            doc.probes.insert(format!("{}@{id}", p.key()), rec);
                        }
                    }
                }
                if !remaining.is_empty() {
                    self.continue_elsewhere(lane, &remaining, &why, doc, failures)?;
                }
                break;
            }
        }
        // The CPU's clock is measured again by its latency probe (turbo moves with the host's
        // load): record the target as it ended, so headers give the clock its cycles were
        // counted in.
        if info.capabilities.clock_remeasured {
            refresh_target(doc, target.info());
            self.write_in_progress(lane.path, doc)?;
        }
        Ok(())
    }

    /// The target is unusable after probe `remaining[0] - 1`: run `remaining` in a fresh
    /// process continuing the same file and take the file back, or record why they did not run.
    fn continue_elsewhere(
        &self,
        lane: &Lane<'_>,
        remaining: &[&str],
        why: &str,
        doc: &mut Results,
        failures: &mut Vec<String>,
    ) -> Result<(), SessionError> {
        let id = lane.id;
        let command = match (&self.continuation, lane.path) {
            (Continuation::FreshProcess { out, quiet }, Some(path)) => match memscope_core::helper::self_command() {
                Some(mut cmd) => {
                    cmd.arg("run").arg("--target").arg(id).arg("--probes").arg(remaining.join(","));
                    cmd.arg("--out").arg(out).arg("--continue-from").arg(path);
                    if self.quick {
                        cmd.arg("--quick");
                    }
                    if *quiet {
                        cmd.arg("--quiet");
                    }
                    Ok((cmd, path))
                }
                None => Err(memscope_core::helper::NO_SELF_COMMAND.to_string()),
            },
            (Continuation::FreshProcess { .. }, None) => Err("the run writes no results file to continue".to_string()),
            (Continuation::Stop, _) => Err("this session does not continue in a fresh process".to_string()),
        };
        let (mut cmd, path) = match command {
            Ok(c) => c,
            Err(reason) => {
                let why_not = format!("not run: {why}; {reason}");
                for k in remaining {
                    doc.probes.insert(
                        format!("{k}@{id}"),
                        record(id, ProbeStatus::Failed, Some(why_not.clone()), 0.0, vec![]),
                    );
                }
                failures.push(format!("{id}: {why}; the remaining probes did not run: {reason}"));
                return self.write_in_progress(lane.path, doc);
            }
        };
        cmd.stdout(std::process::Stdio::null());
        let mut child =
            cmd.spawn().map_err(|e| SessionError::Child(format!("cannot start a fresh memscope process: {e}")))?;
        // (an interruption now is passed on to the child, which writes the same file)
        self.ledger.set_child(Some(child.id()));
        let status = child.wait();
        self.ledger.set_child(None);
        let status = status.map_err(|e| SessionError::Child(format!("fresh memscope process: {e}")))?;
        failures.push(format!("{id}: {why}; the remaining probes ran in a fresh process (exit {:?})", status.code()));
        *doc = Results::from_json(&std::fs::read(path).unwrap_or_default())
            .map_err(|e| SessionError::Reread(format!("{}: {e}", path.display())))?;
        Ok(())
    }
}

/// Replace a target's entry (by id) in `doc` with `fresh`.
pub fn refresh_target(doc: &mut Results, fresh: memscope_core::TargetInfo) {
    for t in doc.targets.iter_mut().filter(|t| t.id == fresh.id) {
        *t = fresh.clone();
    }
    if doc.target.id == fresh.id {
        doc.target = fresh;
    }
}

/// A fault hook: given the probe key about to run and the target, an error to record instead of
/// running it (the binary's `MEMSCOPE_FAULT_IN_PROBE` test hook).
pub type FaultHook = Box<dyn Fn(&str, &mut dyn Target) -> Option<ProbeError> + Send + Sync>;
