//! explain and predict on REAL PyTorch programs: the traces in tests/data/ (recorded on an H200;
//! tests/data/README.md) and their event-timed step times in results/h200/real-programs/
//! summary.json, against the ceilings of a memscope run on an H200
//! (results/h200/reference/runs/run1/results.json: another session of the same GPU
//! model). The scores are printed (`--nocapture`) and docs/MODEL.md ("Real programs") quotes them.

use memscope_explain::predict::{gpt2, predict_from_trace, Mode, ModelConfig, Scaling};
use memscope_explain::{
    explain, explain_with, load, load_calibration, load_ceilings, Ceilings, Explanation, LibraryCalibration, Trace,
};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn repo(p: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(p)
}

fn ceilings() -> Ceilings {
    load_ceilings(&repo("results/h200/reference/runs/run1/results.json")).unwrap()
}

/// PyTorch's own kernels timed over a grid of shapes on an H200 (scripts/programs/
/// calibrate_library.py; results/h200/library-calibration/README.md).
fn library() -> LibraryCalibration {
    LibraryCalibration::load(&repo("crates/explain/tests/data/h200-library-calibration.json.gz")).unwrap()
}

fn summary() -> Value {
    serde_json::from_slice(&std::fs::read(repo("results/h200/real-programs/summary.json")).unwrap()).unwrap()
}

fn fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(repo("crates/explain/tests/data"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".json.gz") && !p.to_string_lossy().contains("library-calibration"))
        .collect();
    v.sort();
    assert!(v.len() >= 4, "the real-program fixtures are missing");
    v
}

fn llama_1b() -> ModelConfig {
    ModelConfig { name: "llama-1b".into(), layers: 16, width: 2048, heads: 32, mlp_width: 8192, vocab: 128256 }
}

fn model(name: &str) -> Option<ModelConfig> {
    gpt2(name).or_else(|| (name == "llama-1b").then(llama_1b))
}

fn explained(p: &Path, c: &Ceilings) -> (Trace, Explanation, f64) {
    let t0 = std::time::Instant::now();
    let t = load(p).unwrap();
    let x = explain(&t, &p.display().to_string(), Some(c));
    (t, x, t0.elapsed().as_secs_f64())
}

