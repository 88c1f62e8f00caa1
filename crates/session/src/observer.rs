//! What a session reports while it runs (docs/ARCHITECTURE.md): a progress sink per probe and every results
//! file written. The binary renders them as indicatif bars; the library never prints.

use memscope_core::Progress;
use memscope_results::Results;
use std::path::Path;

/// Progress of one probe, ended with a short outcome ("12 findings", "failed").
pub trait ProbeProgress: Progress {
    fn finish(&self, outcome: &str);
}

/// Watches a session.
pub trait Observer: Send + Sync {
    /// Probe `probe` starts on target `target`; `shown` is false on lanes whose progress would
    /// overwrite another lane's (the CPU lane, GPUs after the first when they run in parallel).
    fn probe_started(&self, target: &str, probe: &str, shown: bool) -> Box<dyn ProbeProgress>;
    /// `path` was just rewritten with `doc`.
    fn file_written(&self, _path: &Path, _doc: &Results) {}
}

/// An observer that reports nothing.
pub struct Silent;

struct NoBar;
impl Progress for NoBar {
    fn start(&self, _total: u64, _message: &str) {}
    fn advance(&self, _n: u64) {}
    fn message(&self, _message: &str) {}
}
impl ProbeProgress for NoBar {
    fn finish(&self, _outcome: &str) {}
}

impl Observer for Silent {
    fn probe_started(&self, _target: &str, _probe: &str, _shown: bool) -> Box<dyn ProbeProgress> {
        Box::new(NoBar)
    }
}
