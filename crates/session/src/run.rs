//! A whole run over several opened targets (docs/INTERCONNECT.md): one document per non-CPU target
//! (`results.json` for the first, `results-<id>.json` for the rest), the CPU joining the first
//! (or standing alone); several GPUs in parallel, one thread each; the CPU lane on its own core
//! beside them; environment snapshots around each GPU target through a hook the caller supplies.

use crate::target_run::Lane;
use crate::{Session, SessionError};
use memscope_core::{Applicability, Probe, Target};
use memscope_results::{Results, RunPhase, ToolInfo};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// An environment snapshot taken around a target's probes (GPU clocks, temperature, power).
pub type Snapshot = Box<dyn Fn() -> Value + Send + Sync>;

/// A target of the run, as the caller opened it.
pub struct PlannedTarget {
    /// "cpu", "cuda:0", "sim:rtx4090".
    pub id: String,
    /// The host CPU (it joins the first document, and runs in the CPU lane).
    pub cpu: bool,
    /// The opened target, or why it could not be opened (recorded as a failure).
    pub target: Result<Box<dyn Target>, String>,
    /// Recorded as `environment["<prefix>_<id>_before"/"_after"]` around its probes.
    pub snapshot: Option<(String, Snapshot)>,
}

/// What a run measures, where, and how.
pub struct RunPlan<'p> {
    pub probes: &'p [Box<dyn Probe>],
    pub tool: ToolInfo,
    /// The environment every new document starts with.
    pub environment: Map<String, Value>,
    /// Folder of the results files.
    pub out: PathBuf,
    /// Continue this results file (a run after a fault, in a fresh process).
    pub continue_from: Option<PathBuf>,
    /// Run the CPU after the GPUs on the calling thread instead of in its lane.
    pub cpu_sequential: bool,
    /// Probes run one GPU at a time when several run in parallel, with why.
    pub one_at_a_time: &'p [(&'p str, &'p str)],
}

/// The documents of a run, by path, and one line per failure.
pub struct RunOutcome {
    pub docs: Vec<(PathBuf, Results)>,
    pub failures: Vec<String>,
}

/// The applicable probes of every opened target, as "KEY@TARGET", in run order.
pub fn plan(targets: &[PlannedTarget], probes: &[Box<dyn Probe>]) -> Vec<String> {
    let mut keys = Vec::new();
    for t in targets {
        if let Ok(target) = &t.target {
            let info = target.info();
            for p in probes {
                if p.applicability(&info) == Applicability::Applicable {
                    keys.push(format!("{}@{}", p.key(), t.id));
                }
            }
        }
    }
    keys
}

/// Where each target's results go: the first non-CPU target and the CPU share results.json;
/// further GPUs or simulated targets get results-<id>.json.
pub(crate) fn file_for(out: &Path, index_among_non_cpu: usize, id: &str) -> PathBuf {
    if index_among_non_cpu == 0 {
        out.join("results.json")
    } else {
        let slug: String = id.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        out.join(format!("results-{slug}.json"))
    }
}

impl RunPlan<'_> {
    pub(crate) fn new_doc(&self, info: &memscope_core::TargetInfo) -> Results {
        Results::new(self.tool.clone(), info.clone(), self.environment.clone())
    }
}

/// Record `snap` (when there is one) in `doc` as `environment["<prefix>_<id>_<when>"]`.
pub fn snapshot(doc: &mut Results, id: &str, snap: &Option<(String, Snapshot)>, when: &str) {
    if let Some((prefix, take)) = snap {
        doc.environment.insert(format!("{prefix}_{id}_{when}"), take());
    }
}

