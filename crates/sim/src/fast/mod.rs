//! The simulator's accelerated route (speed only, no seed; docs/ARCHITECTURE.md): everything here computes
//! exactly what the plain model (`cache`, `tlb`, `dram`, `machine`, `target`, `replay`) computes,
//! only faster, and is tested against it. The plain path reaches this folder only through the
//! items re-exported below; nothing here changes a result (the digest of
//! `examples/sim_digest.rs` is the check).
//!
//! - `chase_chain`: the entry point of a single-chain chase (target.rs), the hot loop of every
//!   latency probe: the state-independent part of each hop computed ahead (`presplit`: by page
//!   halves), then the hops a batch at a time in two passes (`staged`, with the TLB in SSE
//!   registers: `lru16`). The plain route (one `Machine::pre_with` and one `Machine::hop_pre`
//!   per hop) is what the several-chain loop of target.rs takes, and what the tests here compare
//!   each batch with.
//! - `cache_load`, `cache_store`: the load and store paths of the presets' caches (4-way LRU,
//!   16-way RRIP) with the layout and policy as constants; `Cache` takes them where its `kind`
//!   says so, its general path otherwise.
//! - `index`: the seed's index functions by tables of mask parities (`hash::IndexFn` is the plain
//!   definition).
//! - `simd`: word-parallel scans of the cache's set blocks and the TLB (plain loops elsewhere).
//! - `refresh`: the DRAM's refresh-window test and a quick `rem_euclid` (dram/mod.rs).
//! - `evqueue`: the replay's radix-heap event queue (pops in a binary heap's order).
//! - `hostcpu`: the x86-64-v3 copies of the hot loops, and `both_ways` for tests (baseline too).

pub(crate) mod cache_load;
mod cache_prefetch;
mod cache_store;
mod chain;
mod evqueue;
pub(crate) mod hostcpu;
pub(crate) mod index;
#[cfg(target_arch = "x86_64")]
mod lru16;
pub(crate) mod presplit;
pub(crate) mod refresh;
pub(crate) mod simd;
mod staged;

pub(crate) use chain::chase_chain;
pub use evqueue::MonoQueue;
pub use index::{FastIndex, SliceAndSet};
#[cfg(target_arch = "x86_64")]
pub use lru16::Lru16;
pub use presplit::PageParts;
pub use refresh::rem_euclid;
pub(crate) use refresh::Refresh;
pub use staged::{Staged, STAGED_AHEAD};
