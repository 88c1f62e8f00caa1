//! Tests that need a CUDA GPU. They are `#[ignore]`d, so `cargo test` without a GPU lists them as
//! ignored with the reason instead of counting them as passed; scripts/gpu-test.sh runs them on the
//! device machine with `--include-ignored` (and a run with --include-ignored but no GPU still
//! prints "skipped: no CUDA GPU" and returns). They check the target against known
//! answers: a chase reads back the cycle that was written, L1 hits are faster than L2 hits which are
//! faster than DRAM, aliased views share their bytes, a fault is reported and the context recovers.

use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_cuda::CudaTarget;

fn gpu() -> Option<CudaTarget> {
    match memscope_cuda::device_count() {
        Ok(n) if n > 0 => Some(CudaTarget::open(0).expect("open cuda:0")),
        Ok(_) | Err(_) => {
            eprintln!("skipped: no CUDA GPU");
            None
        }
    }
}

#[test]
fn device_count_says_why_when_there_is_none() {
    match memscope_cuda::device_count() {
        Ok(n) => assert!(n > 0),
        Err(e) => assert!(e.starts_with("no CUDA GPU found: "), "{e}"),
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn info_and_clock() {
    let Some(t) = gpu() else { return };
    let info = t.info();
    eprintln!("{}", serde_json::to_string_pretty(&info).unwrap());
    assert_eq!(info.kind, "cuda");
    assert_eq!(info.id, "cuda:0");
    assert!(info.units > 0);
    let hz = info.clock_hz.expect("measured clock");
    assert!(hz > 2e8 && hz < 4e9, "clock {hz}");
}

fn chase_ns(t: &mut CudaTarget, lines: u64, stride: u64, path: CachePath, warm: u32) -> (f64, f64) {
    let buf = t.alloc(lines * stride).unwrap();
    // A randomly shuffled cycle (a fixed-stride order could be prefetched).
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let mut order: Vec<u64> = (0..lines).collect();
    order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(lines));
    let addrs: Vec<u64> = order.iter().map(|i| buf.addr(i * stride)).collect();
    let mut spec = ChaseSpec::new(addrs, path, 20_000);
    spec.warmup_laps = warm;
    spec.repeats = 3;
    let r = t.chase(&spec).unwrap();
    t.free(buf);
    let ns = memscope_core::stats::median(&r.ns_per_hop);
    let cyc = memscope_core::stats::median(&r.cycles_per_hop.unwrap());
    (ns, cyc)
}

#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn latency_ladder_l1_l2_dram() {
    let Some(mut t) = gpu() else { return };
    let (l1, l1c) = chase_ns(&mut t, 256, 128, CachePath::L1Cached, 2); // 32 KiB
    let (l2, l2c) = chase_ns(&mut t, 256, 128, CachePath::L1Bypass, 2);
    // 2^20 lines (128 MiB of lines, more than twice the L2) spread over 256 MiB, cold after the
    // flush, 20000 hops: every hop misses L2.
    let (dram, dramc) = chase_ns(&mut t, 1 << 20, 256, CachePath::L1Bypass, 0);
    // The same footprint in a fixed-stride order (a prefetcher would show here; reported only).
    let buf = t.alloc(256 << 20).unwrap();
    let addrs: Vec<u64> = (0..1u64 << 20).map(|i| buf.addr(((i * 7919) % (1 << 20)) * 256)).collect();
    let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, 20_000);
    spec.warmup_laps = 0;
    let r = t.chase(&spec).unwrap();
    t.free(buf);
    eprintln!("fixed-stride order over 256 MiB: {:.1} ns", memscope_core::stats::median(&r.ns_per_hop));
    // Per-hop: the longest chain that fits in one shared-memory chunk and one spanning chunks.
    for n in [11776u64, 30000] {
        let buf = t.alloc(64 << 20).unwrap();
        let addrs: Vec<u64> = (0..4096u64).map(|i| buf.addr(i * 16384)).collect();
        let mut spec = ChaseSpec::new(addrs, CachePath::L1Cached, n);
        spec.per_hop = true;
        spec.repeats = 1;
        spec.warmup_laps = 0;
        let r = t.chase(&spec).unwrap();
        let ph = r.per_hop_ns.unwrap();
        assert_eq!(ph.len() as u64, n);
        // The recorded hops are the timed ones: their mean is the chase's mean (cold: DRAM).
        let mean = ph.iter().sum::<f64>() / n as f64;
        eprintln!("per-hop {n}: mean of records {mean:.1} ns, chase mean {:.1} ns", r.ns_per_hop[0]);
        assert!((mean / r.ns_per_hop[0] - 1.0).abs() < 0.15);
        t.free(buf);
    }
    eprintln!("L1 {l1:.1} ns ({l1c:.0} cyc), L2 {l2:.1} ns ({l2c:.0} cyc), DRAM {dram:.1} ns ({dramc:.0} cyc)");
    assert!(l1 > 5.0 && l1 < l2 && l2 * 1.3 < dram && dram < 2000.0);
}

