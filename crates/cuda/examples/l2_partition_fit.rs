//! The analysis of scripts/peers/l2_partition_peer.cu (docs/L2_SLICES.md, "The partition bit over
//! many pages"): reduce a peer run to labels, or fit the partition bit on one run's labels and
//! check it on another's.
//!
//!   l2_partition_fit labels PEER.bin[.gz] OUT.json.gz   # near/far labels of every lap
//!   l2_partition_fit check TRAIN.json.gz TEST.json.gz [K=1]   # per lap: mask, held-out accuracy
//!
//! Exit 2 with a one-line message on bad input.

use flate2::{read::GzDecoder, write::GzEncoder, Compression};
use memscope_cuda::probes::l2_partition::{check_runs, parse_peer, LabelRun, PartitionDataError};
use std::io::{Read, Write};

/// What went wrong, naming the file or argument.
#[derive(Debug, thiserror::Error)]
enum FitError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Json { path: String, source: serde_json::Error },
    #[error("{path}: {source}")]
    Data { path: String, source: PartitionDataError },
    #[error("{0}")]
    Usage(String),
}

fn io(path: &str) -> impl FnOnce(std::io::Error) -> FitError + '_ {
    move |source| FitError::Io { path: path.to_string(), source }
}

fn read(path: &str) -> Result<Vec<u8>, FitError> {
    let raw = std::fs::read(path).map_err(io(path))?;
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        GzDecoder::new(&raw[..]).read_to_end(&mut out).map_err(io(path))?;
        Ok(out)
    } else {
        Ok(raw)
    }
}

fn labels(path: &str) -> Result<LabelRun, FitError> {
    serde_json::from_slice(&read(path)?).map_err(|source| FitError::Json { path: path.to_string(), source })
}

fn run(args: &[String]) -> Result<String, FitError> {
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["labels", peer, out] => {
            let data = |source| FitError::Data { path: peer.to_string(), source };
            let run = LabelRun::from_peer(&parse_peer(&read(peer)?).map_err(data)?).map_err(data)?;
            let json = serde_json::to_vec(&run).map_err(|source| FitError::Json { path: out.to_string(), source })?;
            let mut gz = GzEncoder::new(Vec::new(), Compression::best());
            gz.write_all(&json).map_err(io(out))?;
            std::fs::write(out, gz.finish().map_err(io(out))?).map_err(io(out))?;
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
                Some(k) => k
                    .parse()
                    .ok()
                    .filter(|&k: &usize| k >= 1)
                    .ok_or_else(|| FitError::Usage(format!("K {k}: a count of 1 or more")))?,
                None => 1,
            };
            let checks = check_runs(&labels(train)?, &labels(test)?, k)
                .map_err(|source| FitError::Data { path: format!("{train} against {test}"), source })?;
            serde_json::to_string_pretty(&checks)
                .map_err(|source| FitError::Json { path: "the check".to_string(), source })
        }
        _ => {
            Err(FitError::Usage(format!("{:?}: expected `labels PEER OUT` or `check TRAIN TEST [K]`", args.join(" "))))
        }
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
