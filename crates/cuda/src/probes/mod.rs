//! The GPU-only probes (docs/ARCHITECTURE.md: throughput experiments are backend-specific probes beside the
//! generic discovery probes): bw, launch, peak (seed 003's ceilings), coalesce (seed 000 footnote 1),
//! store and fence (seed 004), l2.slices (seed 000 appendix; waived here) and the slice function
//! from its slice map (l2.slices.function, run on request), and the SM memories'
//! constmem, texture and l1share (the constant caches, the read-only and texture paths, what
//! shares L1), smem, atomics, levelbw (bandwidth by level) and inflight (bandwidth by
//! parallelism), the per-SM L2 map (l2.sm_map) and the L2 partition bit over whole pages
//! (l2.partition). Each is waived on
//! non-CUDA targets and wraps its run in NVML readings so clock moves become warnings.

mod atomics;
mod bw;
mod bw_ce;
mod bw_launch;
mod coalesce;
mod constmem;
mod inflight;
mod l1share;
mod l2bw;
mod launch;
mod levelbw;
mod link;
mod link_fit;
mod link_latency;
mod link_time;
mod partition;
mod partition_fit;
#[cfg(test)]
mod partition_tests;
mod peak;
mod slices;
/// The L2 partition bit over many pages (the analysis of scripts/peers/l2_partition_peer.cu).
pub use slices::partition_pages as l2_partition;
/// The fit of the slice within a partition from the slice map's labels.
pub use slices::slice_fit as l2_slice_fit;
/// The slice within a partition as a residue modulo an odd count of XOR terms, and the frame's
/// share of it over consecutive pages.
pub use slices::slice_frames as l2_slice_frames;
/// The `l2.slices.function` finding from a slice map's labels.
pub use slices::slice_function as l2_slice_function;
pub use slices::slice_mod as l2_slice_mod;
mod sm_chase;
mod sm_fit;
mod sm_map;
mod sm_map_fit;
#[cfg(test)]
mod sm_map_tests;
mod smem;
mod smem_fit;
mod store;
mod texture;
mod timing;

use crate::CudaTarget;
use memscope_core::stats::Sample;
use memscope_core::{Applicability, ProbeContext, ProbeError, ProbeOutput, Spread, TargetInfo};

pub use atomics::AtomicsProbe;
pub use bw::BwProbe;
pub use coalesce::CoalesceProbe;
pub use constmem::ConstMemProbe;
pub use inflight::InflightProbe;
pub use l1share::L1ShareProbe;
pub use l2bw::L2BwProbe;
pub use launch::LaunchProbe;
pub use levelbw::LevelBwProbe;
pub use link::{LinkProbe, TEST_NAMES as LINK_TEST_NAMES};
pub use partition::PartitionProbe;
pub use peak::PeakProbe;
pub use slices::function_probe::SliceFunctionProbe;
pub use slices::hammer as slices_hammer;
pub use slices::SlicesProbe;
pub use sm_map::SmMapProbe;
pub use smem::SmemProbe;
pub use store::{FenceProbe, StoreProbe};
pub use texture::TextureProbe;

/// Applies to CUDA targets only.
pub(crate) fn cuda_only(info: &TargetInfo) -> Applicability {
    Applicability::only_if(info.capabilities.cuda_kernels, "needs a real CUDA GPU")
}

/// Applies to CUDA targets only; on the simulator the waiver says what the simulator lacks.
pub(crate) fn cuda_only_sim_lacks(info: &TargetInfo, lacks: &str) -> Applicability {
    let why = if info.gpu_hierarchy && !info.capabilities.cuda_kernels {
        format!("needs a real CUDA GPU: {lacks}")
    } else {
        "needs a real CUDA GPU".to_string()
    };
    Applicability::only_if(info.capabilities.cuda_kernels, &why)
}

/// The CUDA target behind a probe context.
pub(crate) fn cuda<'a>(ctx: &'a mut ProbeContext<'_>) -> Result<&'a mut CudaTarget, ProbeError> {
    ctx.target_as::<CudaTarget>().ok_or_else(|| ProbeError::Failed("this probe needs the CUDA target".into()))
}

/// Run a probe body on the CUDA target with NVML readings before and after; clock moves and
/// throttle reasons become warnings. A device error rebuilds the context (the target's `guarded`).
pub(crate) fn run_gpu(
    ctx: &mut ProbeContext<'_>,
    body: impl FnOnce(&mut CudaTarget, bool) -> Result<ProbeOutput, ProbeError>,
) -> Result<ProbeOutput, ProbeError> {
    let quick = ctx.quick;
    let t = cuda(ctx)?;
    let ordinal = t.gpu.ordinal;
    let pci = t.gpu.pci_bus_id();
    let before = crate::gpu::nvml::read(ordinal, pci.as_deref());
    t.gpu.bind()?;
    let mut out = match body(t, quick) {
        Ok(o) => o,
        Err(ProbeError::Target(e)) => return Err(ProbeError::Target(t.gpu.recover(e))),
        Err(e) => return Err(e),
    };
    let after = crate::gpu::nvml::read(ordinal, pci.as_deref());
    if let (Some(b), Some(a)) = (&before, &after) {
        out.warnings.extend(crate::gpu::nvml::drift_warnings(b, a));
    }
    Ok(out)
}

/// Median and spread of samples (empty or non-finite input is a probe failure).
pub(crate) fn summarize(v: &[f64], what: &str) -> Result<(f64, Spread), ProbeError> {
    let s = Sample::new(v).map_err(|e| ProbeError::Failed(format!("{what}: {e}")))?;
    Ok((s.median(), s.spread()))
}