impl Session {
    /// Run every target of `plan`; the documents are written in progress (`finish` marks them
    /// finished). Probe failures are in `failures`; an error is returned only when the run itself
    /// could not go on (a file not written, a file to continue unreadable).
    pub fn run(&self, mut targets: Vec<PlannedTarget>, plan: &RunPlan<'_>) -> Result<RunOutcome, SessionError> {
        std::thread::scope(|scope| {
            // The CPU lane: on its own core beside the GPU probes unless cpu_sequential.
            let lane = self.start_cpu_lane(scope, &mut targets, plan)?;
            let mut docs: Vec<(PathBuf, Results)> = Vec::new();
            let mut failures = Vec::new();
            let non_cpu = targets.iter().filter(|t| !t.cpu).count();
            let parallel = non_cpu >= 2 && plan.continue_from.is_none();
            if parallel {
                docs = self.run_gpus(&mut targets, plan, &mut failures)?;
            }
            let mut nth_non_cpu = 0usize;
            for t in targets.iter_mut() {
                if parallel && !t.cpu {
                    continue;
                }
                let path = match &plan.continue_from {
                    Some(p) => p.clone(),
                    None => file_for(&plan.out, if t.cpu { 0 } else { nth_non_cpu }, &t.id),
                };
                if !t.cpu {
                    nth_non_cpu += 1;
                }
                let PlannedTarget { id, cpu, target, snapshot: snap } = t;
                let target = match target {
                    Ok(target) => target,
                    Err(e) => {
                        failures.push(e.clone());
                        // (the results file still says what failed: exit 1 promises results written)
                        if plan.continue_from.is_none() && !docs.iter().any(|(p, _)| *p == path) {
                            let mut doc = unopened_doc(plan, id, e);
                            self.write_in_progress(Some(&path), &mut doc)?;
                            docs.push((path, doc));
                        }
                        continue;
                    }
                };
                let info = target.info();
                let pos = match docs.iter().position(|(p, _)| *p == path) {
                    Some(p) => {
                        let doc = &mut docs[p].1;
                        if *cpu {
                            doc.targets.push(info.clone());
                        } else {
                            // A GPU or simulated GPU leads the document it shares with the CPU.
                            doc.target = info.clone();
                            doc.targets.insert(0, info.clone());
                        }
                        p
                    }
                    None => {
                        let doc = match &plan.continue_from {
                            Some(p) => {
                                let bytes = std::fs::read(p)
                                    .map_err(|e| SessionError::Continue(format!("{}: {e}", p.display())))?;
                                Results::from_json(&bytes)
                                    .map_err(|e| SessionError::Continue(format!("{}: {e}", p.display())))?
                            }
                            None => plan.new_doc(&info),
                        };
                        docs.push((path.clone(), doc));
                        docs.len() - 1
                    }
                };
                let (path, doc) = &mut docs[pos];
                // written before the first probe, marked in progress
                self.write_in_progress(Some(path), doc)?;
                snapshot(doc, id, snap, "before");
                let probes: Vec<&dyn Probe> = plan.probes.iter().map(|p| &**p).collect();
                let lane = Lane { id, path: Some(path), shown: true, cpu_lane: false };
                self.run_lane(&mut **target, &probes, &lane, doc, &mut failures)?;
                if snap.is_some() {
                    snapshot(doc, id, snap, "after");
                    self.write_in_progress(Some(path), doc)?;
                }
            }
            match lane {
                Some(lane) => {
                    lane.finish(&mut docs, &file_for(&plan.out, 0, "cpu"), &mut failures, &self.gate.log())?
                }
                None => note_sequential(&mut docs, plan.cpu_sequential),
            }
            Ok(RunOutcome { docs, failures })
        })
    }
}

impl Session {
    /// Finish the documents of a run: each gets `environment.finished_at` and is rewritten
    /// through the ledger marked finished; with several documents and `merged` given, all of them
    /// are also written into that one file (the `memscope merge` format, made by `tool`).
    pub fn finish(
        &self,
        docs: &mut [(PathBuf, Results)],
        finished_at: &str,
        merged: Option<(&Path, &ToolInfo)>,
    ) -> Result<(), SessionError> {
        for (path, doc) in docs.iter_mut() {
            doc.environment.insert("finished_at".into(), serde_json::json!(finished_at));
            self.write(path, doc, RunPhase::Finished)?;
        }
        if let (true, Some((all, tool))) = (docs.len() > 1, merged) {
            let inputs = docs.iter().map(|(p, d)| (p.display().to_string(), d.clone())).collect();
            let doc = memscope_results::merge::merge(inputs, tool.clone(), finished_at);
            self.ledger()
                .write_bytes(all, &memscope_results::json::to_bytes(&doc))
                .map_err(|e| SessionError::Write { path: all.to_path_buf(), message: e.to_string() })?;
        }
        Ok(())
    }
}

/// The document of a target that could not be opened: its id, the kind its id names, and the
/// failure recorded as the failed probe `open@<id>`.
fn unopened_doc(plan: &RunPlan<'_>, id: &str, why: &str) -> Results {
    let kind = id.split(':').next().unwrap_or(id);
    let info = memscope_core::TargetInfo {
        kind: kind.to_string(),
        id: id.to_string(),
        name: format!("{id} (could not be opened)"),
        clock_hz: None,
        bypass_supported: false,
        aliasing_supported: false,
        per_hop_supported: false,
        gpu_hierarchy: false,
        units: 0,
        capabilities: Default::default(),
        details: Map::new(),
    };
    let mut doc = plan.new_doc(&info);
    let record = memscope_results::ProbeRecord {
        target: id.to_string(),
        status: memscope_results::ProbeStatus::Failed,
        reason: Some(why.to_string()),
        duration_s: 0.0,
        warnings: vec![],
    };
    doc.probes.insert(format!("open@{id}"), record);
    doc
}

/// Record in a document holding the CPU and another target that the CPU ran after it.
fn note_sequential(docs: &mut [(PathBuf, Results)], cpu_sequential: bool) {
    for (_, doc) in docs.iter_mut() {
        if doc.targets.len() > 1 && doc.targets.iter().any(|t| t.capabilities.host_cores) {
            let why = if cpu_sequential { "--cpu-sequential" } else { "fewer than two usable CPUs" };
            doc.environment.insert("cpu_lane".into(), serde_json::json!({"mode": "sequential", "why": why}));
        }
    }
}
