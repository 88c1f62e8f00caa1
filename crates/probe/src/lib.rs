//! memscope-probe: the discovery algorithms, generic over `Target` (docs/ARCHITECTURE.md; the "one
//! idea": every read-path experiment of seed 000 is a pointer chase over chosen addresses), and the
//! run order of the generic probes (crates/registry takes it whole). Each probe is plan -> measure
//! -> analyze with a pure `analyze`.

pub mod dram;
pub mod evset;
pub mod geometry;
pub mod index;
pub mod indexing;
pub mod l2copies;
pub mod l2missing;
pub mod l2pool;
pub mod l2sets;
pub mod l2ways;
pub mod latency;
pub mod latency_parts;
pub mod line;
pub mod measure;
pub mod peer;
pub mod penalty;
pub mod policy;
pub mod segment;
#[cfg(test)]
pub(crate) mod testsim;
pub mod tlb;

use memscope_core::Probe;

/// The generic (backend-independent) probes, in run order (later probes read earlier findings).
pub fn probes() -> Vec<Box<dyn Probe>> {
    vec![
        Box::new(line::LineProbe),
        Box::new(latency::LatencyProbe),
        Box::new(penalty::PenaltyProbe),
        Box::new(geometry::EvsetProbe),
        Box::new(geometry::WaysProbe),
        Box::new(tlb::TlbProbe),
        Box::new(indexing::IndexingProbe),
        Box::new(index::IndexProbe),
        Box::new(geometry::SetsProbe),
        Box::new(l2ways::L2WaysProbe),
        Box::new(policy::L2PolicyProbe),
        Box::new(dram::DramProbe),
    ]
}
