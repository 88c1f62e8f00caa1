//! memscope-cpu: the host CPU as a `Target` (pointer chase over a random single cycle of lines,
//! seed 000 appendix, with huge pages where the kernel gives them) and the CPU-only probes:
//! `cpu.latency` (latency versus footprint, levels by knee detection) and `cpu.stride` (the
//! strided copy of seed 002 and the line size it implies).

pub mod clock;
pub mod cpuid;
pub mod latency;
mod latency_sweep;
pub mod oscheck;
pub mod stride;
pub mod sweep;
pub mod sysinfo;
mod target;

pub use target::{CpuTarget, PageKind};

use memscope_core::Probe;

/// CPU-only probes, in run order.
pub fn probes() -> Vec<Box<dyn Probe>> {
    vec![Box::new(latency::CpuLatency), Box::new(stride::CpuStride)]
}
