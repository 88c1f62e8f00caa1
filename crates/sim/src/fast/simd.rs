//! Word-parallel scans for the cache and the TLB (speed only, no seed): masks of the 32-bit
//! words that equal a value (or have no bit of a mask), field maxima, and the TLB's 16-wide page
//! and rank compares, with SSE2 on x86_64 and a scalar loop elsewhere. The results are those of
//! the plain scans they replace (the cache's debug builds check its own scans against these).

/// Bits 0..n set.
#[inline(always)]
pub(crate) fn low(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Bit i set where `f(s[i])` holds, for i < n (`s` holds n rounded up to 4 words). On x86_64
/// four words are compared at once (SSE2); the result is the same as a scalar loop.
#[inline(always)]
pub(crate) fn lanes(s: &[u32], n: usize, op: LaneOp) -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        assert!(s.len() >= n.next_multiple_of(4));
        let mut m = 0u64;
        let mut i = 0;
        // SAFETY: i + 4 <= s.len() (checked above); SSE2 is baseline on x86_64.
        unsafe {
            let (and, x) = match op {
                LaneOp::Eq(x) => (-1i32, x as i32),
                LaneOp::AndZero(a) => (a as i32, 0),
            };
            let (va, vx) = (_mm_set1_epi32(and), _mm_set1_epi32(x));
            while i < n {
                let a = _mm_and_si128(_mm_loadu_si128(s.as_ptr().add(i) as *const __m128i), va);
                let c = _mm_cmpeq_epi32(a, vx);
                m |= (_mm_movemask_ps(_mm_castsi128_ps(c)) as u64) << i;
                i += 4;
            }
        }
        m & low(n)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut m = 0u64;
        for (i, &w) in s[..n].iter().enumerate() {
            let hit = match op {
                LaneOp::Eq(x) => w == x,
                LaneOp::AndZero(a) => w & a == 0,
            };
            m |= (hit as u64) << i;
        }
        m
    }
}

/// `(lanes(s, n, Eq(x)), lanes(s, n, Eq(y)))` in one pass.
#[inline(always)]
pub(crate) fn lanes2(s: &[u32], n: usize, x: u32, y: u32) -> (u64, u64) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        assert!(s.len() >= n.next_multiple_of(4));
        let (mut mx, mut my) = (0u64, 0u64);
        let mut i = 0;
        // SAFETY: i + 4 <= s.len() (checked above); SSE2 is baseline on x86_64.
        unsafe {
            let (vx, vy) = (_mm_set1_epi32(x as i32), _mm_set1_epi32(y as i32));
            while i < n {
                let a = _mm_loadu_si128(s.as_ptr().add(i) as *const __m128i);
                mx |= (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(a, vx))) as u64) << i;
                my |= (_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(a, vy))) as u64) << i;
                i += 4;
            }
        }
        (mx & low(n), my & low(n))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (lanes(s, n, LaneOp::Eq(x)), lanes(s, n, LaneOp::Eq(y)))
    }
}

/// The largest `(s[i] >> shift) & mask` for i < n (`s` holds n rounded up to 4 words; `mask`
/// below 2^15). On x86_64 four words at a time (SSE2).
#[inline(always)]
pub(crate) fn max_field(s: &[u32], n: usize, shift: u32, mask: u32) -> u32 {
    debug_assert!(mask < 1 << 15);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        assert!(s.len() >= n.next_multiple_of(4));
        // SAFETY: every load reads 4 words below s.len() (checked above); SSE2 is baseline.
        unsafe {
            let (vm, cnt) = (_mm_set1_epi32(mask as i32), _mm_cvtsi32_si128(shift as i32));
            let mut m = _mm_setzero_si128();
            let mut i = 0;
            while i < n {
                let v = _mm_and_si128(_mm_srl_epi32(_mm_loadu_si128(s.as_ptr().add(i) as *const __m128i), cnt), vm);
                // lanes at or past n count as 0
                let live = _mm_cmplt_epi32(
                    _mm_setr_epi32(i as i32, i as i32 + 1, i as i32 + 2, i as i32 + 3),
                    _mm_set1_epi32(n as i32),
                );
                // (fields below 2^15 in the low half of each word: a 16-bit signed max is theirs)
                m = _mm_max_epi16(m, _mm_and_si128(v, live));
                i += 4;
            }
            m = _mm_max_epi16(m, _mm_shuffle_epi32::<0b0100_1110>(m));
            m = _mm_max_epi16(m, _mm_shuffle_epi32::<0b1011_0001>(m));
            _mm_cvtsi128_si32(m) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        s[..n].iter().map(|&w| (w >> shift) & mask).max().unwrap_or(0)
    }
}

