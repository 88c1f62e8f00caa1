//! The binary's error type and the exit-code contract of docs/CONTRACTS.md: 2 for bad usage or bad input
//! (one line naming the offending value and what is accepted), 1 for a probe or device failure.

/// An error that ends the command.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad usage or bad input: exit code 2.
    #[error("{0}")]
    Usage(String),
    /// A probe or device failure (partial results already written): exit code 1.
    #[error("{0}")]
    Failure(String),
}

impl CliError {
    pub fn usage(msg: impl Into<String>) -> Self {
        CliError::Usage(msg.into())
    }
    pub fn failure(msg: impl Into<String>) -> Self {
        CliError::Failure(msg.into())
    }
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Failure(_) => 1,
        }
    }
}

pub type CliResult = Result<(), CliError>;

/// GPU work that failed (no GPU, a driver or NVRTC error, out of memory, a kernel check): a
/// device failure, exit code 1. The one place GPU errors meet the exit-code contract.
impl From<memscope_cuda::GpuError> for CliError {
    fn from(e: memscope_cuda::GpuError) -> Self {
        CliError::Failure(e.to_string())
    }
}
