//! The bottleneck model's ceilings (seed 003) taken from the findings of one `memscope run`
//! session (docs/MODEL.md): which finding feeds which ceiling of `SessionCeilings`, every missing,
//! undetermined or unusable finding named at once with the command that measures it, and the
//! list of inputs (key, value, unit, method) a results file records beside its predictions.
//! Pure: no I/O.
//!
//! | ceiling                          | finding                               | probe  |
//! |----------------------------------|---------------------------------------|--------|
//! | `bandwidth_bytes_per_s.<p>`      | `bw.<p>_bytes_per_s`, p = copy, read, write | bw |
//! | `peak_flops_per_s.<q>`           | `peak.<q>_flops_per_s`, q = fp32, fp16 (bf16 when measured) | peak |
//! | `launch_floor_s.<class>`         | `launch.op.<class>_floor_s` (`keys::LAUNCH_CLASSES`) | launch |
//!
//! With `FloorFallback::EmptyKernel`, a class without its own finding takes `launch.floor_s` (the
//! empty kernel's floor, a lower bound on every class's), and its input says so.

use crate::bottleneck::SessionCeilings;
use memscope_core::finding::{Confidence, Finding};
use memscope_core::keys;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The bandwidth patterns the model needs (`Pattern` names).
pub const BANDWIDTH_PATTERNS: [&str; 3] = ["copy", "read", "write"];
/// The precisions whose peak the model needs.
pub const PEAK_PRECISIONS: [&str; 2] = ["fp32", "fp16"];
/// Precisions whose peak is used when measured (bf16 falls back to fp16's and says so otherwise).
pub const OPTIONAL_PEAK_PRECISIONS: [&str; 1] = ["bf16"];

/// What a launch class without its own `launch.op.<class>_floor_s` finding gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloorFallback {
    /// Nothing: the class's finding is reported missing.
    PerClassOnly,
    /// `launch.floor_s`, the empty kernel's floor, recorded in the input as standing in.
    EmptyKernel,
}

/// One finding the ceilings were taken from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CeilingInput {
    /// The ceiling it feeds, as a path into `SessionCeilings`: `bandwidth_bytes_per_s.copy`,
    /// `peak_flops_per_s.fp16`, `launch_floor_s.matmul.fp32`.
    pub ceiling: String,
    /// The finding's key.
    pub key: String,
    pub value: f64,
    pub unit: String,
    pub method: String,
    pub confidence: Confidence,
    /// The target that measured it, as the finding records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Set when the finding stands in for another one that is absent: which, and on what ground.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stands_in_for: Option<String>,
}

/// An optional finding that was not used, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeftOut {
    pub key: String,
    pub reason: String,
}

/// The ceilings of one session and where each came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunCeilings {
    pub ceilings: SessionCeilings,
    /// One entry per ceiling, in the order bandwidths, peaks, launch floors.
    pub inputs: Vec<CeilingInput>,
    /// Optional findings not used (absent or undetermined), with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
}

impl RunCeilings {
    /// The input feeding `ceiling` (a path such as `launch_floor_s.add`).
    pub fn input(&self, ceiling: &str) -> Option<&CeilingInput> {
        self.inputs.iter().find(|i| i.ceiling == ceiling)
    }
}

/// The path of a bandwidth ceiling.
pub fn bandwidth_ceiling(pattern: &str) -> String {
    format!("bandwidth_bytes_per_s.{pattern}")
}
/// The path of a peak ceiling.
pub fn peak_ceiling(precision: &str) -> String {
    format!("peak_flops_per_s.{precision}")
}
/// The path of a launch-floor ceiling.
pub fn launch_ceiling(class: &str) -> String {
    format!("launch_floor_s.{class}")
}

/// What is wrong with one finding the ceilings need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Not in the findings.
    Missing { key: String },
    /// Present but undetermined; the probe's reason.
    Undetermined { key: String, reason: String },
    /// Present but not a positive number in the expected unit.
    Unusable { key: String, why: String },
}

