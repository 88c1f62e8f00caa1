//! The committed simulator artifacts are what the commands make of the committed results:
//! `sim calibrate` gives results/h200/h200-preset.json (with the further runs named after the first
//! line as `--with`) and `export accel-sim` (the same) gives results/h200/accel-sim/gpgpusim.config
//! byte for byte, from the results file named on the first line of results/h200/sim-artifacts.source
//! (scripts/regen-sim-artifacts.sh writes all three). Also:
//! a CPU-only results file is refused with exit 2.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn memscope(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_memscope")).args(args).current_dir(root()).output().unwrap()
}

/// The source file's lines: the results file, then the runs given as `--with`.
fn sources() -> Vec<String> {
    let text = std::fs::read_to_string(root().join("results/h200/sim-artifacts.source")).unwrap();
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
}

fn source() -> String {
    sources()[0].clone()
}

#[test]
fn the_committed_preset_is_the_calibration_of_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    let all = sources();
    let mut args = vec!["sim", "calibrate", &all[0], "--out", out.to_str().unwrap()];
    for w in &all[1..] {
        args.extend(["--with", w.as_str()]);
    }
    let o = memscope(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("l2.sets_per_slice") && table.contains("driver"), "{table}");
    if all.len() > 1 {
        assert!(table.contains("findings taken from"), "{table}");
    }
    let committed = std::fs::read(root().join("results/h200/h200-preset.json")).unwrap();
    assert!(std::fs::read(&out).unwrap() == committed, "regenerate with scripts/regen-sim-artifacts.sh");
}

#[test]
fn the_committed_accel_sim_config_is_the_export_of_its_source() {
    let dir = tempfile::tempdir().unwrap();
    let all = sources();
    let mut args = vec!["export", "accel-sim", &all[0], "--out", dir.path().to_str().unwrap()];
    for w in &all[1..] {
        args.extend(["--with", w.as_str()]);
    }
    let o = memscope(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let made = std::fs::read(dir.path().join("gpgpusim.config")).unwrap();
    let committed = std::fs::read(root().join("results/h200/accel-sim/gpgpusim.config")).unwrap();
    assert!(made == committed, "regenerate with scripts/regen-sim-artifacts.sh");
}

#[test]
fn cpu_only_results_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let v: serde_json::Value = serde_json::from_slice(
        &std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/h200-full-run1.json")).unwrap(),
    )
    .unwrap();
    let mut cpu = v.clone();
    cpu["target"] = v["targets"].as_array().unwrap().iter().find(|t| t["kind"] == "cpu").unwrap().clone();
    let findings: serde_json::Map<String, serde_json::Value> = v["findings"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("cpu."))
        .map(|(k, x)| (k.clone(), x.clone()))
        .collect();
    cpu["findings"] = serde_json::Value::Object(findings);
    let p = dir.path().join("cpu.json");
    std::fs::write(&p, serde_json::to_vec(&cpu).unwrap()).unwrap();
    let p = p.to_str().unwrap();
    for args in [vec!["sim", "calibrate", p], vec!["export", "accel-sim", p, "--out", dir.path().to_str().unwrap()]] {
        let o = memscope(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("CPU") && err.lines().count() == 1, "{err}");
    }
}

/// The results of a simulated target are refused by `sim calibrate` and `export accel-sim` (exit 2
/// naming the file and the target) unless --allow-simulated, and then the output says so.
#[test]
fn a_simulated_source_is_refused_unless_allowed_and_then_marked() {
    let dir = tempfile::tempdir().unwrap();
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(root().join(source())).unwrap()).unwrap();
    doc["target"]["kind"] = "sim".into();
    doc["target"]["id"] = "sim:rtx4090".into();
    doc["target"]["name"] = "simulated RTX 4090".into();
    let p = dir.path().join("sim.json");
    std::fs::write(&p, serde_json::to_vec(&doc).unwrap()).unwrap();
    let p = p.to_str().unwrap();
    let cfg = dir.path().join("cfg");
    let cfg = cfg.to_str().unwrap();
    for args in [vec!["sim", "calibrate", p], vec!["export", "accel-sim", p, "--out", cfg]] {
        let o = memscope(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("sim:rtx4090") && err.contains("sim.json") && err.contains("--allow-simulated"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let o = memscope(&["sim", "calibrate", p, "--allow-simulated"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let h: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(h["name"].as_str().unwrap().contains("SIMULATED"), "{}", h["name"]);
    let o = memscope(&["export", "accel-sim", p, "--out", cfg, "--allow-simulated"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("warning"));
    let text = std::fs::read_to_string(dir.path().join("cfg/gpgpusim.config")).unwrap();
    assert!(text.starts_with("# SIMULATED SOURCE:"), "{}", &text[..200.min(text.len())]);
}

/// `--with` takes findings from another run of the same GPU only: another GPU's run, or a file
/// that is not there, exits 2 with one line naming it.
#[test]
fn with_refuses_another_gpus_run_and_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let all = sources();
    let mut other: serde_json::Value = serde_json::from_slice(&std::fs::read(root().join(&all[0])).unwrap()).unwrap();
    other["target"]["name"] = "NVIDIA A100-SXM4-80GB".into();
    let p = dir.path().join("other.json");
    std::fs::write(&p, serde_json::to_vec(&other).unwrap()).unwrap();
    let missing = dir.path().join("missing.json");
    for (with, says) in [(p.to_str().unwrap(), "A100"), (missing.to_str().unwrap(), "missing.json")] {
        let o = memscope(&["sim", "calibrate", &all[0], "--with", with]);
        assert_eq!(o.status.code(), Some(2), "{with}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says) && err.lines().count() == 1, "{err}");
    }
}
