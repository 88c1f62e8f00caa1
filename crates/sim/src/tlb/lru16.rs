//! An LRU TLB of up to 16 entries (seed 000 footnote 8: 16) held in SSE registers for a run of
//! lookups (speed only): `Tlb::take_lru16` copies it out, `Lru16::lookup_fill` looks up (and on a
//! miss fills) one page as `Tlb::lookup` then `Tlb::insert` would, `Tlb::put_lru16` copies it
//! back. No lookup waits for the stores of the one before, as it does in memory.

#![cfg(target_arch = "x86_64")]

use super::{Tlb, SMALL};
use std::arch::x86_64::*;

/// The state of an LRU TLB of up to 16 entries: page tags (`vpn as u32`) and recency ranks in
/// registers, pages and physical pages in two small arrays, the entries in use (slots 0..n) and
/// the capacity. `FULL`: 16 entries, all in use (the seed's TLB after its first 16 pages), which
/// the lookups then need not check.
#[derive(Clone, Copy)]
pub struct Lru16<const FULL: bool> {
    lo: [__m128i; 4],
    rank: __m128i,
    vpns: [u64; 16],
    ppns: [u64; 16],
    n: u32,
    capacity: u32,
    /// Bits 0..n (the slots in use), and capacity - 1 in every byte (the least recent rank).
    live: u32,
    last: __m128i,
}

impl Tlb {
    /// The TLB as an `Lru16` when it is an LRU one of 1 to 16 entries (with `FULL`: 16, all in
    /// use) and the host has SSSE3.
    pub fn take_lru16<const FULL: bool>(&self) -> Option<Lru16<FULL>> {
        if !(self.chunks == 1
            && self.lru
            && (1..=16).contains(&self.capacity)
            && (!FULL || self.n == 16)
            && std::is_x86_feature_detected!("ssse3"))
        {
            return None;
        }
        let s = &self.small;
        let lp = s.lo.as_ptr() as *const __m128i;
        // SAFETY: `lo` has 64 words and `rank` 64 bytes (the first 16 of each read); SSE2 is
        // baseline on x86_64.
        let (lo, rank) = unsafe {
            (
                [
                    _mm_loadu_si128(lp),
                    _mm_loadu_si128(lp.add(1)),
                    _mm_loadu_si128(lp.add(2)),
                    _mm_loadu_si128(lp.add(3)),
                ],
                _mm_loadu_si128(s.rank.as_ptr() as *const __m128i),
            )
        };
        // SAFETY: SSE2 is baseline on x86_64.
        let last = unsafe { _mm_set1_epi8(self.capacity as i8 - 1) };
        let (n, capacity) = (self.n as u32, self.capacity as u32);
        let mut r = Lru16 { lo, rank, vpns: [0; 16], ppns: [0; 16], n, capacity, live: (1 << n) - 1, last };
        r.vpns.copy_from_slice(&s.vpns[..16]);
        r.ppns.copy_from_slice(&s.ppns[..16]);
        Some(r)
    }

    /// Back from `take_lru16` (with the lookups since). The `hint` table is left as it was: its
    /// guesses are checked before use, so stale ones cost nothing but a scan.
    pub fn put_lru16<const FULL: bool>(&mut self, r: &Lru16<FULL>) {
        let s = &mut self.small;
        let lp = s.lo.as_mut_ptr() as *mut __m128i;
        // SAFETY: as in `take_lru16`.
        unsafe {
            for (c, l) in r.lo.iter().enumerate() {
                _mm_storeu_si128(lp.add(c), *l);
            }
            _mm_storeu_si128(s.rank.as_mut_ptr() as *mut __m128i, r.rank);
        }
        s.vpns[..16].copy_from_slice(&r.vpns);
        s.ppns[..16].copy_from_slice(&r.ppns);
        self.n = r.n as usize;
        self.live = (1u64 << r.n) - 1;
        self.missed = 0;
    }
}

