//! A synthetic results document for testing the writers (tables, HTML, Markdown, CSV) without a
//! run. Its numbers are the RTX 4090 per-stage costs quoted in seed 000 (L1 15.4 ns, TLB miss
//! 4.4 ns, L2 127.4 ns, DRAM 255.4 ns) on made-up curves; the target is named "fixture" so nobody
//! mistakes it for a measurement. Real reports come from `memscope run`.

use crate::results::{ProbeRecord, ProbeStatus, Results, ToolInfo};
use memscope_core::{Confidence, Finding, Series, Spread, TargetInfo};
use serde_json::{json, Map};

fn spread(x: f64, rel: f64) -> Spread {
    Spread { mad: x * rel, min: x * (1.0 - 3.0 * rel), max: x * (1.0 + 4.0 * rel), ci95: None, n: 7 }
}

fn lat(v: f64, cyc: f64, method: &str) -> Finding {
    Finding::number(v, "ns", method, Confidence::High).with_spread(spread(v, 0.004)).with_cycles(cyc)
}

/// Latency versus footprint with plateaus at the given (capacity, ns) levels, smoothed steps.
fn latency_curve(levels: &[(f64, f64)], tail_ns: f64) -> (Vec<f64>, Vec<f64>) {
    let mut x = Vec::new();
    let mut y = Vec::new();
    let mut f = 4096.0f64;
    while f <= 1024.0 * 1024.0 * 1024.0 {
        let mut v = tail_ns;
        for &(cap, ns) in levels.iter().rev() {
            let r = f / cap;
            if r <= 1.0 {
                v = ns;
            } else if r < 1.5 {
                v = ns + (v - ns) * (r - 1.0) * 2.0;
            }
        }
        x.push(f);
        y.push(v);
        f *= 2f64.powf(0.25);
    }
    (x, y)
}

#[allow(clippy::too_many_arguments)]
fn series(desc: &str, xn: &str, xu: &str, yn: &str, yu: &str, x: Vec<f64>, y: Vec<f64>, marks: Vec<f64>) -> Series {
    Series {
        description: desc.into(),
        x_name: xn.into(),
        x_unit: xu.into(),
        y_name: yn.into(),
        y_unit: yu.into(),
        y_spread: Some(y.iter().map(|v| v * 0.01).collect()),
        x,
        y,
        marks,
    }
}

