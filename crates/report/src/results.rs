//! The results document: `{"schema": "memscope/1", "tool", "target", "environment", "findings",
//! "series", ...}` as DESIGN.md fixes it. Extended (never changed) with "targets", "probes" and
//! "warnings".

use memscope_core::{Finding, Series, TargetInfo};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The schema tag every results file carries.
pub const SCHEMA: &str = "memscope/1";

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
        }
    }

    /// Parse a results file, checking the schema tag.
    pub fn from_json(bytes: &[u8]) -> Result<Self, String> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        match v.get("schema").and_then(Value::as_str) {
            Some(SCHEMA) => {}
            Some(other) => return Err(format!("schema is {other:?}, expected {SCHEMA:?}")),
            None => return Err(format!("no \"schema\" field (expected {SCHEMA:?})")),
        }
        serde_json::from_value(v).map_err(|e| format!("not a memscope results file: {e}"))
    }

    /// A finding's numeric value.
    pub fn number(&self, key: &str) -> Option<f64> {
        self.findings.get(key).and_then(|f| f.value.as_f64())
    }
}
