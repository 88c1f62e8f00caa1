//! The integration tests of this crate, one module per file, linked into one test binary
//! (docs/ARCHITECTURE.md, "Tests").

mod common;
mod gpu;
mod gpu_compose;
mod gpu_layer;
mod gpu_model_ceilings;
mod gpu_slices;