/// The fixture.
pub fn results() -> Results {
    let target = TargetInfo {
        kind: "sim".into(),
        id: "sim:fixture".into(),
        name: "fixture (seed-000 RTX 4090 numbers, not a measurement)".into(),
        clock_hz: Some(2.52e9),
        bypass_supported: true,
        aliasing_supported: true,
        per_hop_supported: true,
        gpu_hierarchy: true,
        units: 128,
        capabilities: memscope_core::Capabilities::simulated_gpu(),
        details: Map::new(),
    };
    let tool = ToolInfo {
        name: "memscope".into(),
        version: "0.1.0".into(),
        git_commit: Some("0000000000fixture".into()),
        command: vec!["memscope".into(), "run".into(), "--target".into(), "sim:fixture".into()],
    };
    let mut env = Map::new();
    env.insert("host".into(), json!("fixture-host"));
    env.insert("started_at".into(), json!("2026-01-01T00:00:00Z"));
    let mut r = Results::new(tool, target, env);
    let chase = "pointer chase, 20000 hops, median of 7";
    let f = &mut r.findings;
    f.insert("l1.hit_latency_ns".into(), lat(15.4, 38.8, chase));
    f.insert(
        "l1.capacity_bytes".into(),
        Finding::integer(131072, "bytes", "knee of latency.l1_cached", Confidence::High),
    );
    f.insert("l1.line_bytes".into(), Finding::integer(128, "bytes", "stride sweep", Confidence::High));
    f.insert("l1.sector_bytes".into(), Finding::integer(32, "bytes", "stride sweep", Confidence::Medium));
    f.insert("l1.ways".into(), Finding::integer(4, "ways", "eviction set size", Confidence::High));
    f.insert("l1.sets".into(), Finding::integer(256, "sets", "capacity / ways / line", Confidence::High));
    f.insert("l1.indexing".into(), Finding::text("virtual", "aliased mappings", Confidence::High));
    f.insert("tlb.l1.entries".into(), Finding::integer(16, "entries", "page-stride chase", Confidence::Medium));
    f.insert("tlb.l1.miss_ns".into(), lat(4.4, 11.1, chase));
    f.insert("tlb.page_bytes".into(), Finding::integer(2097152, "bytes", "page-stride chase", Confidence::High));
    f.insert("l2.hit_latency_ns".into(), lat(127.4, 321.0, chase));
    f.insert(
        "l2.capacity_bytes".into(),
        Finding::integer(75497472, "bytes", "knee of latency.l1_bypass", Confidence::High),
    );
    f.insert("l2.ways".into(), Finding::integer(16, "ways", "eviction set size", Confidence::Medium));
    f.insert("l2.indexing".into(), Finding::text("physical", "aliased mappings", Confidence::High));
    f.insert("dram.latency_ns".into(), lat(255.4, 643.6, chase));
    f.insert(
        "dram.row_bytes".into(),
        Finding::undetermined("bytes", "row-conflict chase", "no bimodal split in per-hop times"),
    );
    f.insert("dram.refresh_stall_ns".into(), lat(210.0, 529.2, "per-hop chase, tail of the histogram"));
    f.insert("bw.read_bytes_per_s".into(), Finding::number(9.1e11, "bytes/s", "read kernel, 1 GiB", Confidence::High));
    f.insert("launch.floor_s".into(), Finding::number(2.9e-6, "s", "empty kernel, median of 200", Confidence::High));
    f.insert("peak.fp32_flops_per_s".into(), Finding::number(8.26e13, "flops/s", "FMA chain", Confidence::Medium));
    f.insert("cpu.l1d.capacity_bytes".into(), Finding::integer(49152, "bytes", "knee", Confidence::High));

    let (x, y) = latency_curve(&[(131072.0, 15.4), (75497472.0, 127.4)], 255.4);
    let s = &mut r.series;
    s.insert(
        "latency.l1_cached".into(),
        series(
            "chase latency, L1-cached loads",
            "footprint",
            "bytes",
            "latency",
            "ns",
            x,
            y,
            vec![131072.0, 75497472.0],
        ),
    );
    let (x, y) = latency_curve(&[(75497472.0, 127.4)], 255.4);
    s.insert(
        "latency.l1_bypass".into(),
        series("chase latency, L1-bypassing loads", "footprint", "bytes", "latency", "ns", x, y, vec![75497472.0]),
    );
    let sizes: Vec<f64> = (12..31).map(|e| 2f64.powi(e)).collect();
    for (k, peak) in [("bw.read", 9.1e11), ("bw.write", 8.7e11), ("bw.copy", 8.9e11)] {
        let y = sizes.iter().map(|&b| peak * b / (b + 2.6e6)).collect();
        s.insert(k.into(), series(k, "buffer size", "bytes", "bandwidth", "bytes/s", sizes.clone(), y, vec![]));
    }
    let strides: Vec<f64> = (0..10).map(|e| 2f64.powi(e)).collect();
    let gbs = strides.iter().map(|&st| if st < 128.0 { 2e9 * st / 64.0 } else { 4e9 * st / 64.0 }).collect();
    s.insert(
        "cpu.stride".into(),
        series("strided copy, one byte every N", "stride", "bytes", "bandwidth", "bytes/s", strides, gbs, vec![128.0]),
    );
    let bins: Vec<f64> = (0..40).map(|i| 240.0 + 10.0 * i as f64).collect();
    let counts = bins
        .iter()
        .map(|&b| {
            if b < 270.0 {
                9000.0
            } else if (440.0..480.0).contains(&b) {
                40.0
            } else {
                2.0
            }
        })
        .collect();
    s.insert(
        "dram.refresh_hist".into(),
        series("per-hop DRAM latency histogram", "hop latency", "ns", "hops", "count", bins, counts, vec![]),
    );
    let rec = |status, reason: Option<&str>| ProbeRecord {
        target: "sim:fixture".into(),
        status,
        reason: reason.map(String::from),
        duration_s: 1.5,
        warnings: vec![],
    };
    r.probes.insert("latency@sim:fixture".into(), rec(ProbeStatus::Ok, None));
    r.probes.insert("fence@sim:fixture".into(), rec(ProbeStatus::Waived, Some("needs a real GPU")));
    r.probes.insert("dram_row@sim:fixture".into(), rec(ProbeStatus::Failed, Some("fixture: an example failure")));
    r
}
