//! Run the discovery probes on a simulated hierarchy and print the findings with timings, then
//! the simulator's speed over that workload (line accesses simulated per CPU second inside the
//! chases, for each probe and in all; docs/PERFORMANCE.md):
//! `cargo run --release -p memscope-probe --example discover -- [PRESET|FILE.json] [probe,...]`.

use memscope_core::{Finding, NoProgress, ProbeContext, Target};
use std::collections::BTreeMap;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).cloned().unwrap_or_else(|| "rtx4090".into());
    let only: Vec<String> = args.get(2).map(|s| s.split(',').map(String::from).collect()).unwrap_or_default();
    let mut sim = if which.ends_with(".json") {
        memscope_sim::SimTarget::from_json_file(std::path::Path::new(&which)).expect("sim file")
    } else {
        memscope_sim::SimTarget::from_preset(&which).expect("preset")
    };
    let t: &mut dyn Target = &mut sim;
    let mut earlier: BTreeMap<String, Finding> = BTreeMap::new();
    let all = std::time::Instant::now();
    for p in memscope_probe::probes() {
        if !only.is_empty() && !only.iter().any(|k| k == p.key()) {
            continue;
        }
        let start = std::time::Instant::now();
        let work_before = sim_work(t);
        let snapshot = earlier.clone();
        let mut ctx = ProbeContext { target: t, quick: false, progress: &NoProgress, earlier: &snapshot };
        match p.run(&mut ctx) {
            Ok(out) => {
                // (the probe's own share of the simulator's work: where the workload's time goes)
                let rate = match (work_before, sim_work(ctx.target)) {
                    (Some(a), Some(b)) if b.cpu_s > a.cpu_s => format!(
                        "; {} line accesses in {:.2} s CPU = {:.1} M/s",
                        b.hops - a.hops,
                        b.cpu_s - a.cpu_s,
                        (b.hops - a.hops) as f64 / (b.cpu_s - a.cpu_s) / 1e6
                    ),
                    _ => String::new(),
                };
                println!("== {} ({:.2} s{rate})", p.key(), start.elapsed().as_secs_f64());
                for (k, f) in &out.findings {
                    println!(
                        "  {k} = {} {} [{:?}] {}",
                        f.value,
                        f.unit,
                        f.confidence,
                        f.note.clone().unwrap_or_default()
                    );
                }
                earlier.extend(out.findings);
            }
            Err(e) => println!("== {} FAILED: {e}", p.key()),
        }
    }
    println!("total {:.2} s", all.elapsed().as_secs_f64());
    let w = sim.chase_work();
    println!(
        "simulator: {} chases, {} line accesses in {:.2} s CPU = {:.1} M line accesses per CPU second",
        w.chases,
        w.hops,
        w.cpu_s,
        w.hops as f64 / w.cpu_s / 1e6
    );
}

/// The simulator's chase work so far (None for a target that is not the simulator).
fn sim_work(t: &mut dyn Target) -> Option<memscope_sim::target::ChaseWork> {
    t.as_any_mut().downcast_mut::<memscope_sim::SimTarget>().map(|s| s.chase_work())
}
