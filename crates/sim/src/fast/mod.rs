//! The simulator's speed kernels (speed only, no seed; docs/ARCHITECTURE.md): word-parallel scans,
//! a quick remainder and refresh-window test, an event queue and the host-CPU switch, each
//! computing exactly what a plain loop would, only faster. They know nothing of the model: the
//! dependency is one way, the model (`cache`, `tlb`, `dram`, `machine`, `target`, `replay`) uses
//! these items and nothing here names the model's types (tests/sim/fast_is_model_free.rs keeps that
//! true). The model's own fast routes live next to the types they speed up, each tested against
//! that type's plain route: the presets' cache load and store paths (cache/fast_load.rs,
//! cache/fast_store.rs, cache/prefetch.rs), the TLB in SSE registers (tlb/lru16.rs), the index
//! functions by tables (machine/index.rs), the chase's hops computed ahead and run a batch at a
//! time (machine/presplit.rs, machine/staged.rs) and its single-chain entry point
//! (target/chain.rs). Nothing changes a result: the digest of `examples/sim_digest.rs` is the check.
//!
//! - `simd`: word-parallel scans of the cache's set blocks and the TLB (plain loops elsewhere).
//! - `refresh`: the DRAM's refresh-window test and a quick `rem_euclid` (dram/mod.rs).
//! - `evqueue`: the replay's radix-heap event queue (pops in a binary heap's order).
//! - `hostcpu`: the x86-64-v3 copies of the hot loops, and `both_ways` for tests (baseline too).

mod evqueue;
pub(crate) mod hostcpu;
pub(crate) mod refresh;
pub(crate) mod simd;

pub use evqueue::MonoQueue;
pub use refresh::rem_euclid;
pub(crate) use refresh::Refresh;
