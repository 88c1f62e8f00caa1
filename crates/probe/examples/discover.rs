//! Run the discovery probes on a simulated hierarchy and print the findings with timings, then
//! the simulator's speed over that workload (line accesses simulated per CPU second inside the
//! chases, for each probe and in all; docs/PERFORMANCE.md):
//! `cargo run --release -p memscope-probe --example discover -- [PRESET|FILE.json] [probe,...]`
//! (the probes asked for and those they need; MEMSCOPE_QUICK=1 for quick mode). Each probe runs through the run loop of
//! crates/session, one at a time so its share of the simulator's work can be read.

use memscope_core::{Finding, Target};
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
    let probes = memscope_session::select(memscope_probe::probes(), &only, false).expect("probe keys");
    // MEMSCOPE_QUICK=1: the probes' quick mode, as the random-hierarchy sweep runs them.
    let session = memscope_session::Session::silent(std::env::var("MEMSCOPE_QUICK").is_ok_and(|v| v == "1"));
    let mut earlier: BTreeMap<String, Finding> = BTreeMap::new();
    let all = std::time::Instant::now();
    for p in &probes {
        let start = std::time::Instant::now();
        let work_before = sim_work(t);
        let out = session.run_probes_with(t, [p.as_ref()], earlier.clone());
        if !out.failures.is_empty() {
            println!("== {} FAILED: {}", p.key(), out.failures.join("; "));
            continue;
        }
        // (the probe's own share of the simulator's work: where the workload's time goes)
        let rate = match (work_before, sim_work(t)) {
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
            println!("  {k} = {} {} [{:?}] {}", f.value, f.unit, f.confidence, f.note.clone().unwrap_or_default());
        }
        earlier.extend(out.findings);
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
    memscope_core::target::concrete::<memscope_sim::SimTarget>(t).map(|s| s.chase_work())
}
