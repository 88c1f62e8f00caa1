//! predict --trace on SYNTHETIC traces (tests/common): a step traced at one batch and context,
//! scaled to others, against synthetic traces made at those with the same made-up cost law. It
//! checks the mechanics (shape rewriting, the stream pipeline, the graph sum), not accuracy on a
//! real program (tests/explain/real_programs.rs does that).

use crate::common;
use common::*;
use memscope_explain::ceilings::from_results;
use memscope_explain::predict::{gpt2, predict_from_trace, Mode, Scaling};
use memscope_explain::trace::parse;
use memscope_explain::{explain, Trace};

fn traced(b: u64, t: u64, layers: usize) -> Trace {
    let mut bl = Builder::default();
    for n in 1..=2 {
        bl.step(n, |bl| {
            for _ in 0..layers {
                decode_layer(bl, b, t)
            }
        });
    }
    parse(bl.json().as_bytes(), "synthetic").unwrap()
}

fn scaling(b0: u64, t0: u64, b: u64, t: u64, mode: Mode) -> Scaling {
    Scaling {
        model: gpt2("gpt2-small").unwrap(),
        trace_batch: b0,
        trace_context: t0,
        batch: b,
        context: t,
        mode,
        trace_step_s: None,
        trace_model: None,
    }
}

#[test]
fn the_traced_batch_is_predicted_as_traced_and_others_follow_the_cost_law() {
    let c = from_results(&h200_results(), "synthetic").unwrap();
    let t8 = traced(8, 128, 4);
    let x8 = explain(&t8, "b8", Some(&c));
    let same = predict_from_trace(&t8, &x8, &c, &scaling(8, 128, 8, 128, Mode::Stream), None, None).unwrap();
    let wall = x8.steps[1].wall_s;
    // The traced step again, up to the profiler step's own margins (2 µs each side).
    assert!((same.time_s / wall - 1.0).abs() < 0.03, "{} vs {}", same.time_s, wall);
    for (b, t) in [(32, 128), (256, 128), (8, 1024), (256, 1024)] {
        let tb = traced(b, t, 4);
        let xb = explain(&tb, "other", Some(&c));
        let p = predict_from_trace(&t8, &x8, &c, &scaling(8, 128, b, t, Mode::Stream), None, None).unwrap();
        let device: f64 = xb.kernels.iter().filter(|k| k.step == Some(1)).map(|k| k.duration_s).sum();
        let r = device / p.device_s;
        // Within 1.4x: the made-up law's compute efficiency (40 of 51.2 TFLOP/s) never shows at
        // batch 8, where every product is memory-bound, so products that turn compute-bound are
        // priced at the bound itself.
        assert!((0.8..1.4).contains(&r), "batch {b} context {t}: device {device} predicted {}", p.device_s);
        assert!(p.time_s >= p.device_s && p.time_s >= p.host_chain_s);
    }
    // Graph mode: the kernels back to back with the graph's gap (the ceilings' kernel floor here).
    let g = predict_from_trace(&t8, &x8, &c, &scaling(8, 128, 8, 128, Mode::Graph), None, None).unwrap();
    assert!((g.time_s - (g.device_s + g.kernels as f64 * 5e-7)).abs() < 1e-12);
    assert!(g.time_s < same.time_s);
}

#[test]
fn weights_keep_their_shape_and_missing_dims_are_refused() {
    let c = from_results(&h200_results(), "synthetic").unwrap();
    // Traced at batch 64, where batch x heads (768) is gpt2-small's width: the weights' leading
    // 768 is not a batch, and predicting the traced batch gives the traced step back.
    let t64 = traced(64, 128, 1);
    let x64 = explain(&t64, "b64", Some(&c));
    let same = predict_from_trace(&t64, &x64, &c, &scaling(64, 128, 64, 128, Mode::Stream), None, None).unwrap();
    // (one layer: the step's 4 µs of profiler margins are 4 % of it)
    assert!((same.time_s / x64.steps[1].wall_s - 1.0).abs() < 0.08, "{} vs {}", same.time_s, x64.steps[1].wall_s);
    let t8 = traced(8, 128, 1);
    let x8 = explain(&t8, "b8", Some(&c));
    let from8 = predict_from_trace(&t8, &x8, &c, &scaling(8, 128, 64, 128, Mode::Stream), None, None).unwrap();
    let r = same.device_s / from8.device_s;
    assert!((0.8..1.25).contains(&r), "{r}");
    let e = predict_from_trace(&t8, &x8, &c, &scaling(16, 128, 8, 128, Mode::Stream), None, None).unwrap_err();
    assert!(e.contains("--trace-batch 16: no op"), "{e}");
    let e = predict_from_trace(&t8, &x8, &c, &scaling(8, 8, 8, 128, Mode::Stream), None, None).unwrap_err();
    assert!(e.contains("--trace-context 8"), "{e}");
}

