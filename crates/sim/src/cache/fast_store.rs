//! The store path of `Cache` for the presets' caches (speed only, no seed): a store that
//! allocates, into the 4-way LRU L1 (write-through: no dirty sectors) or the 16-way RRIP L2
//! (write-back: dirty sectors and the 8-dirty rule), of a line with a 32-bit tag. The way count,
//! so the whole block layout, the policy and the dirty flag are constants; the steps are
//! `Cache::store_in`'s, with the wide-tag cases left out. Every other store takes `store_in`.
//! Also the host prefetch of what a store reads.

use super::fast_load::{LRU4, P_LRU, P_RRIP, RRIP16};
use super::set::{Layout, Set, DIRTY, SRANK};
use super::{Cache, Outcome, WriteBack};
use crate::hierarchy::Replacement;

impl Cache {
    /// `prefetch` for a `store` of `set`: also the store ranks (past what a load reads).
    #[inline]
    pub fn prefetch_store(&self, set: usize) {
        self.prefetch_block(set);
        #[cfg(target_arch = "x86_64")]
        if set < self.sets {
            let p = self.b.ptr(set * self.l.stride).wrapping_add(self.l.arr(SRANK));
            // SAFETY: prefetch is a hint that never faults; SSE is baseline on x86_64.
            unsafe { std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p) };
        }
    }

    /// `store(set, line, sectors, full, true, mark_dirty)` by a fast path, when one applies.
    #[inline(always)]
    pub(crate) fn store_fast(
        &mut self,
        set: usize,
        line: u64,
        sectors: u8,
        full: u8,
        mark_dirty: bool,
    ) -> Option<Outcome> {
        if line.wrapping_sub(self.nbase) >= self.nlim || set >= self.sets {
            return None;
        }
        // SAFETY: `kind` tells the layout and the policy; the line has a 32-bit tag (so the tags
        // are not wide) and `set` < sets.
        unsafe {
            match (self.kind, mark_dirty) {
                (LRU4, false) => Some(self.store_w::<4, P_LRU, false>(set, line, sectors, full)),
                (RRIP16, true) => Some(self.store_w::<16, P_RRIP, true>(set, line, sectors, full)),
                _ => None,
            }
        }
    }

    /// `store_in` with `W` ways, policy code `P`, `D` = mark_dirty, allocating.
    ///
    /// # Safety
    /// `W` and `P` are the cache's (`kind`), `line` has a 32-bit tag, `set` < sets.
    #[inline(always)]
    unsafe fn store_w<const W: usize, const P: u8, const D: bool>(
        &mut self,
        set: usize,
        line: u64,
        sectors: u8,
        full: u8,
    ) -> Outcome {
        let policy = if P == P_LRU { Replacement::Lru } else { Replacement::Rrip };
        debug_assert!(policy == self.policy && self.wide.is_none() && set < self.sets);
        self.mark(set);
        let l = Layout { w: W, g: 1, tw: W, stride: super::set::stride_words(W, 1), all: (1 << W) - 1 };
        debug_assert!(l.w == self.l.w && l.tw == self.l.tw && l.g == self.l.g && l.stride == self.l.stride);
        // SAFETY: the block of `set` < sets lies in `b`, borrowed mutably; `l` is its layout.
        let s = unsafe { Set::new(self.b.bytes_mut(set * l.stride), l) };
        if D {
            s.prefetch(SRANK); // (the tags and state are read at once)
        }
        let mut cleaned = None;
        if D && self.dirty_threshold > 0 && s.count_ne(DIRTY, 0) >= self.dirty_threshold {
            // the least recently stored dirty line (store ranks are distinct)
            let i = s.oldest::<true>(SRANK, DIRTY, 0);
            let sectors = s.get(DIRTY, i);
            s.put(DIRTY, i, 0);
            cleaned = Some(WriteBack { line: self.tag_in(s, set, i), sectors });
        }
        let x = line as u32;
        let hit = s.tags_hit(x);
        if hit != 0 {
            return self.store_hit(s, hit.trailing_zeros() as usize, full, sectors, D, policy, cleaned);
        }
        let empty = self.empties(s, set);
        debug_assert!(self.scans_agree(set, line, hit, empty));
        let (way, evicted) = self.victim(s, set, empty, policy);
        s.set_tag(way, x);
        s.touch(SRANK, way);
        self.fill(s, way, full, if D { sectors } else { 0 });
        Outcome { tag_hit: false, missing: sectors & !full, evicted, cleaned }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `store` without its fast path (as it was before it).
    fn store_general(c: &mut Cache, set: usize, line: u64, sectors: u8, full: u8, dirty: bool) -> Outcome {
        c.mark(set);
        // SAFETY: `TW` 0 goes with any layout.
        unsafe { c.store_in::<0>(set, line, sectors, full, true, dirty) }
    }

    #[test]
    fn fast_stores_match_the_general_path() {
        // the L1 (4-way LRU, write-through) and the L2 (16-way RRIP, write-back, 8-dirty rule),
        // hits, misses, evictions and cleans, across clears
        for (ways, policy, dirty) in [(4, Replacement::Lru, false), (16, Replacement::Rrip, true)] {
            let sets = 40;
            let (mut a, mut b) = (Cache::new(sets, ways, policy, 8), Cache::new(sets, ways, policy, 8));
            let mut r = crate::tlb::SplitMix(11);
            let mut fast = 0;
            for op in 0..40_000u64 {
                if op % 10_000 == 9_999 {
                    a.clear();
                    b.clear();
                }
                let set = r.below(sets as u64) as usize;
                let line = 3 << 32 | (r.below(ways as u64 * 2) * sets as u64 + set as u64);
                let sectors = 1 + r.below(15) as u8;
                if r.below(2) == 0 {
                    let full = sectors & r.below(16) as u8;
                    fast += u32::from(line.wrapping_sub(a.nbase) < a.nlim);
                    let (oa, ob) = (
                        a.store(set, line, sectors, full, true, dirty),
                        store_general(&mut b, set, line, sectors, full, dirty),
                    );
                    assert_eq!(oa, ob, "{ways} ways, op {op}");
                } else {
                    assert_eq!(a.load(set, line, sectors), b.load(set, line, sectors), "{ways} ways, op {op}");
                }
                if op % 1000 == 0 {
                    assert_eq!(a.dirty_lines(), b.dirty_lines(), "{ways} ways, op {op}");
                }
            }
            assert!(fast > 15_000, "the fast path was taken {fast} times");
        }
    }
}
