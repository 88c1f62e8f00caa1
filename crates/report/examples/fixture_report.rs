//! Writes an HTML report, for looking at the layout without building the whole CLI:
//! `cargo run -p memscope-report --example fixture_report -- OUT.html [RESULTS.json]`. Without a
//! results file it renders the fixture (crate::sample, not a measurement) with a made-up model run.
fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "fixture-report.html".into());
    let html = match std::env::args().nth(2) {
        Some(input) => {
            let bytes = std::fs::read(&input).expect("read results");
            let r = memscope_results::Results::from_json(&bytes).expect("parse results");
            let raw: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
            memscope_report::html::report(&r, raw.get("model"))
        }
        None => {
            let model = serde_json::json!({"ceilings": {"bandwidth_bytes_per_s": 9e11, "peak_flops_per_s": 8e13, "launch_floor_s": 3e-6},
                "operations": [
                    {"name": "add 134M", "flops": 1.34e8, "bytes": 1.6e9, "measured_s": 2.2e-3, "predicted_s": 1.78e-3, "regime": "memory"},
                    {"name": "mm 4096", "flops": 1.37e11, "bytes": 2.0e8, "measured_s": 1.8e-3, "predicted_s": 1.71e-3, "regime": "compute"},
                    {"name": "ln 1x768", "flops": 7.7e3, "bytes": 6.1e3, "measured_s": 4.1e-6, "predicted_s": 3e-6, "regime": "launch"}]});
            memscope_report::html::report(&memscope_results::sample::results(), Some(&model))
        }
    };
    std::fs::write(&path, html).expect("write");
}
