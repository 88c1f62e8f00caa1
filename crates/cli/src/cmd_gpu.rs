//! `memscope ceilings|model|fusion|batch`: the bottleneck model on a GPU (seed 003). Being written.

use crate::error::{CliError, CliResult};

#[derive(clap::Args, Debug)]
pub struct CeilingsArgs {
    /// Arguments (not written yet).
    pub rest: Vec<String>,
}
#[derive(clap::Args, Debug)]
pub struct ModelArgs {
    /// Arguments (not written yet).
    pub rest: Vec<String>,
}
#[derive(clap::Args, Debug)]
pub struct FusionArgs {
    /// Arguments (not written yet).
    pub rest: Vec<String>,
}
#[derive(clap::Args, Debug)]
pub struct BatchArgs {
    /// Arguments (not written yet).
    pub rest: Vec<String>,
}

pub fn ceilings(_a: CeilingsArgs) -> CliResult {
    Err(CliError::usage("memscope ceilings: not written yet"))
}
pub fn model(_a: ModelArgs) -> CliResult {
    Err(CliError::usage("memscope model: not written yet"))
}
pub fn fusion(_a: FusionArgs) -> CliResult {
    Err(CliError::usage("memscope fusion: not written yet"))
}
pub fn batch(_a: BatchArgs) -> CliResult {
    Err(CliError::usage("memscope batch: not written yet"))
}
