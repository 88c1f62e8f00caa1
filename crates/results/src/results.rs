//! The results document: `{"schema": "memscope/1", "tool", "target", "environment", "findings",
//! "series", ...}` as docs/CONTRACTS.md fixes it. Extended (never changed) with "targets", "probes" and
//! "warnings", and "run" (whether the run that writes the file is in progress, finished or was
//! interrupted, and which probes did not run), "fleet" (the member documents of a merged file) and
//! "model" (the bottleneck model's ceilings, inputs and results, `model_section`).
//! Reading a file (the limits checked, where a bad one is wrong): read.rs.

use memscope_core::{Finding, Series, TargetInfo};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

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

    /// A finding's numeric value.
    pub fn number(&self, key: &str) -> Option<f64> {
        self.findings.get(key).and_then(|f| f.value.as_f64())
    }
}
