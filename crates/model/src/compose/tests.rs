//! Tests of the composition model (docs/MODEL.md) on synthetic ceilings: the curve and the efficiency
//! interpolation, the refusal of a calibration that contains a predicted shape, the pipeline's
//! exposed host time, and a synthetic "measured" step from a known generating process (pipelined
//! launches, per-kernel gap plus the largest true term, noise) that the composition predicts
//! within 1.5x at every batch while the seed's two compositions miss it by more somewhere; the
//! synthetic GPU has slower products with unaligned rows and needs twice the bytes in flight with
//! 8-byte loads, so the alignment classes and the 8-byte curve are exercised (fp32 and fp16).

use super::*;
use crate::bottleneck::{self as m, Dtype};
use crate::compose_step::*;

/// xorshift64*: deterministic noise for the synthetic measurements.
struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545F4914F6CDD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Multiplicative noise, uniform in [1 - a, 1 + a].
    fn noise(&mut self, a: f64) -> f64 {
        1.0 + a * (2.0 * self.unit() - 1.0)
    }
}

/// The synthetic GPU: the truths the generating process uses.
struct Truth {
    gap_stream_s: f64,
    gap_graph_s: f64,
    graph_overhead_s: f64,
    host_kernel_s: f64,
    host_blas_s: f64,
    host_graph_s: f64,
    min_work_s: f64,
    min_work_l2_s: f64,
    dram_peak: f64,
    l2_peak: f64,
    peak_fp32: f64,
    peak_fp16: f64,
    /// Efficiency factor of a product whose rows are not 16-byte aligned.
    unaligned_factor: f64,
    /// Dependent-step latencies of a block: with the reduction (8-, 16-byte vectors), without.
    step_reduce_8_s: f64,
    step_reduce_16_s: f64,
    step_stream_s: f64,
}

const T: Truth = Truth {
    gap_stream_s: 2.6e-6,
    gap_graph_s: 1.3e-6,
    graph_overhead_s: 4e-6,
    host_kernel_s: 3.2e-6,
    host_blas_s: 6.5e-6,
    host_graph_s: 5e-6,
    min_work_s: 1.5e-6,
    min_work_l2_s: 0.8e-6,
    dram_peak: 4.6e12,
    l2_peak: 9e12,
    peak_fp32: 51e12,
    peak_fp16: 400e12,
    unaligned_factor: 0.25,
    step_reduce_8_s: 0.55e-6,
    step_reduce_16_s: 0.45e-6,
    step_stream_s: 0.3e-6,
};

fn true_step_s(reduce: bool, load_bytes: f64) -> f64 {
    match (reduce, load_bytes <= 8.0) {
        (true, true) => T.step_reduce_8_s,
        (true, false) => T.step_reduce_16_s,
        (false, _) => T.step_stream_s,
    }
}

fn true_peak(d: Dtype) -> f64 {
    if d == Dtype::Fp16 {
        T.peak_fp16
    } else {
        T.peak_fp32
    }
}

fn dram_bw(x: f64) -> f64 {
    T.dram_peak * x / (x + 3e6)
}
/// 8-byte loads: half the bytes per request, so twice the bytes in flight for the same rate.
fn dram_bw_8b(x: f64) -> f64 {
    T.dram_peak * x / (x + 6e6)
}
fn l2_bw(x: f64) -> f64 {
    T.l2_peak * x / (x + 1e6)
}

/// The true efficiency of a product: low for small products and near the ridge point, and by
/// `unaligned_factor` lower with rows that are not 16-byte aligned.
fn true_efficiency(s: &MatmulShape) -> f64 {
    let ridge = true_peak(s.dtype) / T.dram_peak;
    let a = (s.flops() / s.bytes() / ridge).log2().abs();
    let class = if s.aligned_16_bytes() { 1.0 } else { T.unaligned_factor };
    class * 0.8 * s.flops() / (s.flops() + 3e7) * (0.3 + 0.7 * a / (1.0 + a))
}

