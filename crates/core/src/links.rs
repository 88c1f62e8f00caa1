//! The interconnect between the GPUs of one host (docs/INTERCONNECT.md): the `PeerLinks` instrument a target
//! offers when it can copy to and chase over its peers' memory (the CUDA target on a host with
//! several GPUs; a simulated target whose hierarchy has a `links` section), and that section's
//! serde types (`LinksSpec`, docs/CONTRACTS.md "links"). The peer probe (crates/probe/src/peer.rs)
//! sees only this trait, so its matrix and outlier analysis run unchanged on simulated GPUs.

use crate::target_error::TargetError;
use serde::{Deserialize, Serialize};

/// Who moves the bytes: the copy engines (an async memcpy) or the SMs (a copy kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Ce,
    Sm,
}

impl Engine {
    /// "ce" or "sm", as in nvbandwidth's test names.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Ce => "ce",
            Engine::Sm => "sm",
        }
    }
}

/// One timed peer copy: `bytes` from GPU `src`'s memory to GPU `dst`'s; bidirectional: the same
/// size from `dst` to `src` runs at the same time (only the src -> dst copy is timed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCopy {
    pub src: usize,
    pub dst: usize,
    pub engine: Engine,
    pub bidirectional: bool,
    pub bytes: u64,
}

/// Whether GPU `from` can reach GPU `to`'s memory directly: data of the peer matrix, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerAccess {
    /// Peer access is enabled.
    Enabled,
    /// It is not, and why (a sentence for the results).
    Refused(String),
}

impl PeerAccess {
    pub fn is_enabled(&self) -> bool {
        matches!(self, PeerAccess::Enabled)
    }
}

/// The peers of one host as an instrument. GPU indices are the host's (0 .. gpus()).
pub trait PeerLinks {
    /// GPUs on this host.
    fn gpus(&self) -> usize;
    /// Whether GPU `from` can reach GPU `to`'s memory directly (peer access enabled where the
    /// driver allows it), or the reason it cannot.
    fn access(&mut self, from: usize, to: usize) -> PeerAccess;
    /// `reps` samples of the seconds one copy takes (after a warm-up).
    fn copy_seconds(&mut self, copy: &PeerCopy, reps: usize) -> Result<Vec<f64>, TargetError>;
    /// `reps` samples of the ns per hop of a dependent pointer chase run by GPU `from` over
    /// memory of GPU `to` (the whole chase's time over its hops).
    fn latency_ns(&mut self, from: usize, to: usize, reps: usize) -> Result<Vec<f64>, TargetError>;
    /// One line on how the instrument works (goes into the findings' method).
    fn describe(&self) -> String;
}

/// Most GPUs of one simulated host (an NVLink domain of 72 GPUs is the largest built); the peer
/// probe copies between every ordered pair.
pub const MAX_LINK_GPUS: u32 = 72;
/// Slowest and fastest link rate accepted, bytes/s (1 kB/s to 1 PB/s).
pub const LINK_BYTES_PER_S_RANGE: (f64, f64) = (1e3, 1e15);
/// Longest link latency or copy setup accepted: one second.
pub const MAX_LINK_TIME_NS: f64 = 1e9;

fn rate_range(v: f64) -> String {
    format!("must be from {:e} to {:e} bytes/s (got {v})", LINK_BYTES_PER_S_RANGE.0, LINK_BYTES_PER_S_RANGE.1)
}

/// Extension of the simulated hierarchy: the links of a simulated host of `gpus` GPUs, of which
/// this hierarchy is GPU `index`. Every ordered pair has the default rate and latency unless
/// `pairs` says otherwise (a slowed link, no peer access).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinksSpec {
    /// GPUs on the simulated host (at least 1).
    pub gpus: u32,
    /// Which of them this hierarchy is (0-based, below `gpus`).
    pub index: u32,
    /// Copy-engine rate of one direction of a peer link, bytes/s (default 4.0e11).
    pub peer_bytes_per_s: f64,
    /// Latency of one dependent load over a peer link, ns (default 900).
    pub peer_latency_ns: f64,
    /// Fixed cost of one copy (its setup), ns (default 5000).
    pub copy_setup_ns: f64,
    /// Fraction of the copy-engine rate a copy kernel reaches (default 0.95).
    pub sm_fraction: f64,
    /// Fraction of a direction's rate left when both directions run (default 0.92).
    pub bidirectional_fraction: f64,
    /// Relative standard deviation of every timed sample (default 0.005).
    pub noise_fraction: f64,
    /// Exceptions for ordered pairs.
    pub pairs: Vec<PairSpec>,
}

/// One ordered pair that differs from the defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairSpec {
    pub from: u32,
    pub to: u32,
    /// This direction's copy-engine rate, bytes/s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_s: Option<f64>,
    /// This direction's load latency, ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ns: Option<f64>,
    /// Why `from` cannot access `to` directly (no peer access), when it cannot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_access: Option<String>,
}

impl Default for LinksSpec {
    fn default() -> Self {
        LinksSpec {
            gpus: 1,
            index: 0,
            peer_bytes_per_s: 4.0e11,
            peer_latency_ns: 900.0,
            copy_setup_ns: 5000.0,
            sm_fraction: 0.95,
            bidirectional_fraction: 0.92,
            noise_fraction: 0.005,
            pairs: vec![],
        }
    }
}

