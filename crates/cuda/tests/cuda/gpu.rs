//! Tests that need a CUDA GPU. They are `#[ignore]`d, so `cargo test` without a GPU lists them as
//! ignored with the reason instead of counting them as passed; scripts/gpu-test.sh runs them on the
//! device machine with `--include-ignored` (and a run with --include-ignored but no GPU still
//! prints "skipped: no CUDA GPU" and returns). They check the target against known
//! answers: a chase reads back the cycle that was written, L1 hits are faster than L2 hits which are
//! faster than DRAM, aliased views share their bytes, a fault is reported and the context recovers;
//! and the SM memories' probes give sane findings (32 banks of 4 bytes, plausible latencies and rates).

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
        Err(e) => assert!(e.to_string().starts_with("no CUDA GPU found: "), "{e}"),
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
    // The test's name as the harness knows it: its module path inside this test binary (the
    // binary's own crate name left off), then the function.
    let module = module_path!().split_once("::").map(|(_, m)| format!("{m}::")).unwrap_or_default();
    let name = format!("{module}a_kernel_fault_is_reported_and_handled");
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name.as_str(), "--include-ignored", "--nocapture", "--test-threads=1"])
        .env("MEMSCOPE_FAULT_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    eprintln!("{text}");
    assert!(text.contains("running 1 test"), "the child ran no test named {name}:\n{text}");
    assert!(out.status.success() && text.contains("fault: "), "child failed:\n{text}");
}

/// Run one GPU-only probe on cuda:0 (quick mode) with `earlier` findings; its findings by key.
fn run_probe(
    t: &mut CudaTarget,
    p: &dyn memscope_core::Probe,
    earlier: &std::collections::BTreeMap<String, memscope_core::Finding>,
) -> memscope_core::ProbeOutput {
    let started = std::time::Instant::now();
    let out = session_output(memscope_session::Session::silent(true).run_probes_with(t, [p], earlier.clone()));
    eprintln!("probe {} took {:.2} s", p.key(), started.elapsed().as_secs_f64());
    for (k, f) in &out.findings {
        eprintln!(
            "  {k} = {} {} (cycles {:?}, {:?}) {}",
            f.value,
            f.unit,
            f.cycles,
            f.confidence,
            f.note.clone().unwrap_or_default()
        );
    }
    out
}

fn num(out: &memscope_core::ProbeOutput, key: &str) -> f64 {
    out.findings.get(key).and_then(|f| f.as_f64()).unwrap_or_else(|| panic!("{key} missing or undetermined"))
}

fn cycles(out: &memscope_core::ProbeOutput, key: &str) -> f64 {
    out.findings.get(key).and_then(|f| f.cycles).unwrap_or_else(|| panic!("{key} has no cycles"))
}

/// Shared memory: 32 banks of 4 bytes (every NVIDIA GPU since Maxwell), a load latency of a few
/// tens of cycles, 32..256 bytes/cycle per SM, carveout steps up to the driver's per-SM size.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn smem_probe_finds_32_banks_of_4_bytes() {
    use memscope_core::keys;
    let Some(mut t) = gpu() else { return };
    let out = run_probe(&mut t, &memscope_cuda::probes::SmemProbe, &Default::default());
    assert_eq!(num(&out, keys::SMEM_BANKS), 32.0);
    assert_eq!(num(&out, keys::SMEM_BANK_WIDTH_BYTES), 4.0);
    let lat = cycles(&out, keys::SMEM_LOAD_LATENCY_NS);
    assert!((15.0..80.0).contains(&lat), "shared load latency {lat} cycles");
    let bpc = num(&out, keys::SMEM_BANDWIDTH_BYTES_PER_CYCLE_PER_SM);
    assert!((32.0..=256.0).contains(&bpc), "{bpc} B/cycle/SM");
    let way = num(&out, keys::SMEM_CONFLICT_WAY_CYCLES);
    assert!(way > 0.3 && way < 8.0, "{way} cycles per way");
    let per_sm = num(&out, keys::SMEM_CAPACITY_PER_SM_BYTES);
    let steps = out.findings[keys::SMEM_CARVEOUT_STEPS_BYTES].value.as_array().expect("steps").clone();
    let steps: Vec<f64> = steps.iter().filter_map(|v| v.as_f64()).collect();
    assert!(!steps.is_empty() && steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
    assert!(*steps.last().unwrap() <= per_sm + 256.0, "{steps:?} vs {per_sm}");
    assert_eq!(out.series["smem.conflict_by_stride"].x.len(), 64);
}

