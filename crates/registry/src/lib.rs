//! The probe registry (nvbandwidth-style): every probe memscope knows, in run order, in one list.
//! Each probe declares its key, description, needs and applicability through its `Probe`
//! implementation; the list declares which probes must run alone (one GPU at a time when several
//! GPUs run in parallel) and why, and which a `--quick` run leaves out (docs/PERFORMANCE.md,
//! "`--quick`"). Keys are unique and stable; later probes read earlier findings.

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
        alone(
            gpu::SliceFunctionProbe,
            "like l2.slices, its child reads the device-wide L2 counters (CUPTI) of every kernel it profiles",
        ),
        entry(gpu::ConstMemProbe),
        entry(gpu::TextureProbe),
        entry(gpu::L1ShareProbe),
        entry(gpu::SmemProbe),
        entry(gpu::AtomicsProbe),
        entry(gpu::LevelBwProbe),
        entry(gpu::InflightProbe),
        entry(gpu::SmMapProbe),
        entry(gpu::PartitionProbe),
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

/// The probes a `--quick` run of every probe leaves out, and why: none of them gives a headline
/// finding (latencies, capacities, bandwidths, the launch floor, peak rates, the host link), and
/// together they took 14.5 of a `--quick` run's 23 s on the H200. A probe that needs one of them
/// is left out with it.
pub const LEFT_OUT_OF_QUICK: [(&str, &str); 11] = [
    ("evset", "the L1's eviction set and geometry"),
    ("ways", "the L1's eviction set and geometry"),
    ("sets", "the L1's eviction set and geometry"),
    ("tlb", "the TLB's reach and miss cost"),
    ("indexing", "the caches' set-index functions"),
    ("index", "the caches' set-index functions"),
    ("l2ways", "the L2's ways from an eviction set"),
    ("l2policy", "the L2's replacement policy"),
    ("dram", "the DRAM's rows and refresh"),
    ("l2.slices", "the L2's slice map (Nsight Compute)"),
    ("texture", "the texture and read-only paths"),
];

/// The probes a run of every probe leaves out (they run when asked for by name), and what they
/// measure: the default run's time is spent (docs/PERFORMANCE.md).
pub const ON_REQUEST_ONLY: [(&str, &str); 2] = [
    ("l2.partition", "the L2 partition bit over whole pages"),
    ("l2.slices.function", "the L2 slice function from a slice map of a full page and 7 more, 178-188 s on the H200"),
];

/// A probe a run leaves out unless it is named: waived with the reason (`.1`) where it would run.
struct LeftOut(Box<dyn Probe>, String);

impl Probe for LeftOut {
    fn key(&self) -> &'static str {
        self.0.key()
    }
    fn description(&self) -> &'static str {
        self.0.description()
    }
    fn applicability(&self, target: &TargetInfo) -> Applicability {
        match self.0.applicability(target) {
            Applicability::Applicable => Applicability::Waived(self.1.clone()),
            waived => waived,
        }
    }
    fn needs(&self) -> &'static [&'static str] {
        self.0.needs()
    }
    fn runs_alone(&self) -> bool {
        self.0.runs_alone()
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        self.0.run(ctx)
    }
}

/// `probes` with those of `list` (key, what it measures) left out, each waived with
/// `why(what, key)`.
fn leave_out(
    probes: Vec<Box<dyn Probe>>,
    list: &[(&str, &str)],
    why: impl Fn(&str, &str) -> String,
) -> Vec<Box<dyn Probe>> {
    probes
        .into_iter()
        .map(|p| match list.iter().find(|(k, _)| *k == p.key()) {
            Some((_, what)) => {
                let reason = why(what, p.key());
                Box::new(LeftOut(p, reason)) as Box<dyn Probe>
            }
            None => p,
        })
        .collect()
}

/// Every probe of a run that asks for no probes by name: `all()` with the probes of
/// `ON_REQUEST_ONLY` waived, with the reason.
pub fn for_default_run() -> Vec<Box<dyn Probe>> {
    leave_out(all(), &ON_REQUEST_ONLY, |what, key| format!("run only when asked for ({what}): --probes {key}"))
}

