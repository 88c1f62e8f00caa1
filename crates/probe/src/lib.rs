//! memscope-probe: the discovery algorithms, generic over `Target` (docs/ARCHITECTURE.md; the "one
//! idea": every read-path experiment of seed 000 is a pointer chase over chosen addresses), and the
//! run order of the generic probes (crates/registry takes it whole). Each probe is plan -> measure
//! -> analyze with a pure `analyze`. Grouped by the level each probe finds: `latency/` (the
//! footprint sweeps over every level and the miss penalties from them), `l1/`, `l2/`, `tlb/`,
//! `dram/`; the shared chase instrument (`measure`), eviction-set search (`evset`) and the peer
//! matrices (`peer`) sit at the top.

pub mod dram;
pub mod evset;
pub mod l1;
pub mod l2;
pub mod latency;
pub mod measure;
pub mod peer;
#[cfg(test)]
pub(crate) mod testsim;
pub mod tlb;

use memscope_core::Probe;

/// The generic (backend-independent) probes, in run order (later probes read earlier findings).
pub fn probes() -> Vec<Box<dyn Probe>> {
    vec![
        Box::new(l1::line::LineProbe),
        Box::new(tlb::TlbProbe),
        Box::new(latency::LatencyProbe),
        Box::new(latency::penalty::PenaltyProbe),
        Box::new(l1::ways_sets::EvsetProbe),
        Box::new(l1::ways_sets::WaysProbe),
        Box::new(l1::aliasing::IndexingProbe),
        Box::new(l1::index_masks::IndexProbe),
        Box::new(l1::ways_sets::SetsProbe),
        Box::new(l2::ways::L2WaysProbe),
        Box::new(l2::policy::L2PolicyProbe),
        Box::new(dram::DramProbe),
    ]
}
