//! memscope-sim: the simulated hierarchy. Being written.

use memscope_core::{Probe, TargetError};

/// A simulated hierarchy as a Target (stub until written).
pub struct SimTarget;

impl SimTarget {
    pub fn from_preset(name: &str) -> Result<Self, TargetError> {
        Err(TargetError::Unsupported(format!("sim preset {name}: simulator not written yet")))
    }
    pub fn from_json_file(path: &std::path::Path) -> Result<Self, TargetError> {
        Err(TargetError::Unsupported(format!("sim file {}: simulator not written yet", path.display())))
    }
}

/// Names of the built-in presets.
pub fn presets() -> &'static [&'static str] {
    &["rtx4090", "l40s"]
}

/// Simulator-only probes (none yet).
pub fn probes() -> Vec<Box<dyn Probe>> {
    Vec::new()
}

// Stub: never constructed until the real target is written.
impl memscope_core::Target for SimTarget {
    fn info(&self) -> memscope_core::TargetInfo {
        unreachable!("stub")
    }
    fn alloc(&mut self, _bytes: u64) -> Result<memscope_core::Buffer, TargetError> {
        Err(TargetError::Unsupported("stub".into()))
    }
    fn free(&mut self, _buf: memscope_core::Buffer) {}
    fn flush(&mut self) -> Result<(), TargetError> {
        Ok(())
    }
    fn chase(&mut self, _spec: &memscope_core::ChaseSpec) -> Result<memscope_core::ChaseResult, TargetError> {
        Err(TargetError::Unsupported("stub".into()))
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}
