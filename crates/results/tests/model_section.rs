//! The "model" section of `memscope/1` (docs/MODEL.md): absent leaves documents byte-identical, present
//! round-trips through the atomic writer; `read_ceilings` takes a run's findings, the
//! `memscope/bottleneck-model/1` files of the H200 (tests/data), and refuses the rest with one line.

use memscope_core::{keys, Confidence, Finding, TargetInfo};
use memscope_model::run_ceilings::{self as mc, FloorFallback};
use memscope_results::model_section::{read_ceilings, CeilingsFileError, CeilingsSource, ModelSection};
use memscope_results::{json, Results, ToolInfo};
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// The H200's default run (bw, launch, peak and the rest), as committed.
const H200_RUN: &str = "h200-default-run.json";

fn target(kind: &str, id: &str) -> TargetInfo {
    TargetInfo {
        kind: kind.into(),
        id: id.into(),
        name: id.into(),
        clock_hz: None,
        bypass_supported: false,
        aliasing_supported: false,
        per_hop_supported: false,
        gpu_hierarchy: false,
        units: 1,
        capabilities: if kind == "cpu" {
            memscope_core::Capabilities::host_cpu()
        } else {
            memscope_core::Capabilities::cuda_gpu()
        },
        details: Default::default(),
    }
}

/// A GPU run with the model's findings (per-class floors for matmul.fp32 only) and a CPU finding.
fn run_doc() -> Results {
    let tool = ToolInfo { name: "memscope".into(), version: "0".into(), git_commit: None, command: vec![] };
    let mut r = Results::new(tool, target("cuda", "cuda:0"), Default::default());
    r.targets.push(target("cpu", "cpu"));
    let mut put = |k: String, v: f64, unit: &str, t: &str| {
        let mut f = Finding::number(v, unit, "synthetic", Confidence::High);
        f.target = Some(t.into());
        r.findings.insert(k, f);
    };
    for (p, v) in [("copy", 3e12), ("read", 4e12), ("write", 3.5e12)] {
        put(keys::bw_bytes_per_s(p), v, "bytes/s", "cuda:0");
    }
    put(keys::peak_flops_per_s("fp32"), 5e13, "flops/s", "cuda:0");
    put(keys::peak_flops_per_s("fp16"), 7e14, "flops/s", "cuda:0");
    put(keys::LAUNCH_FLOOR_S.into(), 4e-6, "s", "cuda:0");
    put(keys::launch_class_floor_s("matmul.fp32"), 6e-6, "s", "cuda:0");
    put("cpu.l1d.capacity_bytes".into(), 49152.0, "bytes", "cpu");
    r
}

#[test]
fn absent_section_leaves_documents_as_they_were() {
    // The committed H200 run reads with no model section and writes back the same JSON tree.
    let bytes = std::fs::read(data(H200_RUN)).unwrap();
    let r = Results::from_json(&bytes).unwrap();
    assert!(r.model.is_none());
    let raw: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    // (the only addition: the capability flags an old file's targets get from their kind)
    let mut back = serde_json::to_value(&r).unwrap();
    assert_eq!(back["target"]["capabilities"]["unit_name"], "SM");
    back["target"].as_object_mut().unwrap().remove("capabilities");
    for t in back["targets"].as_array_mut().unwrap() {
        t.as_object_mut().unwrap().remove("capabilities");
    }
    assert_eq!(back, raw);
    // A document without a model: no "model" key, and its bytes survive a read and a write.
    let doc = json::to_bytes(&run_doc());
    assert!(!String::from_utf8(doc.clone()).unwrap().contains("\"model\""));
    assert_eq!(json::to_bytes(&Results::from_json(&doc).unwrap()), doc);
}

#[test]
fn section_round_trips_through_the_atomic_writer() {
    let mut r = run_doc();
    let (_, run) = memscope_results::model_section::ceilings_of_run(&r, FloorFallback::EmptyKernel).unwrap();
    let mut section = ModelSection::new(run);
    section.parts.insert("evaluation".into(), serde_json::json!({"points": 2, "median_ratio": 1.25}));
    r.model = Some(section);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("results.json");
    json::write_atomic(&p, &json::to_bytes(&r)).unwrap();
    let back = Results::from_json(&std::fs::read(&p).unwrap()).unwrap();
    assert_eq!(back, r);
    let m = back.model.unwrap();
    let i = m.inputs.iter().find(|i| i.ceiling == "launch_floor_s.add").unwrap();
    assert_eq!((i.key.as_str(), i.value), (keys::LAUNCH_FLOOR_S, 4e-6));
    assert!(i.stands_in_for.is_some());
    let mm = m.inputs.iter().find(|i| i.ceiling == "launch_floor_s.matmul.fp32").unwrap();
    assert_eq!((mm.key.as_str(), mm.value, &mm.stands_in_for), ("launch.op.matmul_fp32_floor_s", 6e-6, &None));
}

