//! Behaviour digest (for speed work on the simulator: the digest must not change): runs chases
//! (per-hop times, several warps, L1/L2/DRAM footprints, aliases, flushes), stores and a small
//! vadd on the presets, variants (physical L1, LRU/FIFO L2, two partitions) and random
//! hierarchies, and prints one FNV-1a hash of every time and counter.
//!
//! Run: `cargo run --release -p memscope-sim --example sim_digest`. Its test (run by `cargo test`:
//! the example is built with `test = true`) holds the digest to `DIGEST`; a deliberate change of
//! the model's behaviour updates that value in the same commit.
use memscope_core::{CachePath, ChaseSpec, Target};
use memscope_sim::hierarchy::{HashFunction, Hierarchy, Indexing, Mask, Replacement};
use memscope_sim::tlb::SplitMix;
use memscope_sim::{vadd::run_vadd, SimTarget};

struct Fnv(u64);
impl Fnv {
    fn add(&mut self, x: u64) {
        for b in x.to_le_bytes() {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100000001b3);
        }
    }
    fn f(&mut self, xs: &[f64]) {
        xs.iter().for_each(|x| self.add(x.to_bits()));
    }
    fn s(&mut self, s: &str) {
        s.bytes().for_each(|b| self.add(b as u64));
    }
}

fn random(seed: u64) -> Hierarchy {
    let mut r = SplitMix(seed);
    let mut m = |n: u32, lo: u32| -> Vec<Mask> {
        (0..n)
            .map(|i| Mask((r.next_u64() & (((1u64 << (34 - lo)) - 1) << lo) & !((1 << (lo + n)) - 1)) | 1 << (lo + i)))
            .collect()
    };
    let mut h = Hierarchy { name: format!("random {seed}"), page_bytes: 1 << (16 + seed % 6), ..Hierarchy::default() };
    h.tlb.entries = 8 + (seed as u32 * 7) % 57;
    h.l1.ways = 2 + (seed as u32 * 5) % 31;
    h.l1.sets = 1 << (3 + seed % 4);
    h.l1.index_masks = m(3 + (seed % 4) as u32, 7);
    h.l2.ways = 2 + (seed as u32 * 3) % 31;
    h.l2.slices = 1 << (seed % 4);
    h.l2.sets_per_slice = 1 << (6 + seed % 4);
    h.l2.set_function = HashFunction::Masks { masks: m(6 + (seed % 4) as u32, 7) };
    h.l2.slice_function = HashFunction::Masks { masks: m((seed % 4) as u32, 7) };
    h.noise.jitter_ns = 0.5;
    h.noise.outlier_fraction = 0.001;
    h.noise.seed = seed;
    h
}

fn shuffled(base: u64, n: u64, stride: u64, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).map(|i| base + i * stride).collect();
    let mut r = SplitMix(seed);
    for i in (1..v.len()).rev() {
        v.swap(i, r.below(i as u64 + 1) as usize);
    }
    v
}

fn workload(mut t: SimTarget, d: &mut Fnv) {
    let b = t.alloc(96 << 20).unwrap();
    let (x, y) = t.alloc_aliased(4 << 20).unwrap();
    for (k, (n, stride, path, warps, hops)) in [
        (48u64, 128u64, CachePath::L1Cached, 1u32, 3000u64),
        (4096, 128, CachePath::L1Cached, 1, 20000),
        (65536, 256, CachePath::L1Bypass, 1, 100000),
        (600_000, 128, CachePath::L1Cached, 1, 100000),
        (20000, 4096, CachePath::L1Cached, 4, 40000),
        (3000, 2 << 20, CachePath::L1Bypass, 1, 3000),
    ]
    .into_iter()
    .enumerate()
    {
        let n = n.min((96 << 20) / stride);
        let mut s = ChaseSpec::new(shuffled(b.base, n, stride, k as u64), path, hops);
        s.per_hop = true;
        s.warps = warps;
        s.repeats = 2;
        let r = t.chase(&s).unwrap();
        d.f(&r.ns_per_hop);
        d.f(r.per_hop_ns.as_deref().unwrap_or(&[]));
        if k == 3 {
            t.flush().unwrap();
        }
    }
    let mut s = ChaseSpec::new(vec![x.base, y.base + 128, x.base + 4096, y.base], CachePath::L1Cached, 500);
    s.per_hop = true;
    d.f(t.chase(&s).unwrap().per_hop_ns.as_deref().unwrap_or(&[]));
    let m = t.machine();
    for i in 0..200_000u64 {
        let va = b.base + (i.wrapping_mul(0x9E3779B97F4A7C15) >> 40) % (64 << 20);
        let len = 1 + i % 64;
        let va = (va & !127) | ((i * 8) % (128 - len.min(127)));
        if i % 3 == 0 {
            let r = m.store((i % 7) as u32, va, len, i as f64 * 2.0);
            d.add(r.l2_hit as u64 + ((r.writebacks as u64) << 1) + ((r.slice as u64) << 8));
        } else {
            let r = m.load((i % 5) as u32, va, len, i % 4 == 0, i as f64 * 2.0);
            d.add(r.latency_ns.to_bits() ^ r.l2_set as u64 ^ (r.tlb_miss as u64) << 40);
        }
    }
    d.s(&serde_json::to_string(t.stats()).unwrap());
    t.free(b);
    t.free(x);
}

/// The digest of the current model (docs/PERFORMANCE.md, "Same behaviour, only faster").
const DIGEST: u64 = 0xb94e_ccd9_a9fb_dd0a;

fn main() {
    let d = digest(|line| println!("{line}"));
    let verdict = if d == DIGEST { "unchanged".to_string() } else { format!("CHANGED, was {DIGEST:016x}") };
    println!("digest {d:016x} ({verdict})");
}

/// The digest, telling `progress` the running value after each hierarchy.
fn digest(mut progress: impl FnMut(String)) -> u64 {
    let mut d = Fnv(0xcbf29ce484222325);
    let mut hs =
        vec![memscope_sim::presets::preset("rtx4090").unwrap(), memscope_sim::presets::preset("l40s").unwrap()];
    let mut v = hs[0].clone();
    v.l1.indexing = Indexing::Physical;
    v.l2.replacement = Replacement::Lru;
    v.l2.partitions = 2;
    v.l2.far_hit_ns = Some(180.0);
    v.noise.jitter_ns = 1.0;
    v.noise.outlier_fraction = 0.01;
    hs.push(v.clone());
    v.l2.replacement = Replacement::Fifo;
    v.l2.indexing = Indexing::Virtual;
    v.l1.replacement = Replacement::Fifo;
    hs.push(v);
    hs.extend((1..=6).map(random));
    for h in hs {
        let name = h.name.clone();
        match SimTarget::new(h) {
            Ok(t) => workload(t, &mut d),
            Err(e) => progress(format!("{name}: {e}")),
        }
        progress(format!("{name}: {:016x}", d.0));
    }
    let mut t = SimTarget::from_preset("rtx4090").unwrap();
    let (rep, _) = run_vadd(&mut t, 1 << 20, 0).unwrap();
    d.s(&serde_json::to_string(&rep).unwrap());
    d.0
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_models_behaviour_is_unchanged() {
        let d = super::digest(|_| {});
        assert_eq!(d, super::DIGEST, "simulator digest {d:016x}, expected {:016x}", super::DIGEST);
    }
}
