//! Tables of `memscope ceilings|model|fusion|batch` (seed 003): the session's ceilings as the
//! probes found them (bandwidth by buffer size and the sustained figures, the empty kernel's and
//! every class's launch floor, peaks), the 58 points with their summary by regime and the kernel
//! efficiency checks, fusion, and the batched decode step.

use crate::cmd_predict::fmt_s;
use memscope_core::{keys, Finding};
use memscope_cuda::ops::{batch, fusion, model_set};
use memscope_results::model_section::ModelSection;
use memscope_results::Results;

fn gbs(x: f64) -> String {
    format!("{:.0} GB/s", x / 1e9)
}

pub fn human_bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{} GiB", b >> 30)
    } else if b >= 1 << 20 {
        format!("{} MiB", b >> 20)
    } else {
        format!("{} KiB", b >> 10)
    }
}

/// "min..max" of a finding's spread, in `fmt`.
fn range(f: &Finding, fmt: impl Fn(f64) -> String) -> String {
    f.spread.as_ref().map(|s| format!("{}..{}", fmt(s.min), fmt(s.max))).unwrap_or_else(|| "-".into())
}

/// The ceilings table: what the probes bw, launch and peak found, and which finding feeds which
/// ceiling of the model.
pub fn print_ceilings(doc: &Results, section: &ModelSection) {
    println!(
        "\nCeilings of this session ({}, {}), from the findings of probes bw, launch, peak",
        doc.target.id, doc.target.name
    );
    let series: Vec<_> = ["copy", "read", "write"].iter().map(|p| doc.series.get(&format!("bw.{p}"))).collect();
    if let Some(first) = series.iter().flatten().next() {
        println!("{:>12} {:>12} {:>12} {:>12}", "buffer", "copy", "read", "write");
        for x in &first.x {
            let cell = |s: &Option<&memscope_core::Series>| {
                s.and_then(|s| s.x.iter().position(|v| v == x).map(|j| gbs(s.y[j]))).unwrap_or_default()
            };
            println!(
                "{:>12} {:>12} {:>12} {:>12}",
                human_bytes(*x as u64),
                cell(&series[0]),
                cell(&series[1]),
                cell(&series[2])
            );
        }
    }
    let find = |k: &str| doc.findings.get(k);
    for p in ["copy", "read", "write"] {
        if let Some(f) = find(&keys::bw_bytes_per_s(p)) {
            println!(
                "bandwidth {p:<6} {:>10}   (repetitions {})",
                f.as_f64().map(gbs).unwrap_or_default(),
                range(f, gbs)
            );
        }
    }
    for (label, key) in [("empty kernel", keys::LAUNCH_FLOOR_S), ("CUDA graph", keys::LAUNCH_GRAPH_FLOOR_S)] {
        if let Some(f) = find(key) {
            println!("launch floor {label:<12} {:>10}", f.as_f64().map(fmt_s).unwrap_or_default());
        }
    }
    for class in keys::LAUNCH_CLASSES {
        if let Some(f) = find(&keys::launch_class_floor_s(class)) {
            let op = f.method.split_once('(').and_then(|(_, r)| r.split_once(')')).map(|(o, _)| o).unwrap_or("");
            println!(
                "launch floor {class:<12} {:>10}   (repetitions {}; {op})",
                f.as_f64().map(fmt_s).unwrap_or_default(),
                range(f, fmt_s)
            );
        }
    }
    let tf = |x: f64| format!("{:.1} TFLOP/s", x / 1e12);
    for p in ["fp32", "fp16", "bf16"] {
        if let Some(f) = find(&keys::peak_flops_per_s(p)) {
            println!("peak {p:<5} {:>14}   (repetitions {})", f.as_f64().map(tf).unwrap_or_default(), range(f, tf));
        }
    }
    println!("the model's ceilings ({} inputs, per-class launch floors only):", section.inputs.len());
    for i in &section.inputs {
        println!("  {:<30} <- {}", i.ceiling, i.key);
    }
    for l in &section.left_out {
        println!("  left out: {} ({})", l.key, l.reason);
    }
}