impl<const FULL: bool> Lru16<FULL> {
    /// `Tlb::lookup(vpn)`, and on a miss `Tlb::insert(vpn, walk(vpn))`: (physical page, missed).
    ///
    /// # Safety
    /// SSSE3 (as `Tlb::take_lru16` checked); the caller is compiled for it, so this inlines.
    #[inline(always)]
    pub unsafe fn lookup_fill(&mut self, vpn: u64, walk: impl FnOnce(u64) -> u64) -> (u64, bool) {
        // SAFETY: SSSE3 (this function's contract).
        unsafe {
            let v = _mm_set1_epi32(vpn as i32);
            let q = |c: usize| _mm_cmpeq_epi32(self.lo[c], v);
            let eq = _mm_packs_epi16(_mm_packs_epi32(q(0), q(1)), _mm_packs_epi32(q(2), q(3)));
            // (slots n.. are not in use: their tags are stale)
            let mut m = _mm_movemask_epi8(eq) as u32;
            if !FULL {
                m &= self.live;
            }
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                if self.vpns[i % 16] == vpn {
                    // the rank of slot i, in every byte, goes to 0; those below it one up
                    self.rank = promote(self.rank, _mm_shuffle_epi8(self.rank, _mm_set1_epi8(i as i8)));
                    return (self.ppns[i % 16], false);
                }
                m &= m - 1;
            }
            let ppn = walk(vpn);
            let iota = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            let i = if !FULL && self.n < self.capacity {
                // a free slot (the next) takes the page, ranked n, then made the latest
                let (i, r) = (self.n as usize, _mm_set1_epi8(self.n as i8));
                let here = _mm_cmpeq_epi8(iota, r);
                self.rank = promote(_mm_or_si128(_mm_andnot_si128(here, self.rank), _mm_and_si128(here, r)), r);
                self.n += 1;
                self.live = self.live << 1 | 1;
                i
            } else {
                // the least recent slot (rank capacity - 1) takes the page and becomes the latest
                // (ranks are distinct: one slot, in lanes 0..capacity, has it)
                let last = if FULL { _mm_set1_epi8(15) } else { self.last };
                let i = (_mm_movemask_epi8(_mm_cmpeq_epi8(self.rank, last)) as u32).trailing_zeros() as usize;
                self.rank = promote(self.rank, last);
                i
            };
            let iv = _mm_set1_epi32(i as i32);
            for (c, l) in self.lo.iter_mut().enumerate() {
                let c = c as i32 * 4;
                let here = _mm_cmpeq_epi32(_mm_setr_epi32(c, c + 1, c + 2, c + 3), iv);
                *l = _mm_or_si128(_mm_andnot_si128(here, *l), _mm_and_si128(here, v));
            }
            self.vpns[i % 16] = vpn;
            self.ppns[i % 16] = ppn;
            (ppn, true)
        }
    }
}

/// Recency ranks after a use of the slot ranked `r` (in every byte): ranks below `r` go up by
/// one, `r` becomes 0 (`simd::promote16`; every rank is below 128).
#[inline(always)]
fn promote(x: __m128i, r: __m128i) -> __m128i {
    // SAFETY: SSE2 is baseline on x86_64.
    unsafe { _mm_andnot_si128(_mm_cmpeq_epi8(x, r), _mm_sub_epi8(x, _mm_cmpgt_epi8(r, x))) }
}

/// (`SMALL` holds the 16 slots.)
const _: () = assert!(SMALL >= 16);

#[cfg(test)]
mod tests {
    use crate::tlb::{SplitMix, Tlb};

    /// Runs through `Lru16` answer as `lookup` then `insert` do, and leave the TLB in the same
    /// state (the same answers to a long run of single lookups after), from empty, partly
    /// filled (after invalidations) and full, for 16, 8 and 1 entries; a FIFO TLB or one of more
    /// than 16 entries is not taken.
    #[test]
    fn register_runs_equal_single_lookups() {
        if !std::is_x86_feature_detected!("ssse3") {
            return;
        }
        assert!(
            Tlb::new(16, false).take_lru16::<false>().is_none() && Tlb::new(24, true).take_lru16::<false>().is_none()
        );
        assert!(Tlb::new(0, true).take_lru16::<false>().is_none(), "a TLB of no entries is not taken");
        let step = |t: &mut Tlb, v: u64| match t.lookup(v) {
            Some(p) => (p, false),
            None => {
                t.insert(v, v * 3 + 1);
                (v * 3 + 1, true)
            }
        };
        for cap in [16, 8, 1] {
            let mut rng = SplitMix(4 + cap as u64);
            let (mut a, mut b) = (Tlb::new(cap, true), Tlb::new(cap, true));
            for round in 0..300 {
                // pages from a few to many more than the entries; some share their low 32 bits
                let span = [3u64, 6, 17, 24, 64][round % 5];
                let len = [1, 5, 200][round % 3];
                let pages: Vec<u64> = (0..len).map(|_| rng.below(span) + (rng.below(3) << 32)).collect();
                let want: Vec<(u64, bool)> = pages.iter().map(|&v| step(&mut a, v)).collect();
                // the full kind where it applies (every other round), else the general one
                let got: Vec<(u64, bool)> = match b.take_lru16::<true>().filter(|_| round % 2 == 0) {
                    Some(mut r) => {
                        // SAFETY: SSSE3 checked above.
                        let g = pages.iter().map(|&v| unsafe { r.lookup_fill(v, |v| v * 3 + 1) }).collect();
                        b.put_lru16(&r);
                        g
                    }
                    None => {
                        let mut r = b.take_lru16::<false>().expect("an LRU TLB of 1 to 16 entries is taken");
                        // SAFETY: SSSE3 checked above.
                        let g = pages.iter().map(|&v| unsafe { r.lookup_fill(v, |v| v * 3 + 1) }).collect();
                        b.put_lru16(&r);
                        g
                    }
                };
                assert_eq!(want, got, "{cap} entries, round {round}");
                assert_eq!(a.len(), b.len(), "{cap} entries, round {round}");
                for _ in 0..(round % 4) {
                    let v = rng.below(span) + (rng.below(3) << 32);
                    a.invalidate(v);
                    b.invalidate(v);
                }
            }
            let probe: Vec<u64> = (0..5000).map(|_| rng.below(40) + (rng.below(3) << 32)).collect();
            for &v in &probe {
                assert_eq!(step(&mut a, v), step(&mut b, v), "{cap} entries");
            }
        }
    }
}
