//! A batch of chase hops in two passes (speed only, no seed; the hops are seed 000's latency
//! chase): the L1 lookups of the whole batch first, then, in hop order, the rest of each hop
//! that missed L1 (TLB, L2, write-back FIFO, DRAM) and the clock. L1's state depends only on
//! the order of the L1 lookups, and nothing below L1 changes it, so the results are `hop_pre`'s
//! hop by hop. The second pass keeps an LRU TLB of up to 16 entries (the seed's) in SSE registers
//! (`tlb::Lru16`): no lookup waits for the stores of the one before.

#[cfg(target_arch = "x86_64")]
use super::chase::{InPlace, Translate};
use super::{Machine, Pre};
use crate::tlb::Lru16;
#[cfg(target_arch = "x86_64")]
use crate::tlb::PageTable;

/// Scratch memory of `Machine::chase_staged`, kept between batches: which hops of the batch hit
/// L1.
#[derive(Debug, Default, Clone)]
pub struct Staged {
    l1_hit: Vec<bool>,
}

/// Hops between the host prefetch of an L2 set and its use (in the second pass). The L1 pass
/// prefetches nothing: an SM's L1 state (24 KiB for the seed's) stays in the host's caches, and
/// its prefetches only cost instructions (a sixth-round measurement, docs/PERFORMANCE.md).
const L2_AHEAD: usize = 16;
/// The `Pre`s past a batch that the second pass reads (for its prefetches only).
pub const STAGED_AHEAD: usize = L2_AHEAD;

#[cfg(target_arch = "x86_64")]
impl<const FULL: bool> Translate for Lru16<FULL> {
    #[inline(always)]
    fn translate(&mut self, m: &mut Machine, _sm: u32, vpn: u64) -> (u64, bool) {
        let pt: &PageTable = &m.pt;
        // SAFETY: `Lru16` values exist only where SSSE3 does (`Tlb::take_lru16`), and are used
        // only in code compiled for it (`staged_v3`).
        unsafe { self.lookup_fill(vpn, |v| pt.walk(v).unwrap_or(0)) }
    }
}

impl Machine {
    /// Hops `pres[..k]` of one chase by SM `sm` from time `t` (`pres[k..]`: the next hops, for
    /// host prefetches only): each hop's latency goes through `adjust` (the chase's noise), then
    /// into the clock `t`, the running sum `sum` and `rec`. The same state changes, counters and
    /// latencies as `hop_pre` hop by hop.
    #[allow(clippy::too_many_arguments)]
    pub fn chase_staged<F: FnMut(f64) -> f64>(
        &mut self,
        sm: u32,
        pres: &[Pre],
        k: usize,
        bypass_l1: bool,
        t: &mut f64,
        sum: &mut f64,
        st: &mut Staged,
        adjust: &mut F,
        rec: Option<&mut Vec<f64>>,
    ) {
        if !self.short_path || sm as usize >= self.sms.len() {
            let (mut now, mut total, mut rec) = (*t, *sum, rec);
            for p in &pres[..k] {
                let ns = adjust(self.hop_pre(sm, p, bypass_l1, now).0);
                now += ns;
                total += ns;
                if let Some(r) = rec.as_deref_mut() {
                    r.push(ns);
                }
            }
            (*t, *sum) = (now, total);
            return;
        }
        if self.sms[sm as usize].is_none() {
            self.make_sm(sm);
        }
        st.l1_hit.clear();
        st.l1_hit.resize(k, false);
        #[cfg(target_arch = "x86_64")]
        if crate::fast::hostcpu::v3() {
            // a full seed TLB (the usual case past a chase's first 16 pages), else any LRU one
            // of up to 16 entries
            let tlb = &self.sms[sm as usize].as_ref().expect("made above").tlb;
            if let Some(mut tlb) = tlb.take_lru16::<true>() {
                // SAFETY: the host has the v3 features (checked).
                unsafe { self.staged_v3(sm, pres, k, bypass_l1, &mut st.l1_hit, t, sum, adjust, rec, &mut tlb) };
                self.sms[sm as usize].as_mut().expect("made above").tlb.put_lru16(&tlb);
                return;
            }
            if let Some(mut tlb) = tlb.take_lru16::<false>() {
                // SAFETY: as above.
                unsafe { self.staged_v3(sm, pres, k, bypass_l1, &mut st.l1_hit, t, sum, adjust, rec, &mut tlb) };
                self.sms[sm as usize].as_mut().expect("made above").tlb.put_lru16(&tlb);
                return;
            }
        }
        if !bypass_l1 {
            self.l1_pass(sm, pres, k, &mut st.l1_hit);
        }
        self.lower_pass(sm, pres, k, &st.l1_hit, t, sum, adjust, rec, &mut InPlace);
    }

