//! Tables of `memscope batch --compose` (docs/MODEL.md): the composition's ceilings, the summary of every
//! measured step against the composition and seed 003's two compositions, where the time goes by
//! kernel kind (predicted, bounding term, measured event times), the scores and the inputs.

use crate::cmd_predict::fmt_s;
use memscope_cuda::ops::compose::{ComposeRun, GroupScore};

fn ms(s: f64) -> String {
    format!("{:.3} ms", s * 1e3)
}

fn print_ceilings(r: &ComposeRun) {
    let c = &r.compose_ceilings.ceilings;
    println!("\nComposition ceilings (this session, none measured on a predicted operation):");
    println!("  isolated launch (launch + sync)   {}", fmt_s(c.isolated_launch_s));
    for (k, v) in &c.host_issue_s {
        println!("  host issue per launch, {k:<10} {}", fmt_s(*v));
    }
    for (k, v) in &c.host_issue_idle_s {
        println!("  host issue, device idle, {k:<8} {}", fmt_s(*v));
    }
    println!("  host issue per graph launch       {}", fmt_s(c.host_issue_graph_s));
    println!("  device gap per kernel, stream     {}", fmt_s(c.gap_stream_s));
    println!("  device gap per kernel, graph      {}", fmt_s(c.gap_graph_s));
    println!("  graph replay overhead             {}", fmt_s(c.graph_overhead_s));
    println!("  minimum work, DRAM / L2           {} / {}", fmt_s(c.min_work_s), fmt_s(c.min_work_l2_s));
    for (k, v) in &c.step_latency_s {
        let by: Vec<String> = v.iter().map(|p| format!("{:.0}: {}", p.blocks, fmt_s(p.step_s))).collect();
        println!("  dependent step {k:<9} by blocks {}", by.join(", "));
    }
    println!("  {:>16} {:>12} {:>12}", "bytes in flight", "DRAM read", "L2 read");
    for (d, l) in c.dram_curve.iter().zip(&c.l2_curve) {
        println!(
            "  {:>13.0} KiB {:>9.0} GB/s {:>9.0} GB/s",
            d.bytes_in_flight / 1024.0,
            d.bytes_per_s / 1e9,
            l.bytes_per_s / 1e9
        );
    }
    println!("  {:>16} {:>12}", "bytes in flight", "DRAM, 8-byte loads");
    for d in &c.dram_curve_8b {
        println!("  {:>13.0} KiB {:>9.0} GB/s", d.bytes_in_flight / 1024.0, d.bytes_per_s / 1e9);
    }
    for dtype in ["fp32", "fp16"] {
        for aligned in [true, false] {
            let e: Vec<f64> = c
                .matmul
                .iter()
                .zip(&r.compose_ceilings.calibration)
                .filter(|(s, _)| s.shape.dtype.name() == dtype && s.shape.aligned_16_bytes() == aligned)
                .map(|(_, p)| p.efficiency)
                .collect();
            let (lo, hi) = e.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
            let class = if aligned { "16-byte-aligned rows" } else { "unaligned rows" };
            println!(
                "  matmul calibration {dtype}, {class}: {} shapes, efficiency {:.1}%..{:.1}%",
                e.len(),
                100.0 * lo,
                100.0 * hi
            );
        }
    }
}

fn print_score(s: &GroupScore) {
    let st = |x: &Option<memscope_model::bottleneck::RatioStats>| match x {
        Some(v) => format!("median {:.2}, range {:.2}-{:.2}", v.median_ratio, v.min_ratio, v.max_ratio),
        None => "-".into(),
    };
    println!(
        "  {:<28} composition: {} ({:.0}% within 1.5x) | seed per-kernel: {} | max of totals: {}",
        s.group,
        st(&s.composition),
        100.0 * s.within_1_5x,
        st(&s.seed_per_kernel),
        st(&s.seed_max_of_totals)
    );
}

pub fn print(r: &ComposeRun) {
    print_ceilings(r);
    println!("\nWhere the time goes (eager steps at batch 1, 64, 512): kind x count: predicted (bound: kernels) / measured events");
    let pick = |x: &&memscope_cuda::ops::compose::SweepRow| {
        x.mode == memscope_model::compose::LaunchMode::Stream && [1, 64, 512].contains(&x.batch)
    };
    for row in r.rows.iter().filter(pick) {
        let p = &row.prediction;
        println!(
            "  {} {} T={} b={}: measured {}, predicted {} = gaps {} + work {} + exposed host {} (host {})",
            row.model,
            row.dtype,
            row.context,
            row.batch,
            ms(row.measured.per_call_s),
            ms(p.time_s),
            ms(p.launch_gaps_s),
            ms(p.work_s),
            ms(p.exposed_host_s),
            ms(p.host_s)
        );
        for k in &row.attribution {
            let bounds: Vec<String> = k.bounds.iter().map(|(b, n)| format!("{b} {n}")).collect();
            println!(
                "    {:<15} x{:<3} {:>10} ({}) / {:>10}",
                k.kind,
                k.count,
                ms(k.predicted_s),
                bounds.join(", "),
                ms(k.measured_events_s)
            );
        }
    }
    println!(
        "\n{:<12} {:>5} {:<5} {:>5} {:<6} {:>10} {:>10} {:>6} {:>10} {:>6} {:>10} {:>6}",
        "model", "ctx", "dtype", "batch", "launch", "measured", "compose", "x", "seed p-k", "x", "seed max", "x"
    );
    for x in &r.rows {
        println!(
            "{:<12} {:>5} {:<5} {:>5} {:<6} {:>10} {:>10} {:>6.2} {:>10} {:>6.2} {:>10} {:>6.2}",
            x.model,
            x.context,
            x.dtype,
            x.batch,
            format!("{:?}", x.mode).to_lowercase(),
            ms(x.measured.per_call_s),
            ms(x.predicted_s),
            x.ratio,
            ms(x.seed_per_kernel_s),
            x.seed_per_kernel_ratio,
            ms(x.seed_max_of_totals_s),
            x.seed_max_of_totals_ratio
        );
    }
    println!("\nScores (measured / predicted):");
    for s in &r.scores {
        print_score(s);
    }
    for e in &r.errors {
        println!("FAILED: {e}");
    }
    println!("\nPrediction inputs (the composition takes these and the operation counts, nothing else):");
    for (k, v) in &r.prediction_inputs {
        println!("  {k}: {v}");
    }
}
