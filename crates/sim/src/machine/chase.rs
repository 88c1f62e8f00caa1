//! What a chase needs from `Machine` (seed 000's latency chase, made fast): the state-independent
//! part of a load computed ahead (`pre`: physical address, L1 set, L2 slice and set, sector
//! masks), the host prefetch of the sets it will touch, and `hop_pre`, a load reduced to what a
//! chase reads with a short path for the common hierarchy. Speed only: every result is
//! `load_pre`'s.

use super::{sector_mask, Level, LoadResult, Machine, Pre};
use crate::hierarchy::Indexing;

/// A chase hop's TLB lookup: (physical page, missed) of a page, the TLB filled on a miss from
/// the page table (as `Tlb::lookup` then `Tlb::insert`).
pub(crate) trait Translate: Copy {
    fn translate(&mut self, m: &mut Machine, sm: u32, vpn: u64) -> (u64, bool);
}

/// The SM's own TLB, one call at a time.
#[derive(Clone, Copy)]
pub(crate) struct InPlace;

impl Translate for InPlace {
    #[inline(always)]
    fn translate(&mut self, m: &mut Machine, sm: u32, vpn: u64) -> (u64, bool) {
        let Some(Some(s)) = m.sms.get_mut(sm as usize) else { unreachable!("SM state made by the caller") };
        match s.tlb.lookup(vpn) {
            Some(ppn) => (ppn, false),
            None => {
                let ppn = m.pt.walk(vpn).unwrap_or(0);
                s.tlb.insert(vpn, ppn);
                (ppn, true)
            }
        }
    }
}

impl Machine {
    /// A chase hop: `load_pre` reduced to what a chase reads (latency and level), the same state
    /// changes and counters. Speed only: the common hierarchy (virtually indexed L1, physically
    /// indexed L2, one partition) takes a short path; others go through `load_pre`.
    #[inline(always)]
    pub fn hop_pre(&mut self, sm: u32, p: &Pre, bypass_l1: bool, now_ns: f64) -> (f64, Level) {
        debug_assert!(bypass_l1 || p.has_l1, "a Pre without its L1 part for an L1 load");
        let s = match self.sms.get_mut(sm as usize) {
            Some(Some(s)) if self.short_path => &mut **s,
            _ => return self.hop_pre_slow(sm, p, bypass_l1, now_ns),
        };
        if !bypass_l1 {
            self.stats.l1_load_requests += 1;
            let o = s.l1.load(p.l1_set as usize, p.va >> self.l1_line_shift, p.l1_sectors);
            if o.missing == 0 {
                self.stats.l1_load_hits += 1;
                return (self.h.l1.hit_ns, Level::L1);
            }
        }
        self.hop_below_l1(sm, p, &mut InPlace, now_ns)
    }

    /// A chase hop past its L1 miss at `now_ns`: translated by `tlb` (with the page table's
    /// answer known from `pre`), then L2, the write-back FIFO or DRAM; its latency and level, the
    /// same state changes and counters as `load_pre`'s. (`hop_pre` and the staged passes.)
    #[inline(always)]
    pub(crate) fn hop_below_l1<T: Translate>(&mut self, sm: u32, p: &Pre, tlb: &mut T, now_ns: f64) -> (f64, Level) {
        let shift = self.page_shift;
        self.stats.tlb_lookups += 1;
        let (ppn, missed) = tlb.translate(self, sm, p.va >> shift);
        self.stats.tlb_misses += missed as u64;
        if ppn != p.pa >> shift {
            return self.hop_translated_elsewhere(sm, p, ppn, now_ns, missed);
        }
        let tlb_ns = if missed { self.h.tlb.miss_ns } else { 0.0 };
        let (slice, line, sectors) = (p.slice as usize, p.pa >> self.l2_line_shift, p.l2_sectors);
        self.stats.l2_read_requests += 1;
        self.stats.l2_read_sectors += sectors.count_ones() as u64;
        self.stats.slice_requests[slice] += 1;
        let o = self.l2.load(slice * self.sets_per_slice as usize + p.l2_set as usize, line, sectors);
        if let Some(wb) = o.evicted {
            self.write_back(wb, now_ns);
        }
        if o.missing == 0 {
            self.stats.l2_read_hits += 1;
            return (self.h.l2.hit_ns + tlb_ns, Level::L2);
        }
        let fifo = &self.fifos[self.controller_of_slice[slice] as usize];
        if !fifo.is_empty() && fifo.contains(line) {
            self.stats.fifo_read_hits += 1;
            return (self.h.l2.hit_ns + tlb_ns, Level::WriteBackFifo);
        }
        (self.dram_part(p, o.missing, tlb_ns, now_ns), Level::Dram)
    }

