//! Warming the driver's kernel cache in the background (docs/PERFORMANCE.md, "The default run's
//! time"): on a machine whose CUDA compute cache is cold, the driver compiles a module's PTX to
//! machine code when it is first loaded, about 6 s for the bottleneck model's modules on the H200
//! machine, inside the `launch` probe that loads them first. A thread started when a `memscope run`
//! opens the GPU compiles the modules the probes load later (the GPU layer's
//! `warm::warm_module_cache`: NVRTC, then a load into the GPU's primary context and an unload, the
//! modules shared out among up to 8 threads that inherit this thread's CPU set), so
//! the driver's cache holds the machine code when the probes load the same PTX. It keeps off the CPU lane's core (the highest-numbered CPU the
//! process may use), and a probe timed on the host waits for it to end (`Prewarm::wait`).

use crate::gpu::Module;
use std::thread::JoinHandle;
use std::time::Instant;

/// The modules warmed, in order: the bottleneck model's first (the launch probe's class floors),
/// then the probe modules loaded after the first probes (the chase module is loaded at once). Taken
/// from the registry's lists, so a new module is warmed without being named here.
pub fn warmed() -> Vec<Module> {
    Module::OPS.iter().chain(Module::PROBES.iter()).copied().filter(|&m| m != Module::Chase).collect()
}

/// What the warming did: seconds, how many threads, and the modules that failed (the probes
/// compile them again and report the error themselves).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Warmed {
    pub seconds: f64,
    pub threads: usize,
    pub failed: Vec<String>,
}

/// The warming thread of one GPU.
#[derive(Default)]
pub struct Prewarm {
    handle: Option<JoinHandle<Warmed>>,
    done: Option<Warmed>,
}

impl Prewarm {
    /// Start warming `modules` for GPU `ordinal` (compute capability `arch`, e.g. "sm_90").
    pub fn start(ordinal: usize, arch: String, modules: Vec<Module>) -> Prewarm {
        let handle = std::thread::Builder::new()
            .name(format!("memscope-prewarm-{ordinal}"))
            .spawn(move || {
                keep_off_the_lane_core();
                warm(ordinal, &arch, &modules)
            })
            .ok();
        Prewarm { handle, done: None }
    }

    /// Wait for the warming to end (at once when it has, or never started); what it did.
    pub fn wait(&mut self) -> Option<&Warmed> {
        if let Some(h) = self.handle.take() {
            self.done =
                Some(h.join().unwrap_or_else(|_| Warmed { seconds: 0.0, threads: 0, failed: vec!["panicked".into()] }));
        }
        self.done.as_ref()
    }
}

impl Drop for Prewarm {
    fn drop(&mut self) {
        self.wait();
    }
}

/// Leave the highest-numbered allowed CPU (the CPU lane's, crates/session) when three or more are
/// allowed.
fn keep_off_the_lane_core() {
    // SAFETY: plain libc calls on a zeroed, properly sized set; they affect the calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut set) != 0 {
            return;
        }
        let allowed: Vec<usize> = (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect();
        if let (true, Some(&last)) = (allowed.len() >= 3, allowed.last()) {
            libc::CPU_CLR(last, &mut set);
            libc::sched_setaffinity(0, size, &set);
        }
    }
}

fn warm(ordinal: usize, arch: &str, modules: &[Module]) -> Warmed {
    let started = Instant::now();
    let (failed, threads) = match crate::gpu::warm::warm_module_cache(ordinal, arch, modules) {
        Ok(r) => (r.failed.into_iter().map(String::from).collect(), r.threads),
        Err(e) => (vec![format!("the primary context ({e})")], 0),
    };
    Warmed { seconds: started.elapsed().as_secs_f64(), threads, failed }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_module_but_the_chase_is_warmed_once() {
        let order = super::warmed();
        let mut once = order.clone();
        once.sort_by_key(|m| m.file());
        once.dedup();
        assert_eq!(once.len(), order.len());
        let chase = crate::gpu::Module::Chase;
        for m in crate::gpu::Module::ALL {
            assert_eq!(order.contains(&m), m != chase, "{}", m.file());
        }
        assert!(
            crate::gpu::Module::OPS.iter().all(|m| order[..crate::gpu::Module::OPS.len()].contains(m)),
            "the model's modules first"
        );
    }
}
