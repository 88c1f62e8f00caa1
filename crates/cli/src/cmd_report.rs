//! `memscope report RESULTS.json [--html F] [--md F] [--csv F] [--model MODEL.json]`: render a
//! results file. Without an output option it prints the datasheet summary; an output named "-"
//! goes to stdout (as `run --json -`). A `--model` run of another device than the results' is
//! refused (exit 2) unless `--any-device` is given. The writers live in memscope-report (`Writer`) and return
//! text; this file reads the inputs and writes the files.

use crate::error::{CliError, CliResult};
use memscope_report::Writer;
use memscope_results::Results;
use serde_json::Value;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The results file (memscope/1 JSON, as written by `memscope run`).
    pub results: PathBuf,
    /// Write a self-contained HTML report (inline SVG plots, no network) to FILE ("-": stdout).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write a Markdown datasheet to FILE ("-": stdout).
    #[arg(long, value_name = "FILE")]
    pub md: Option<PathBuf>,
    /// Write one CSV row per finding to FILE ("-": stdout).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// A bottleneck-model run (`memscope model --json`) to draw as a roofline with its scoring;
    /// default: the results file's own "model" section, when it has one. Refused when it names
    /// another device than the results' targets (see --any-device).
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
    /// Attach a --model run even when it was measured on another device (the page says so).
    #[arg(long, requires = "model")]
    pub any_device: bool,
}

/// Read and parse a results file; every problem is a usage error naming the file.
pub fn load_results(path: &Path) -> Result<(Results, Value), CliError> {
    let bytes = memscope_results::json::read_limited(path, memscope_results::results::MAX_RESULTS_BYTES)
        .map_err(|e| CliError::usage(format!("{}: cannot read results file: {e}", path.display())))?;
    let results = Results::from_json(&bytes).map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
    let raw: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok((results, raw))
}

/// Write an output; "-" is stdout.
fn write(path: &Path, bytes: &[u8], what: &str) -> CliResult {
    if path.as_os_str() == "-" {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        return out
            .write_all(bytes)
            .and_then(|_| out.flush())
            .map_err(|e| CliError::failure(format!("--{what} -: cannot write to stdout: {e}")));
    }
    memscope_results::json::write_atomic(path, bytes)
        .map_err(|e| CliError::usage(format!("--{what} {}: cannot write: {e}", path.display())))
}

/// The device a model run was measured on: `device.name` (model runs) or `device` (ceilings) of
/// the old layout, `target.name` of a `memscope/1` document (`memscope model` now).
pub fn model_device(model: &Value) -> Option<&str> {
    let Some(d) = model.get("device") else {
        return model.get("target")?.get("name").and_then(Value::as_str);
    };
    d.get("name").and_then(Value::as_str).or_else(|| d.as_str())
}

/// Check that a --model run belongs to the results: its device must be one of the results'
/// targets. Returns a warning for the page when it does not and `any_device` allows it.
fn check_model_device(
    results: &Results,
    model: &Value,
    path: &Path,
    any_device: bool,
) -> Result<Option<String>, CliError> {
    let names: Vec<&str> =
        results.targets.iter().chain(std::iter::once(&results.target)).map(|t| t.name.as_str()).collect();
    let Some(device) = model_device(model) else {
        if any_device {
            return Ok(Some(format!("model run of an unnamed device ({})", path.display())));
        }
        return Err(CliError::usage(format!(
            "--model {}: names no device (no \"device\" field), so it cannot be matched to {:?}; \
             pass --any-device to attach it anyway",
            path.display(),
            names[0]
        )));
    };
    if names.contains(&device) {
        return Ok(None);
    }
    if any_device {
        return Ok(Some(format!("model run measured on {device}, not on {} ({})", names.join(" or "), path.display())));
    }
    Err(CliError::usage(format!(
        "--model {}: measured on {device:?}, but the results are of {}; pass --any-device to attach it anyway",
        path.display(),
        names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ")
    )))
}

pub fn run(args: Args) -> CliResult {
    let (results, raw) = load_results(&args.results)?;
    let model = match &args.model {
        Some(p) => {
            let bytes = memscope_results::json::read_limited(p, memscope_results::results::MAX_RESULTS_BYTES)
                .map_err(|e| CliError::usage(format!("--model {}: cannot read: {e}", p.display())))?;
            if bytes.len() > memscope_results::results::MAX_RESULTS_BYTES {
                return Err(CliError::usage(format!(
                    "--model {}: the file is over {} MiB (MAX_RESULTS_BYTES)",
                    p.display(),
                    memscope_results::results::MAX_RESULTS_BYTES >> 20
                )));
            }
            let mut v: Value = serde_json::from_slice(&bytes)
                .map_err(|e| CliError::usage(format!("--model {}: not JSON: {e}", p.display())))?;
            let warning = check_model_device(&results, &v, p, args.any_device)?;
            // A memscope/1 document (`memscope model --out`): its model section.
            if v.get("schema").and_then(Value::as_str) == Some(memscope_results::SCHEMA) {
                v = v.get("model").cloned().unwrap_or(Value::Null);
            }
            if let Some(warning) = warning {
                eprintln!("memscope: warning: {}", memscope_report::hygiene::terminal(&warning));
                if let Some(o) = v.as_object_mut() {
                    o.insert("other_device_warning".into(), Value::String(warning));
                }
            }
            Some(v)
        }
        None => raw.get("model").cloned(),
    };
    let html = memscope_report::Html { model: model.as_ref() };
    let outputs: [(&Option<PathBuf>, &dyn Writer); 3] =
        [(&args.html, &html), (&args.md, &memscope_report::Markdown), (&args.csv, &memscope_report::Csv)];
    let mut wrote = false;
    for (path, writer) in outputs {
        if let Some(p) = path {
            write(p, writer.render(&results).as_bytes(), writer.format())?;
            wrote = true;
        }
    }
    if !wrote {
        print!("{}", memscope_report::Terminal.render(&results));
        if !results.fleet.is_empty() {
            println!("(a merged file: its findings are in its members; `memscope compare FILE` shows the fleet view)");
        }
    }
    Ok(())
}