/// Every probe of a `--quick` run that asks for no probes by name: `for_default_run()` with the
/// probes of `LEFT_OUT_OF_QUICK` waived too, with the reason.
pub fn for_quick_run() -> Vec<Box<dyn Probe>> {
    leave_out(for_default_run(), &LEFT_OUT_OF_QUICK, |what, key| {
        format!(
            "left out of a --quick run ({what}: not a headline finding); run without --quick, or --quick --probes {key}"
        )
    })
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

    /// A CUDA GPU's target description, for probes' applicability.
    fn cuda_gpu_info() -> memscope_core::TargetInfo {
        memscope_core::TargetInfo {
            kind: "cuda".into(),
            id: "cuda:0".into(),
            name: "a CUDA GPU".into(),
            clock_hz: Some(1.98e9),
            bypass_supported: true,
            aliasing_supported: true,
            per_hop_supported: true,
            gpu_hierarchy: true,
            units: 132,
            capabilities: memscope_core::target::Capabilities::cuda_gpu(),
            details: Default::default(),
        }
    }

    #[test]
    fn a_run_of_every_probe_leaves_out_the_probes_run_on_request_only() {
        use memscope_core::Applicability;
        let info = cuda_gpu_info();
        let all = super::all();
        for run in [super::for_default_run(), super::for_quick_run()] {
            assert_eq!(run.len(), all.len(), "a waived probe is still listed");
            for (k, _) in super::ON_REQUEST_ONLY {
                let asked = all.iter().find(|p| p.key() == k).expect("a probe");
                assert_eq!(asked.applicability(&info), Applicability::Applicable, "{k} when asked for");
                match run.iter().find(|p| p.key() == k).expect("listed").applicability(&info) {
                    Applicability::Waived(why) => assert!(why.contains(&format!("--probes {k}")), "{k}: {why}"),
                    Applicability::Applicable => panic!("{k} should be left out of a run of every probe"),
                }
                assert!(!all.iter().any(|p| p.needs().contains(&k)), "a probe needs {k}");
            }
        }
        let kept = super::for_default_run();
        assert!(kept.iter().any(|p| p.key() == "l2.sm_map" && p.applicability(&info) == Applicability::Applicable));
    }

    /// The slice function from a full-page map: on request only, after and with `l2.slices`
    /// (whose timing check gives the partition bit), alone like it, CUDA only.
    #[test]
    fn the_slice_function_runs_on_request_after_l2_slices() {
        use memscope_core::Applicability;
        let key = "l2.slices.function";
        let info = cuda_gpu_info();
        let all = super::all();
        let keys: Vec<&str> = all.iter().map(|p| p.key()).collect();
        let at = keys.iter().position(|k| *k == key).expect("registered");
        let slices = keys.iter().position(|k| *k == "l2.slices").expect("registered");
        assert!(slices < at, "l2.slices runs first");
        assert_eq!(all[at].needs(), ["l2.slices"]);
        assert!(all[at].runs_alone());
        assert_eq!(all[at].applicability(&info), Applicability::Applicable);
        let cpu = memscope_core::TargetInfo {
            kind: "cpu".into(),
            id: "cpu".into(),
            capabilities: memscope_core::target::Capabilities::host_cpu(),
            gpu_hierarchy: false,
            ..info.clone()
        };
        match all[at].applicability(&cpu) {
            Applicability::Waived(why) => assert!(why.contains("CUDA"), "{why}"),
            Applicability::Applicable => panic!("{key} applies to a CPU"),
        }
        for run in [super::for_default_run(), super::for_quick_run()] {
            match run.iter().find(|p| p.key() == key).expect("listed").applicability(&info) {
                Applicability::Waived(why) => assert!(
                    why.starts_with(
                        "run only when asked for (the L2 slice function from a slice map of a full page and 7 \
                         more, 178-188 s on the H200): --probes l2.slices.function"
                    ),
                    "{why}"
                ),
                Applicability::Applicable => panic!("{key} runs in a run of every probe"),
            }
        }
        let asked = memscope_session::with_needs(&all, &[key.to_string()]);
        assert_eq!(asked, [key, "l2.slices"]);
    }

    #[test]
    fn a_quick_run_leaves_out_known_probes_with_what_they_need_and_keeps_the_headline_ones() {
        use memscope_core::Applicability;
        let probes = super::for_quick_run();
        let info = cuda_gpu_info();
        let left: Vec<&str> = super::LEFT_OUT_OF_QUICK.iter().map(|(k, _)| *k).collect();
        for k in &left {
            assert!(probes.iter().any(|p| p.key() == *k), "{k} is not a probe");
        }
        for p in &probes {
            if left.contains(&p.key()) {
                assert_eq!(
                    super::all().iter().find(|a| a.key() == p.key()).map(|a| a.applicability(&info)),
                    Some(Applicability::Applicable),
                    "{}",
                    p.key()
                );
                match p.applicability(&info) {
                    Applicability::Waived(why) => assert!(why.contains("--quick"), "{}: {why}", p.key()),
                    Applicability::Applicable => panic!("{} should be waived in a quick run", p.key()),
                }
            } else if !super::ON_REQUEST_ONLY.iter().any(|(k, _)| *k == p.key()) {
                // (a probe kept reads no finding of a probe left out; a probe run only on request
                // is not kept, and may need one)
                for need in p.needs() {
                    assert!(!left.contains(need), "{} is kept but needs {need}, which is left out", p.key());
                }
            }
        }
        for headline in ["line", "latency", "bw", "launch", "peak", "link", "cpu.latency"] {
            assert!(!left.contains(&headline), "{headline}");
        }
        assert_eq!(super::for_quick_run().len(), super::all().len());
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
