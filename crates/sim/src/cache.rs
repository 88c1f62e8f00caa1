//! A sectored set-associative cache (seed 000: 128-byte lines of four 32-byte sectors, a slot may
//! hold only some sectors; seed 004: dirty sector masks, 2-bit RRPV replacement, the 8-dirty rule).
//! Sets are addressed by a flat index (the L2 uses `slice * sets_per_slice + set`); tags are line
//! addresses. Replacement: LRU, FIFO, or RRIP (new lines RRPV 1, a hit sets 0, victim = least
//! recently used among RRPV 2, else age every line and rescan).
//!
//! Layout (speed only): one block per set, aligned to 64 bytes, holding the set's 32-bit tags,
//! use stamps, store stamps and flags (valid/dirty/RRPV) one after the other, so a 16-way set is
//! four host cache lines of one host page (a load reads three). Tags are 32-bit while every line
//! address seen fits, and move to a 64-bit array for good on the first one that does not.

use memscope_core::hierarchy::Replacement;

const INVALID: u64 = u64::MAX;
const INVALID32: u32 = u32::MAX;

/// A vector whose element `o` starts on a 64-byte boundary (host cache line).
#[derive(Debug, Clone)]
struct Aligned<T> {
    v: Vec<T>,
    o: usize,
}

impl<T: Copy> Aligned<T> {
    fn new(x: T, n: usize) -> Self {
        let sz = std::mem::size_of::<T>();
        // large arrays start on a 2 MiB boundary so all of them lies in transparent huge pages
        const HUGE: usize = 2 << 20;
        let align = if n * sz >= HUGE / 8 { HUGE } else { 64 };
        let pad = if align == HUGE { 2 * HUGE / sz } else { 64 / sz };
        let v = huge_vec(x, n + pad);
        let misalign = v.as_ptr() as usize % align;
        let o = if misalign == 0 || !misalign.is_multiple_of(sz) { 0 } else { (align - misalign) / sz };
        Aligned { v, o }
    }
    #[inline(always)]
    fn s(&self, i: usize, n: usize) -> &[T] {
        &self.v[self.o + i..self.o + i + n]
    }
    #[inline(always)]
    fn s_mut(&mut self, i: usize, n: usize) -> &mut [T] {
        &mut self.v[self.o + i..self.o + i + n]
    }
    #[inline(always)]
    fn ptr(&self, i: usize) -> *const i8 {
        self.v.as_ptr().wrapping_add(self.o + i) as *const i8
    }
    fn fill(&mut self, x: T) {
        self.v.fill(x);
    }
}

/// A line pushed out (or cleaned) with dirty sectors: it goes to the write-back FIFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteBack {
    /// Line address (tag).
    pub line: u64,
    /// Dirty sector mask.
    pub sectors: u8,
}

/// What a lookup did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The tag was present.
    pub tag_hit: bool,
    /// Sectors asked for that were not valid (fetched from below and now filled).
    pub missing: u8,
    /// A dirty line evicted to make room.
    pub evicted: Option<WriteBack>,
    /// A dirty line cleaned by the 8-dirty rule (stores only).
    pub cleaned: Option<WriteBack>,
}

/// The cache state.
#[derive(Debug, Clone)]
pub struct Cache {
    ways: usize,
    policy: Replacement,
    /// Per set, `stride` words: 32-bit tags, use stamps (last use for LRU, insertion for FIFO),
    /// store stamps (last store; the 8-dirty rule cleans the least recently stored dirty line;
    /// meaningful only for dirty slots, as every store that dirties a slot sets it) and flags
    /// (valid sectors, dirty sectors << 8, RRPV << 16), `ways` words each.
    b: Aligned<u32>,
    stride: usize,
    sets: usize,
    /// 64-bit tags, once a line address did not fit in 32 bits (the block's tags are unused).
    wide: Option<Aligned<u64>>,
    clock: u32,
    dirty_threshold: u32,
}

#[inline(always)]
fn valid(f: u32) -> u8 {
    f as u8
}
#[inline(always)]
fn dirty(f: u32) -> u8 {
    (f >> 8) as u8
}
#[inline(always)]
fn rrpv(f: u32) -> u8 {
    (f >> 16) as u8
}
#[inline(always)]
fn flags(valid: u8, dirty: u8, rrpv: u8) -> u32 {
    valid as u32 | (dirty as u32) << 8 | (rrpv as u32) << 16
}