fn true_work(k: &KernelCount) -> f64 {
    if let Some(s) = &k.matmul {
        return matmul_roofline_s(s, T.dram_peak, true_peak(s.dtype)) / true_efficiency(s);
    }
    let mut w = k.flops / true_peak(k.dtype);
    if k.dram_bytes > 0.0 {
        let bw = if k.load_bytes <= 8.0 { dram_bw_8b(k.bytes_in_flight) } else { dram_bw(k.bytes_in_flight) };
        w = w.max(k.dram_bytes / bw);
    }
    if k.l2_bytes > 0.0 {
        w = w.max(k.l2_bytes / l2_bw(k.bytes_in_flight));
    }
    let steps = k.reduction_steps * true_step_s(true, k.load_bytes) + k.stream_steps * true_step_s(false, k.load_bytes);
    w.max(steps).max(if k.dram_bytes > 0.0 { T.min_work_s } else { T.min_work_l2_s })
}

/// The synthetic "measured" step: `reps` steps issued back to back by a host that enqueues each
/// launch (or one graph) at its issue cost, on a device that starts a kernel when the previous one
/// has finished and its launch has arrived, each taking gap + work; noise on every time.
fn measured_step(kernels: &[KernelCount], mode: LaunchMode, rng: &mut Rng) -> f64 {
    let reps = 8;
    let (mut host, mut dev) = (0.0f64, 0.0f64);
    let mut ends = Vec::new();
    for _ in 0..reps {
        if mode == LaunchMode::Graph {
            host += T.host_graph_s * rng.noise(0.1);
            dev = dev.max(host) + T.graph_overhead_s;
        }
        for k in kernels {
            let (gap, issue) = match (mode, k.path) {
                (LaunchMode::Graph, _) => (T.gap_graph_s, 0.0),
                (LaunchMode::Stream, LaunchPath::Kernel) => (T.gap_stream_s, T.host_kernel_s),
                (LaunchMode::Stream, LaunchPath::Blas) => (T.gap_stream_s, T.host_blas_s),
            };
            host += issue * rng.noise(0.1);
            dev = dev.max(host) + (gap + true_work(k)) * rng.noise(0.05);
        }
        ends.push(dev);
    }
    (ends[reps - 1] - ends[1]) / (reps - 2) as f64
}

/// What the session would measure of the synthetic GPU on other operations than the step's.
fn synthetic_ceilings(rng: &mut Rng) -> ComposeCeilings {
    let curve = |f: fn(f64) -> f64, rng: &mut Rng| {
        (0..14)
            .map(|i| {
                let x = 4096.0 * 2f64.powi(i);
                CurvePoint { bytes_in_flight: x, bytes_per_s: f(x) * rng.noise(0.03) }
            })
            .collect::<Vec<_>>()
    };
    let matmul = [Dtype::Fp32, Dtype::Fp16]
        .into_iter()
        .flat_map(calibration_shapes)
        .map(|s| MatmulSample {
            work_s: matmul_roofline_s(&s, T.dram_peak, true_peak(s.dtype)) / true_efficiency(&s) * rng.noise(0.05),
            shape: s,
        })
        .collect();
    let mut host = BTreeMap::new();
    host.insert("kernel".to_string(), T.host_kernel_s * rng.noise(0.05));
    host.insert("blas.fp32".to_string(), T.host_blas_s * rng.noise(0.05));
    host.insert("blas.fp16".to_string(), T.host_blas_s * rng.noise(0.05));
    // The synthetic host issues at the same cost whether the device is busy or idle.
    let idle = host.iter().map(|(k, v)| (k.clone(), v * rng.noise(0.05))).collect();
    let mut peak = BTreeMap::new();
    peak.insert("fp32".to_string(), T.peak_fp32 * rng.noise(0.02));
    peak.insert("fp16".to_string(), T.peak_fp16 * rng.noise(0.02));
    let mut steps = BTreeMap::new();
    for (reduce, w) in [(true, 8.0), (true, 16.0), (false, 8.0), (false, 16.0)] {
        let pts = [1.0, 4.0, 16.0, 132.0]
            .iter()
            .map(|&b| StepPoint { blocks: b, step_s: true_step_s(reduce, w) * rng.noise(0.05) })
            .collect::<Vec<_>>();
        steps.insert(step_key(reduce, w), pts);
    }
    ComposeCeilings {
        isolated_launch_s: 9e-6,
        host_issue_idle_s: idle,
        host_issue_s: host,
        host_issue_graph_s: T.host_graph_s * rng.noise(0.05),
        gap_stream_s: T.gap_stream_s * rng.noise(0.05),
        gap_graph_s: T.gap_graph_s * rng.noise(0.05),
        graph_overhead_s: T.graph_overhead_s * rng.noise(0.05),
        min_work_s: T.min_work_s * rng.noise(0.05),
        min_work_l2_s: T.min_work_l2_s * rng.noise(0.05),
        dram_curve: curve(dram_bw, rng),
        dram_curve_8b: curve(dram_bw_8b, rng),
        l2_curve: curve(l2_bw, rng),
        step_latency_s: steps,
        dram_bytes_per_s: T.dram_peak * 0.98,
        peak_flops_per_s: peak,
        matmul,
    }
}