#[derive(Clone, Copy)]
pub(crate) enum LaneOp {
    /// word == x (the scalar `lanes2` and the tests)
    #[allow(dead_code)]
    Eq(u32),
    /// word & a == 0
    AndZero(u32),
}

/// Bit i set where `s[i] == x`, for i < 16 `chunks` (1 to 4): sixteen words at a time.
#[inline(always)]
pub(crate) fn eq_words16(s: &[u32; 64], chunks: usize, x: u32) -> u64 {
    debug_assert!((1..=4).contains(&chunks));
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut m = 0u64;
        // SAFETY: every load reads 4 words of the 64 (c < 4); SSE2 is baseline on x86_64.
        unsafe {
            let v = _mm_set1_epi32(x as i32);
            let p = s.as_ptr();
            let chunk = |c: usize| {
                let q = |j: usize| _mm_cmpeq_epi32(_mm_loadu_si128(p.add(16 * c + 4 * j) as *const __m128i), v);
                // (-1/0 lanes pack to -1/0 bytes)
                let b = _mm_packs_epi16(_mm_packs_epi32(q(0), q(1)), _mm_packs_epi32(q(2), q(3)));
                (_mm_movemask_epi8(b) as u32 as u64) << (16 * c)
            };
            m |= chunk(0);
            for c in 1..chunks.min(4) {
                m |= chunk(c);
            }
        }
        m
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (0..16 * chunks).fold(0, |m, i| m | u64::from(s[i] == x) << i)
    }
}

/// `s[i] = x` by a 16-byte read-modify-write of the four words holding `s[i]`: a later 16-byte
/// load of them (`eq_words16`) takes the value from the store buffer, which a 4-byte store
/// would not let it do (the load would wait for the store to reach the host cache).
#[inline(always)]
pub(crate) fn set_word16(s: &mut [u32; 64], i: usize, x: u32) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let (c, j) = (i / 4 % 16, (i % 4) as i32);
        // SAFETY: the chunk `c` (below 16) is 4 of the 64 words; SSE2 is baseline on x86_64.
        unsafe {
            let p = s.as_mut_ptr().add(4 * c) as *mut __m128i;
            let m = _mm_cmpeq_epi32(_mm_setr_epi32(0, 1, 2, 3), _mm_set1_epi32(j));
            let old = _mm_loadu_si128(p);
            _mm_storeu_si128(p, _mm_or_si128(_mm_andnot_si128(m, old), _mm_and_si128(m, _mm_set1_epi32(x as i32))));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        s[i % 64] = x;
    }
}

/// Sixteen copies of each byte value below 64 (a load instead of SSE2's four-instruction
/// broadcast).
#[cfg(target_arch = "x86_64")]
#[repr(align(16))]
struct Splat([[u8; 16]; 64]);
#[cfg(target_arch = "x86_64")]
static SPLAT: Splat = {
    let mut t = [[0u8; 16]; 64];
    let mut i = 0;
    while i < 64 {
        t[i] = [i as u8; 16];
        i += 1;
    }
    Splat(t)
};

/// Sixteen copies of `x` (below 64).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn splat(x: u8) -> std::arch::x86_64::__m128i {
    // SAFETY: a 16-byte aligned row of SPLAT (x % 64 < 64).
    unsafe { std::arch::x86_64::_mm_load_si128(SPLAT.0[x as usize % 64].as_ptr() as *const _) }
}

/// Bit i set where `s[i] == x` (below 64), for i < 16 `chunks` (1 to 4): sixteen bytes at a time.
#[inline(always)]
pub(crate) fn eq_bytes16(s: &[u8; 64], chunks: usize, x: u8) -> u64 {
    debug_assert!((1..=4).contains(&chunks) && x < 64);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        let mut m = 0u64;
        // SAFETY: every load reads 16 bytes of the 64 (c < 4); SSE2 is baseline on x86_64.
        unsafe {
            let v = splat(x);
            let chunk = |c: usize| {
                let b = _mm_cmpeq_epi8(_mm_loadu_si128(s.as_ptr().add(16 * c) as *const __m128i), v);
                (_mm_movemask_epi8(b) as u32 as u64) << (16 * c)
            };
            m |= chunk(0);
            for c in 1..chunks.min(4) {
                m |= chunk(c);
            }
        }
        m
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (0..16 * chunks).fold(0, |m, i| m | u64::from(s[i] == x) << i)
    }
}

