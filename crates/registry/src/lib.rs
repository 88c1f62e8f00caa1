//! The whole probe registry: the generic discovery probes, then the CPU-only and GPU-only ones.
//! Keys are unique and stable.

use memscope_core::Probe;

/// Every probe memscope knows, in run order.
pub fn all() -> Vec<Box<dyn Probe>> {
    let mut v = memscope_probe::probes();
    v.extend(memscope_probe::host_probes());
    v.extend(memscope_cpu::probes());
    v.extend(memscope_cuda::probes());
    v.extend(memscope_sim::probes());
    v
}

/// The probes `memscope run` runs one GPU at a time when it measures several GPUs in parallel
/// (issue 16), and why: they share what the GPUs of a host share.
pub const ONE_GPU_AT_A_TIME: &[(&str, &str)] = &[
    (
        "link",
        "host <-> device copies share the host's PCIe root complex, its memory bandwidth and its copy threads: beside \
         another GPU's they would measure each other",
    ),
    ("peer", "the peer matrix drives every GPU of the host"),
    ("l2.slices", "it runs ncu, which serializes the kernels it profiles and reads device-wide counters"),
];

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
        for (k, why) in super::ONE_GPU_AT_A_TIME {
            assert!(keys.contains(k), "{k} is not a probe");
            assert!(!why.is_empty(), "{k}");
        }
        for k in ["link", "peer", "l2.slices"] {
            assert!(super::ONE_GPU_AT_A_TIME.iter().any(|(a, _)| *a == k), "{k}");
        }
        assert!(!super::ONE_GPU_AT_A_TIME.iter().any(|(a, _)| *a == "latency"));
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