/// The seed's compositions in the synthetic world: each kernel at max(class floor, bytes / B,
/// FLOPs / P) summed, and the max of totals; the class floor is what the seed measures, the
/// back-to-back time of the class's smallest operation.
fn seed_compositions(kernels: &[KernelCount]) -> (f64, f64) {
    let floor = |k: &KernelCount| match k.path {
        LaunchPath::Kernel => T.host_kernel_s.max(T.gap_stream_s + T.min_work_s),
        LaunchPath::Blas => T.host_blas_s.max(T.gap_stream_s + T.min_work_s),
    };
    let bytes = |k: &KernelCount| k.dram_bytes + k.l2_bytes;
    let preds: Vec<m::Prediction> =
        kernels.iter().map(|k| m::predict_time(k.flops, bytes(k), floor(k), T.dram_peak, true_peak(k.dtype))).collect();
    let per_kernel = m::compose_per_kernel(&preds);
    let launch: f64 = kernels.iter().map(floor).sum();
    let totals = m::predict_time(
        kernels.iter().map(|k| k.flops).sum(),
        kernels.iter().map(bytes).sum(),
        launch,
        T.dram_peak,
        true_peak(kernels[0].dtype),
    );
    (totals.time_s, per_kernel)
}

#[test]
fn composition_holds_on_a_synthetic_step_where_the_seeds_compositions_do_not() {
    let mut rng = Rng(0x9E3779B97F4A7C15);
    let c = synthetic_ceilings(&mut rng);
    let (mut worst_totals, mut worst_per_kernel) = (1.0f64, 1.0f64);
    for (dtype, context) in [Dtype::Fp32, Dtype::Fp16].into_iter().flat_map(|d| SWEEP_CONTEXTS.map(|t| (d, t))) {
        for &b in &SWEEP_BATCHES {
            let ks = step_kernels(&GPT2_SMALL_SHAPE, b, context, dtype);
            for mode in [LaunchMode::Stream, LaunchMode::Graph] {
                let measured = measured_step(&ks, mode, &mut rng);
                let p = predict_step(&c, &ks, mode).expect("prediction");
                let r = measured / p.time_s;
                assert!((1.0 / 1.5..=1.5).contains(&r), "{dtype:?} b={b} T={context} {mode:?}: ratio {r:.3}");
                if mode == LaunchMode::Stream {
                    let (totals, per_kernel) = seed_compositions(&ks);
                    worst_totals = worst_totals.max(measured / totals);
                    worst_per_kernel = worst_per_kernel.max(measured / per_kernel);
                }
            }
        }
    }
    assert!(worst_totals > 1.5, "max of totals within 1.5x everywhere: {worst_totals}");
    assert!(worst_per_kernel > 1.5, "per-kernel sum within 1.5x everywhere: {worst_per_kernel}");
}