pub fn print_model(r: &model_set::ModelRun) {
    println!(
        "\n{:<34} {:>11} {:>11} {:>8} {:>6} {:>10}",
        "operation", "predicted", "measured", "regime", "ratio", "achieved"
    );
    for p in &r.points {
        println!(
            "{:<34} {:>11} {:>11} {:>8} {:>6.2} {:>10}",
            p.operation,
            fmt_s(p.prediction.time_s),
            fmt_s(p.measured.per_call_s),
            p.prediction.regime.name(),
            p.ratio,
            gbs(p.achieved_bytes_per_s)
        );
    }
    if let Some(s) = &r.summary {
        println!(
            "\n{:<10} {:>6} {:>8} {:>10} {:>10} {:>14}",
            "regime", "points", "median", "within25%", "within2x", "faster>5%"
        );
        let row = |name: &str, st: &memscope_model::bottleneck::RatioStats| {
            println!(
                "{:<10} {:>6} {:>8.3} {:>9.0}% {:>9.0}% {:>13.0}%",
                name,
                st.count,
                st.median_ratio,
                100.0 * st.within_25pct,
                100.0 * st.within_2x,
                100.0 * st.faster_than_bound
            )
        };
        row("all", &s.all);
        for (k, st) in &s.by_regime {
            row(k, st);
        }
    }
    println!("\nrow kernels: {}", r.rows_kernel);
    println!("kernel efficiency at the 58 set's largest sizes (achieved / pattern ceiling):");
    for k in &r.kernels {
        println!(
            "  {:<40} {:>10} / {:>10} ({}) = {:.1}%",
            k.operation,
            gbs(k.achieved_bytes_per_s),
            gbs(k.ceiling_bytes_per_s),
            k.pattern,
            100.0 * k.fraction
        );
    }
    println!(
        "kernel-efficiency check at large sizes (buffers >= the ceilings' sustained minimum, best of those sizes):"
    );
    for k in &r.kernels_large {
        let sizes: Vec<String> = k
            .points
            .iter()
            .map(|p| format!("{} {}", human_bytes(p.buffer_bytes), gbs(p.achieved_bytes_per_s)))
            .collect();
        println!(
            "  {:<10} {:<5} {:>10} / {:>10} ({}) = {:.1}%   [{}]",
            k.kernel,
            k.dtype,
            gbs(k.achieved_bytes_per_s),
            gbs(k.ceiling_bytes_per_s),
            k.pattern,
            100.0 * k.fraction,
            sizes.join(", ")
        );
    }
}

pub fn print_fusion(f: &fusion::FusionRun) {
    println!(
        "\n{:<6} {:>12} {:>12} {:>10} {:>10} {:>12} {:>10}",
        "dtype", "two kernels", "fused", "ratio", "predicted", "fused BW", "of ceiling"
    );
    for r in &f.rows {
        println!(
            "{:<6} {:>12} {:>12} {:>10.3} {:>10.3} {:>12} {:>9.1}%",
            r.dtype,
            fmt_s(r.two_kernels.per_call_s),
            fmt_s(r.fused.per_call_s),
            r.measured_ratio,
            r.predicted_ratio,
            gbs(r.fused_bytes_per_s),
            100.0 * r.fused_fraction_of_ceiling
        );
    }
    println!(
        "fp16 speed-up over fp32: two kernels {:.2}x, fused {:.2}x",
        f.fp16_speedup_two_kernels, f.fp16_speedup_fused
    );
}

pub fn print_batch(b: &batch::BatchRun) {
    println!(
        "\ndecode step, GPT-2 small fp32, context {}: {} launches, step floor {} (class floors summed), read BW {}, fp32 peak {:.1} TFLOP/s",
        b.context,
        b.launches_per_step,
        fmt_s(b.step_launch_floor_s),
        gbs(b.bandwidth_bytes_per_s),
        b.peak_flops_per_s / 1e12
    );
    println!(
        "{:>5} {:>11} {:>11} {:>10} {:>11} {:>6} {:>11} {:>6} {:>11} {:>6}",
        "batch", "step", "graph", "tok/s", "totals", "x", "per-kernel", "x", "kernel sum", "x"
    );
    for r in &b.rows {
        println!(
            "{:>5} {:>11} {:>11} {:>10.0} {:>11} {:>6.2} {:>11} {:>6.2} {:>11} {:>6.2}",
            r.batch,
            fmt_s(r.step.per_call_s),
            r.step_graph_s.map(fmt_s).unwrap_or("-".into()),
            r.tokens_per_s,
            fmt_s(r.max_of_totals.time_s),
            r.ratio_max_of_totals,
            fmt_s(r.per_kernel_seed.time_s),
            r.ratio_per_kernel,
            fmt_s(r.kernel_sum_s),
            r.ratio_kernel_sum
        );
    }
    if let Some(e) = &b.graph_error {
        println!("(graph capture failed: {e})");
    }
}
