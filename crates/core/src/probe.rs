//! The probe registry's building blocks (nvbandwidth-style): a probe has a stable key, a one-line
//! description, an applicability check that waives it with a reason, and a run that follows
//! plan -> measure -> analyze. Library code never prints: progress goes through `Progress`.

use crate::finding::{Finding, Series};
use crate::target::{Target, TargetError, TargetInfo};
use std::collections::BTreeMap;

/// Whether a probe applies to a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applicability {
    Applicable,
    /// Does not apply; the reason is shown by `memscope list` and recorded in results.
    Waived(String),
}

impl Applicability {
    /// Applicable when the target has the capability (`TargetInfo::capabilities`), otherwise
    /// waived with `reason`: the rule of every backend-specific probe.
    pub fn only_if(capable: bool, reason: &str) -> Self {
        if capable {
            Applicability::Applicable
        } else {
            Applicability::Waived(reason.to_string())
        }
    }
}

/// What one probe produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProbeOutput {
    /// Findings under stable dotted keys (`l1.hit_latency_ns`).
    pub findings: BTreeMap<String, Finding>,
    /// Raw series under dotted keys (`latency.l1_cached`).
    pub series: BTreeMap<String, Series>,
    /// Warnings worth surfacing (clock moved during the probe, ...).
    pub warnings: Vec<String>,
}

impl ProbeOutput {
    pub fn finding(&mut self, key: &str, f: Finding) {
        self.findings.insert(key.to_string(), f);
    }
    pub fn series(&mut self, key: &str, s: Series) {
        self.series.insert(key.to_string(), s);
    }
}

/// Errors of a probe run.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("{0}")]
    Failed(String),
}

/// Progress reporting for long work (the binary renders it as an indicatif bar).
pub trait Progress: Send + Sync {
    /// A phase of `total` steps begins.
    fn start(&self, total: u64, message: &str);
    /// `n` more steps are done.
    fn advance(&self, n: u64);
    /// A short status line.
    fn message(&self, message: &str);
}

/// Progress that goes nowhere (tests, --quiet).
pub struct NoProgress;
impl Progress for NoProgress {
    fn start(&self, _total: u64, _message: &str) {}
    fn advance(&self, _n: u64) {}
    fn message(&self, _message: &str) {}
}

/// Everything a probe run gets.
pub struct ProbeContext<'a> {
    pub target: &'a mut dyn Target,
    /// Smaller sweeps and fewer repetitions (`memscope run --quick`).
    pub quick: bool,
    pub progress: &'a dyn Progress,
    /// Findings of probes that already ran in this session (e.g. `l1.capacity_bytes` to size an
    /// eviction-set pool). Read-only.
    pub earlier: &'a BTreeMap<String, Finding>,
}

impl ProbeContext<'_> {
    /// The target as the backend type `T` a backend-specific probe runs on, when it is one
    /// (`target::concrete`).
    pub fn target_as<T: Target + 'static>(&mut self) -> Option<&mut T> {
        crate::target::concrete(self.target)
    }
}

/// One mechanism measured: plan -> measure -> analyze. Implementations keep `analyze` a pure
/// function of the measured data so it can be tested on synthetic input.
pub trait Probe: Send + Sync {
    /// Stable key ("latency", "cpu.stride", "bw").
    fn key(&self) -> &'static str;
    /// One line for `memscope list`.
    fn description(&self) -> &'static str;
    /// Whether it applies to this target.
    fn applicability(&self, target: &TargetInfo) -> Applicability;
    /// Keys of the probes whose findings this one reads (`ProbeContext::earlier`). The runner
    /// adds them, in registry order, when a run asks for this probe alone, so a probe run alone
    /// measures what it measures in the full set.
    fn needs(&self) -> &'static [&'static str] {
        &[]
    }
    /// Whether it must run alone: its figures are timed on the host or it uses what the GPUs of a
    /// host share (the host link, every GPU, device-wide counters), so the runner pauses the CPU
    /// lane while it runs and runs it one GPU at a time (docs/ARCHITECTURE.md, "Data flow of
    /// `memscope run`"). The registry (crates/registry) declares it, with the reason.
    fn runs_alone(&self) -> bool {
        false
    }
    /// Run it.
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError>;
}