/// Out of sample in the synthetic world: calibrated as for GPT-2 small, the medium-shaped step is
/// predicted within 1.5x without any change to the ceilings.
#[test]
fn composition_predicts_the_medium_shape_without_refitting() {
    let mut rng = Rng(7);
    let c = synthetic_ceilings(&mut rng);
    for dtype in [Dtype::Fp32, Dtype::Fp16] {
        for &b in &MEDIUM_BATCHES {
            let ks = step_kernels(&GPT2_MEDIUM_SHAPE, b, MEDIUM_CONTEXT, dtype);
            let measured = measured_step(&ks, LaunchMode::Graph, &mut rng);
            let r = measured / predict_step(&c, &ks, LaunchMode::Graph).expect("prediction").time_s;
            assert!((1.0 / 1.5..=1.5).contains(&r), "{dtype:?} b={b}: ratio {r:.3}");
        }
    }
}

#[test]
fn curve_interpolates_in_log_log_and_scales_below_the_first_point() {
    let c = vec![
        CurvePoint { bytes_in_flight: 1e3, bytes_per_s: 1e9 },
        CurvePoint { bytes_in_flight: 1e5, bytes_per_s: 1e11 },
        CurvePoint { bytes_in_flight: 1e7, bytes_per_s: 1e12 },
    ];
    let bw = |x| curve_bandwidth(&c, x, "t").unwrap();
    assert!((bw(1e3) - 1e9).abs() < 1.0);
    assert!((bw(1e4) / 1e10 - 1.0).abs() < 1e-9);
    assert!((bw(1e6) / 10f64.powf(11.5) - 1.0).abs() < 1e-9);
    assert!((bw(5e2) - 5e8).abs() < 1.0);
    assert_eq!(bw(1e9), 1e12);
    assert_eq!(curve_bandwidth(&[], 1.0, "t"), Err(ComposeError::BadCurve("t")));
    let bad = [CurvePoint { bytes_in_flight: 1.0, bytes_per_s: 0.0 }];
    assert!(curve_bandwidth(&bad, 1.0, "t").is_err());
}

fn sample(m: u64, k: u64, n: u64, eff: f64) -> MatmulSample {
    let shape = MatmulShape { m, k, n, dtype: Dtype::Fp32 };
    MatmulSample { shape, work_s: matmul_roofline_s(&shape, 1e12, 1e13) / eff }
}

fn plain_ceilings(matmul: Vec<MatmulSample>) -> ComposeCeilings {
    let mut host = BTreeMap::new();
    host.insert("kernel".to_string(), 3e-6);
    host.insert("blas.fp32".to_string(), 6e-6);
    let mut peak = BTreeMap::new();
    peak.insert("fp32".to_string(), 1e13);
    let curve = vec![CurvePoint { bytes_in_flight: 1e6, bytes_per_s: 1e12 }];
    ComposeCeilings {
        isolated_launch_s: 8e-6,
        host_issue_s: host,
        host_issue_idle_s: BTreeMap::new(),
        host_issue_graph_s: 4e-6,
        gap_stream_s: 2e-6,
        gap_graph_s: 1e-6,
        graph_overhead_s: 3e-6,
        min_work_s: 1e-6,
        min_work_l2_s: 0.5e-6,
        dram_curve: curve.clone(),
        dram_curve_8b: curve.clone(),
        l2_curve: curve,
        step_latency_s: BTreeMap::new(),
        dram_bytes_per_s: 1e12,
        peak_flops_per_s: peak,
        matmul,
    }
}

#[test]
fn efficiency_is_interpolated_between_neighbours_and_exact_at_a_sample() {
    let c = plain_ceilings(vec![sample(1, 512, 512, 0.2), sample(64, 512, 512, 0.4), sample(512, 512, 512, 0.8)]);
    let e = |m| matmul_efficiency(&c, &MatmulShape { m, k: 512, n: 512, dtype: Dtype::Fp32 }).unwrap();
    let mid = e(8);
    assert!(mid > 0.2 && mid < 0.4, "{mid}");
    assert!(e(256) > 0.4 && e(256) < 0.8);
    // No calibration in fp16.
    let f16 = MatmulShape { m: 8, k: 512, n: 512, dtype: Dtype::Fp16 };
    assert!(matches!(matmul_efficiency(&c, &f16), Err(ComposeError::Missing { .. })));
}

