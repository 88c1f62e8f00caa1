//! The `Target` trait (docs/ARCHITECTURE.md): the one instrument of the read path (seed 000, appendix "the
//! latency chase"). A target allocates memory and runs timed pointer chases over a chosen list of
//! addresses through a chosen cache path. Three implementations: `cuda` (a real GPU), `cpu` (the
//! host), `sim` (the simulated hierarchy). Discovery algorithms see only this trait.

pub use crate::target_error::TargetError;
use serde::{Deserialize, Serialize};
use std::any::Any;

/// Which path the chase's loads take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CachePath {
    /// Cached in L1 (`ld.global.ca` on NVIDIA; plain loads on a CPU).
    L1Cached,
    /// Bypassing L1, cached in L2 (`ld.global.cg`). A CPU target treats it as `L1Cached`
    /// and says so in `TargetInfo::bypass_supported`.
    L1Bypass,
}

/// A region of target memory. `base` is the virtual address the program sees (page-aligned for
/// large allocations); addresses given to `chase` are absolute virtual addresses inside some buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Buffer {
    /// Target-local handle.
    pub id: u64,
    /// Virtual address of the first byte.
    pub base: u64,
    /// Length in bytes.
    pub bytes: u64,
}

impl Buffer {
    /// Absolute address of byte `offset`.
    pub fn addr(&self, offset: u64) -> u64 {
        self.base + offset
    }
    /// Whether `addr` (with an 8-byte pointer at it) lies inside this buffer.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr + 8 <= self.base + self.bytes
    }
}

/// One timed chase. The addresses are visited as one cycle in the given order
/// (`addrs[0] -> addrs[1] -> ... -> addrs[n-1] -> addrs[0]`), each hop a dependent load.
/// With `warps > 1`, the list is split round-robin into `warps` independent cycles chased
/// concurrently by the warps of one block on one SM (TLB scope experiments); on a CPU by one
/// thread interleaving the chains.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChaseSpec {
    /// Absolute virtual addresses (8-byte aligned), each inside an allocated buffer. The same
    /// 8-byte word must not appear twice (each holds its own next pointer).
    pub addrs: Vec<u64>,
    /// Cache path of the loads.
    pub path: CachePath,
    /// Timed hops (per chain).
    pub hops: u64,
    /// Untimed laps over the whole cycle before timing (warm-up); 0 means a cold start after
    /// whatever state the caches are in (call `flush` first to control it).
    pub warmup_laps: u32,
    /// Number of timed repetitions (each gives one sample in `ChaseResult::ns_per_hop`).
    pub repeats: u32,
    /// Record the time of each hop of the last repetition (`ChaseResult::per_hop_ns`).
    pub per_hop: bool,
    /// Run on this SM (GPU) or core (CPU) when the target can place work; `None`: anywhere.
    pub sm: Option<u32>,
    /// Independent chains chased concurrently (see above); 1 for a plain chase.
    pub warps: u32,
}

impl ChaseSpec {
    /// A plain single-chain chase with sensible defaults (2 warm-up laps, 5 repeats).
    pub fn new(addrs: Vec<u64>, path: CachePath, hops: u64) -> Self {
        ChaseSpec { addrs, path, hops, warmup_laps: 2, repeats: 5, per_hop: false, sm: None, warps: 1 }
    }
}

/// What a chase measured.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChaseResult {
    /// Mean nanoseconds per hop, one sample per repetition.
    pub ns_per_hop: Vec<f64>,
    /// Mean cycles per hop, one sample per repetition, where the target counts cycles.
    pub cycles_per_hop: Option<Vec<f64>>,
    /// Per-hop nanoseconds of the last repetition, when `per_hop` was asked (and supported).
    pub per_hop_ns: Option<Vec<f64>>,
    /// A second clock: each repetition's whole launch timed from the host side (device events on a
    /// GPU), in ns, the first repetition's warm-up laps and the launch overhead included. Its slope
    /// over two hop counts is a latency independent of the in-kernel timers. None where the target
    /// has no such clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_ns: Option<Vec<f64>>,
}

