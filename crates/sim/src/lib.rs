//! memscope-sim: the simulated memory hierarchy of seeds 000/001 (reads) and 004 (writes): sectored
//! caches with pluggable index functions (the seeds' L2 slice and set functions, XOR masks), LRU
//! and RRPV replacement, TLB and page table, L2 slices, DRAM banks/rows/refresh, a `Target`
//! implementation (`SimTarget`), presets, vadd replay and its timeline.
//!
//! Constructing a target: `SimTarget::from_preset("rtx4090")`, `SimTarget::from_json_file(path)`,
//! or `SimTarget::new(hierarchy)` with a `memscope_core::hierarchy::Hierarchy` built in code
//! (start from `presets::rtx4090()` or `Hierarchy::default()` and change public fields).

pub mod cache;
pub mod calibrate;
pub mod dram;
pub mod hash;
pub mod machine;
pub mod presets;
pub mod replay;
pub mod target;
pub mod timeline;
pub mod tlb;
pub mod vadd;

pub use machine::{Level, Machine, Stats};
pub use memscope_core::hierarchy::Hierarchy;
pub use target::SimTarget;

use memscope_core::Probe;

/// Names of the built-in presets.
pub fn presets() -> &'static [&'static str] {
    presets::PRESETS
}

/// Simulator-only probes (none: every discovery probe runs through the `Target` trait).
pub fn probes() -> Vec<Box<dyn Probe>> {
    Vec::new()
}