impl Cache {
    /// `sets` sets of `ways` ways. `dirty_threshold` > 0 enables the 8-dirty rule at that count.
    pub fn new(sets: usize, ways: usize, policy: Replacement, dirty_threshold: u32) -> Self {
        let stride = (4 * ways).next_multiple_of(16);
        let mut c = Cache {
            ways,
            policy,
            b: Aligned::new(0, sets * stride),
            stride,
            sets,
            wide: None,
            clock: 0,
            dirty_threshold,
        };
        c.clear();
        c
    }

    /// Forget everything (dirty data is dropped; call `dirty_lines` first to write it back).
    pub fn clear(&mut self) {
        self.b.fill(0);
        let (w, st) = (self.ways, self.stride);
        for set in 0..self.sets {
            self.b.s_mut(set * st, w).fill(INVALID32);
        }
        if let Some(t) = &mut self.wide {
            t.fill(INVALID);
        }
        self.clock = 0;
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.sets
    }

    /// Advance the use clock; stamps are 32-bit, so every 2^32 uses they are renormalized
    /// (order kept by rank within each set).
    #[inline]
    fn tick(&mut self) -> u32 {
        if self.clock == u32::MAX {
            self.renormalize();
        }
        self.clock += 1;
        self.clock
    }

    #[cold]
    fn renormalize(&mut self) {
        let w = self.ways;
        for set in 0..self.sets {
            for k in 1..3 {
                let s = self.b.s_mut(set * self.stride + k * w, w);
                let mut order: Vec<usize> = (0..w).collect();
                order.sort_by_key(|&i| s[i]);
                for (rank, &i) in order.iter().enumerate() {
                    s[i] = rank as u32 + 1;
                }
            }
        }
        self.clock = w as u32 + 1;
    }

    /// The words of `set` from part `k` (0 tags, 1 stamps, 2 store stamps, 3 flags).
    #[inline(always)]
    fn part(&self, set: usize, k: usize) -> &[u32] {
        self.b.s(set * self.stride + k * self.ways, self.ways)
    }
    #[inline(always)]
    fn part_mut(&mut self, set: usize, k: usize) -> &mut [u32] {
        self.b.s_mut(set * self.stride + k * self.ways, self.ways)
    }

    #[inline]
    fn find(&self, set: usize, line: u64) -> Option<usize> {
        match &self.wide {
            None => {
                if line >= INVALID32 as u64 {
                    return None;
                }
                let l = line as u32;
                self.part(set, 0).iter().position(|&x| x == l)
            }
            Some(t) => t.s(set * self.ways, self.ways).iter().position(|&x| x == line),
        }
    }

    /// Tag of a way, `INVALID` when empty.
    #[inline]
    fn tag(&self, set: usize, way: usize) -> u64 {
        match &self.wide {
            None => {
                let x = self.part(set, 0)[way];
                if x == INVALID32 {
                    INVALID
                } else {
                    x as u64
                }
            }
            Some(t) => t.s(set * self.ways + way, 1)[0],
        }
    }

    #[inline]
    fn set_tag(&mut self, set: usize, way: usize, line: u64) {
        if line >= INVALID32 as u64 && self.wide.is_none() {
            self.widen();
        }
        let w = self.ways;
        match &mut self.wide {
            None => self.part_mut(set, 0)[way] = line as u32,
            Some(t) => t.s_mut(set * w + way, 1)[0] = line,
        }
    }

    /// Switch to 64-bit tags (a line address beyond 32 bits was seen).
    #[cold]
    fn widen(&mut self) {
        let w = self.ways;
        let mut wide = Aligned::new(INVALID, self.sets * w);
        for set in 0..self.sets {
            for way in 0..w {
                wide.s_mut(set * w + way, 1)[0] = self.tag(set, way);
            }
        }
        self.wide = Some(wide);
    }

    /// Hint the host CPU to fetch `set`'s state (the simulated L2 is far larger than host caches;
    /// a chase knows its next addresses, so it can overlap those host misses).
    #[inline]
    pub fn prefetch(&self, set: usize) {
        self.prefetch_block(set, false);
    }

