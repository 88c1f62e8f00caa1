//! The block of one set of `cache::Cache` (speed only, no seed): its layout and the word-parallel
//! operations on it, 16 bytes at a time with SSE2 on x86_64 and scalar loops elsewhere.
//!
//! A set of `w` ways (1 to 64) is one block of 32-bit words starting on a 64-byte boundary (a
//! 32-byte one for up to 4 ways: `stride_words`):
//! - tags: `w` rounded up to 4 words (32-bit tags; empty ways and padding hold `INVALID32`);
//! - state: four byte arrays of `16 g` bytes each (`g` = `w` / 16 rounded up): recency ranks,
//!   valid sectors, dirty sectors, RRPVs;
//! - store ranks: `16 g` bytes.
//!
//! A load reads the tags and the state (two host cache lines for 16 ways), a store also the
//! store ranks. Recency ranks are a permutation of 0..w (0: most recently used, w - 1: least);
//! touching a way moves it to 0 and every way that was more recent one step down, so the ranks
//! order the ways as use stamps from a global clock would. Padding lanes hold `PAD`, which no
//! touch moves and no scan takes (scans mask their results to the `w` ways).

/// The empty marker of 32-bit tags.
pub(crate) const INVALID32: u32 = u32::MAX;
/// Rank of padding lanes (above every real rank, below 128 for signed byte compares).
const PAD: u8 = 0x7f;

/// Byte arrays of the state part, in this order (index for `Layout::arr`).
pub(crate) const RANK: usize = 0;
pub(crate) const VALID: usize = 1;
pub(crate) const DIRTY: usize = 2;
pub(crate) const RRPV: usize = 3;
/// The store ranks (after the state part).
pub(crate) const SRANK: usize = 4;

/// Where things are in a set's block.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    /// Ways.
    pub w: usize,
    /// Groups of 16 byte lanes per byte array.
    pub g: usize,
    /// Tag words (`w` rounded up to 4).
    pub tw: usize,
    /// Words per set (`stride_words`: every block starts on a 64-byte boundary, or a 32-byte
    /// one for up to 4 ways).
    pub stride: usize,
    /// Bits 0..w set.
    pub all: u64,
}

/// Words per block of `tw` tag words and `g` lane groups: a multiple of 16 (64-byte blocks on
/// 64-byte boundaries), except blocks of up to 4 ways: 24 words (96 bytes on 32-byte boundaries;
/// a load's 80 bytes still lie in two host lines, and the L1 of an SM takes a quarter less host
/// cache).
pub(crate) const fn stride_words(tw: usize, g: usize) -> usize {
    if tw == 4 && g == 1 {
        24
    } else {
        (tw + 20 * g).next_multiple_of(16)
    }
}

impl Layout {
    pub fn new(w: usize) -> Self {
        assert!((1..=64).contains(&w), "1 to 64 ways supported (got {w})");
        let g = w.div_ceil(16);
        let tw = w.next_multiple_of(4);
        let all = if w == 64 { u64::MAX } else { (1 << w) - 1 };
        Layout { w, g, tw, stride: stride_words(tw, g), all }
    }

    /// Byte offset of byte array `k` (`RANK` .. `SRANK`) in the block.
    #[inline(always)]
    pub fn arr(&self, k: usize) -> usize {
        4 * self.tw + 16 * self.g * k
    }

    /// Bytes a load reads (from the block's start).
    #[inline(always)]
    pub fn load_bytes(&self) -> usize {
        self.arr(SRANK)
    }

    /// The block of an empty set.
    pub fn empty_block(&self) -> Vec<u32> {
        let mut b = vec![0u32; self.stride];
        b[..self.tw].fill(INVALID32);
        let mut bytes: Vec<u8> = b.iter().flat_map(|x| x.to_ne_bytes()).collect();
        for k in [RANK, SRANK] {
            let a = &mut bytes[self.arr(k)..self.arr(k) + 16 * self.g];
            for (i, x) in a.iter_mut().enumerate() {
                *x = if i < self.w { i as u8 } else { PAD };
            }
        }
        for (i, c) in bytes.chunks_exact(4).enumerate() {
            b[i] = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
        }
        b
    }
}

/// `x` in every byte (`_mm_set1_epi8` of a variable takes four instructions in SSE2, this three).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn splat(x: u8) -> std::arch::x86_64::__m128i {
    use std::arch::x86_64::*;
    // SAFETY: SSE2 is baseline on x86_64.
    unsafe { _mm_shuffle_epi32::<0>(_mm_cvtsi32_si128((x as u32).wrapping_mul(0x0101_0101) as i32)) }
}

