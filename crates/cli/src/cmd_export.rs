//! `memscope export accel-sim RESULTS.json --out DIR`: a GPGPU-Sim / Accel-Sim configuration
//! from a GPU run's results (memscope-export); `memscope export nvbandwidth RESULTS.json`: the
//! interconnect findings in nvbandwidth's layout (memscope-report's nvbandwidth.rs); wiring only.

use crate::error::{CliError, CliResult};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: ExportCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum ExportCommand {
    /// gpgpusim.config for GPGPU-Sim / Accel-Sim: measured values where memscope has them, the
    /// public SM90_H200 tested configuration elsewhere (each line's comment says which).
    AccelSim {
        /// A results file (memscope/1) from `memscope run` on a GPU.
        results: PathBuf,
        /// Directory to write gpgpusim.config into (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// The interconnect findings (link and peer probes) in nvbandwidth's matrix layout, on stdout
    /// (docs/INTERCONNECT.md).
    Nvbandwidth {
        /// A results file (memscope/1), or a merged one (`memscope merge`, results-all.json).
        results: PathBuf,
    },
}

pub fn run(args: Args) -> CliResult {
    let (results, out) = match args.command {
        ExportCommand::AccelSim { results, out } => (results, out),
        ExportCommand::Nvbandwidth { results } => {
            let (res, _) = crate::cmd_report::load_results(&results)?;
            let text = memscope_report::nvbandwidth::export(&res)
                .map_err(|e| CliError::usage(format!("{}: {e}", results.display())))?;
            print!("{text}");
            return Ok(());
        }
    };
    let (res, _) = crate::cmd_report::load_results(&results)?;
    let label = results.display().to_string();
    let e = memscope_export::accel_sim::export(&res.target, &res.findings, &label)
        .map_err(|e| CliError::usage(format!("{label}: {e}")))?;
    std::fs::create_dir_all(&out)
        .map_err(|e| CliError::usage(format!("--out {}: cannot create: {e}", out.display())))?;
    for (name, text) in &e.files {
        let p = out.join(name);
        memscope_results::json::write_atomic(&p, text.as_bytes())
            .map_err(|e| CliError::usage(format!("--out {}: cannot write: {e}", p.display())))?;
        println!("wrote {}", p.display());
    }
    let set = e.entries.iter().filter(|x| !x.source.starts_with("base ")).count();
    println!(
        "{set} of {} options from measurement or the driver; the rest from the named base (see each line's comment)",
        e.entries.len()
    );
    Ok(())
}
