//! A sectored set-associative cache (seed 000: 128-byte lines of four 32-byte sectors, a slot may
//! hold only some sectors; seed 004: dirty sector masks, 2-bit RRPV replacement, the 8-dirty rule).
//! Sets are addressed by a flat index (the L2 uses `slice * sets_per_slice + set`); tags are line
//! addresses. Replacement: LRU, FIFO, or RRIP (new lines RRPV 1, a hit sets 0, victim = least
//! recently used among RRPV 2, else age every line and rescan). A fill takes the first empty way;
//! no way is ever emptied again (until `clear`), so the full ways of a set are a prefix.
//!
//! Layout (speed only, `set`): one block per set, aligned to 64 bytes: 32-bit tags, then
//! byte arrays of recency ranks (order of last use for LRU and RRIP, of fill for FIFO), valid and
//! dirty sectors and RRPVs, then store ranks (order of the last store that dirtied a line, for
//! the 8-dirty rule); a 16-way set is three host cache lines of one host page (a load reads two).
//! Tags are 32-bit while every line address held since the last `clear` has the same high 32
//! bits (those kept once), and move to a 64-bit array for good on the first one that does not.
//!
//! Loads of the presets' caches (4-way LRU, 16-way RRIP) take the paths of `fast_load.rs` (a hit
//! path of one tag compare and the rank update; a miss path without the general cases); the
//! arrays are `mem`'s.

use crate::fast::simd::{lanes, lanes2, max_field, LaneOp};
use crate::hierarchy::Replacement;
use set::{Layout, Set, DIRTY, INVALID32, RANK, RRPV, SRANK, VALID};

const INVALID: u64 = u64::MAX;

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
    pub(crate) policy: Replacement,
    /// Per set, `l.stride` words (`set`): 32-bit tags, recency ranks, valid and dirty
    /// sectors, RRPVs, store ranks.
    pub(crate) b: Aligned<u32>,
    pub(crate) l: Layout,
    pub(crate) sets: usize,
    /// 64-bit tags, once a line address did not fit in 32 bits (the block's tags are unused).
    pub(crate) wide: Option<Aligned<u64>>,
    /// The high 32 bits of every line address held in 32-bit tags (set by the first tag after
    /// `clear`; a line with other high bits moves the tags to `wide`).
    hi: Option<u32>,
    /// A line has a 32-bit tag when `line - nbase` (wrapping) is below `nlim`: `hi << 32` and
    /// `INVALID32` while tags are 32-bit and `hi` is set, else 0 and 0 (no line has one).
    pub(crate) nbase: u64,
    pub(crate) nlim: u64,
    /// The load path for the layout and policy (`fast_load::kind`).
    pub(crate) kind: u8,
    /// A prefetch has more than two host lines to fetch: over 16 ways, or wide tags.
    pub(crate) prefetch_more: bool,
    pub(crate) dirty_threshold: u32,
    /// One bit per set loaded or stored since the last `clear` (which then resets only those;
    /// a probe's chase touches a few sets of a large L2 between flushes).
    pub(crate) touched: Vec<u64>,
}

impl Cache {
    /// `sets` sets of `ways` ways (1 to 64). `dirty_threshold` > 0 enables the 8-dirty rule at
    /// that count.
    pub fn new(sets: usize, ways: usize, policy: Replacement, dirty_threshold: u32) -> Self {
        let l = Layout::new(ways);
        let mut c = Cache {
            policy,
            b: Aligned::new(0, sets * l.stride),
            l,
            sets,
            wide: None,
            hi: None,
            nbase: 0,
            nlim: 0,
            kind: fast_load::kind(ways, policy),
            prefetch_more: l.g > 1,
            dirty_threshold,
            // (every set counts as touched until the first `clear` writes its empty block)
            touched: vec![u64::MAX; sets.div_ceil(64)],
        };
        // (the block loads of `set` rely on it)
        assert!((c.b.block(0) as usize).is_multiple_of(64));
        c.clear();
        c
    }

    /// Forget everything (dirty data is dropped; call `dirty_lines` first to write it back).
    pub fn clear(&mut self) {
        let e = self.l.empty_block();
        for set in touched_sets(&self.touched, self.sets) {
            self.b.s_mut(set * self.l.stride, self.l.stride).copy_from_slice(&e);
        }
        self.touched.fill(0);
        if let Some(t) = &mut self.wide {
            t.fill(INVALID);
        }
        self.hi = None;
        (self.nbase, self.nlim) = (0, 0);
    }

