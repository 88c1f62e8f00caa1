//! Tests of the bottleneck model (seed 003): the seed's own predicted column from its own ceilings.

use super::*;

/// Seed 003's single-operation ceilings, recovered from its own predicted column: 31 us, 504 us,
/// 5.25 ms and 328 us all imply 306.5-307.0 GB/s (the text rounds to 305), and 382 us and
/// 21.73 ms imply 6.325 TFLOP/s fp32 (the text's "6.2 to 6.4").
const SEED_BW: f64 = 306.7e9;
const SEED_PEAK_FP32: f64 = 6.325e12;
/// The batch experiment's predictions (9.9-10.1, 19.8-20.1, 8.9, 17.8, 35.6 ms) imply 6.37 TFLOP/s.
const SEED_BATCH_PEAK: f64 = 6.37e12;

fn near(x: f64, want: f64, tol: f64) {
    assert!((x - want).abs() <= tol, "{x} is not within {tol} of {want}");
}

#[test]
fn three_bounds_and_the_largest() {
    let p = predict_time(1e9, 1e6, 1e-5, 1e12, 1e12);
    assert_eq!(p.bounds, Bounds { launch_s: 1e-5, memory_s: 1e-6, compute_s: 1e-3 });
    assert_eq!(p.time_s, 1e-3);
    assert_eq!(p.regime, Regime::Compute);
    assert_eq!(predict_time(0.0, 1e9, 1e-5, 1e12, 1e12).regime, Regime::Memory);
    assert_eq!(predict_time(1.0, 1.0, 1e-5, 1e12, 1e12).regime, Regime::Launch);
}

#[test]
fn seed_single_operation_predictions() {
    let one = |c: OpCost, launch: f64| c.predict(launch, SEED_BW, SEED_PEAK_FP32);
    let p = one(matmul_cost(1, 768, 3072, Dtype::Fp32), 12e-6);
    assert_eq!(p.regime, Regime::Memory);
    near(p.time_s * 1e6, 31.0, 0.5);
    let p = one(matmul_cost(1, 768, 50257, Dtype::Fp32), 12e-6);
    assert_eq!(p.regime, Regime::Memory);
    near(p.time_s * 1e6, 504.0, 0.5);
    let p = one(matmul_cost(512, 768, 3072, Dtype::Fp32), 12e-6);
    assert_eq!(p.regime, Regime::Compute);
    near(p.time_s * 1e6, 382.0, 0.5);
    let p = one(matmul_cost(4096, 4096, 4096, Dtype::Fp32), 12e-6);
    assert_eq!(p.regime, Regime::Compute);
    near(p.time_s * 1e3, 21.73, 0.005);
    let p = one(add_cost(1 << 27, Dtype::Fp32), 9e-6);
    assert_eq!(p.regime, Regime::Memory);
    near(p.time_s * 1e3, 5.25, 0.005);
    let p = one(layernorm_cost(16384, 768, Dtype::Fp32), 7.9e-6);
    assert_eq!(p.regime, Regime::Memory);
    near(p.time_s * 1e6, 328.0, 0.5);
    let p = one(layernorm_cost(1, 768, Dtype::Fp32), 7.9e-6);
    assert_eq!(p.regime, Regime::Launch);
    near(p.time_s * 1e6, 7.9, 1e-9);
    // The text's rounded 305 GB/s still gives 31 us for the decode-sized product.
    near(matmul_cost(1, 768, 3072, Dtype::Fp32).predict(0.0, 305e9, 6.4e12).time_s * 1e6, 31.0, 0.5);
}

#[test]
fn seed_intensities_and_ridge() {
    near(add_cost(1000, Dtype::Fp32).intensity(), 0.08, 0.005);
    near(gelu_cost(1000, Dtype::Fp32).intensity(), 1.0, 1e-12);
    near(layernorm_cost(10, 100, Dtype::Fp32).intensity(), 1.0, 1e-12);
    near(softmax_cost(10, 100, Dtype::Fp32).intensity(), 0.6, 0.03);
    near(6.4e12 / 305e9, 21.0, 0.1);
    // fp16 halves the bytes, not the FLOPs.
    assert_eq!(add_cost(10, Dtype::Fp16).bytes() * 2.0, add_cost(10, Dtype::Fp32).bytes());
    assert_eq!(Dtype::Bf16.size_bytes(), 2.0);
}