#[test]
fn the_unprofiled_step_time_scales_the_host_dispatch() {
    let c = from_results(&h200_results(), "synthetic").unwrap();
    let t8 = traced(8, 128, 4);
    let x8 = explain(&t8, "b8", Some(&c));
    let traced_step = predict_from_trace(&t8, &x8, &c, &scaling(8, 128, 8, 128, Mode::Stream), None, None).unwrap();
    assert_eq!(traced_step.sets, "host");
    let mut s = scaling(8, 128, 8, 128, Mode::Stream);
    s.trace_step_s = Some(0.7 * traced_step.time_s);
    let p = predict_from_trace(&t8, &x8, &c, &s, None, None).unwrap();
    assert!((p.time_s / (0.7 * traced_step.time_s) - 1.0).abs() < 1e-6, "{}", p.time_s);
    assert!(p.host_scale < 0.75 && p.host_scale > 0.6, "{}", p.host_scale);
}

/// A calibration sweep of fp32 products with made-up times (not measured): the qkv product of the
/// synthetic layer at batches 8 and 64, and a far-away product.
fn calibration() -> memscope_model::compose::ComposeCeilings {
    let product = |m: u64, k: u64, n: u64, work_s: f64| serde_json::json!({"shape": {"m": m, "k": k, "n": n, "dtype": "fp32"}, "work_s": work_s});
    serde_json::from_value(serde_json::json!({
        "isolated_launch_s": 8e-6, "host_issue_s": {"kernel": 4e-6}, "host_issue_graph_s": 2e-6,
        "gap_stream_s": 1.5e-6, "gap_graph_s": 7e-7, "graph_overhead_s": 9e-7, "min_work_s": 4e-7,
        "min_work_l2_s": 4.5e-7, "dram_curve": [], "l2_curve": [], "dram_bytes_per_s": 4.6e12,
        "peak_flops_per_s": {"fp32": 5.1e13},
        "matmul": [product(8, 768, 2304, 9e-6), product(64, 768, 2304, 12e-6), product(640, 4096, 4096, 9e-4)],
    }))
    .unwrap()
}

#[test]
fn products_follow_the_cublas_calibration_and_gemv_kernels_keep_the_trace_rule() {
    let c = from_results(&h200_results(), "synthetic").unwrap();
    let cal = calibration();
    let t8 = traced(8, 128, 1);
    let x8 = explain(&t8, "b8", Some(&c));
    let s = scaling(8, 128, 64, 128, Mode::Graph);
    let with = predict_from_trace(&t8, &x8, &c, &s, Some(&cal), None).unwrap();
    let without = predict_from_trace(&t8, &x8, &c, &s, None, None).unwrap();
    let op = |p: &memscope_explain::predict::TracePrediction, name: &str| {
        p.op_scales.iter().find(|o| o.name == name).cloned().unwrap()
    };
    // The product ran an SGEMM kernel: fixed part + variable part x (12 µs / 9 µs), the sweep's
    // own times at the two shapes (a sample at the same coordinates gives its own efficiency).
    let qkv = op(&with, "aten::addmm");
    assert_eq!(qkv.scaled_by, "calibration");
    let fixed = with.kernel_fixed_s;
    let expected = fixed + (qkv.traced_device_s - fixed) * 12.0 / 9.0;
    assert!((qkv.predicted_device_s - expected).abs() < 1e-12, "{} vs {expected}", qkv.predicted_device_s);
    assert_ne!(op(&without, "aten::addmm").scaled_by, "calibration");
    // The attention product ran a GEMV kernel: the sweep does not price it.
    let (a, b) = (op(&with, "aten::bmm"), op(&without, "aten::bmm"));
    assert_ne!(a.scaled_by, "calibration");
    assert_eq!(a.predicted_device_s, b.predicted_device_s);
}

