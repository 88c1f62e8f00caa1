//! `memscope explain` and `memscope predict --op decode-step --mode` end to end on a SYNTHETIC
//! trace written here (a hand-made torch.profiler layout, durations chosen, not measured), the
//! H200's committed results as ceilings, and the bad-trace contract: exit 2, one line naming what
//! is wrong.

use serde_json::{json, Value};
use std::process::{Command, Output};

fn memscope(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_memscope")).args(args).env("RUST_BACKTRACE", "1").output().expect("run memscope")
}

fn repo(p: &str) -> String {
    format!("{}/../../{p}", env!("CARGO_MANIFEST_DIR"))
}

const RESULTS: &str = "results/h200/reference/runs/run1/results.json";
const COMPOSE: &str = "crates/cli/tests/data/h200-compose-run1.json";
const LIBRARY: &str = "crates/explain/tests/data/h200-library-calibration.json.gz";

fn assert_usage_error(out: &Output, needle: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "want one line, got: {stderr}");
    assert!(stderr.contains(needle), "{needle:?} not named in: {stderr}");
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
}

/// A synthetic step: an addmm under a linear at batch 16 and an add, context 256 in a bmm.
fn synthetic_trace() -> Value {
    let op = |name: &str, ts: f64, dur: f64, dims: Value, types: Value| {
        json!({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
               "args": {"Input Dims": dims, "Input type": types}})
    };
    let launch = |ts: f64, corr: i64| {
        json!({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 4.0,
               "args": {"correlation": corr}})
    };
    let kernel = |name: &str, ts: f64, dur: f64, corr: i64| json!({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur, "args": {"correlation": corr}});
    json!({"schemaVersion": 1, "traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0.0, "dur": 100.0},
        op("aten::linear", 1.0, 30.0, json!([[16, 768], [2304, 768], [2304]]), json!(["float", "float", "float"])),
        op("aten::addmm", 2.0, 28.0, json!([[2304], [16, 768], [768, 2304], [], []]), json!(["float", "float", "float", "Scalar", "Scalar"])),
        launch(5.0, 1), kernel("ampere_sgemm_64x32_sliced1x4_tn", 12.0, 9.0, 1),
        op("aten::bmm", 31.0, 20.0, json!([[192, 1, 64], [192, 64, 256]]), json!(["float", "float"])),
        launch(33.0, 2), kernel("gemv2T_kernel", 40.0, 5.0, 2),
        op("aten::add", 52.0, 20.0, json!([[16, 768], [16, 768], []]), json!(["float", "float", "Scalar"])),
        launch(55.0, 3), kernel("vectorized_elementwise_kernel", 62.0, 2.0, 3)
    ]})
}

fn write(dir: &std::path::Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn explain_reports_json_text_and_html() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.json", synthetic_trace().to_string().as_bytes());
    let html = dir.path().join("x.html");
    let out = memscope(&["explain", &t, "--ceilings", &repo(RESULTS), "--json", "--html", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "memscope.explain/1");
    assert_eq!(v["kernel_count"], 3);
    assert!((v["device_busy_s"].as_f64().unwrap() - 16e-6).abs() < 1e-12);
    assert_eq!(v["known_fraction"], 1.0);
    assert_eq!(v["kernels"][0]["op"], "aten::addmm");
    assert!(v["ceilings"]["l2_bandwidth"]["value"].as_f64().unwrap() > 1e12);
    assert!(std::fs::read_to_string(&html).unwrap().contains("name=\"viewport\""));
    let out = memscope(&["explain", &t]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("device busy (union)"));
}

#[test]
fn bad_traces_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let full = synthetic_trace().to_string();
    let cases = [
        (write(dir.path(), "a.json", b"not json at all"), "not JSON"),
        (write(dir.path(), "b.json", &full.as_bytes()[..full.len() / 2]), "truncated"),
        (write(dir.path(), "c.json", br#"{"CUPTI_ACTIVITY_KIND_KERNEL": []}"#), "not a PyTorch profiler trace"),
        (
            write(
                dir.path(),
                "d.json",
                json!({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "ts": 1, "dur": 2}]})
                    .to_string()
                    .as_bytes(),
            ),
            "no GPU kernels",
        ),
        (write(dir.path(), "e.json.gz", &[0x1f, 0x8b, 8, 0, 0, 0]), "gzip"),
        (dir.path().join("missing.json").to_str().unwrap().to_string(), "cannot read"),
    ];
    for (path, needle) in &cases {
        assert_usage_error(&memscope(&["explain", path]), needle);
    }
    let t = write(dir.path(), "t.json", full.as_bytes());
    assert_usage_error(&memscope(&["explain", &t, "--ceilings", &cases[0].0]), "not JSON");
}

