//! A sectored set-associative cache (seed 000: 128-byte lines of four 32-byte sectors, a slot may
//! hold only some sectors; seed 004: dirty sector masks, 2-bit RRPV replacement, the 8-dirty rule).
//! Sets are addressed by a flat index (the L2 uses `slice * sets_per_slice + set`); tags are line
//! addresses. Replacement: LRU, FIFO, or RRIP (new lines RRPV 1, a hit sets 0, victim = least
//! recently used among RRPV 2, else age every line and rescan).
//!
//! Layout (speed only): four arrays indexed `set * ways + way`, each aligned to 64 bytes, so a
//! load of a 16-way set reads three host cache lines (32-bit tags, 32-bit use stamps, 4-byte
//! valid/dirty/RRPV flags) and a store a fourth (store stamps). Tags are 32-bit while every line
//! address seen fits, and widen to 64 bits for good on the first one that does not.

use memscope_core::hierarchy::Replacement;

const INVALID: u64 = u64::MAX;
const INVALID32: u32 = u32::MAX;

/// Valid, dirty and RRPV bits of one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Flags {
    valid: u8,
    dirty: u8,
    rrpv: u8,
    _pad: u8,
}

const NO_FLAGS: Flags = Flags { valid: 0, dirty: 0, rrpv: 0, _pad: 0 };

/// A vector whose element `o` starts on a 64-byte boundary (host cache line).
#[derive(Debug, Clone)]
struct Aligned<T> {
    v: Vec<T>,
    o: usize,
    n: usize,
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
        Aligned { v, o, n }
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
    fn len(&self) -> usize {
        self.n
    }
}

/// Tag storage: 32-bit while every line address fits (`u32::MAX` is invalid), else 64-bit.
#[derive(Debug, Clone)]
enum Tags {
    Narrow(Aligned<u32>),
    Wide(Aligned<u64>),
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
    tags: Tags,
    /// Last use (LRU order) or insertion (FIFO).
    stamp: Aligned<u32>,
    /// Last store (the 8-dirty rule cleans the least recently stored dirty line); meaningful
    /// only for dirty slots (every store that dirties a slot sets it).
    store_stamp: Aligned<u32>,
    flags: Aligned<Flags>,
    clock: u32,
    dirty_threshold: u32,
}

impl Cache {
    /// `sets` sets of `ways` ways. `dirty_threshold` > 0 enables the 8-dirty rule at that count.
    pub fn new(sets: usize, ways: usize, policy: Replacement, dirty_threshold: u32) -> Self {
        let n = sets * ways;
        Cache {
            ways,
            policy,
            tags: Tags::Narrow(Aligned::new(INVALID32, n)),
            stamp: Aligned::new(0, n),
            store_stamp: Aligned::new(0, n),
            flags: Aligned::new(NO_FLAGS, n),
            clock: 0,
            dirty_threshold,
        }
    }

    /// Forget everything (dirty data is dropped; call `dirty_lines` first to write it back).
    pub fn clear(&mut self) {
        match &mut self.tags {
            Tags::Narrow(t) => t.fill(INVALID32),
            Tags::Wide(t) => t.fill(INVALID),
        }
        self.stamp.fill(0);
        self.store_stamp.fill(0);
        self.flags.fill(NO_FLAGS);
        self.clock = 0;
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.stamp.len() / self.ways
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
        for set in 0..self.sets() {
            for arr in [&mut self.stamp, &mut self.store_stamp] {
                let s = arr.s_mut(set * w, w);
                let mut order: Vec<usize> = (0..w).collect();
                order.sort_by_key(|&i| s[i]);
                for (rank, &i) in order.iter().enumerate() {
                    s[i] = rank as u32 + 1;
                }
            }
        }
        self.clock = w as u32 + 1;
    }

    #[inline]
    fn find(&self, set: usize, line: u64) -> Option<usize> {
        let w = self.ways;
        match &self.tags {
            Tags::Narrow(t) => {
                if line >= INVALID32 as u64 {
                    return None;
                }
                let l = line as u32;
                t.s(set * w, w).iter().position(|&x| x == l)
            }
            Tags::Wide(t) => t.s(set * w, w).iter().position(|&x| x == line),
        }
    }

    /// Tag of slot `i` (flat), `INVALID` when empty.
    #[inline]
    fn tag(&self, i: usize) -> u64 {
        match &self.tags {
            Tags::Narrow(t) => {
                let x = t.s(i, 1)[0];
                if x == INVALID32 {
                    INVALID
                } else {
                    x as u64
                }
            }
            Tags::Wide(t) => t.s(i, 1)[0],
        }
    }

