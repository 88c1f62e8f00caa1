//! Every finding key in the committed H200 run (the one the simulator artifacts come from) is a
//! `memscope_core::keys` constant or comes from one of its builders: the key module is complete.

use memscope_core::keys;
use std::path::Path;

fn built(k: &str) -> bool {
    let parts: Vec<&str> = k.split('.').collect();
    match parts.as_slice() {
        ["cpu", level, _] => {
            [keys::cpu_capacity_bytes(level), keys::cpu_hit_latency_ns(level), keys::cpu_os_capacity_bytes(level)]
                .iter()
                .any(|b| b == k)
        }
        ["bw", rest] => rest.strip_suffix("_bytes_per_s").is_some_and(|x| keys::bw_bytes_per_s(x) == k),
        ["peak", rest] => rest.strip_suffix("_flops_per_s").is_some_and(|x| keys::peak_flops_per_s(x) == k),
        ["fence", rest] => rest.strip_suffix("_ns").is_some_and(|x| keys::fence_ns(x) == k),
        ["link", rest] => rest.strip_suffix("_bytes_per_s").is_some_and(|x| keys::link_bytes_per_s(x) == k),
        ["peer", rest] => rest.strip_suffix("_bytes_per_s").is_some_and(|x| keys::peer_bytes_per_s(x) == k),
        _ => false,
    }
}

#[test]
fn every_key_of_the_committed_run_is_in_the_key_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("tests/data/h200-run.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let findings = doc["findings"].as_object().unwrap();
    assert!(findings.len() > 50, "{} findings", findings.len());
    let missing: Vec<&String> = findings.keys().filter(|k| !keys::ALL.contains(&k.as_str()) && !built(k)).collect();
    assert!(missing.is_empty(), "not in memscope_core::keys: {missing:?}");
}
