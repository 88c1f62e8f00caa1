//! A tiny private test double for unit tests: one virtually indexed, LRU, set-associative L1 with
//! an XOR index function in front of a flat 120 ns next level. Not the simulator (crates/sim);
//! just enough to exercise the search algorithms without it.

use memscope_core::{Buffer, CachePath, ChaseResult, ChaseSpec, Target, TargetError, TargetInfo};

pub struct ToyCache {
    ways: usize,
    line_shift: u32,
    masks: Vec<u64>,
    sets: Vec<Vec<u64>>,
    next_base: u64,
    pub hit_ns: f64,
    pub miss_ns: f64,
}

impl ToyCache {
    pub fn new(ways: usize, sets: usize, line: u64, masks: Vec<u64>) -> Self {
        assert_eq!(1usize << masks.len(), sets);
        ToyCache {
            ways,
            line_shift: line.trailing_zeros(),
            masks,
            sets: vec![Vec::new(); sets],
            next_base: 1 << 30,
            hit_ns: 15.0,
            miss_ns: 120.0,
        }
    }
    fn set_of(&self, a: u64) -> usize {
        memscope_core::gf2::apply(&self.masks, a) as usize
    }
    fn access(&mut self, a: u64, path: CachePath) -> f64 {
        if path == CachePath::L1Bypass {
            return self.miss_ns;
        }
        let line = a >> self.line_shift;
        let s = self.set_of(a);
        let set = &mut self.sets[s];
        if let Some(p) = set.iter().position(|&l| l == line) {
            set.remove(p);
            set.push(line);
            self.hit_ns
        } else {
            if set.len() == self.ways {
                set.remove(0);
            }
            set.push(line);
            self.miss_ns
        }
    }
}

impl Target for ToyCache {
    fn info(&self) -> TargetInfo {
        TargetInfo {
            kind: "sim".into(),
            id: "toy".into(),
            name: "toy cache".into(),
            clock_hz: Some(1e9),
            bypass_supported: true,
            aliasing_supported: false,
            per_hop_supported: true,
            gpu_hierarchy: true,
            units: 1,
            capabilities: memscope_core::Capabilities::simulated_gpu(),
            details: Default::default(),
        }
    }
    fn alloc(&mut self, bytes: u64) -> Result<Buffer, TargetError> {
        let base = self.next_base;
        self.next_base += bytes.div_ceil(1 << 21) * (1 << 21) + (1 << 21);
        Ok(Buffer { id: base, base, bytes })
    }
    fn free(&mut self, _buf: Buffer) {}
    fn flush(&mut self) -> Result<(), TargetError> {
        self.sets.iter_mut().for_each(|s| s.clear());
        Ok(())
    }
    fn chase(&mut self, spec: &ChaseSpec) -> Result<ChaseResult, TargetError> {
        let n = spec.addrs.len();
        for _ in 0..spec.warmup_laps {
            for &a in &spec.addrs {
                self.access(a, spec.path);
            }
        }
        let mut means = Vec::new();
        let mut last = Vec::new();
        let mut i = 0usize;
        for _ in 0..spec.repeats.max(1) {
            last.clear();
            for _ in 0..spec.hops {
                let a = spec.addrs[i % n];
                i += 1;
                last.push(self.access(a, spec.path));
            }
            means.push(last.iter().sum::<f64>() / last.len().max(1) as f64);
        }
        Ok(ChaseResult {
            ns_per_hop: means,
            cycles_per_hop: None,
            per_hop_ns: spec.per_hop.then_some(last),
            host_ns: None,
        })
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}
