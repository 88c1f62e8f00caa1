//! The load paths of `Cache` for the presets' caches (speed only, no seed): 4-way LRU (the L1)
//! and 16-way RRIP (the L2), with the way count, so the whole block layout, and the policy
//! constant.
//!
//! A hit of a line with a 32-bit tag takes the short path: one range check of the line (`nbase`,
//! `nlim`), one tag compare, then only the valid-sector OR and the recency update. It does not
//! mark the set as touched: a set holding a line was filled since the last `clear`, and that
//! fill marked it. A miss of such a line goes to `miss` (out of line), which skips the tag
//! compare and the wide-tag cases, and marks the set only when it is not full (a full set was
//! marked by the fill of its first line). Every other load (other layouts or policies, a line
//! without a 32-bit tag, 64-bit tags) takes `Cache::load_slow`, the general path.

use super::set::{Layout, Set, DIRTY, INVALID32, RANK, RRPV, VALID};
use super::{Cache, Outcome, WriteBack};
use crate::hierarchy::Replacement;

/// Policy codes (const parameters).
pub(crate) const P_LRU: u8 = 0;
pub(crate) const P_RRIP: u8 = 2;

/// Load paths (`Cache::kind`): 4 ways with LRU, 16 with RRIP, any other.
pub(crate) const LRU4: u8 = 0;
pub(crate) const RRIP16: u8 = 1;
pub(crate) const OTHER: u8 = 2;

/// The load path of `w` ways with `policy`.
pub(crate) fn kind(w: usize, policy: Replacement) -> u8 {
    match (w, policy) {
        (4, Replacement::Lru) => LRU4,
        (16, Replacement::Rrip) => RRIP16,
        _ => OTHER,
    }
}

/// The policy of code `p`.
#[inline(always)]
const fn policy(p: u8) -> Replacement {
    match p {
        P_LRU => Replacement::Lru,
        _ => Replacement::Rrip,
    }
}

/// A load's `Outcome` in two registers (the slow paths return it, so that the hit path's result
/// need not go through memory): the evicted line, and the missing sectors | tag hit << 8 |
/// evicted << 9 | the evicted line's sectors << 16.
#[derive(Clone, Copy)]
pub(crate) struct Packed(u64, u32);

impl Packed {
    #[inline(always)]
    pub(crate) fn new(tag_hit: bool, missing: u8, evicted: Option<WriteBack>) -> Self {
        let (line, ev) = match evicted {
            Some(w) => (w.line, 1 << 9 | (w.sectors as u32) << 16),
            None => (0, 0),
        };
        Packed(line, missing as u32 | (tag_hit as u32) << 8 | ev)
    }

    /// No sector was missing.
    #[inline(always)]
    pub(crate) fn all_present(self) -> bool {
        self.1 as u8 == 0
    }

    #[inline(always)]
    pub(crate) fn outcome(self) -> Outcome {
        let Packed(line, x) = self;
        Outcome {
            tag_hit: x & 1 << 8 != 0,
            missing: x as u8,
            evicted: (x & 1 << 9 != 0).then_some(WriteBack { line, sectors: (x >> 16) as u8 }),
            cleaned: None,
        }
    }
}

impl Cache {
    /// `self.l` when it has `W` ways (4 or 16), as constants.
    #[inline(always)]
    fn lay_w<const W: usize>(&self) -> Layout {
        let l = Layout { w: W, g: 1, tw: W, stride: super::set::stride_words(W, 1), all: (1 << W) - 1 };
        debug_assert!(l.w == self.l.w && l.tw == self.l.tw && l.g == self.l.g && l.stride == self.l.stride);
        l
    }