/// Atomics: a shared fetch-and-add within tens to a few hundred cycles, a global one at L2 distance
/// (hundreds of cycles), positive rates.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn atomics_probe_latencies_are_plausible() {
    use memscope_core::keys;
    let Some(mut t) = gpu() else { return };
    let out = run_probe(&mut t, &memscope_cuda::probes::AtomicsProbe, &Default::default());
    let s = cycles(&out, keys::ATOMICS_SHARED_LATENCY_NS);
    assert!((8.0..300.0).contains(&s), "shared atomic {s} cycles");
    let g = cycles(&out, keys::ATOMICS_GLOBAL_LATENCY_NS);
    assert!((100.0..4000.0).contains(&g) && g > s, "global atomic {g} cycles");
    for k in [keys::ATOMICS_GLOBAL_SAME_ADDRESS_OPS_PER_S, keys::ATOMICS_GLOBAL_DISTINCT_OPS_PER_S] {
        assert!(num(&out, k) > 1e7, "{k}");
    }
    for k in
        [keys::ATOMICS_SHARED_SAME_ADDRESS_OPS_PER_CYCLE_PER_SM, keys::ATOMICS_SHARED_DISTINCT_OPS_PER_CYCLE_PER_SM]
    {
        let v = num(&out, k);
        assert!(v > 0.01 && v <= 128.0, "{k} = {v}");
    }
}

/// Bandwidth by level: L1 above the L2 write plateau per SM, the one-line rate below the L2 read
/// plateau of l2bw (run first, as in the registry), the ratio then determined.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn levelbw_probe_orders_the_levels() {
    use memscope_core::keys;
    let Some(mut t) = gpu() else { return };
    let alone = run_probe(&mut t, &memscope_cuda::probes::LevelBwProbe, &Default::default());
    assert!(alone.findings[keys::L2_BANDWIDTH_OVER_SLICE_RATIO].value.is_null(), "no l2bw ran: undetermined");
    let l2 = run_probe(&mut t, &memscope_cuda::probes::L2BwProbe, &Default::default());
    let out = run_probe(&mut t, &memscope_cuda::probes::LevelBwProbe, &l2.findings);
    let l1 = num(&out, keys::L1_BANDWIDTH_BYTES_PER_CYCLE_PER_SM);
    assert!((32.0..=512.0).contains(&l1), "L1 {l1} B/cycle/SM");
    let l1_all = num(&out, keys::L1_BANDWIDTH_BYTES_PER_S);
    let w = num(&out, keys::L2_WRITE_BANDWIDTH_BYTES_PER_S);
    let r = num(&l2, keys::L2_BANDWIDTH_BYTES_PER_S);
    assert!(w > 5e11 && w < 5e13, "L2 write plateau {w}");
    assert!(l1_all > r, "L1 {l1_all} must beat the L2 read plateau {r}");
    let ratio = num(&out, keys::L2_BANDWIDTH_OVER_SLICE_RATIO);
    assert!(ratio > 1.0, "{ratio}");
}