/// What a target says about itself (recorded in the results' "target" object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// "cpu", "cuda" or "sim".
    pub kind: String,
    /// Stable id used in results and on the command line: "cpu", "cuda:0", "sim:rtx4090".
    pub id: String,
    /// Human name ("NVIDIA H200", "AMD EPYC", "simulated RTX 4090").
    pub name: String,
    /// Clock used to convert ns to cycles, in Hz, when known.
    pub clock_hz: Option<f64>,
    /// Whether `CachePath::L1Bypass` really bypasses L1 on this target.
    pub bypass_supported: bool,
    /// Whether `alloc_aliased` works.
    pub aliasing_supported: bool,
    /// Whether per-hop timing works.
    pub per_hop_supported: bool,
    /// Whether the hierarchy has the GPU shape the generic discovery probes (crates/probe) are
    /// written for: an L1 and a TLB per SM in front of a shared L2 and DRAM, reached through the
    /// chase instrument. False for the host CPU, whose cache levels its own cpu.* probes measure.
    /// Results written before this field read it as false; applicability is decided on the live
    /// target's info, never on a file's.
    #[serde(default)]
    pub gpu_hierarchy: bool,
    /// Number of SMs (GPU) or cores (CPU): what `capabilities.unit_name` names.
    pub units: u32,
    /// What the target can do and how the runner and the reports treat it (flags, never a test
    /// of `kind`). Results written before this field get it from their `kind` when read
    /// (`TargetInfo::fill_legacy_capabilities`).
    #[serde(default)]
    pub capabilities: Capabilities,
    /// Anything else worth recording (driver, compute capability, memory size...).
    #[serde(default)]
    pub details: serde_json::Map<String, serde_json::Value>,
}

/// Capability flags of a target (probes, the runner, reports and exports ask these, not
/// the target's kind).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Launches CUDA kernels on a real GPU (what the GPU-only probes need).
    pub cuda_kernels: bool,
    /// Runs on the host's own cores: its probes run in the CPU lane, on a core of their own
    /// beside the GPU probes, and a document it shares with a GPU lists it second.
    pub host_cores: bool,
    /// Its probes measure its clock again as the run goes on (host turbo moves with load): the
    /// runner records the target again after them, so cycles are counted in the clock they saw.
    pub clock_remeasured: bool,
    /// What `TargetInfo::units` counts, singular ("SM", "core"); empty in results written
    /// before capabilities existed.
    pub unit_name: String,
}

impl Capabilities {
    /// A real CUDA GPU.
    pub fn cuda_gpu() -> Self {
        Capabilities { cuda_kernels: true, unit_name: "SM".into(), ..Default::default() }
    }
    /// A simulated GPU: the GPU's shape, no kernels.
    pub fn simulated_gpu() -> Self {
        Capabilities { unit_name: "SM".into(), ..Default::default() }
    }
    /// The host CPU.
    pub fn host_cpu() -> Self {
        Capabilities { host_cores: true, clock_remeasured: true, unit_name: "core".into(), ..Default::default() }
    }
}

impl TargetInfo {
    /// Results written before capabilities existed carry none (an empty unit name): derive them
    /// from the kind those files recorded ("cuda", "cpu", "sim"). The only place a kind names a
    /// capability, and only for old files.
    pub fn fill_legacy_capabilities(&mut self) {
        self.capabilities = self.effective_capabilities();
    }

    /// The capabilities, or for a file written before they existed those its kind implies.
    pub fn effective_capabilities(&self) -> Capabilities {
        if !self.capabilities.unit_name.is_empty() {
            return self.capabilities.clone();
        }
        match self.kind.as_str() {
            "cuda" => Capabilities::cuda_gpu(),
            "cpu" => Capabilities::host_cpu(),
            "fleet" => Capabilities { unit_name: "target".into(), ..Default::default() },
            _ => Capabilities::simulated_gpu(),
        }
    }
}

