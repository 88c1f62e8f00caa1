//! `memscope predict` end to end (seed 003's predicted column from its own ceilings; exit codes).

use std::process::Command;

fn predict(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_memscope")).arg("predict").args(args).output().expect("runs")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = predict(args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn seed_decode_sized_matmul_is_31_us_memory_bound() {
    let v = json(&[
        "--op",
        "matmul",
        "--m",
        "1",
        "--k",
        "768",
        "--n",
        "3072",
        "--bandwidth",
        "306.7e9",
        "--peak",
        "6.325e12",
        "--launch",
        "12e-6",
        "--json",
    ]);
    assert_eq!(v["regime"], "memory");
    assert!((v["time_s"].as_f64().unwrap() * 1e6 - 31.0).abs() < 0.5);
    assert_eq!(v["bytes"].as_f64().unwrap(), 9_452_544.0);
    for k in ["launch_s", "memory_s", "compute_s"] {
        assert!(v["bounds"][k].is_f64(), "{k}");
    }
}

#[test]
fn seed_decode_step_both_compositions_at_batch_256() {
    let base = [
        "--op",
        "decode-step",
        "--batch",
        "256",
        "--context",
        "128",
        "--bandwidth",
        "306.7e9",
        "--peak",
        "6.37e12",
        "--launch",
        "8.3e-3",
        "--json",
    ];
    let totals = json(&base);
    assert_eq!(totals["regime"], "compute");
    assert!((totals["time_s"].as_f64().unwrap() * 1e3 - 9.93).abs() < 0.05);
    let mut pk = base.to_vec();
    pk.extend(["--composition", "per-kernel"]);
    let pk = json(&pk);
    assert!((pk["time_s"].as_f64().unwrap() * 1e3 - 17.8).abs() < 0.05);
}

#[test]
fn ceilings_file_picks_pattern_class_and_precision() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.json");
    std::fs::write(
        &f,
        r#"{"bandwidth_bytes_per_s": {"read": 4e12, "copy": 3e12, "write": 3.5e12},
        "launch_floor_s": {"add": 2e-6, "matmul.fp16": 5e-6}, "peak_flops_per_s": {"fp16": 6e14}, "extra": 1}"#,
    )
    .unwrap();
    let v =
        json(&["--op", "add", "--elems", "134217728", "--dtype", "fp16", "--ceilings", f.to_str().unwrap(), "--json"]);
    assert_eq!(v["pattern"], "copy");
    assert!((v["bounds"]["memory_s"].as_f64().unwrap() - 134217728.0 * 6.0 / 3e12).abs() < 1e-12);
    assert_eq!(v["bounds"]["launch_s"].as_f64().unwrap(), 2e-6);
    let out = predict(&["--op", "gelu", "--elems", "8", "--ceilings", f.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bad_input_exits_2_with_one_line_naming_the_value() {
    for (args, needle) in [
        (vec!["--op", "add", "--elems", "0", "--bandwidth", "1", "--peak", "1", "--launch", "1"], "--elems 0"),
        (vec!["--op", "conv", "--bandwidth", "1", "--peak", "1", "--launch", "1"], "--op conv"),
        (
            vec!["--op", "add", "--elems", "4", "--dtype", "fp8", "--bandwidth", "1", "--peak", "1", "--launch", "1"],
            "--dtype fp8",
        ),
        (vec!["--op", "add", "--elems", "4", "--bandwidth=-5", "--peak", "1", "--launch", "1"], "--bandwidth -5"),
        (vec!["--op", "add", "--elems", "4", "--peak", "1", "--launch", "1"], "--bandwidth"),
    ] {
        let out = predict(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err} lacks {needle}");
    }
}
