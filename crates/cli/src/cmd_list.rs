//! `memscope list`: the probe registry with each probe's key, one-line description, and whether
//! it applies to the chosen target (or why it is waived).

use crate::error::CliResult;
use memscope_core::Applicability;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Show applicability for this target (default: the default targets of `memscope run`).
    #[arg(long, short = 't')]
    pub target: Option<String>,
}

pub fn run(args: Args) -> CliResult {
    let specs = match &args.target {
        Some(t) => crate::targets::parse(t)?,
        None => {
            let (specs, fallback) = crate::targets::default_targets();
            if let Some(why) = fallback {
                eprintln!("memscope: {}", crate::targets::fallback_notice(&why));
            }
            specs
        }
    };
    let mut infos = Vec::new();
    for spec in &specs {
        match crate::targets::open(spec) {
            Ok(t) => infos.push(t.info()),
            // a target named on the command line that cannot be opened ends the command (its
            // exit code: 2 for bad input, 1 for a device failure); a default one is only noted
            Err(e) if args.target.is_some() => return Err(e),
            Err(e) => eprintln!("memscope: {e}"),
        }
    }
    let probes = memscope_registry::all();
    // (the key column as wide as the longest key: "l2.slices.function")
    let w = probes.iter().map(|p| p.key().len()).max().unwrap_or(0);
    for probe in probes {
        println!("{:<w$} {}", probe.key(), probe.description());
        for info in &infos {
            match probe.applicability(info) {
                Applicability::Applicable => println!("{:<w$}   {}: applicable", "", info.id),
                Applicability::Waived(why) => println!("{:<w$}   {}: waived ({why})", "", info.id),
            }
        }
    }
    Ok(())
}
