//! The store path of `Machine` (seed 004): L1 write-through with allocate-and-update, the L2
//! slice's masked write with dirty sectors and the 8-dirty rule, write-backs to the controller's
//! FIFO.

use super::*;

impl Machine {
    /// A store of `len` bytes at `va` (inside one line): L1 write-through with allocate-and-update,
    /// then the L2 slice writes the masked bytes and marks the sectors dirty (seed 004).
    pub fn store(&mut self, sm: u32, va: u64, len: u64, now_ns: f64) -> StoreResult {
        self.store_core(sm, va, len, now_ns, None)
    }

    /// `store` of `p.va`, with the indices `pre` computed ahead (the same result as `store`).
    #[inline]
    pub fn store_pre(&mut self, sm: u32, p: &Pre, now_ns: f64) -> StoreResult {
        self.store_core(sm, p.va, p.len as u64, now_ns, Some(p))
    }

    /// Prefetch (on the host) the L1 set of SM `sm` and the L2 set a later `store_pre(p)` writes.
    #[inline]
    pub fn prefetch_store_pre(&self, sm: u32, p: &Pre) {
        if let Some(Some(s)) = self.sms.get(sm as usize) {
            s.l1.prefetch_store(p.l1_set as usize);
        }
        self.l2.prefetch_store(p.slice as usize * self.sets_per_slice as usize + p.l2_set as usize);
    }

    #[inline(always)]
    fn store_core(&mut self, sm: u32, va: u64, len: u64, now_ns: f64, pre: Option<&Pre>) -> StoreResult {
        debug_assert!(pre.is_none_or(|p| p.va == va && p.has_l1));
        self.stats.l1_store_requests += 1;
        let l1_shift = self.l1_line_shift;
        let l1_off = va & ((1 << l1_shift) - 1);
        // (line offsets are the same in virtual and physical addresses: `pre`'s sector masks hold
        // whatever the translation)
        let l1_sectors = match pre {
            Some(p) => p.l1_sectors,
            None => sector_mask(l1_off, len, self.l1_sector_shift),
        };
        let l1_full = full_sectors(l1_off, len, self.l1_sector_shift);
        let l2_masks = match pre {
            Some(p) if self.same_lines => Some((p.l2_sectors, l1_full)),
            _ => None,
        };
        let (pa, tlb_miss) = self.translate(sm, va);
        // the indices computed ahead hold when the TLB gave the translation they assumed
        let pre = pre.filter(|p| p.pa == pa);
        let l1_key = if self.h.l1.indexing == Indexing::Physical { pa } else { va };
        let l1_set = match pre {
            Some(p) => p.l1_set,
            None => self.l1_set_of(l1_key),
        };
        self.sm(sm).l1.store(l1_set as usize, l1_key >> l1_shift, l1_sectors, l1_full, true, false);
        let key = if self.h.l2.indexing == Indexing::Physical { pa } else { va };
        let (slice, set) = match pre {
            Some(p) => (p.slice, p.l2_set),
            None => self.l2_pair(key),
        };
        let (sectors, full) = l2_masks.unwrap_or_else(|| {
            let off = key & ((1 << self.l2_line_shift) - 1);
            (sector_mask(off, len, self.l2_sector_shift), full_sectors(off, len, self.l2_sector_shift))
        });
        self.stats.l2_write_requests += 1;
        self.stats.l2_write_sectors += sectors.count_ones() as u64;
        self.stats.slice_requests[slice as usize] += 1;
        let flat = slice as usize * self.sets_per_slice as usize + set as usize;
        let o = self.l2.store(flat, key >> self.l2_line_shift, sectors, full, true, true);
        let mut writebacks = 0;
        if o.tag_hit {
            self.stats.l2_write_hits += 1;
        }
        if let Some(wb) = o.cleaned {
            self.stats.l2_dirty_cleans += 1;
            self.write_back(wb, now_ns);
            writebacks += 1;
        }
        if let Some(wb) = o.evicted {
            self.write_back(wb, now_ns);
            writebacks += 1;
        }
        StoreResult { tlb_miss, l1_set, slice, l2_set: set, l2_hit: o.tag_hit, writebacks }
    }
}

/// Sectors written whole by a store of `[off, off + len)`.
#[inline]
fn full_sectors(off: u64, len: u64, sector_shift: u32) -> u8 {
    let s = 1u64 << sector_shift;
    let first = off.div_ceil(s);
    let end = (off + len) / s;
    if end <= first {
        return 0;
    }
    (((1u32 << end) - 1) & !((1u32 << first) - 1)) as u8
}
