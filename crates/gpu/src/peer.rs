//! Peer access between two GPUs of the host (docs/INTERCONNECT.md): cuDeviceCanAccessPeer, then
//! cuCtxEnablePeerAccess from one primary context to the other (already enabled counts as done).
//! Never multicast objects (cuMulticastCreate): they can take shared GPUs out of service.

use super::{describe, Gpu, GpuError, GpuResult};
use cudarc::driver::sys;

impl Gpu {
    /// Let this GPU's kernels and copies reach `to`'s memory. `from`/`to`: the indices named in
    /// the message when there is no P2P path.
    pub fn enable_peer_access(&self, to: &Gpu, from_index: usize, to_index: usize) -> GpuResult<()> {
        let mut can = 0;
        let r = unsafe { sys::cuDeviceCanAccessPeer(&mut can, self.dev, to.dev) };
        if r != sys::CUresult::CUDA_SUCCESS {
            return Err(GpuError::invalid(format!("cuDeviceCanAccessPeer failed: {}", describe(r))));
        }
        if can == 0 {
            return Err(GpuError::invalid(format!(
                "cuDeviceCanAccessPeer: GPU {from_index} cannot access GPU {to_index}'s memory (no P2P path between them)"
            )));
        }
        self.bind()?;
        match unsafe { sys::cuCtxEnablePeerAccess(to.context(), 0) } {
            sys::CUresult::CUDA_SUCCESS | sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
            other => Err(GpuError::invalid(format!("cuCtxEnablePeerAccess: {}", describe(other)))),
        }
    }
}