#[test]
fn counters_follow_the_table() {
    let c = matmul_cost(2, 3, 5, Dtype::Fp32);
    assert_eq!((c.flops, c.read_bytes, c.write_bytes), (60.0, 84.0, 40.0));
    let c = decode_attention_cost(2, 12, 128, 64, Dtype::Fp32);
    assert_eq!(c.flops, 4.0 * 2.0 * 12.0 * 128.0 * 64.0);
    assert_eq!(c.bytes(), 2.0 * 2.0 * 12.0 * 128.0 * 64.0 * 4.0);
    assert_eq!(c.pattern(), Pattern::Read);
    assert_eq!(add_cost(8, Dtype::Fp32).pattern(), Pattern::Copy);
    assert_eq!(matmul_cost(1, 768, 3072, Dtype::Fp32).pattern(), Pattern::Read);
    assert_eq!(OpCost { flops: 0.0, read_bytes: 0.0, write_bytes: 8.0 }.pattern(), Pattern::Write);
    // Fusion: two binary kernels move 6 passes, the fused one 4: predicted 1.5x.
    let two = 2.0 * add_cost(1 << 26, Dtype::Fp32).bytes();
    near(two / fused_mul_add_cost(1 << 26, Dtype::Fp32).bytes(), 1.5, 1e-12);
}

#[test]
fn gpt2_small_figures() {
    // 12 layers x (K and V) x 768 x 4 bytes.
    assert_eq!(GPT2_SMALL.cache_bytes_per_token, 12.0 * 2.0 * 768.0 * 4.0);
    assert_eq!(decode_step_bytes(&GPT2_SMALL, 1, 128), 475.0 * 1048576.0 + 128.0 * 73728.0);
    assert_eq!(decode_step_flops(&GPT2_SMALL, 256), 256.0 * 247e6);
    assert_eq!(DecodeModel::by_name("gpt2-small"), Some(GPT2_SMALL));
    assert_eq!(DecodeModel::by_name("llama"), None);
}

#[test]
fn seed_decode_step_max_of_totals() {
    for launch in [8.3e-3, 8.5e-3] {
        let at = |b| decode_step_totals(&GPT2_SMALL, b, 128, launch, SEED_BW, SEED_BATCH_PEAK);
        for b in [1, 8, 32, 64, 128] {
            assert_eq!(at(b).regime, Regime::Launch, "batch {b}");
            assert_eq!(at(b).time_s, launch);
        }
        assert_eq!(at(256).regime, Regime::Compute);
        assert!((9.9e-3..=10.1e-3).contains(&at(256).time_s), "{}", at(256).time_s);
        assert_eq!(at(512).regime, Regime::Compute);
        assert!((19.8e-3..=20.1e-3).contains(&at(512).time_s), "{}", at(512).time_s);
    }
}

#[test]
fn seed_decode_step_sum_of_per_kernel_bounds() {
    let at = |b| decode_step_per_kernel(&GPT2_SMALL, b, 128, SEED_BW, SEED_BATCH_PEAK);
    near(at(128).time_s * 1e3, 8.9, 0.05);
    near(at(256).time_s * 1e3, 17.8, 0.05);
    near(at(512).time_s * 1e3, 35.6, 0.05);
    // At batch 1 the weights bound the matrix products.
    near(at(1).matmul_s, GPT2_SMALL.weights_bytes / SEED_BW, 1e-15);
    let parts = at(256);
    near(parts.matmul_s + parts.attention_s, parts.time_s, 1e-15);
    let ks = [predict_time(0.0, 1e6, 1e-6, 1e12, 1e12), predict_time(1e9, 0.0, 1e-6, 1e12, 1e12)];
    near(compose_per_kernel(&ks), 1e-6 + 1e-3, 1e-15);
}

