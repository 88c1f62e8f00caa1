//! memscope-cpu: the host CPU as a `Target` and the CPU-only probes. Being written.

use memscope_core::{Probe, TargetError};

/// The host CPU target (stub until written).
pub struct CpuTarget;

impl CpuTarget {
    pub fn new() -> Result<Self, TargetError> {
        Err(TargetError::Unsupported("CPU target not written yet".into()))
    }
}

/// CPU-only probes.
pub fn probes() -> Vec<Box<dyn Probe>> {
    Vec::new()
}

// Stub: never constructed until the real target is written.
impl memscope_core::Target for CpuTarget {
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
