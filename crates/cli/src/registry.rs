//! The whole probe registry: the generic discovery probes, then the CPU-only and GPU-only ones.
//! Keys are unique and stable.

use memscope_core::Probe;

/// Every probe memscope knows, in run order.
pub fn all() -> Vec<Box<dyn Probe>> {
    let mut v = memscope_probe::probes();
    v.extend(memscope_cpu::probes());
    v.extend(memscope_cuda::probes());
    v.extend(memscope_sim::probes());
    v
}

#[cfg(test)]
mod tests {
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
