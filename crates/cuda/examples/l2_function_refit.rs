//! Re-derive a run's `l2.slices.function`, `l2.slices.held_out_accuracy` and
//! `l2.slices.frame_held_out_accuracy` from the slice map it kept (docs/L2_SLICES.md, "The
//! function in a run"; crates/cuda/src/probes/slices/slice_function.rs), with the partition bit's
//! mask of the run's own timing check (`l2.slices.timing_check`, SM 0): the run's results with
//! those findings replaced (or added), on stdout. For a run made before the finding's value
//! became structured, or to check a kept map.
//!
//!   l2_function_refit RESULTS.json[.gz] MAP.json[.gz]
//!
//! Exit 2 with a one-line message on bad input.

use flate2::read::GzDecoder;
use memscope_core::keys;
use memscope_cuda::probes::l2_slice_fit::points_from_map;
use memscope_cuda::probes::l2_slice_function::function_findings;
use serde_json::Value;
use std::io::Read;

/// What went wrong, naming the file.
#[derive(Debug, thiserror::Error)]
enum RefitError {
    #[error("usage: l2_function_refit RESULTS.json[.gz] MAP.json[.gz]")]
    Usage,
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: {source}")]
    Json { path: String, source: serde_json::Error },
    #[error("{path}: {source}")]
    Map { path: String, source: memscope_cuda::probes::l2_slice_fit::MapDataError },
    #[error("{path}: no partition mask for SM 0 in {}", keys::L2_SLICES_TIMING_CHECK)]
    NoMask { path: String },
    #[error("{path}: {source}")]
    Fit { path: String, source: memscope_cuda::probes::l2_slice_function::SliceFunctionError },
}

fn read(path: &str) -> Result<Value, RefitError> {
    let io = |source| RefitError::Io { path: path.into(), source };
    let raw = std::fs::read(path).map_err(io)?;
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .map_err(|source| RefitError::Io { path: path.into(), source })?;
        out
    } else {
        raw
    };
    serde_json::from_slice(&text).map_err(|source| RefitError::Json { path: path.into(), source })
}

fn run(args: &[String]) -> Result<Value, RefitError> {
    let [results_path, map_path] = args else {
        return Err(RefitError::Usage);
    };
    let mut results = read(results_path)?;
    let map = read(map_path)?;
    let check = &results["findings"][keys::L2_SLICES_TIMING_CHECK]["value"]["sms"];
    let mask = check
        .as_array()
        .and_then(|sms| sms.iter().find(|s| s["sm"] == 0))
        .and_then(|s| s["far_mask"].as_str())
        .and_then(memscope_core::gf2::parse_mask)
        .ok_or_else(|| RefitError::NoMask { path: results_path.clone() })?;
    let points = points_from_map(&map).map_err(|source| RefitError::Map { path: map_path.clone(), source })?;
    let method = format!(
        "slice map from SM {}, {}; re-fitted from the kept map by l2_function_refit",
        map["sm"].as_u64().unwrap_or(0),
        map["offsets"].as_str().unwrap_or("?")
    );
    let f = function_findings(&points, mask, &method)
        .map_err(|source| RefitError::Fit { path: map_path.clone(), source })?;
    for (key, mut finding) in [
        (keys::L2_SLICES_FUNCTION, f.function),
        (keys::L2_SLICES_HELD_OUT_ACCURACY, f.accuracy),
        (keys::L2_SLICES_FRAME_HELD_OUT_ACCURACY, f.frame_accuracy),
    ] {
        let old = &results["findings"][key];
        finding.target = old["target"].as_str().map(String::from);
        // (the run's note on the function also describes the map: kept as it was)
        if let (keys::L2_SLICES_FUNCTION, Some(n)) = (key, old["note"].as_str()) {
            finding = finding.with_note(n);
        }
        results["findings"][key] =
            serde_json::to_value(finding).map_err(|source| RefitError::Json { path: results_path.clone(), source })?;
    }
    Ok(results)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(v) => println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default()),
        Err(e) => {
            eprintln!("l2_function_refit: {e}");
            std::process::exit(2);
        }
    }
}