/// A machine (or model of one) that discovery algorithms measure through pointer chases.
pub trait Target: Send {
    /// Identity and capabilities.
    fn info(&self) -> TargetInfo;
    /// Allocate `bytes` of device (or host) memory; large allocations are aligned to the page.
    fn alloc(&mut self, bytes: u64) -> Result<Buffer, TargetError>;
    /// Allocate `bytes` of physical memory mapped at two virtual ranges (seed 000, footnotes 3
    /// and 6). Default: unsupported.
    fn alloc_aliased(&mut self, bytes: u64) -> Result<(Buffer, Buffer), TargetError> {
        let _ = bytes;
        Err(TargetError::Unsupported("aliased mappings".into()))
    }
    /// Release a buffer (and, for an aliased pair, pass either half).
    fn free(&mut self, buf: Buffer);
    /// Evict everything the target can evict (caches and TLBs), so the next chase starts cold.
    fn flush(&mut self) -> Result<(), TargetError>;
    /// Run one timed chase.
    fn chase(&mut self, spec: &ChaseSpec) -> Result<ChaseResult, TargetError>;
    /// Why this target can no longer be used in this process (a GPU fault the driver keeps until
    /// the process ends), or None while it works. The runner then continues the remaining probes
    /// in a fresh memscope process.
    fn unusable(&self) -> Option<String> {
        None
    }
    /// The host's peer GPUs as an instrument (crate::links), when this target has peers it can
    /// measure (docs/INTERCONNECT.md). Default: none.
    fn peer_links(&mut self) -> Option<&mut dyn crate::links::PeerLinks> {
        None
    }
    /// Downcast hook for backend-specific probes (the CPU strided copy, GPU bandwidth...); reached
    /// only through `concrete`.
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

/// The backend target behind `target` when it is a `T` (the CUDA target for a GPU-only probe, the
/// CPU target for the CPU's): the one place a target is downcast.
pub fn concrete<T: Target + 'static>(target: &mut dyn Target) -> Option<&mut T> {
    target.as_any_mut().downcast_mut::<T>()
}

#[cfg(test)]
mod tests {
    use super::TargetInfo;

    #[test]
    fn a_target_recorded_before_gpu_hierarchy_still_loads() {
        let old = r#"{"kind": "cuda", "id": "cuda:0", "name": "NVIDIA H200", "clock_hz": null,
            "bypass_supported": true, "aliasing_supported": true, "per_hop_supported": true, "units": 132}"#;
        let info: TargetInfo = serde_json::from_str(old).unwrap();
        assert!(!info.gpu_hierarchy && info.bypass_supported);
    }
}

#[cfg(test)]
mod capability_tests {
    use super::*;

    fn info(kind: &str, capabilities: Capabilities) -> TargetInfo {
        TargetInfo {
            kind: kind.into(),
            id: kind.into(),
            name: kind.into(),
            clock_hz: None,
            bypass_supported: false,
            aliasing_supported: false,
            per_hop_supported: false,
            gpu_hierarchy: false,
            units: 1,
            capabilities,
            details: Default::default(),
        }
    }

    #[test]
    fn recorded_capabilities_win_and_old_files_get_those_of_their_kind() {
        // a target that says what it can do is taken at its word, whatever its kind
        let odd = Capabilities { host_cores: true, unit_name: "core".into(), ..Default::default() };
        assert_eq!(info("sim", odd.clone()).effective_capabilities(), odd);
        // files written before the field: derived from the kind, once
        assert_eq!(info("cuda", Capabilities::default()).effective_capabilities(), Capabilities::cuda_gpu());
        assert_eq!(info("cpu", Capabilities::default()).effective_capabilities(), Capabilities::host_cpu());
        assert_eq!(info("sim", Capabilities::default()).effective_capabilities(), Capabilities::simulated_gpu());
        let mut old: TargetInfo = serde_json::from_value(serde_json::json!({
            "kind": "cpu", "id": "cpu", "name": "old", "clock_hz": null, "bypass_supported": false,
            "aliasing_supported": false, "per_hop_supported": true, "units": 8
        }))
        .expect("an old target record parses");
        old.fill_legacy_capabilities();
        assert!(old.capabilities.host_cores && old.capabilities.clock_remeasured && !old.capabilities.cuda_kernels);
        assert_eq!(old.capabilities.unit_name, "core");
    }
}
