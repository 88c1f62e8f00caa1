//! The accelerated route of a chase of one chain (speed only; the hops are seed 000's latency
//! chase): `SimTarget`'s several-chain loop (target/mod.rs) takes one `Machine::pre_with` and one
//! `Machine::hop_pre` per hop; one chain takes `chase_chain` instead, which computes the same
//! hops a batch at a time (`Pre`s by page halves: `presplit`; the two-pass batches: `staged`).

use super::{noisy, SimTarget};
use crate::machine::{PageParts, Pre, STAGED_AHEAD};

/// The `Pre`s past a batch that `Machine::chase_staged` reads for its host prefetches, and the
/// hops per batch.
const AHEAD: usize = STAGED_AHEAD;
const BATCH: usize = 512;

/// `hops` hops of the chain `c` on SM `sm` of `t`, from position `pos` at time `clock` (both
/// advanced), the sum of their latencies added to `sums`, each recorded in `rec`: the state
/// changes, counters, latencies and noise draws of `hops` hops of the plain loop.
/// `table`: the chain's `Pre`s, one per address (empty: not tabled, computed a batch at a
/// time, by `parts` where the hierarchy allows).
#[allow(clippy::too_many_arguments)]
pub(crate) fn chase_chain(
    t: &mut SimTarget,
    sm: u32,
    bypass: bool,
    c: &[u64],
    table: &[Pre],
    parts: &mut Option<PageParts>,
    pos: &mut usize,
    clock: &mut f64,
    sums: &mut f64,
    hops: u64,
    rec: Option<&mut Vec<f64>>,
) {
    t.chase_chain(sm, bypass, c, table, parts, pos, clock, sums, hops, rec)
}

impl SimTarget {
    /// `chase_chain`.
    #[allow(clippy::too_many_arguments)]
    fn chase_chain(
        &mut self,
        sm: u32,
        bypass: bool,
        c: &[u64],
        table: &[Pre],
        parts: &mut Option<PageParts>,
        pos: &mut usize,
        clock: &mut f64,
        sums: &mut f64,
        hops: u64,
        mut rec: Option<&mut Vec<f64>>,
    ) {
        let n = c.len();
        let mut t = *clock;
        let mut p = *pos;
        let mut sum = 0.0;
        // The path is known: the state-independent part of each load (`Pre`) is computed
        // ahead: once per address when the chase laps (`table`, from `chase_timed`), else a
        // batch at a time in a loop of its own (by page halves where the hierarchy allows:
        // `Machine::pre_split_into`; their tables stay in the host's L1 that way); then the
        // hops go through `Machine::chase_staged` a batch at a time, which prefetches on the
        // host the simulated sets of the hops ahead (speed only).
        let noise = self.m.h.noise.jitter_ns > 0.0 || self.m.h.noise.outlier_fraction > 0.0;
        if !table.is_empty() {
            let (t, sum, p) = self.run_table(sm, bypass, table, p, t, hops, noise, rec);
            (*clock, *pos) = (t, p);
            *sums += sum;
            return;
        }
        let mut batch = std::mem::take(&mut self.pre_batch);
        batch.resize(BATCH + AHEAD, Pre::default());
        let mut left = hops as usize;
        while left > 0 {
            // the next k hops' `Pre` and AHEAD more (for the prefetch), from `p` on, wrapping
            let k = left.min(BATCH);
            let (mut q, mut out) = (p, &mut batch[..k + AHEAD]);
            while !out.is_empty() {
                let run = (n - q).min(out.len());
                let (now, rest) = out.split_at_mut(run);
                match parts {
                    Some(pp) => self.m.pre_split_into(pp, &c[q..q + run], now, 8, !bypass),
                    None => now.iter_mut().zip(&c[q..q + run]).for_each(|(o, &a)| *o = self.m.pre_with(a, 8, !bypass)),
                }
                (q, out) = (if q + run == n { 0 } else { q + run }, rest);
            }
            self.run_staged(sm, bypass, &batch[..k + AHEAD], k, &mut t, &mut sum, noise, rec.as_deref_mut());
            p = (p + k) % n;
            left -= k;
        }
        self.pre_batch = batch;
        *clock = t;
        *sums += sum;
        *pos = p;
    }

