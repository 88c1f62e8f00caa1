//! `memscope ceilings|model|fusion|batch`: the bottleneck model on a GPU (seed 003). Wiring only:
//! the measurements are `memscope_cuda::ops`; every command checks the kernels first, measures the
//! ceilings in its own session, writes JSON (with provenance and NVML clocks before and after)
//! and prints tables.

use crate::cmd_predict::fmt_s;
use crate::error::{CliError, CliResult};
use memscope_cuda::ops::{batch, ceilings, check, compose, device::OpsGpu, fusion, model_set};
use serde_json::{json, Value};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct CeilingsArgs {
    /// Write the ceilings JSON here (usable by `memscope predict --ceilings`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// No per-point log on stderr.
    #[arg(long)]
    pub quiet: bool,
}
#[derive(clap::Args, Debug)]
pub struct ModelArgs {
    /// Write the results JSON here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Also run the fusion and batch experiments against the same session's ceilings.
    #[arg(long)]
    pub all: bool,
    /// Only the kernel-efficiency checks (checks, ceilings, efficiency; no 58 points, no --all).
    #[arg(long, conflicts_with = "all")]
    pub efficiency_only: bool,
    #[arg(long)]
    pub quiet: bool,
}
#[derive(clap::Args, Debug)]
pub struct FusionArgs {
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    #[arg(long)]
    pub quiet: bool,
}
#[derive(clap::Args, Debug)]
pub struct BatchArgs {
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The composition sweep of issue 22 instead of the seed's: its ceilings (launch throughput on a
    /// stream and in a graph, bandwidth by bytes in flight, matrix-product calibration on other
    /// shapes), GPT-2 small at contexts 128 and 1,024, fp32 and fp16, eager and graph, and the
    /// out-of-sample GPT-2-medium shape; the seed's two compositions beside it.
    #[arg(long)]
    pub compose: bool,
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    #[arg(long)]
    pub quiet: bool,
}

/// Progress as one stderr line per message.
struct Log(bool);
impl memscope_core::Progress for Log {
    fn start(&self, total: u64, message: &str) {
        if !self.0 {
            eprintln!("[{message}: {total} steps]");
        }
    }
    fn advance(&self, _n: u64) {}
    fn message(&self, message: &str) {
        if !self.0 {
            eprintln!("  {message}");
        }
    }
}

/// Open the GPU and run the correctness checks; any failed check ends the command.
fn open(device: usize, log: &Log) -> Result<(OpsGpu<'static>, Vec<check::Check>), CliError> {
    let g = OpsGpu::open(device)?;
    let checks = check::run_all(&g)?;
    use memscope_core::Progress;
    for c in &checks {
        log.message(&format!("check {}: rel err {:.2e} ({})", c.kernel, c.rel_err, if c.ok { "ok" } else { "FAILED" }));
    }
    if let Some(bad) = checks.iter().find(|c| !c.ok) {
        let (kernel, rel_err, tolerance) = (bad.kernel.clone(), bad.rel_err, bad.tolerance);
        return Err(memscope_cuda::GpuError::Check { kernel, rel_err, tolerance }.into());
    }
    Ok((g, checks))
}

fn clocks(device: usize) -> Value {
    memscope_cuda::nvml::read(device, None).map(|r| r.to_json()).unwrap_or(Value::Null)
}

fn envelope(
    command: &str,
    g: &OpsGpu,
    clocks_before: Value,
    checks: &[check::Check],
) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("schema".into(), json!("memscope/bottleneck-model/1"));
    m.insert("command".into(), json!(command));
    m.insert("tool".into(), serde_json::to_value(crate::provenance::tool()).unwrap_or(Value::Null));
    m.insert("environment".into(), Value::Object(crate::provenance::environment()));
    m.insert("device".into(), json!({"name": g.name, "sm_count": g.sm_count, "l2_bytes": g.l2_bytes}));
    m.insert("clocks_before".into(), clocks_before);
    m.insert("checks".into(), serde_json::to_value(checks).unwrap_or(Value::Null));
    m
}

/// `--out` checked before any measurement (exit 2 naming it), not only when written at the end.
fn check_out(out: &Option<PathBuf>) -> CliResult {
    match out {
        Some(p) => crate::run_guard::check_output_file("--out", p),
        None => Ok(()),
    }
}

