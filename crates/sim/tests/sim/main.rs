//! The integration tests of this crate, one module per file, linked into one test binary
//! (docs/ARCHITECTURE.md, "Tests").

mod chase_checks;
mod dram;
mod fast_is_model_free;
mod hash_table;
mod json;
mod latency;
mod modular;
mod random;
mod residue;
mod seeds;