/// Bandwidth by parallelism: the rate grows with the bytes in flight and saturates; the 90 % point
/// lies inside the ladder; with chased latencies as earlier findings the notes compare Little's law.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn inflight_probe_saturates_inside_the_ladder() {
    use memscope_core::{keys, Confidence, Finding};
    let Some(mut t) = gpu() else { return };
    let (l2_ns, _) = chase_ns(&mut t, 256, 128, CachePath::L1Bypass, 2);
    let (dram_ns, _) = chase_ns(&mut t, 1 << 20, 256, CachePath::L1Bypass, 0);
    let mut earlier = std::collections::BTreeMap::new();
    earlier.insert(keys::L2_HIT_LATENCY_NS.to_string(), Finding::number(l2_ns, "ns", "chase", Confidence::High));
    earlier.insert(keys::DRAM_LATENCY_NS.to_string(), Finding::number(dram_ns, "ns", "chase", Confidence::High));
    let out = run_probe(&mut t, &memscope_cuda::probes::InflightProbe, &earlier);
    for (key, series) in [
        (keys::DRAM_INFLIGHT_90PCT_PER_SM_BYTES, "inflight.dram_read"),
        (keys::L2_INFLIGHT_90PCT_PER_SM_BYTES, "inflight.l2_read"),
    ] {
        let b = num(&out, key);
        let s = &out.series[series];
        assert!(b >= s.x[0] && b <= *s.x.last().unwrap(), "{key} = {b}");
        assert!(s.y.last().unwrap() > &(4.0 * s.y[0]), "{series}: no rise with parallelism: {:?}", s.y);
        assert!(out.findings[key].note.as_deref().unwrap_or("").contains("Little's law with"), "{key}");
    }
}

/// Run one GPU-only probe by key on a fresh context, no earlier findings, in full mode (the
/// constant and texture probes take about a second each; quick mode left the texture probe's L1
/// level out on the H200).
fn run_probe_by_key(t: &mut CudaTarget, key: &str) -> memscope_core::ProbeOutput {
    let p = memscope_registry::all().into_iter().find(|p| p.key() == key).expect("probe registered");
    let out = session_output(memscope_session::Session::silent(false).run_probes_on(t, [p.as_ref()]));
    for (k, f) in &out.findings {
        eprintln!("{k} = {} {} ({:?}) {}", f.value, f.unit, f.cycles, f.note.clone().unwrap_or_default());
    }
    out
}

/// What the run loop of crates/session produced, as one probe's output; panics naming a failed probe.
fn session_output(run: memscope_session::ProbeRun) -> memscope_core::ProbeOutput {
    let run = run.expect_ok();
    let warnings = run.warnings();
    memscope_core::ProbeOutput { findings: run.findings, series: run.series, warnings }
}

fn value(out: &memscope_core::ProbeOutput, k: &str) -> f64 {
    out.findings.get(k).and_then(|f| f.as_f64()).unwrap_or_else(|| panic!("{k}: {:?}", out.findings.get(k)))
}

/// The constant caches: an L1 hit of a few ns, a slower L1.5, an L1 of 1..16 KiB, a fetch unit
/// of 16..256 B (plausible ranges for NVIDIA GPUs since Volta, not the answer).
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn constmem_probe_finds_two_constant_levels() {
    let Some(mut t) = gpu() else { return };
    let out = run_probe_by_key(&mut t, "constmem");
    let l1 = value(&out, "const.l1.hit_latency_ns");
    let l15 = value(&out, "const.l1_5.hit_latency_ns");
    assert!(l1 > 1.0 && l1 < 40.0, "const L1 {l1}");
    assert!(l15 > 1.2 * l1 && l15 < 200.0, "const L1.5 {l15}");
    let cap = value(&out, "const.l1.capacity_bytes");
    assert!((1024.0..=16384.0).contains(&cap), "const L1 capacity {cap}");
    let unit = value(&out, "const.l1.fetch_bytes");
    assert!((16.0..=256.0).contains(&unit), "fetch {unit}");
    assert!((value(&out, "const.l1.miss_penalty_ns") - (l15 - l1)).abs() < 1e-9);
}

/// The read-only and texture paths: hits within L1's range, capacities of 16 KiB .. 1 MiB, a
/// slower L2 level behind them.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn texture_probe_finds_the_read_only_and_texture_caches() {
    let Some(mut t) = gpu() else { return };
    let out = run_probe_by_key(&mut t, "texture");
    for k in ["tex.nc.hit_latency_ns", "tex.texture.hit_latency_ns", "tex.l1_ca.hit_latency_ns"] {
        let v = value(&out, k);
        assert!(v > 3.0 && v < 100.0, "{k} {v}");
    }
    for k in ["tex.nc.capacity_bytes", "tex.texture.capacity_bytes", "tex.l1_ca.capacity_bytes"] {
        let v = value(&out, k);
        assert!((16384.0..=1048576.0).contains(&v), "{k} {v}");
    }
    for k in ["tex.nc.miss_penalty_ns", "tex.texture.miss_penalty_ns"] {
        let v = value(&out, k);
        assert!(v > 20.0 && v < 1000.0, "{k} {v}");
    }
}

