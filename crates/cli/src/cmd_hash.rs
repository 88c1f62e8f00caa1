//! `memscope hash slice [--target sim:rtx4090|sim:l40s] ADDR...` and `memscope hash l2-set ADDR...`: evaluate
//! seed 000's L2 slice function `slice_of(a, N)` and within-slice set index `set_index(a)` (the
//! appendix code, implemented exactly in memscope_sim::hash) on physical addresses given in hex
//! (0x...) or decimal. One line per address "ADDR VALUE", or with --json an array of
//! {"addr": "0x...", "slice"|"set": n}. `hash slice --target h200 --page-share F:C:P` evaluates the
//! H200's measured function within a page (memscope_sim::hash_h200): "ADDR P.Y" (partition bit,
//! residue), or {"addr", "partition", "residue"}. `hash slice --target sim:FILE.json` evaluates a
//! hierarchy file's `l2.slice_function` on physical addresses (the slice index).

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
        /// spells them (`--gpu rtx4090` is the older spelling); sim:FILE.json, a hierarchy's
        /// `l2.slice_function` (e.g. the calibrated H200 preset's); h200 with --page-share.
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

/// `hash slice --target sim:FILE.json`: the slice of each physical address under the file's
/// `l2.slice_function` (any kind the hierarchy JSON takes, the residue with its frame share too).
fn from_hierarchy(file: &std::path::Path, addrs: &[String], json: bool) -> CliResult {
    let h = crate::cmd_sim::from_file(file, "--target")?;
    let f = memscope_sim::hash::IndexFn::slice(&h.l2_slice_function());
    let addrs = addrs.iter().map(|a| parse_addr(a)).collect::<Result<Vec<u64>, _>>()?;
    let values: Vec<(u64, u32)> = addrs.iter().map(|&a| (a, f.eval(a))).collect();
    print(&values, "slice", json);
    Ok(())
}

pub fn run(args: Args) -> CliResult {
    match args.command {
        HashCommand::Slice { target, json, page_share, addrs } => {
            let n = match target.strip_prefix("sim:").unwrap_or(&target) {
                "rtx4090" | "4090" => 36,
                "l40s" => 48,
                "h200" => return h200(page_share.as_deref(), &addrs, json),
                file if target.starts_with("sim:") && file.ends_with(".json") => {
                    if page_share.is_some() {
                        return Err(CliError::usage(format!("--page-share is for --target h200, not {target:?}")));
                    }
                    return from_hierarchy(std::path::Path::new(file), &addrs, json);
                }
                _ => {
                    return Err(CliError::usage(format!(
                        "--target {target:?}: accepted: sim:rtx4090, sim:l40s, sim:FILE.json, h200"
                    )))
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

    #[test]
    fn a_hierarchy_files_slice_function_is_evaluated() {
        // The calibrated H200 preset: its residue gives 0x1000 the H200 function's slice with the
        // share of frame 0 (the probe run's fit: flips 0x3d, constant 2, partition 1).
        let preset = concat!(env!("CARGO_MANIFEST_DIR"), "/../../results/h200/h200-preset.json");
        let h = crate::cmd_sim::from_file(std::path::Path::new(preset), "--target").unwrap();
        let f = memscope_sim::hash::IndexFn::slice(&h.l2_slice_function());
        let share = memscope_sim::hash_h200::parse_share("0x3d:2:1").unwrap();
        let (p, y) = memscope_sim::hash_h200::h200_slice(0x1000, &share);
        assert_eq!(f.eval(0x1000), p as u32 * 47 + y as u32);
        assert!(run(slice(&format!("sim:{preset}"), None)).is_ok());
        let e = run(slice(&format!("sim:{preset}"), Some("0x3e4:38:0"))).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let e = run(slice("sim:/nonexistent/h.json", None)).unwrap_err();
        assert!(e.exit_code() == 2 && e.to_string().contains("/nonexistent/h.json"), "{e}");
    }
}