    /// `load` with `W` ways and policy code `P`.
    ///
    /// # Safety
    /// `W` is `self.l.w` and `P` codes `self.policy` (as `kind` dispatches).
    /// With `INLINE_MISS` the miss path is inlined too (for loops where misses are the rule).
    #[inline(always)]
    pub(crate) unsafe fn load_fast<const W: usize, const P: u8, const INLINE_MISS: bool>(
        &mut self,
        set: usize,
        line: u64,
        sectors: u8,
    ) -> Packed {
        debug_assert!(policy(P) == self.policy);
        if line.wrapping_sub(self.nbase) >= self.nlim {
            return self.load_slow(set, line, sectors);
        }
        let l = self.lay_w::<W>();
        if set >= self.sets {
            // (it panics there: a tail call here, so that this path saves no registers)
            return self.load_slow(set, line, sectors);
        }
        let p = self.b.bytes_mut(set * l.stride);
        // SAFETY: the block of `set` < sets lies in `b`, borrowed mutably; `l` is its layout.
        let s = unsafe { Set::new(p, l) };
        let x = line as u32;
        let hit = s.tags_hit(x);
        if hit == 0 {
            // SAFETY: as above.
            return unsafe {
                if INLINE_MISS {
                    self.miss_body::<W, P>(p, set, x, sectors)
                } else {
                    self.miss::<W, P>(p, set, x, sectors)
                }
            };
        }
        debug_assert!(self.touched[set / 64] & 1 << (set % 64) != 0);
        // (`W` <= 32: a 32-bit count)
        let i = (hit as u32).trailing_zeros() as usize;
        let v = s.get(VALID, i);
        s.put(VALID, i, v | sectors);
        self.touch(s, i, policy(P));
        Packed(0, (sectors & !v) as u32 | 1 << 8)
    }

    /// A load that missed `set` (block at `p`), of a line with 32-bit tag `x`. (No calls but
    /// tail calls, so that it saves no registers.)
    ///
    /// # Safety
    /// As `load_fast`, and `p` is the block of `set` < `self.sets`.
    #[inline(never)]
    unsafe fn miss<const W: usize, const P: u8>(&mut self, p: *mut u8, set: usize, x: u32, sectors: u8) -> Packed {
        // SAFETY: as this function's.
        unsafe { self.miss_body::<W, P>(p, set, x, sectors) }
    }

    /// `miss`'s work, for inlining.
    ///
    /// # Safety
    /// As `miss`.
    #[inline(always)]
    unsafe fn miss_body<const W: usize, const P: u8>(&mut self, p: *mut u8, set: usize, x: u32, sectors: u8) -> Packed {
        // SAFETY: as this function's.
        let s = unsafe { Set::new(p, self.lay_w::<W>()) };
        debug_assert!(self.wide.is_none());
        #[cfg(debug_assertions)]
        {
            let empty = if s.tag(W - 1) == INVALID32 { s.tags_eq(INVALID32) } else { 0 };
            debug_assert!(self.scans_agree(set, self.nbase | x as u64, 0, empty));
        }
        // (the full ways are a prefix: the last way tells whether any is empty)
        let (way, evicted) = if s.tag(W - 1) == INVALID32 {
            self.mark(set);
            let way = s.tags_eq(INVALID32).trailing_zeros() as usize;
            s.touch(RANK, way);
            (way, None)
        } else {
            debug_assert!(self.touched[set / 64] & 1 << (set % 64) != 0);
            let way = match policy(P) {
                Replacement::Rrip => {
                    let Some(way) = s.touch_oldest_at(RANK, RRPV, 2) else {
                        // SAFETY: as this function's.
                        return unsafe { self.miss_aged::<W, P>(p, set, x, sectors) };
                    };
                    way
                }
                _ => {
                    // the least recent way has rank W - 1: every rank goes one up, its to 0
                    let way = s.bytes_eq(RANK, W as u8 - 1).trailing_zeros() as usize;
                    s.rotate_ranks(RANK, way);
                    way
                }
            };
            // (as `evicted`, with a 32-bit tag)
            let d = s.get(DIRTY, way);
            (way, (d != 0).then(|| WriteBack { line: self.nbase | s.tag(way) as u64, sectors: d }))
        };
        s.set_tag(way, x);
        // (as `fill`, the rank set above; the store rank is left as it is: it is read only for
        // dirty slots, and this one is clean)
        s.put(VALID, way, sectors);
        s.put(DIRTY, way, 0);
        s.put(RRPV, way, 1);
        Packed::new(false, sectors, evicted)
    }

    /// `miss` in a full RRIP set with no line at RRPV 2: age, then `miss` takes the least
    /// recent line at 2.
    ///
    /// # Safety
    /// As `miss`.
    #[cold]
    #[inline(never)]
    unsafe fn miss_aged<const W: usize, const P: u8>(&mut self, p: *mut u8, set: usize, x: u32, sectors: u8) -> Packed {
        // SAFETY: as this function's (also below).
        self.age(unsafe { Set::new(p, self.lay_w::<W>()) });
        unsafe { self.miss::<W, P>(p, set, x, sectors) }
    }
}
