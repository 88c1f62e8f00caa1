//! memscope-cuda: the CUDA target (DESIGN.md: `cuda` implements the `Target` trait through cudarc,
//! kernels compiled at run time by NVRTC) and the GPU-only probes (bw, launch, peak, coalesce,
//! store, fence, l2.slices; seeds 000, 003 and 004).

mod driver;
pub mod kernels;
pub mod nvml;
pub mod ops;
mod peer;
pub mod probes;
mod target;

pub use nvml::nvml_snapshot;
pub use target::CudaTarget;

use memscope_core::Probe;

/// Number of CUDA GPUs, or why there are none ("no CUDA GPU found: ...").
pub fn device_count() -> Result<usize, String> {
    driver::device_count()
}

/// GPU-only probes (waived on other targets: "needs a real CUDA GPU").
pub fn probes() -> Vec<Box<dyn Probe>> {
    probes::all()
}