#[test]
fn a_run_file_gives_its_gpu_findings_as_ceilings() {
    let bytes = json::to_bytes(&run_doc());
    let CeilingsSource::Run { target, run } = read_ceilings(&bytes, FloorFallback::EmptyKernel).unwrap() else {
        panic!("not read as a run")
    };
    assert_eq!(target, "cuda:0");
    assert_eq!(run.ceilings.bandwidth_bytes_per_s["read"], 4e12);
    assert_eq!(run.ceilings.launch_floor_s["matmul.fp32"], 6e-6);
    assert_eq!(run.ceilings.launch_floor_s["softmax"], 4e-6);
    // The committed H200 run: every value is its finding's.
    let bytes = std::fs::read(data(H200_RUN)).unwrap();
    let r = Results::from_json(&bytes).unwrap();
    let src = read_ceilings(&bytes, FloorFallback::EmptyKernel).unwrap();
    let c = src.ceilings();
    assert_eq!(c.bandwidth_bytes_per_s["copy"], r.number("bw.copy_bytes_per_s").unwrap());
    assert_eq!(c.peak_flops_per_s["bf16"], r.number("peak.bf16_flops_per_s").unwrap());
    assert_eq!(c.launch_floor_s["attention"], r.number("launch.floor_s").unwrap());
    // Without the fallback the same file names the per-class findings it lacks.
    let e = read_ceilings(&bytes, FloorFallback::PerClassOnly).unwrap_err().to_string();
    assert!(e.starts_with("target cuda:0: ") && e.contains("launch.op.gelu_floor_s"), "{e}");
    assert!(e.contains("`memscope run -p launch`"), "{e}");
}

#[test]
fn a_run_without_the_findings_names_them_and_the_command() {
    let mut r = run_doc();
    r.findings.remove(&keys::bw_bytes_per_s("write"));
    // A finding of another target does not count for the GPU.
    let mut f = r.findings.remove(&keys::peak_flops_per_s("fp16")).unwrap();
    f.target = Some("cpu".into());
    r.findings.insert(keys::peak_flops_per_s("fp16"), f);
    let e = read_ceilings(&json::to_bytes(&r), FloorFallback::EmptyKernel).unwrap_err();
    let CeilingsFileError::Findings { target, source } = &e else { panic!("{e}") };
    assert_eq!(target, "cuda:0");
    let missing: Vec<&str> = source.problems.iter().map(mc::Problem::key).collect();
    assert_eq!(missing, ["bw.write_bytes_per_s", "peak.fp16_flops_per_s"]);
    assert!(e.to_string().contains("`memscope run -p bw,peak`"), "{e}");
}

#[test]
fn old_model_files_stay_readable() {
    for (file, command) in [("ceilings.json", "ceilings"), ("model.json", "model"), ("batch.json", "batch")] {
        let bytes = std::fs::read(data(&format!("h200-{file}"))).unwrap();
        let raw: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        let src = read_ceilings(&bytes, FloorFallback::PerClassOnly).unwrap();
        let CeilingsSource::ModelFile { command: c, ceilings } = &src else { panic!("{file}") };
        assert_eq!(c.as_deref(), Some(command));
        let want = raw.get("ceilings").unwrap_or(&raw);
        assert_eq!(ceilings.launch_floor_s["matmul.fp32"], want["launch_floor_s"]["matmul.fp32"].as_f64().unwrap());
        assert_eq!(ceilings.bandwidth_bytes_per_s["copy"], want["bandwidth_bytes_per_s"]["copy"].as_f64().unwrap());
    }
}

#[test]
fn other_files_are_refused_with_one_line() {
    let merged = memscope_results::merge::merge(
        vec![("a.json".into(), run_doc()), ("b.json".into(), run_doc())],
        ToolInfo { name: "memscope".into(), version: "0".into(), git_commit: None, command: vec![] },
        "now",
    );
    for (bytes, needle) in [
        (b"{\"schema\": \"memscope/compare/9\"}".to_vec(), "holds no ceilings"),
        (b"[1, 2]".to_vec(), "not an object"),
        (b"{\"bandwidth_bytes_per_s\": {}}".to_vec(), "not a ceilings file"),
        (b"nope".to_vec(), "not JSON"),
        (json::to_bytes(&merged), "give one member's results file"),
    ] {
        let e = read_ceilings(&bytes, FloorFallback::EmptyKernel).unwrap_err().to_string();
        assert!(e.contains(needle) && !e.contains('\n'), "{e}");
    }
}
