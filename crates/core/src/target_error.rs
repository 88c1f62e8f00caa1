//! The one error type of a `Target` (crate::target): what a chase, an allocation or a target's
//! description can fail with; its own file so crate::links names it without crate::target.

/// Errors of a target. Messages say what to do next.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("not supported on this target: {0}")]
    Unsupported(String),
    #[error("out of memory: asked for {asked_bytes} bytes, {free_bytes} free")]
    OutOfMemory { asked_bytes: u64, free_bytes: u64 },
    #[error("bad chase: {0}")]
    BadSpec(String),
    #[error("device failure: {0}")]
    Device(String),
    /// The target's description (a simulated-hierarchy file, an option) is invalid; the message
    /// names the offending field or value.
    #[error("{0}")]
    InvalidConfig(String),
}
