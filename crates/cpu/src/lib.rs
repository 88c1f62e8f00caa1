//! memscope-cpu: the host CPU as a `Target` (pointer chase over a random single cycle of lines,
//! seed 000 appendix, with huge pages where the kernel gives them; the core clock from a
//! dependent-multiply chain, cross-checked against what the OS and CPUID report) and the
//! CPU-only probes: `cpu.latency` (latency versus adaptive footprints, levels by knee detection,
//! capacities beside the OS-reported sizes) and `cpu.stride` (the strided copy of seed 002 and
//! the line size it implies).

#[cfg(test)]
mod amd_curve_tests;
pub mod clock;
pub mod cpuid;
#[cfg(test)]
mod crossing_spread_tests;
#[cfg(test)]
mod curve_checks;
#[cfg(test)]
mod h200_curve_tests;
pub mod latency;
mod latency_sweep;
pub mod oscheck;
pub mod repeat_check;
#[cfg(test)]
mod repeat_curve_tests;
pub mod stride;
pub mod sweep;
pub mod sysinfo;
mod target;
#[cfg(test)]
mod vm_curve_tests;

pub use target::{CpuTarget, PageKind};
