//! `memscope ceilings|model|fusion|batch` before any measurement (docs/MODEL.md): a GPU that is not
//! there ends the command with one line naming it and a non-zero status (2 when the driver says
//! there is no such GPU, 1 when no driver can be loaded, as on a machine without a GPU), writing
//! no results; a bad --out is exit 2 naming it, before the GPU is even looked at.

use std::process::Command;

fn memscope(args: &[&str], cwd: &std::path::Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_memscope")).args(args).current_dir(cwd).output().expect("run memscope");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_gpu_that_is_not_there_is_a_clear_one_line_error_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in ["model", "ceilings", "fusion", "batch"] {
        let out = dir.path().join(format!("{cmd}.json"));
        let (rc, err) = memscope(&[cmd, "--device", "99", "--out", out.to_str().unwrap()], dir.path());
        assert!(rc == 1 || rc == 2, "{cmd}: exit {rc}: {err}");
        let line = err.lines().find(|l| l.starts_with("memscope: ") && !l.contains("ceilings from the probes"));
        let line = line.unwrap_or_else(|| panic!("{cmd}: no error line in {err:?}"));
        assert!(line.contains("99") && line.to_lowercase().contains("gpu"), "{cmd}: {line}");
        assert!(!out.exists(), "{cmd}: wrote {} without measuring", out.display());
    }
}

#[test]
fn a_bad_out_is_exit_2_before_the_gpu_is_looked_at() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/folder/model.json");
    let folder = dir.path().to_str().unwrap().to_string();
    for args in [
        vec!["model", "--device", "99", "--out", missing.to_str().unwrap()],
        vec!["model", "--all", "--out", &folder],
        vec!["ceilings", "--device", "99", "--out", "-"],
        vec!["batch", "--compose", "--device", "99", "--out", missing.to_str().unwrap()],
    ] {
        let (rc, err) = memscope(&args, dir.path());
        assert_eq!(rc, 2, "{args:?}: {err}");
        assert!(err.contains("--out") && !err.contains("99"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn without_out_the_document_goes_to_memscope_out() {
    let dir = tempfile::tempdir().unwrap();
    let (rc, err) = memscope(&["model", "--device", "99"], dir.path());
    assert_ne!(rc, 0, "{err}");
    // The default folder was prepared (checked writable) before the GPU; nothing measured, no file.
    assert!(dir.path().join("memscope-out").is_dir());
    assert!(!dir.path().join("memscope-out/model.json").exists());
}

/// A `memscope model` document (memscope/1 with a model section) as `report --model` takes it:
/// its device is its target's name, its operations those of its evaluation part.
#[test]
fn report_takes_a_model_document_of_the_same_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/run-bw-launch-peak.json");
    let mut doc: serde_json::Value = serde_json::from_slice(&std::fs::read(fixture).unwrap()).unwrap();
    doc["model"] = serde_json::json!({
        "ceilings": {"bandwidth_bytes_per_s": {"copy": 4e12}, "launch_floor_s": {"add": 4e-6}, "peak_flops_per_s": {"fp32": 5e13}},
        "inputs": [],
        "parts": {"checks": [{"kernel": "add_f32", "rel_err": 0.0, "tolerance": 1e-5, "ok": true}],
                  "evaluation": {"points": [{"operation": "add 134217728 fp32", "flops": 1.3e8, "bytes": 1.6e9,
                                              "measured": {"per_call_s": 4.2e-4}, "prediction": {"time_s": 4.0e-4, "regime": "memory"}}]}}
    });
    let model = dir.path().join("model.json");
    std::fs::write(&model, serde_json::to_vec(&doc).unwrap()).unwrap();
    let html = dir.path().join("r.html");
    let (rc, err) = memscope(
        &["report", fixture, "--model", model.to_str().unwrap(), "--html", html.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(rc, 0, "{err}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("add 134217728 fp32"), "the evaluation's operation is drawn");
    // Another GPU's document is refused, naming it.
    doc["target"]["name"] = serde_json::json!("Some Other GPU");
    std::fs::write(&model, serde_json::to_vec(&doc).unwrap()).unwrap();
    let (rc, err) = memscope(
        &["report", fixture, "--model", model.to_str().unwrap(), "--html", html.to_str().unwrap()],
        dir.path(),
    );
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("Some Other GPU"), "{err}");
}