    /// Prefetch the tags, stamps and flags of `set` (and the store stamps with `store`).
    #[inline]
    fn prefetch_block(&self, set: usize, store: bool) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            if set >= self.sets {
                return;
            }
            let w = self.ways;
            let base = set * self.stride;
            let p = self.b.ptr(base);
            for k in 0..4 {
                if k == 2 && !store {
                    continue;
                }
                let mut off = k * w * 4;
                let end = off + w * 4;
                while off < end {
                    // SAFETY: prefetch is a hint that never faults; SSE is baseline on x86_64.
                    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
                    off += 64;
                }
            }
            if let Some(t) = &self.wide {
                // SAFETY: as above.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(t.ptr(set * w)) };
            }
        }
    }

    /// Whether `line` is present in `set` with all of `sectors` valid (no state change).
    pub fn probe(&self, set: usize, line: u64, sectors: u8) -> bool {
        self.find(set, line).is_some_and(|i| valid(self.part(set, 3)[i]) & sectors == sectors)
    }

    /// Lines present in `set` (tags), for tests and occupancy reports.
    pub fn lines_in_set(&self, set: usize) -> usize {
        (0..self.ways).filter(|&i| self.tag(set, i) != INVALID).count()
    }

    /// A load of `sectors` of `line`: a hit refreshes the line; missing sectors are filled; a miss
    /// allocates a slot (maybe evicting).
    #[inline]
    pub fn load(&mut self, set: usize, line: u64, sectors: u8) -> Outcome {
        // (no prefetch here: the lookups below issue the same loads at once)
        let clock = self.tick();
        if let Some(i) = self.find(set, line) {
            let f = self.part(set, 3)[i];
            let missing = sectors & !valid(f);
            self.part_mut(set, 3)[i] = f | sectors as u32;
            self.touch(set, i, clock);
            return Outcome { tag_hit: true, missing, evicted: None, cleaned: None };
        }
        let (way, evicted) = self.victim(set);
        self.set_tag(set, way, line);
        self.part_mut(set, 1)[way] = clock;
        // the store stamp is left as it is: it is read only for dirty slots, and this one is clean
        self.part_mut(set, 3)[way] = flags(sectors, 0, 1);
        Outcome { tag_hit: false, missing: sectors, evicted, cleaned: None }
    }

    /// A store writing `sectors` of `line`, of which `full` are written whole (the rest partially,
    /// under a byte mask). With `mark_dirty` (write-back) the sectors become dirty; `allocate`
    /// false: a missing line is not allocated (write-around), only reported.
    #[inline]
    pub fn store(&mut self, set: usize, line: u64, sectors: u8, full: u8, allocate: bool, mark_dirty: bool) -> Outcome {
        self.prefetch_block(set, true); // the store stamps too
        let clock = self.tick();
        let mut cleaned = None;
        if self.dirty_threshold > 0 && mark_dirty {
            let fl = self.part(set, 3);
            let ndirty = fl.iter().filter(|&&f| dirty(f) != 0).count() as u32;
            if ndirty >= self.dirty_threshold {
                let ss = self.part(set, 2);
                let mut best: Option<usize> = None;
                for (i, &f) in fl.iter().enumerate() {
                    if dirty(f) != 0 && best.is_none_or(|b| ss[i] < ss[b]) {
                        best = Some(i);
                    }
                }
                if let Some(i) = best {
                    let sectors = dirty(fl[i]);
                    self.part_mut(set, 3)[i] &= !0xff00;
                    cleaned = Some(WriteBack { line: self.tag(set, i), sectors });
                }
            }
        }
        if let Some(i) = self.find(set, line) {
            let mut f = self.part(set, 3)[i] | full as u32;
            if mark_dirty {
                f |= (sectors as u32) << 8;
                self.part_mut(set, 2)[i] = clock;
            }
            self.part_mut(set, 3)[i] = f;
            let missing = sectors & !valid(f);
            self.touch(set, i, clock);
            return Outcome { tag_hit: true, missing, evicted: None, cleaned };
        }
        if !allocate {
            return Outcome { tag_hit: false, missing: sectors, evicted: None, cleaned };
        }
        let (way, evicted) = self.victim(set);
        let d = if mark_dirty { sectors } else { 0 };
        self.set_tag(set, way, line);
        self.part_mut(set, 1)[way] = clock;
        self.part_mut(set, 2)[way] = clock;
        self.part_mut(set, 3)[way] = flags(full, d, 1);
        Outcome { tag_hit: false, missing: sectors & !full, evicted, cleaned }
    }

    /// Number of lines holding dirty sectors.
    pub fn dirty_lines(&self) -> usize {
        (0..self.sets)
            .map(|s| (0..self.ways).filter(|&i| dirty(self.part(s, 3)[i]) != 0 && self.tag(s, i) != INVALID).count())
            .sum()
    }

    /// Pick a victim way: an invalid slot first; LRU/FIFO: smallest stamp; RRIP: least recently
    /// used among RRPV 2, else age all and rescan. A dirty victim goes to the write-back FIFO
    /// (seed 004: handed to the controller, after which the scan finds it clean and takes it).
    #[inline]
    fn victim(&mut self, set: usize) -> (usize, Option<WriteBack>) {
        let w = self.ways;
        let empty = match &self.wide {
            None => self.part(set, 0).iter().position(|&x| x == INVALID32),
            Some(t) => t.s(set * w, w).iter().position(|&x| x == INVALID),
        };
        if let Some(i) = empty {
            return (i, None);
        }
        let way = match self.policy {
            Replacement::Lru | Replacement::Fifo => {
                let stamps = self.part(set, 1);
                let mut best = 0;
                for (i, &s) in stamps.iter().enumerate() {
                    if s < stamps[best] {
                        best = i;
                    }
                }
                best
            }
            Replacement::Rrip => {
                // Branch-free form of "scan for RRPV 2; if none, age every line and rescan":
                // aging k = 2 - max RRPV times makes the lines at the maximum the candidates,
                // and the first of them with the smallest stamp is the victim.
                let top = self.part(set, 3).iter().map(|&f| rrpv(f).min(2)).max().unwrap_or(2);
                if top < 2 {
                    let k = 2 - top;
                    for f in self.part_mut(set, 3) {
                        let r = (rrpv(*f) + k).min(2);
                        *f = (*f & !0xff_0000) | (r as u32) << 16;
                    }
                }
                let (stamps, fl) = (self.part(set, 1), self.part(set, 3));
                let mut best = 0;
                let mut best_key = u64::MAX;
                for (i, &f) in fl.iter().enumerate() {
                    let key = (u64::from(rrpv(f) < 2) << 32) | stamps[i] as u64;
                    if key < best_key {
                        best_key = key;
                        best = i;
                    }
                }
                best
            }
        };
        let d = dirty(self.part(set, 3)[way]);
        let wb = if d != 0 { Some(WriteBack { line: self.tag(set, way), sectors: d }) } else { None };
        (way, wb)
    }

    #[inline]
    fn touch(&mut self, set: usize, way: usize, clock: u32) {
        match self.policy {
            Replacement::Lru => self.part_mut(set, 1)[way] = clock,
            Replacement::Fifo => {}
            Replacement::Rrip => {
                self.part_mut(set, 1)[way] = clock;
                self.part_mut(set, 3)[way] &= !0xff_0000;
            }
        }
    }
}

