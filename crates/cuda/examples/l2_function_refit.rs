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

fn read(path: &str) -> Result<Value, String> {
    let raw = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        GzDecoder::new(&raw[..]).read_to_end(&mut out).map_err(|e| format!("{path}: {e}"))?;
        out
    } else {
        raw
    };
    serde_json::from_slice(&text).map_err(|e| format!("{path}: {e}"))
}

fn run(args: &[String]) -> Result<Value, String> {
    let [results_path, map_path] = args else {
        return Err("usage: l2_function_refit RESULTS.json[.gz] MAP.json[.gz]".into());
    };
    let mut results = read(results_path)?;
    let map = read(map_path)?;
    let check = &results["findings"][keys::L2_SLICES_TIMING_CHECK]["value"]["sms"];
    let mask = check
        .as_array()
        .and_then(|sms| sms.iter().find(|s| s["sm"] == 0))
        .and_then(|s| s["far_mask"].as_str())
        .and_then(memscope_core::gf2::parse_mask)
        .ok_or_else(|| format!("{results_path}: no partition mask for SM 0 in {}", keys::L2_SLICES_TIMING_CHECK))?;
    let points = points_from_map(&map).map_err(|e| format!("{map_path}: {e}"))?;
    let method = format!(
        "slice map from SM {}, {}; re-fitted from the kept map by l2_function_refit",
        map["sm"].as_u64().unwrap_or(0),
        map["offsets"].as_str().unwrap_or("?")
    );
    let f = function_findings(&points, mask, &method).map_err(|e| format!("{map_path}: {e}"))?;
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
        results["findings"][key] = serde_json::to_value(finding).map_err(|e| e.to_string())?;
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
