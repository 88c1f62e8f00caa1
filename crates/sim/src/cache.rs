//! A sectored set-associative cache (seed 000: 128-byte lines of four 32-byte sectors, a slot may
//! hold only some sectors; seed 004: dirty sector masks, 2-bit RRPV replacement, the 8-dirty rule).
//! Sets are addressed by a flat index (the L2 uses `slice * sets_per_slice + set`); tags are line
//! addresses. Replacement: LRU, FIFO, or RRIP (new lines RRPV 1, a hit sets 0, victim = least
//! recently used among RRPV 2, else age every line and rescan).
//!
//! Layout (speed only): one block per set, aligned to 64 bytes, holding the set's 32-bit tags,
//! state words (valid and dirty sectors, a per-set use stamp, the RRPV) and store stamps one
//! after the other, so a 16-way set is three host cache lines of one host page (a load reads
//! two). Use stamps count within their set (one more than the set's highest), which orders a
//! set's lines as a global clock would. Tags are 32-bit while every line address held since the
//! last `clear` has the same high 32 bits (those kept once), and move to a 64-bit array for good
//! on the first one that does not.

use crate::simd::{first_min, lanes, lanes2, low, max_field, LaneOp};
use memscope_core::hierarchy::Replacement;

const INVALID: u64 = u64::MAX;
const INVALID32: u32 = u32::MAX;
/// The parts of a set's block, in this order: what a load reads (tags, state words) comes first,
/// the store stamps last.
const FLAGS: usize = 1;
const STORE: usize = 2;
/// Use stamps: bits 16..30 of a state word, renumbered by rank in their set when they reach
/// `STAMP_MAX`.
const STAMP_SHIFT: u32 = 16;
const STAMP_MAX: u32 = 0x3fff;
const RRPV_SHIFT: u32 = 30;

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
        // (4 more elements: `lanes` reads whole groups of 4 words past a set's last part)
        let v = huge_vec(x, n + pad + 4);
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
    /// `n` elements from `i`, rounded up to a multiple of 4 (for `lanes`).
    #[inline(always)]
    fn s4(&self, i: usize, n: usize) -> &[T] {
        &self.v[self.o + i..self.o + i + n.next_multiple_of(4)]
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
    /// Per set, `stride` words: 32-bit tags, state words (valid sectors, dirty sectors << 8,
    /// use stamp << 16 (last use for LRU, insertion for FIFO), RRPV << 30) and store stamps
    /// (last store, from `clock`; the 8-dirty rule cleans the least recently stored dirty line;
    /// meaningful only for dirty slots, as every store that dirties a slot sets it), `ways`
    /// words each.
    b: Aligned<u32>,
    stride: usize,
    sets: usize,
    /// 64-bit tags, once a line address did not fit in 32 bits (the block's tags are unused).
    wide: Option<Aligned<u64>>,
    /// The high 32 bits of every line address held in 32-bit tags (set by the first tag after
    /// `clear`; a line with other high bits moves the tags to `wide`).
    hi: Option<u32>,
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
    (f >> RRPV_SHIFT) as u8
}
#[inline(always)]
fn flags(valid: u8, dirty: u8, rrpv: u8, stamp: u32) -> u32 {
    valid as u32 | (dirty as u32) << 8 | stamp << STAMP_SHIFT | (rrpv as u32) << RRPV_SHIFT
}
/// A state word with its use stamp replaced.
#[inline(always)]
fn with_stamp(f: u32, stamp: u32) -> u32 {
    (f & !(STAMP_MAX << STAMP_SHIFT)) | stamp << STAMP_SHIFT
}