fn write(out: &Option<PathBuf>, mut m: serde_json::Map<String, Value>, device: usize) -> CliResult {
    m.insert("clocks_after".into(), clocks(device));
    m.insert("finished_at".into(), json!(crate::provenance::now()));
    if let Some(path) = out {
        let text = serde_json::to_string_pretty(&Value::Object(m)).expect("serialisable");
        memscope_report::json::write_atomic(path, (text + "\n").as_bytes())
            .map_err(|e| CliError::failure(format!("{}: {e}", path.display())))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn gbs(x: f64) -> String {
    format!("{:.0} GB/s", x / 1e9)
}

fn print_ceilings(c: &ceilings::CeilingsReport) {
    println!(
        "\nCeilings ({}, {} SMs, L2 {} MiB); sustainable = best at >= {} MiB",
        c.device,
        c.sm_count,
        c.l2_bytes >> 20,
        c.sustained_min_bytes >> 20
    );
    println!("{:>12} {:>12} {:>12} {:>12} {:>14}", "buffer", "copy", "read (sum)", "write (fill)", "copy per call");
    for &size in &ceilings::SIZES {
        let get = |p: &str| c.bandwidth.iter().find(|b| b.pattern == p && b.buffer_bytes == size);
        let cell = |p: &str| get(p).map(|b| gbs(b.bytes_per_s)).unwrap_or_default();
        let per = get("copy").map(|b| fmt_s(b.timing.per_call_s)).unwrap_or_default();
        println!(
            "{:>12} {:>12} {:>12} {:>12} {:>14}",
            human_bytes(size),
            cell("copy"),
            cell("read"),
            cell("write"),
            per
        );
    }
    for (p, v) in &c.ceilings.bandwidth_bytes_per_s {
        println!("sustainable {p:<6} {}", gbs(*v));
    }
    for l in &c.launch {
        println!("launch floor {:<12} {:>10}   ({})", l.class, fmt_s(l.timing.per_call_s), l.operation);
    }
    for p in &c.peak {
        println!("peak {} {}^3: {:.1} TFLOP/s", p.precision, p.n, p.flops_per_s / 1e12);
    }
    for (p, v) in &c.ceilings.peak_flops_per_s {
        println!("peak {p}: {:.1} TFLOP/s", v / 1e12);
    }
}

fn human_bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{} GiB", b >> 30)
    } else if b >= 1 << 20 {
        format!("{} MiB", b >> 20)
    } else {
        format!("{} KiB", b >> 10)
    }
}

fn session(
    device: usize,
    quiet: bool,
) -> Result<(OpsGpu<'static>, Vec<check::Check>, Value, ceilings::CeilingsReport), CliError> {
    let log = Log(quiet);
    let before = clocks(device);
    let (g, checks) = open(device, &log)?;
    let c = ceilings::measure(&g, &log)?;
    print_ceilings(&c);
    Ok((g, checks, before, c))
}

pub fn ceilings(a: CeilingsArgs) -> CliResult {
    check_out(&a.out)?;
    let (g, checks, before, c) = session(a.device, a.quiet)?;
    let mut m = envelope("ceilings", &g, before, &checks);
    if let Value::Object(o) = serde_json::to_value(&c).expect("serialisable") {
        m.extend(o);
    }
    write(&a.out, m, a.device)
}

fn print_model(r: &model_set::ModelRun) {
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
        let row = |name: &str, st: &memscope_core::model::RatioStats| {
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

fn print_fusion(f: &fusion::FusionRun) {
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

fn print_batch(b: &batch::BatchRun) {
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

pub fn model(a: ModelArgs) -> CliResult {
    check_out(&a.out)?;
    let (g, checks, before, c) = session(a.device, a.quiet)?;
    let log = Log(a.quiet);
    let mut m = envelope("model", &g, before, &checks);
    m.insert("ceilings".into(), serde_json::to_value(&c).expect("serialisable"));
    let r = model_set::run(&g, &c, a.efficiency_only, &log)?;
    print_model(&r);
    m.insert("model".into(), serde_json::to_value(&r).expect("serialisable"));
    if a.all {
        // Write what we have first: a failure later keeps the 58 points.
        write(&a.out, m.clone(), a.device)?;
        let f = fusion::run(&g, &c, &log)?;
        print_fusion(&f);
        m.insert("fusion".into(), serde_json::to_value(&f).expect("serialisable"));
        write(&a.out, m.clone(), a.device)?;
        let b = batch::run(&g, &c, &log)?;
        print_batch(&b);
        m.insert("batch".into(), serde_json::to_value(&b).expect("serialisable"));
    }
    write(&a.out, m, a.device)
}

pub fn fusion(a: FusionArgs) -> CliResult {
    check_out(&a.out)?;
    let (g, checks, before, c) = session(a.device, a.quiet)?;
    let mut m = envelope("fusion", &g, before, &checks);
    m.insert("ceilings".into(), serde_json::to_value(&c).expect("serialisable"));
    let f = fusion::run(&g, &c, &Log(a.quiet))?;
    print_fusion(&f);
    m.insert("fusion".into(), serde_json::to_value(&f).expect("serialisable"));
    write(&a.out, m, a.device)
}

pub fn batch(a: BatchArgs) -> CliResult {
    check_out(&a.out)?;
    let (g, checks, before, c) = session(a.device, a.quiet)?;
    let mut m = envelope(if a.compose { "batch --compose" } else { "batch" }, &g, before, &checks);
    m.insert("ceilings".into(), serde_json::to_value(&c).expect("serialisable"));
    if a.compose {
        let r = compose::run(&g, &c, &Log(a.quiet))?;
        crate::cmd_compose::print(&r);
        m.insert("compose".into(), serde_json::to_value(&r).expect("serialisable"));
        return write(&a.out, m, a.device);
    }
    let b = batch::run(&g, &c, &Log(a.quiet))?;
    print_batch(&b);
    m.insert("batch".into(), serde_json::to_value(&b).expect("serialisable"));
    write(&a.out, m, a.device)
}
