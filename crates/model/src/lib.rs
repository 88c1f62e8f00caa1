//! memscope-model: the bottleneck model of seed 003 and its composition (docs/MODEL.md). Pure: no
//! I/O, no CUDA. `bottleneck` counts an operation's bytes and FLOPs and bounds its time by three
//! ceilings (launch floor, bandwidth, peak); `run_ceilings` takes those ceilings from the findings
//! of a run; `predict` answers `memscope predict`; `op_set` defines the operations the model is
//! evaluated on; `compose` and `compose_step` predict a sequence of kernels (a decode step) from
//! ceilings measured on other operations. The GPU side (the operations' kernels and their timing)
//! is memscope-cuda's `ops`, which consumes these definitions.

pub mod bottleneck;
pub mod compose;
pub mod compose_step;
pub mod op_set;
pub mod predict;
pub mod run_ceilings;
