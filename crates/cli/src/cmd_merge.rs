//! `memscope merge A.json B.json ... --out MERGED.json`: the results of many GPUs and hosts in one
//! document (`fleet`: every member document as read, tagged by host and scheduler rank; merged
//! files are flattened into their members). Written atomically; a file that does not parse is
//! refused (exit 2) naming the file and the JSON path.

use crate::cmd_report::load_results;
use crate::error::{CliError, CliResult};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Results files (memscope/1, from `memscope run` or an earlier merge).
    #[arg(required = true, num_args = 1..)]
    pub files: Vec<PathBuf>,
    /// The merged file to write ("-": stdout).
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

pub fn run(args: Args) -> CliResult {
    crate::run_guard::check_output_file("--out", &args.out)?;
    let mut inputs = vec![];
    for f in &args.files {
        let (r, _) = load_results(f)?;
        inputs.push((f.display().to_string(), r));
    }
    let merged = memscope_results::merge::merge(inputs, crate::provenance::tool(), &crate::provenance::now());
    let bytes = memscope_results::json::to_bytes(&merged);
    if args.out.as_os_str() == "-" {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        return out
            .write_all(&bytes)
            .and_then(|_| out.flush())
            .map_err(|e| CliError::failure(format!("--out -: cannot write to stdout: {e}")));
    }
    memscope_results::json::write_atomic(&args.out, &bytes)
        .map_err(|e| CliError::usage(format!("--out {}: cannot write: {e}", args.out.display())))?;
    println!("{}: {} ({} members)", args.out.display(), merged.target.name, merged.fleet.len());
    Ok(())
}
