//! `memscope compare A.json B.json [--html F]`: every finding the two results files share with
//! both values and the ratio B/A, in the terminal, and optionally as an HTML page.

use crate::cmd_report::load_results;
use crate::error::{CliError, CliResult};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The first results file (A).
    pub a: PathBuf,
    /// The second results file (B); ratios are B / A.
    pub b: PathBuf,
    /// Also write the comparison as a self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

pub fn run(args: Args) -> CliResult {
    let (a, _) = load_results(&args.a)?;
    let (b, _) = load_results(&args.b)?;
    print!("{}", memscope_report::compare::text(&a, &b));
    if let Some(p) = &args.html {
        std::fs::write(p, memscope_report::compare::html(&a, &b))
            .map_err(|e| CliError::usage(format!("--html {}: cannot write: {e}", p.display())))?;
    }
    Ok(())
}