    /// Both passes with the TLB in registers, compiled for x86-64-v3 (`hostcpu`).
    ///
    /// # Safety
    /// The host has the features (`hostcpu::v3`).
    #[allow(clippy::too_many_arguments)]
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,fma,movbe,popcnt,ssse3,sse4.1,sse4.2")]
    unsafe fn staged_v3<F: FnMut(f64) -> f64, T: Translate>(
        &mut self,
        sm: u32,
        pres: &[Pre],
        k: usize,
        bypass_l1: bool,
        l1_hit: &mut [bool],
        t: &mut f64,
        sum: &mut f64,
        adjust: &mut F,
        rec: Option<&mut Vec<f64>>,
        tlb: &mut T,
    ) {
        if !bypass_l1 {
            self.l1_pass(sm, pres, k, l1_hit);
        }
        self.lower_pass(sm, pres, k, l1_hit, t, sum, adjust, rec, tlb)
    }

    /// The L1 lookups of the batch (`hit[i]`: hop i hit).
    #[inline(always)]
    fn l1_pass(&mut self, sm: u32, pres: &[Pre], k: usize, hit: &mut [bool]) {
        let shift = self.l1_line_shift;
        let Some(Some(s)) = self.sms.get_mut(sm as usize) else { unreachable!("made by chase_staged") };
        let l1 = &mut s.l1;
        let mut hits = 0;
        for (p, h) in pres[..k].iter().zip(hit.iter_mut()) {
            debug_assert!(p.has_l1, "a Pre without its L1 part for an L1 load");
            *h = l1.load_hit_inline(p.l1_set as usize, p.va >> shift, p.l1_sectors);
            hits += *h as u64;
        }
        self.stats.l1_load_requests += k as u64;
        self.stats.l1_load_hits += hits;
    }

    /// The hops in order: an L1 hit's latency, or the rest of a load below L1 (`hop_pre`'s).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn lower_pass<F: FnMut(f64) -> f64, T: Translate>(
        &mut self,
        sm: u32,
        pres: &[Pre],
        k: usize,
        l1_hit: &[bool],
        t: &mut f64,
        sum: &mut f64,
        adjust: &mut F,
        mut rec: Option<&mut Vec<f64>>,
        tlb_state: &mut T,
    ) {
        // (a local copy, so that the TLB's registers stay registers through the loop)
        let mut tlb = *tlb_state;
        let (mut now, mut total) = (*t, *sum);
        let sps = self.sets_per_slice as usize;
        let l1_hit_ns = self.h.l1.hit_ns;
        for (i, p) in pres[..k].iter().enumerate() {
            // (past the batch its L1 outcome is not known yet: prefetch anyway)
            if let Some(n) = pres.get(i + L2_AHEAD) {
                if !l1_hit.get(i + L2_AHEAD).is_some_and(|&h| h) {
                    self.l2.prefetch(n.slice as usize * sps + n.l2_set as usize);
                }
            }
            let ns = if l1_hit[i] { l1_hit_ns } else { self.hop_below_l1(sm, p, &mut tlb, now).0 };
            let ns = adjust(ns);
            now += ns;
            total += ns;
            if let Some(r) = rec.as_deref_mut() {
                r.push(ns);
            }
        }
        (*t, *sum) = (now, total);
        *tlb_state = tlb;
    }
}

#[cfg(test)]
mod tests {
    use super::Staged;
    use crate::hierarchy::{HashFunction, Hierarchy, Mask, Replacement};
    use crate::machine::Machine;
    use crate::tlb::SplitMix;
    use crate::SimTarget;
    use memscope_core::Target;

    /// The seed GPUs and variants that take each path: a FIFO TLB and a 24-entry one (no
    /// registers), a physically indexed L1 (no short path), LRU L2, small pages.
    fn hierarchies() -> Vec<Hierarchy> {
        let mut v = vec![crate::presets::rtx4090(), crate::presets::l40s()];
        let mut h = crate::presets::rtx4090();
        h.tlb.replacement = Replacement::Fifo;
        v.push(h);
        let mut h = crate::presets::rtx4090();
        h.tlb.entries = 24;
        h.l2.replacement = Replacement::Lru;
        v.push(h);
        let mut h = crate::presets::rtx4090();
        h.l1.indexing = crate::hierarchy::Indexing::Physical;
        v.push(h);
        // small pages; a 512 KiB L2 of plain bit-field functions (dirty lines soon evicted)
        let mut h = crate::presets::rtx4090();
        h.page_bytes = 64 << 10;
        h.l2.slices = 4;
        h.dram.controllers = 4;
        h.l2.sets_per_slice = 64;
        h.l2.set_function = HashFunction::Masks { masks: (7..13).map(|b| Mask(1 << b)).collect() };
        h.l2.slice_function = HashFunction::Masks { masks: (13..15).map(|b| Mask(1 << b)).collect() };
        v.push(h);
        v
    }