impl Problem {
    pub fn key(&self) -> &str {
        match self {
            Problem::Missing { key } | Problem::Undetermined { key, .. } | Problem::Unusable { key, .. } => key,
        }
    }
}

/// The ceilings could not be taken from the findings: every problem at once, and the command that
/// measures the findings concerned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct FindingsCeilingsError {
    pub problems: Vec<Problem>,
}

impl FindingsCeilingsError {
    /// `memscope run -p P,...` with the probes (bw, launch, peak) that measure the keys concerned.
    pub fn command(&self) -> String {
        let probes: Vec<&str> = ["bw", "launch", "peak"]
            .into_iter()
            .filter(|p| self.problems.iter().any(|q| probe_of(q.key()) == *p))
            .collect();
        format!("memscope run -p {}", probes.join(","))
    }

    fn message(&self) -> String {
        let list = |f: &dyn Fn(&Problem) -> Option<String>| self.problems.iter().filter_map(f).collect::<Vec<_>>();
        let missing = list(&|p| matches!(p, Problem::Missing { .. }).then(|| p.key().to_string()));
        let undetermined = list(&|p| match p {
            Problem::Undetermined { key, reason } => Some(format!("{key} ({reason})")),
            _ => None,
        });
        let unusable = list(&|p| match p {
            Problem::Unusable { key, why } => Some(format!("{key} ({why})")),
            _ => None,
        });
        let mut parts = vec![];
        for (label, items) in [("missing", missing), ("undetermined", undetermined), ("unusable", unusable)] {
            if !items.is_empty() {
                parts.push(format!("{label} {}", items.join(", ")));
            }
        }
        format!(
            "the findings do not give the model's ceilings: {}; measure them with `{}` on the GPU",
            parts.join("; "),
            self.command()
        )
    }
}

/// The probe that measures a key (by its first dotted part).
fn probe_of(key: &str) -> &str {
    key.split('.').next().unwrap_or(key)
}

/// One line (a probe's reason may hold newlines; the error is one line).
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A finding usable as a ceiling: present, determined, a positive finite number in `unit`.
fn take<'a>(findings: &'a BTreeMap<String, Finding>, key: &str, unit: &str) -> Result<(f64, &'a Finding), Problem> {
    let key_s = || key.to_string();
    let f = findings.get(key).ok_or_else(|| Problem::Missing { key: key_s() })?;
    if f.confidence == Confidence::Undetermined || f.value.is_null() {
        let reason = f.note.as_deref().map(one_line).unwrap_or_else(|| "no reason recorded".into());
        return Err(Problem::Undetermined { key: key_s(), reason });
    }
    let v = f
        .as_f64()
        .ok_or_else(|| Problem::Unusable { key: key_s(), why: format!("value {} is not a number", f.value) })?;
    if f.unit != unit {
        return Err(Problem::Unusable { key: key_s(), why: format!("unit {:?}, expected {unit:?}", f.unit) });
    }
    if !(v.is_finite() && v > 0.0) {
        return Err(Problem::Unusable { key: key_s(), why: format!("value {v} is not a positive number") });
    }
    Ok((v, f))
}

fn input(ceiling: String, key: &str, value: f64, f: &Finding, stands_in_for: Option<String>) -> CeilingInput {
    CeilingInput {
        ceiling,
        key: key.to_string(),
        value,
        unit: f.unit.clone(),
        method: f.method.clone(),
        confidence: f.confidence,
        target: f.target.clone(),
        stands_in_for,
    }
}

