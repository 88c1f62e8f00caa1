//! Several GPUs (or simulated GPUs) in one run (docs/INTERCONNECT.md): one thread per target runs its probes
//! in parallel with the others, each into its own document; then the probes that must run one
//! GPU at a time (`RunPlan::one_at_a_time`: the host link, the peer matrix, ncu) run target after
//! target on the calling thread. Each thread binds its own GPU's context; their progress would
//! overwrite each other's lines, so only the first target's is shown.

use crate::run::{file_for, snapshot, PlannedTarget, RunPlan};
use crate::target_run::Lane;
use crate::{Session, SessionError};
use memscope_core::Probe;
use memscope_results::Results;
use std::path::PathBuf;

/// What one target's thread hands back: its document, failures and seconds.
type LaneResult = (PathBuf, Results, Vec<String>, f64);

/// The run's probes split: those run in parallel and those run one GPU at a time (the plan's
/// `one_at_a_time`, and every probe that runs alone: `Probe::runs_alone`).
pub(crate) fn split<'a>(
    probes: &'a [Box<dyn Probe>],
    serial: &[(&str, &str)],
) -> (Vec<&'a dyn Probe>, Vec<&'a dyn Probe>) {
    let alone = |p: &dyn Probe| p.runs_alone() || serial.iter().any(|(k, _)| *k == p.key());
    let parallel = probes.iter().map(|p| &**p).filter(|p| !alone(*p)).collect();
    let one_at_a_time = probes.iter().map(|p| &**p).filter(|p| alone(*p)).collect();
    (parallel, one_at_a_time)
}

impl Session {
    /// Run every non-CPU target (the CPU stays for the caller); returns the documents by path.
    pub(crate) fn run_gpus(
        &self,
        targets: &mut [PlannedTarget],
        plan: &RunPlan<'_>,
        failures: &mut Vec<String>,
    ) -> Result<Vec<(PathBuf, Results)>, SessionError> {
        let (parallel, serial) = split(plan.probes, plan.one_at_a_time);
        let started = std::time::Instant::now();
        let mut lanes: Vec<LaneResult> = Vec::new();
        std::thread::scope(|scope| -> Result<(), SessionError> {
            let mut handles = Vec::new();
            for (k, t) in targets.iter_mut().filter(|t| !t.cpu).enumerate() {
                let path = file_for(&plan.out, k, &t.id);
                let target = match &mut t.target {
                    Ok(target) => target,
                    Err(e) => {
                        failures.push(e.clone());
                        continue;
                    }
                };
                let mut doc = plan.new_doc(&target.info());
                let parallel = &parallel;
                let (id, snap) = (&t.id, &t.snapshot);
                handles.push(scope.spawn(move || -> Result<LaneResult, SessionError> {
                    let t0 = std::time::Instant::now();
                    let mut fails = Vec::new();
                    self.write_in_progress(Some(&path), &mut doc)?;
                    if let Some((prefix, take)) = snap {
                        doc.environment.insert(format!("{prefix}_{id}_before"), take());
                    }
                    let lane = Lane { id, path: Some(&path), shown: k == 0, cpu_lane: false };
                    self.run_lane(&mut **target, parallel, &lane, &mut doc, &mut fails)?;
                    Ok((path.clone(), doc, fails, t0.elapsed().as_secs_f64()))
                }));
            }
            for h in handles {
                match h.join() {
                    Ok(r) => lanes.push(r?),
                    Err(_) => return Err(SessionError::Thread("a GPU thread panicked outside a probe".to_string())),
                }
            }
            Ok(())
        })?;
        let parallel_s = started.elapsed().as_secs_f64();
        // The probes one GPU at a time because they run alone (`Probe::runs_alone`), beyond the plan's list.
        let listed = |p: &&dyn Probe| plan.one_at_a_time.iter().any(|(k, _)| *k == p.key());
        let timed_on_host: Vec<serde_json::Value> = serial
            .iter()
            .filter(|p| p.runs_alone() && !listed(p))
            .map(|p| serde_json::json!({"probe": p.key(), "why": "timed on the host: runs alone"}))
            .collect();
        // The one-at-a-time probes, target after target, into the same documents.
        let mut docs = Vec::new();
        let opened = targets.iter_mut().filter(|t| !t.cpu && t.target.is_ok());
        for (t, (path, mut doc, mut fails, lane_s)) in opened.zip(lanes) {
            let t0 = std::time::Instant::now();
            let Ok(target) = &mut t.target else { continue };
            let lane = Lane { id: &t.id, path: Some(&path), shown: true, cpu_lane: false };
            self.run_lane(&mut **target, &serial, &lane, &mut doc, &mut fails)?;
            snapshot(&mut doc, &t.id, &t.snapshot, "after");
            doc.environment.insert(
                "gpu_lanes".into(),
                serde_json::json!({
                    "mode": "parallel: one thread per GPU",
                    "parallel_wall_s": parallel_s,
                    "this_lane_parallel_s": lane_s,
                    "one_gpu_at_a_time_s": t0.elapsed().as_secs_f64(),
                    "one_gpu_at_a_time": plan.one_at_a_time
                        .iter()
                        .map(|(k, why)| serde_json::json!({"probe": k, "why": why}))
                        .chain(timed_on_host.iter().cloned())
                        .collect::<Vec<_>>(),
                }),
            );
            self.write_in_progress(Some(&path), &mut doc)?;
            failures.append(&mut fails);
            docs.push((path, doc));
        }
        Ok(docs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_core::{Applicability, ProbeContext, ProbeError, ProbeOutput, TargetInfo};

    struct P(&'static str, bool);
    impl Probe for P {
        fn key(&self) -> &'static str {
            self.0
        }
        fn description(&self) -> &'static str {
            "split test"
        }
        fn applicability(&self, _t: &TargetInfo) -> Applicability {
            Applicability::Applicable
        }
        fn runs_alone(&self) -> bool {
            self.1
        }
        fn run(&self, _ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
            Ok(ProbeOutput::default())
        }
    }

    #[test]
    fn probes_that_run_alone_and_the_listed_ones_run_one_gpu_at_a_time_in_order() {
        let probes: Vec<Box<dyn Probe>> = vec![
            Box::new(P("a", false)),
            Box::new(P("timed", true)),
            Box::new(P("b", false)),
            Box::new(P("ncu", false)),
        ];
        let (parallel, serial) = split(&probes, &[("ncu", "device-wide counters")]);
        let keys = |v: &[&dyn Probe]| v.iter().map(|p| p.key()).collect::<Vec<_>>();
        assert_eq!(keys(&parallel), ["a", "b"]);
        assert_eq!(keys(&serial), ["timed", "ncu"]);
    }
}
