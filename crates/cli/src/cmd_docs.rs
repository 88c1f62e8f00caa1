//! `memscope completions SHELL` and `memscope man`: a shell completion script (clap_complete) and
//! the man page (clap_mangen), both generated from the CLI definition in main.rs, so they list
//! exactly the subcommands and options this binary accepts.

use crate::error::{CliError, CliResult};
use std::io::Write;

#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

/// Write the completion script for `args.shell` to stdout.
pub fn completions(args: CompletionsArgs, mut cli: clap::Command) -> CliResult {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "memscope", &mut out);
    emit(&out)
}

/// Write the man page (roff) of the whole command to stdout.
pub fn man(cli: clap::Command) -> CliResult {
    let mut out = Vec::new();
    clap_mangen::Man::new(cli)
        .render(&mut out)
        .map_err(|e| CliError::failure(format!("cannot render the man page: {e}")))?;
    emit(&out)
}

fn emit(bytes: &[u8]) -> CliResult {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(bytes).and_then(|_| stdout.flush()).map_err(|e| CliError::failure(format!("stdout: {e}")))
}
