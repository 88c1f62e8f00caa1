//! The L2 probes and their parts (seed 000 footnote 11, seed 004; docs/TRUST.md): `ways` (an L2
//! eviction set from a random pool: ways, line and, through `sets`, the set count), `pool` (what
//! that search takes from the run), `regimes` (its hit and DRAM levels across TLB regimes),
//! `missing` (a pool's always-missing lines by the level that served them), `far_copies` (ways
//! holding far-partition copies), `sets` (the occupancy estimate of the set count), `policy`
//! (the replacement policy), `segment` (the L2 segment one SM sees).

pub mod far_copies;
pub mod missing;
pub mod policy;
pub mod pool;
pub mod regimes;
pub mod segment;
pub mod sets;
pub mod ways;
