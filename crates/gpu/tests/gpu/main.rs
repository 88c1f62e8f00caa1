//! The integration tests of this crate, one module per file, linked into one test binary
//! (docs/ARCHITECTURE.md, "Tests").

mod kernels_compile;
mod source_rules;
