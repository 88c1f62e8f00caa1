//! explain, bounds and bad traces on SYNTHETIC traces written by hand (tests/common): the
//! arithmetic is checked against numbers worked out here, not against measurements.

use crate::common;
use common::*;
use memscope_explain::ceilings::from_results;
use memscope_explain::ops::{known_cost, OpClass};
use memscope_explain::trace::{parse, TraceError};
use memscope_explain::{explain, render};
use serde_json::json;

fn ceilings() -> memscope_explain::Ceilings {
    from_results(&h200_results(), "synthetic").unwrap()
}

fn two_steps() -> String {
    let mut b = Builder::default();
    for n in 1..=2 {
        b.step(n, |b| decode_layer(b, 8, 128));
    }
    b.json()
}

#[test]
fn every_kernel_is_tied_to_its_op_with_shapes_and_work() {
    let t = parse(two_steps().as_bytes(), "synthetic").unwrap();
    let x = explain(&t, "synthetic", Some(&ceilings()));
    assert_eq!(x.kernel_count, 12);
    assert_eq!(x.steps.len(), 2);
    let k = x.kernels.iter().find(|k| k.name.contains("sgemm")).unwrap();
    assert_eq!(k.op.as_deref(), Some("aten::addmm"));
    assert_eq!(k.top_op.as_deref(), Some("aten::linear"));
    assert_eq!(k.class, OpClass::Matmul);
    let op = &x.ops[k.op_index.unwrap()];
    // addmm: 2 M K N + M N FLOPs; bias N + A M K + B K N + C M N elements of 4 bytes.
    let (m, kk, n) = (8.0, 768.0, 2304.0);
    assert_eq!(op.cost.flops, 2.0 * m * kk * n + m * n);
    assert_eq!(op.cost.bytes, 4.0 * (n + m * kk + kk * n + m * n));
    assert!(op.cost.known);
    let ln = x.ops.iter().find(|o| o.name == "aten::native_layer_norm").unwrap();
    assert_eq!(ln.cost.class, OpClass::Norm);
    assert_eq!(ln.top_op.as_deref(), Some("aten::layer_norm"));
    assert!((x.known_fraction - 1.0).abs() < 1e-12);
    // No two kernels overlap: the union equals the sum.
    assert!((x.device_busy_s - x.kernel_sum_s).abs() <= 1e-12 * x.kernel_sum_s.max(1.0));
}

#[test]
fn busy_time_is_a_union_when_kernels_overlap() {
    let mut b = Builder::default();
    b.step(1, |b| {
        b.op(&[("aten::add", json!([[1000], [1000], []]), json!(["float", "float", "Scalar"]))], 8.0, &[("k1", 10.0)]);
    });
    let mut doc: serde_json::Value = serde_json::from_str(&b.json()).unwrap();
    // A second kernel on another stream, overlapping the first by half.
    let first = doc["traceEvents"].as_array().unwrap().iter().find(|e| e["cat"] == "kernel").unwrap().clone();
    let mut second = first.clone();
    second["ts"] = json!(first["ts"].as_f64().unwrap() + 5.0);
    second["tid"] = json!(8);
    second["args"]["correlation"] = json!(999_999);
    doc["traceEvents"].as_array_mut().unwrap().push(second);
    let t = parse(doc.to_string().as_bytes(), "synthetic").unwrap();
    let x = explain(&t, "synthetic", None);
    assert!((x.kernel_sum_s - 20e-6).abs() < 1e-12);
    assert!((x.device_busy_s - 15e-6).abs() < 1e-12);
    // The second has no launch call: unattributed, not known.
    assert!((x.unattributed_fraction - 0.5).abs() < 1e-12);
    assert!((x.known_fraction - 0.5).abs() < 1e-12);
}

