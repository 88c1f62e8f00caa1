//! Merging results documents (`memscope merge`, and the merged file of a run over several
//! targets): the files of many GPUs and hosts in one document whose `fleet` holds every member as
//! read, each target labelled `MEMBER/TARGET` without collisions.

use crate::results::Results;
use memscope_core::{Finding, TargetInfo};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// One results document inside a merged file, as it was read (nothing in it renamed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FleetMember {
    /// The host, `-rankN` under a scheduler, `#K` added where a target label (`ID/TARGET`) would
    /// repeat: labels are unique in a merged file.
    pub id: String,
    /// `environment.host` of the member's run.
    pub host: String,
    /// The scheduler's rank of the run (`environment.scheduler.rank`), when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u64>,
    /// The scheduler's job id (`environment.scheduler.job_id`), when it had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// The file it was merged from, as named to `merge`.
    pub source: String,
    /// The member's own results document.
    pub results: Results,
}

/// The targets of one document: `targets`, or the primary one in files that have no list.
pub fn doc_targets(r: &Results) -> Vec<&TargetInfo> {
    if r.targets.is_empty() {
        vec![&r.target]
    } else {
        r.targets.iter().collect()
    }
}

/// A finding of `target` in `r` (findings without a target tag belong to the primary target).
pub fn finding_of<'a>(r: &'a Results, target: &str, key: &str) -> Option<&'a Finding> {
    r.findings.get(key).filter(|f| f.target.as_deref().unwrap_or(&r.target.id) == target)
}

fn scheduler_field(r: &Results, name: &str) -> Option<Value> {
    r.environment.get("scheduler").and_then(|s| s.get(name)).cloned()
}

/// A merged document's members, or the document itself as one member (from `source`).
pub fn members_of(source: &str, r: Results) -> Vec<FleetMember> {
    if !r.fleet.is_empty() {
        return r.fleet;
    }
    let host = r.environment.get("host").and_then(Value::as_str).unwrap_or("unknown-host").to_string();
    let rank = scheduler_field(&r, "rank").and_then(|v| v.as_u64());
    let job = scheduler_field(&r, "job_id").and_then(|v| v.as_str().map(String::from));
    let id = match rank {
        Some(n) => format!("{host}-rank{n}"),
        None => host.clone(),
    };
    vec![FleetMember { id, host, rank, job, source: source.to_string(), results: r }]
}

/// The label of a target of a member: `MEMBER/TARGET`.
pub fn label(member: &FleetMember, target: &TargetInfo) -> String {
    format!("{}/{}", member.id, target.id)
}

/// Merge documents (`(source, results)`, merged files flattened into their members) into one
/// `memscope/1` document whose `fleet` holds every member; a member id gets `#K` where one of
/// its targets' labels would repeat, so no two targets share a label. `targets` lists every target as `MEMBER/TARGET`.
pub fn merge(inputs: Vec<(String, Results)>, tool: crate::results::ToolInfo, merged_at: &str) -> Results {
    let mut members: Vec<FleetMember> = vec![];
    for (source, r) in inputs {
        for mut m in members_of(&source, r) {
            let base = m.id.clone();
            let mut k = 1;
            while members.iter().any(|o| {
                doc_targets(&o.results)
                    .iter()
                    .any(|a| doc_targets(&m.results).iter().any(|b| label(o, a) == label(&m, b)))
            }) {
                k += 1;
                m.id = format!("{base}#{k}");
            }
            members.push(m);
        }
    }
    let mut targets = vec![];
    for m in &members {
        for t in doc_targets(&m.results) {
            let mut q = t.clone();
            q.id = label(m, t);
            q.details.insert("host".into(), json!(m.host));
            q.details.insert("source".into(), json!(m.source));
            targets.push(q);
        }
    }
    let hosts: std::collections::BTreeSet<&str> = members.iter().map(|m| m.host.as_str()).collect();
    let fleet_target = TargetInfo {
        kind: "fleet".into(),
        id: "fleet".into(),
        name: format!("fleet of {} targets on {} host(s)", targets.len(), hosts.len()),
        clock_hz: None,
        bypass_supported: false,
        aliasing_supported: false,
        per_hop_supported: false,
        gpu_hierarchy: false,
        units: targets.len() as u32,
        capabilities: memscope_core::Capabilities { unit_name: "target".into(), ..Default::default() },
        details: Map::new(),
    };
    let mut env = Map::new();
    env.insert("merged_at".into(), json!(merged_at));
    env.insert("sources".into(), json!(members.iter().map(|m| m.source.clone()).collect::<Vec<_>>()));
    let mut doc = Results::new(tool, fleet_target, env);
    doc.targets = targets;
    doc.fleet = members;
    doc
}