    /// Stores that leave dirty L2 lines (so that chase loads evict them: timed write-backs).
    fn dirty(m: &mut Machine, base: u64, bytes: u64) {
        for a in (0..bytes).step_by(128) {
            m.store(7, base + a, 128, a as f64);
        }
    }

    /// Hops through `chase_staged` (batches of random sizes, noise-like `adjust`) give the same
    /// latencies, counters and later behaviour as `load_pre` (the general path, no chase short
    /// cuts) one at a time: L1 hits and misses,
    /// TLB hits and misses, L2 hits, DRAM, dirty evictions, and translations that changed
    /// under the TLB (a page remapped without an invalidation), on each kind of hierarchy.
    #[test]
    fn staged_batches_equal_single_hops() {
        crate::fast::hostcpu::both_ways(compare_staged_with_single_hops);
    }

    fn compare_staged_with_single_hops() {
        let mut writebacks = 0;
        for h in hierarchies() {
            let (mut a, mut b) = (SimTarget::new(h.clone()).unwrap(), SimTarget::new(h.clone()).unwrap());
            let bufs: Vec<_> = [a.alloc(96 << 20).unwrap(), a.alloc(8 << 20).unwrap()].into();
            assert_eq!(bufs, [b.alloc(96 << 20).unwrap(), b.alloc(8 << 20).unwrap()]);
            let (ma, mb) = (a.machine(), b.machine());
            let mut rng = SplitMix(11);
            let mut st = Staged::default();
            let (mut ta, mut tb, mut sa, mut sb) = (0.0, 0.0, 0.0, 0.0);
            for round in 0..24u64 {
                let bypass = round % 3 == 0;
                if round % 5 == 2 {
                    let base = bufs[0].base + rng.below(80) * (1 << 20);
                    dirty(ma, base, 2 << 20);
                    dirty(mb, base, 2 << 20);
                }
                if round % 7 == 3 {
                    // remap a page of the small buffer under the TLBs
                    let shift = ma.page_shift;
                    let vpn = (bufs[1].base >> shift) + rng.below(bufs[1].bytes >> shift);
                    let other = ma.pt.walk((bufs[0].base >> shift) + rng.below(40)).unwrap();
                    ma.pt.map(vpn, other);
                    mb.pt.map(vpn, other);
                }
                // a working set from L1-sized to DRAM-sized, in both buffers
                let span = [64u64, 4096, 300_000, 700_000][(round % 4) as usize];
                let pres: Vec<_> = (0..1500 + rng.below(3000))
                    .map(|_| {
                        let buf = &bufs[(rng.below(5) == 0) as usize];
                        let va = buf.base + (rng.below(span.min(buf.bytes / 128)) * 128 + 8 * rng.below(16));
                        ma.pre_with(va, 8, !bypass)
                    })
                    .collect();
                let adjust = |ns: f64| (ns - 3.0).max(0.0);
                let mut rec_a = Vec::new();
                for p in &pres {
                    let ns = adjust(ma.load_pre(3, p, bypass, ta).latency_ns);
                    ta += ns;
                    sa += ns;
                    rec_a.push(ns);
                }
                let mut rec_b = Vec::new();
                let mut i = 0;
                while i < pres.len() {
                    let k = (1 + rng.below(700) as usize).min(pres.len() - i);
                    let ext = (i + k + 16).min(pres.len());
                    mb.chase_staged(
                        3,
                        &pres[i..ext],
                        k,
                        bypass,
                        &mut tb,
                        &mut sb,
                        &mut st,
                        &mut |ns| adjust(ns),
                        Some(&mut rec_b),
                    );
                    i += k;
                }
                assert_eq!(rec_a, rec_b, "{} round {round}", h.name);
                assert_eq!((ta, sa), (tb, sb), "{} round {round}", h.name);
                assert_eq!(ma.stats, mb.stats, "{} round {round}", h.name);
            }
            let s = &ma.stats;
            assert!(s.l1_load_hits > 0 && s.l2_read_hits > 0 && s.dram_reads > 0, "{}: {s:?}", h.name);
            assert!(s.tlb_misses > 0 && s.tlb_misses < s.tlb_lookups, "{}: {s:?}", h.name);
            writebacks += s.l2_writebacks;
        }
        assert!(writebacks > 1000, "the chases evicted dirty lines: {writebacks}");
    }
}
