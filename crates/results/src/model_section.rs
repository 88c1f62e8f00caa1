//! The "model" section of a `memscope/1` results document (seed 003's bottleneck model; docs/MODEL.md):
//! the ceilings the model used and the findings they came from, beside the model's results; and
//! reading the ceilings of a file for `predict --ceilings`: a `memscope run` results file (from
//! its findings, `memscope_model::run_ceilings`) or a `memscope/bottleneck-model/1` file written
//! by `memscope ceilings|model|fusion|batch`.

use crate::results::{Results, SCHEMA};
use memscope_core::Finding;
use memscope_model::bottleneck::SessionCeilings;
use memscope_model::run_ceilings::{self as mc, CeilingInput, FloorFallback, LeftOut, RunCeilings};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// The schema tag of the files `memscope ceilings|model|fusion|batch` write.
pub const BOTTLENECK_MODEL_SCHEMA: &str = "memscope/bottleneck-model/1";

/// The "model" section: absent in results files without a model evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSection {
    /// The ceilings every prediction of the section used.
    pub ceilings: SessionCeilings,
    /// The prediction inputs: which finding (key, value, unit, method) fed which ceiling.
    pub inputs: Vec<CeilingInput>,
    /// Optional findings not used, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
    /// The model's results by part ("evaluation", "fusion", "batch"), as the part computes them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parts: BTreeMap<String, Value>,
}

impl ModelSection {
    /// A section with the ceilings of a run and no results yet.
    pub fn new(run: RunCeilings) -> Self {
        ModelSection { ceilings: run.ceilings, inputs: run.inputs, left_out: run.left_out, parts: BTreeMap::new() }
    }
}

/// The findings of one target of a document (untagged findings belong to the primary target).
pub fn findings_of(r: &Results, target: &str) -> BTreeMap<String, Finding> {
    r.findings
        .iter()
        .filter(|(_, f)| f.target.as_deref().unwrap_or(&r.target.id) == target)
        .map(|(k, f)| (k.clone(), f.clone()))
        .collect()
}

/// The ceilings of a `memscope run` document: from the findings of its primary target (the GPU
/// when one ran). A merged file is refused: its members are separate machines.
pub fn ceilings_of_run(r: &Results, fallback: FloorFallback) -> Result<(String, RunCeilings), CeilingsFileError> {
    if !r.fleet.is_empty() {
        let members: Vec<String> =
            r.targets.iter().filter(|t| !t.capabilities.host_cores).map(|t| t.id.clone()).collect::<Vec<_>>();
        return Err(CeilingsFileError::Merged { targets: members.join(", ") });
    }
    let target = r.target.id.clone();
    mc::from_findings(&findings_of(r, &target), fallback)
        .map(|c| (target.clone(), c))
        .map_err(|source| CeilingsFileError::Findings { target, source })
}

/// Where a file's ceilings came from.
#[derive(Debug, Clone, PartialEq)]
pub enum CeilingsSource {
    /// A `memscope run` results file: the findings of `target`.
    Run { target: String, run: RunCeilings },
    /// A `memscope/bottleneck-model/1` file (or a bare ceilings object).
    ModelFile { command: Option<String>, ceilings: SessionCeilings },
}

impl CeilingsSource {
    pub fn ceilings(&self) -> &SessionCeilings {
        match self {
            CeilingsSource::Run { run, .. } => &run.ceilings,
            CeilingsSource::ModelFile { ceilings, .. } => ceilings,
        }
    }
}

/// Why a file gave no ceilings. One line each, saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum CeilingsFileError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("{0}")]
    BadResults(String),
    #[error(
        "a merged file (memscope merge) holds several machines: give one member's results file (GPU targets: {targets})"
    )]
    Merged { targets: String },
    #[error("target {target}: {source}")]
    Findings {
        target: String,
        #[source]
        source: mc::FindingsCeilingsError,
    },
    #[error("schema {0:?} holds no ceilings: expected a `memscope run` results file ({SCHEMA:?}) or a `memscope ceilings --out` file ({BOTTLENECK_MODEL_SCHEMA:?})")]
    UnknownSchema(String),
    #[error("not a ceilings file: {0} (expected bandwidth_bytes_per_s, launch_floor_s and peak_flops_per_s, at the top level or under \"ceilings\")")]
    BadModelFile(String),
}

/// The ceilings of a file: a `memscope/1` results document through its findings; a
/// `memscope/bottleneck-model/1` file (or an object with no schema) from its top level, or from
/// its "ceilings" object as `model`, `fusion` and `batch` write it.
pub fn read_ceilings(bytes: &[u8], fallback: FloorFallback) -> Result<CeilingsSource, CeilingsFileError> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| CeilingsFileError::NotJson(e.to_string()))?;
    let Value::Object(top) = &v else {
        return Err(CeilingsFileError::BadModelFile("the top level is not an object".into()));
    };
    match top.get("schema") {
        Some(Value::String(s)) if s == SCHEMA => {
            let r = Results::from_json(bytes).map_err(CeilingsFileError::BadResults)?;
            let (target, run) = ceilings_of_run(&r, fallback)?;
            Ok(CeilingsSource::Run { target, run })
        }
        Some(Value::String(s)) if s != BOTTLENECK_MODEL_SCHEMA => Err(CeilingsFileError::UnknownSchema(s.clone())),
        Some(other) if !other.is_string() => Err(CeilingsFileError::UnknownSchema(other.to_string())),
        _ => {
            let command = top.get("command").and_then(Value::as_str).map(String::from);
            let body = match top.get("ceilings") {
                Some(c) if !top.contains_key("bandwidth_bytes_per_s") => c.clone(),
                _ => v.clone(),
            };
            let ceilings = serde_json::from_value(body).map_err(|e| CeilingsFileError::BadModelFile(e.to_string()))?;
            Ok(CeilingsSource::ModelFile { command, ceilings })
        }
    }
}