/// A raw handle on one set's block. `Cache` makes one only for a set index it checked, from a
/// pointer into its block array (mutable when it will write), so every offset below `stride`
/// words lies in the block; the methods stay below it by construction.
#[derive(Clone, Copy)]
pub(crate) struct Set {
    p: *mut u8,
    l: Layout,
}

impl Set {
    /// # Safety
    /// `p` points to a whole block of layout `l` on a 64-byte boundary (32-byte for up to 4
    /// ways; writable if any writing method is called), and the block is not accessed otherwise
    /// while the handle is used.
    #[inline(always)]
    pub unsafe fn new(p: *mut u8, l: Layout) -> Self {
        debug_assert!((p as usize).is_multiple_of(if l.tw == 4 { 32 } else { 64 }));
        Set { p, l }
    }

    /// Tag `i` (i < w).
    #[inline(always)]
    pub fn tag(self, i: usize) -> u32 {
        debug_assert!(i < self.l.w);
        // SAFETY: i < w <= tw words lie in the block (see `Set`).
        unsafe { (self.p as *const u32).add(i).read() }
    }
    #[inline(always)]
    pub fn set_tag(self, i: usize, t: u32) {
        debug_assert!(i < self.l.w);
        // SAFETY: as in `tag`.
        unsafe { (self.p as *mut u32).add(i).write(t) }
    }

    /// Byte `i` (i < w) of array `k`.
    #[inline(always)]
    pub fn get(self, k: usize, i: usize) -> u8 {
        debug_assert!(i < self.l.w && k <= SRANK);
        // SAFETY: arr(k) + i < arr(SRANK + 1) <= 4 stride bytes.
        unsafe { self.p.add(self.l.arr(k) + i).read() }
    }
    #[inline(always)]
    pub fn put(self, k: usize, i: usize, x: u8) {
        debug_assert!(i < self.l.w && k <= SRANK);
        // SAFETY: as in `get`.
        unsafe { self.p.add(self.l.arr(k) + i).write(x) }
    }

    /// Bit i set where tag i equals `x` (i < w).
    #[inline(always)]
    pub fn tags_eq(self, x: u32) -> u64 {
        self.tags_raw(x) & self.l.all
    }

    /// `tags_eq` of an `x` that is not `INVALID32` (so no padding word matches and no mask is
    /// needed).
    #[inline(always)]
    pub fn tags_hit(self, x: u32) -> u64 {
        debug_assert!(x != INVALID32);
        self.tags_raw(x)
    }

