//! `memscope report RESULTS.json [--html F] [--md F] [--csv F] [--model MODEL.json]`: render a
//! results file. Without an output option it prints the datasheet summary. The writers live in
//! memscope-report and return bytes; this file reads the inputs and writes the files.

use crate::error::{CliError, CliResult};
use memscope_report::Results;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The results file (memscope/1 JSON, as written by `memscope run`).
    pub results: PathBuf,
    /// Write a self-contained HTML report (inline SVG plots, no network) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write a Markdown datasheet to FILE.
    #[arg(long, value_name = "FILE")]
    pub md: Option<PathBuf>,
    /// Write one CSV row per finding to FILE.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// A bottleneck-model run (`memscope model --json`) to draw as a roofline with its scoring;
    /// default: the results file's own "model" section, when it has one.
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
}

/// Read and parse a results file; every problem is a usage error naming the file.
pub fn load_results(path: &Path) -> Result<(Results, Value), CliError> {
    let bytes = std::fs::read(path)
        .map_err(|e| CliError::usage(format!("{}: cannot read results file: {e}", path.display())))?;
    let results = Results::from_json(&bytes).map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
    let raw: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok((results, raw))
}

fn write(path: &Path, bytes: &[u8], what: &str) -> CliResult {
    std::fs::write(path, bytes).map_err(|e| CliError::usage(format!("--{what} {}: cannot write: {e}", path.display())))
}

pub fn run(args: Args) -> CliResult {
    let (results, raw) = load_results(&args.results)?;
    let model = match &args.model {
        Some(p) => {
            let bytes =
                std::fs::read(p).map_err(|e| CliError::usage(format!("--model {}: cannot read: {e}", p.display())))?;
            let v: Value = serde_json::from_slice(&bytes)
                .map_err(|e| CliError::usage(format!("--model {}: not JSON: {e}", p.display())))?;
            Some(v)
        }
        None => raw.get("model").cloned(),
    };
    let mut wrote = false;
    if let Some(p) = &args.html {
        write(p, memscope_report::html::report(&results, model.as_ref()).as_bytes(), "html")?;
        wrote = true;
    }
    if let Some(p) = &args.md {
        write(p, memscope_report::markdown::to_string(&results).as_bytes(), "md")?;
        wrote = true;
    }
    if let Some(p) = &args.csv {
        write(p, memscope_report::csv::to_string(&results).as_bytes(), "csv")?;
        wrote = true;
    }
    if !wrote {
        print!("{}", memscope_report::table::summary(&results));
    }
    Ok(())
}
