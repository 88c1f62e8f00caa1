//! GPU tests of the `l2.slices` child (crates/cuda/src/probes/slices/hammer.rs, timing.rs) reading
//! its own counters through CUPTI's range profiler (crates/gpu/src/profiler.rs). `#[ignore]`d: run
//! by scripts/gpu-test.sh on a GPU machine (which puts the toolkit's libcupti on LD_LIBRARY_PATH);
//! without a GPU or without libcupti they print why they skipped. Known answers: one range per
//! launch in launch order, each operation's sectors only in its own counter, twice the accesses
//! twice the sectors, the anchor's slice holding the max, and a timed lap over the plan's lines.

use memscope_cuda::probes::slices_hammer::{self, CounterSource, HammerOp, HammerPlan};

fn ready() -> bool {
    match memscope_cuda::device_count() {
        Ok(n) if n > 0 => {}
        _ => {
            eprintln!("skipped: no CUDA GPU");
            return false;
        }
    }
    if !memscope_cuda::gpu::profiler::cupti_present() {
        eprintln!("skipped: libcupti cannot be loaded (put the toolkit's extras/CUPTI/lib64 on LD_LIBRARY_PATH)");
        return false;
    }
    true
}

const METRICS: [&str; 6] = [
    "lts__t_sectors_srcunit_tex_op_read.max",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_atom.max",
    "lts__t_sectors_srcunit_tex_op_atom.sum",
    "lts__t_sectors_srcunit_tex_op_red.sum",
    "lts__t_sectors_srcunit_tex_op_read.avg",
];

#[test]
#[ignore = "needs a CUDA GPU; run scripts/gpu-test.sh"]
fn cupti_counts_each_launch_and_each_operation_apart() {
    if !ready() {
        return;
    }
    use HammerOp::*;
    let unit = 256;
    let plan = HammerPlan {
        sm: Some(0),
        warps: 32,
        pages: 1,
        kernels: vec![
            vec![(0, 4 * unit, Read)],
            vec![(0, 8 * unit, Read)],
            vec![(128, 4 * unit, Atom)],
            // Anchor 0 (weight 4) and line 4096 (weight 1): the max is the anchor's slice, 4 or 5 units.
            vec![(0, 4 * unit, Read), (4096, unit, Read)],
            // Eight more lines, so the timed lap has enough to split.
            (3..11).map(|i| (i * 2048, unit, Read)).collect(),
        ],
        counters: CounterSource::Cupti,
        metrics: METRICS.iter().map(|s| s.to_string()).collect(),
        time_sms: vec![0],
        time_reps: 1,
    };
    let r = slices_hammer::run(0, &plan).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("passes {}, records {:?}", r.passes, r.records);
    for (rec, v) in r.records.iter().zip(&r.values) {
        eprintln!("kernel {}: {v:?}", rec.kernel);
    }
    assert_eq!(r.values.len(), r.records.len(), "one range per launch");
    assert!(r.passes >= 1);
    let by_kernel = |k: usize| &r.values[r.records.iter().rposition(|x| x.kernel == k && x.cycles > 0).unwrap()];
    let (k0, k1, k2, k3) = (by_kernel(0), by_kernel(1), by_kernel(2), by_kernel(3));
    // Reads: twice the accesses, twice the sectors (a few stray sectors allowed).
    let ratio = k1[1] / k0[1];
    assert!((ratio - 2.0).abs() < 0.05, "read sums {} and {}", k0[1], k1[1]);
    assert!(k0[1] > 0.0 && k0[0] <= k0[1] + 0.5);
    // Atomics only in the atomic counter, reads only in the read counter.
    assert!(k0[3] < 0.01 * k0[1] + 8.0, "atomics counted in a read kernel: {k0:?}");
    assert!(k2[3] >= 4.0 * unit as f64 * 0.99, "atomic sectors {} (one per access)", k2[3]);
    assert!(k2[1] < 0.01 * k2[3] + 16.0, "reads counted in an atomic kernel: {k2:?}");
    // The anchor's slice holds the max: 4 or 5 units of the read scale.
    let scale = k0[1] / (4 * unit) as f64;
    let units = k3[0] / scale / unit as f64;
    assert!((units - 4.0).abs() < 0.25 || (units - 5.0).abs() < 0.25, "anchor max {units} units");
    // The timed lap: every line of the plan once, first touches recorded.
    assert_eq!(r.timing.len(), 1);
    let lap = &r.timing[0];
    assert_eq!(lap.lines.len(), 11);
    assert!(lap.first_touch.iter().all(|&c| c > 0) && lap.warm.iter().all(|&c| c > 0), "{lap:?}");
}