/// A real trace (GPT-2 small, fp32, batch 8, recorded on an H200; crates/explain/tests/data) with
/// the H200's library calibration: its products and row ops scale by the library's own times.
#[test]
fn predict_decode_step_with_the_library_calibration() {
    let trace = repo("crates/explain/tests/data/gpt2_small_fp32_ctx128_b8_eager.json.gz");
    let lib = repo(LIBRARY);
    let results = repo(RESULTS);
    let args = [
        "predict",
        "--op",
        "decode-step",
        "--batch",
        "1",
        "--context",
        "128",
        "--dtype",
        "fp32",
        "--mode",
        "graph",
        "--ceilings",
        &results,
        "--trace",
        &trace,
        "--trace-batch",
        "8",
        "--trace-context",
        "128",
        "--library-calibration",
        &lib,
        "--json",
    ];
    let out = memscope(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["library_calibration"], lib.as_str());
    let scales = v["prediction"]["op_scales"].as_array().unwrap();
    let by = |name: &str| scales.iter().filter(|o| o["name"] == name).all(|o| o["scaled_by"] == "library");
    assert!(by("aten::addmm") && by("aten::bmm") && by("aten::native_layer_norm"));
    assert!(v["time_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn predict_decode_step_from_a_trace_and_from_the_composition() {
    let dir = tempfile::tempdir().unwrap();
    let t = write(dir.path(), "t.json", synthetic_trace().to_string().as_bytes());
    let run = |extra: &[&str]| {
        let mut args = vec!["predict", "--op", "decode-step", "--batch", "64", "--context", "512", "--json"];
        args.extend_from_slice(extra);
        memscope(&args)
    };
    let out = run(&[
        "--mode",
        "stream",
        "--ceilings",
        &repo(RESULTS),
        "--trace",
        &t,
        "--trace-batch",
        "16",
        "--trace-context",
        "256",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["composition"], "trace");
    assert!(v["time_s"].as_f64().unwrap() > 0.0);
    assert_eq!(v["calibration"], Value::Null);
    // With the cuBLAS calibration of `batch --compose`, the SGEMM product scales by it; the GEMV
    // one does not.
    let (results, compose) = (repo(RESULTS), repo(COMPOSE));
    let traced = ["--mode", "stream", "--ceilings", &results, "--trace", &t, "--trace-batch", "16"];
    let with_cal = [&traced[..], &["--trace-context", "256", "--calibration", &compose]].concat();
    let out = run(&with_cal);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["calibration"], repo(COMPOSE).as_str());
    let by: Vec<&str> =
        v["prediction"]["op_scales"].as_array().unwrap().iter().map(|o| o["scaled_by"].as_str().unwrap()).collect();
    assert_eq!(by[0], "calibration");
    assert_ne!(by[1], "calibration");
    let bad_cal = [&traced[..], &["--trace-context", "256", "--calibration", &results]].concat();
    assert_usage_error(&run(&bad_cal), "--calibration");
    // The library calibration: a file that is not one is named.
    let bad_lib = [&traced[..], &["--trace-context", "256", "--library-calibration", &results]].concat();
    assert_usage_error(&run(&bad_lib), "--library-calibration");
    // Another model size: named, and refused where the trace shows no repeated layers.
    let other = [&traced[..], &["--trace-context", "256", "--trace-model", "gpt9"]].concat();
    assert_usage_error(&run(&other), "--trace-model gpt9");
    let other =
        [&traced[..], &["--trace-context", "256", "--model", "gpt2-medium", "--trace-model", "gpt2-small"]].concat();
    assert_usage_error(&run(&other), "no 12 repeated layers");
    let out = run(&["--mode", "graph", "--ceilings", &repo(COMPOSE)]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["composition"], "compose");
    assert!(v["time_s"].as_f64().unwrap() > 0.0);
    // What is missing or wrong is named.
    assert_usage_error(&run(&["--mode", "stream", "--ceilings", &repo(RESULTS), "--trace", &t]), "--trace-batch");
    assert_usage_error(&run(&["--mode", "warp", "--ceilings", &repo(RESULTS)]), "--mode warp");
    assert_usage_error(&run(&["--mode", "stream", "--ceilings", &repo(RESULTS)]), "no composition ceilings");
    assert_usage_error(&run(&["--mode", "stream", "--model", "gpt3", "--ceilings", &repo(RESULTS)]), "--model gpt3");
    let out = run(&["--mode", "graph", "--model", "gpt2-medium", "--ceilings", &repo(COMPOSE)]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let cfg = write(dir.path(), "m.json", br#"{"layers": 2, "width": 512, "heads": 8, "vocab": 1000}"#);
    let out = run(&["--mode", "graph", "--model-config", &cfg, "--ceilings", &repo(COMPOSE)]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let bad = write(dir.path(), "bad.json", br#"{"layers": 2}"#);
    assert_usage_error(&run(&["--mode", "graph", "--model-config", &bad, "--ceilings", &repo(COMPOSE)]), "width");
}

#[test]
fn a_graph_replay_takes_its_ops_from_the_eager_trace() {
    let data = |f: &str| repo(&format!("crates/explain/tests/data/{f}"));
    let run = |extra: &[&str]| {
        let mut args = vec!["explain".to_string(), data("gpt2_small_fp16_ctx1024_b1_graph.json.gz"), "--json".into()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let out = Command::new(env!("CARGO_BIN_EXE_memscope")).args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let alone = run(&[]);
    let with = run(&["--ops-from", &data("gpt2_small_fp16_ctx1024_b1_eager.json.gz")]);
    assert!(alone["known_fraction"].as_f64().unwrap() < 0.05);
    assert!(with["known_fraction"].as_f64().unwrap() > 0.85);
    assert_usage_error(
        &memscope(&["explain", &data("gpt2_small_fp16_ctx1024_b1_graph.json.gz"), "--ops-from", "/nonexistent.json"]),
        "--ops-from",
    );
}