/// A user's (batched) product: a calibration point at its coordinates gives that point's own
/// work; between points, the roofline over the interpolated efficiency; bf16 reads the fp16 sweep.
#[test]
fn a_batched_products_work_comes_from_the_sweep_at_its_coordinates() {
    let c = plain_ceilings(vec![sample(1, 512, 512, 0.2), sample(64, 512, 512, 0.4), sample(512, 512, 512, 0.8)]);
    let exact = sample(64, 512, 512, 0.4);
    let w = product_work_s(&c, exact.shape.flops(), exact.shape.bytes(), Dtype::Fp32, true).unwrap();
    assert!((w / exact.work_s - 1.0).abs() < 1e-12, "{w} vs {}", exact.work_s);
    // Twelve products of 1 x 512 @ 512 x 512 batched: off every sample, so the roofline over an
    // efficiency inside the samples' range.
    let one = MatmulShape { m: 1, k: 512, n: 512, dtype: Dtype::Fp32 };
    let (f, b) = (12.0 * one.flops(), 12.0 * one.bytes());
    let w = product_work_s(&c, f, b, Dtype::Fp32, true).unwrap();
    let roofline = (b / 1e12).max(f / 1e13);
    assert!(w > roofline / 0.8 && w < roofline / 0.2, "{w} {roofline}");
    // No fp16 or bf16 peak or sweep here: a bf16 product is refused, as is one of no FLOPs.
    assert!(product_work_s(&c, f, b, Dtype::Bf16, true).is_err());
    assert!(product_work_s(&c, 0.0, b, Dtype::Fp32, true).is_err());
}

/// Structural: a calibration that contains a predicted shape is refused, so no time measured on a
/// predicted product can become an input.
#[test]
fn a_calibration_containing_a_predicted_shape_is_refused() {
    let ks = step_kernels(&GPT2_SMALL_SHAPE, 8, 128, Dtype::Fp32);
    let qkv = ks.iter().find_map(|k| k.matmul).unwrap();
    let c = plain_ceilings(vec![sample(1, 640, 1920, 0.3), MatmulSample { shape: qkv, work_s: 1e-5 }]);
    assert_eq!(
        predict_step(&c, &ks, LaunchMode::Stream),
        Err(ComposeError::CalibrationIncludesPredictedShape(qkv.label()))
    );
}

/// Structural: the composition's inputs are the listed ceilings and nothing else (a new field,
/// e.g. a measured step time, fails this test until it is listed and justified).
#[test]
fn the_prediction_inputs_are_exactly_the_listed_ceilings() {
    let v = serde_json::to_value(plain_ceilings(Vec::new())).unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|s| s.as_str()).collect();
    keys.sort();
    let mut listed: Vec<&str> = PREDICTION_INPUTS.iter().map(|(k, _)| *k).filter(|k| !k.starts_with('(')).collect();
    listed.sort();
    assert_eq!(keys, listed);
}

#[test]
fn calibration_shapes_are_none_of_the_steps_shapes() {
    let steps = vec![(GPT2_SMALL_SHAPE, SWEEP_BATCHES.to_vec()), (GPT2_MEDIUM_SHAPE, (1..=1024).collect::<Vec<u64>>())];
    for dtype in [Dtype::Fp32, Dtype::Fp16] {
        let cal = calibration_shapes(dtype);
        assert_eq!(calibration_overlap(&cal, &steps), None);
        let mut all_small = steps.clone();
        all_small[0].1 = (1..=1024).collect();
        assert_eq!(calibration_overlap(&cal, &all_small), None);
    }
    // The check finds an overlap when there is one.
    let bad = vec![MatmulShape { m: 32, k: 768, n: 3072, dtype: Dtype::Fp16 }];
    assert_eq!(calibration_overlap(&bad, &steps), Some(bad[0]));
}