#[test]
fn bounds_take_the_level_the_working_set_fits_in() {
    let c = ceilings();
    // An add of 36 MB (3 tensors of 3 M fp32) fits the 60 MiB L2: bounded by the L2's bandwidth.
    let n = 3_000_000u64;
    let add = known_cost(
        "aten::add",
        &[json!([n]), json!([n]), json!([])],
        &["float".into(), "float".into(), "Scalar".into()],
        &[],
    )
    .unwrap();
    assert_eq!(add.bytes, 36e6);
    let b = c.bound(&add, &["k"]);
    assert_eq!((b.level.as_str(), b.ceiling.as_str()), ("l2", "l2"));
    assert!((b.bound_s - 36e6 / 9.86e12).abs() < 1e-15);
    // 3.6 GB: DRAM, for all but the L2's capacity.
    let big = known_cost(
        "aten::add",
        &[json!([100 * n]), json!([100 * n]), json!([])],
        &["float".into(), "float".into(), "Scalar".into()],
        &[],
    )
    .unwrap();
    let b = c.bound(&big, &["k"]);
    assert_eq!((b.level.as_str(), b.ceiling.as_str()), ("dram", "dram"));
    assert!((b.bound_s - (3.6e9 - 62914560.0) / 4.69e12).abs() < 1e-12);
    // A tiny add: the per-kernel floor.
    let tiny = known_cost(
        "aten::add",
        &[json!([8]), json!([8]), json!([])],
        &["float".into(), "float".into(), "Scalar".into()],
        &[],
    )
    .unwrap();
    assert_eq!(c.bound(&tiny, &["k", "k2"]).ceiling, "floor");
    assert!((c.bound(&tiny, &["k", "k2"]).bound_s - 1e-6).abs() < 1e-18);
}

#[test]
fn products_use_the_peak_their_type_and_kernel_allow() {
    let c = ceilings();
    let mm = |k: u64, n: u64, ty: &str| {
        known_cost("aten::mm", &[json!([4096, k]), json!([k, n])], &[ty.into(), ty.into()], &[]).unwrap()
    };
    let h = mm(4096, 4096, "c10::Half");
    let b = c.bound(&h, &["sm90_xmma_gemm_f16f16"]);
    assert_eq!(
        (b.ceiling.as_str(), b.ceiling_key.as_str(), b.aligned),
        ("compute", "peak.fp16_flops_per_s", Some(true))
    );
    let u = mm(4096, 50257, "c10::Half");
    assert_eq!(c.bound(&u, &["k"]).aligned, Some(false));
    let f = mm(4096, 4096, "float");
    assert_eq!(c.bound(&f, &["ampere_sgemm_128x64_nn"]).ceiling_key, "peak.fp32_flops_per_s");
    assert_eq!(c.bound(&f, &["sm80_xmma_gemm_f32f32_tf32f32_f32_nn"]).ceiling_key, "peak.fp16_flops_per_s");
    let bf = mm(4096, 4096, "c10::BFloat16");
    assert_eq!(c.bound(&bf, &["k"]).ceiling_key, "peak.bf16_flops_per_s");
}

#[test]
fn attention_variants_count_the_same_work() {
    let (b, h, l, s, e) = (4u64, 12u64, 1u64, 1024u64, 64u64);
    let ty: Vec<String> = vec!["c10::Half".into(); 3];
    let sdpa = known_cost(
        "aten::scaled_dot_product_attention",
        &[json!([b, h, l, e]), json!([b, h, s, e]), json!([b, h, s, e])],
        &ty,
        &[],
    )
    .unwrap();
    let flash = known_cost(
        "aten::_flash_attention_forward",
        &[json!([b, l, h, e]), json!([b, s, h, e]), json!([b, s, h, e])],
        &ty,
        &[],
    )
    .unwrap();
    assert_eq!(sdpa.flops, 4.0 * (b * h * l * s * e) as f64);
    assert_eq!((sdpa.flops, sdpa.bytes), (flash.flops, flash.bytes));
    assert_eq!(sdpa.bytes, 2.0 * (2 * b * h * l * e + 2 * b * h * s * e) as f64);
    assert_eq!(sdpa.class, OpClass::Attention);
}

#[test]
fn unknown_ops_are_estimated_from_their_tensors() {
    let mut b = Builder::default();
    b.step(1, |b| {
        b.op(
            &[("aten::my_custom_op", json!([[1024, 1024], []]), json!(["float", "Scalar"]))],
            10.0,
            &[("custom_kernel", 30.0)],
        );
        b.op(
            &[("aten::add", json!([[1024], [1024], []]), json!(["float", "float", "Scalar"]))],
            10.0,
            &[("add_kernel", 10.0)],
        );
    });
    let t = parse(b.json().as_bytes(), "synthetic").unwrap();
    let x = explain(&t, "synthetic", Some(&ceilings()));
    let op = x.ops.iter().find(|o| o.name == "aten::my_custom_op").unwrap();
    assert!(!op.cost.known);
    assert_eq!(op.cost.bytes, 4.0 * 1024.0 * 1024.0);
    assert!((x.known_fraction - 0.25).abs() < 1e-12);
}

