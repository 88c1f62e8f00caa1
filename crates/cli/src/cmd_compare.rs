//! `memscope compare A.json B.json [--html F]`: every finding the two results files share with
//! both values and the ratio B/A, in the terminal, and optionally as an HTML page. With three or
//! more files, or any merged file (`memscope merge`), the fleet view: targets grouped by model,
//! per finding the median, each member's ratio to it, ranks and the outliers.

use crate::cmd_report::load_results;
use crate::error::{CliError, CliResult};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Results files: two (A and B; ratios are B / A), or three or more, or merged files, for the
    /// fleet view.
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Also write the comparison as a self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Fleet view: how far from the median (percent) a value may be before it is flagged.
    #[arg(long, value_name = "PERCENT", default_value_t = 5.0)]
    pub tolerance: f64,
}

pub fn run(args: Args) -> CliResult {
    if !(args.tolerance.is_finite() && args.tolerance >= 0.0) {
        return Err(CliError::usage(format!(
            "--tolerance {}: not a percentage (accepted: a number >= 0, e.g. 5)",
            args.tolerance
        )));
    }
    if let Some(p) = &args.html {
        crate::run_guard::check_output_file("--html", p)?;
    }
    let mut docs = vec![];
    for f in &args.files {
        docs.push((f.display().to_string(), load_results(f)?.0));
    }
    let merged = docs.iter().any(|(_, r)| !r.fleet.is_empty());
    let (text, html) = if docs.len() == 2 && !merged {
        let (a, b) = (&docs[0].1, &docs[1].1);
        (memscope_report::compare::text(a, b), args.html.as_ref().map(|_| memscope_report::compare::html(a, b)))
    } else if docs.len() >= 3 || merged {
        // (merged as `memscope merge` would: member ids unique, so labels never collide)
        let members = memscope_results::merge::merge(docs, crate::provenance::tool(), "").fleet;
        let fleet = memscope_report::fleet::analyse(&members, args.tolerance / 100.0);
        (
            memscope_report::fleet_view::text(&fleet),
            args.html.as_ref().map(|_| memscope_report::fleet_view::html(&fleet)),
        )
    } else {
        return Err(CliError::usage(format!(
            "{}: one results file has nothing to compare with (accepted: two files, three or more, or a merged file)",
            args.files[0].display()
        )));
    };
    print!("{text}");
    if let (Some(p), Some(page)) = (&args.html, html) {
        memscope_results::json::write_atomic(p, page.as_bytes())
            .map_err(|e| CliError::usage(format!("--html {}: cannot write: {e}", p.display())))?;
    }
    Ok(())
}