#[test]
fn the_pipeline_exposes_host_time_only_when_the_host_is_slower() {
    let c = plain_ceilings(vec![sample(1, 640, 1920, 0.3), sample(64, 640, 1920, 0.5)]);
    // Tiny kernels: host 3 us per launch against device 2 + 1 us: 0 exposed... make host slower.
    let mut slow = c.clone();
    slow.host_issue_s.insert("kernel".into(), 10e-6);
    let k = step_kernels(&GPT2_SMALL_SHAPE, 1, 128, Dtype::Fp32)
        .into_iter()
        .filter(|k| k.matmul.is_none())
        .collect::<Vec<_>>();
    let fast = predict_step(&c, &k, LaunchMode::Stream).unwrap();
    assert_eq!(fast.exposed_host_s, 0.0);
    assert!((fast.time_s - fast.device_s).abs() < 1e-15);
    let p = predict_step(&slow, &k, LaunchMode::Stream).unwrap();
    assert!((p.time_s - 10e-6 * k.len() as f64).abs() < 1e-12, "{}", p.time_s);
    assert!(p.exposed_host_s > 0.0);
    // Graph: one issue, the device's graph overhead once.
    let g = predict_step(&slow, &k, LaunchMode::Graph).unwrap();
    assert!((g.device_s - (k.len() as f64 * 1e-6 + g.work_s + 3e-6)).abs() < 1e-12);
    let shares = attribution(&g);
    assert_eq!(shares.iter().map(|s| s.count).sum::<usize>(), k.len());
}

#[test]
fn step_counts_match_the_seed_launch_classes() {
    let ks = step_kernels(&GPT2_SMALL_SHAPE, 4, 128, Dtype::Fp32);
    assert_eq!(ks.len(), 122);
    for (class, n) in m::GPT2_SMALL_STEP_KERNELS {
        let got = ks
            .iter()
            .filter(|k| if class.starts_with("matmul") { k.matmul.is_some() } else { k.kind == class })
            .count();
        assert_eq!(got as u32, n, "{class}");
    }
    let classes = GPT2_SMALL_SHAPE.launch_classes(Dtype::Fp32);
    assert_eq!(classes.iter().map(|c| c.1).sum::<u32>(), 122);
    // 494.3 MB of fp32 weights, as `memscope batch` allocates them.
    assert!((GPT2_SMALL_SHAPE.weights_bytes(Dtype::Fp32) / 1e6 - 494.3).abs() < 0.1);
    let med = step_kernels(&GPT2_MEDIUM_SHAPE, 1, 128, Dtype::Fp16);
    assert_eq!(med.len(), 24 * 10 + 2);
    // Attention moves the seed's cache bytes.
    let att = ks.iter().find(|k| k.kind == "attention").unwrap();
    assert_eq!(att.dram_bytes * 12.0, 4.0 * 128.0 * GPT2_SMALL_SHAPE.cache_bytes_per_token(Dtype::Fp32));
}

