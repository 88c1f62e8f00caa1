//! The analysis of scripts/peers/l2_partition_peer.cu (docs/L2_SLICES.md, "The partition bit over
//! many pages"): reduce a peer run to labels, or fit the partition bit on one run's labels and
//! check it on another's.
//!
//!   l2_partition_fit labels PEER.bin[.gz] OUT.json.gz   # near/far labels of every lap
//!   l2_partition_fit check TRAIN.json.gz TEST.json.gz [K=1]   # per lap: mask, held-out accuracy
//!
//! Exit 2 with a one-line message on bad input.

use flate2::{read::GzDecoder, write::GzEncoder, Compression};
use memscope_cuda::probes::l2_partition::{check_runs, parse_peer, LabelRun};
use std::io::{Read, Write};

fn read(path: &str) -> Result<Vec<u8>, String> {
    let raw = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        GzDecoder::new(&raw[..]).read_to_end(&mut out).map_err(|e| format!("{path}: {e}"))?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

fn labels(path: &str) -> Result<LabelRun, String> {
    serde_json::from_slice(&read(path)?).map_err(|e| format!("{path}: {e}"))
}

fn run(args: &[String]) -> Result<String, String> {
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["labels", peer, out] => {
            let run = LabelRun::from_peer(&parse_peer(&read(peer)?).map_err(|e| format!("{peer}: {e}"))?)?;
            let mut gz = GzEncoder::new(Vec::new(), Compression::best());
            gz.write_all(&serde_json::to_vec(&run).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
            std::fs::write(out, gz.finish().map_err(|e| e.to_string())?).map_err(|e| format!("{out}: {e}"))?;
            let modes: Vec<String> = run
                .laps
                .iter()
                .map(|l| {
                    format!(
                        "SM {}: near {:.0} next {:.0} split {:.0}",
                        l.sm, l.near_cycles, l.next_cycles, l.split_cycles
                    )
                })
                .collect();
            Ok(modes.join("\n"))
        }
        ["check", train, test] | ["check", train, test, _] => {
            let k = match args.get(3) {
                Some(k) => {
                    k.parse().ok().filter(|&k: &usize| k >= 1).ok_or_else(|| format!("K {k}: a count of 1 or more"))?
                }
                None => 1,
            };
            let checks = check_runs(&labels(train)?, &labels(test)?, k)?;
            serde_json::to_string_pretty(&checks).map_err(|e| e.to_string())
        }
        _ => Err(format!("{:?}: expected `labels PEER OUT` or `check TRAIN TEST [K]`", args.join(" "))),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(out) => println!("{out}"),
        Err(e) => {
            eprintln!("l2_partition_fit: {e}");
            std::process::exit(2);
        }
    }
}
