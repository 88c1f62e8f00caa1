//! memscope-sim: the simulated memory hierarchy of seeds 000/001 (reads) and 004 (writes): sectored
//! caches with pluggable index functions (the seeds' L2 slice and set functions, XOR masks), LRU
//! and RRPV replacement, TLB and page table, L2 slices (optional near/far partitions), DRAM
//! banks/rows/refresh, a `Target` implementation (`SimTarget`), presets, kernel replay (vadd) and
//! its timeline.
//!
//! Constructing a target:
//!
//! ```
//! use memscope_sim::hierarchy::{HashFunction, Hierarchy, Mask};
//! use memscope_core::Target;
//! use memscope_sim::SimTarget;
//! // a preset, a JSON file (`SimTarget::from_json_file(path)`), or any `Hierarchy` built in code:
//! let mut h = memscope_sim::presets::rtx4090(); // or Hierarchy::default() (plain-bit functions)
//! h.l1.ways = 8;
//! h.l2.slices = 32;
//! h.l2.slice_function = HashFunction::Masks { masks: (17..22).map(|b| Mask(1 << b)).collect() };
//! h.l2.set_function = HashFunction::Masks { masks: (7..17).map(|b| Mask(1 << b)).collect() };
//! let mut t = SimTarget::new(h).expect("valid hierarchy"); // errors name the field
//! let buf = t.alloc(1 << 20).unwrap();
//! ```
//!
//! Ground truth for tests: `t.hierarchy()`, `t.physical_address(va)`, `t.stats()` (per-level
//! counters, including `slice_requests`, the per-slice request counts an ncu slice counter would
//! give), `t.machine()` for direct loads/stores, `t.alloc_contiguous(bytes, phys_base)`.

pub mod budget;
pub mod cache;
pub mod calibrate;
pub mod dram;
pub mod fast;
pub mod hash;
pub mod hash_h200;
pub mod hash_residue;
pub mod hierarchy;
pub mod links;
pub mod machine;
pub mod presets;
pub mod replay;
pub mod target;
pub mod tlb;
pub mod vadd;
pub mod wbfifo;

pub use hierarchy::Hierarchy;
pub use machine::{Level, Machine, Stats};
/// The replay timeline's types (they live in `memscope_core::timeline`).
pub use memscope_core::timeline;
pub use target::{ChaseWork, SimTarget};

/// Names of the built-in presets.
pub fn presets() -> &'static [&'static str] {
    presets::PRESETS
}