#[test]
fn explain_attributes_bounds_and_times_every_real_trace() {
    let c = ceilings();
    println!("file  known  busy/sum  highest-efficiency(op, ceiling)  violations  seconds  steps(set by)  dispatch/op");
    for p in fixtures() {
        let (_, x, secs) = explained(&p, &c);
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        let known_ops: Vec<_> = x.ops.iter().filter(|o| o.cost.known && o.efficiency.is_some()).collect();
        let worst = known_ops.iter().max_by(|a, b| a.efficiency.unwrap().total_cmp(&b.efficiency.unwrap())).unwrap();
        let violations: Vec<_> = known_ops.iter().filter(|o| o.efficiency.unwrap() > 1.05).collect();
        let agreement = x.device_busy_s / x.kernel_sum_s;
        println!(
            "{name}  {:.3}  {:.4}  {:.3} ({} {:?} {})  {}  {:.3}  {:?}  {:?}",
            x.known_fraction,
            agreement,
            worst.efficiency.unwrap(),
            worst.name,
            worst.input_dims,
            worst.bound.as_ref().unwrap().ceiling,
            violations.len(),
            secs,
            x.steps.iter().map(|s| s.sets.as_str()).collect::<Vec<_>>(),
            x.dispatch_floor.per_op_s
        );
        for v in &violations {
            println!("  VIOLATION {} {:?} {:?} eff {:.3}", v.name, v.input_dims, v.input_types, v.efficiency.unwrap());
        }
        // The busy time is a union: equal to the sum within 2 % when kernels do not overlap (one
        // stream here).
        assert!((agreement - 1.0).abs() <= 0.02, "{name}: busy {} sum {}", x.device_busy_s, x.kernel_sum_s);
        // No real op beats its bound by more than 5 %.
        assert!(violations.is_empty(), "{name}: {} ops beat their bound", violations.len());
        // Eager traces: at least 95 % of GPU time in known ops.
        if name.contains("eager") {
            assert!(x.known_fraction >= 0.95, "{name}: known_fraction {}", x.known_fraction);
        }
        // A trace of 2 MB of JSON or less reads and explains in under a second.
        let json_bytes = summary()["traces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["file"] == name.as_str())
            .and_then(|t| t["bytes_json"].as_f64())
            .unwrap();
        if json_bytes <= 2.1e6 {
            assert!(secs < 1.0, "{name}: {secs} s for {json_bytes} bytes");
        }
    }
}

/// One scored prediction.
struct Score {
    file: String,
    mode: &'static str,
    context: u64,
    batch: u64,
    /// `in` (the traced model and context), `context` (the other context), `model` (the other
    /// GPT-2 size, either context).
    sample: &'static str,
    measured_s: f64,
    predicted_s: f64,
}

impl Score {
    fn ratio(&self) -> f64 {
        self.measured_s / self.predicted_s
    }
}

fn factor(r: f64) -> f64 {
    r.max(1.0 / r)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

/// Every eager trace of a hand-written program predicts every event-timed step of the same
/// program, model and dtype, in both modes: the traced context in sample, the other context out of
/// sample; a hand-written GPT-2 trace also predicts the other GPT-2 size's steps (small from
/// medium, medium from small; out of sample). hf-gpt2 is left out: its step is set by one host
/// call (cuDNN's plan for a new key length, tests/data/README.md) that no trace of another step
/// can carry. `lib`: the library calibration of the same GPU model (None: without it).
fn scores(c: &Ceilings, lib: Option<&LibraryCalibration>) -> Vec<Score> {
    scores_against(c, lib, &summary())
}

/// `scores`, the traces (and their own step times) of results/h200/real-programs against the
/// steps of `measured` (a summary of the same sweep, possibly another session's).
fn scores_against(c: &Ceilings, lib: Option<&LibraryCalibration>, measured: &Value) -> Vec<Score> {
    let sum = summary();
    let cal = load_calibration(&repo("crates/cli/tests/data/h200-compose-run1.json")).unwrap();
    let mut out = Vec::new();
    for t in sum["traces"].as_array().unwrap() {
        let file = t["file"].as_str().unwrap();
        if t["mode"] != "eager" || t["program"] == "hf-gpt2" {
            continue;
        }
        let p = repo("crates/explain/tests/data").join(file);
        let (trace, x, _) = explained(&p, c);
        let m = model(t["model"].as_str().unwrap()).unwrap();
        let (b0, t0) = (t["batch"].as_u64().unwrap(), t["context"].as_u64().unwrap());
        for s in measured["steps"].as_array().unwrap() {
            if s["program"] != t["program"] || s["dtype"] != t["dtype"] {
                continue;
            }
            let target = model(s["model"].as_str().unwrap()).unwrap();
            let other_model = target != m;
            let (mode, name) = if s["mode"] == "eager" { (Mode::Stream, "eager") } else { (Mode::Graph, "graph") };
            let (b, ctx) = (s["batch"].as_u64().unwrap(), s["context"].as_u64().unwrap());
            let sc = Scaling {
                model: target,
                trace_batch: b0,
                trace_context: t0,
                batch: b,
                context: ctx,
                mode,
                trace_step_s: t["step_time_s"].as_f64(),
                trace_model: other_model.then(|| m.clone()),
            };
            let pr = predict_from_trace(&trace, &x, c, &sc, Some(&cal), lib).unwrap();
            out.push(Score {
                file: file.into(),
                mode: name,
                context: ctx,
                batch: b,
                sample: if other_model {
                    "model"
                } else if ctx == t0 {
                    "in"
                } else {
                    "context"
                },
                measured_s: s["step_time_s"].as_f64().unwrap(),
                predicted_s: pr.time_s,
            });
        }
    }
    out
}

/// The scores of one set of predictions per mode and sample (`SCORE` lines), and each group's
/// ratios.
fn summarise(all: &[Score], label: &str) {
    for mode in ["eager", "graph"] {
        for sample in ["in", "context", "model"] {
            let r = group(all, mode, sample);
            if r.is_empty() {
                continue;
            }
            let worst = r.iter().copied().max_by(|a, b| factor(*a).total_cmp(&factor(*b))).unwrap();
            println!(
                "SCORE {label} {mode} {}: n {} median {:.3} worst {:.3} within 1.25x {:.0} % within 1.5x {:.0} %",
                match sample {
                    "in" => "in-sample",
                    "context" => "other context",
                    _ => "other model size",
                },
                r.len(),
                median(r.clone()),
                worst,
                100.0 * within(&r, 1.25),
                100.0 * within(&r, 1.5)
            );
        }
    }
}

fn group(all: &[Score], mode: &str, sample: &str) -> Vec<f64> {
    all.iter().filter(|s| s.mode == mode && s.sample == sample).map(Score::ratio).collect()
}

fn within(r: &[f64], f: f64) -> f64 {
    r.iter().filter(|x| factor(**x) <= f).count() as f64 / r.len() as f64
}

#[test]
fn predict_scores_against_the_event_timed_steps() {
    let c = ceilings();
    let lib = library();
    let without = scores(&c, None);
    let all = scores(&c, Some(&lib));
    println!("file  mode  context  batch  sample  measured_ms  predicted_ms  measured/predicted");
    for s in &all {
        println!(
            "{}  {}  {}  {}  {}  {:.3}  {:.3}  {:.3}",
            s.file,
            s.mode,
            s.context,
            s.batch,
            s.sample,
            s.measured_s * 1e3,
            s.predicted_s * 1e3,
            s.ratio()
        );
    }
    summarise(&without, "without-library");
    summarise(&all, "library");
    // The outcomes docs/MODEL.md ("Real programs") states: every median within 1.1x; every
    // in-sample step within 1.25x; every out-of-sample step (other context, other GPT-2 size)
    // within 1.5x.
    assert_eq!(all.iter().filter(|s| s.sample != "model").count(), 160);
    for mode in ["eager", "graph"] {
        for sample in ["in", "context", "model"] {
            let r = group(&all, mode, sample);
            assert_eq!(r.len(), if sample == "model" { 56 } else { 40 });
            let m = median(r.clone());
            assert!(factor(m) <= 1.1, "{mode} {sample}: median {m}");
            if sample == "in" {
                assert!(within(&r, 1.25) == 1.0, "{mode}: {} of the in-sample steps within 1.25x", within(&r, 1.25));
            } else {
                assert!(within(&r, 1.5) == 1.0, "{mode} {sample}: {} within 1.5x", within(&r, 1.5));
            }
        }
    }
    // The library calibration is what brought the out-of-sample steps within 1.5x.
    assert!(within(&group(&without, "graph", "model"), 1.5) < 1.0);
}

/// The same predictions against the sweep timed again in another session on another H200
/// (results/h200/real-programs-repeat: 100 steps a configuration, no traces). Graph replays
/// repeat within 2 % between the sessions and their predictions keep the outcomes; eager steps
/// set by the host move with the host's speed in each session (0.50 to 1.39 times the first
/// session's), which no trace taken in the first session carries, so their scores are printed,
/// not held. `cargo test --release -p memscope-explain --test explain
/// real_programs::predict_scores_against_the_repeat_sweep -- --ignored --nocapture`
#[test]
#[ignore = "reads the repeat sweep; seconds in a release build, documented in results/h200/real-programs-repeat"]
fn predict_scores_against_the_repeat_sweep() {
    let raw = std::fs::read(repo("results/h200/real-programs-repeat/summary.json.gz")).unwrap();
    let mut text = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut text).unwrap();
    let repeat: Value = serde_json::from_slice(&text).unwrap();
    let all = scores_against(&ceilings(), Some(&library()), &repeat);
    summarise(&all, "repeat-sweep");
    for sample in ["in", "context", "model"] {
        let r = group(&all, "graph", sample);
        assert!(factor(median(r.clone())) <= 1.1, "graph {sample}: median {}", median(r.clone()));
        let bound = if sample == "in" { 1.25 } else { 1.5 };
        assert!(within(&r, bound) == 1.0, "graph {sample}: {} within {bound}x", within(&r, bound));
    }
}

/// An eager step whose device work outlasts its dispatch runs its kernels one queued gap apart,
/// the gap the trace shows between a kernel and one already launched behind it (about 1 to 1.5 µs
/// on the H200, against 0.4 µs inside a graph replay): GPT-2 medium fp16 at batch 512, predicted
/// from its batch-8 trace, is set by the device and takes longer eager than replayed.
#[test]
fn a_device_bound_eager_step_pays_the_queued_gap_between_kernels() {
    let c = ceilings();
    let lib = library();
    let cal = load_calibration(&repo("crates/cli/tests/data/h200-compose-run1.json")).unwrap();
    let p = repo("crates/explain/tests/data/gpt2_medium_fp16_ctx1024_b8_eager.json.gz");
    let (trace, x, _) = explained(&p, &c);
    let at = |mode| Scaling {
        model: gpt2("gpt2-medium").unwrap(),
        trace_batch: 8,
        trace_context: 1024,
        batch: 512,
        context: 1024,
        mode,
        trace_step_s: Some(6.903e-3),
        trace_model: None,
    };
    let eager = predict_from_trace(&trace, &x, &c, &at(Mode::Stream), Some(&cal), Some(&lib)).unwrap();
    let graph = predict_from_trace(&trace, &x, &c, &at(Mode::Graph), Some(&cal), Some(&lib)).unwrap();
    let gap = eager.queued_gap_s.expect("the trace has queued kernels");
    println!("queued gap {:.2} us, graph gap {:.2} us", gap * 1e6, graph.graph_gap_s.unwrap() * 1e6);
    assert!((0.5e-6..3e-6).contains(&gap), "{gap}");
    assert_eq!(eager.sets, "device");
    assert!(eager.time_s >= eager.device_s + (eager.kernels - 1) as f64 * gap * 0.999);
    assert!(eager.time_s > graph.time_s);
}

/// A graph replay's kernels carry no framework op; with the eager trace of the same step as
/// template, explain gives them their ops, shapes and bounds.
#[test]
fn graph_replays_take_their_ops_from_the_eager_trace_of_the_same_step() {
    let c = ceilings();
    for p in fixtures().iter().filter(|p| p.to_string_lossy().ends_with("_graph.json.gz")) {
        let eager_path = PathBuf::from(p.to_string_lossy().replace("_graph.json.gz", "_eager.json.gz"));
        let (_, eager, _) = explained(&eager_path, &c);
        let t = load(p).unwrap();
        let alone = explain(&t, "graph", Some(&c));
        let x = explain_with(&t, "graph", Some(&c), Some(&eager));
        let known_ops: Vec<_> = x.ops.iter().filter(|o| o.cost.known && o.efficiency.is_some()).collect();
        let highest = known_ops.iter().map(|o| o.efficiency.unwrap()).fold(0.0, f64::max);
        println!(
            "{}: known_fraction {:.4} alone, {:.4} with the eager trace's ops; {} ops, highest efficiency {:.3}",
            p.file_name().unwrap().to_string_lossy(),
            alone.known_fraction,
            x.known_fraction,
            known_ops.len(),
            highest
        );
        for o in known_ops.iter().filter(|o| o.efficiency.unwrap() > 1.05) {
            println!(
                "  VIOLATION {} {:?} step {:?} kernels {} device {:.2} us bound {:?}",
                o.name,
                o.input_dims,
                o.step,
                o.kernels,
                o.device_s * 1e6,
                o.bound.as_ref().map(|b| (b.bound_s * 1e6, b.ceiling.clone()))
            );
        }
        // Every kernel of the recorded steps, of whole earlier replays and of the replay cut by
        // the profiler's start gets its op.
        let in_steps: Vec<_> = x.kernels.iter().filter(|k| k.step.is_some()).collect();
        assert!(in_steps.iter().all(|k| k.known), "{}", p.display());
        assert!(x.known_fraction >= 0.95, "{}: {}", p.display(), x.known_fraction);
        assert!(highest <= 1.05, "{}: an op beats its bound ({highest})", p.display());
    }
}