    /// A hop's DRAM read of `missing` sectors at `now_ns` (TLB part `tlb_ns`): its latency.
    #[inline(always)]
    fn dram_part(&mut self, p: &Pre, missing: u8, tlb_ns: f64, now_ns: f64) -> f64 {
        let c = self.dram_controller(p.slice, p.pa);
        let n = missing.count_ones() as u64;
        self.stats.dram_reads += 1;
        self.stats.dram_read_sectors += n;
        let arrive = now_ns + self.h.l2.hit_ns * 0.5;
        let (extra_ns, row_hit, stalled) = self.dram.access_lean(c, p.pa, arrive, self.lines_of(missing));
        self.count_dram_lean(row_hit, stalled);
        self.h.dram.latency_ns + extra_ns.max(-self.h.dram.activate_ns) + tlb_ns
    }

    /// `hop_pre` on another hierarchy, or on an SM whose state is not made yet.
    #[cold]
    fn hop_pre_slow(&mut self, sm: u32, p: &Pre, bypass_l1: bool, now_ns: f64) -> (f64, Level) {
        if self.short_path && (sm as usize) < self.sms.len() {
            self.make_sm(sm);
            return self.hop_pre(sm, p, bypass_l1, now_ns);
        }
        let r = self.load_pre(sm, p, bypass_l1, now_ns);
        (r.latency_ns, r.level)
    }

    /// The rest of a `hop_pre` whose translation (already done: physical page `ppn`, `tlb_miss`)
    /// is not the one `pre` assumed: the part of `load_core` below L1 with the TLB's answer.
    #[cold]
    fn hop_translated_elsewhere(&mut self, sm: u32, p: &Pre, ppn: u64, now_ns: f64, tlb_miss: bool) -> (f64, Level) {
        let pa = (ppn << self.page_shift) | (p.va & ((1u64 << self.page_shift) - 1));
        let r = LoadResult {
            level: Level::L1,
            latency_ns: self.h.l1.hit_ns,
            tlb_miss: false,
            l1_set: p.l1_set,
            slice: 0,
            l2_set: 0,
            dram: None,
        };
        let r = self.load_below_l1(sm, p.va, pa, p.len as u64, tlb_miss, now_ns, None, r);
        (r.latency_ns, r.level)
    }

    /// The state-independent part of a load or store of `len` bytes at `va` (see `Pre`).
    #[inline(always)]
    pub fn pre(&self, va: u64, len: u64) -> Pre {
        self.pre_with(va, len, true)
    }

    /// `pre`, without the L1 part unless `l1` (for loads that bypass L1, which never read it).
    #[inline(always)]
    pub fn pre_with(&self, va: u64, len: u64, l1: bool) -> Pre {
        let shift = self.page_shift;
        // as `translate` does on a TLB miss: an unmapped page reads as physical page 0
        let pa = (self.pt.walk(va >> shift).unwrap_or(0) << shift) | (va & ((1u64 << shift) - 1));
        let l1_key = if self.h.l1.indexing == Indexing::Physical { pa } else { va };
        let l2_key = if self.h.l2.indexing == Indexing::Physical { pa } else { va };
        let (slice, l2_set) = self.l2_pair(l2_key);
        let l2_sectors = sector_mask(va & ((1 << self.l2_line_shift) - 1), len, self.l2_sector_shift);
        Pre {
            va,
            pa,
            l1_set: if l1 { self.l1_set_of(l1_key) } else { 0 },
            has_l1: l1,
            slice,
            l2_set,
            len: len as u32,
            // (line offsets are the same in virtual and physical addresses: lines within pages)
            l1_sectors: if self.same_lines {
                l2_sectors
            } else {
                sector_mask(va & ((1 << self.l1_line_shift) - 1), len, self.l1_sector_shift)
            },
            l2_sectors,
        }
    }

    /// Prefetch (on the host) the L1 set of SM `sm` (with `l1`) and the L2 set (with `l2`) a
    /// later `load_pre(p)` looks up.
    #[inline]
    pub fn prefetch_pre(&self, sm: u32, p: &Pre, l1: bool, l2: bool) {
        if let (true, Some(Some(s))) = (l1, self.sms.get(sm as usize)) {
            s.l1.prefetch(p.l1_set as usize);
        }
        if l2 {
            self.l2.prefetch(p.slice as usize * self.sets_per_slice as usize + p.l2_set as usize);
        }
    }
}