/// Alignment classes: an unaligned product (N = 50,257 like the LM head) is interpolated from the
/// unaligned calibration products only, an aligned one from the aligned only; with no unaligned
/// product in the calibration the composition refuses instead of borrowing the other class.
#[test]
fn unaligned_products_are_interpolated_from_their_own_class() {
    let c = plain_ceilings(vec![
        sample(16, 896, 32000, 0.8),
        sample(256, 896, 32000, 0.8),
        sample(16, 896, 32003, 0.2),
        sample(256, 896, 32003, 0.2),
    ]);
    let shape = |n| MatmulShape { m: 64, k: 768, n, dtype: Dtype::Fp32 };
    assert!(!shape(50257).aligned_16_bytes() && shape(50256).aligned_16_bytes());
    let e_un = matmul_efficiency(&c, &shape(50257)).unwrap();
    let e_al = matmul_efficiency(&c, &shape(50256)).unwrap();
    assert!((e_un - 0.2).abs() < 1e-9, "{e_un}");
    assert!((e_al - 0.8).abs() < 1e-9, "{e_al}");
    // fp16 rows are aligned at multiples of 8 elements, fp32 at multiples of 4.
    let h = |k, n| MatmulShape { m: 1, k, n, dtype: Dtype::Fp16 }.aligned_16_bytes();
    assert!(h(768, 2304) && !h(768, 50257) && !h(772, 2304));
    assert!(MatmulShape { m: 1, k: 772, n: 2304, dtype: Dtype::Fp32 }.aligned_16_bytes());
    let only_aligned = plain_ceilings(vec![sample(16, 896, 32000, 0.8), sample(256, 896, 32000, 0.8)]);
    assert_eq!(
        matmul_efficiency(&only_aligned, &shape(50257)),
        Err(ComposeError::NoCalibration("fp32, unaligned rows".into()))
    );
    // Both classes are in the calibration sweep, in both precisions.
    for d in [Dtype::Fp32, Dtype::Fp16] {
        let cal = calibration_shapes(d);
        assert!(cal.iter().any(|s| s.aligned_16_bytes()) && cal.iter().any(|s| !s.aligned_16_bytes()));
    }
}

/// fp16 attention's lanes load 8 bytes: its DRAM term reads the 8-byte curve (and refuses
/// ceilings without one); fp32 attention and the other kernels read the 16-byte curve.
#[test]
fn eight_byte_loads_read_the_eight_byte_curve() {
    let mut c = plain_ceilings(Vec::new());
    c.peak_flops_per_s.insert("fp16".into(), 1e14);
    c.dram_curve = vec![CurvePoint { bytes_in_flight: 1e6, bytes_per_s: 1e12 }];
    c.dram_curve_8b = vec![CurvePoint { bytes_in_flight: 1e6, bytes_per_s: 0.25e12 }];
    let att = |d| step_kernels(&GPT2_SMALL_SHAPE, 1, 1024, d).into_iter().find(|k| k.kind == "attention").unwrap();
    let (a16, a32) = (att(Dtype::Fp16), att(Dtype::Fp32));
    assert_eq!((a16.load_bytes, a32.load_bytes), (8.0, 16.0));
    let dram =
        |k: &KernelCount, c: &ComposeCeilings| predict_kernel(c, k, LaunchMode::Graph).unwrap().terms["memory.dram"];
    let expect16 = a16.dram_bytes / (0.25e12 * a16.bytes_in_flight / 1e6);
    assert!((dram(&a16, &c) / expect16 - 1.0).abs() < 1e-9);
    let expect32 = a32.dram_bytes / (1e12 * a32.bytes_in_flight / 1e6);
    assert!((dram(&a32, &c) / expect32 - 1.0).abs() < 1e-9);
    c.dram_curve_8b.clear();
    assert!(matches!(predict_kernel(&c, &a16, LaunchMode::Graph), Err(ComposeError::Missing { .. })));
    assert!(predict_kernel(&c, &a32, LaunchMode::Graph).is_ok());
}

