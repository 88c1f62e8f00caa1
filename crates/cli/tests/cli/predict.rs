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
        "12us",
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
        "8.3ms",
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
        (vec!["--op", "add", "--elems", "0", "--bandwidth", "1", "--peak", "1", "--launch", "1s"], "--elems 0"),
        (vec!["--op", "conv", "--bandwidth", "1", "--peak", "1", "--launch", "1s"], "--op conv"),
        (
            vec!["--op", "add", "--elems", "4", "--dtype", "fp8", "--bandwidth", "1", "--peak", "1", "--launch", "1s"],
            "--dtype fp8",
        ),
        (vec!["--op", "add", "--elems", "4", "--bandwidth=-5", "--peak", "1", "--launch", "1s"], "--bandwidth -5"),
        (vec!["--op", "add", "--elems", "4", "--peak", "1", "--launch", "1s"], "--bandwidth"),
    ] {
        let out = predict(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err} lacks {needle}");
    }
}

/// Counts take k/M/G/T (binary, as `sim vadd --n` does) and exponents; raw amounts take decimal
/// prefixes; a bare --launch is refused; raw FLOPs and bytes work with a ceilings file.
#[test]
fn counts_amounts_and_times_share_one_parser() {
    let c = ["--launch", "4us", "--bandwidth", "1TB/s", "--peak", "1TFLOP/s", "--json"];
    let elems = |e: &str| json(&[["--op", "add", "--elems", e].as_slice(), &c].concat())["bytes"].as_f64().unwrap();
    assert_eq!(elems("16M"), elems("16777216"));
    assert_eq!(elems("16e6"), elems("16000000"));
    assert_eq!(elems("4k"), elems("4096"));
    let mm = json(&[["--op", "matmul", "--m", "4k", "--k", "4k", "--n", "1k"].as_slice(), &c].concat());
    assert_eq!(mm["flops"].as_f64().unwrap(), 2.0 * 4096.0 * 4096.0 * 1024.0);
    let raw = json(&[["--flops", "1T", "--bytes", "1G"].as_slice(), &c].concat());
    assert_eq!((raw["flops"].as_f64().unwrap(), raw["bytes"].as_f64().unwrap()), (1e12, 1e9));

    let out = predict(&["--op", "add", "--elems", "4", "--launch", "4", "--bandwidth", "1", "--peak", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--launch 4") && err.contains("add a unit"), "{err}");
    let out = predict(&["--op", "add", "--elems", "4.5", "--launch", "4us", "--bandwidth", "1", "--peak", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("4.5"));

    let ceilings = concat!(env!("CARGO_MANIFEST_DIR"), "/../../results/h200/ceilings.json");
    let v = json(&["--flops", "1e12", "--bytes", "1e9", "--ceilings", ceilings, "--json"]);
    // 1e12 FLOP at the H200's fp32 peak (about 51 TFLOP/s) is about 20 ms: compute-bound.
    assert_eq!(v["regime"], "compute");
    assert!(v["bounds"]["launch_s"].as_f64().unwrap() > 1e-6);
    let w = json(&["--flops", "1e12", "--bytes", "1e9", "--ceilings", ceilings, "--launch", "1ms", "--json"]);
    assert_eq!(w["bounds"]["launch_s"].as_f64().unwrap(), 1e-3);
    let text = predict(&["--flops", "1e12", "--bytes", "1e9", "--ceilings", ceilings]);
    assert!(text.status.success());
    assert!(String::from_utf8_lossy(&text.stdout).contains("the smallest measured"));
}
