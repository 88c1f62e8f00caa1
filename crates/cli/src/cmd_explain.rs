//! `memscope explain TRACE`: wiring only. The analysis is `memscope_explain` (docs/MODEL.md, "Real
//! programs"); `predict --op decode-step` lives with the other predictions in cmd_predict.rs.

use crate::error::{CliError, CliResult};
use memscope_explain::{explain, explain_with, load, load_ceilings, render};
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// A PyTorch profiler trace: torch.profiler's Chrome trace (`.json` or `.json.gz`), recorded
    /// with record_shapes=True and ProfilerActivity.CUDA.
    pub trace: PathBuf,
    /// The session's ceilings: the results of `memscope run` on the same GPU (its bw, l2, peak and
    /// launch findings). Without it, no op is bounded.
    #[arg(long)]
    pub ceilings: Option<PathBuf>,
    /// Print the whole analysis as JSON (docs/CONTRACTS.md, "memscope explain").
    #[arg(long)]
    pub json: bool,
    /// Also write the analysis as an HTML page to this file.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// An eager trace of the same step: kernels replayed from a CUDA graph (which carry no
    /// framework op) take the ops of the kernels at the same place in one of its steps.
    #[arg(long)]
    pub ops_from: Option<PathBuf>,
    /// Rows of each ranked table in the terminal and HTML output.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
}

pub(crate) fn ceilings(path: Option<&Path>) -> Result<Option<memscope_explain::Ceilings>, CliError> {
    path.map(load_ceilings).transpose().map_err(CliError::usage)
}

pub fn run(a: Args) -> CliResult {
    let trace = load(&a.trace).map_err(|e| CliError::usage(e.to_string()))?;
    let c = ceilings(a.ceilings.as_deref())?;
    let template = match &a.ops_from {
        Some(p) => {
            let t = load(p).map_err(|e| CliError::usage(format!("--ops-from: {e}")))?;
            Some(explain(&t, &p.display().to_string(), c.as_ref()))
        }
        None => None,
    };
    let x = explain_with(&trace, &a.trace.display().to_string(), c.as_ref(), template.as_ref());
    if let Some(p) = &a.html {
        std::fs::write(p, render::html_page(&x, a.top))
            .map_err(|e| CliError::failure(format!("{}: cannot write the page: {e}", p.display())))?;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&x).expect("serialisable"));
    } else {
        print!("{}", render::text(&x, a.top));
    }
    Ok(())
}