/// The model's ceilings from one target's findings (keys as `keys.rs` builds them). Every problem
/// is collected before the error is returned, so one message names every finding to measure.
pub fn from_findings(
    findings: &BTreeMap<String, Finding>,
    fallback: FloorFallback,
) -> Result<RunCeilings, FindingsCeilingsError> {
    let mut c = SessionCeilings {
        bandwidth_bytes_per_s: BTreeMap::new(),
        launch_floor_s: BTreeMap::new(),
        peak_flops_per_s: BTreeMap::new(),
    };
    let (mut inputs, mut left_out, mut problems) = (vec![], vec![], vec![]);
    for pattern in BANDWIDTH_PATTERNS {
        let key = keys::bw_bytes_per_s(pattern);
        match take(findings, &key, "bytes/s") {
            Ok((v, f)) => {
                c.bandwidth_bytes_per_s.insert(pattern.into(), v);
                inputs.push(input(bandwidth_ceiling(pattern), &key, v, f, None));
            }
            Err(p) => problems.push(p),
        }
    }
    for (precision, required) in
        PEAK_PRECISIONS.iter().map(|p| (p, true)).chain(OPTIONAL_PEAK_PRECISIONS.iter().map(|p| (p, false)))
    {
        let key = keys::peak_flops_per_s(precision);
        match take(findings, &key, "flops/s") {
            Ok((v, f)) => {
                c.peak_flops_per_s.insert(precision.to_string(), v);
                inputs.push(input(peak_ceiling(precision), &key, v, f, None));
            }
            Err(p) if required => problems.push(p),
            Err(p) => left_out.push(LeftOut {
                key: key.clone(),
                reason: match p {
                    Problem::Missing { .. } => format!("not measured: {precision} predictions use the fp16 peak"),
                    Problem::Undetermined { reason, .. } => format!("undetermined ({reason})"),
                    Problem::Unusable { why, .. } => format!("unusable ({why})"),
                },
            }),
        }
    }
    let empty_kernel = take(findings, keys::LAUNCH_FLOOR_S, "s");
    let mut empty_kernel_problem = false;
    for class in keys::LAUNCH_CLASSES {
        let key = keys::launch_class_floor_s(class);
        match (take(findings, &key, "s"), fallback, &empty_kernel) {
            (Ok((v, f)), _, _) => {
                c.launch_floor_s.insert(class.into(), v);
                inputs.push(input(launch_ceiling(class), &key, v, f, None));
            }
            (Err(Problem::Missing { .. }), FloorFallback::EmptyKernel, Ok((v, f))) => {
                c.launch_floor_s.insert(class.into(), *v);
                let why = format!("{key} (not in the findings; the empty kernel's floor is a lower bound on it)");
                inputs.push(input(launch_ceiling(class), keys::LAUNCH_FLOOR_S, *v, f, Some(why)));
            }
            (Err(Problem::Missing { .. }), FloorFallback::EmptyKernel, Err(p)) => {
                if !empty_kernel_problem {
                    problems.push(p.clone());
                    empty_kernel_problem = true;
                }
            }
            (Err(p), _, _) => problems.push(p),
        }
    }
    if problems.is_empty() {
        Ok(RunCeilings { ceilings: c, inputs, left_out })
    } else {
        Err(FindingsCeilingsError { problems })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(v: f64, unit: &str) -> Finding {
        let mut f = Finding::number(v, unit, "synthetic", Confidence::High);
        f.target = Some("cuda:0".into());
        f
    }

    /// Every finding the model needs, with distinct values so a mix-up shows.
    fn full() -> BTreeMap<String, Finding> {
        let mut m = BTreeMap::new();
        for (i, p) in BANDWIDTH_PATTERNS.iter().enumerate() {
            m.insert(keys::bw_bytes_per_s(p), num(4e12 + i as f64 * 1e11, "bytes/s"));
        }
        m.insert(keys::peak_flops_per_s("fp32"), num(5e13, "flops/s"));
        m.insert(keys::peak_flops_per_s("fp16"), num(7e14, "flops/s"));
        for (i, c) in keys::LAUNCH_CLASSES.iter().enumerate() {
            m.insert(keys::launch_class_floor_s(c), num(3e-6 + i as f64 * 1e-7, "s"));
        }
        m.insert(keys::LAUNCH_FLOOR_S.into(), num(2e-6, "s"));
        m
    }

    #[test]
    fn every_finding_feeds_its_ceiling_and_is_listed_as_input() {
        let rc = from_findings(&full(), FloorFallback::PerClassOnly).unwrap();
        assert_eq!(rc.ceilings.bandwidth_bytes_per_s["copy"], 4e12);
        assert_eq!(rc.ceilings.bandwidth_bytes_per_s["read"], 4.1e12);
        assert_eq!(rc.ceilings.bandwidth_bytes_per_s["write"], 4.2e12);
        assert_eq!(rc.ceilings.peak_flops_per_s["fp16"], 7e14);
        assert_eq!(rc.ceilings.launch_floor_s["matmul.fp32"], 3e-6);
        assert_eq!(rc.ceilings.launch_floor_s.len(), keys::LAUNCH_CLASSES.len());
        assert_eq!(rc.inputs.len(), 3 + 2 + keys::LAUNCH_CLASSES.len());
        let i = rc.input("launch_floor_s.matmul.fp16").unwrap();
        assert_eq!((i.key.as_str(), i.value, i.unit.as_str()), ("launch.op.matmul_fp16_floor_s", 3.1e-6, "s"));
        assert_eq!((i.method.as_str(), i.target.as_deref(), &i.stands_in_for), ("synthetic", Some("cuda:0"), &None));
        // bf16 not measured: left out, with the reason; the model's own fallback says fp16.
        assert_eq!(rc.left_out.len(), 1);
        assert!(rc.left_out[0].reason.contains("fp16"), "{:?}", rc.left_out);
        // The ceilings work with the model's chooser.
        let cost = crate::bottleneck::add_cost(1 << 20, crate::bottleneck::Dtype::Fp32);
        let ch = rc.ceilings.choose(&cost, "add", crate::bottleneck::Dtype::Fp32).unwrap();
        assert_eq!(ch.launch_s, rc.ceilings.launch_floor_s["add"]);
    }

    #[test]
    fn missing_findings_are_all_named_with_the_command() {
        let mut m = full();
        m.remove(&keys::bw_bytes_per_s("read"));
        m.remove(&keys::peak_flops_per_s("fp16"));
        m.remove(&keys::launch_class_floor_s("gelu"));
        let e = from_findings(&m, FloorFallback::PerClassOnly).unwrap_err();
        let keys: Vec<&str> = e.problems.iter().map(Problem::key).collect();
        assert_eq!(keys, ["bw.read_bytes_per_s", "peak.fp16_flops_per_s", "launch.op.gelu_floor_s"]);
        assert_eq!(e.command(), "memscope run -p bw,launch,peak");
        let msg = e.to_string();
        assert!(msg.contains("missing bw.read_bytes_per_s, peak.fp16_flops_per_s, launch.op.gelu_floor_s"), "{msg}");
        assert!(msg.contains("`memscope run -p bw,launch,peak`") && !msg.contains('\n'), "{msg}");
        // Only the probes concerned.
        let mut m = full();
        m.remove(&keys::peak_flops_per_s("fp32"));
        assert_eq!(from_findings(&m, FloorFallback::PerClassOnly).unwrap_err().command(), "memscope run -p peak");
        // Nothing at all: every required key.
        let e = from_findings(&BTreeMap::new(), FloorFallback::PerClassOnly).unwrap_err();
        assert_eq!(e.problems.len(), 3 + 2 + keys::LAUNCH_CLASSES.len());
    }

    #[test]
    fn undetermined_and_unusable_findings_are_rejected_with_their_reason() {
        let mut m = full();
        m.insert(
            keys::peak_flops_per_s("fp32"),
            Finding::undetermined("flops/s", "cublasSgemm", "cuBLAS could not be loaded:\nlibcublas.so.13 missing"),
        );
        m.insert(keys::bw_bytes_per_s("copy"), num(4e12, "ns"));
        m.insert(keys::bw_bytes_per_s("write"), num(-1.0, "bytes/s"));
        m.insert(keys::launch_class_floor_s("add"), Finding::text("fast", "synthetic", Confidence::High));
        let e = from_findings(&m, FloorFallback::EmptyKernel).unwrap_err();
        assert_eq!(e.problems.len(), 4, "{:?}", e.problems);
        assert!(e.problems.contains(&Problem::Undetermined {
            key: "peak.fp32_flops_per_s".into(),
            reason: "cuBLAS could not be loaded: libcublas.so.13 missing".into()
        }));
        let msg = e.to_string();
        assert!(msg.contains("undetermined peak.fp32_flops_per_s (cuBLAS could not be loaded"), "{msg}");
        assert!(msg.contains("bw.copy_bytes_per_s (unit \"ns\", expected \"bytes/s\")"), "{msg}");
        assert!(msg.contains("bw.write_bytes_per_s (value -1 is not a positive number)"), "{msg}");
        assert!(msg.contains("launch.op.add_floor_s (value \"fast\" is not a number)"), "{msg}");
        assert!(!msg.contains('\n'));
    }

    #[test]
    fn empty_kernel_fallback_is_explicit_and_recorded() {
        let mut m = full();
        for c in keys::LAUNCH_CLASSES {
            if c != "add" {
                m.remove(&keys::launch_class_floor_s(c));
            }
        }
        // Without the fallback every class but add is missing.
        let e = from_findings(&m, FloorFallback::PerClassOnly).unwrap_err();
        assert_eq!(e.problems.len(), keys::LAUNCH_CLASSES.len() - 1);
        assert_eq!(e.command(), "memscope run -p launch");
        // With it, the empty kernel's floor stands in and each input says for what.
        let rc = from_findings(&m, FloorFallback::EmptyKernel).unwrap();
        assert_eq!(rc.ceilings.launch_floor_s["add"], full()[&keys::launch_class_floor_s("add")].as_f64().unwrap());
        assert_eq!(rc.ceilings.launch_floor_s["softmax"], 2e-6);
        let i = rc.input("launch_floor_s.softmax").unwrap();
        assert_eq!(i.key, keys::LAUNCH_FLOOR_S);
        assert!(i.stands_in_for.as_deref().unwrap().starts_with("launch.op.softmax_floor_s"));
        assert!(rc.input("launch_floor_s.add").unwrap().stands_in_for.is_none());
        // The fallback needs launch.floor_s itself; its absence is named once.
        m.remove(keys::LAUNCH_FLOOR_S);
        let e = from_findings(&m, FloorFallback::EmptyKernel).unwrap_err();
        assert_eq!(e.problems, vec![Problem::Missing { key: keys::LAUNCH_FLOOR_S.into() }]);
        // An undetermined class floor is not papered over by the fallback.
        let mut m = full();
        m.insert(keys::launch_class_floor_s("attention"), Finding::undetermined("s", "x", "kernel failed"));
        let e = from_findings(&m, FloorFallback::EmptyKernel).unwrap_err();
        assert_eq!(e.problems[0].key(), "launch.op.attention_floor_s");
    }

    #[test]
    fn measured_bf16_peak_is_used_and_an_undetermined_one_left_out() {
        let mut m = full();
        m.insert(keys::peak_flops_per_s("bf16"), num(8e14, "flops/s"));
        let rc = from_findings(&m, FloorFallback::PerClassOnly).unwrap();
        assert_eq!(rc.ceilings.peak_flops_per_s["bf16"], 8e14);
        assert!(rc.left_out.is_empty() && rc.input("peak_flops_per_s.bf16").is_some());
        m.insert(keys::peak_flops_per_s("bf16"), Finding::undetermined("flops/s", "x", "no bf16 cuBLAS"));
        let rc = from_findings(&m, FloorFallback::PerClassOnly).unwrap();
        assert!(!rc.ceilings.peak_flops_per_s.contains_key("bf16"));
        assert_eq!(rc.left_out[0].reason, "undetermined (no bf16 cuBLAS)");
    }

    #[test]
    fn run_ceilings_round_trip_through_json() {
        let mut m = full();
        m.remove(&keys::launch_class_floor_s("fma"));
        let rc = from_findings(&m, FloorFallback::EmptyKernel).unwrap();
        let back: RunCeilings = serde_json::from_str(&serde_json::to_string(&rc).unwrap()).unwrap();
        assert_eq!(back, rc);
    }
}
