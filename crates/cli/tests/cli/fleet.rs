//! The fleet (docs/GUIDE.md) end to end on simulated GPUs: four copies of the simulated RTX 4090, each
//! with its own timing noise, one with slower L2 and DRAM (the planted outlier), run through
//! `memscope run --quick --probes line,latency`, merged by `memscope merge`, and compared: the
//! fleet view flags the slowed one for the slowed findings and nothing else, from the merged file
//! and from the four files alike. Also: the two-file compare as before, a bad file refused by
//! merge (exit 2, one line naming the file and the JSON path), and the scheduler's folders.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_memscope");
const SCHEDULER_VARS: [&str; 4] = ["SLURM_PROCID", "SLURM_JOB_ID", "OMPI_COMM_WORLD_RANK", "MEMSCOPE_NO_SCHEDULER"];

fn memscope(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(BIN);
    for v in SCHEDULER_VARS {
        cmd.env_remove(v);
    }
    cmd.args(args).envs(env.iter().copied()).output().expect("run memscope")
}

fn ok(args: &[&str]) -> String {
    let out = memscope(args, &[]);
    assert!(out.status.success(), "memscope {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

/// Four simulated GPUs of one model (noise seeds 1-4), the fourth with L2 and DRAM 10 % slower;
/// returns their results files.
fn runs(d: &Path) -> Vec<String> {
    let dump = ok(&["sim", "dump", "--target", "sim:rtx4090"]);
    let base: Value = serde_json::from_str(&dump).unwrap();
    let mut files = vec![];
    for (i, name) in ["gpu0", "gpu1", "gpu2", "slow"].iter().enumerate() {
        let mut h = base.clone();
        h["noise"]["jitter_ns"] = serde_json::json!(0.5);
        h["noise"]["seed"] = serde_json::json!(i + 1);
        if *name == "slow" {
            h["l2"]["hit_ns"] = serde_json::json!(h["l2"]["hit_ns"].as_f64().unwrap() * 1.1);
            h["dram"]["latency_ns"] = serde_json::json!(h["dram"]["latency_ns"].as_f64().unwrap() * 1.1);
        }
        let hier = d.join(format!("{name}.json"));
        std::fs::write(&hier, serde_json::to_vec(&h).unwrap()).unwrap();
        let out = d.join(name);
        let target = format!("sim:{}", hier.display());
        ok(&[
            "run",
            "--target",
            &target,
            "--quick",
            "--quiet",
            "--probes",
            "line,latency",
            "--out",
            out.to_str().unwrap(),
        ]);
        files.push(out.join("results.json").display().to_string());
    }
    files
}

/// The (target label, finding) pairs of the "outliers" section of the fleet view.
fn outliers(text: &str) -> BTreeSet<(String, String)> {
    let Some(at) = text.find("\noutliers (") else {
        assert!(text.contains("no outliers"), "{text}");
        return BTreeSet::new();
    };
    text[at..]
        .lines()
        .skip(2)
        .map(|l| {
            let (who, rest) = l.trim().split_once(": ").unwrap();
            (who.to_string(), rest.split_whitespace().next().unwrap().to_string())
        })
        .collect()
}

#[test]
fn merge_and_fleet_compare_find_the_planted_outlier() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let files = runs(d);
    let merged = d.join("fleet.json");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["--out", merged.to_str().unwrap()]);
    ok(&args);

    // Every member kept with every finding, each target listed under a label of its own.
    let m = json(&merged);
    assert_eq!(m["schema"], "memscope/1");
    let fleet = m["fleet"].as_array().unwrap();
    assert_eq!(fleet.len(), 4);
    for (member, file) in fleet.iter().zip(&files) {
        assert_eq!(member["source"], file.as_str());
        assert_eq!(member["results"]["findings"], json(Path::new(file))["findings"]);
    }
    let labels: BTreeSet<&str> = m["targets"].as_array().unwrap().iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(labels.len(), 4, "{labels:?}");
    // The merged file is a results file the report reads.
    ok(&["report", merged.to_str().unwrap()]);

    let slow_label = m["targets"][3]["id"].as_str().unwrap().to_string();
    assert!(slow_label.ends_with("slow.json"), "{slow_label}");
    let expected: BTreeSet<(String, String)> = ["dram.latency_ns", "l2.hit_latency_ns", "l2.hit_latency_l1_path_ns"]
        .iter()
        .map(|k| (slow_label.clone(), k.to_string()))
        .collect();
    let html = d.join("fleet.html");
    let text = ok(&["compare", merged.to_str().unwrap(), "--html", html.to_str().unwrap()]);
    assert_eq!(outliers(&text), expected, "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert_eq!(page.matches("data-outlier=").count(), 3);
    assert!(page.contains("id=\"fleet-0\""));

    // The four files directly: the same view.
    let mut args = vec!["compare"];
    args.extend(files.iter().map(String::as_str));
    assert_eq!(outliers(&ok(&args)), expected);
    // A tolerance above the planted 10 %: nothing flagged.
    args.extend(["--tolerance", "12"]);
    assert!(outliers(&ok(&args)).is_empty());

    // Two files: the A/B compare as before.
    let two = ok(&["compare", &files[0], &files[3]]);
    assert!(two.contains("B/A") && !two.contains("fleet"), "{two}");
}

#[test]
fn merge_refuses_a_bad_file_naming_it_and_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = d.join("m.json");
    let run = d.join("run");
    ok(&["run", "--target", "sim:rtx4090", "--quick", "--quiet", "--probes", "line", "--out", run.to_str().unwrap()]);
    let good = run.join("results.json");
    let mut v = json(&good);
    v["findings"]["l1.line_bytes"]["confidence"] = serde_json::json!(7);
    let bad = d.join("bad.json");
    std::fs::write(&bad, serde_json::to_vec(&v).unwrap()).unwrap();
    let o = memscope(&["merge", good.to_str().unwrap(), bad.to_str().unwrap(), "--out", out.to_str().unwrap()], &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("bad.json") && err.contains("findings[\"l1.line_bytes\"].confidence"), "{err}");
    assert!(!out.exists(), "a refused merge wrote its output");
    let o = memscope(&["compare", good.to_str().unwrap(), "--tolerance", "-1"], &[]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_scheduled_run_writes_under_host_and_rank() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("out");
    let args =
        ["run", "--target", "sim:rtx4090", "--quick", "--quiet", "--probes", "line", "--out", d.to_str().unwrap()];
    let o = memscope(&args, &[("SLURM_PROCID", "2"), ("SLURM_JOB_ID", "4242")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let folders: Vec<_> =
        std::fs::read_dir(&d).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
    assert!(folders[0].ends_with("-rank2"), "{folders:?}");
    let results = d.join(&folders[0]).join("results.json");
    let r = json(&results);
    assert_eq!(r["environment"]["scheduler"]["rank"], 2);
    assert_eq!(r["environment"]["scheduler"]["job_id"], "4242");
    assert_eq!(r["environment"]["scheduler"]["kind"], "slurm");
    let merged = dir.path().join("m.json");
    ok(&["merge", results.to_str().unwrap(), "--out", merged.to_str().unwrap()]);
    assert_eq!(json(&merged)["fleet"][0]["id"].as_str(), Some(folders[0].as_str()));
    assert_eq!(json(&merged)["fleet"][0]["rank"], 2);
    // Without the scheduler's variables: DIR/results.json as always.
    let plain = dir.path().join("plain");
    let args =
        ["run", "--target", "sim:rtx4090", "--quick", "--quiet", "--probes", "line", "--out", plain.to_str().unwrap()];
    let o = memscope(&args, &[]);
    assert!(o.status.success());
    assert!(plain.join("results.json").is_file());
    assert!(json(&plain.join("results.json"))["environment"].get("scheduler").is_none());
}
