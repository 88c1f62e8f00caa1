//! The replay's event queue (speed only, no seed): a monotone priority queue of `u128` keys (a
//! radix heap in base 16), popping in the same order as a `BinaryHeap<Reverse<u128>>` as long as
//! no key pushed is below the last one popped. A key is kept in the bucket of the highest
//! hexadecimal digit in which it differs from the last key popped and of its value there (the
//! buckets are then in key order); a pop takes the lowest non-empty bucket's smallest key and
//! spreads the rest of that bucket over lower digits, so that each key moves a few times at most
//! instead of sifting through a heap. `peek` finds the smallest key without moving anything and
//! remembers where it is for the next `pop`.

/// Digits of a key.
const DIGITS: usize = 32;
/// Buckets: 16 per digit (bucket 0: equal to the last key popped).
const BUCKETS: usize = DIGITS * 16;
const WORDS: usize = BUCKETS / 64;

/// A min-queue of `u128` keys whose pushes are never below the last key popped.
#[derive(Debug, Clone)]
pub struct MonoQueue {
    /// The last key popped (0 before the first pop).
    last: u128,
    len: usize,
    buckets: Vec<Vec<u128>>,
    /// Bit `b` set: bucket `b` is not empty.
    nonempty: [u64; WORDS],
    /// The smallest key, its bucket and its index there, when known (set by `peek`, cleared by
    /// `pop` and by a push of a smaller key).
    min: Option<(u128, usize, usize)>,
}

impl Default for MonoQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl MonoQueue {
    pub fn new() -> Self {
        MonoQueue { last: 0, len: 0, buckets: vec![Vec::new(); BUCKETS], nonempty: [0; WORDS], min: None }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    fn bucket_of(&self, k: u128) -> usize {
        let x = k ^ self.last;
        if x == 0 {
            return 0;
        }
        // the highest differing digit, and k's value there (above the last key's)
        let d = (127 - x.leading_zeros()) as usize / 4;
        d * 16 + ((k >> (4 * d)) as usize & 15)
    }

    /// Add `k` (not below the last key popped).
    #[inline]
    pub fn push(&mut self, k: u128) {
        debug_assert!(k >= self.last, "a key below the last one popped");
        let b = self.bucket_of(k);
        self.buckets[b].push(k);
        self.nonempty[b / 64] |= 1 << (b % 64);
        self.len += 1;
        if let Some((m, _, _)) = self.min {
            if k < m {
                self.min = None;
            }
        }
    }

    /// The lowest non-empty bucket.
    #[inline(always)]
    fn lowest(&self) -> Option<usize> {
        self.nonempty.iter().enumerate().find(|(_, &w)| w != 0).map(|(i, w)| i * 64 + w.trailing_zeros() as usize)
    }

    /// The smallest key, without removing it.
    #[inline]
    pub fn peek(&mut self) -> Option<u128> {
        if let Some((m, _, _)) = self.min {
            return Some(m);
        }
        let b = self.lowest()?;
        let v = &self.buckets[b];
        let (mut i, mut m) = (0, v[0]);
        for (j, &k) in v.iter().enumerate().skip(1) {
            if k < m {
                (i, m) = (j, k);
            }
        }
        self.min = Some((m, b, i));
        Some(m)
    }

    /// Remove and return the smallest key.
    #[inline]
    pub fn pop(&mut self) -> Option<u128> {
        let m = self.peek()?;
        let Some((_, b, i)) = self.min.take() else { unreachable!("set by peek") };
        self.len -= 1;
        let mut v = std::mem::take(&mut self.buckets[b]);
        v.swap_remove(i);
        self.last = m;
        // every key left in bucket b differs from m below bit b - 1: it moves to a lower bucket
        // (bucket 0 holds keys equal to `last`, which stay)
        if b > 0 {
            for &k in &v {
                let nb = self.bucket_of(k);
                debug_assert!(nb < b);
                self.buckets[nb].push(k);
                self.nonempty[nb / 64] |= 1 << (nb % 64);
            }
            v.clear();
        }
        if v.is_empty() {
            self.nonempty[b / 64] &= !(1 << (b % 64));
        }
        self.buckets[b] = v;
        Some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    /// Push and pop as the replay does (pushes at or above the last pop, a peek before some
    /// pops), checking every peek and pop against a binary heap.
    fn check(steps: &[(u8, u64, u64)], spread: u64) {
        let mut q = MonoQueue::new();
        let mut h = BinaryHeap::new();
        let mut last = 0u128;
        for &(what, dt, lo) in steps {
            match what % 4 {
                0 | 1 => {
                    // time at or after the last pop, ties likely (small spread)
                    let t = ((last >> 64) as u64).wrapping_add(dt % spread);
                    let mut k = (t as u128) << 64 | (lo % 64) as u128;
                    if k < last {
                        k = last;
                    }
                    q.push(k);
                    h.push(Reverse(k));
                }
                2 => assert_eq!(q.peek(), h.peek().map(|r| r.0)),
                _ => {
                    let (a, b) = (q.pop(), h.pop().map(|r| r.0));
                    assert_eq!(a, b);
                    if let Some(k) = a {
                        last = k;
                    }
                }
            }
            assert_eq!(q.len(), h.len());
        }
        while let Some(Reverse(k)) = h.pop() {
            assert_eq!(q.pop(), Some(k));
        }
        assert!(q.is_empty() && q.pop().is_none() && q.peek().is_none());
    }

    proptest! {
        #[test]
        fn pops_as_a_binary_heap(steps in proptest::collection::vec((0u8..4, 0u64..u64::MAX, 0u64..u64::MAX), 0..600),
                                 spread in prop_oneof![Just(1u64), Just(4), Just(1000), Just(u64::MAX)]) {
            check(&steps, spread);
        }
    }

    #[test]
    fn many_warps_in_time_order() {
        // a replay-like run: 6,144 keys, each pop pushes its successor a little later
        let mut q = MonoQueue::new();
        let mut h = BinaryHeap::new();
        let mut x = 12345u64;
        for w in 0..6144u128 {
            let k = ((w % 8) << 64) | w << 1;
            q.push(k);
            h.push(Reverse(k));
        }
        for _ in 0..200_000 {
            let p = q.peek();
            let k = q.pop().unwrap();
            assert_eq!(Some(k), p);
            assert_eq!(h.pop().unwrap().0, k);
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let nk = k + ((((x >> 40) % 4096) as u128) << 64) + (x >> 63) as u128;
            q.push(nk);
            h.push(Reverse(nk));
        }
    }

    #[test]
    fn equal_keys() {
        let mut q = MonoQueue::new();
        for _ in 0..3 {
            q.push(5);
        }
        q.push(7);
        assert_eq!(q.pop(), Some(5));
        q.push(5);
        assert_eq!([q.pop(), q.pop(), q.pop(), q.pop(), q.pop()], [Some(5), Some(5), Some(5), Some(7), None]);
    }
}
