//! memscope-cuda: the CUDA target (docs/ARCHITECTURE.md: `cuda` implements the `Target` trait on the
//! GPU layer, kernels compiled at run time by NVRTC), the GPU-only probes (bw, launch, peak,
//! coalesce, store, fence, l2.slices; seeds 000, 003 and 004) and the bottleneck-model operations
//! (seed 003), all on the one GPU layer, the memscope-gpu crate (re-exported here as `gpu`).

pub use memscope_gpu as gpu;
pub mod ops;
mod peer;
pub mod prewarm;
pub mod probes;
mod target;

pub use gpu::nvml::nvml_snapshot;
pub use gpu::{GpuError, GpuResult};
pub use target::CudaTarget;

/// Number of CUDA GPUs, or why there are none ("no CUDA GPU found: ...").
pub fn device_count() -> GpuResult<usize> {
    gpu::device_count()
}