impl Cache {
    /// `sets` sets of `ways` ways. `dirty_threshold` > 0 enables the 8-dirty rule at that count.
    pub fn new(sets: usize, ways: usize, policy: Replacement, dirty_threshold: u32) -> Self {
        let stride = (3 * ways).next_multiple_of(16);
        let mut c = Cache {
            ways,
            policy,
            b: Aligned::new(0, sets * stride),
            stride,
            sets,
            wide: None,
            hi: None,
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
        self.hi = None;
        self.clock = 0;
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.sets
    }

    /// Advance the store clock; stamps are 32-bit, so every 2^32 uses they are renormalized
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
            let s = self.b.s_mut(set * self.stride + STORE * w, w);
            let mut order: Vec<usize> = (0..w).collect();
            order.sort_by_key(|&i| s[i]);
            for (rank, &i) in order.iter().enumerate() {
                s[i] = rank as u32 + 1;
            }
        }
        self.clock = w as u32 + 1;
    }

    /// The use stamp for `set`'s next fill or hit: one more than its highest (stamps renumbered
    /// by rank, order kept, when that would pass `STAMP_MAX`).
    #[inline(always)]
    fn next_stamp(&mut self, set: usize) -> u32 {
        let m = max_field(self.part4(set, FLAGS), self.ways, STAMP_SHIFT, STAMP_MAX);
        if m < STAMP_MAX {
            return m + 1;
        }
        self.renumber_stamps(set)
    }

    #[cold]
    fn renumber_stamps(&mut self, set: usize) -> u32 {
        let w = self.ways;
        let s = self.part_mut(set, FLAGS);
        let mut order: Vec<usize> = (0..w).collect();
        order.sort_by_key(|&i| (s[i] >> STAMP_SHIFT) & STAMP_MAX);
        for (rank, &i) in order.iter().enumerate() {
            s[i] = with_stamp(s[i], rank as u32 + 1);
        }
        w as u32 + 1
    }

    /// The words of `set` from part `k` (0 tags, `FLAGS`, `STORE`).
    #[inline(always)]
    fn part(&self, set: usize, k: usize) -> &[u32] {
        self.b.s(set * self.stride + k * self.ways, self.ways)
    }
    #[inline(always)]
    fn part_mut(&mut self, set: usize, k: usize) -> &mut [u32] {
        self.b.s_mut(set * self.stride + k * self.ways, self.ways)
    }

    /// Part `k` of `set` rounded up to 4 words (for `lanes`).
    #[inline(always)]
    fn part4(&self, set: usize, k: usize) -> &[u32] {
        self.b.s4(set * self.stride + k * self.ways, self.ways)
    }

    /// `line` as a 32-bit tag, if 32-bit tags can hold it (`None`: it is not in the cache).
    #[inline(always)]
    fn narrow(&self, line: u64) -> Option<u32> {
        (self.hi == Some((line >> 32) as u32) && line as u32 != INVALID32).then_some(line as u32)
    }

    #[inline]
    fn find(&self, set: usize, line: u64) -> Option<usize> {
        let w = self.ways;
        let m = match &self.wide {
            None => lanes(self.part4(set, 0), w, LaneOp::Eq(self.narrow(line)?)),
            Some(t) => return t.s(set * w, w).iter().position(|&x| x == line),
        };
        (m != 0).then(|| m.trailing_zeros() as usize)
    }

    /// Tag of a way, `INVALID` when empty.
    #[inline]
    fn tag(&self, set: usize, way: usize) -> u64 {
        match &self.wide {
            None => {
                let x = self.part(set, 0)[way];
                match self.hi {
                    Some(hi) if x != INVALID32 => (hi as u64) << 32 | x as u64,
                    _ => INVALID,
                }
            }
            Some(t) => t.s(set * self.ways + way, 1)[0],
        }
    }

    #[inline]
    fn set_tag(&mut self, set: usize, way: usize, line: u64) {
        if self.wide.is_none() {
            if self.hi.is_none() {
                // (no tag is held: every way of every set is empty)
                self.hi = Some((line >> 32) as u32);
            }
            if self.narrow(line).is_none() {
                self.widen();
            }
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

    /// Prefetch the block of `set` (tags, stamps, store stamps, flags) and its wide tags.
    #[inline]
    fn prefetch_block(&self, set: usize, store: bool) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            if set >= self.sets {
                return;
            }
            let p = self.b.ptr(set * self.stride);
            // 4-byte words: tags and state words (and the store stamps for a store)
            let bytes = if store { 12 } else { 8 } * self.ways;
            let mut off = 0;
            while off < bytes {
                // SAFETY: prefetch is a hint that never faults; SSE is baseline on x86_64.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
                off += 64;
            }
            if let Some(t) = &self.wide {
                // SAFETY: as above.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(t.ptr(set * self.ways)) };
            }
        }
    }

    /// Whether `line` is present in `set` with all of `sectors` valid (no state change).
    pub fn probe(&self, set: usize, line: u64, sectors: u8) -> bool {
        self.find(set, line).is_some_and(|i| valid(self.part(set, FLAGS)[i]) & sectors == sectors)
    }

    /// Lines present in `set` (tags), for tests and occupancy reports.
    pub fn lines_in_set(&self, set: usize) -> usize {
        (0..self.ways).filter(|&i| self.tag(set, i) != INVALID).count()
    }

    /// A load of `sectors` of `line`: a hit refreshes the line; missing sectors are filled; a miss
    /// allocates a slot (maybe evicting).
    #[inline]
    pub fn load(&mut self, set: usize, line: u64, sectors: u8) -> Outcome {
        // (no prefetch here: the lookups below issue the same loads at once; the store clock
        // is not advanced: only store stamps use it)
        let (hit, empty) = self.tag_masks(set, line);
        let stamp = self.next_stamp(set);
        if hit != 0 {
            let i = hit.trailing_zeros() as usize;
            let f = self.part(set, FLAGS)[i];
            let missing = sectors & !valid(f);
            self.part_mut(set, FLAGS)[i] = f | sectors as u32;
            self.touch(set, i, stamp);
            return Outcome { tag_hit: true, missing, evicted: None, cleaned: None };
        }
        let (way, evicted) = self.victim_with(set, empty);
        self.set_tag(set, way, line);
        // the store stamp is left as it is: it is read only for dirty slots, and this one is clean
        self.part_mut(set, FLAGS)[way] = flags(sectors, 0, 1, stamp);
        Outcome { tag_hit: false, missing: sectors, evicted, cleaned: None }
    }

    /// A store writing `sectors` of `line`, of which `full` are written whole (the rest partially,
    /// under a byte mask). With `mark_dirty` (write-back) the sectors become dirty; `allocate`
    /// false: a missing line is not allocated (write-around), only reported.
    #[inline]
    pub fn store(&mut self, set: usize, line: u64, sectors: u8, full: u8, allocate: bool, mark_dirty: bool) -> Outcome {
        self.prefetch_block(set, true); // the store stamps too
        let clock = self.tick();
        let stamp = self.next_stamp(set);
        let mut cleaned = None;
        if self.dirty_threshold > 0 && mark_dirty {
            let w = self.ways;
            let dmask = !lanes(self.part4(set, FLAGS), w, LaneOp::AndZero(0xff00)) & low(w);
            if dmask.count_ones() >= self.dirty_threshold {
                // the least recently stored dirty line (the first one on a tie)
                let i = first_min(self.part4(set, STORE), dmask);
                let sectors = dirty(self.part(set, FLAGS)[i]);
                self.part_mut(set, FLAGS)[i] &= !0xff00;
                cleaned = Some(WriteBack { line: self.tag(set, i), sectors });
            }
        }
        if let Some(i) = self.find(set, line) {
            let mut f = self.part(set, FLAGS)[i] | full as u32;
            if mark_dirty {
                f |= (sectors as u32) << 8;
                self.part_mut(set, STORE)[i] = clock;
            }
            self.part_mut(set, FLAGS)[i] = f;
            let missing = sectors & !valid(f);
            self.touch(set, i, stamp);
            return Outcome { tag_hit: true, missing, evicted: None, cleaned };
        }
        if !allocate {
            return Outcome { tag_hit: false, missing: sectors, evicted: None, cleaned };
        }
        let (way, evicted) = self.victim(set);
        let d = if mark_dirty { sectors } else { 0 };
        self.set_tag(set, way, line);
        self.part_mut(set, STORE)[way] = clock;
        self.part_mut(set, FLAGS)[way] = flags(full, d, 1, stamp);
        Outcome { tag_hit: false, missing: sectors & !full, evicted, cleaned }
    }

    /// Number of lines holding dirty sectors.
    pub fn dirty_lines(&self) -> usize {
        (0..self.sets)
            .map(|s| {
                (0..self.ways).filter(|&i| dirty(self.part(s, FLAGS)[i]) != 0 && self.tag(s, i) != INVALID).count()
            })
            .sum()
    }

    /// Pick a victim way: an invalid slot first; LRU/FIFO: smallest stamp; RRIP: least recently
    /// used among RRPV 2, else age all and rescan. A dirty victim goes to the write-back FIFO
    /// (seed 004: handed to the controller, after which the scan finds it clean and takes it).
    #[inline]
    fn victim(&mut self, set: usize) -> (usize, Option<WriteBack>) {
        let empty = self.tag_masks(set, INVALID).1;
        self.victim_with(set, empty)
    }

    /// Ways of `set` holding `line` (at most one), and the empty ways (the first of them is
    /// what matters).
    #[inline(always)]
    fn tag_masks(&self, set: usize, line: u64) -> (u64, u64) {
        let w = self.ways;
        match &self.wide {
            None => {
                let (hit, empty) = lanes2(self.part4(set, 0), w, line as u32, INVALID32);
                (if self.narrow(line).is_some() { hit } else { 0 }, empty)
            }
            Some(t) => t
                .s(set * w, w)
                .iter()
                .enumerate()
                .fold((0, 0), |(h, e), (i, &x)| (h | u64::from(x == line) << i, e | u64::from(x == INVALID) << i)),
        }
    }

    /// `victim` given the empty ways.
    #[inline]
    fn victim_with(&mut self, set: usize, empty: u64) -> (usize, Option<WriteBack>) {
        let w = self.ways;
        if empty != 0 {
            return (empty.trailing_zeros() as usize, None);
        }
        let way = match self.policy {
            // (valid lines' stamps differ, and candidates share their RRPV: the smallest state
            // word is the smallest stamp)
            Replacement::Lru | Replacement::Fifo => first_min(self.part4(set, FLAGS), low(w)),
            Replacement::Rrip => {
                // "Scan for RRPV 2; if none, age every line and rescan": RRPVs are 0, 1 or 2
                // (insert 1, hit 0, aging saturates at 2). With no line at 2, aging by 2 - max
                // RRPV makes the lines at the maximum the candidates; the victim is the first
                // candidate with the smallest use stamp.
                let fl = self.part4(set, FLAGS);
                let ge2 = !lanes(fl, w, LaneOp::AndZero(0x8000_0000)) & low(w);
                let cand = if ge2 != 0 {
                    ge2
                } else {
                    let eq1 = lanes(fl, w, LaneOp::AndZero(0x8000_0000)) & !lanes(fl, w, LaneOp::AndZero(0x4000_0000));
                    let k = if eq1 != 0 { 1 } else { 2 };
                    for f in self.part_mut(set, FLAGS) {
                        let r = (rrpv(*f) + k).min(2);
                        *f = (*f & !(3 << RRPV_SHIFT)) | (r as u32) << RRPV_SHIFT;
                    }
                    if eq1 != 0 {
                        eq1
                    } else {
                        low(w)
                    }
                };
                first_min(self.part4(set, FLAGS), cand)
            }
        };
        let d = dirty(self.part(set, FLAGS)[way]);
        let wb = if d != 0 { Some(WriteBack { line: self.tag(set, way), sectors: d }) } else { None };
        (way, wb)
    }

    #[inline]
    fn touch(&mut self, set: usize, way: usize, stamp: u32) {
        let policy = self.policy;
        let f = &mut self.part_mut(set, FLAGS)[way];
        match policy {
            Replacement::Lru => *f = with_stamp(*f, stamp),
            Replacement::Fifo => {}
            Replacement::Rrip => *f = with_stamp(*f, stamp) & !(3 << RRPV_SHIFT),
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
#[path = "cache_tests.rs"]
mod tests;