    #[inline]
    fn set_tag(&mut self, i: usize, line: u64) {
        if line >= INVALID32 as u64 {
            self.widen();
        }
        match &mut self.tags {
            Tags::Narrow(t) => t.s_mut(i, 1)[0] = line as u32,
            Tags::Wide(t) => t.s_mut(i, 1)[0] = line,
        }
    }

    /// Switch to 64-bit tags (a line address beyond 32 bits was seen).
    #[cold]
    fn widen(&mut self) {
        if let Tags::Narrow(t) = &self.tags {
            let n = self.stamp.len();
            let mut wide = Aligned::new(INVALID, n);
            for (d, &s) in wide.s_mut(0, n).iter_mut().zip(t.s(0, n)) {
                *d = if s == INVALID32 { INVALID } else { s as u64 };
            }
            self.tags = Tags::Wide(wide);
        }
    }

    /// Hint the host CPU to fetch `set`'s state (the simulated L2 is far larger than host caches;
    /// a chase knows its next addresses, so it can overlap those host misses).
    #[inline]
    pub fn prefetch(&self, set: usize) {
        self.prefetch_arrays(set, false);
    }

    #[inline]
    fn prefetch_arrays(&self, set: usize, store: bool) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let w = self.ways;
            let i = set * w;
            if i >= self.stamp.len() {
                return;
            }
            let (t, tb) = match &self.tags {
                Tags::Narrow(t) => (t.ptr(i), w * 4),
                Tags::Wide(t) => (t.ptr(i), w * 8),
            };
            let s = self.stamp.ptr(i);
            let f = self.flags.ptr(i);
            let ss = self.store_stamp.ptr(i);
            let mut off = 0;
            while off < tb {
                // SAFETY: prefetch is a hint that never faults; SSE is baseline on x86_64.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(t.wrapping_add(off)) };
                off += 64;
            }
            off = 0;
            while off < w * 4 {
                // SAFETY: as above.
                unsafe {
                    _mm_prefetch::<_MM_HINT_T0>(s.wrapping_add(off));
                    _mm_prefetch::<_MM_HINT_T0>(f.wrapping_add(off));
                    if store {
                        _mm_prefetch::<_MM_HINT_T0>(ss.wrapping_add(off));
                    }
                }
                off += 64;
            }
        }
    }

    /// Whether `line` is present in `set` with all of `sectors` valid (no state change).
    pub fn probe(&self, set: usize, line: u64, sectors: u8) -> bool {
        self.find(set, line).is_some_and(|i| self.flags.s(set * self.ways + i, 1)[0].valid & sectors == sectors)
    }

    /// Lines present in `set` (tags), for tests and occupancy reports.
    pub fn lines_in_set(&self, set: usize) -> usize {
        let w = self.ways;
        (set * w..set * w + w).filter(|&i| self.tag(i) != INVALID).count()
    }

    /// A load of `sectors` of `line`: a hit refreshes the line; missing sectors are filled; a miss
    /// allocates a slot (maybe evicting).
    #[inline]
    pub fn load(&mut self, set: usize, line: u64, sectors: u8) -> Outcome {
        // (no prefetch here: the lookups below issue the same loads at once)
        let clock = self.tick();
        let base = set * self.ways;
        if let Some(i) = self.find(set, line) {
            let f = &mut self.flags.s_mut(base + i, 1)[0];
            let missing = sectors & !f.valid;
            f.valid |= sectors;
            self.touch(base + i, clock);
            return Outcome { tag_hit: true, missing, evicted: None, cleaned: None };
        }
        let (way, evicted) = self.victim(set);
        let i = base + way;
        self.set_tag(i, line);
        self.stamp.s_mut(i, 1)[0] = clock;
        // store_stamp is left as it is: it is read only for dirty slots, and this one is clean
        self.flags.s_mut(i, 1)[0] = Flags { valid: sectors, dirty: 0, rrpv: 1, _pad: 0 };
        Outcome { tag_hit: false, missing: sectors, evicted, cleaned: None }
    }

    /// A store writing `sectors` of `line`, of which `full` are written whole (the rest partially,
    /// under a byte mask). With `mark_dirty` (write-back) the sectors become dirty; `allocate`
    /// false: a missing line is not allocated (write-around), only reported.
    #[inline]
    pub fn store(&mut self, set: usize, line: u64, sectors: u8, full: u8, allocate: bool, mark_dirty: bool) -> Outcome {
        self.prefetch_arrays(set, true); // the store stamps too
        let clock = self.tick();
        let w = self.ways;
        let base = set * w;
        let mut cleaned = None;
        if self.dirty_threshold > 0 && mark_dirty {
            let flags = self.flags.s_mut(base, w);
            let dirty = flags.iter().filter(|s| s.dirty != 0).count() as u32;
            if dirty >= self.dirty_threshold {
                let ss = self.store_stamp.s(base, w);
                let mut best: Option<usize> = None;
                for (i, s) in flags.iter().enumerate() {
                    if s.dirty != 0 && best.is_none_or(|b| ss[i] < ss[b]) {
                        best = Some(i);
                    }
                }
                if let Some(i) = best {
                    let sectors = flags[i].dirty;
                    flags[i].dirty = 0;
                    cleaned = Some(WriteBack { line: self.tag(base + i), sectors });
                }
            }
        }
        if let Some(i) = self.find(set, line) {
            let f = &mut self.flags.s_mut(base + i, 1)[0];
            f.valid |= full;
            if mark_dirty {
                f.dirty |= sectors;
                self.store_stamp.s_mut(base + i, 1)[0] = clock;
            }
            let missing = sectors & !f.valid;
            self.touch(base + i, clock);
            return Outcome { tag_hit: true, missing, evicted: None, cleaned };
        }
        if !allocate {
            return Outcome { tag_hit: false, missing: sectors, evicted: None, cleaned };
        }
        let (way, evicted) = self.victim(set);
        let dirty = if mark_dirty { sectors } else { 0 };
        let i = base + way;
        self.set_tag(i, line);
        self.stamp.s_mut(i, 1)[0] = clock;
        self.store_stamp.s_mut(i, 1)[0] = clock;
        self.flags.s_mut(i, 1)[0] = Flags { valid: full, dirty, rrpv: 1, _pad: 0 };
        Outcome { tag_hit: false, missing: sectors & !full, evicted, cleaned }
    }

    /// Number of lines holding dirty sectors.
    pub fn dirty_lines(&self) -> usize {
        let n = self.stamp.len();
        let f = self.flags.s(0, n);
        (0..n).filter(|&i| f[i].dirty != 0 && self.tag(i) != INVALID).count()
    }

    /// Pick a victim way: an invalid slot first; LRU/FIFO: smallest stamp; RRIP: least recently
    /// used among RRPV 2, else age all and rescan. A dirty victim goes to the write-back FIFO
    /// (seed 004: handed to the controller, after which the scan finds it clean and takes it).
    #[inline]
    fn victim(&mut self, set: usize) -> (usize, Option<WriteBack>) {
        let w = self.ways;
        let base = set * w;
        let empty = match &self.tags {
            Tags::Narrow(t) => t.s(base, w).iter().position(|&x| x == INVALID32),
            Tags::Wide(t) => t.s(base, w).iter().position(|&x| x == INVALID),
        };
        if let Some(i) = empty {
            return (i, None);
        }
        let stamps = self.stamp.s(base, w);
        let way = match self.policy {
            Replacement::Lru | Replacement::Fifo => {
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
                let flags = self.flags.s_mut(base, w);
                let top = flags.iter().map(|f| f.rrpv.min(2)).max().unwrap_or(2);
                if top < 2 {
                    let k = 2 - top;
                    for f in flags.iter_mut() {
                        f.rrpv = (f.rrpv + k).min(2);
                    }
                }
                let mut best = 0;
                let mut best_key = u64::MAX;
                for (i, f) in flags.iter().enumerate() {
                    let key = (u64::from(f.rrpv < 2) << 32) | stamps[i] as u64;
                    if key < best_key {
                        best_key = key;
                        best = i;
                    }
                }
                best
            }
        };
        let d = self.flags.s(base + way, 1)[0].dirty;
        let wb = if d != 0 { Some(WriteBack { line: self.tag(base + way), sectors: d }) } else { None };
        (way, wb)
    }

    #[inline]
    fn touch(&mut self, i: usize, clock: u32) {
        match self.policy {
            Replacement::Lru => self.stamp.s_mut(i, 1)[0] = clock,
            Replacement::Fifo => {}
            Replacement::Rrip => {
                self.stamp.s_mut(i, 1)[0] = clock;
                self.flags.s_mut(i, 1)[0].rrpv = 0;
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