#[test]
fn steps_say_which_chain_sets_them_and_the_dispatch_floor_is_measured() {
    // Host-bound: 40 µs of host per op, 3 µs kernels.
    let mut b = Builder::default();
    b.step(1, |b| {
        for _ in 0..10 {
            b.op(
                &[("aten::add", json!([[1024], [1024], []]), json!(["float", "float", "Scalar"]))],
                40.0,
                &[("add_kernel", 3.0)],
            );
        }
    });
    let x = explain(&parse(b.json().as_bytes(), "s").unwrap(), "s", Some(&ceilings()));
    assert_eq!(x.steps[0].sets, "host");
    assert!((x.dispatch_floor.per_op_s.unwrap() - 40e-6).abs() < 1e-12);
    assert!((x.dispatch_floor.per_launch_s.unwrap() - 4e-6).abs() < 1e-12);
    assert_eq!(x.dispatch_floor.ops_counted, 10);
    assert!((x.dispatch_floor.per_kernel_s.unwrap() - 40e-6).abs() < 1e-9);
    // Nine gaps between ten kernels, each waiting for the host's next launch.
    assert_eq!(x.gaps.count, 9);
    assert!((x.gaps.waiting_for_host_s - x.gaps.total_s).abs() < 1e-12);
    assert!((x.gaps.total_s - 9.0 * 37e-6).abs() < 1e-9);
    // Device-bound: 1 ms kernels.
    let mut b = Builder::default();
    b.step(1, |b| {
        for _ in 0..10 {
            b.op(
                &[("aten::add", json!([[1024], [1024], []]), json!(["float", "float", "Scalar"]))],
                10.0,
                &[("add_kernel", 1000.0)],
            );
        }
    });
    let x = explain(&parse(b.json().as_bytes(), "s").unwrap(), "s", None);
    assert_eq!(x.steps[0].sets, "device");
    assert_eq!(x.gaps.count, 0);
}

#[test]
fn graph_replayed_kernels_are_classed_by_name_and_unattributed() {
    let mut b = Builder::default();
    b.step(1, |b| {
        b.graph_kernel("ampere_sgemm_64x32_sliced1x4_tn", 10.0);
        b.graph_kernel("vectorized_layer_norm_kernel", 3.0);
    });
    let x = explain(&parse(b.json().as_bytes(), "s").unwrap(), "s", Some(&ceilings()));
    assert_eq!(x.kernels[0].class, OpClass::Matmul);
    assert_eq!(x.kernels[1].class, OpClass::Norm);
    assert_eq!((x.known_fraction, x.unattributed_fraction), (0.0, 1.0));
}

#[test]
fn renderers_show_the_summary_and_tables() {
    let t = parse(two_steps().as_bytes(), "synthetic").unwrap();
    let x = explain(&t, "synthetic <trace>", Some(&ceilings()));
    let text = render::text(&x, 10);
    assert!(text.contains("device busy (union)") && text.contains("aten::addmm") && text.contains("set by"), "{text}");
    let page = render::html_page(&x, 10);
    assert!(page.contains("name=\"viewport\"") && page.contains("class=\"scroll\""));
    assert!(page.contains("synthetic &lt;trace&gt;") && !page.contains("<trace>"));
    let json = serde_json::to_value(&x).unwrap();
    for key in [
        "schema",
        "device_busy_s",
        "known_fraction",
        "kernel_sum_s",
        "dispatch_floor",
        "steps",
        "gaps",
        "classes",
        "ops",
        "kernels",
    ] {
        assert!(json.get(key).is_some(), "{key}");
    }
}

#[test]
fn bad_traces_are_named() {
    let err = |bytes: &[u8]| parse(bytes, "t.json").unwrap_err();
    assert!(matches!(err(b"hello"), TraceError::NotJson { .. }));
    let full = two_steps();
    assert!(matches!(err(&full.as_bytes()[..full.len() / 2]), TraceError::Truncated { .. }));
    // Another profiler's format: an Nsight Systems-like export, a Chrome trace of other events.
    let nsys = json!({"CUPTI_ACTIVITY_KIND_KERNEL": [{"start": 1, "end": 2}]}).to_string();
    let e = err(nsys.as_bytes());
    assert!(matches!(e, TraceError::OtherFormat { .. }) && e.to_string().contains("no traceEvents"), "{e}");
    let chrome = json!({"traceEvents": [{"ph": "X", "cat": "blink", "name": "Paint", "ts": 1, "dur": 2}]}).to_string();
    assert!(matches!(err(chrome.as_bytes()), TraceError::OtherFormat { .. }));
    // CPU-only profile: no kernels.
    let mut b = Builder::default();
    b.op(&[("aten::add", json!([[4], [4], []]), fp(3))], 5.0, &[]);
    let e = err(b.json().as_bytes());
    assert!(matches!(e, TraceError::NoKernels { .. }), "{e}");
    for e in [err(b"hello"), err(nsys.as_bytes()), e] {
        assert!(!e.to_string().contains('\n') && e.to_string().starts_with("t.json: "), "{e}");
    }
}

