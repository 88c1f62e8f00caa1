//! The index functions of `hash` (seed 000's L2 slice and set functions, XOR masks) evaluated
//! with byte tables of mask parities instead of one popcount per mask: the same values, checked
//! against `IndexFn::eval` on random addresses in the tests below. Speed only.

use crate::hash::{slice_l40s_from, slice_rtx4090_from, state_from, state_masks, IndexFn};

/// Parities of up to 32 masks: bit i of `eval(a)` = parity(a & masks[i]), as the XOR of one
/// 256-entry table per address byte from the lowest to the highest byte any mask touches (the
/// tables one after the other in one array).
#[derive(Debug, Clone)]
pub struct ParityTable {
    /// Lowest byte and number of bytes.
    lo: u32,
    n: u32,
    tables: Box<[u32]>,
}

impl ParityTable {
    /// At most 32 masks.
    pub fn new(masks: &[u64]) -> Self {
        assert!(masks.len() <= 32);
        let all = masks.iter().fold(0u64, |a, m| a | m);
        if all == 0 {
            return ParityTable { lo: 0, n: 0, tables: Box::new([]) };
        }
        let lo = all.trailing_zeros() / 8;
        let hi = (63 - all.leading_zeros()) / 8;
        let mut tables = Vec::with_capacity(256 * (hi - lo + 1) as usize);
        for byte in lo..=hi {
            let sh = 8 * byte;
            for v in 0..256u64 {
                let mut e = 0u32;
                for (i, m) in masks.iter().enumerate() {
                    e |= (((v << sh) & m).count_ones() % 2) << i;
                }
                tables.push(e);
            }
        }
        ParityTable { lo, n: hi - lo + 1, tables: tables.into_boxed_slice() }
    }

    #[inline(always)]
    pub fn eval(&self, a: u64) -> u32 {
        let mut x = 0;
        let b = a >> (8 * self.lo);
        for (i, t) in self.tables.chunks_exact(256).take(self.n as usize).enumerate() {
            x ^= t[((b >> (8 * i)) & 0xff) as usize];
        }
        x
    }
}

/// The masks of seed 000's `set_index` on `a` and on `q = a / 1152`, one pair per index bit.
const SET_A: [u64; 10] = [
    0x0bd654c80,
    0x0bd654c80,
    0x07aed8b80,
    0x03e313180,
    0x03e313300,
    0x0bd654e80,
    0x0bd654c00,
    0x044dcb880,
    0x000000200,
    0x13bc21180,
];
const SET_Q: [u64; 10] =
    [0x00e500, 0x010000, 0x027c00, 0x045500, 0x080300, 0x104200, 0x200b00, 0x401600, 0x804600, 0x006400];

/// A table-driven `IndexFn`.
#[derive(Debug, Clone)]
pub enum FastIndex {
    /// XOR masks (at most 32).
    Xor(ParityTable),
    /// `slice_of(a, 36)` or `slice_of(a, 48)`: the slice for every (8 parities, (a >> 15) % 3,
    /// ((a + 2^16) >> 17) % 9), indexed `(parities * 3 + m3) * 9 + g`.
    Slice { p: ParityTable, slice: Vec<u8>, wide: bool },
    /// `set_index(a)`.
    Set { a: ParityTable, q: ParityTable },
    /// Anything else: evaluated as it is.
    Plain(IndexFn),
}

impl FastIndex {
    pub fn new(f: &IndexFn) -> Self {
        match f {
            IndexFn::Xor(m) if m.len() <= 32 => FastIndex::Xor(ParityTable::new(m)),
            IndexFn::SliceRtx4090 => Self::slice(false),
            IndexFn::SliceL40s => Self::slice(true),
            IndexFn::SeedSet => FastIndex::Set { a: ParityTable::new(&SET_A), q: ParityTable::new(&SET_Q) },
            f => FastIndex::Plain(f.clone()),
        }
    }

