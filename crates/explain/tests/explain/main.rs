//! The integration tests of this crate, one module per file, linked into one test binary
//! (docs/ARCHITECTURE.md, "Tests").

mod common;
mod predict_synthetic;
mod real_programs;
mod synthetic;
