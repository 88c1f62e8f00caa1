//! Run one CPU probe without the CLI, through the run loop of crates/session, and print its
//! findings and series as JSON.
//! `cargo run --release -p memscope-cpu --example probe_run -- cpu.stride [--quick]`

use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let key = args.first().cloned().unwrap_or_else(|| "cpu.stride".into());
    let quick = args.iter().any(|a| a == "--quick");
    let mut t = memscope_cpu::CpuTarget::new().expect("cpu target");
    let probe = memscope_registry::all().into_iter().find(|p| p.key() == key).expect("probe key");
    let started = std::time::Instant::now();
    let out = memscope_session::Session::silent(quick).run_probes_on(&mut t, [probe.as_ref()]).expect_ok();
    let series: BTreeMap<_, _> = out.series.iter().map(|(k, s)| (k.clone(), (s.x.clone(), s.y.clone()))).collect();
    let doc = serde_json::json!({"seconds": started.elapsed().as_secs_f64(), "findings": out.findings, "series": series, "warnings": out.warnings()});
    println!("{}", serde_json::to_string(&doc).unwrap());
}