#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn chase_on_a_chosen_sm_with_warps_and_per_hop() {
    let Some(mut t) = gpu() else { return };
    let sms = t.info().units;
    let buf = t.alloc(1 << 20).unwrap();
    let addrs: Vec<u64> = (0..512).map(|i| buf.addr(i * 256)).collect();
    let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, 4000);
    spec.sm = Some(sms - 1);
    spec.warps = 4;
    spec.per_hop = true;
    let r = t.chase(&spec).unwrap();
    let ph = r.per_hop_ns.unwrap();
    assert_eq!(ph.len(), 4 * 4000, "per-hop times of every chain");
    assert!(ph.iter().all(|x| *x > 0.0));
    t.free(buf);
}

#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn aliased_views_share_bytes_and_bad_specs_are_refused() {
    let Some(mut t) = gpu() else { return };
    let (a, b) = t.alloc_aliased(4 << 20).unwrap();
    assert_eq!(a.bytes, b.bytes);
    assert_ne!(a.base, b.base);
    // A chase written through view a and read through view b: the cycle is shared.
    let addrs: Vec<u64> = (0..64).map(|i| a.addr(i * 128)).collect();
    t.chase(&ChaseSpec::new(addrs, CachePath::L1Bypass, 1000)).unwrap();
    let mixed: Vec<u64> =
        (0..64u64).map(|i| if i & 1 == 0 { a.addr(i * 128 + 8) } else { b.addr(i * 128 + 16) }).collect();
    t.chase(&ChaseSpec::new(mixed, CachePath::L1Cached, 1000)).unwrap();
    // The same physical word through both views is refused with a clear message.
    let dup = ChaseSpec::new(vec![a.addr(0), b.addr(0)], CachePath::L1Bypass, 10);
    assert!(matches!(t.chase(&dup), Err(memscope_core::TargetError::BadSpec(_))));
    let bad = ChaseSpec::new(vec![0x10], CachePath::L1Bypass, 10);
    assert!(matches!(t.chase(&bad), Err(memscope_core::TargetError::BadSpec(_))));
    t.free(b);
}

#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn too_large_an_allocation_is_a_clear_error() {
    let Some(mut t) = gpu() else { return };
    let e = t.alloc(1 << 50).unwrap_err();
    assert!(matches!(e, memscope_core::TargetError::OutOfMemory { .. }), "{e}");
}