    /// Note `set` as touched since the last `clear`.
    #[inline(always)]
    pub(crate) fn mark(&mut self, set: usize) {
        if let Some(w) = self.touched.get_mut(set / 64) {
            *w |= 1 << (set % 64);
        }
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.sets
    }

    /// The layout with `TW` tag words (`TW` 4 to 16 and `l.tw`, or 0: any), so that its offsets
    /// are constants.
    #[inline(always)]
    fn lay<const TW: usize>(&self) -> Layout {
        let mut l = self.l;
        if TW > 0 {
            debug_assert_eq!(l.tw, TW);
            (l.tw, l.g, l.stride) = (TW, 1, set::stride_words(TW, 1));
        }
        l
    }

    /// A handle on `set`'s block to read.
    #[inline(always)]
    fn set(&self, set: usize) -> Set {
        assert!(set < self.sets);
        // SAFETY: the block of `set` < sets lies in `b`; only reading methods are called on this
        // handle (`set_mut` makes the ones that write).
        unsafe { Set::new(self.b.block(set * self.l.stride) as *mut u8, self.l) }
    }

    /// A handle on `set`'s block to read and write (while `self` is borrowed mutably), with
    /// layout `lay::<TW>`.
    ///
    /// # Safety
    /// `TW` is 0 or `self.l.tw` (callers dispatch on it; a check here would cost as much as the
    /// constant offsets save).
    #[inline(always)]
    unsafe fn set_mut<const TW: usize>(&mut self, set: usize) -> Set {
        let l = self.lay::<TW>();
        assert!(set < self.sets);
        // SAFETY: the block of `set` < sets lies in `b`, borrowed mutably; `l` is its layout
        // (`TW` is 0 or `self.l.tw`).
        unsafe { Set::new(self.b.block_mut(set * l.stride) as *mut u8, l) }
    }

    /// `line` as a 32-bit tag, if 32-bit tags can hold it (`None`: it is not in the cache).
    #[inline(always)]
    fn narrow(&self, line: u64) -> Option<u32> {
        (self.hi == Some((line >> 32) as u32) && line as u32 != INVALID32).then_some(line as u32)
    }

    /// `line` as a 32-bit tag in the block (`None`: tags are wide, or it is not in the cache).
    #[inline(always)]
    fn tag32(&self, line: u64) -> Option<u32> {
        (line.wrapping_sub(self.nbase) < self.nlim).then_some(line as u32)
    }

    /// Ways of `set` holding `line` (at most one), given `tag32(line)`.
    #[inline(always)]
    fn hits(&self, s: Set, set: usize, line: u64, x: Option<u32>) -> u64 {
        match (x, &self.wide) {
            (Some(x), _) => s.tags_eq(x),
            (None, None) => 0,
            (None, Some(t)) => {
                let w = self.l.w;
                t.s(set * w, w).iter().enumerate().fold(0, |h, (i, &x)| h | u64::from(x == line) << i)
            }
        }
    }

    /// The empty ways of `set` (none when it is full, the usual case: the full ways are a prefix,
    /// so the last way tells).
    #[inline(always)]
    pub(crate) fn empties(&self, s: Set, set: usize) -> u64 {
        match &self.wide {
            None if s.tag(self.l.w - 1) != INVALID32 => 0,
            None => s.tags_eq(INVALID32),
            Some(_) => self.wide_empties(set),
        }
    }

    #[cold]
    fn wide_empties(&self, set: usize) -> u64 {
        let Some(t) = &self.wide else { return 0 };
        let w = self.l.w;
        t.s(set * w, w).iter().enumerate().fold(0, |e, (i, &x)| e | u64::from(x == INVALID) << i)
    }

    /// Whether `hit` and `empty` are what plain scans of `set` give (for debug assertions).
    pub(crate) fn scans_agree(&self, set: usize, line: u64, hit: u64, empty: u64) -> bool {
        let w = self.l.w;
        let (h, e) = match &self.wide {
            None => {
                let (h, e) = lanes2(self.b.s(set * self.l.stride, self.l.tw), w, line as u32, INVALID32);
                (if self.narrow(line).is_some() { h } else { 0 }, e)
            }
            Some(t) => (0..w).fold((0, 0), |(h, e), i| {
                let x = t.s(set * w + i, 1)[0];
                (h | u64::from(x == line) << i, e | u64::from(x == INVALID) << i)
            }),
        };
        h == hit && e == empty
    }

    #[inline]
    fn find(&self, set: usize, line: u64) -> Option<usize> {
        let m = self.hits(self.set(set), set, line, self.tag32(line));
        (m != 0).then(|| m.trailing_zeros() as usize)
    }