/// A vector of `n` copies of `x` whose pages are marked for transparent huge pages before first
/// touch (Linux): the simulator's state is accessed at random, and 4 KiB host pages would make
/// every access a host TLB miss too.
pub fn huge_vec<T: Copy>(x: T, n: usize) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    #[cfg(target_os = "linux")]
    {
        let bytes = n * std::mem::size_of::<T>();
        const HUGE: usize = 2 << 20;
        if bytes >= HUGE {
            let start = v.as_ptr() as usize;
            let aligned = start.next_multiple_of(HUGE);
            let end = (start + bytes) / HUGE * HUGE;
            if end > aligned {
                // SAFETY: the range lies inside the allocation just made; madvise only changes
                // how the kernel backs it, and failure is harmless (we ignore the result).
                unsafe {
                    libc::madvise(aligned as *mut libc::c_void, end - aligned, libc::MADV_HUGEPAGE);
                }
            }
        }
    }
    v.resize(n, x);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_least_recent() {
        let mut c = Cache::new(1, 2, Replacement::Lru, 0);
        c.load(0, 1, 1);
        c.load(0, 2, 1);
        c.load(0, 1, 1);
        c.load(0, 3, 1);
        assert!(c.probe(0, 1, 1) && c.probe(0, 3, 1) && !c.probe(0, 2, 1));
    }

    #[test]
    fn rrip_keeps_hit_lines_against_a_scan() {
        let mut c = Cache::new(1, 4, Replacement::Rrip, 0);
        for l in 0..4 {
            c.load(0, l, 1);
        }
        c.load(0, 0, 1); // RRPV 0
        for l in 10..13 {
            c.load(0, l, 1); // streaming lines age and replace the RRPV-1 lines first
        }
        assert!(c.probe(0, 0, 1));
    }

    #[test]
    fn eight_dirty_rule_cleans_least_recently_stored() {
        let mut c = Cache::new(1, 16, Replacement::Rrip, 8);
        for l in 0..8 {
            assert_eq!(c.store(0, l, 0xf, 0xf, true, true).cleaned, None);
        }
        let o = c.store(0, 8, 0xf, 0xf, true, true);
        assert_eq!(o.cleaned, Some(WriteBack { line: 0, sectors: 0xf }));
        assert_eq!(c.dirty_lines(), 8);
    }

    #[test]
    fn sectors_fill_on_demand() {
        let mut c = Cache::new(1, 1, Replacement::Lru, 0);
        assert_eq!(c.load(0, 5, 0b0001).missing, 0b0001);
        let o = c.load(0, 5, 0b0011);
        assert!(o.tag_hit);
        assert_eq!(o.missing, 0b0010);
    }
}