/// Sharing by interference: every path's own kind evicts it (else the finding is undetermined),
/// and the verdicts are lists; instances are 1..4 or undetermined with a reason.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn l1share_probe_reports_what_shares_storage() {
    let Some(mut t) = gpu() else { return };
    let out = run_probe_by_key(&mut t, "l1share");
    // The constant cache's verdict is a list; L1's and the texture paths' are lists or, where
    // the victim's own kind did not evict it (the H200, 2026-12-01), undetermined with that reason.
    assert!(out.findings["const.l1.shared_with"].value.is_array(), "{:?}", out.findings["const.l1.shared_with"]);
    for k in ["l1.shared_with", "tex.nc.shared_with", "tex.texture.shared_with"] {
        let f = &out.findings[k];
        assert!(f.value.is_array() || f.note.as_deref().is_some_and(|n| n.contains("did not evict")), "{k}: {f:?}");
    }
    for k in ["l1.instances_per_sm", "const.l1.instances_per_sm"] {
        let f = &out.findings[k];
        match f.value.as_u64() {
            Some(n) => assert!((1..=4).contains(&n), "{k}: {f:?}"),
            None => assert!(f.note.is_some(), "{k}: {f:?}"),
        }
    }
}

/// The link probe (docs/INTERCONNECT.md) on the GPU, --quick: every test's plateau is a positive rate with a
/// series, the chase over host memory is slower than any on-device latency (> 300 ns), the host's
/// own pageable <-> pinned copy is measured and named in the pageable lines' notes, and on a
/// one-GPU host the peer matrix is waived.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn link_probe_measures_the_host_link() {
    use memscope_core::keys;
    let Some(mut t) = gpu() else { return };
    let probe = memscope_cuda::probes::LinkProbe;
    let out = session_output(
        memscope_session::Session::silent(true).run_probes_on(&mut t, [&probe as &dyn memscope_core::Probe]),
    );
    for name in memscope_cuda::probes::LINK_TEST_NAMES {
        let v = out.findings[&keys::link_bytes_per_s(name)].as_f64().unwrap();
        assert!(v > 1e9 && v < 1e12, "{name}: {v}");
        assert!(out.series.contains_key(&format!("link.{name}")), "{name}");
    }
    let lat = out.findings[keys::LINK_HOST_DEVICE_LATENCY_NS].as_f64().unwrap();
    assert!(lat > 300.0 && lat < 20_000.0, "host_device_latency_sm {lat} ns");
    let rt = out.findings[keys::LINK_HOST_ROUND_TRIP_NS].as_f64().unwrap();
    assert!(rt > 1000.0, "round trip {rt} ns");
    // The host's own copy between the pageable and pinned buffers, and its figure in the notes.
    for k in
        [keys::LINK_HOST_MEMCPY_PAGEABLE_TO_PINNED_BYTES_PER_S, keys::LINK_HOST_MEMCPY_PINNED_TO_PAGEABLE_BYTES_PER_S]
    {
        let v = out.findings[k].as_f64().unwrap();
        assert!(v > 1e8 && v < 1e12, "{k}: {v}");
    }
    for name in ["host_to_device_memcpy_ce_pageable", "device_to_host_memcpy_ce_pageable"] {
        let note = out.findings[&keys::link_bytes_per_s(name)].note.clone().unwrap_or_default();
        assert!(note.contains("the host's own"), "{name}: {note}");
    }
    if memscope_cuda::device_count().unwrap() == 1 {
        assert_eq!(t.info().details["host_gpus"], serde_json::json!(1));
        assert!(t.peer_links().is_none(), "one GPU: no peer instrument");
    }
}

