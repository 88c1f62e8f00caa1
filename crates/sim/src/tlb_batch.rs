//! A full 16-entry LRU TLB (seed 000 footnote 8) held in SSE registers for a run of lookups
//! (speed only): `Tlb::take_lru16` copies it out, `Lru16::lookup_fill` looks up (and on a miss
//! fills) one page as `Tlb::lookup` then `Tlb::insert` would, `Tlb::put_lru16` copies it back.
//! No lookup waits for the stores of the one before, as it does in memory.

#![cfg(target_arch = "x86_64")]

use super::{Tlb, SMALL};
use std::arch::x86_64::*;

/// The state of a full 16-entry LRU TLB: page tags (`vpn as u32`) and recency ranks in
/// registers, pages and physical pages in two small arrays.
#[derive(Clone, Copy)]
pub struct Lru16 {
    lo: [__m128i; 4],
    rank: __m128i,
    vpns: [u64; 16],
    ppns: [u64; 16],
}

impl Tlb {
    /// The TLB as an `Lru16` when it is a full 16-entry LRU one and the host has SSSE3.
    pub fn take_lru16(&self) -> Option<Lru16> {
        if !(self.chunks == 1
            && self.lru
            && self.capacity == 16
            && self.n == 16
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
        let mut r = Lru16 { lo, rank, vpns: [0; 16], ppns: [0; 16] };
        r.vpns.copy_from_slice(&s.vpns[..16]);
        r.ppns.copy_from_slice(&s.ppns[..16]);
        Some(r)
    }

    /// Back from `take_lru16` (with the lookups since). The `hint` table is left as it was: its
    /// guesses are checked before use, so stale ones cost nothing but a scan.
    pub fn put_lru16(&mut self, r: &Lru16) {
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
        self.missed = 0;
    }
}

impl Lru16 {
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
            let mut m = _mm_movemask_epi8(eq) as u32;
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
            // the least recent slot (rank 15) takes the page and becomes the latest
            let i = (_mm_movemask_epi8(_mm_cmpeq_epi8(self.rank, _mm_set1_epi8(15))) as u32).trailing_zeros() as usize;
            self.rank = promote(self.rank, _mm_set1_epi8(15));
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
    /// state (the same answers to a long run of single lookups after), between invalidations;
    /// a TLB that is not full, not LRU or not 16 entries is not taken.
    #[test]
    fn register_runs_equal_single_lookups() {
        if !std::is_x86_feature_detected!("ssse3") {
            return;
        }
        assert!(Tlb::new(16, true).take_lru16().is_none(), "an empty TLB is not full");
        let mut fifo = Tlb::new(16, false);
        let mut big = Tlb::new(24, true);
        for v in 0..24 {
            fifo.insert(v, v);
            big.insert(v, v);
        }
        assert!(fifo.take_lru16().is_none() && big.take_lru16().is_none());
        let mut rng = SplitMix(4);
        let (mut a, mut b) = (Tlb::new(16, true), Tlb::new(16, true));
        let step = |t: &mut Tlb, v: u64| match t.lookup(v) {
            Some(p) => (p, false),
            None => {
                t.insert(v, v * 3 + 1);
                (v * 3 + 1, true)
            }
        };
        for round in 0..300 {
            // pages from a few to many more than 16, some far apart in their low 32 bits' twins
            let span = [6u64, 17, 24, 64][round % 4];
            let pages: Vec<u64> = (0..200).map(|_| rng.below(span) + (rng.below(3) << 32)).collect();
            let want: Vec<(u64, bool)> = pages.iter().map(|&v| step(&mut a, v)).collect();
            let got: Vec<(u64, bool)> = match b.take_lru16() {
                Some(mut r) => {
                    // SAFETY: SSSE3 checked above.
                    let g = pages.iter().map(|&v| unsafe { r.lookup_fill(v, |v| v * 3 + 1) }).collect();
                    b.put_lru16(&r);
                    g
                }
                None => pages.iter().map(|&v| step(&mut b, v)).collect(),
            };
            assert_eq!(want, got, "round {round}");
            if round % 9 == 8 {
                let v = rng.below(span);
                a.invalidate(v);
                b.invalidate(v);
            }
        }
        let probe: Vec<u64> = (0..5000).map(|_| rng.below(40) + (rng.below(3) << 32)).collect();
        for &v in &probe {
            assert_eq!(step(&mut a, v), step(&mut b, v));
        }
    }
}
