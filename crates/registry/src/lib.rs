//! The probe registry (nvbandwidth-style): every probe memscope knows, in run order, in one list.
//! Each probe declares its key, description, needs and applicability through its `Probe`
//! implementation; the list declares which probes must run alone (one GPU at a time when several
//! GPUs run in parallel) and why. Keys are unique and stable; later probes read earlier findings.

use memscope_core::{Applicability, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo};
use memscope_cuda::probes as gpu;
use memscope_probe as generic;

/// One probe of the list: the probe and, when it must run alone, why.
struct Entry {
    probe: Box<dyn Probe>,
    alone: Option<&'static str>,
}

fn entry(probe: impl Probe + 'static) -> Entry {
    Entry { probe: Box::new(probe), alone: None }
}

fn alone(probe: impl Probe + 'static, why: &'static str) -> Entry {
    Entry { probe: Box::new(probe), alone: Some(why) }
}

/// The list, in run order: the generic discovery probes (any target that chases pointers), the
/// host's peer matrix, the CPU-only probes, then the GPU-only probes.
fn entries() -> Vec<Entry> {
    let mut v: Vec<Entry> = generic::probes().into_iter().map(|probe| Entry { probe, alone: None }).collect();
    v.extend([
        alone(generic::peer::PeerProbe, "the peer matrix drives every GPU of the host"),
        entry(memscope_cpu::latency::CpuLatency),
        entry(memscope_cpu::stride::CpuStride),
        alone(
            gpu::LaunchProbe,
            "its launch floors are timed on the host: another lane's host work beside it would move them",
        ),
        entry(gpu::BwProbe),
        entry(gpu::L2BwProbe),
        entry(gpu::StoreProbe),
        entry(gpu::FenceProbe),
        entry(gpu::CoalesceProbe),
        entry(gpu::PeakProbe),
        alone(gpu::SlicesProbe, "it runs ncu, which serializes the kernels it profiles and reads device-wide counters"),
        entry(gpu::ConstMemProbe),
        entry(gpu::TextureProbe),
        entry(gpu::L1ShareProbe),
        entry(gpu::SmemProbe),
        entry(gpu::AtomicsProbe),
        entry(gpu::LevelBwProbe),
        entry(gpu::InflightProbe),
        entry(gpu::SmMapProbe),
        alone(
            gpu::LinkProbe,
            "host <-> device copies share the host's PCIe root complex, its memory bandwidth and its copy threads: \
             beside another GPU's they would measure each other",
        ),
    ]);
    v
}

/// A probe that must run alone: the probe as it is, declaring `runs_alone`.
struct RunsAlone(Box<dyn Probe>);

impl Probe for RunsAlone {
    fn key(&self) -> &'static str {
        self.0.key()
    }
    fn description(&self) -> &'static str {
        self.0.description()
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        self.0.applicability(target)
    }
    fn needs(&self) -> &'static [&'static str] {
        self.0.needs()
    }
    fn runs_alone(&self) -> bool {
        true
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        self.0.run(ctx)
    }
}

/// Every probe memscope knows, in run order.
pub fn all() -> Vec<Box<dyn Probe>> {
    entries()
        .into_iter()
        .map(|e| match e.alone {
            Some(_) => Box::new(RunsAlone(e.probe)) as Box<dyn Probe>,
            None => e.probe,
        })
        .collect()
}

/// The probes `memscope run` runs one GPU at a time when it measures several GPUs in parallel
/// (docs/INTERCONNECT.md), and why: they share what the GPUs of a host share.
pub fn one_gpu_at_a_time() -> Vec<(&'static str, &'static str)> {
    entries().into_iter().filter_map(|e| e.alone.map(|why| (e.probe.key(), why))).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn needs_are_known_probes_that_run_earlier() {
        let probes = super::all();
        let keys: Vec<&str> = probes.iter().map(|p| p.key()).collect();
        for (i, p) in probes.iter().enumerate() {
            for need in p.needs() {
                let j = keys.iter().position(|k| k == need);
                assert!(j.is_some_and(|j| j < i), "{} needs {need}, which is not an earlier probe", p.key());
            }
        }
        let latency_alone = memscope_session::with_needs(&probes, &["latency".to_string()]);
        assert!(latency_alone.iter().any(|k| k == "line"), "{latency_alone:?}");
    }

    #[test]
    fn the_link_probes_run_alone_and_are_known_probes() {
        let probes = super::all();
        let keys: Vec<&str> = probes.iter().map(|p| p.key()).collect();
        let listed = super::one_gpu_at_a_time();
        for (k, why) in &listed {
            assert!(keys.contains(k), "{k} is not a probe");
            assert!(!why.is_empty(), "{k}");
        }
        for k in ["link", "peer", "l2.slices"] {
            assert!(listed.iter().any(|(a, _)| *a == k), "{k}");
        }
        assert!(!listed.iter().any(|(a, _)| *a == "latency"));
        for p in &probes {
            assert_eq!(p.runs_alone(), listed.iter().any(|(a, _)| *a == p.key()), "{}", p.key());
        }
    }

    #[test]
    fn keys_are_unique_and_described() {
        let probes = super::all();
        let mut keys: Vec<_> = probes.iter().map(|p| p.key()).collect();
        for p in &probes {
            assert!(!p.description().is_empty(), "{} has no description", p.key());
            assert!(!p.description().contains('\n'), "{}: description must be one line", p.key());
        }
        keys.sort();
        let n = keys.len();
        keys.dedup();
        assert_eq!(n, keys.len(), "duplicate probe keys");
    }
}