/// Latency versus footprint (random 128-byte lines, ld.global.cg), cold after a flush and warm
/// after one lap: printed for the record; asserts only that the chases ran and were followed.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn latency_versus_footprint_report() {
    let Some(mut t) = gpu() else { return };
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    for mib in [1u64, 16, 48, 96, 256, 1024, 4096] {
        let lines = mib << 13; // 128-byte lines
        let buf = t.alloc(mib << 20).unwrap();
        let mut order: Vec<u64> = (0..lines).collect();
        order.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(mib));
        let addrs: Vec<u64> = order.iter().map(|i| buf.addr(i * 128)).collect();
        let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, 20_000);
        spec.warmup_laps = 0;
        spec.repeats = 1;
        let cold = t.chase(&spec).unwrap().ns_per_hop[0];
        let warm = if mib <= 96 {
            spec.warmup_laps = 1;
            spec.repeats = 3;
            memscope_core::stats::median(&t.chase(&spec).unwrap().ns_per_hop)
        } else {
            f64::NAN
        };
        eprintln!("footprint {mib:>5} MiB: cold {cold:.1} ns/hop, warm {warm:.1} ns/hop");
        t.free(buf);
    }
}

/// A faulting kernel is reported as a device error naming the fault; afterwards the target either
/// works again (context rebuilt) or, when the driver keeps the sticky error, every call fails fast
/// with a message saying a new process is needed. Runs in a child process: a sticky fault poisons the
/// whole process, and the other tests share it.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn a_kernel_fault_is_reported_and_handled() {
    if std::env::var("MEMSCOPE_FAULT_CHILD").is_ok() {
        let Some(mut t) = gpu() else { return };
        let e = t.inject_fault().unwrap_err();
        let msg = e.to_string();
        eprintln!("fault: {msg}");
        assert!(matches!(e, memscope_core::TargetError::Device(_)), "{msg}");
        assert!(msg.contains("CUDA_ERROR"), "{msg}");
        let buf = t.alloc(1 << 20);
        if msg.contains("was rebuilt") {
            let buf = buf.unwrap();
            let addrs: Vec<u64> = (0..64).map(|i| buf.addr(i * 128)).collect();
            t.chase(&ChaseSpec::new(addrs, CachePath::L1Bypass, 1000)).unwrap();
            eprintln!("after the fault: the rebuilt context chases again");
        } else {
            let e2 = buf.unwrap_err().to_string();
            eprintln!("after the fault: {e2}");
            assert!(e2.contains("new memscope process"), "{e2}");
        }
        return;
    }
    if gpu().is_none() {
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_kernel_fault_is_reported_and_handled",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MEMSCOPE_FAULT_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    eprintln!("{text}");
    assert!(out.status.success() && text.contains("fault: "), "child failed:\n{text}");
}

/// The link probe (issue 16) on the GPU, --quick: every test's plateau is a positive rate with a
/// series, pinned copies beat pageable ones or match them, the chase over host memory is slower
/// than any on-device latency (> 300 ns), and on a one-GPU host the peer matrix is waived.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn link_probe_measures_the_host_link() {
    use memscope_core::{keys, NoProgress, Probe, ProbeContext};
    let Some(mut t) = gpu() else { return };
    let earlier = Default::default();
    let mut ctx = ProbeContext { target: &mut t, quick: true, progress: &NoProgress, earlier: &earlier };
    let out = memscope_cuda::probes::LinkProbe.run(&mut ctx).expect("link probe");
    for name in memscope_cuda::probes::LINK_TEST_NAMES {
        let v = out.findings[&keys::link_bytes_per_s(name)].as_f64().unwrap();
        assert!(v > 1e9 && v < 1e12, "{name}: {v}");
        assert!(out.series.contains_key(&format!("link.{name}")), "{name}");
    }
    let lat = out.findings[keys::LINK_HOST_DEVICE_LATENCY_NS].as_f64().unwrap();
    assert!(lat > 300.0 && lat < 20_000.0, "host_device_latency_sm {lat} ns");
    let rt = out.findings[keys::LINK_HOST_ROUND_TRIP_NS].as_f64().unwrap();
    assert!(rt > 1000.0, "round trip {rt} ns");
    if memscope_cuda::device_count().unwrap() == 1 {
        assert_eq!(t.info().details["host_gpus"], serde_json::json!(1));
        assert!(t.peer_links().is_none(), "one GPU: no peer instrument");
    }
}