impl LinksSpec {
    /// The exception for `from -> to`, if any.
    pub fn pair(&self, from: usize, to: usize) -> Option<&PairSpec> {
        self.pairs.iter().find(|p| p.from as usize == from && p.to as usize == to)
    }

    /// The copy-engine rate of `from -> to`, bytes/s.
    pub fn rate(&self, from: usize, to: usize) -> f64 {
        self.pair(from, to).and_then(|p| p.bytes_per_s).unwrap_or(self.peer_bytes_per_s)
    }

    /// The load latency of `from -> to`, ns.
    pub fn latency(&self, from: usize, to: usize) -> f64 {
        self.pair(from, to).and_then(|p| p.latency_ns).unwrap_or(self.peer_latency_ns)
    }

    /// Check every field; the error names the offending one ("links.pairs[1].to: ...").
    /// The bounds (docs/CONTRACTS.md, "Limits") keep the peer probe's work, quadratic in
    /// `gpus`, and its times finite.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let bad = |f: &str, m: String| Err((format!("links.{f}"), m));
        if self.gpus == 0 || self.gpus > MAX_LINK_GPUS {
            return bad("gpus", format!("must be in 1..={MAX_LINK_GPUS} (got {})", self.gpus));
        }
        let most_pairs = self.gpus as usize * (self.gpus as usize - 1);
        if self.pairs.len() > most_pairs {
            return bad(
                "pairs",
                format!("{} pairs, at most {most_pairs} (one per ordered pair of GPUs)", self.pairs.len()),
            );
        }
        if self.index >= self.gpus {
            return bad("index", format!("must be below links.gpus = {} (got {})", self.gpus, self.index));
        }
        let positive = |v: f64| v.is_finite() && (LINK_BYTES_PER_S_RANGE.0..=LINK_BYTES_PER_S_RANGE.1).contains(&v);
        if !positive(self.peer_bytes_per_s) {
            return bad("peer_bytes_per_s", rate_range(self.peer_bytes_per_s));
        }
        for (f, v) in [("peer_latency_ns", self.peer_latency_ns), ("copy_setup_ns", self.copy_setup_ns)] {
            if !v.is_finite() || !(0.0..=MAX_LINK_TIME_NS).contains(&v) {
                return bad(f, format!("must be a finite number from 0 to {MAX_LINK_TIME_NS:e} (got {v})"));
            }
        }
        for (f, v) in [("sm_fraction", self.sm_fraction), ("bidirectional_fraction", self.bidirectional_fraction)] {
            if !(v.is_finite() && v > 0.0 && v <= 1.0) {
                return bad(f, format!("must be in (0, 1] (got {v})"));
            }
        }
        if !(self.noise_fraction.is_finite() && (0.0..0.5).contains(&self.noise_fraction)) {
            return bad("noise_fraction", format!("must be in [0, 0.5) (got {})", self.noise_fraction));
        }
        for (i, p) in self.pairs.iter().enumerate() {
            for (f, v) in [("from", p.from), ("to", p.to)] {
                if v >= self.gpus {
                    return bad(
                        &format!("pairs[{i}].{f}"),
                        format!("must be below links.gpus = {} (got {v})", self.gpus),
                    );
                }
            }
            if p.from == p.to {
                return bad(&format!("pairs[{i}].to"), format!("a pair joins two GPUs (from = to = {})", p.to));
            }
            if let Some(r) = p.bytes_per_s.filter(|r| !positive(*r)) {
                return bad(&format!("pairs[{i}].bytes_per_s"), rate_range(r));
            }
            if let Some(l) = p.latency_ns.filter(|l| !l.is_finite() || !(0.0..=MAX_LINK_TIME_NS).contains(l)) {
                return bad(
                    &format!("pairs[{i}].latency_ns"),
                    format!("must be a finite number from 0 to {MAX_LINK_TIME_NS:e} (got {l})"),
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_exceptions() {
        let mut l = LinksSpec { gpus: 4, ..Default::default() };
        l.pairs.push(PairSpec { from: 0, to: 3, bytes_per_s: Some(2.0e11), latency_ns: None, no_access: None });
        assert!(l.validate().is_ok());
        assert_eq!(l.rate(0, 3), 2.0e11);
        assert_eq!(l.rate(3, 0), 4.0e11);
        assert_eq!(l.latency(0, 3), 900.0);
    }

    #[test]
    fn bad_fields_are_named() {
        let l = LinksSpec { gpus: 2, index: 2, ..Default::default() };
        assert_eq!(l.validate().unwrap_err().0, "links.index");
        let mut l = LinksSpec { gpus: 2, ..Default::default() };
        l.pairs.push(PairSpec { from: 1, to: 1, bytes_per_s: None, latency_ns: None, no_access: None });
        assert_eq!(l.validate().unwrap_err().0, "links.pairs[0].to");
        let l = LinksSpec { gpus: 2, peer_bytes_per_s: -1.0, ..Default::default() };
        assert_eq!(l.validate().unwrap_err().0, "links.peer_bytes_per_s");
        let l = LinksSpec { gpus: 2, sm_fraction: 0.0, ..Default::default() };
        assert_eq!(l.validate().unwrap_err().0, "links.sm_fraction");
    }
}
