//! `memscope hash slice [--target sim:rtx4090|sim:l40s] ADDR...` and `memscope hash l2-set ADDR...`: evaluate
//! seed 000's L2 slice function `slice_of(a, N)` and within-slice set index `set_index(a)` (the
//! appendix code, implemented exactly in memscope_sim::hash) on physical addresses given in hex
//! (0x...) or decimal. One line per address "ADDR VALUE", or with --json an array of
//! {"addr": "0x...", "slice"|"set": n}. `hash slice --target h200 --page-share F:C:P` evaluates the
//! H200's measured function within a page (memscope_sim::hash_h200): "ADDR P.Y" (partition bit,
//! residue), or {"addr", "partition", "residue"}.

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
        /// With --target h200: the page frame's share, FLIPS:CONSTANT:PARTITION as the
        /// l2.slices.function finding's note gives it ("flips 0x3e4, c 38, p 0" is 0x3e4:38:0).
        #[arg(long, value_name = "F:C:P")]
        page_share: Option<String>,
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

/// What `hash slice --target h200` answers without a page share (docs/L2_SLICES.md).
pub const H200_NEEDS_SHARE: &str =
    "--target h200 needs --page-share FLIPS:CONSTANT:PARTITION: the H200's L2 slice is a \
     function of the offset in its 2 MiB page and of the page frame's share, which memscope learns per page from a \
     slice map (the l2.slices.function finding's note gives it; docs/L2_SLICES.md, \"The function in a run\"), not \
     from the physical address";

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

/// `hash slice --target h200`: (partition bit, residue) of each address under the page share.
fn h200(share: Option<&str>, addrs: &[String], json: bool) -> CliResult {
    use memscope_sim::hash_h200::{h200_slice, parse_share};
    let text = share.ok_or_else(|| CliError::usage(H200_NEEDS_SHARE.to_string()))?;
    let share = parse_share(text).ok_or_else(|| {
        CliError::usage(format!(
            "--page-share {text:?}: accepted: FLIPS:CONSTANT:PARTITION, flips under 0x400, constant 0..46, partition 0 or 1"
        ))
    })?;
    let addrs = addrs.iter().map(|a| parse_addr(a)).collect::<Result<Vec<u64>, _>>()?;
    let values: Vec<(u64, (u8, u64))> = addrs.iter().map(|&a| (a, h200_slice(a, &share))).collect();
    if json {
        let arr: Vec<serde_json::Value> = values
            .iter()
            .map(|(a, (p, y))| serde_json::json!({"addr": format!("{a:#x}"), "partition": p, "residue": y}))
            .collect();
        println!("{}", serde_json::Value::Array(arr));
    } else {
        for (a, (p, y)) in values {
            println!("{a:#x} {p}.{y}");
        }
    }
    Ok(())
}

pub fn run(args: Args) -> CliResult {
    match args.command {
        HashCommand::Slice { target, json, page_share, addrs } => {
            let n = match target.strip_prefix("sim:").unwrap_or(&target) {
                "rtx4090" | "4090" => 36,
                "l40s" => 48,
                "h200" => return h200(page_share.as_deref(), &addrs, json),
                _ => {
                    return Err(CliError::usage(format!("--target {target:?}: accepted: sim:rtx4090, sim:l40s, h200")))
                }
            };
            if page_share.is_some() {
                return Err(CliError::usage(format!("--page-share is for --target h200, not {target:?}")));
            }
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

    fn slice(target: &str, share: Option<&str>) -> Args {
        Args {
            command: HashCommand::Slice {
                target: target.into(),
                json: false,
                page_share: share.map(str::to_string),
                addrs: vec!["0x1000".into()],
            },
        }
    }

    #[test]
    fn the_h200_needs_a_page_share_and_a_bad_one_is_named() {
        let e = run(slice("h200", None)).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--page-share"), "{e}");
        let e = run(slice("h200", Some("0x3e4:47:0"))).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("0x3e4:47:0"), "{e}");
        let e = run(slice("sim:rtx4090", Some("0x3e4:38:0"))).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(run(slice("h200", Some("0x3e4:38:0"))).is_ok());
    }
}