#[test]
fn a_width_equal_to_the_traced_context_keeps_its_size() {
    let c = from_results(&h200_results(), "synthetic").unwrap();
    // Traced at context 768, gpt2-small's width: only attention's tensors take the new context.
    let t = traced(8, 768, 1);
    let x = explain(&t, "ctx768", Some(&c));
    let p = predict_from_trace(&t, &x, &c, &scaling(8, 768, 8, 128, Mode::Graph), None, None).unwrap();
    let dims = |name: &str| p.op_scales.iter().find(|o| o.name == name).unwrap().input_dims.clone();
    assert_eq!(dims("aten::native_layer_norm")[0], serde_json::json!([8, 1, 768]));
    assert_eq!(dims("aten::addmm")[2], serde_json::json!([768, 2304]));
    assert_eq!(dims("aten::bmm")[1], serde_json::json!([96, 64, 128]));
    assert_eq!(dims("aten::_softmax")[0], serde_json::json!([8, 12, 1, 128]));
}

#[test]
fn another_model_size_takes_its_widths_heads_and_layers() {
    let c = from_results(&h200_results(), "synthetic").unwrap();
    let t = traced(8, 128, 4);
    let x = explain(&t, "b8", Some(&c));
    let small = memscope_explain::predict::ModelConfig { layers: 4, ..gpt2("gpt2-small").unwrap() };
    let at = |model: memscope_explain::predict::ModelConfig| Scaling {
        model,
        trace_model: Some(small.clone()),
        ..scaling(8, 128, 8, 128, Mode::Graph)
    };
    let same = predict_from_trace(&t, &x, &c, &scaling(8, 128, 8, 128, Mode::Graph), None, None).unwrap();
    // Six layers of the same widths: the traced layer's kernels once more per added layer.
    let six = predict_from_trace(
        &t,
        &x,
        &c,
        &at(memscope_explain::predict::ModelConfig { layers: 6, ..small.clone() }),
        None,
        None,
    )
    .unwrap();
    assert_eq!((same.kernels, six.kernels), (24, 36));
    assert!((six.device_s / same.device_s - 1.5).abs() < 1e-9, "{} {}", six.device_s, same.device_s);
    let two = predict_from_trace(
        &t,
        &x,
        &c,
        &at(memscope_explain::predict::ModelConfig { layers: 2, ..small.clone() }),
        None,
        None,
    )
    .unwrap();
    assert_eq!(two.kernels, 12);
    // gpt2-medium's widths: weights and activations take the width, the fused product's three
    // widths and the heads; the head dimension (64) and the batch stay.
    let medium = predict_from_trace(&t, &x, &c, &at(gpt2("gpt2-medium").unwrap()), None, None).unwrap();
    assert_eq!(medium.kernels, 24 * 6);
    let dims = |name: &str| medium.op_scales.iter().find(|o| o.name == name).unwrap().input_dims.clone();
    assert_eq!(
        dims("aten::addmm"),
        serde_json::json!([[3072], [8, 1024], [1024, 3072], [], []]).as_array().unwrap().clone()
    );
    assert_eq!(dims("aten::bmm"), serde_json::json!([[128, 1, 64], [128, 64, 128]]).as_array().unwrap().clone());
    assert_eq!(dims("aten::_softmax")[0], serde_json::json!([8, 16, 1, 128]));
    assert!(medium.device_s > six.device_s);
    // A one-layer trace shows no repeated layer to add.
    let one = traced(8, 128, 1);
    let x1 = explain(&one, "one", Some(&c));
    let s = Scaling {
        trace_model: Some(memscope_explain::predict::ModelConfig { layers: 1, ..small.clone() }),
        ..at(small.clone())
    };
    let e = predict_from_trace(&one, &x1, &c, &s, None, None).unwrap_err();
    assert!(e.contains("no 1 repeated layers"), "{e}");
}

/// The synthetic step with `Input Strides` recorded (every tensor contiguous, as PyTorch records
/// them), so that the library calibration can tell each product's layout.
fn traced_with_strides(b: u64, t: u64) -> Trace {
    let mut bl = Builder::default();
    for n in 1..=2 {
        bl.step(n, |bl| decode_layer(bl, b, t));
    }
    let mut doc: serde_json::Value = serde_json::from_str(&bl.json()).unwrap();
    for e in doc["traceEvents"].as_array_mut().unwrap() {
        if e["cat"] != "cpu_op" {
            continue;
        }
        let strides: Vec<serde_json::Value> = e["args"]["Input Dims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let dims: Vec<u64> =
                    d.as_array().map(|a| a.iter().filter_map(|x| x.as_u64()).collect()).unwrap_or_default();
                let mut s = vec![1u64; dims.len()];
                for i in (0..dims.len().saturating_sub(1)).rev() {
                    s[i] = s[i + 1] * dims[i + 1];
                }
                serde_json::json!(s)
            })
            .collect();
        e["args"]["Input Strides"] = serde_json::json!(strides);
    }
    parse(doc.to_string().as_bytes(), "synthetic").unwrap()
}

