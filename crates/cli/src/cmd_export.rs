//! `memscope export accel-sim RESULTS.json --out DIR`: a GPGPU-Sim / Accel-Sim configuration
//! from a GPU run's results (memscope-export); `memscope export nvbandwidth RESULTS.json`: the
//! interconnect findings in nvbandwidth's layout (memscope-report's nvbandwidth.rs); wiring only.
//! `load_with_runs` is the one reading of a results file with other runs' findings (`--with`) for
//! `export accel-sim` and `sim calibrate`.

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
        /// Accept the results of a simulated target (refused otherwise: its values are the
        /// simulator's, not a GPU's); every file written then says so on its first line.
        #[arg(long)]
        allow_simulated: bool,
        /// Another results file of the same GPU (repeatable), e.g. of `--probes
        /// l2.slices.function`: its findings fill those RESULTS lacks or left undetermined.
        #[arg(long = "with", value_name = "RESULTS")]
        with: Vec<PathBuf>,
    },
    /// The interconnect findings (link and peer probes) in nvbandwidth's matrix layout, on stdout
    /// (docs/INTERCONNECT.md).
    Nvbandwidth {
        /// A results file (memscope/1), or a merged one (`memscope merge`, results-all.json).
        results: PathBuf,
    },
}

/// Refuse (exit 2, naming the file and the target) the results of a simulated target unless
/// `allowed`; returns whether the source is simulated (then a warning went to stderr).
pub(crate) fn refuse_simulated(
    res: &memscope_results::Results,
    file: &std::path::Path,
    allowed: bool,
) -> Result<bool, CliError> {
    if res.target.kind != "sim" {
        return Ok(false);
    }
    let what = format!(
        "{}: the results of {} ({}), a simulated target, not a measured GPU",
        memscope_report::hygiene::terminal(&file.display().to_string()),
        memscope_report::hygiene::terminal(&res.target.name),
        memscope_report::hygiene::terminal(&res.target.id)
    );
    if !allowed {
        return Err(CliError::usage(format!(
            "{what}: its values are the simulator's own (pass --allow-simulated to use them anyway)"
        )));
    }
    eprintln!("memscope: warning: {what}; the output is marked as simulated");
    Ok(true)
}

/// The results of `results` (a simulated target's refused unless `allow_simulated`) with the
/// findings of the `with` runs of the same GPU filling those it lacks or left undetermined
/// (memscope_sim::calibrate::fill_from): the results, whether the source is simulated, and one
/// line per `with` file naming the keys taken. Another GPU's run exits 2 naming it.
pub(crate) fn load_with_runs(
    results: &std::path::Path,
    with: &[PathBuf],
    allow_simulated: bool,
) -> Result<(memscope_results::Results, bool, Vec<String>), CliError> {
    use memscope_report::hygiene::terminal;
    let (mut res, _) = crate::cmd_report::load_results(results)?;
    let simulated = refuse_simulated(&res, results, allow_simulated)?;
    let mut taken = Vec::new();
    for extra in with {
        let (more, _) = crate::cmd_report::load_results(extra)?;
        refuse_simulated(&more, extra, allow_simulated)?;
        if more.target.name != res.target.name {
            return Err(CliError::usage(format!(
                "--with {}: a run of {}, not of {} (the GPU of {})",
                terminal(&extra.display().to_string()),
                terminal(&more.target.name),
                terminal(&res.target.name),
                terminal(&results.display().to_string())
            )));
        }
        let keys = memscope_sim::calibrate::fill_from(&mut res.findings, &more.findings);
        let keys = if keys.is_empty() { "none".to_string() } else { keys.join(", ") };
        taken.push(format!("findings taken from {}: {keys}", extra.display()));
    }
    Ok((res, simulated, taken))
}

pub fn run(args: Args) -> CliResult {
    let (results, out, allow_simulated, with) = match args.command {
        ExportCommand::AccelSim { results, out, allow_simulated, with } => (results, out, allow_simulated, with),
        ExportCommand::Nvbandwidth { results } => {
            let (res, _) = crate::cmd_report::load_results(&results)?;
            let text = memscope_report::nvbandwidth::export(&res)
                .map_err(|e| CliError::usage(format!("{}: {e}", results.display())))?;
            print!("{text}");
            return Ok(());
        }
    };
    let (res, simulated, taken) = load_with_runs(&results, &with, allow_simulated)?;
    let label = match with.is_empty() {
        true => results.display().to_string(),
        false => {
            let more: Vec<String> = with.iter().map(|w| w.display().to_string()).collect();
            format!("{} with {}", results.display(), more.join(", "))
        }
    };
    let e = memscope_export::accel_sim::export(&res.target, &res.findings, &label)
        .map_err(|e| CliError::usage(format!("{label}: {e}")))?;
    std::fs::create_dir_all(&out)
        .map_err(|e| CliError::usage(format!("--out {}: cannot create: {e}", out.display())))?;
    for (name, text) in &e.files {
        let p = out.join(name);
        let text = if simulated {
            format!(
                "# SIMULATED SOURCE: {} holds the results of {} ({}), a simulated target, not a measured GPU\n{text}",
                memscope_export::accel_sim::config_comment(&label),
                memscope_export::accel_sim::config_comment(&res.target.name),
                memscope_export::accel_sim::config_comment(&res.target.id)
            )
        } else {
            text.clone()
        };
        memscope_results::json::write_atomic(&p, text.as_bytes())
            .map_err(|e| CliError::usage(format!("--out {}: cannot write: {e}", p.display())))?;
        println!("wrote {}", p.display());
    }
    let set = e.entries.iter().filter(|x| !x.source.starts_with("base ")).count();
    println!(
        "{set} of {} options from measurement or the driver; the rest from the named base (see each line's comment)",
        e.entries.len()
    );
    for line in taken {
        println!("{}", memscope_report::hygiene::terminal(&line));
    }
    Ok(())
}
