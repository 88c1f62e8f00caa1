//! memscope-core: the pure part of memscope (no I/O, no CUDA). Findings and series, the `Target`
//! and `Probe` traits every backend and discovery algorithm meets at, statistics, GF(2) algebra,
//! the simulated-hierarchy description and the bottleneck model of seed 003.

pub mod compose;
pub mod compose_step;
pub mod finding;
pub mod gf2;
pub mod helper;
pub mod hierarchy;
pub mod keys;
pub mod knee;
pub mod links;
pub mod model;
pub mod model_ceilings;
pub mod probe;
pub mod stats;
pub mod target;
pub mod text;
pub mod timeline;

pub use finding::{Check, Confidence, Finding, Series, Spread, CHECK_TOLERANCE};
pub use probe::{Applicability, NoProgress, Probe, ProbeContext, ProbeError, ProbeOutput, Progress};
pub use target::{Buffer, CachePath, Capabilities, ChaseResult, ChaseSpec, Target, TargetError, TargetInfo};
