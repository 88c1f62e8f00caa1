//! `memscope predict`: the three-ceiling model (seed 003). Being written.

use crate::error::{CliError, CliResult};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Arguments (not written yet).
    pub rest: Vec<String>,
}

pub fn run(_args: Args) -> CliResult {
    Err(CliError::usage("memscope predict: not written yet"))
}
