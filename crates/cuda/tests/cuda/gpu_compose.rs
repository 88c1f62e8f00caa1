//! GPU tests of the composition's ceilings (docs/MODEL.md), `#[ignore]`d like tests/cuda/gpu.rs (run by
//! scripts/gpu-test.sh): every kernel check passes (the fp16 decode attention included), the spin
//! kernel holds the device for its time, and the composition's ceilings are positive, the DRAM
//! curve rises with bytes in flight, the calibration covers every calibration shape, and a graph
//! step is predicted no slower than the same step on a stream.

use memscope_core::NoProgress;
use memscope_cuda::ops::{check, compose_ceilings, device::Arg, device::OpsGpu};
use memscope_cuda::CudaTarget;
use memscope_model::bottleneck::Dtype;
use memscope_model::compose::{predict_step, LaunchMode};
use memscope_model::compose_step::{calibration_shapes, step_kernels, GPT2_SMALL_SHAPE};

use crate::common;

#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn compose_ceilings_are_sound() {
    if !common::have_gpu() {
        return;
    }
    // The seed's ceilings from the same session's findings, as the commands take them.
    let mut t = CudaTarget::open(0).expect("open cuda:0");
    let (_, seed) = common::session_ceilings(&mut t, true);
    let g = OpsGpu::on(t.gpu()).expect("ops on the target's GPU");
    for c in check::run_all(&g).expect("checks") {
        assert!(c.ok, "{} rel err {}", c.kernel, c.rel_err);
    }
    let (e0, e1) = (g.event().unwrap(), g.event().unwrap());
    g.record(&e0).unwrap();
    g.launch("spin_ns", 1, 32, 0, &[Arg::U64(1_000_000)]).unwrap();
    g.record(&e1).unwrap();
    let spun = g.elapsed_s(&e0, &e1).unwrap();
    assert!((0.9e-3..5e-3).contains(&spun), "spin 1 ms took {spun}");
    let r = compose_ceilings::measure(&g, &seed.ceilings, &NoProgress).expect("compose ceilings");
    let c = &r.ceilings;
    for x in [c.isolated_launch_s, c.gap_stream_s, c.host_issue_graph_s, c.min_work_s, c.min_work_l2_s] {
        assert!(x > 0.0 && x < 1e-3, "{x}");
    }
    assert!(c.host_issue_s.values().all(|&h| h > 0.0 && h < 1e-3));
    assert_eq!(c.host_issue_idle_s.keys().collect::<Vec<_>>(), c.host_issue_s.keys().collect::<Vec<_>>());
    assert!(c.host_issue_idle_s.values().all(|&h| h > 0.0 && h < 1e-3));
    for curve in [&c.dram_curve, &c.dram_curve_8b] {
        let (first, last) = (curve[0], curve[curve.len() - 1]);
        assert!(last.bytes_per_s > 10.0 * first.bytes_per_s, "{first:?} {last:?}");
    }
    assert_eq!(c.dram_curve_8b.len(), c.dram_curve.len());
    assert_eq!(c.matmul.len(), 2 * calibration_shapes(Dtype::Fp32).len());
    assert_eq!(c.matmul.len(), 180);
    // Dependent-step latencies: four kinds, each by blocks from 1 to one per SM; a DRAM round trip
    // is between 50 ns and 5 us on any GPU, and the curve is in ascending blocks.
    assert_eq!(c.step_latency_s.keys().collect::<Vec<_>>(), ["reduce.16", "reduce.8", "stream.16", "stream.8"]);
    for (k, pts) in &c.step_latency_s {
        assert!(pts.len() >= 2 && pts[0].blocks == 1.0, "{k}: {pts:?}");
        assert!(pts.windows(2).all(|w| w[0].blocks < w[1].blocks), "{k}: {pts:?}");
        assert!(pts.iter().all(|p| p.step_s > 50e-9 && p.step_s < 5e-6), "{k}: {pts:?}");
    }
    let ks = step_kernels(&GPT2_SMALL_SHAPE, 1, 128, Dtype::Fp32);
    let s = predict_step(c, &ks, LaunchMode::Stream).unwrap();
    let gr = predict_step(c, &ks, LaunchMode::Graph).unwrap();
    assert!(gr.time_s <= s.time_s * 1.05, "{} {}", gr.time_s, s.time_s);
    // fp16: the 8-byte curve (attention) and the unaligned class (LM head) are there to be used.
    let h = step_kernels(&GPT2_SMALL_SHAPE, 1, 1024, Dtype::Fp16);
    let hp = predict_step(c, &h, LaunchMode::Graph).unwrap();
    assert!(hp.time_s > 0.0);
    // Attention at context 1,024 walks 64 + 64 dependent steps per block: the term is priced.
    let att = hp.kernels.iter().find(|k| k.kind == "attention").unwrap();
    assert!(att.terms["latency.steps"] > 128.0 * 50e-9, "{att:?}");
}
