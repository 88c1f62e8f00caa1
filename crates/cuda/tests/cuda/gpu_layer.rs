//! GPU test of the one GPU layer (docs/ARCHITECTURE.md), `#[ignore]`d like tests/cuda/gpu.rs (run by
//! scripts/gpu-test.sh): the bottleneck-model operations run on the GPU a `CudaTarget` opened,
//! after target work, with every kernel check passing and the timing rule giving positive,
//! ordered times; the target still works afterwards.

use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_cuda::ops::{check, device::OpsGpu};
use memscope_cuda::CudaTarget;
use memscope_gpu::Arg;

#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn ops_run_on_the_targets_gpu_after_its_probes() {
    if !matches!(memscope_cuda::device_count(), Ok(n) if n > 0) {
        eprintln!("skipped: no CUDA GPU");
        return;
    }
    let mut t = CudaTarget::open(0).expect("open cuda:0");
    t.flush().expect("flush");
    {
        let g = OpsGpu::on(t.gpu()).expect("ops on the target's GPU");
        assert!(g.sm_count > 0 && g.l2_bytes > 0);
        for c in check::run_all(&g).expect("checks") {
            assert!(c.ok, "{} rel err {}", c.kernel, c.rel_err);
        }
        let b = g.alloc(1 << 20).expect("alloc");
        // fill_u32(uint4* dst, u64 nvec, unsigned value): 1 MiB is 65 536 vectors.
        let args = [Arg::Ptr(b.ptr), Arg::U64(1 << 16), Arg::U32(7)];
        let t1 = g.time_calls(1e-3, 5, |_| g.launch("fill_u32", 64, 256, 0, &args)).expect("timing");
        assert!(t1.min_per_call_s > 0.0 && t1.min_per_call_s <= t1.per_call_s && t1.per_call_s <= t1.max_per_call_s);
    }
    let base = t.alloc(1 << 20).expect("target alloc");
    let addrs: Vec<u64> = (0..64).map(|i| base.base + i * 4096).collect();
    let r = t.chase(&ChaseSpec::new(addrs, CachePath::L1Bypass, 4096)).expect("chase after the ops");
    assert!(r.ns_per_hop.iter().all(|v| *v > 0.0));
    t.free(base);
}
