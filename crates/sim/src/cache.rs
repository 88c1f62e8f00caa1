//! A sectored set-associative cache (seed 000: 128-byte lines of four 32-byte sectors, a slot may
//! hold only some sectors; seed 004: dirty sector masks, 2-bit RRPV replacement, the 8-dirty rule).
//! Sets are addressed by a flat index (the L2 uses `slice * sets_per_slice + set`); tags are line
//! addresses. Replacement: LRU, FIFO, or RRIP (new lines RRPV 1, a hit sets 0, victim = least
//! recently used among RRPV 2, else age every line and rescan).

use memscope_core::hierarchy::Replacement;

const INVALID: u64 = u64::MAX;

/// Replacement and state bits of one slot (tags live in their own array so a lookup reads
/// one or two host cache lines per set).
#[derive(Debug, Clone, Copy)]
struct Meta {
    /// Last use (LRU order) or insertion (FIFO).
    stamp: u32,
    /// Last store (the 8-dirty rule cleans the least recently stored dirty line).
    store_stamp: u32,
    valid: u8,
    dirty: u8,
    rrpv: u8,
}

const EMPTY: Meta = Meta { stamp: 0, store_stamp: 0, valid: 0, dirty: 0, rrpv: 0 };

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
    tags: Vec<u64>,
    meta: Vec<Meta>,
    clock: u32,
    dirty_threshold: u32,
}

impl Cache {
    /// `sets` sets of `ways` ways. `dirty_threshold` > 0 enables the 8-dirty rule at that count.
    pub fn new(sets: usize, ways: usize, policy: Replacement, dirty_threshold: u32) -> Self {
        Cache {
            ways,
            policy,
            tags: huge_vec(INVALID, sets * ways),
            meta: huge_vec(EMPTY, sets * ways),
            clock: 0,
            dirty_threshold,
        }
    }

    /// Forget everything (dirty data is dropped; call `dirty_lines` first to write it back).
    pub fn clear(&mut self) {
        self.tags.fill(INVALID);
        self.meta.fill(EMPTY);
        self.clock = 0;
    }

    /// Number of sets.
    pub fn sets(&self) -> usize {
        self.tags.len() / self.ways
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
        for set in self.meta.chunks_mut(w) {
            let mut order: Vec<usize> = (0..set.len()).collect();
            order.sort_by_key(|&i| set[i].stamp);
            for (rank, &i) in order.iter().enumerate() {
                set[i].stamp = rank as u32 + 1;
            }
            let mut order: Vec<usize> = (0..set.len()).collect();
            order.sort_by_key(|&i| set[i].store_stamp);
            for (rank, &i) in order.iter().enumerate() {
                set[i].store_stamp = rank as u32 + 1;
            }
        }
        self.clock = w as u32 + 1;
    }

    #[inline]
    fn find(&self, set: usize, line: u64) -> Option<usize> {
        let w = self.ways;
        self.tags[set * w..set * w + w].iter().position(|&t| t == line)
    }

