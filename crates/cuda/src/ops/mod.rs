//! GPU operations of the bottleneck-model experiments (seed 003): the ops kernels and their
//! correctness checks, the per-class launch-floor operations and the timing rule (ceilings; the
//! ceilings themselves are the session's findings: probes bw, launch, peak), the 58-operation
//! evaluation, fusion and the batched GPT-2-small decode step;
//! and the composition of docs/MODEL.md: its ceilings (compose_ceilings) and its decode-step sweep (compose).
//! All on the one GPU layer (crate::gpu) through `device::OpsGpu`.

pub mod batch;
pub mod ceilings;
pub mod check;
pub mod compose;
pub mod compose_ceilings;
pub mod device;
pub mod fusion;
pub mod launchers;
pub mod model_set;
