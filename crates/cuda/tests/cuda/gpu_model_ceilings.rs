//! GPU test of the model's ceilings from the probes (docs/MODEL.md), `#[ignore]`d like tests/cuda/gpu.rs (run
//! by scripts/gpu-test.sh): the launch probe emits the floor of every operation class of the model
//! in a sane range (1 us..100 us, no faster than the empty kernel's floor on the default stream by
//! more than the timing's noise), and the model's ceilings built strictly from a real session's
//! findings hold every class, each fed by its own finding.

use crate::common;

use memscope_core::{keys, Probe};
use memscope_cuda::probes::LaunchProbe;
use memscope_cuda::CudaTarget;
use memscope_session::Session;

#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn the_launch_probe_emits_every_class_floor_in_a_sane_range() {
    if !common::have_gpu() {
        return;
    }
    let mut t = CudaTarget::open(0).expect("open cuda:0");
    let probes: [&dyn Probe; 1] = [&LaunchProbe];
    let run = Session::silent(false).run_probes_on(&mut t, probes).expect_ok();
    assert!(run.findings.contains_key(keys::LAUNCH_FLOOR_S) && run.findings.contains_key(keys::LAUNCH_GRAPH_FLOOR_S));
    for class in keys::LAUNCH_CLASSES {
        let key = keys::launch_class_floor_s(class);
        let f = run.findings.get(&key).unwrap_or_else(|| panic!("no {key}"));
        let v = f.as_f64().expect("a number");
        assert_eq!(f.unit, "s");
        assert!((1e-6..100e-6).contains(&v), "{key} = {v} s");
        let s = f.spread.as_ref().expect("spread");
        assert!(s.min <= v && v <= s.max && s.n == 5, "{key}: {s:?}");
        assert!(f.method.contains("smallest operation"), "{}", f.method);
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn the_models_ceilings_from_a_real_session_hold_every_class() {
    if !common::have_gpu() {
        return;
    }
    let mut t = CudaTarget::open(0).expect("open cuda:0");
    let (run, c) = common::session_ceilings(&mut t, true);
    for class in keys::LAUNCH_CLASSES {
        let key = keys::launch_class_floor_s(class);
        assert_eq!(c.ceilings.launch_floor_s.get(class).copied(), run.findings[&key].as_f64(), "{class}");
        let input = c.input(&format!("launch_floor_s.{class}")).expect("input");
        assert!(input.key == key && input.stands_in_for.is_none(), "{input:?}");
    }
    for p in ["copy", "read", "write"] {
        assert!(c.ceilings.bandwidth_bytes_per_s[p] > 1e11, "{p}");
    }
    assert!(c.ceilings.peak_flops_per_s["fp16"] > c.ceilings.peak_flops_per_s["fp32"]);
}
