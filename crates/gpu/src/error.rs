//! The one error type of GPU work in this crate (docs/ARCHITECTURE.md): every driver, NVRTC and cuBLAS failure,
//! the free-memory check, a poisoned process and a failed kernel check, each with a message that
//! says what to do next. Converts into the discovery errors (`TargetError`, `ProbeError`).

use cudarc::driver::sys;
use memscope_core::{ProbeError, TargetError};

/// A failure of GPU work.
#[derive(Debug, Clone, thiserror::Error)]
pub enum GpuError {
    /// No usable CUDA GPU (no driver, no device, the ordinal out of range); the reason names
    /// what is missing ("no CUDA GPU found: libcuda.so (the NVIDIA driver) cannot be loaded").
    #[error("{reason}")]
    NoGpu { reason: String },
    /// A driver (or cuBLAS) call failed.
    #[error("{call}: {code}: {text}")]
    Driver { call: String, code: String, text: String },
    /// The free-memory check refused an allocation.
    #[error("out of memory: asked for {asked_bytes} bytes, {free_bytes} free; use smaller sizes or free the GPU")]
    OutOfMemory { asked_bytes: u64, free_bytes: u64 },
    /// NVRTC could not compile a kernel file (or could not be loaded).
    #[error("NVRTC failed on {file} for {arch}: {log}")]
    Compile { file: String, arch: String, log: String },
    /// An earlier fault left the process's CUDA state unusable.
    #[error("{why}")]
    Poisoned { why: String },
    /// A kernel's result disagrees with the host reference.
    #[error("kernel check failed: {kernel} (rel err {rel_err:.3e} > {tolerance:.0e})")]
    Check { kernel: String, rel_err: f64, tolerance: f64 },
    /// A request the layer cannot carry out (an unknown kernel, a bad size).
    #[error("{what}")]
    Invalid { what: String },
}

/// Result of GPU work.
pub type GpuResult<T> = Result<T, GpuError>;

/// "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access ..." for a driver result.
pub(crate) fn describe(r: sys::CUresult) -> String {
    format!("{r:?}: {}", text_of(r))
}

fn text_of(r: sys::CUresult) -> String {
    let e = cudarc::driver::DriverError(r);
    e.error_string().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Check one driver call.
pub(crate) fn ck(r: sys::CUresult, call: &str) -> GpuResult<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Driver { call: call.to_string(), code: format!("{r:?}"), text: text_of(r) })
    }
}

impl GpuError {
    pub fn invalid(what: impl Into<String>) -> Self {
        GpuError::Invalid { what: what.into() }
    }
}

impl From<GpuError> for TargetError {
    fn from(e: GpuError) -> Self {
        match e {
            GpuError::OutOfMemory { asked_bytes, free_bytes } => TargetError::OutOfMemory { asked_bytes, free_bytes },
            e => TargetError::Device(e.to_string()),
        }
    }
}

impl From<GpuError> for ProbeError {
    fn from(e: GpuError) -> Self {
        ProbeError::Target(e.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_errors_name_the_call_and_map_to_device_failures() {
        let e = GpuError::Driver { call: "cuMemAlloc".into(), code: "CUDA_ERROR_X".into(), text: "bad".into() };
        assert_eq!(e.to_string(), "cuMemAlloc: CUDA_ERROR_X: bad");
        assert!(matches!(TargetError::from(e), TargetError::Device(m) if m.contains("cuMemAlloc")));
        let oom = TargetError::from(GpuError::OutOfMemory { asked_bytes: 10, free_bytes: 2 });
        assert!(matches!(oom, TargetError::OutOfMemory { asked_bytes: 10, free_bytes: 2 }));
        let check = GpuError::Check { kernel: "add_f32".into(), rel_err: 0.5, tolerance: 1e-5 };
        assert_eq!(check.to_string(), "kernel check failed: add_f32 (rel err 5.000e-1 > 1e-5)");
    }
}