#[test]
fn gzip_traces_are_read_and_a_cut_gzip_is_named() {
    use std::io::Write;
    let dir = std::env::temp_dir().join(format!("memscope-explain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(two_steps().as_bytes()).unwrap();
    let bytes = gz.finish().unwrap();
    let p = dir.join("t.json.gz");
    std::fs::write(&p, &bytes).unwrap();
    assert_eq!(
        memscope_explain::load(&p).unwrap().events.len(),
        parse(two_steps().as_bytes(), "x").unwrap().events.len()
    );
    std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(memscope_explain::load(&p).unwrap_err(), TraceError::Gzip { .. }));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A step of three ops, the product running as two kernels (the product and its split-K reduce).
fn three_op_step(b: &mut Builder) {
    let x = json!([[8, 768], [768], [768], []]);
    b.op(
        &[("aten::native_layer_norm", x, json!(["float", "float", "float", "Scalar"]))],
        10.0,
        &[("layer_norm_kernel", 3.0)],
    );
    b.op(
        &[(
            "aten::addmm",
            json!([[768], [8, 768], [768, 768], [], []]),
            json!(["float", "float", "float", "Scalar", "Scalar"]),
        )],
        12.0,
        &[("sgemm_kernel", 8.0), ("splitKreduce_kernel", 1.0)],
    );
    b.op(
        &[("aten::add", json!([[8, 768], [8, 768], []]), json!(["float", "float", "Scalar"]))],
        8.0,
        &[("add_kernel", 1.5)],
    );
}

#[test]
fn graph_replays_take_the_eager_steps_ops_including_the_replay_cut_by_the_profilers_start() {
    let mut e = Builder::default();
    e.step(1, three_op_step);
    let eager = explain(&parse(e.json().as_bytes(), "eager").unwrap(), "eager", Some(&ceilings()));
    let names = ["layer_norm_kernel", "sgemm_kernel", "splitKreduce_kernel", "add_kernel"];
    let times = [3.0, 8.0, 1.0, 1.5];
    let mut g = Builder::default();
    // Before the recorded step: the tail of a replay the profiler's start cut (the product's
    // reduce and the add), then one whole replay.
    for i in 2..4 {
        g.graph_kernel(names[i], times[i]);
    }
    for i in 0..4 {
        g.graph_kernel(names[i], times[i]);
    }
    g.t_host = g.t_dev + 10.0;
    g.step(1, |b| {
        for i in 0..4 {
            b.graph_kernel(names[i], times[i]);
        }
        // The step's host span covers its kernels (a replay's host call returns early; the
        // kernels fall in the step's window as the device-side span would hold them).
        b.t_host = b.t_dev + 1.0;
    });
    let x = memscope_explain::explain_with(
        &parse(g.json().as_bytes(), "graph").unwrap(),
        "graph",
        Some(&ceilings()),
        Some(&eager),
    );
    let ops: Vec<Option<&str>> = x.kernels.iter().map(|k| k.op.as_deref()).collect();
    assert_eq!(
        ops,
        [
            // The cut product lost its first kernel: its reduce alone keeps no op (its bound
            // would be the whole product's).
            None,
            Some("aten::add"),
            Some("aten::native_layer_norm"),
            Some("aten::addmm"),
            Some("aten::addmm"),
            Some("aten::add"),
            Some("aten::native_layer_norm"),
            Some("aten::addmm"),
            Some("aten::addmm"),
            Some("aten::add"),
        ]
    );
    // Each replay's product is one op of two kernels; the known share leaves out the lone reduce.
    let products: Vec<_> = x.ops.iter().filter(|o| o.name == "aten::addmm").collect();
    assert_eq!(products.len(), 2);
    assert!(products.iter().all(|o| o.kernels == 2 && (o.device_s - 9e-6).abs() < 1e-12));
    let total: f64 = 1.0 + 1.5 + 2.0 * times.iter().sum::<f64>();
    assert!((x.known_fraction - (total - 1.0) / total).abs() < 1e-12, "{}", x.known_fraction);
}
