//! The results document: `{"schema": "memscope/1", "tool", "target", "environment", "findings",
//! "series", ...}` as docs/CONTRACTS.md fixes it. Extended (never changed) with "targets", "probes" and
//! "warnings", and "run" (whether the run that writes the file is in progress, finished or was
//! interrupted, and which probes did not run), "fleet" (the member documents of a merged file) and
//! "model" (the bottleneck model's ceilings, inputs and results, `model_section`).

use memscope_core::{Finding, Series, TargetInfo};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use crate::results_locate;

/// The schema tag every results file carries.
pub const SCHEMA: &str = "memscope/1";

/// Largest results file read (docs/CONTRACTS.md, "Limits"); a run of every probe writes under
/// 1 MiB.
pub const MAX_RESULTS_BYTES: usize = 32 << 20;
/// Most findings in one document (a merged file's members each count alone).
pub const MAX_FINDINGS: usize = 100_000;
/// Most points in all the series of one document (x, y, spreads and marks together).
pub const MAX_SERIES_POINTS: usize = 2_000_000;
/// Most member documents in a merged file.
pub const MAX_FLEET_MEMBERS: usize = 4096;

/// The counts that size a reader's work, checked on the parsed JSON before it becomes a
/// `Results`; `at` is the document's path ("fleet[3].results." for a member).
fn check_counts(v: &Value, at: &str) -> Result<(), String> {
    if let Some(f) = v.get("findings").and_then(Value::as_object) {
        if f.len() > MAX_FINDINGS {
            return Err(format!("{at}findings: {} findings, at most {MAX_FINDINGS} (MAX_FINDINGS)", f.len()));
        }
    }
    if let Some(series) = v.get("series").and_then(Value::as_object) {
        let mut points = 0usize;
        for s in series.values() {
            if let Some(o) = s.as_object() {
                points += o.values().filter_map(Value::as_array).map(Vec::len).sum::<usize>();
            }
        }
        if points > MAX_SERIES_POINTS {
            return Err(format!("{at}series: {points} points in all, at most {MAX_SERIES_POINTS} (MAX_SERIES_POINTS)"));
        }
    }
    if let Some(fleet) = v.get("fleet").and_then(Value::as_array) {
        if fleet.len() > MAX_FLEET_MEMBERS {
            return Err(format!("{at}fleet: {} members, at most {MAX_FLEET_MEMBERS}", fleet.len()));
        }
        for (i, m) in fleet.iter().enumerate() {
            if let Some(r) = m.get("results") {
                check_counts(r, &format!("{at}fleet[{i}].results."))?;
            }
        }
    }
    Ok(())
}

/// Which memscope made the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    /// Git commit of the source, when known at build time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_commit: Option<String>,
    /// The command line that produced the file.
    #[serde(default)]
    pub command: Vec<String>,
}

/// Outcome of one probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProbeStatus {
    Ok,
    Waived,
    Failed,
}

/// What happened to one probe on one target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRecord {
    pub target: String,
    pub status: ProbeStatus,
    /// Why waived, or the error when failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Wall time of the probe in seconds.
    pub duration_s: f64,
    /// Warnings (e.g. the clock moved during the probe).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Where the run writing a results file stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunPhase {
    /// Written at the start and after every probe: the run has not ended (or was killed).
    InProgress,
    /// The run ended normally.
    Finished,
    /// The run ended on SIGINT or SIGTERM; `probes_not_run` lists what it did not measure.
    Interrupted,
}

/// The "run" section: absent in files written before it existed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    pub state: RunPhase,
    /// "SIGINT" or "SIGTERM" when interrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// Planned probes ("KEY@TARGET") with no record yet when the run was interrupted, the one that
    /// was running first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes_not_run: Vec<String>,
}

pub(crate) fn run_exemplar() -> Value {
    serde_json::json!({"state": "interrupted", "signal": "SIGINT", "probes_not_run": ["p@cpu"]})
}

/// A results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub schema: String,
    pub tool: ToolInfo,
    /// The primary target (a GPU or simulated GPU when one ran, else the CPU).
    pub target: TargetInfo,
    /// Provenance: host, OS, CPU model, timestamps, huge pages, GPU clocks before/after...
    pub environment: Map<String, Value>,
    /// Findings under stable dotted keys; each records the target that produced it.
    pub findings: BTreeMap<String, Finding>,
    /// Raw series under dotted keys.
    pub series: BTreeMap<String, Series>,
    /// Every target of the run (the primary first).
    #[serde(default)]
    pub targets: Vec<TargetInfo>,
    /// Per probe key ("latency@cuda:0"): status, reason, duration.
    #[serde(default)]
    pub probes: BTreeMap<String, ProbeRecord>,
    /// Where the run that wrote the file stands (in progress, finished, interrupted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunState>,
    /// A merged file (`memscope merge`): every member document as read, tagged by host and rank;
    /// absent in the results of one run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fleet: Vec<crate::merge::FleetMember>,
    /// The bottleneck model (seed 003): the ceilings it took from the findings and its results;
    /// absent when no model was evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<crate::model_section::ModelSection>,
}

impl Results {
    /// An empty document for `target`.
    pub fn new(tool: ToolInfo, target: TargetInfo, environment: Map<String, Value>) -> Self {
        Results {
            schema: SCHEMA.to_string(),
            tool,
            targets: vec![target.clone()],
            target,
            environment,
            findings: BTreeMap::new(),
            series: BTreeMap::new(),
            probes: BTreeMap::new(),
            run: None,
            fleet: vec![],
            model: None,
        }
    }

    /// Parse a results file, checking the schema tag. An error names where the file is wrong, as
    /// a JSON path (`findings["l1.hit_latency_ns"].value: invalid type ...`).
    pub fn from_json(bytes: &[u8]) -> Result<Self, String> {
        if bytes.len() > MAX_RESULTS_BYTES {
            return Err(format!(
                "the file is over {} MiB (MAX_RESULTS_BYTES, docs/CONTRACTS.md \"Limits\")",
                MAX_RESULTS_BYTES >> 20
            ));
        }
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        check_counts(&v, "")?;
        if !v.is_object() {
            return Err(format!(
                "not a memscope results file: the top level is {}, not an object",
                results_locate::kind(&v)
            ));
        }
        match v.get("schema") {
            Some(Value::String(s)) if s == SCHEMA => {}
            Some(Value::String(other)) => return Err(format!("schema is {other:?}, expected {SCHEMA:?}")),
            Some(other) => {
                return Err(format!(
                    "schema is {other} ({}), expected the string {SCHEMA:?}",
                    results_locate::kind(other)
                ))
            }
            None => return Err(format!("no \"schema\" field (expected {SCHEMA:?})")),
        }
        match serde_json::from_value::<Results>(v.clone()) {
            Ok(mut r) => {
                // (files written before targets carried capability flags)
                r.target.fill_legacy_capabilities();
                r.targets.iter_mut().for_each(|t| t.fill_legacy_capabilities());
                Ok(r)
            }
            Err(e) => {
                Err(format!("not a memscope results file: {}", results_locate::locate(&v).unwrap_or(e.to_string())))
            }
        }
    }

    /// A finding's numeric value.
    pub fn number(&self, key: &str) -> Option<f64> {
        self.findings.get(key).and_then(|f| f.value.as_f64())
    }
}