/// On a stream each launch costs the host the larger of its blocked and idle issue times; a graph
/// is not affected; ceilings without idle times use the blocked ones.
#[test]
fn the_idle_host_issue_time_counts_when_it_is_the_larger() {
    let c = plain_ceilings(vec![sample(1, 640, 1920, 0.3), sample(64, 640, 1920, 0.5)]);
    let ks: Vec<KernelCount> =
        step_kernels(&GPT2_SMALL_SHAPE, 1, 128, Dtype::Fp32).into_iter().filter(|k| k.matmul.is_none()).collect();
    let base = predict_step(&c, &ks, LaunchMode::Stream).unwrap();
    assert!((base.host_s - 3e-6 * ks.len() as f64).abs() < 1e-12);
    let mut slow_idle = c.clone();
    slow_idle.host_issue_idle_s.insert("kernel".into(), 7e-6);
    let p = predict_step(&slow_idle, &ks, LaunchMode::Stream).unwrap();
    assert!((p.host_s - 7e-6 * ks.len() as f64).abs() < 1e-12);
    assert!((p.time_s - p.host_s.max(p.device_s)).abs() < 1e-15);
    let mut fast_idle = c.clone();
    fast_idle.host_issue_idle_s.insert("kernel".into(), 1e-6);
    assert_eq!(predict_step(&fast_idle, &ks, LaunchMode::Stream).unwrap().host_s, base.host_s);
    let g = predict_step(&slow_idle, &ks, LaunchMode::Graph).unwrap();
    assert_eq!(g.host_s, 4e-6);
    slow_idle.host_issue_idle_s.insert("kernel".into(), f64::NAN);
    assert!(matches!(predict_step(&slow_idle, &ks, LaunchMode::Stream), Err(ComposeError::NotFinite(_))));
}

/// A kernel of 12 blocks that walk 64 + 64 dependent steps over a small cache: its bytes and the
/// curve say a few microseconds, its steps say more (priced at 12 blocks, between the calibration
/// points); the step term bounds it, and ceilings without step latencies (older files) leave the
/// term out rather than guess it. A missing width is named.
#[test]
fn a_few_block_kernel_is_bounded_by_its_dependent_steps() {
    let mut c = plain_ceilings(vec![]);
    let k = KernelCount {
        kind: "attention".into(),
        path: LaunchPath::Kernel,
        dtype: Dtype::Fp32,
        flops: 1e6,
        dram_bytes: 2.6e5,
        l2_bytes: 0.0,
        bytes_in_flight: 2.0e5,
        load_bytes: 8.0,
        matmul: None,
        reduction_steps: 64.0,
        stream_steps: 64.0,
        blocks: 12.0,
    };
    let without = predict_kernel(&c, &k, LaunchMode::Graph).unwrap();
    assert!(!without.terms.contains_key("latency.steps"));
    let flat = |s: f64| vec![StepPoint { blocks: 1.0, step_s: s }];
    c.step_latency_s.insert(
        "reduce.8".into(),
        vec![StepPoint { blocks: 1.0, step_s: 0.25e-6 }, StepPoint { blocks: 24.0, step_s: 0.75e-6 }],
    );
    assert_eq!(
        predict_kernel(&c, &k, LaunchMode::Graph),
        Err(ComposeError::Missing { what: "dependent-step latency", key: "stream.8".into() })
    );
    c.step_latency_s.insert("stream.8".into(), flat(0.25e-6));
    c.step_latency_s.insert("reduce.16".into(), flat(9.0));
    let p = predict_kernel(&c, &k, LaunchMode::Graph).unwrap();
    // 12 blocks between the points at 1 and 24, log-linear: 0.25 + 0.5 ln 12 / ln 24 us.
    let reduce_at_12 = 0.25e-6 + 0.5e-6 * 12f64.ln() / 24f64.ln();
    let steps = 64.0 * reduce_at_12 + 64.0 * 0.25e-6;
    assert!((p.terms["latency.steps"] - steps).abs() < 1e-15);
    assert_eq!(p.work_term, "latency.steps");
    assert!(p.terms["memory.dram"] < steps, "the bytes alone would say less: {:?}", p.terms);
    assert!((p.time_s - (c.gap_graph_s + steps)).abs() < 1e-15);
}

#[test]
fn step_latency_is_log_linear_in_blocks_and_flat_beyond_the_ends() {
    let p = [StepPoint { blocks: 1.0, step_s: 1.0 }, StepPoint { blocks: 16.0, step_s: 3.0 }];
    assert_eq!(step_latency_at(&p, 0.0), Some(1.0));
    assert_eq!(step_latency_at(&p, 4.0), Some(2.0));
    assert_eq!(step_latency_at(&p, 1000.0), Some(3.0));
    assert_eq!(step_latency_at(&[], 4.0), None);
}
