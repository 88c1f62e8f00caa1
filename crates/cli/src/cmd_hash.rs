//! `memscope hash slice [--target sim:rtx4090|sim:l40s] ADDR...` and `memscope hash l2-set ADDR...`: evaluate
//! seed 000's L2 slice function `slice_of(a, N)` and within-slice set index `set_index(a)` (the
//! appendix code, implemented exactly in memscope_sim::hash) on physical addresses given in hex
//! (0x...) or decimal. One line per address "ADDR VALUE", or with --json an array of
//! {"addr": "0x...", "slice"|"set": n}.

use crate::error::{CliError, CliResult};
use memscope_sim::hash::{set_index, slice_of};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: HashCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum HashCommand {
    /// The L2 slice of each physical address (seed 000 `slice_of(a, N)`: 36 slices on the RTX 4090,
    /// 48 on the L40S).
    Slice {
        /// Which chip's function: sim:rtx4090 (N = 36) or sim:l40s (N = 48), as `run --target`
        /// spells them; `--gpu rtx4090` is the older spelling.
        #[arg(long, short = 't', alias = "gpu", default_value = "sim:rtx4090", value_name = "sim:PRESET")]
        target: String,
        /// Print a JSON array instead of lines.
        #[arg(long)]
        json: bool,
        /// Physical addresses, hex (0x...) or decimal.
        #[arg(required = true, value_name = "ADDR")]
        addrs: Vec<String>,
    },
    /// The L2 set (0..1024) inside its slice of each physical address (seed 000 `set_index(a)`).
    L2Set {
        /// Print a JSON array instead of lines.
        #[arg(long)]
        json: bool,
        /// Physical addresses, hex (0x...) or decimal.
        #[arg(required = true, value_name = "ADDR")]
        addrs: Vec<String>,
    },
}

/// What `hash slice --target h200` answers: the function is not known (docs/L2_SLICES.md).
pub const H200_UNDETERMINED: &str = "--target h200: the H200's L2 slice function is undetermined: memscope measures \
     which lines of one 2 MiB page share a slice (l2.slices.page_partition), but not the page's physical frame, and \
     that partition is neither XOR-linear nor the same for every frame (docs/L2_SLICES.md); accepted: \
     sim:rtx4090, sim:l40s";

/// Parse an address: hex with 0x, or decimal. Bad input is a usage error naming it.
pub fn parse_addr(text: &str) -> Result<u64, CliError> {
    let a = memscope_sim::hierarchy::parse_u64(text).ok_or_else(|| {
        CliError::usage(format!("address {text:?} is not a number (accepted: hex 0x1f000 or decimal 126976)"))
    })?;
    // the seed's code adds 2^16 before shifting; keep clear of u64 overflow
    if a > u64::MAX - (1 << 16) {
        return Err(CliError::usage(format!("address {text:?} is out of range (at most {:#x})", u64::MAX - (1 << 16))));
    }
    Ok(a)
}

fn print(values: &[(u64, u32)], field: &str, json: bool) {
    if json {
        let arr: Vec<serde_json::Value> =
            values.iter().map(|(a, v)| serde_json::json!({"addr": format!("{a:#x}"), field: v})).collect();
        println!("{}", serde_json::Value::Array(arr));
    } else {
        for (a, v) in values {
            println!("{a:#x} {v}");
        }
    }
}

pub fn run(args: Args) -> CliResult {
    match args.command {
        HashCommand::Slice { target, json, addrs } => {
            let n = match target.strip_prefix("sim:").unwrap_or(&target) {
                "rtx4090" | "4090" => 36,
                "l40s" => 48,
                "h200" => return Err(CliError::usage(H200_UNDETERMINED.to_string())),
                _ => return Err(CliError::usage(format!("--target {target:?}: accepted: sim:rtx4090, sim:l40s"))),
            };
            let addrs = addrs.iter().map(|a| parse_addr(a)).collect::<Result<Vec<u64>, _>>()?;
            let values: Vec<(u64, u32)> =
                addrs.iter().map(|&a| (a, slice_of(a, n).expect("36 and 48 are supported"))).collect();
            print(&values, "slice", json);
        }
        HashCommand::L2Set { json, addrs } => {
            let addrs = addrs.iter().map(|a| parse_addr(a)).collect::<Result<Vec<u64>, _>>()?;
            let values: Vec<(u64, u32)> = addrs.iter().map(|&a| (a, set_index(a))).collect();
            print(&values, "set", json);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn addresses_parse_or_name_the_bad_one() {
        assert_eq!(parse_addr("0x1f000").unwrap(), 0x1f000);
        assert_eq!(parse_addr("126976").unwrap(), 126976);
        let e = parse_addr("0xzz").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("0xzz"));
    }

    #[test]
    fn the_h200_is_named_undetermined_not_guessed() {
        let args =
            Args { command: HashCommand::Slice { target: "h200".into(), json: false, addrs: vec!["0x1000".into()] } };
        let e = run(args).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("undetermined"), "{e}");
    }
}