    fn slice(wide: bool) -> Self {
        let mut slice = Vec::with_capacity(256 * 27);
        for bits in 0..256u32 {
            for m3 in 0..3 {
                for g in 0..9 {
                    let st = state_from(std::array::from_fn(|i| ((bits >> i) & 1) as i64), m3, g);
                    slice.push(if wide { slice_l40s_from(st) } else { slice_rtx4090_from(st) } as u8);
                }
            }
        }
        FastIndex::Slice { p: ParityTable::new(&state_masks(wide)), slice, wide }
    }

    #[inline]
    pub fn eval(&self, a: u64) -> u32 {
        match self {
            FastIndex::Xor(t) => t.eval(a),
            FastIndex::Slice { p, slice, .. } => {
                let m3 = ((a >> 15) % 3) as usize;
                let g = (((a + (1 << 16)) >> 17) % 9) as usize;
                slice[(p.eval(a) as usize * 3 + m3) * 9 + g] as u32
            }
            FastIndex::Set { a: ta, q: tq } => {
                let m9 = (a >> 15) % 9;
                let b9 = u32::from(m9 == 2 || m9 == 6) << 9;
                ta.eval(a) ^ tq.eval(a / 1152) ^ b9
            }
            FastIndex::Plain(f) => f.eval(a),
        }
    }
}

/// The seed's slice function and `set_index` together: one table lookup per address byte gives
/// the parities of both (the slice state's 8 masks and `set_index`'s masks on `a`).
#[derive(Debug, Clone)]
pub struct SliceAndSet {
    both: ParityTable,
    slice: Vec<u8>,
    q: ParityTable,
}

impl SliceAndSet {
    /// For a seed slice function and the seed set function, `None` otherwise.
    pub fn new(slice_fn: &FastIndex, set_fn: &FastIndex) -> Option<Self> {
        match (slice_fn, set_fn) {
            (FastIndex::Slice { slice, wide, .. }, FastIndex::Set { q, .. }) => {
                let masks: Vec<u64> = state_masks(*wide).iter().chain(SET_A.iter()).copied().collect();
                Some(SliceAndSet { both: ParityTable::new(&masks), slice: slice.clone(), q: q.clone() })
            }
            _ => None,
        }
    }

    /// (slice, set) of `a`: the values of the two functions.
    #[inline]
    pub fn eval(&self, a: u64) -> (u32, u32) {
        let x = self.both.eval(a);
        let m3 = ((a >> 15) % 3) as usize;
        let g = (((a + (1 << 16)) >> 17) % 9) as usize;
        let slice = self.slice[((x & 0xff) as usize * 3 + m3) * 9 + g] as u32;
        let m9 = (a >> 15) % 9;
        let b9 = u32::from(m9 == 2 || m9 == 6) << 9;
        (slice, (x >> 8) ^ self.q.eval(a / 1152) ^ b9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tlb::SplitMix;

    #[test]
    fn tables_match_the_seed_functions_and_masks() {
        let masks: Vec<u64> = vec![0x1f80 ^ 0x12000, 0x3c00, 0x4100, 0x8200, 0x10400, 0x8000_0000_0000_0001];
        let fns = [IndexFn::SliceRtx4090, IndexFn::SliceL40s, IndexFn::SeedSet, IndexFn::Xor(masks)];
        let mut rng = SplitMix(99);
        for f in &fns {
            let fast = FastIndex::new(f);
            for i in 0..200_000u64 {
                // small, 36-bit and 40-bit addresses, line-aligned and not
                let a = match i % 3 {
                    0 => rng.next_u64() & ((1 << 24) - 1),
                    1 => rng.next_u64() & ((1 << 36) - 1),
                    _ => rng.next_u64() & ((1 << 40) - 1),
                };
                assert_eq!(fast.eval(a), f.eval(a), "{f:?} at {a:#x}");
            }
        }
        for slice in [IndexFn::SliceRtx4090, IndexFn::SliceL40s] {
            let both = SliceAndSet::new(&FastIndex::new(&slice), &FastIndex::new(&IndexFn::SeedSet)).unwrap();
            for i in 0..200_000u64 {
                let a = rng.next_u64() & ((1 << (24 + i % 17)) - 1);
                assert_eq!(both.eval(a), (slice.eval(a), IndexFn::SeedSet.eval(a)), "{slice:?} at {a:#x}");
            }
        }
    }
}