    /// `Machine::chase_staged` of `pres[..k]` with this target's noise (clock `t`, running sum `sum`).
    #[allow(clippy::too_many_arguments)]
    fn run_staged(
        &mut self,
        sm: u32,
        bypass: bool,
        pres: &[Pre],
        k: usize,
        t: &mut f64,
        sum: &mut f64,
        noise: bool,
        rec: Option<&mut Vec<f64>>,
    ) {
        let mut st = std::mem::take(&mut self.staged);
        if noise {
            let (spec, mut rng) = (self.m.h.noise.clone(), self.noise.clone());
            self.m.chase_staged(sm, pres, k, bypass, t, sum, &mut st, &mut |ns| noisy(&spec, &mut rng, ns), rec);
            self.noise = rng;
        } else {
            self.m.chase_staged(sm, pres, k, bypass, t, sum, &mut st, &mut |ns: f64| ns.max(0.0), rec);
        }
        self.staged = st;
    }

    /// `hops` hops of one chain from position `p` at time `t` with its `Pre`s tabled: (time,
    /// sum of the hops' latencies, position) after them.
    #[allow(clippy::too_many_arguments)]
    fn run_table(
        &mut self,
        sm: u32,
        bypass: bool,
        table: &[Pre],
        mut p: usize,
        mut t: f64,
        hops: u64,
        noise: bool,
        mut rec: Option<&mut Vec<f64>>,
    ) -> (f64, f64, usize) {
        let n = table.len();
        let (mut sum, mut left) = (0.0, hops);
        while left > 0 {
            let k = (n - p).min(BATCH).min(left as usize);
            self.run_staged(
                sm,
                bypass,
                &table[p..(p + k + AHEAD).min(n)],
                k,
                &mut t,
                &mut sum,
                noise,
                rec.as_deref_mut(),
            );
            p = if p + k == n { 0 } else { p + k };
            left -= k as u64;
        }
        (t, sum, p)
    }
}

#[cfg(test)]
mod tests {
    use crate::target::SimTarget;
    use crate::tlb::SplitMix;
    use memscope_core::Target;

    /// `chase_chain` against the plain route (one `pre_with` and one `hop_pre` per hop, the
    /// several-chain loop's), on twin targets with noise: the same per-hop latencies bit for
    /// bit, clock, sum and position, tabled and not, through L1, L2 and DRAM footprints.
    #[test]
    fn chase_chain_is_the_plain_route_hop_by_hop() {
        crate::fast::hostcpu::both_ways(compare_chase_chain_with_plain_hops);
    }

    fn compare_chase_chain_with_plain_hops() {
        let mut h = crate::presets::rtx4090();
        (h.noise.jitter_ns, h.noise.outlier_fraction, h.noise.outlier_ns) = (3.0, 0.02, 400.0);
        let (mut a, mut b) = (SimTarget::new(h.clone()).unwrap(), SimTarget::new(h).unwrap());
        let buf = a.alloc(64 << 20).unwrap();
        assert_eq!(buf, b.alloc(64 << 20).unwrap());
        let mut rng = SplitMix(5);
        let (mut ca, mut cb, mut sa, mut sb, mut pa, mut pb) = (0.0, 0.0, 0.0, 0.0, 0usize, 0usize);
        for (round, lines) in [64u64, 2048, 40_000, 300_000, 500].into_iter().enumerate() {
            let bypass = round % 2 == 1;
            let chain: Vec<u64> = (0..lines).map(|_| buf.base + rng.below((64 << 20) / 128) * 128).collect();
            let (lo, hi) = (*chain.iter().min().unwrap(), *chain.iter().max().unwrap());
            let mut parts = a.m.page_parts(None, chain.len(), lo, hi);
            let table: Vec<_> =
                if round % 2 == 0 { chain.iter().map(|&x| a.m.pre_with(x, 8, !bypass)).collect() } else { Vec::new() };
            let hops = 3 * lines + 7;
            let mut rec_a = Vec::new();
            (pa, pb) = (pa % chain.len(), pb % chain.len());
            super::chase_chain(
                &mut a,
                0,
                bypass,
                &chain,
                &table,
                &mut parts,
                &mut pa,
                &mut ca,
                &mut sa,
                hops,
                Some(&mut rec_a),
            );
            let mut rec_b = Vec::new();
            let mut sum = 0.0;
            for _ in 0..hops {
                let p = b.m.pre_with(chain[pb], 8, !bypass);
                let (ns, _) = b.hop_pre(0, &p, bypass, cb, true);
                (cb, sum) = (cb + ns, sum + ns);
                rec_b.push(ns);
                pb = (pb + 1) % chain.len();
            }
            sb += sum;
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(rec_a.len() as u64, hops, "round {round}");
            assert_eq!(bits(&rec_a), bits(&rec_b), "round {round}: per-hop latencies");
            assert_eq!((ca.to_bits(), sa.to_bits(), pa), (cb.to_bits(), sb.to_bits(), pb), "round {round}");
            assert_eq!(a.stats(), b.stats(), "round {round}: counters");
        }
    }
}
