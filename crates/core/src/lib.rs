//! memscope-core: the pure part of memscope (no I/O, no CUDA). Findings and series, the `Target`
//! and `Probe` traits every backend and discovery algorithm meets at, statistics, GF(2) algebra,
//! the peer-links instrument, the replay timeline (the simulated-hierarchy description is
//! crates/sim's, the bottleneck model crates/model).

pub mod finding;
pub mod gf2;
pub mod helper;
pub mod keys;
pub mod knee;
pub mod links;
pub mod probe;
pub mod stats;
pub mod target;
pub mod target_error;
pub mod text;
pub mod timeline;

pub use finding::{Check, Confidence, Finding, Series, Spread, CHECK_TOLERANCE};
pub use probe::{Applicability, NoProgress, Probe, ProbeContext, ProbeError, ProbeOutput, Progress};
pub use target::{Buffer, CachePath, Capabilities, ChaseResult, ChaseSpec, Target, TargetError, TargetInfo};