    /// Tag of a way, `INVALID` when empty.
    #[inline]
    fn tag(&self, set: usize, way: usize) -> u64 {
        self.tag_in(self.set(set), set, way)
    }

    /// `tag`, given the handle on `set`.
    #[inline(always)]
    pub(crate) fn tag_in(&self, s: Set, set: usize, way: usize) -> u64 {
        match &self.wide {
            None => {
                let x = s.tag(way);
                match self.hi {
                    Some(hi) if x != INVALID32 => (hi as u64) << 32 | x as u64,
                    _ => INVALID,
                }
            }
            Some(t) => t.s(set * self.l.w + way, 1)[0],
        }
    }

    /// Set the tag of `way` (empty or a victim) to `line`; the handle to use afterwards.
    ///
    /// # Safety
    /// As `set_mut`.
    #[inline(always)]
    unsafe fn put_tag<const TW: usize>(&mut self, s: Set, set: usize, way: usize, line: u64, x: Option<u32>) -> Set {
        match x {
            Some(x) => {
                s.set_tag(way, x);
                s
            }
            None => {
                self.set_tag(set, way, line);
                // SAFETY: as this function's.
                unsafe { self.set_mut::<TW>(set) }
            }
        }
    }

    #[cold]
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
        (self.nbase, self.nlim) = match (&self.wide, self.hi) {
            (None, Some(hi)) => ((hi as u64) << 32, INVALID32 as u64),
            _ => (0, 0),
        };
        let w = self.l.w;
        match &mut self.wide {
            // SAFETY: any layout goes with `TW` 0.
            None => unsafe { self.set_mut::<0>(set) }.set_tag(way, line as u32),
            Some(t) => t.s_mut(set * w + way, 1)[0] = line,
        }
    }

    /// Switch to 64-bit tags (a line address beyond 32 bits was seen).
    #[cold]
    fn widen(&mut self) {
        let w = self.l.w;
        let mut wide = Aligned::new(INVALID, self.sets * w);
        for set in 0..self.sets {
            for way in 0..w {
                wide.s_mut(set * w + way, 1)[0] = self.tag(set, way);
            }
        }
        self.wide = Some(wide);
        self.prefetch_more = true;
    }

    /// Whether `line` is present in `set` with all of `sectors` valid (no state change).
    pub fn probe(&self, set: usize, line: u64, sectors: u8) -> bool {
        self.find(set, line).is_some_and(|i| self.set(set).get(VALID, i) & sectors == sectors)
    }

    /// Lines present in `set` (tags), for tests and occupancy reports.
    pub fn lines_in_set(&self, set: usize) -> usize {
        (0..self.l.w).filter(|&i| self.tag(set, i) != INVALID).count()
    }

    /// A load of `sectors` of `line`: a hit refreshes the line; missing sectors are filled; a miss
    /// allocates a slot (maybe evicting).
    #[inline(always)]
    pub fn load(&mut self, set: usize, line: u64, sectors: u8) -> Outcome {
        self.load_packed::<false>(set, line, sectors).outcome()
    }

    /// Whether a load (as `load`) found all its sectors, with the common caches' miss path
    /// inlined (for loops whose loads mostly miss).
    #[inline(always)]
    pub fn load_hit_inline(&mut self, set: usize, line: u64, sectors: u8) -> bool {
        self.load_packed::<true>(set, line, sectors).all_present()
    }

    /// `load`'s work by layout and policy (`INLINE_MISS`: see `load_fast`).
    #[inline(always)]
    fn load_packed<const INLINE_MISS: bool>(&mut self, set: usize, line: u64, sectors: u8) -> Packed {
        // SAFETY: `kind` tells the layout and the policy (`fast_load::kind`).
        unsafe {
            match self.kind {
                fast_load::LRU4 => self.load_fast::<4, { fast_load::P_LRU }, INLINE_MISS>(set, line, sectors),
                fast_load::RRIP16 => self.load_fast::<16, { fast_load::P_RRIP }, INLINE_MISS>(set, line, sectors),
                _ => self.load_slow(set, line, sectors),
            }
        }
    }

    /// `load` for any layout, policy and tag width.
    #[inline(never)]
    pub(crate) fn load_slow(&mut self, set: usize, line: u64, sectors: u8) -> Packed {
        self.mark(set);
        // (one copy per common tag count, so that the block's offsets are constants)
        // SAFETY: `TW` is `self.l.tw`, or 0.
        let o = unsafe {
            match self.l.tw {
                16 => self.load_in::<16>(set, line, sectors),
                4 => self.load_in::<4>(set, line, sectors),
                _ => self.load_in::<0>(set, line, sectors),
            }
        };
        Packed::new(o.tag_hit, o.missing, o.evicted)
    }

    /// # Safety
    /// As `set_mut`.
    #[inline(always)]
    unsafe fn load_in<const TW: usize>(&mut self, set: usize, line: u64, sectors: u8) -> Outcome {
        // SAFETY: as this function's (also below).
        let s = unsafe { self.set_mut::<TW>(set) };
        let x = self.tag32(line);
        let hit = self.hits(s, set, line, x);
        if hit != 0 {
            let i = hit.trailing_zeros() as usize;
            let v = s.get(VALID, i);
            s.put(VALID, i, v | sectors);
            self.touch(s, i, self.policy);
            return Outcome { tag_hit: true, missing: sectors & !v, evicted: None, cleaned: None };
        }
        let empty = self.empties(s, set);
        debug_assert!(self.scans_agree(set, line, hit, empty));
        let (way, evicted) = self.victim(s, set, empty, self.policy);
        let s = unsafe { self.put_tag::<TW>(s, set, way, line, x) };
        // the store rank is left as it is: it is read only for dirty slots, and this one is clean
        self.fill(s, way, sectors, 0);
        Outcome { tag_hit: false, missing: sectors, evicted, cleaned: None }
    }

    /// A store writing `sectors` of `line`, of which `full` are written whole (the rest partially,
    /// under a byte mask). With `mark_dirty` (write-back) the sectors become dirty; `allocate`
    /// false: a missing line is not allocated (write-around), only reported.
    #[inline(always)]
    pub fn store(&mut self, set: usize, line: u64, sectors: u8, full: u8, allocate: bool, mark_dirty: bool) -> Outcome {
        if allocate {
            if let Some(o) = self.store_fast(set, line, sectors, full, mark_dirty) {
                return o;
            }
        }
        self.mark(set);
        // SAFETY: `TW` is `self.l.tw`, or 0.
        unsafe {
            match self.l.tw {
                16 => self.store_in::<16>(set, line, sectors, full, allocate, mark_dirty),
                4 => self.store_in::<4>(set, line, sectors, full, allocate, mark_dirty),
                _ => self.store_in::<0>(set, line, sectors, full, allocate, mark_dirty),
            }
        }
    }

    /// # Safety
    /// As `set_mut`.
    #[inline(always)]
    pub(crate) unsafe fn store_in<const TW: usize>(
        &mut self,
        set: usize,
        line: u64,
        sectors: u8,
        full: u8,
        allocate: bool,
        mark_dirty: bool,
    ) -> Outcome {
        // SAFETY: as this function's (also below).
        let s = unsafe { self.set_mut::<TW>(set) };
        s.prefetch(SRANK); // (the tags and state are read at once)
        let mut cleaned = None;
        if self.dirty_threshold > 0 && mark_dirty && s.count_ne(DIRTY, 0) >= self.dirty_threshold {
            // the least recently stored dirty line (store ranks are distinct)
            let i = s.oldest::<true>(SRANK, DIRTY, 0);
            let sectors = s.get(DIRTY, i);
            s.put(DIRTY, i, 0);
            cleaned = Some(WriteBack { line: self.tag_in(s, set, i), sectors });
        }
        let x = self.tag32(line);
        let hit = self.hits(s, set, line, x);
        if hit != 0 {
            return self.store_hit(s, hit.trailing_zeros() as usize, full, sectors, mark_dirty, self.policy, cleaned);
        }
        if !allocate {
            return Outcome { tag_hit: false, missing: sectors, evicted: None, cleaned };
        }
        let empty = self.empties(s, set);
        debug_assert!(self.scans_agree(set, line, hit, empty));
        let (way, evicted) = self.victim(s, set, empty, self.policy);
        let s = unsafe { self.put_tag::<TW>(s, set, way, line, x) };
        s.touch(SRANK, way);
        self.fill(s, way, full, if mark_dirty { sectors } else { 0 });
        Outcome { tag_hit: false, missing: sectors & !full, evicted, cleaned }
    }

    /// Number of lines holding dirty sectors.
    pub fn dirty_lines(&self) -> usize {
        touched_sets(&self.touched, self.sets)
            .map(|set| {
                (0..self.l.w).filter(|&i| self.set(set).get(DIRTY, i) != 0 && self.tag(set, i) != INVALID).count()
            })
            .sum()
    }

    /// Pick a victim way: an empty slot first (the first one); LRU/FIFO: the least recent (last
    /// used, first filled); RRIP: least recently used among RRPV 2, else age all and rescan. A
    /// dirty victim goes to the write-back FIFO (seed 004: handed to the controller, after which
    /// the scan finds it clean and takes it).
    #[inline(always)]
    pub(crate) fn victim(&self, s: Set, set: usize, empty: u64, policy: Replacement) -> (usize, Option<WriteBack>) {
        if empty != 0 {
            return (empty.trailing_zeros() as usize, None);
        }
        let way = match policy {
            Replacement::Lru | Replacement::Fifo => s.bytes_eq(RANK, self.l.w as u8 - 1).trailing_zeros() as usize,
            Replacement::Rrip => {
                if s.bytes_eq(RRPV, 2) == 0 {
                    self.age(s);
                }
                s.oldest::<false>(RANK, RRPV, 2)
            }
        };
        (way, self.evicted(s, set, way))
    }

    /// The write-back of victim `way` if it is dirty.
    #[inline(always)]
    fn evicted(&self, s: Set, set: usize, way: usize) -> Option<WriteBack> {
        let d = s.get(DIRTY, way);
        (d != 0).then(|| WriteBack { line: self.tag_in(s, set, way), sectors: d })
    }

    /// "Scan for RRPV 2; if none, age every line and rescan": RRPVs are 0, 1 or 2 (insert 1, hit
    /// 0, aging saturates at 2). With no line at 2, aging by 2 - the highest RRPV makes the lines
    /// at the highest the candidates.
    #[cold]
    #[inline(never)]
    pub(crate) fn age(&self, s: Set) {
        let k = if s.bytes_eq(RRPV, 1) != 0 { 1 } else { 2 };
        debug_assert!(self.aging_agrees(s, k));
        s.age(k);
    }

    /// Whether `k` is 2 - the highest RRPV of `s`, with no line at 2 (plain word scans, for debug
    /// assertions).
    fn aging_agrees(&self, s: Set, k: u8) -> bool {
        let (w, mut r) = (self.l.w, [0u32; 64]);
        for (i, x) in r.iter_mut().enumerate().take(w) {
            *x = s.get(RRPV, i) as u32;
        }
        lanes(&r, w, LaneOp::AndZero(2)) == self.l.all && max_field(&r, w, 0, 3) == 2 - k as u32
    }

    /// Fill `way` (its tag set) with a new line: valid and dirty sectors, RRPV 1, most recent.
    #[inline(always)]
    pub(crate) fn fill(&self, s: Set, way: usize, valid: u8, dirty: u8) {
        s.put(VALID, way, valid);
        s.put(DIRTY, way, dirty);
        s.put(RRPV, way, 1);
        s.touch(RANK, way);
    }

    /// A store that found its line in way `i` of `s`: `full` sectors become valid, `sectors`
    /// dirty (with `mark_dirty`, the store rank refreshed), the way touched.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn store_hit(
        &self,
        s: Set,
        i: usize,
        full: u8,
        sectors: u8,
        mark_dirty: bool,
        policy: Replacement,
        cleaned: Option<WriteBack>,
    ) -> Outcome {
        let v = s.get(VALID, i) | full;
        s.put(VALID, i, v);
        if mark_dirty {
            s.put(DIRTY, i, s.get(DIRTY, i) | sectors);
            s.touch(SRANK, i);
        }
        self.touch(s, i, policy);
        Outcome { tag_hit: true, missing: sectors & !v, evicted: None, cleaned }
    }

    /// A hit on `way`: most recent (LRU, RRIP; FIFO keeps the fill order), RRPV 0 (RRIP).
    #[inline(always)]
    pub(crate) fn touch(&self, s: Set, way: usize, policy: Replacement) {
        match policy {
            Replacement::Lru => s.touch(RANK, way),
            Replacement::Fifo => {}
            Replacement::Rrip => {
                s.touch(RANK, way);
                s.put(RRPV, way, 0);
            }
        }
    }
}

/// The sets (below `sets`) whose bit is set in `bits`, in order.
fn touched_sets(bits: &[u64], sets: usize) -> impl Iterator<Item = usize> + '_ {
    bits.iter().enumerate().flat_map(move |(i, &w)| {
        let mut w = w;
        std::iter::from_fn(move || {
            if w == 0 {
                return None;
            }
            let b = w.trailing_zeros() as usize;
            w &= w - 1;
            Some(64 * i + b)
        })
        .take_while(move |&s| s < sets)
    })
}

mod fast_load;
mod fast_store;
mod mem;
mod prefetch;
pub(crate) mod set;
use fast_load::Packed;
pub use mem::huge_vec;
use mem::Aligned;

#[cfg(test)]
mod tests;