#[test]
fn ratio_summary_by_hand() {
    let pt = |m: f64, regime| ScoredPoint { measured_s: m, predicted_s: 1.0, regime };
    let pts = [
        pt(0.9, Regime::Launch),
        pt(1.0, Regime::Memory),
        pt(1.2, Regime::Memory),
        pt(1.5, Regime::Memory),
        pt(2.5, Regime::Compute),
    ];
    let s = ratio_summary(&pts).unwrap();
    assert_eq!(s.all.count, 5);
    assert_eq!(s.all.median_ratio, 1.2);
    assert_eq!(s.all.within_25pct, 0.6);
    assert_eq!(s.all.within_2x, 0.8);
    assert_eq!(s.all.faster_than_bound, 0.2);
    assert_eq!((s.all.min_ratio, s.all.max_ratio), (0.9, 2.5));
    assert_eq!(s.by_regime["memory"].count, 3);
    assert_eq!(s.by_regime["memory"].median_ratio, 1.2);
    assert_eq!(s.by_regime["memory"].faster_than_bound, 0.0);
    assert_eq!(s.by_regime["launch"].faster_than_bound, 1.0);
    let even = ratio_stats(&[1.0, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(even.median_ratio, 2.5);
    assert!(ratio_summary(&[]).is_none());
    assert!(ratio_stats(&[f64::NAN]).is_none());
}

#[test]
fn session_ceilings_pick_the_matching_pattern_class_and_precision() {
    let mut c = SessionCeilings {
        bandwidth_bytes_per_s: BTreeMap::new(),
        launch_floor_s: BTreeMap::new(),
        peak_flops_per_s: BTreeMap::new(),
    };
    c.bandwidth_bytes_per_s.insert("read".into(), 4.0e12);
    c.bandwidth_bytes_per_s.insert("copy".into(), 3.5e12);
    c.launch_floor_s.insert("add".into(), 3e-6);
    c.peak_flops_per_s.insert("fp16".into(), 6e14);
    let ch = c.choose(&add_cost(1 << 20, Dtype::Fp16), "add", Dtype::Fp16).unwrap();
    assert_eq!((ch.pattern, ch.bandwidth_bytes_per_s, ch.launch_s), (Pattern::Copy, 3.5e12, 3e-6));
    let ch = c.choose(&add_cost(1, Dtype::Bf16), "add", Dtype::Bf16).unwrap();
    assert!(ch.precision.starts_with("fp16"));
    let err = c.choose(&add_cost(1, Dtype::Fp32), "add", Dtype::Fp32).unwrap_err();
    assert_eq!(err.to_string(), "the ceilings have no peak for 'fp32'");
    assert!(c.choose(&add_cost(1, Dtype::Fp16), "gelu", Dtype::Fp16).is_err());
    c.launch_floor_s.insert("matmul.fp16".into(), 7e-6);
    let ch = c.choose(&matmul_cost(8, 8, 8, Dtype::Bf16), "matmul.bf16", Dtype::Bf16).unwrap();
    assert_eq!(ch.launch_s, 7e-6);
    assert!(ch.launch_class.starts_with("matmul.fp16"), "{}", ch.launch_class);
    let json = serde_json::to_string(&c).unwrap();
    assert_eq!(serde_json::from_str::<SessionCeilings>(&json).unwrap(), c);
}

#[test]
fn step_launch_floor_sums_class_floors() {
    let mut c = SessionCeilings {
        bandwidth_bytes_per_s: BTreeMap::new(),
        launch_floor_s: BTreeMap::new(),
        peak_flops_per_s: BTreeMap::new(),
    };
    for (k, v) in [("matmul.fp32", 4e-6), ("layernorm", 2e-6), ("attention", 3e-6), ("add", 1e-6)] {
        c.launch_floor_s.insert(k.into(), v);
    }
    assert!(step_launch_floor(&c, &GPT2_SMALL_STEP_KERNELS).is_err(), "gelu is missing");
    c.launch_floor_s.insert("gelu".into(), 1e-6);
    let want = 49.0 * 4e-6 + 25.0 * 2e-6 + 12.0 * 3e-6 + 24.0 * 1e-6 + 12.0 * 1e-6;
    near(step_launch_floor(&c, &GPT2_SMALL_STEP_KERNELS).unwrap(), want, 1e-15);
    assert_eq!(GPT2_SMALL_STEP_KERNELS.iter().map(|k| k.1).sum::<u32>(), 122);
}

#[test]
fn per_kernel_prediction_never_below_the_floor() {
    let (pk, p) = decode_step_per_kernel_prediction(&GPT2_SMALL, 1, 128, 8.3e-3, SEED_BW, SEED_BATCH_PEAK);
    assert!(pk.time_s < 8.3e-3);
    assert_eq!((p.time_s, p.regime), (8.3e-3, Regime::Launch));
    let (pk, p) = decode_step_per_kernel_prediction(&GPT2_SMALL, 512, 128, 8.3e-3, SEED_BW, SEED_BATCH_PEAK);
    assert_eq!((p.time_s, p.regime), (pk.time_s, Regime::Compute));
    let (_, p) = decode_step_per_kernel_prediction(&GPT2_SMALL, 64, 4096, 1e-3, SEED_BW, SEED_BATCH_PEAK);
    assert_eq!(p.regime, Regime::Memory, "long contexts make attention the larger part");
}
