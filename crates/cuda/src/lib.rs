//! memscope-cuda: the CUDA target and GPU-only probes. Being written.

pub mod ops;

use memscope_core::{Probe, TargetError};

/// Number of CUDA GPUs, or why there are none ("no CUDA GPU found: ...").
pub fn device_count() -> Result<usize, String> {
    Err("no CUDA GPU found: CUDA target not written yet".into())
}

/// A CUDA GPU as a Target (stub until written).
pub struct CudaTarget;

impl CudaTarget {
    pub fn open(ordinal: usize) -> Result<Self, TargetError> {
        Err(TargetError::Unsupported(format!("cuda:{ordinal}: CUDA target not written yet")))
    }
}

/// GPU-only probes.
pub fn probes() -> Vec<Box<dyn Probe>> {
    Vec::new()
}

// Stub: never constructed until the real target is written.
impl memscope_core::Target for CudaTarget {
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
