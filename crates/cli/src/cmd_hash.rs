//! `memscope hash`: the seeds' slice and set-index functions. Being written.

use crate::error::{CliError, CliResult};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Arguments (not written yet).
    pub rest: Vec<String>,
}

pub fn run(_args: Args) -> CliResult {
    Err(CliError::usage("memscope hash: not written yet"))
}
