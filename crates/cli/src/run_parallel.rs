//! The CPU lane of `memscope run`: the CPU target's probes on their own thread, pinned to one
//! core (the highest-numbered CPU this process may use), while the GPU (or simulated GPU)
//! probes run on the main thread, which is kept off that core (threads the CUDA driver starts
//! later inherit that mask). The lane writes `DIR/results-cpu.partial.json` after every probe
//! (an interrupted run keeps what it measured) and is merged into the shared results file when
//! it ends. `--cpu-sequential` (or a host with one usable CPU) runs the CPU after the GPUs on the
//! main thread, as before, so the cost of concurrency can be measured.

use crate::cmd_run::{run_target, Args};
use crate::error::{CliError, CliResult};
use crate::targets::TargetSpec;
use memscope_core::Target;
use memscope_report::Results;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// CPUs this process may run on (sched_getaffinity), ascending.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: plain libc calls with a properly sized, zeroed set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// Restrict the calling thread to `cpus`; false when the kernel refused.
pub fn pin_thread(cpus: &[usize]) -> bool {
    // SAFETY: as above; sched_setaffinity(0) affects only the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        !cpus.is_empty() && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The split: the CPU lane's core and the cores left to the GPU probes' host threads.
pub fn split_cores(allowed: &[usize]) -> Option<(usize, Vec<usize>)> {
    let (&lane, rest) = allowed.split_last()?;
    (!rest.is_empty()).then(|| (lane, rest.to_vec()))
}

/// A target as `memscope run` opened it.
type Opened = Result<Box<dyn Target>, CliError>;

/// A CPU lane running on its own thread.
pub struct Lane {
    handle: std::thread::JoinHandle<(Results, Vec<String>, f64)>,
    core: usize,
    gpu_cores: Vec<usize>,
    restore: Vec<usize>,
    partial: PathBuf,
}

/// Take the CPU target out of `opened` and start it on its own core when the run has a CPU and
/// another target, `--cpu-sequential` is not given and the process may use two CPUs or more.
pub fn start(opened: &mut Vec<(TargetSpec, Opened)>, args: &Args) -> Result<Option<Lane>, CliError> {
    if args.cpu_sequential || args.continue_from.is_some() || opened.len() < 2 {
        return Ok(None);
    }
    let Some(i) = opened.iter().position(|(s, t)| *s == TargetSpec::Cpu && t.is_ok()) else { return Ok(None) };
    let allowed = allowed_cpus();
    let Some((core, gpu_cores)) = split_cores(&allowed) else { return Ok(None) };
    let (_, target) = opened.remove(i);
    let mut target = target.expect("checked is_ok");
    let partial = args.out.join("results-cpu.partial.json");
    let probes = crate::registry::all();
    let probes = crate::cmd_run::select_probes(probes, &args.probes, false)?;
    let mut lane_args = args.clone();
    // Two threads' progress bars would overwrite each other's lines: the GPU's stay.
    lane_args.quiet = true;
    let doc = Results::new(crate::provenance::tool(), target.info(), crate::provenance::environment());
    let path = partial.clone();
    let handle = std::thread::Builder::new()
        .name("memscope-cpu-lane".into())
        .spawn(move || {
            let started = Instant::now();
            let mut doc = doc;
            let mut failures = Vec::new();
            if !pin_thread(&[core]) {
                failures.push(format!("cpu lane: could not pin to CPU {core}"));
            }
            if let Err(e) = run_target(&mut *target, "cpu", &probes, &lane_args, &mut doc, &path, &mut failures) {
                failures.push(format!("cpu lane: {e}"));
            }
            (doc, failures, started.elapsed().as_secs_f64())
        })
        .map_err(|e| CliError::failure(format!("cannot start the CPU lane's thread: {e}")))?;
    // The main thread (GPU probes, and every thread it starts from now on) keeps off the core.
    pin_thread(&gpu_cores);
    Ok(Some(Lane { handle, core, gpu_cores, restore: allowed, partial }))
}

impl Lane {
    /// Wait for the lane and merge its results into the document at `shared` (the results.json
    /// of the first GPU target), or add one for the CPU when there is none.
    pub fn finish(self, docs: &mut Vec<(PathBuf, Results)>, shared: &Path, failures: &mut Vec<String>) -> CliResult {
        let waited = Instant::now();
        let joined = self.handle.join();
        let wait_s = waited.elapsed().as_secs_f64();
        pin_thread(&self.restore);
        let (cpu, mut lane_failures, lane_s) = match joined {
            Ok(r) => r,
            Err(_) => return Err(CliError::failure("the CPU lane's thread panicked outside a probe".to_string())),
        };
        failures.append(&mut lane_failures);
        let record = serde_json::json!({
            "mode": "concurrent",
            "cpu_lane_core": self.core,
            "gpu_host_cores": self.gpu_cores,
            "cpu_lane_wall_s": lane_s,
            "waited_for_cpu_lane_s": wait_s,
        });
        match docs.iter_mut().find(|(p, _)| p == shared) {
            Some((_, doc)) => {
                doc.targets.push(cpu.target.clone());
                doc.findings.extend(cpu.findings);
                doc.series.extend(cpu.series);
                doc.probes.extend(cpu.probes);
                doc.environment.insert("cpu_lane".into(), record);
            }
            None => {
                let mut cpu = cpu;
                cpu.environment.insert("cpu_lane".into(), record);
                docs.push((shared.to_path_buf(), cpu));
            }
        }
        let _ = std::fs::remove_file(&self.partial);
        Ok(())
    }
}

/// Replace a target's entry (by id) in `doc` with `fresh`.
pub fn refresh_target(doc: &mut Results, fresh: memscope_core::TargetInfo) {
    for t in doc.targets.iter_mut().filter(|t| t.id == fresh.id) {
        *t = fresh.clone();
    }
    if doc.target.id == fresh.id {
        doc.target = fresh;
    }
}

/// Record in a document holding the CPU and another target that the CPU ran after it.
pub fn note_sequential(docs: &mut [(PathBuf, Results)], args: &Args) {
    for (_, doc) in docs.iter_mut() {
        if doc.targets.len() > 1 && doc.targets.iter().any(|t| t.kind == "cpu") {
            let why = if args.cpu_sequential { "--cpu-sequential" } else { "fewer than two usable CPUs" };
            doc.environment.insert("cpu_lane".into(), serde_json::json!({"mode": "sequential", "why": why}));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lane_takes_the_last_core() {
        assert_eq!(split_cores(&[0, 1]), Some((1, vec![0])));
        assert_eq!(split_cores(&[0, 2, 5]), Some((5, vec![0, 2])));
        assert_eq!(split_cores(&[3]), None);
        assert_eq!(split_cores(&[]), None);
    }

    #[test]
    fn pinning_this_thread_round_trips() {
        let before = allowed_cpus();
        assert!(!before.is_empty());
        std::thread::spawn(move || {
            assert!(pin_thread(&before[..1]));
            assert_eq!(allowed_cpus(), before[..1].to_vec());
            assert!(pin_thread(&before));
            assert_eq!(allowed_cpus(), before);
        })
        .join()
        .unwrap();
    }
}
