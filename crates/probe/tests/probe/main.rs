//! The integration tests of this crate, one module per file, linked into one test binary
//! (docs/ARCHITECTURE.md, "Tests").

mod discovery;
mod evset_chases;
mod instrument;
mod keys_cover;
mod partitions;
mod penalty_sim;
mod random_hierarchies;
mod random_residue;
mod side_by_side;
mod tlb_random;
mod trust_dram;
mod trust_geometry;
