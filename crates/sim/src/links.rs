//! The simulated host's links (docs/INTERCONNECT.md): the `PeerLinks` instrument of a simulated GPU whose
//! hierarchy has a `links` section (docs/CONTRACTS.md). A copy of `bytes` from GPU a to GPU b takes
//! copy_setup_ns + bytes / rate(a, b), the rate scaled by sm_fraction for a copy kernel and by
//! bidirectional_fraction when both directions run; a chase hop over a peer's memory takes
//! latency(a, b). Every sample gets a normal relative noise of noise_fraction from the
//! hierarchy's noise seed and the pair, so runs repeat exactly and pairs differ.

use memscope_core::links::{Engine, LinksSpec, PeerAccess, PeerCopy, PeerLinks};
use memscope_core::TargetError;
use rand::{Rng, SeedableRng};

/// The links of one simulated GPU's host.
pub struct SimLinks {
    spec: LinksSpec,
    rng: rand_chacha::ChaCha8Rng,
}

impl SimLinks {
    pub fn new(spec: LinksSpec, seed: u64) -> SimLinks {
        SimLinks { spec, rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x11_4b5) }
    }

    /// The description simulated.
    pub fn spec(&self) -> &LinksSpec {
        &self.spec
    }

    fn check(&self, a: usize, b: usize) -> Result<(), TargetError> {
        let n = self.spec.gpus as usize;
        if a >= n || b >= n || a == b {
            return Err(TargetError::BadSpec(format!("peer pair {a} -> {b}: the simulated host has GPUs 0..{n}")));
        }
        if let Some(why) = self.spec.pair(a, b).and_then(|p| p.no_access.clone()) {
            return Err(TargetError::Unsupported(format!("GPU {a} cannot access GPU {b}: {why}")));
        }
        Ok(())
    }

    fn noisy(&mut self, v: f64, n: usize) -> Vec<f64> {
        let sigma = self.spec.noise_fraction;
        (0..n)
            .map(|_| {
                // Box-Muller: one standard normal from two uniforms.
                let (u1, u2): (f64, f64) = (self.rng.gen_range(1e-12..1.0), self.rng.gen());
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                v * (1.0 + (sigma * z).clamp(-0.4, 0.4))
            })
            .collect()
    }
}

impl PeerLinks for SimLinks {
    fn gpus(&self) -> usize {
        self.spec.gpus as usize
    }

    fn access(&mut self, from: usize, to: usize) -> PeerAccess {
        match self.check(from, to) {
            Ok(()) => PeerAccess::Enabled,
            Err(TargetError::Unsupported(m)) => PeerAccess::Refused(m),
            Err(other) => PeerAccess::Refused(other.to_string()),
        }
    }

    fn copy_seconds(&mut self, c: &PeerCopy, reps: usize) -> Result<Vec<f64>, TargetError> {
        self.check(c.src, c.dst)?;
        let mut rate = self.spec.rate(c.src, c.dst);
        if c.engine == Engine::Sm {
            rate *= self.spec.sm_fraction;
        }
        if c.bidirectional {
            self.check(c.dst, c.src)?;
            rate *= self.spec.bidirectional_fraction;
        }
        let secs = self.spec.copy_setup_ns * 1e-9 + c.bytes as f64 / rate;
        Ok(self.noisy(secs, reps))
    }

    fn latency_ns(&mut self, from: usize, to: usize, reps: usize) -> Result<Vec<f64>, TargetError> {
        self.check(from, to)?;
        let l = self.spec.latency(from, to);
        Ok(self.noisy(l, reps))
    }

    fn describe(&self) -> String {
        "the simulated host's links (hierarchy `links` section: setup + bytes / rate per copy, a fixed latency per hop, \
         relative noise)"
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memscope_core::links::PairSpec;

    #[test]
    fn copies_follow_the_description() {
        let mut spec = LinksSpec { gpus: 3, noise_fraction: 0.0, copy_setup_ns: 0.0, ..Default::default() };
        spec.pairs.push(PairSpec {
            from: 0,
            to: 2,
            bytes_per_s: Some(1e11),
            latency_ns: Some(2000.0),
            no_access: None,
        });
        spec.pairs.push(PairSpec {
            from: 1,
            to: 2,
            bytes_per_s: None,
            latency_ns: None,
            no_access: Some("no P2P".into()),
        });
        let mut l = SimLinks::new(spec, 1);
        let c = PeerCopy { src: 0, dst: 2, engine: Engine::Ce, bidirectional: false, bytes: 1 << 30 };
        let s = l.copy_seconds(&c, 3).unwrap();
        assert!((s[0] - (1u64 << 30) as f64 / 1e11).abs() < 1e-12);
        let c = PeerCopy { src: 0, dst: 1, engine: Engine::Sm, bidirectional: true, ..c };
        let s = l.copy_seconds(&c, 1).unwrap()[0];
        assert!((s - (1u64 << 30) as f64 / (4e11 * 0.95 * 0.92)).abs() < 1e-12);
        assert_eq!(l.latency_ns(0, 2, 2).unwrap(), vec![2000.0, 2000.0]);
        assert!(matches!(l.access(1, 2), PeerAccess::Refused(why) if why.contains("no P2P")));
        assert!(l.access(2, 1).is_enabled());
        assert!(l.copy_seconds(&PeerCopy { src: 1, dst: 2, ..c }, 1).is_err());
    }
}
