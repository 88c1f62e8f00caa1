//! The per-SM TLB (seed 000 footnote 8: fully associative, 16 entries, least recently used
//! replaced, shared by the SM's warps; a miss refills in 4.4 ns from a larger on-chip cache) and
//! the page table with its seeded physical page allocator (footnote 7: the driver picks physical
//! pages at allocation; one physical page may be mapped at two virtual addresses).

use std::collections::HashMap;

#[cfg(target_arch = "x86_64")]
mod lru16;
#[cfg(target_arch = "x86_64")]
pub use lru16::Lru16;
use std::hash::{BuildHasherDefault, Hasher};

/// A fast hasher for page numbers (multiplicative; keys are not adversarial).
#[derive(Default)]
pub struct PageHasher(u64);
impl Hasher for PageHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ *b as u64).wrapping_mul(0x100000001b3);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (n ^ (n >> 29)).wrapping_mul(0x9E3779B97F4A7C15);
    }
}
pub type PageMap<V> = HashMap<u64, V, BuildHasherDefault<PageHasher>>;

/// SplitMix64: the simulator's small deterministic generator (page allocation, noise, phases).
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);
impl SplitMix {
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in 0..n.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// Fully associative TLB of (virtual page, physical page) entries, replacing the least recently
/// used entry (LRU) or the oldest fill (FIFO). Up to `SMALL` entries it keeps them in slots with
/// a recency rank byte each (0: most recent) and compares 16 page numbers (their low 32 bits) or
/// ranks at a time; larger TLBs keep a hash map and a recency list (`Large`). Either way the
/// victim is the entry an LRU (FIFO) order names last: the same as a scan for the first entry
/// with the smallest use (fill) stamp, as the stamps of live entries all differ.
#[derive(Debug, Clone)]
pub struct Tlb {
    pub(crate) capacity: usize,
    pub(crate) lru: bool,
    /// Live entries: slots 0..n (bits 0..n of `live` for a small TLB).
    pub(crate) n: usize,
    pub(crate) live: u64,
    /// 16-slot chunks compared: 1 (up to 16 entries) or 4 (up to `SMALL`); 0 for a large TLB.
    pub(crate) chunks: usize,
    pub(crate) small: Small,
    large: Option<Box<Large>>,
    /// One more than the page of the last lookup that missed (wrapping; 0: none), while no
    /// insert followed (an insert of it needs no check for a present entry).
    pub(crate) missed: u64,
}

/// Capacity kept in `Small`.
pub(crate) const SMALL: usize = 64;
/// Rank of a free slot (above every live rank).
const FREE: u8 = 127;

#[derive(Debug, Clone)]
pub(crate) struct Small {
    /// `vpns[i] as u32`.
    pub(crate) lo: [u32; SMALL],
    /// Recency (LRU) or fill (FIFO) rank of each live slot, 0 the latest; `FREE` past n.
    pub(crate) rank: [u8; SMALL],
    /// Where a page number was last found or put, by its low 6 bits: a guess checked against
    /// `vpns` before the scan (speed only; entries are unique, so a right guess is the entry).
    hint: [u8; 64],
    pub(crate) vpns: [u64; SMALL],
    pub(crate) ppns: [u64; SMALL],
}

/// A TLB of more than `SMALL` entries: slots, a map from page to slot and a doubly linked list
/// of the slots from the latest (`head`) to the next victim (`tail`).
#[derive(Debug, Clone)]
struct Large {
    map: PageMap<u32>,
    vpns: Vec<u64>,
    ppns: Vec<u64>,
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    /// Slots freed by `invalidate`.
    free: Vec<u32>,
}
const NIL: u32 = u32::MAX;

impl Large {
    fn unlink(&mut self, i: u32) {
        let (p, n) = (self.prev[i as usize], self.next[i as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
    }
    fn push_front(&mut self, i: u32) {
        self.prev[i as usize] = NIL;
        self.next[i as usize] = self.head;
        if self.head == NIL {
            self.tail = i;
        } else {
            self.prev[self.head as usize] = i;
        }
        self.head = i;
    }
}

impl Tlb {
    pub fn new(capacity: usize, lru: bool) -> Self {
        let large = (capacity > SMALL).then(|| {
            Box::new(Large {
                map: PageMap::default(),
                vpns: Vec::with_capacity(capacity),
                ppns: Vec::with_capacity(capacity),
                prev: Vec::with_capacity(capacity),
                next: Vec::with_capacity(capacity),
                head: NIL,
                tail: NIL,
                free: Vec::new(),
            })
        });
        Tlb {
            capacity,
            lru,
            n: 0,
            live: 0,
            chunks: if capacity <= 16 {
                1
            } else if capacity <= SMALL {
                SMALL / 16
            } else {
                0
            },
            small: Small { lo: [0; SMALL], rank: [FREE; SMALL], hint: [0; 64], vpns: [0; SMALL], ppns: [0; SMALL] },
            large,
            missed: 0,
        }
    }
    pub fn clear(&mut self) {
        self.n = 0;
        self.live = 0;
        self.missed = 0;
        self.small.rank = [FREE; SMALL];
        if let Some(l) = &mut self.large {
            l.map.clear();
            l.vpns.clear();
            l.ppns.clear();
            l.prev.clear();
            l.next.clear();
            l.free.clear();
            (l.head, l.tail) = (NIL, NIL);
        }
    }

    /// Slot of `vpn` in a small TLB of `C` chunks.
    #[inline(always)]
    fn find_small<const C: usize>(&self, vpn: u64) -> Option<usize> {
        let s = &self.small;
        let h = s.hint[(vpn & 63) as usize] as usize;
        if h < self.n && s.vpns[h % SMALL] == vpn {
            return Some(h);
        }
        let mut m = crate::fast::simd::eq_words16(&s.lo, C, vpn as u32) & self.live;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            if s.vpns[i % SMALL] == vpn {
                return Some(i);
            }
            m &= m - 1;
        }
        None
    }

    /// Look up a virtual page; on a hit returns the physical page.
    #[inline]
    pub fn lookup(&mut self, vpn: u64) -> Option<u64> {
        // (the usual size first)
        if self.chunks == 1 {
            self.lookup_small::<1>(vpn)
        } else if self.chunks != 0 {
            self.lookup_small::<{ SMALL / 16 }>(vpn)
        } else {
            self.lookup_large(vpn)
        }
    }

    #[inline(always)]
    fn lookup_small<const C: usize>(&mut self, vpn: u64) -> Option<u64> {
        let Some(i) = self.find_small::<C>(vpn) else {
            self.missed = vpn.wrapping_add(1);
            return None;
        };
        let s = &mut self.small;
        s.hint[(vpn & 63) as usize] = i as u8;
        if self.lru {
            // (a no-op for the latest entry, rank 0)
            let r = s.rank[i % SMALL];
            crate::fast::simd::promote16_loaded(&mut s.rank, C, r);
        }
        Some(s.ppns[i % SMALL])
    }

    #[inline(never)]
    fn lookup_large(&mut self, vpn: u64) -> Option<u64> {
        let lru = self.lru;
        let l = self.large.as_deref_mut()?;
        match l.map.get(&vpn) {
            Some(&i) => {
                if lru && l.head != i {
                    l.unlink(i);
                    l.push_front(i);
                }
                Some(l.ppns[i as usize])
            }
            None => {
                self.missed = vpn.wrapping_add(1);
                None
            }
        }
    }

    /// Install a translation after a miss, replacing the LRU (or oldest) entry when full. (A page
    /// already present keeps its entry, which takes the new physical page and counts as used.)
    #[inline(always)]
    pub fn insert(&mut self, vpn: u64, ppn: u64) {
        if self.missed != vpn.wrapping_add(1) {
            return self.insert_unchecked(vpn, ppn);
        }
        self.missed = 0;
        self.insert_absent(vpn, ppn);
    }

    /// `insert` of a page not known to be absent.
    #[cold]
    #[inline(never)]
    fn insert_unchecked(&mut self, vpn: u64, ppn: u64) {
        if self.lookup(vpn).is_some() {
            self.missed = 0;
            return self.set_ppn(vpn, ppn);
        }
        self.missed = 0;
        self.insert_absent(vpn, ppn);
    }

    /// `insert` of a page with no entry.
    #[inline(always)]
    fn insert_absent(&mut self, vpn: u64, ppn: u64) {
        if self.chunks == 1 {
            self.insert_small::<1>(vpn, ppn)
        } else if self.chunks != 0 {
            self.insert_small::<{ SMALL / 16 }>(vpn, ppn)
        } else {
            self.insert_large(vpn, ppn)
        }
    }

    #[inline(always)]
    fn insert_small<const C: usize>(&mut self, vpn: u64, ppn: u64) {
        let n = self.n;
        let s = &mut self.small;
        // a free slot (ranked n, the last) or the last in recency (or fill) order, made the latest
        let (i, r) = if n < self.capacity {
            self.n = n + 1;
            self.live = self.live << 1 | 1;
            s.rank[n % SMALL] = n as u8;
            (n, n as u8)
        } else if n == 0 {
            return; // a TLB of no entries
        } else {
            let r = (n - 1) as u8;
            ((crate::fast::simd::eq_bytes16(&s.rank, C, r) & self.live).trailing_zeros() as usize, r)
        };
        crate::fast::simd::promote16(&mut s.rank, C, r);
        s.hint[(vpn & 63) as usize] = i as u8;
        s.vpns[i % SMALL] = vpn;
        crate::fast::simd::set_word16(&mut s.lo, i, vpn as u32);
        s.ppns[i % SMALL] = ppn;
    }

    fn set_ppn(&mut self, vpn: u64, ppn: u64) {
        match self.large.as_deref_mut() {
            Some(l) => {
                let i = l.map[&vpn];
                l.ppns[i as usize] = ppn;
            }
            None => {
                let i = self.find_small::<{ SMALL / 16 }>(vpn).expect("found just before");
                self.small.ppns[i] = ppn;
            }
        }
    }

    #[inline(never)]
    fn insert_large(&mut self, vpn: u64, ppn: u64) {
        let Some(l) = self.large.as_deref_mut() else { return };
        let i = if let Some(i) = l.free.pop() {
            l.vpns[i as usize] = vpn;
            l.ppns[i as usize] = ppn;
            i
        } else if l.vpns.len() < self.capacity {
            l.vpns.push(vpn);
            l.ppns.push(ppn);
            l.prev.push(NIL);
            l.next.push(NIL);
            (l.vpns.len() - 1) as u32
        } else {
            let i = l.tail;
            l.unlink(i);
            l.map.remove(&l.vpns[i as usize]);
            l.vpns[i as usize] = vpn;
            l.ppns[i as usize] = ppn;
            i
        };
        l.push_front(i);
        l.map.insert(vpn, i);
        self.n = l.map.len();
    }

    /// Drop entries for a virtual page (after `free`).
    pub fn invalidate(&mut self, vpn: u64) {
        if let Some(l) = self.large.as_deref_mut() {
            if let Some(i) = l.map.remove(&vpn) {
                l.unlink(i);
                l.free.push(i);
            }
            self.n = l.map.len();
            return;
        }
        let Some(i) = self.find_small::<{ SMALL / 16 }>(vpn) else { return };
        // the last slot moves into slot i; the ranks after i's close up
        let s = &mut self.small;
        let (last, r) = (self.n - 1, s.rank[i]);
        s.vpns[i] = s.vpns[last];
        s.lo[i] = s.lo[last];
        s.ppns[i] = s.ppns[last];
        s.rank[i] = s.rank[last];
        s.rank[last] = FREE;
        self.n = last;
        self.live >>= 1;
        for x in &mut s.rank[..last] {
            *x -= u8::from(*x > r);
        }
    }

    /// Live entries.
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Pages of the directly indexed part of the page table (8 MiB of entries at most).
const DENSE_WINDOW: u64 = 1 << 20;
const NO_PAGE: u64 = u64::MAX;

/// Virtual-to-physical mapping and the physical page allocator.
#[derive(Debug, Clone)]
pub struct PageTable {
    page_shift: u32,
    /// Pages `dense_base + i` for i < DENSE_WINDOW (where the target maps its buffers), directly
    /// indexed (`NO_PAGE`: unmapped); other pages in `map`.
    dense: Vec<u64>,
    /// (0 until the first `map` sets it: both parts are empty until then.)
    dense_base: u64,
    based: bool,
    map: PageMap<u64>,
    free: Vec<u64>,
    rng: SplitMix,
}

impl PageTable {
    /// `pages` physical pages of `1 << page_shift` bytes, handed out in a seeded random order.
    pub fn new(page_shift: u32, pages: u64, seed: u64) -> Self {
        PageTable {
            page_shift,
            dense: Vec::new(),
            dense_base: 0,
            based: false,
            map: PageMap::default(),
            free: (0..pages).collect(),
            rng: SplitMix(seed ^ 0x05EE_D0F9_A6E5),
        }
    }
    pub fn page_shift(&self) -> u32 {
        self.page_shift
    }
    pub fn free_pages(&self) -> u64 {
        self.free.len() as u64
    }
    /// Take `n` random free physical pages.
    pub fn take(&mut self, n: u64) -> Option<Vec<u64>> {
        if n > self.free.len() as u64 {
            return None;
        }
        Some(
            (0..n)
                .map(|_| {
                    let i = self.rng.below(self.free.len() as u64) as usize;
                    self.free.swap_remove(i)
                })
                .collect(),
        )
    }
    /// Take `n` physically contiguous pages starting at physical page `first`, if all are free.
    pub fn take_contiguous(&mut self, first: u64, n: u64) -> Option<Vec<u64>> {
        let want: Vec<u64> = (first..first + n).collect();
        let set: std::collections::HashSet<u64> = want.iter().copied().collect();
        if self.free.iter().filter(|p| set.contains(p)).count() as u64 != n {
            return None;
        }
        self.free.retain(|p| !set.contains(p));
        Some(want)
    }
    /// Return physical pages to the allocator.
    pub fn give_back(&mut self, pages: &[u64]) {
        self.free.extend_from_slice(pages);
    }
    /// Index of `vpn` in the dense window, if it lies there.
    #[inline]
    fn dense_index(&self, vpn: u64) -> Option<usize> {
        let i = vpn.wrapping_sub(self.dense_base);
        (i < DENSE_WINDOW).then_some(i as usize)
    }
    pub fn map(&mut self, vpn: u64, ppn: u64) {
        if !self.based {
            (self.dense_base, self.based) = (vpn, true);
        }
        match self.dense_index(vpn) {
            Some(i) => {
                if i >= self.dense.len() {
                    self.dense.resize(i + 1, NO_PAGE);
                }
                self.dense[i] = ppn;
            }
            None => {
                self.map.insert(vpn, ppn);
            }
        }
    }
    pub fn unmap(&mut self, vpn: u64) {
        match self.dense_index(vpn) {
            Some(i) => {
                if let Some(p) = self.dense.get_mut(i) {
                    *p = NO_PAGE;
                }
            }
            None => {
                self.map.remove(&vpn);
            }
        }
    }
    /// Physical page of a virtual page.
    #[inline]
    pub fn walk(&self, vpn: u64) -> Option<u64> {
        match self.dense_index(vpn) {
            Some(i) => self.dense.get(i).copied().filter(|&p| p != NO_PAGE),
            None => self.map.get(&vpn).copied(),
        }
    }
    /// Physical address of a virtual address.
    pub fn translate(&self, va: u64) -> Option<u64> {
        let mask = (1u64 << self.page_shift) - 1;
        self.walk(va >> self.page_shift).map(|p| (p << self.page_shift) | (va & mask))
    }
}

#[cfg(test)]
mod tests;
