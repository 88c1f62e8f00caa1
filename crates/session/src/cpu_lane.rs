//! The CPU lane of a run (docs/PERFORMANCE.md, "CPU target"): the CPU target's probes on their own thread, pinned to one
//! core (the highest-numbered CPU this process may use), while the GPU (or simulated GPU)
//! probes run on the calling thread, which is kept off that core (threads the CUDA driver starts
//! later inherit that mask). The lane writes `DIR/results-cpu.partial.json` after every probe
//! (an interrupted run keeps what it measured) and is merged into the shared results file when
//! it ends. `cpu_sequential` (or a host with one usable CPU) runs the CPU after the GPUs on the
//! calling thread, so the cost of concurrency can be measured.

use crate::run::{PlannedTarget, RunPlan};
use crate::target_run::Lane;
use crate::{Session, SessionError};
use memscope_core::Probe;
use memscope_results::Results;
use std::path::{Path, PathBuf};
use std::thread::{Scope, ScopedJoinHandle};
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

/// A CPU lane running on its own thread.
pub(crate) struct CpuLane<'scope> {
    handle: ScopedJoinHandle<'scope, (Results, Vec<String>, f64)>,
    core: usize,
    gpu_cores: Vec<usize>,
    restore: Vec<usize>,
    partial: PathBuf,
}

impl Session {
    /// Take the CPU target out of `targets` and start it on its own core when the run has a CPU
    /// and another target, `cpu_sequential` is not set and the process may use two CPUs or more.
    pub(crate) fn start_cpu_lane<'scope, 'env>(
        &'env self,
        scope: &'scope Scope<'scope, 'env>,
        targets: &mut Vec<PlannedTarget>,
        plan: &'env RunPlan<'env>,
    ) -> Result<Option<CpuLane<'scope>>, SessionError> {
        if plan.cpu_sequential || plan.continue_from.is_some() || targets.len() < 2 {
            return Ok(None);
        }
        let Some(i) = targets.iter().position(|t| t.cpu && t.target.is_ok()) else { return Ok(None) };
        let allowed = allowed_cpus();
        let Some((core, gpu_cores)) = split_cores(&allowed) else { return Ok(None) };
        let planned = targets.remove(i);
        let Ok(mut target) = planned.target else { return Ok(None) };
        let partial = plan.out.join("results-cpu.partial.json");
        let doc = plan.new_doc(&target.info());
        let path = partial.clone();
        let handle = std::thread::Builder::new()
            .name("memscope-cpu-lane".into())
            .spawn_scoped(scope, move || {
                let started = Instant::now();
                let mut doc = doc;
                let mut failures = Vec::new();
                if !pin_thread(&[core]) {
                    failures.push(format!("cpu lane: could not pin to CPU {core}"));
                }
                let probes: Vec<&dyn Probe> = plan.probes.iter().map(|p| &**p).collect();
                // Two threads' progress would overwrite each other's lines: the GPU's stay.
                let lane = Lane { id: &planned.id, path: Some(&path), shown: false, cpu_lane: true };
                if let Err(e) = self.run_lane(&mut *target, &probes, &lane, &mut doc, &mut failures) {
                    failures.push(format!("cpu lane: {e}"));
                }
                (doc, failures, started.elapsed().as_secs_f64())
            })
            .map_err(|e| SessionError::Thread(format!("cannot start the CPU lane's thread: {e}")))?;
        // The calling thread (GPU probes, and every thread it starts from now on) keeps off the core.
        pin_thread(&gpu_cores);
        Ok(Some(CpuLane { handle, core, gpu_cores, restore: allowed, partial }))
    }
}

impl CpuLane<'_> {
    /// Wait for the lane and merge its results into the document at `shared` (the results.json
    /// of the first GPU target), or add one for the CPU when there is none.
    pub(crate) fn finish(
        self,
        docs: &mut Vec<(PathBuf, Results)>,
        shared: &Path,
        failures: &mut Vec<String>,
        gate: &crate::GateLog,
    ) -> Result<(), SessionError> {
        let waited = Instant::now();
        let joined = self.handle.join();
        let wait_s = waited.elapsed().as_secs_f64();
        pin_thread(&self.restore);
        let (cpu, mut lane_failures, lane_s) = match joined {
            Ok(r) => r,
            Err(_) => return Err(SessionError::Thread("the CPU lane's thread panicked outside a probe".to_string())),
        };
        failures.append(&mut lane_failures);
        let record = serde_json::json!({
            "mode": "concurrent",
            "cpu_lane_core": self.core,
            "gpu_host_cores": self.gpu_cores,
            "cpu_lane_wall_s": lane_s,
            "waited_for_cpu_lane_s": wait_s,
            "gate": gate.to_json(),
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
