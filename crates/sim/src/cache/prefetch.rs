//! Host prefetches of `Cache` sets (speed only, no seed): the simulated L2 is far larger than the
//! host's caches, and a chase knows its next addresses, so it fetches their set blocks ahead.

use super::Cache;

impl Cache {
    /// Hint the host CPU to fetch `set`'s state (the simulated L2 is far larger than host caches;
    /// a chase knows its next addresses, so it can overlap those host misses).
    #[inline]
    pub fn prefetch(&self, set: usize) {
        self.prefetch_block(set);
    }

    /// Prefetch what a load of `set` reads (tags and state) and its wide tags.
    #[inline]
    pub(crate) fn prefetch_block(&self, set: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            if set >= self.sets {
                return;
            }
            let p = self.b.ptr(set * self.l.stride);
            // (up to 16 ways a load reads 80 to 128 bytes from a 64-byte boundary, or 80 from a 32-byte
            // one for 4 ways: two host lines)
            debug_assert!(self.l.g > 1 || (65..=128).contains(&self.l.load_bytes()));
            // SAFETY: prefetch is a hint that never faults; SSE is baseline on x86_64.
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p);
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64));
            }
            if self.prefetch_more {
                self.prefetch_rest(set);
            }
        }
    }

    /// The rest of `prefetch_block` beyond two host lines (over 16 ways), and the wide tags.
    #[cold]
    #[inline(never)]
    fn prefetch_rest(&self, set: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let p = self.b.ptr(set * self.l.stride);
            let mut off = 128;
            while off < self.l.load_bytes() {
                // SAFETY: prefetch is a hint that never faults; SSE is baseline on x86_64.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(off)) };
                off += 64;
            }
            if let Some(t) = &self.wide {
                // SAFETY: as above.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(t.ptr(set * self.l.w)) };
            }
        }
    }
}