    /// Hint the host CPU to fetch `set`'s state (the simulated L2 is far larger than host caches;
    /// a chase knows its next addresses, so it can overlap those host misses).
    #[inline]
    pub fn prefetch(&self, set: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let i = set * self.ways;
            if i < self.tags.len() {
                let t = self.tags[i..].as_ptr() as *const i8;
                let m = self.meta[i..].as_ptr() as *const i8;
                let tb = self.ways * 8;
                let mb = self.ways * std::mem::size_of::<Meta>();
                let mut off = 0;
                while off < tb.max(mb) {
                    // SAFETY: prefetch is a hint that never faults; SSE is baseline on x86_64.
                    unsafe {
                        if off < tb {
                            _mm_prefetch::<_MM_HINT_T0>(t.wrapping_add(off));
                        }
                        if off < mb {
                            _mm_prefetch::<_MM_HINT_T0>(m.wrapping_add(off));
                        }
                    }
                    off += 64;
                }
            }
        }
    }

    /// Whether `line` is present in `set` with all of `sectors` valid (no state change).
    pub fn probe(&self, set: usize, line: u64, sectors: u8) -> bool {
        self.find(set, line).is_some_and(|i| self.meta[set * self.ways + i].valid & sectors == sectors)
    }

    /// Lines present in `set` (tags), for tests and occupancy reports.
    pub fn lines_in_set(&self, set: usize) -> usize {
        let w = self.ways;
        self.tags[set * w..set * w + w].iter().filter(|&&t| t != INVALID).count()
    }

    /// A load of `sectors` of `line`: a hit refreshes the line; missing sectors are filled; a miss
    /// allocates a slot (maybe evicting).
    #[inline]
    pub fn load(&mut self, set: usize, line: u64, sectors: u8) -> Outcome {
        self.prefetch(set); // tags and metadata misses overlap on the host
        let clock = self.tick();
        let base = set * self.ways;
        if let Some(i) = self.find(set, line) {
            let s = &mut self.meta[base + i];
            let missing = sectors & !s.valid;
            s.valid |= sectors;
            touch(s, self.policy, clock);
            return Outcome { tag_hit: true, missing, evicted: None, cleaned: None };
        }
        let (way, evicted) = self.victim(set);
        self.tags[base + way] = line;
        self.meta[base + way] = Meta { stamp: clock, store_stamp: 0, valid: sectors, dirty: 0, rrpv: 1 };
        Outcome { tag_hit: false, missing: sectors, evicted, cleaned: None }
    }

    /// A store writing `sectors` of `line`, of which `full` are written whole (the rest partially,
    /// under a byte mask). With `mark_dirty` (write-back) the sectors become dirty; `allocate`
    /// false: a missing line is not allocated (write-around), only reported.
    #[inline]
    pub fn store(&mut self, set: usize, line: u64, sectors: u8, full: u8, allocate: bool, mark_dirty: bool) -> Outcome {
        self.prefetch(set);
        let clock = self.tick();
        let w = self.ways;
        let base = set * w;
        let mut cleaned = None;
        if self.dirty_threshold > 0 && mark_dirty {
            let metas = &mut self.meta[base..base + w];
            let dirty = metas.iter().filter(|s| s.dirty != 0).count() as u32;
            if dirty >= self.dirty_threshold {
                let mut best: Option<usize> = None;
                for (i, s) in metas.iter().enumerate() {
                    if s.dirty != 0 && best.is_none_or(|b| s.store_stamp < metas[b].store_stamp) {
                        best = Some(i);
                    }
                }
                if let Some(i) = best {
                    cleaned = Some(WriteBack { line: self.tags[base + i], sectors: metas[i].dirty });
                    metas[i].dirty = 0;
                }
            }
        }
        if let Some(i) = self.find(set, line) {
            let s = &mut self.meta[base + i];
            s.valid |= full;
            if mark_dirty {
                s.dirty |= sectors;
                s.store_stamp = clock;
            }
            touch(s, self.policy, clock);
            return Outcome { tag_hit: true, missing: sectors & !s.valid, evicted: None, cleaned };
        }
        if !allocate {
            return Outcome { tag_hit: false, missing: sectors, evicted: None, cleaned };
        }
        let (way, evicted) = self.victim(set);
        let dirty = if mark_dirty { sectors } else { 0 };
        self.tags[base + way] = line;
        self.meta[base + way] = Meta { stamp: clock, store_stamp: clock, valid: full, dirty, rrpv: 1 };
        Outcome { tag_hit: false, missing: sectors & !full, evicted, cleaned }
    }

    /// Number of lines holding dirty sectors.
    pub fn dirty_lines(&self) -> usize {
        self.tags.iter().zip(&self.meta).filter(|(&t, m)| t != INVALID && m.dirty != 0).count()
    }

    /// Pick a victim way: an invalid slot first; LRU/FIFO: smallest stamp; RRIP: least recently
    /// used among RRPV 2, else age all and rescan. A dirty victim goes to the write-back FIFO
    /// (seed 004: handed to the controller, after which the scan finds it clean and takes it).
    #[inline]
    fn victim(&mut self, set: usize) -> (usize, Option<WriteBack>) {
        let w = self.ways;
        let base = set * w;
        if let Some(i) = self.tags[base..base + w].iter().position(|&t| t == INVALID) {
            return (i, None);
        }
        let slots = &mut self.meta[base..base + w];
        let way = match self.policy {
            Replacement::Lru | Replacement::Fifo => {
                let mut best = 0;
                for (i, s) in slots.iter().enumerate() {
                    if s.stamp < slots[best].stamp {
                        best = i;
                    }
                }
                best
            }
            Replacement::Rrip => loop {
                let mut best: Option<usize> = None;
                for (i, s) in slots.iter().enumerate() {
                    if s.rrpv >= 2 && best.is_none_or(|b| s.stamp < slots[b].stamp) {
                        best = Some(i);
                    }
                }
                if let Some(b) = best {
                    break b;
                }
                for s in slots.iter_mut() {
                    s.rrpv = (s.rrpv + 1).min(2);
                }
            },
        };
        let s = slots[way];
        let wb = if s.dirty != 0 { Some(WriteBack { line: self.tags[base + way], sectors: s.dirty }) } else { None };
        (way, wb)
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
        if bytes >= 2 * HUGE {
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

#[inline]
fn touch(s: &mut Meta, policy: Replacement, clock: u32) {
    match policy {
        Replacement::Lru => s.stamp = clock,
        Replacement::Fifo => {}
        Replacement::Rrip => {
            s.stamp = clock;
            s.rrpv = 0;
        }
    }
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
