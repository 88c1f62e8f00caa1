//! memscope-probe: discovery algorithms generic over `Target` and the registry of generic probes.
//! Being written.

use memscope_core::Probe;

/// The generic (backend-independent) probes.
pub fn probes() -> Vec<Box<dyn Probe>> {
    Vec::new()
}