/// The per-SM L2 map: every SM has an L1 control faster than its warm L2 hit; where the first
/// touches split in two modes, the far hit is slower than the near one on every SM of the series,
/// and the groups cover each SM at most once.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn sm_map_probe_maps_every_sm() {
    let Some(mut t) = gpu() else { return };
    let sms = t.info().units as usize;
    let out = run_probe_by_key(&mut t, "l2.sm_map");
    let l1 = &out.series["l2.sm_map.l1_control"];
    assert_eq!(l1.x.len(), sms, "an L1 control for every SM");
    let warm = value(&out, "l2.sm_map.warm_hit_latency_ns");
    assert!(l1.y.iter().all(|&y| y > 1.0 && y < warm), "L1 {:?} vs warm L2 {warm}", l1.y);
    if let Some(groups) = out.findings["l2.sm_map.groups"].value.as_array() {
        let mut seen = std::collections::HashSet::new();
        for g in groups {
            for sm in g["sms"].as_array().expect("sms") {
                assert!(seen.insert(sm.as_u64().expect("an SM id")), "SM {sm} in two groups");
            }
        }
        let near = value(&out, "l2.sm_map.near_hit_latency_ns");
        let far = value(&out, "l2.sm_map.far_hit_latency_ns");
        assert!(far > 1.2 * near && near > 0.5 * warm, "near {near}, far {far}, warm {warm}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn the_kernel_cache_warming_loads_every_module_beside_the_targets_own_work() {
    let Some(mut t) = gpu() else { return };
    let arch = t.gpu().arch();
    let modules = &memscope_cuda::prewarm::warmed();
    let report = memscope_cuda::gpu::warm::warm_module_cache(0, &arch, modules).expect("the primary context");
    assert!(report.failed.is_empty(), "modules that did not load: {:?}", report.failed);
    assert!(report.threads >= 1 && report.threads <= memscope_cuda::gpu::warm::MAX_WARM_THREADS, "{report:?}");
    // On its thread, while the target chases on the same primary context.
    t.warm_kernels_in_background();
    let (ns, _) = chase_ns(&mut t, 256, 128, CachePath::L1Cached, 2);
    assert!(ns > 1.0 && ns < 1000.0, "L1 chase beside the warming: {ns} ns");
    drop(t);
}

/// The L2 partition bit over whole pages: where SM 0 and an SM of the other group split the lines,
/// a mask over the page offset's line bits predicts at least 99 % of the held-out lines, and on an
/// H200 it is the mask the independent peer found (results/h200/l2-partition: 0xab000); where
/// they do not, the mask is undetermined with the reason. The probe takes a few seconds at most.
#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn partition_probe_fits_the_offset_mask() {
    let Some(mut t) = gpu() else { return };
    let name = t.info().name;
    let out = run_probe_by_key(&mut t, "l2.partition");
    let secs = value(&out, "l2.partition.probe_seconds");
    assert!(secs > 0.0 && secs < 30.0, "{secs} s");
    let mask = &out.findings["l2.partition.offset_mask"];
    match mask.value.as_str() {
        Some(hex) => {
            let m = u64::from_str_radix(hex.trim_start_matches("0x"), 16).expect("a hex mask");
            assert!(m != 0 && m & !0x1f_ff80 == 0, "{hex}: not over the offset's line bits 7..20");
            let acc = value(&out, "l2.partition.held_out_accuracy");
            assert!(acc >= 0.99, "held-out accuracy {acc}");
            let sms = out.findings["l2.partition.sms"].value.as_array().expect("two SMs").clone();
            assert_eq!(sms.len(), 2);
            assert_eq!(sms[0], 0);
            assert_ne!(sms[1], 0);
            let labelled = value(&out, "l2.partition.lines_labelled");
            assert!(labelled > 0.9 * 2.0 * 16.0 * 16384.0, "{labelled} lines labelled");
            if name.contains("H200") {
                assert_eq!(hex, "0xab000", "the peer's mask on the H200");
            }
        }
        None => assert!(!mask.note.clone().unwrap_or_default().is_empty(), "undetermined without a reason"),
    }
}