/// Made-up library times (not measured) for the synthetic layer's fused product at M = 8 and 64:
/// 10 µs and 25 µs.
fn library() -> memscope_explain::LibraryCalibration {
    let rec = |m: u64, t: f64| {
        serde_json::json!({"name": "aten::addmm", "input_dims": [[2304], [m, 768], [768, 2304], [], []],
            "input_strides": [[1], [768, 1], [2304, 1], [], []],
            "input_types": ["float", "float", "float", "Scalar", "Scalar"], "kernel_s": t})
    };
    let doc = serde_json::json!({"records": [rec(8, 10e-6), rec(64, 25e-6)]});
    memscope_explain::LibraryCalibration::parse(doc.to_string().as_bytes(), "made-up").unwrap()
}

#[test]
fn ops_of_a_calibrated_form_follow_the_librarys_own_change_in_time() {
    let c = from_results(&h200_results(), "synthetic").unwrap();
    let lib = library();
    let t8 = traced_with_strides(8, 128);
    let x8 = explain(&t8, "b8", Some(&c));
    let op = |p: &memscope_explain::predict::TracePrediction, name: &str| {
        p.op_scales.iter().find(|o| o.name == name).cloned().unwrap()
    };
    // The traced batch gives the traced time back.
    let same = predict_from_trace(&t8, &x8, &c, &scaling(8, 128, 8, 128, Mode::Graph), None, Some(&lib)).unwrap();
    let qkv = op(&same, "aten::addmm");
    assert_eq!(qkv.scaled_by, "library");
    assert!((qkv.predicted_device_s / qkv.traced_device_s - 1.0).abs() < 1e-9);
    // Batch 64: the traced time + (25 - 10) µs, the library's own change, whatever the cost law
    // says.
    let b64 = predict_from_trace(&t8, &x8, &c, &scaling(8, 128, 64, 128, Mode::Graph), None, Some(&lib)).unwrap();
    let qkv = op(&b64, "aten::addmm");
    assert!((qkv.predicted_device_s - qkv.traced_device_s - 15e-6).abs() < 1e-12, "{qkv:?}");
    // Ops of forms the calibration lacks keep the trace's own rule.
    assert_ne!(op(&b64, "aten::bmm").scaled_by, "library");
    let without = predict_from_trace(&t8, &x8, &c, &scaling(8, 128, 64, 128, Mode::Graph), None, None).unwrap();
    assert_eq!(op(&without, "aten::bmm").predicted_device_s, op(&b64, "aten::bmm").predicted_device_s);
}

/// An op far below its bound (an argmax over a long row whose time does not follow its bytes)
/// is not work-dominated: at 8x the batch it keeps its traced time plus the change in its work,
/// while an op at its bound's pace grows with its work.
#[test]
fn an_op_far_below_its_bound_does_not_grow_with_its_work() {
    let c = from_results(&h200_results(), "synthetic").unwrap();
    let traced_at = |b: u64| {
        let mut bl = Builder::default();
        for n in 1..=2 {
            bl.step(n, |bl| {
                decode_layer(bl, b, 128);
                // 60 µs whatever the batch: 8 times its work at batch 8 (33.5 MB at 4.6 TB/s).
                bl.op(
                    &[(
                        "aten::argmax",
                        serde_json::json!([[b, 1048576], [], []]),
                        serde_json::json!(["float", "Scalar", "Scalar"]),
                    )],
                    10.0,
                    &[("reduce_kernel", 60.0)],
                );
            });
        }
        parse(bl.json().as_bytes(), "synthetic").unwrap()
    };
    let t8 = traced_at(8);
    let x8 = explain(&t8, "b8", Some(&c));
    let p = predict_from_trace(&t8, &x8, &c, &scaling(8, 128, 64, 128, Mode::Graph), None, None).unwrap();
    let argmax = p.op_scales.iter().find(|o| o.name == "aten::argmax").unwrap();
    assert_eq!(argmax.scaled_by, "latency");
    // Traced time plus 7 x its batch-8 work at the step's best efficiency: under 4x, where its
    // work alone would make it 8x.
    assert!(argmax.predicted_device_s < 4.0 * argmax.traced_device_s, "{argmax:?}");
    assert!(argmax.predicted_device_s > argmax.traced_device_s, "{argmax:?}");
    // The layer's products at the law's pace grow with their work.
    let qkv = p.op_scales.iter().find(|o| o.name == "aten::addmm").unwrap();
    assert_eq!(qkv.scaled_by, "work");
}
