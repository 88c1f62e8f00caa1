//! Several GPUs (or simulated GPUs) in one `memscope run` (issue 16): one thread per target runs
//! its probes in parallel with the others, each into its own document (`results.json` for the
//! first, `results-<id>.json` for the rest, as before); then the probes that must run one GPU at a
//! time (`registry::ONE_GPU_AT_A_TIME`: the host link, the peer matrix, ncu) run target after
//! target on the main thread; at the end `run` writes every document merged into
//! `results-all.json` (the `memscope merge` format), the one file of the whole host. Each thread
//! binds its own GPU's context; their progress bars would overwrite each other's lines, so only
//! the first target's are shown.

use crate::cmd_run::{run_target, Args};
use crate::error::{CliError, CliResult};
use crate::targets::TargetSpec;
use memscope_core::{Probe, Target};
use memscope_report::Results;
use std::path::PathBuf;

/// A target as `run` opened it.
type Opened = Result<Box<dyn Target>, CliError>;

/// What one target's thread hands back: its document, failures and seconds.
type Lane = (PathBuf, Results, Vec<String>, f64);

/// A list of probes.
type Probes = Vec<Box<dyn Probe>>;

/// The run's probes split: those run in parallel and those run one GPU at a time.
fn split(probes: &[Box<dyn Probe>]) -> (Probes, Probes) {
    let keys: Vec<&str> = probes.iter().map(|p| p.key()).collect();
    let mine = || crate::registry::all().into_iter().filter(|p| keys.contains(&p.key()));
    let parallel = mine().filter(|p| !crate::registry::one_gpu_at_a_time(p.key())).collect();
    let serial = mine().filter(|p| crate::registry::one_gpu_at_a_time(p.key())).collect();
    (parallel, serial)
}

/// Run every non-CPU target of `opened` (the CPU stays for the caller), the parallel probes on one
/// thread per target, then the one-at-a-time probes in order; returns the documents by path.
pub fn run_all(
    opened: &mut [(TargetSpec, Opened)],
    probes: &[Box<dyn Probe>],
    args: &Args,
    new_doc: &dyn Fn(&memscope_core::TargetInfo) -> Results,
    path_for: &dyn Fn(usize, &str) -> PathBuf,
    failures: &mut Vec<String>,
) -> Result<Vec<(PathBuf, Results)>, CliError> {
    let (parallel, serial) = split(probes);
    let started = std::time::Instant::now();
    let mut lanes: Vec<Lane> = Vec::new();
    std::thread::scope(|scope| -> CliResult {
        let mut handles = Vec::new();
        for (k, (spec, target)) in opened.iter_mut().filter(|(s, _)| *s != TargetSpec::Cpu).enumerate() {
            let id = spec.id();
            let path = path_for(k, &id);
            let target = match target {
                Ok(t) => t,
                Err(e) => {
                    failures.push(e.to_string());
                    continue;
                }
            };
            let mut doc = new_doc(&target.info());
            let mut lane_args = args.clone();
            lane_args.quiet = args.quiet || k > 0;
            let parallel = &parallel;
            let spec = spec.clone();
            handles.push(scope.spawn(move || -> Result<Lane, CliError> {
                let t0 = std::time::Instant::now();
                let mut fails = Vec::new();
                crate::run_guard::write(&path, &mut doc, memscope_report::RunPhase::InProgress)?;
                if let TargetSpec::Cuda(n) = spec {
                    doc.environment.insert(format!("nvml_{id}_before"), memscope_cuda::nvml_snapshot(n));
                }
                run_target(&mut **target, &id, parallel, &lane_args, &mut doc, &path, &mut fails)?;
                Ok((path, doc, fails, t0.elapsed().as_secs_f64()))
            }));
        }
        for h in handles {
            match h.join() {
                Ok(r) => lanes.push(r?),
                Err(_) => return Err(CliError::failure("a GPU thread panicked outside a probe".to_string())),
            }
        }
        Ok(())
    })?;
    let parallel_s = started.elapsed().as_secs_f64();
    // The one-at-a-time probes, target after target, into the same documents.
    let mut docs = Vec::new();
    let targets = opened.iter_mut().filter(|(s, t)| *s != TargetSpec::Cpu && t.is_ok());
    for ((spec, target), (path, mut doc, mut fails, lane_s)) in targets.zip(lanes) {
        let id = spec.id();
        let t0 = std::time::Instant::now();
        let target = target.as_mut().map_err(|e| CliError::failure(e.to_string()))?;
        run_target(&mut **target, &id, &serial, args, &mut doc, &path, &mut fails)?;
        if let TargetSpec::Cuda(n) = spec {
            doc.environment.insert(format!("nvml_{id}_after"), memscope_cuda::nvml_snapshot(*n));
        }
        doc.environment.insert(
            "gpu_lanes".into(),
            serde_json::json!({
                "mode": "parallel: one thread per GPU",
                "parallel_wall_s": parallel_s,
                "this_lane_parallel_s": lane_s,
                "one_gpu_at_a_time_s": t0.elapsed().as_secs_f64(),
                "one_gpu_at_a_time": crate::registry::ONE_GPU_AT_A_TIME
                    .iter()
                    .map(|(k, why)| serde_json::json!({"probe": k, "why": why}))
                    .collect::<Vec<_>>(),
            }),
        );
        crate::run_guard::write(&path, &mut doc, memscope_report::RunPhase::InProgress)?;
        failures.append(&mut fails);
        docs.push((path, doc));
    }
    Ok(docs)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_link_probes_run_alone_and_the_rest_in_parallel() {
        let all = crate::registry::all();
        let (par, ser) = super::split(&all);
        assert_eq!(par.len() + ser.len(), all.len());
        let ser: Vec<&str> = ser.iter().map(|p| p.key()).collect();
        for k in ["link", "peer", "l2.slices"] {
            assert!(ser.contains(&k), "{k}");
        }
        assert!(par.iter().any(|p| p.key() == "latency"));
    }
}
