//! `memscope report`: HTML, Markdown and CSV from a results file. Being written.

use crate::error::{CliError, CliResult};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Arguments (not written yet).
    pub rest: Vec<String>,
}

pub fn run(_args: Args) -> CliResult {
    Err(CliError::usage("memscope report: not written yet"))
}
