//! `memscope predict --ceilings` on a `memscope run` results file (docs/MODEL.md): the ceilings come from
//! the GPU's bw, launch and peak findings (tests/fixtures/run-bw-launch-peak.json, and the committed
//! H200 run), a class without its own floor takes launch.floor_s and says so, old ceilings files
//! still read, and a file without the findings exits 2 with one line naming them and the command.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output};

fn repo(rel: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(rel).to_string_lossy().into_owned()
}

fn fixture() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-bw-launch-peak.json").to_string_lossy().into()
}

fn predict(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memscope")).arg("predict").args(args).output().expect("runs")
}

fn json(args: &[&str]) -> Value {
    let out = predict(args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

fn input<'a>(v: &'a Value, ceiling: &str) -> &'a Value {
    v["inputs"].as_array().unwrap().iter().find(|i| i["ceiling"] == ceiling).unwrap_or_else(|| panic!("{ceiling}: {v}"))
}

#[test]
fn run_file_feeds_the_ceilings_and_lists_its_inputs() {
    let f = fixture();
    // add, fp32: copy pattern; no per-class floor for add, so launch.floor_s stands in.
    let v = json(&["--op", "add", "--elems", "1048576", "--ceilings", &f, "--json"]);
    assert_eq!(v["pattern"], "copy");
    assert_eq!(v["bounds"]["memory_s"].as_f64().unwrap(), 1048576.0 * 12.0 / 3e12);
    assert_eq!(v["bounds"]["launch_s"].as_f64().unwrap(), 4e-6);
    assert_eq!(v["bounds"]["compute_s"].as_f64().unwrap(), 1048576.0 / 5e13);
    let l = input(&v, "launch_floor_s.add");
    assert_eq!((l["key"].as_str(), l["value"].as_f64()), (Some("launch.floor_s"), Some(4e-6)));
    assert!(l["stands_in_for"].as_str().unwrap().starts_with("launch.op.add_floor_s"), "{l}");
    assert_eq!(input(&v, "bandwidth_bytes_per_s.copy")["key"], "bw.copy_bytes_per_s");
    assert_eq!(input(&v, "peak_flops_per_s.fp32")["target"], "cuda:0");
    // matmul, fp32: its own class floor, no stand-in.
    let v = json(&["--op", "matmul", "--m", "8", "--k", "8", "--n", "8", "--ceilings", &f, "--json"]);
    assert_eq!(v["bounds"]["launch_s"].as_f64().unwrap(), 6e-6);
    let l = input(&v, "launch_floor_s.matmul.fp32");
    assert_eq!(l["key"], "launch.op.matmul_fp32_floor_s");
    assert!(l.get("stands_in_for").is_none());
    // The text output says where the ceilings came from.
    let out = predict(&["--op", "gelu", "--elems", "4096", "--ceilings", &f]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("from the findings of cuda:0"), "{text}");
    assert!(text.contains("launch.floor_s in place of launch.op.gelu_floor_s"), "{text}");
}

#[test]
fn decode_step_sums_the_class_floors_of_a_run_file() {
    let v = json(&["--op", "decode-step", "--batch", "1", "--context", "128", "--ceilings", &fixture(), "--json"]);
    // 49 matrix products at their class floor, 73 other kernels at the empty kernel's.
    let want = 49.0 * 6e-6 + 73.0 * 4e-6;
    assert!((v["bounds"]["launch_s"].as_f64().unwrap() - want).abs() < 1e-12, "{v}");
    assert_eq!(input(&v, "bandwidth_bytes_per_s.read")["value"].as_f64().unwrap(), 4e12);
    // An explicit flag wins, and its ceiling is not listed as taken from the file.
    let v = json(&[
        "--op",
        "decode-step",
        "--batch",
        "1",
        "--context",
        "128",
        "--launch",
        "1ms",
        "--ceilings",
        &fixture(),
        "--json",
    ]);
    assert_eq!(v["bounds"]["launch_s"].as_f64().unwrap(), 1e-3);
    assert!(v["inputs"].as_array().unwrap().iter().all(|i| !i["ceiling"].as_str().unwrap().starts_with("launch")));
}

#[test]
fn committed_h200_run_and_ceilings_files_both_predict() {
    let run = repo("crates/cli/tests/data/h200-default-run.json");
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
    let v = json(&["--op", "add", "--elems", "134217728", "--ceilings", &run, "--json"]);
    let copy = raw["findings"]["bw.copy_bytes_per_s"]["value"].as_f64().unwrap();
    assert_eq!(v["bounds"]["memory_s"].as_f64().unwrap(), 134217728.0 * 12.0 / copy);
    assert_eq!(v["bounds"]["launch_s"], raw["findings"]["launch.floor_s"]["value"]);
    for file in ["crates/cli/tests/data/h200-ceilings.json", "crates/cli/tests/data/h200-model.json"] {
        let v = json(&["--op", "add", "--elems", "1024", "--ceilings", &repo(file), "--json"]);
        assert!(v.get("inputs").is_none() && v["bounds"]["launch_s"].as_f64().unwrap() > 0.0, "{file}: {v}");
    }
}

#[test]
fn files_without_the_ceilings_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(fixture()).unwrap()).unwrap();
    let findings = doc["findings"].as_object_mut().unwrap();
    findings.remove("peak.fp16_flops_per_s");
    findings["bw.read_bytes_per_s"] = serde_json::json!({
        "value": null, "unit": "bytes/s", "method": "x", "confidence": "undetermined", "note": "the kernel failed"
    });
    let missing = dir.path().join("missing.json");
    std::fs::write(&missing, serde_json::to_string(&doc).unwrap()).unwrap();
    let mut cpu_only = doc.clone();
    cpu_only["target"]["id"] = "cpu".into();
    cpu_only["target"]["kind"] = "cpu".into();
    let cpu = dir.path().join("cpu.json");
    std::fs::write(&cpu, serde_json::to_string(&cpu_only).unwrap()).unwrap();
    let other = dir.path().join("other.json");
    std::fs::write(&other, r#"{"schema": "memscope/2"}"#).unwrap();
    let m = missing.to_str().unwrap();
    for (path, needles) in [
        (m, vec!["peak.fp16_flops_per_s", "bw.read_bytes_per_s (the kernel failed)", "`memscope run -p bw,peak`"]),
        (cpu.to_str().unwrap(), vec!["target cpu:", "bw.copy_bytes_per_s", "`memscope run -p bw,launch,peak`"]),
        (other.to_str().unwrap(), vec!["\"memscope/2\" holds no ceilings"]),
        ("/nonexistent/results.json", vec!["cannot read"]),
    ] {
        let out = predict(&["--op", "add", "--elems", "8", "--ceilings", path]);
        assert_eq!(out.status.code(), Some(2), "{path}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        for n in needles {
            assert!(err.contains(n), "{err} lacks {n}");
        }
    }
}
