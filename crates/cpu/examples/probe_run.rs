//! Run one CPU probe without the CLI and print its findings and series as JSON.
//! `cargo run --release -p memscope-cpu --example probe_run -- cpu.stride [--quick]`
use memscope_core::{NoProgress, ProbeContext};
use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let key = args.first().cloned().unwrap_or_else(|| "cpu.stride".into());
    let quick = args.iter().any(|a| a == "--quick");
    let mut t = memscope_cpu::CpuTarget::new().expect("cpu target");
    let probe = memscope_cpu::probes().into_iter().find(|p| p.key() == key).expect("probe key");
    let earlier = BTreeMap::new();
    let started = std::time::Instant::now();
    let mut ctx = ProbeContext { target: &mut t, quick, progress: &NoProgress, earlier: &earlier };
    let out = probe.run(&mut ctx).expect("probe run");
    let series: BTreeMap<_, _> = out.series.iter().map(|(k, s)| (k.clone(), (s.x.clone(), s.y.clone()))).collect();
    let doc = serde_json::json!({"seconds": started.elapsed().as_secs_f64(), "findings": out.findings, "series": series, "warnings": out.warnings});
    println!("{}", serde_json::to_string(&doc).unwrap());
}
