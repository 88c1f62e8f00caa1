//! The per-SM TLB (seed 000 footnote 8: fully associative, 16 entries, least recently used
//! replaced, shared by the SM's warps; a miss refills in 4.4 ns from a larger on-chip cache) and
//! the page table with its seeded physical page allocator (footnote 7: the driver picks physical
//! pages at allocation; one physical page may be mapped at two virtual addresses).

use crate::simd::{first_min, lanes, low, LaneOp};
use std::collections::HashMap;
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

/// Fully associative TLB of (virtual page, physical page) entries (kept as parallel arrays in
/// fill order, so a lookup compares one array of page numbers: their low 32 bits four at a time,
/// then the whole number of a candidate).
#[derive(Debug, Clone)]
pub struct Tlb {
    vpns: Vec<u64>,
    /// `vpns[i] as u32`, padded to a multiple of 4 words.
    lo: Vec<u32>,
    ppns: Vec<u64>,
    /// Last use (LRU) or fill (FIFO), from `clock`, padded like `lo`; renumbered by rank (the
    /// order kept) when the 32-bit clock runs out.
    stamps: Vec<u32>,
    capacity: usize,
    lru: bool,
    clock: u32,
    /// Where a page number was last found or put, by its low 6 bits: a guess checked against
    /// `vpns` before the scan (speed only; entries are unique, so a right guess is the entry).
    hint: [u32; 64],
}

impl Tlb {
    pub fn new(capacity: usize, lru: bool) -> Self {
        Tlb {
            vpns: Vec::with_capacity(capacity),
            lo: vec![0; capacity.next_multiple_of(4)],
            ppns: Vec::with_capacity(capacity),
            stamps: vec![0; capacity.next_multiple_of(4)],
            capacity,
            lru,
            clock: 0,
            hint: [0; 64],
        }
    }
    pub fn clear(&mut self) {
        self.vpns.clear();
        self.ppns.clear();
    }

    #[inline(always)]
    fn tick(&mut self) -> u32 {
        if self.clock == u32::MAX {
            self.renumber();
        }
        self.clock += 1;
        self.clock
    }

    #[cold]
    fn renumber(&mut self) {
        let n = self.vpns.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| self.stamps[i]);
        for (rank, &i) in order.iter().enumerate() {
            self.stamps[i] = rank as u32 + 1;
        }
        self.clock = n as u32;
    }
    /// Look up a virtual page; on a hit returns the physical page.
    #[inline]
    pub fn lookup(&mut self, vpn: u64) -> Option<u64> {
        let clock = self.tick();
        let n = self.vpns.len();
        let h = self.hint[(vpn & 63) as usize] as usize;
        if h < n && self.vpns[h] == vpn {
            if self.lru {
                self.stamps[h] = clock;
            }
            return Some(self.ppns[h]);
        }
        // the first matching entry (entries are unique, so the only one), 64 entries at a time
        let mut base = 0;
        while base < n {
            let mut m = lanes(&self.lo[base..], (n - base).min(64), LaneOp::Eq(vpn as u32));
            while m != 0 {
                let i = base + m.trailing_zeros() as usize;
                if self.vpns[i] == vpn {
                    if self.lru {
                        self.stamps[i] = clock;
                    }
                    self.hint[(vpn & 63) as usize] = i as u32;
                    return Some(self.ppns[i]);
                }
                m &= m - 1;
            }
            base += 64;
        }
        None
    }
    /// Install a translation after a miss, replacing the LRU (or oldest) entry when full.
    #[inline]
    pub fn insert(&mut self, vpn: u64, ppn: u64) {
        let clock = self.tick();
        let n = self.vpns.len();
        if n < self.capacity {
            self.hint[(vpn & 63) as usize] = n as u32;
            self.lo[n] = vpn as u32;
            self.stamps[n] = clock;
            self.vpns.push(vpn);
            self.ppns.push(ppn);
            return;
        }
        // the first entry with the smallest stamp (stamps differ: the smallest), four at a time
        // up to 64 entries
        let best = if n <= 64 {
            first_min(&self.stamps, low(n))
        } else {
            (0..n).fold(0, |b, i| if self.stamps[i] < self.stamps[b] { i } else { b })
        };
        self.hint[(vpn & 63) as usize] = best as u32;
        self.vpns[best] = vpn;
        self.lo[best] = vpn as u32;
        self.ppns[best] = ppn;
        self.stamps[best] = clock;
    }
    /// Drop entries for a virtual page (after `free`).
    pub fn invalidate(&mut self, vpn: u64) {
        let mut i = 0;
        while i < self.vpns.len() {
            if self.vpns[i] == vpn {
                self.vpns.remove(i);
                self.lo.remove(i);
                self.lo.push(0);
                self.ppns.remove(i);
                self.stamps.remove(i);
                self.stamps.push(0);
            } else {
                i += 1;
            }
        }
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
    dense_base: Option<u64>,
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
            dense_base: None,
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
        let i = vpn.wrapping_sub(self.dense_base?);
        (i < DENSE_WINDOW).then_some(i as usize)
    }
    pub fn map(&mut self, vpn: u64, ppn: u64) {
        if self.dense_base.is_none() {
            self.dense_base = Some(vpn);
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
mod tests {
    use super::*;
    #[test]
    fn tlb_lru_cycles_thrash() {
        let mut t = Tlb::new(16, true);
        let mut misses = 0;
        for lap in 0..3 {
            for p in 0..17 {
                if t.lookup(p).is_none() {
                    t.insert(p, p);
                    if lap > 0 {
                        misses += 1;
                    }
                }
            }
        }
        assert_eq!(misses, 34);
    }

    #[test]
    fn stamps_renumbered_when_the_clock_runs_out_keep_the_order() {
        for lru in [true, false] {
            let (mut a, mut b) = (Tlb::new(16, lru), Tlb::new(16, lru));
            b.clock = u32::MAX - 1000; // renumbers after about 1000 uses
            let mut r = SplitMix(4);
            for _ in 0..20_000 {
                let vpn = r.below(24);
                let hit = a.lookup(vpn);
                assert_eq!(hit, b.lookup(vpn));
                if hit.is_none() {
                    a.insert(vpn, vpn + 7);
                    b.insert(vpn, vpn + 7);
                }
            }
            assert!(b.clock < 30_000);
        }
    }

    #[test]
    fn a_large_tlb_finds_every_entry() {
        // more than 64 entries (the lookup compares 64 at a time), page numbers equal in their
        // low 32 bits
        let mut t = Tlb::new(300, true);
        let vpn = |i: u64| ((i % 3) << 32) | (i / 3);
        for i in 0..300 {
            assert_eq!(t.lookup(vpn(i)), None);
            t.insert(vpn(i), i + 1);
        }
        for i in (0..300).rev() {
            assert_eq!(t.lookup(vpn(i)), Some(i + 1), "entry {i}");
        }
        t.invalidate(vpn(70));
        assert_eq!(t.lookup(vpn(70)), None);
        assert_eq!(t.lookup(vpn(299)), Some(300));
    }
}
