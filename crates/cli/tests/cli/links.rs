//! The interconnect lane (docs/INTERCONNECT.md) end to end on simulated GPUs: four simulated GPUs of one host
//! (a `links` section each, the same host, GPU 2 -> 1 slowed) run in one `memscope run` (one
//! thread per GPU, the peer matrix one GPU at a time, from GPU 0), results also in one file
//! (`results-all.json`); the matrix names the slowed link as the outlier and nothing else, the
//! other GPUs waive the matrix with the reason, a one-GPU host waives it too, and
//! `memscope export nvbandwidth` prints the matrices in nvbandwidth's layout.

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_memscope");

fn memscope(args: &[&str]) -> Output {
    let mut cmd = Command::new(BIN);
    for v in ["SLURM_PROCID", "SLURM_JOB_ID", "OMPI_COMM_WORLD_RANK"] {
        cmd.env_remove(v);
    }
    cmd.env("MEMSCOPE_NO_SCHEDULER", "1").args(args).output().expect("run memscope")
}

fn ok(args: &[&str]) -> String {
    let out = memscope(args);
    assert!(out.status.success(), "memscope {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn json_of(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// Hierarchy files of a simulated host of `gpus` GPUs (GPU 2 -> 1 at 70 % where it exists).
fn host(d: &Path, gpus: u32) -> Vec<String> {
    let dump = ok(&["sim", "dump", "--target", "sim:rtx4090"]);
    let base: Value = serde_json::from_str(&dump).unwrap();
    (0..gpus)
        .map(|i| {
            let mut h = base.clone();
            h["name"] = json!(format!("host-gpu{i}"));
            let pairs = if gpus > 2 {
                json!([{"from": 2, "to": 1, "bytes_per_s": 2.8e11, "latency_ns": 1250.0}])
            } else {
                json!([])
            };
            h["links"] = json!({"gpus": gpus, "index": i, "noise_fraction": 0.01, "pairs": pairs});
            let f = d.join(format!("gpu{i}.json"));
            std::fs::write(&f, serde_json::to_vec(&h).unwrap()).unwrap();
            format!("sim:{}", f.display())
        })
        .collect()
}

#[test]
fn four_simulated_gpus_in_one_run_find_the_slow_link() {
    let d = tempfile::tempdir().unwrap();
    let targets = host(d.path(), 4).join(",");
    let out = d.path().join("out");
    ok(&["run", "--target", &targets, "--quick", "--quiet", "--probes", "line,peer", "--out", out.to_str().unwrap()]);
    let first = json_of(&out.join("results.json"));
    let outliers = first["findings"]["peer.outliers"]["value"].as_array().unwrap().clone();
    assert!(!outliers.is_empty());
    for o in &outliers {
        assert_eq!((o["from"].as_u64(), o["to"].as_u64()), (Some(2), Some(1)), "{o}");
    }
    let m = &first["findings"]["peer.device_to_device_memcpy_write_ce_bytes_per_s"]["value"];
    assert!(m[0][0].is_null() && m[2][1].as_f64().unwrap() < 0.8 * m[1][2].as_f64().unwrap(), "{m}");
    assert_eq!(first["environment"]["gpu_lanes"]["mode"], json!("parallel: one thread per GPU"));
    assert_eq!(first["probes"]["line@".to_string() + first["target"]["id"].as_str().unwrap()]["status"], json!("ok"));
    // The other GPUs: the line probe ran, the matrix is waived with the reason.
    let files: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
    let others: Vec<&std::path::PathBuf> = files
        .iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            n.starts_with("results-") && n != "results-all.json"
        })
        .collect();
    assert_eq!(others.len(), 3, "{files:?}");
    for f in others {
        let doc = json_of(f);
        let id = doc["target"]["id"].as_str().unwrap().to_string();
        assert_eq!(doc["probes"][format!("peer@{id}")]["status"], json!("waived"), "{f:?}");
        assert!(doc["probes"][format!("peer@{id}")]["reason"].as_str().unwrap().contains("GPU 0"));
        assert!(
            doc["findings"]["line.bytes"].is_object()
                || doc["findings"].as_object().unwrap().keys().any(|k| k.starts_with("l1."))
        );
    }
    // One file for the host.
    let all = json_of(&out.join("results-all.json"));
    assert_eq!(all["fleet"].as_array().unwrap().len(), 4);
    // The nvbandwidth layout.
    let text = ok(&["export", "nvbandwidth", out.join("results.json").to_str().unwrap()]);
    assert!(text.contains("Running device_to_device_memcpy_write_ce."), "{text}");
    assert!(text.contains("memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s)"), "{text}");
    assert!(text.contains("N/A"), "{text}");
    assert!(text.contains("Running device_to_device_latency_sm."), "{text}");
}

#[test]
fn a_one_gpu_host_waives_the_matrix_with_the_reason() {
    let d = tempfile::tempdir().unwrap();
    let t = host(d.path(), 1).remove(0);
    let out = d.path().join("out");
    ok(&["run", "--target", &t, "--quick", "--quiet", "--probes", "peer", "--out", out.to_str().unwrap()]);
    let doc = json_of(&out.join("results.json"));
    let id = doc["target"]["id"].as_str().unwrap().to_string();
    let rec = &doc["probes"][format!("peer@{id}")];
    assert_eq!(rec["status"], json!("waived"));
    assert!(rec["reason"].as_str().unwrap().contains("one GPU"), "{rec}");
}

#[test]
fn a_bad_links_section_is_refused_naming_the_field() {
    let d = tempfile::tempdir().unwrap();
    let f = host(d.path(), 2).remove(0);
    let path = f.strip_prefix("sim:").unwrap();
    let mut h: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    h["links"]["index"] = json!(5);
    std::fs::write(path, serde_json::to_vec(&h).unwrap()).unwrap();
    let out = memscope(&[
        "run",
        "--target",
        &f,
        "--quick",
        "--probes",
        "peer",
        "--out",
        d.path().join("o").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("links.index"), "{}", String::from_utf8_lossy(&out.stderr));
}
