//! The accelerated route of a chase of one chain (speed only; the hops are seed 000's latency
//! chase): `SimTarget`'s several-chain loop (target.rs) takes one `Machine::pre_with` and one
//! `Machine::hop_pre` per hop; one chain takes `chase_chain` instead, which computes the same
//! hops a batch at a time (`Pre`s by page halves: `presplit`; the two-pass batches: `staged`).

use super::PageParts;
use crate::machine::{Pre, STAGED_AHEAD};
use crate::target::{noisy, SimTarget};

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