    /// Bit i set where tag word i (i < tw, padding included) equals `x`.
    #[inline(always)]
    fn tags_raw(self, x: u32) -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            let t = self.p as *const __m128i;
            let (tw, mut m, mut i) = (self.l.tw, 0u64, 0);
            // SAFETY: every load reads 4 words below tw, from a block on a 32-byte boundary (see
            // `new`); SSE2 is baseline on x86_64.
            unsafe {
                let vx = _mm_set1_epi32(x as i32);
                let c = |i: usize| _mm_cmpeq_epi32(_mm_load_si128(t.add(i / 4)), vx);
                while i + 16 <= tw {
                    let p = _mm_packs_epi16(_mm_packs_epi32(c(i), c(i + 4)), _mm_packs_epi32(c(i + 8), c(i + 12)));
                    m |= (_mm_movemask_epi8(p) as u64) << i;
                    i += 16;
                }
                while i < tw {
                    m |= (_mm_movemask_ps(_mm_castsi128_ps(c(i))) as u64) << i;
                    i += 4;
                }
            }
            m
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            // SAFETY: i < tw words lie in the block (see `Set`).
            let t = |i: usize| unsafe { (self.p as *const u32).add(i).read() };
            (0..self.l.tw).fold(0, |m, i| m | u64::from(t(i) == x) << i)
        }
    }

    /// Bit i set where byte i of array `k` equals `x` (i < w).
    #[inline(always)]
    pub fn bytes_eq(self, k: usize, x: u8) -> u64 {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            let mut m = 0u64;
            // SAFETY: 16 g bytes from arr(k) lie in the block; SSE2 is baseline on x86_64.
            unsafe {
                let a = self.p.add(self.l.arr(k)) as *const __m128i;
                let vx = splat(x);
                for c in 0..self.l.g {
                    m |= (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128(a.add(c)), vx)) as u64) << (16 * c);
                }
            }
            m & self.l.all
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            (0..self.l.w).fold(0, |m, i| m | u64::from(self.get(k, i) == x) << i)
        }
    }

    /// The number of ways whose byte in array `k` is not `x` (padding bytes must be `x`).
    #[inline(always)]
    pub fn count_ne(self, k: usize, x: u8) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: 16 g bytes from arr(k) lie in the block; SSE2 is baseline on x86_64.
            unsafe {
                let a = self.p.add(self.l.arr(k)) as *const __m128i;
                let (vx, one) = (_mm_set1_epi8(x as i8), _mm_set1_epi8(1));
                let mut n = _mm_setzero_si128();
                for c in 0..self.l.g {
                    let ne = _mm_andnot_si128(_mm_cmpeq_epi8(_mm_loadu_si128(a.add(c)), vx), one);
                    n = _mm_add_epi64(n, _mm_sad_epu8(ne, _mm_setzero_si128()));
                }
                (_mm_cvtsi128_si32(n) + _mm_cvtsi128_si32(_mm_unpackhi_epi64(n, n))) as u32
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            (0..self.l.w).filter(|&i| self.get(k, i) != x).count() as u32
        }
    }

    /// Hint the host to fetch the cache line of array `k`.
    #[inline(always)]
    pub fn prefetch(self, k: usize) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetch is a hint that never faults; SSE is baseline on x86_64.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(self.p.add(self.l.arr(k)) as *const i8);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = k;
    }

    /// Make way `i` the most recent in rank array `k` (`RANK` or `SRANK`): ranks below its rank
    /// go one up, its rank becomes 0.
    #[inline(always)]
    pub fn touch(self, k: usize, i: usize) {
        let r = self.get(k, i);
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: 16 g bytes from arr(k) lie in the block; SSE2 is baseline on x86_64.
            unsafe {
                let a = self.p.add(self.l.arr(k)) as *mut __m128i;
                let vr = splat(r);
                for c in 0..self.l.g {
                    let v = _mm_loadu_si128(a.add(c));
                    // (ranks < 128: signed compares; lt lanes are -1, so subtracting adds 1)
                    _mm_storeu_si128(a.add(c), _mm_sub_epi8(v, _mm_cmplt_epi8(v, vr)));
                }
            }
            // (way i is the only one at rank r: ranks are distinct, padding is above them)
            self.put(k, i, 0);
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            for j in 0..self.l.w {
                let x = self.get(k, j);
                self.put(
                    k,
                    j,
                    if x < r {
                        x + 1
                    } else if x == r {
                        0
                    } else {
                        x
                    },
                );
            }
        }
    }

    /// `touch(k, i)` where way `i` has the largest rank (w - 1): every rank goes one up, its to 0.
    #[inline(always)]
    pub fn rotate_ranks(self, k: usize, i: usize) {
        debug_assert!(self.get(k, i) as usize == self.l.w - 1);
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: 16 g bytes from arr(k) lie in the block; SSE2 is baseline on x86_64.
            unsafe {
                let a = self.p.add(self.l.arr(k)) as *mut __m128i;
                let iota = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
                for c in 0..self.l.g {
                    // 1 in the lanes of ways (padding lanes keep `PAD`)
                    let live = _mm_cmplt_epi8(iota, _mm_set1_epi8((self.l.w as isize - 16 * c as isize).min(16) as i8));
                    let v = _mm_loadu_si128(a.add(c));
                    _mm_storeu_si128(a.add(c), _mm_sub_epi8(v, live));
                }
            }
            self.put(k, i, 0);
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.touch(k, i);
    }

    /// `oldest::<false>(rk, key, x)` made the most recent in rank array `rk` (as `touch`), or
    /// `None` (and no change) when no way's byte in `key` is `x`.
    #[inline(always)]
    pub fn touch_oldest_at(self, rk: usize, key: usize, x: u8) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        if self.l.g == 1 {
            use std::arch::x86_64::*;
            // SAFETY: 16 bytes from arr(rk) and arr(key) lie in the block (g = 1); SSE2 is
            // baseline on x86_64.
            unsafe {
                let a = self.p.add(self.l.arr(rk)) as *mut __m128i;
                let r = _mm_loadu_si128(a);
                let e = _mm_cmpeq_epi8(_mm_loadu_si128(self.p.add(self.l.arr(key)) as *const __m128i), splat(x));
                let m = _mm_movemask_epi8(e) as u64 & self.l.all;
                if m == 0 {
                    return None;
                }
                // (padding lanes: masked by `all`; ranks of ways are distinct)
                let mut mx = _mm_and_si128(r, e);
                mx = _mm_max_epu8(mx, _mm_shuffle_epi32::<0b0100_1110>(mx));
                mx = _mm_max_epu8(mx, _mm_shuffle_epi32::<0b1011_0001>(mx));
                mx = _mm_max_epu8(mx, _mm_shufflehi_epi16::<0b1011_0001>(_mm_shufflelo_epi16::<0b1011_0001>(mx)));
                mx = _mm_max_epu8(mx, _mm_or_si128(_mm_slli_epi16::<8>(mx), _mm_srli_epi16::<8>(mx)));
                let i = (_mm_movemask_epi8(_mm_cmpeq_epi8(r, mx)) as u64 & m).trailing_zeros() as usize;
                // `touch(rk, i)` with its rank (the maximum) in every byte of `mx`
                _mm_storeu_si128(a, _mm_sub_epi8(r, _mm_cmplt_epi8(r, mx)));
                self.put(rk, i, 0);
                return Some(i);
            }
        }
        let i = (self.bytes_eq(key, x) != 0).then(|| self.oldest::<false>(rk, key, x))?;
        self.touch(rk, i);
        Some(i)
    }

    /// Age every line's RRPV by `k`, saturating at 2.
    #[inline(always)]
    pub fn age(self, k: u8) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: 16 g bytes from arr(RRPV) lie in the block; SSE2 is baseline on x86_64.
            unsafe {
                let a = self.p.add(self.l.arr(RRPV)) as *mut __m128i;
                let (vk, two) = (_mm_set1_epi8(k as i8), _mm_set1_epi8(2));
                let iota = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
                for c in 0..self.l.g {
                    let v = _mm_loadu_si128(a.add(c));
                    // (padding lanes keep their 0: no scan may find them at 2)
                    let live = _mm_cmplt_epi8(iota, _mm_set1_epi8((self.l.w as isize - 16 * c as isize) as i8));
                    let aged = _mm_and_si128(_mm_min_epu8(_mm_add_epi8(v, vk), two), live);
                    _mm_storeu_si128(a.add(c), _mm_or_si128(aged, _mm_andnot_si128(live, v)));
                }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            for i in 0..self.l.w {
                self.put(RRPV, i, (self.get(RRPV, i) + k).min(2));
            }
        }
    }

    /// The way with the largest rank in rank array `rk` (the least recent) among those whose
    /// byte in array `key` equals `x` (`NE`: differs from `x`); at least one must.
    #[inline(always)]
    pub fn oldest<const NE: bool>(self, rk: usize, key: usize, x: u8) -> usize {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::*;
            // SAFETY: 16 g bytes from arr(rk) and arr(key) lie in the block; SSE2 is baseline.
            unsafe {
                let r = self.p.add(self.l.arr(rk)) as *const __m128i;
                let kp = self.p.add(self.l.arr(key)) as *const __m128i;
                let vx = splat(x);
                let cand = |c: usize| {
                    let e = _mm_cmpeq_epi8(_mm_loadu_si128(kp.add(c)), vx);
                    if NE {
                        _mm_xor_si128(e, _mm_set1_epi8(-1))
                    } else {
                        e
                    }
                };
                let mut mx = _mm_setzero_si128();
                for c in 0..self.l.g {
                    mx = _mm_max_epu8(mx, _mm_and_si128(_mm_loadu_si128(r.add(c)), cand(c)));
                }
                // every byte the maximum
                mx = _mm_max_epu8(mx, _mm_shuffle_epi32::<0b0100_1110>(mx));
                mx = _mm_max_epu8(mx, _mm_shuffle_epi32::<0b1011_0001>(mx));
                mx = _mm_max_epu8(mx, _mm_shufflehi_epi16::<0b1011_0001>(_mm_shufflelo_epi16::<0b1011_0001>(mx)));
                mx = _mm_max_epu8(mx, _mm_or_si128(_mm_slli_epi16::<8>(mx), _mm_srli_epi16::<8>(mx)));
                let mut m = 0u64;
                for c in 0..self.l.g {
                    let e = _mm_and_si128(_mm_cmpeq_epi8(_mm_loadu_si128(r.add(c)), mx), cand(c));
                    m |= (_mm_movemask_epi8(e) as u64) << (16 * c);
                }
                // (ranks are distinct: one candidate has the maximum)
                (m & self.l.all).trailing_zeros() as usize
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            (0..self.l.w).filter(|&i| (self.get(key, i) == x) != NE).max_by_key(|&i| self.get(rk, i)).unwrap()
        }
    }
}