/// Recency ranks moved for a use of the entry ranked `r`: for i < 16 `chunks` (1 to 4), `s[i]`
/// below `r` goes up by one and `s[i] == r` becomes 0 (`r` below 64, all values below 128).
/// `r` broadcast from a table (`splat`: shared with an `eq_bytes16` of the same value).
#[inline(always)]
pub(crate) fn promote16(s: &mut [u8; 64], chunks: usize, r: u8) {
    promote16_by::<false>(s, chunks, r)
}

/// `promote16` with `r` broadcast by arithmetic (when `r` was just loaded: no second load on the
/// way).
#[inline(always)]
pub(crate) fn promote16_loaded(s: &mut [u8; 64], chunks: usize, r: u8) {
    promote16_by::<true>(s, chunks, r)
}

#[inline(always)]
fn promote16_by<const ARITH: bool>(s: &mut [u8; 64], chunks: usize, r: u8) {
    debug_assert!((1..=4).contains(&chunks) && r < 64);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: every load and store touches 16 bytes of the 64 (c < 4); SSE2 is baseline.
        unsafe {
            let v = if ARITH { _mm_set1_epi8(r as i8) } else { splat(r) };
            let mut chunk = |c: usize| {
                let p = s.as_mut_ptr().add(16 * c) as *mut __m128i;
                let x = _mm_loadu_si128(p);
                // (signed compares: every value is below 128)
                let up = _mm_sub_epi8(x, _mm_cmpgt_epi8(v, x));
                _mm_storeu_si128(p, _mm_andnot_si128(_mm_cmpeq_epi8(x, v), up));
            };
            chunk(0);
            for c in 1..chunks.min(4) {
                chunk(c);
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        for x in &mut s[..16 * chunks] {
            *x = if *x == r { 0 } else { *x + u8::from(*x < r) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlb::SplitMix;

    #[test]
    fn scans_match_plain_loops() {
        let mut r = SplitMix(11);
        for case in 0..20_000u64 {
            let n = 1 + (case % 64) as usize;
            // few distinct values (ties and repeats), sometimes near u32::MAX (sign flip)
            let words: Vec<u32> = (0..n.next_multiple_of(4))
                .map(|_| {
                    let v = r.below(6) as u32;
                    if case % 3 == 0 {
                        u32::MAX - v
                    } else {
                        v << (case % 29)
                    }
                })
                .collect();
            let x = words[r.below(n as u64) as usize];
            let eq: u64 = (0..n).fold(0, |m, i| m | u64::from(words[i] == x) << i);
            let and0: u64 = (0..n).fold(0, |m, i| m | u64::from(words[i] & 0x30 == 0) << i);
            assert_eq!(lanes(&words, n, LaneOp::Eq(x)), eq);
            assert_eq!(lanes(&words, n, LaneOp::AndZero(0x30)), and0);
            assert_eq!(lanes2(&words, n, x, 0), (eq, (0..n).fold(0, |m, i| m | u64::from(words[i] == 0) << i)));
            let (shift, mask) = ((case % 20) as u32, 0x3fff);
            let max = words[..n].iter().map(|&w| (w >> shift) & mask).max().unwrap_or(0);
            assert_eq!(max_field(&words, n, shift, mask), max, "case {case}");
        }
    }

    #[test]
    fn sixteen_lane_scans_match_plain_loops() {
        let mut r = SplitMix(12);
        for case in 0..20_000u64 {
            let chunks = 1 + (case % 4) as usize;
            let words: [u32; 64] =
                std::array::from_fn(|_| if case % 2 == 0 { r.below(5) as u32 } else { r.next_u64() as u32 | 1 << 31 });
            let bytes: [u8; 64] = std::array::from_fn(|_| r.below(if case % 3 == 0 { 4 } else { 128 }) as u8);
            let (x, y) = (words[r.below(64) as usize], bytes[r.below(64) as usize] % 64);
            let n = 16 * chunks;
            assert_eq!(eq_words16(&words, chunks, x), (0..n).fold(0, |m, i| m | u64::from(words[i] == x) << i));
            assert_eq!(eq_bytes16(&bytes, chunks, y), (0..n).fold(0, |m, i| m | u64::from(bytes[i] == y) << i));
            let (mut p, mut p2) = (bytes, bytes);
            promote16(&mut p, chunks, y);
            promote16_loaded(&mut p2, chunks, y);
            assert_eq!(p, p2);
            for i in 0..64 {
                let want = if i >= n {
                    bytes[i]
                } else if bytes[i] == y {
                    0
                } else {
                    bytes[i] + u8::from(bytes[i] < y)
                };
                assert_eq!(p[i], want, "case {case} lane {i}");
            }
        }
    }
}
