//! `memscope hammer-lines` (hidden): the child process of the `l2.slices` probe (seed 000 appendix,
//! "The L2 slice function"). The probe runs it under Nsight Compute; it launches one L2-hammering
//! kernel per batch of a JSON plan and prints a JSON report between markers (with --serve, then
//! one more plan per line of stdin, on the same pages). Wiring only: the work
//! is `memscope_cuda::probes::slices_hammer`.

use crate::error::{CliError, CliResult};
use memscope_cuda::probes::slices_hammer::{self, HammerPlan};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The plan (JSON: {"sm": null or N, "warps": W, "kernels": [[[offset, accesses, "read"|"write"|"atom"|"red"], ...], ...]}).
    #[arg(long)]
    pub plan: PathBuf,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// After the plan, read further plans from stdin (one JSON plan per line) and run each on the
    /// same pages, one report per plan.
    #[arg(long)]
    pub serve: bool,
}

pub fn run(a: Args) -> CliResult {
    let text =
        std::fs::read_to_string(&a.plan).map_err(|e| CliError::usage(format!("--plan {}: {e}", a.plan.display())))?;
    let plan: HammerPlan = serde_json::from_str(&text)
        .map_err(|e| CliError::usage(format!("--plan {}: not a hammer plan: {e}", a.plan.display())))?;
    plan.validate().map_err(|e| CliError::usage(format!("--plan {}: {e}", a.plan.display())))?;
    if a.serve {
        let stdin = std::io::stdin();
        slices_hammer::serve(a.device, &plan, stdin.lock(), std::io::stdout())?;
        return Ok(());
    }
    let report = slices_hammer::run(a.device, &plan)?;
    let json = serde_json::to_string(&report).map_err(|e| CliError::failure(e.to_string()))?;
    println!("{}\n{json}\n{}", slices_hammer::REPORT_BEGIN, slices_hammer::REPORT_END);
    Ok(())
}
