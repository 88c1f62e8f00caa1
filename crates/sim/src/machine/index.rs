//! The index functions of `hash` (seed 000's L2 slice and set functions, XOR masks, residues) evaluated
//! with tables of mask parities instead of one popcount per mask: the same values, checked
//! against `IndexFn::eval` on random addresses in the tests below. Speed only.

use crate::hash::{slice_l40s_from, slice_rtx4090_from, state_from, state_masks, IndexFn};

/// Widest address chunk one table covers (1024 entries of 4 bytes: 4 KiB a table, so the
/// tables of a machine's index functions stay in the host's L1/L2 caches).
const MAX_W: u32 = 10;
/// Most residue terms a table covers (2^(terms + 1) entries: 256 KiB at 15).
const MAX_RESIDUE_TERMS: usize = 15;

/// Parities of up to 32 masks: bit i of `eval(a)` = parity(a & masks[i]), as the XOR of one
/// table per chunk of `MAX_W` address bits, from the lowest bit any mask touches (`lo`) to the
/// highest. The first three chunks
/// are always looked up (a missing one has the index mask 0 and reads a 0), any further ones in
/// a loop.
#[derive(Debug, Clone)]
pub struct ParityTable {
    /// Lowest bit any mask touches.
    lo: u32,
    /// Index masks of the first three chunks: `(1 << MAX_W) - 1`, or 0 past the last chunk.
    m: [u64; 3],
    t: Box<[[u32; 1 << MAX_W]; 3]>,
    /// Chunks past the third.
    more: Box<[[u32; 1 << MAX_W]]>,
}

impl ParityTable {
    /// At most 32 masks.
    pub fn new(masks: &[u64]) -> Self {
        assert!(masks.len() <= 32);
        let all = masks.iter().fold(0u64, |a, m| a | m);
        let lo = all.trailing_zeros() % 64;
        let span = (64 - all.leading_zeros()).saturating_sub(lo);
        let k = span.div_ceil(MAX_W);
        let table = |c: u32| -> [u32; 1 << MAX_W] {
            // (a chunk starts at or below bit 63: lo + 10 c < lo + span)
            let sh = lo + c * MAX_W;
            std::array::from_fn(|v| {
                let v = v as u64;
                masks.iter().enumerate().fold(0u32, |e, (i, m)| e | ((((v << sh) & m).count_ones() & 1) << i))
            })
        };
        let first = |c: u32| if c < k { table(c) } else { [0; 1 << MAX_W] };
        ParityTable {
            lo,
            m: std::array::from_fn(|c| if (c as u32) < k { (1 << MAX_W) - 1 } else { 0 }),
            t: Box::new([first(0), first(1), first(2)]),
            more: (3..k).map(table).collect(),
        }
    }

    /// Lowest address bit any mask touches (bits below it do not change `eval`).
    pub fn lowest_bit(&self) -> u32 {
        self.lo
    }

    #[inline(always)]
    pub fn eval(&self, a: u64) -> u32 {
        let (b0, t) = (a >> self.lo, &*self.t);
        let (b1, b2) = (b0 >> MAX_W, b0 >> (2 * MAX_W));
        // (`& m` keeps each index below 1024; `% 1024` only shows the compiler so)
        let ix = |b: u64, m: u64| (b & m) as usize % (1 << MAX_W);
        let x = t[0][ix(b0, self.m[0])] ^ t[1][ix(b1, self.m[1])] ^ t[2][ix(b2, self.m[2])];
        if self.more.is_empty() {
            x
        } else {
            x ^ self.eval_more(b2 >> MAX_W)
        }
    }

    /// The chunks past the third, of `a >> (lo + 3 MAX_W)`.
    #[inline(never)]
    fn eval_more(&self, mut b: u64) -> u32 {
        let mut x = 0;
        for t in &*self.more {
            x ^= t[(b & self.m[0]) as usize % (1 << MAX_W)];
            b >>= MAX_W;
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

/// What the slice and set functions take from `y = a >> 15` besides mask parities, by `y % 36`:
/// `m3 * 9 + g` (bits 0..5, `m3 = y % 3`, `g = ((a + 2^16) >> 17) % 9`) and `set_index`'s extra
/// bit 9 (`y % 9` is 2 or 6) in place. (`(a + 2^16) >> 17 = (y >> 2) + (y >> 1 & 1)`, and
/// `(y >> 2) % 9`, `y % 9`, `y & 3` are all functions of `y % 36`.)
const MOD36: [u16; 36] = {
    let mut t = [0u16; 36];
    let mut y = 0;
    while y < 36 {
        let (m9, g) = (y % 9, ((y >> 2) + (y >> 1 & 1)) % 9);
        let b9 = if m9 == 2 || m9 == 6 { 1 << 9 } else { 0 };
        t[y as usize] = ((m9 % 3) * 9 + g) as u16 | b9;
        y += 1;
    }
    t
};

/// `MOD36`'s entry for `a`.
#[inline(always)]
fn mod9(a: u64) -> u32 {
    MOD36[((a >> 15) % 36) as usize] as u32
}

/// `(a >> 15) % 36` given `q = a / 1152`, without a division: `(a >> 15) / 36 = q >> 10` (both
/// are `a / 2^15 / 36` floored, as `q / 1024` is `a / 1152 / 1024`).
#[inline(always)]
fn y36(a: u64, q: u64) -> usize {
    ((a >> 15) - 36 * (q >> 10)) as usize
}

/// `MOD36` for `SliceAndSet`, by `y36` (padded to 64): `m3 * 9 + g` in bits 0..5, the extra
/// `set_index` bit at bit 22 (bit 9 of the set as `SliceAndSet` keeps it).
const MOD36_WIDE: [u32; 64] = {
    let mut t = [0u32; 64];
    let mut i = 0;
    while i < 36 {
        t[i] = (MOD36[i] & 31) as u32 | ((MOD36[i] & (1 << 9)) as u32) << 13;
        i += 1;
    }
    t
};

/// The slice for every (8 state parities `p`, m3, g), at `p << 5 | (m3 * 9 + g)`.
fn slice_table(wide: bool) -> Vec<u8> {
    let mut slice = vec![0; 256 << 5];
    for bits in 0..256u32 {
        for m3 in 0..3 {
            for g in 0..9 {
                let st = state_from(std::array::from_fn(|i| ((bits >> i) & 1) as i64), m3, g);
                let s = if wide { slice_l40s_from(st) } else { slice_rtx4090_from(st) };
                slice[(bits << 5 | (m3 * 9 + g) as u32) as usize] = s as u8;
            }
        }
    }
    slice
}

/// A table-driven `IndexFn`.
#[derive(Debug, Clone)]
#[repr(u8)] // (a tag byte: cheaper to test than a niche)
pub enum FastIndex {
    /// XOR masks (at most 32).
    Xor(ParityTable),
    /// `slice_of(a, 36)` or `slice_of(a, 48)`: the slice for every (8 parities, (a >> 15) % 3,
    /// ((a + 2^16) >> 17) % 9), indexed `parities << 5 | (m3 * 9 + g)`.
    Slice { p: ParityTable, slice: Vec<u8>, wide: bool },
    /// `set_index(a)`.
    Set { a: ParityTable, q: ParityTable },
    /// A residue with one share for every frame (hash_residue.rs): the slice for every vector of
    /// term parities (and the partition parity above them).
    Residue { p: ParityTable, slice: Vec<u32> },
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
            IndexFn::Residue(r) if r.frame.is_none() && r.terms.len() <= MAX_RESIDUE_TERMS => Self::residue(r),
            f => FastIndex::Plain(f.clone()),
        }
    }

    /// The residue's table: entry v (bit t: term t's offset parity, bit n: the partition
    /// mask's) holds the slice the function gives an offset with those parities.
    fn residue(r: &crate::hash_residue::Residue) -> Self {
        let mut masks: Vec<u64> = r.terms.iter().map(|t| t.mask.0).collect();
        let n = masks.len();
        masks.push(r.partition_mask.0);
        let s = &r.share;
        let slice = (0..1u64 << (n + 1))
            .map(|v| {
                let y = (0..n)
                    .filter(|&t| (v ^ s.flips.0) >> t & 1 == 1)
                    .fold(s.constant, |acc, t| (acc + r.terms[t].weight) % r.modulus);
                let p = (v >> n & 1) as u8 ^ s.partition;
                (p as u64 * r.modulus + y) as u32
            })
            .collect();
        FastIndex::Residue { p: ParityTable::new(&masks), slice }
    }

    fn slice(wide: bool) -> Self {
        FastIndex::Slice { p: ParityTable::new(&state_masks(wide)), slice: slice_table(wide), wide }
    }

    #[inline]
    pub fn eval(&self, a: u64) -> u32 {
        match self {
            FastIndex::Xor(t) => t.eval(a),
            _ => self.eval_other(a),
        }
    }

    /// `eval` of the other kinds.
    #[inline(never)]
    fn eval_other(&self, a: u64) -> u32 {
        match self {
            FastIndex::Xor(t) => t.eval(a),
            FastIndex::Slice { p, slice, .. } => slice[(p.eval(a) << 5 | (mod9(a) & 31)) as usize] as u32,
            FastIndex::Set { a: ta, q: tq } => {
                let q = a / 1152;
                ta.eval(a) ^ tq.eval(q) ^ (MOD36[y36(a, q)] & (1 << 9)) as u32
            }
            FastIndex::Residue { p, slice } => slice[p.eval(a) as usize],
            FastIndex::Plain(f) => f.eval(a),
        }
    }
}

/// The seed's slice function and `set_index` together: one table lookup per 10-bit chunk of
/// address bits 7..36 gives the parities of both (the slice state's 8 masks and `set_index`'s
/// masks on `a`), two per byte of `q = a / 1152` the rest of `set_index`.
#[derive(Debug, Clone)]
pub struct SliceAndSet {
    /// By chunk of `a >> 7`: the state parities at bits 5..13, `set_index`'s on `a` at 13..23.
    a: Box<[[u32; 1024]; 3]>,
    /// `set_index`'s parities on bytes 1 and 2 of `q` (its masks touch bits 8..23 only).
    q: Box<[[u16; 256]; 2]>,
    /// `slice_table`.
    slice: Box<[u8; 256 << 5]>,
}

impl SliceAndSet {
    /// For a seed slice function and the seed set function, `None` otherwise.
    pub fn new(slice_fn: &FastIndex, set_fn: &FastIndex) -> Option<Self> {
        let (FastIndex::Slice { wide, .. }, FastIndex::Set { .. }) = (slice_fn, set_fn) else { return None };
        let state = state_masks(*wide);
        // (the chunks cover bits 7..37 of `a`, the q bytes bits 8..24 of `q`)
        assert!(state.iter().chain(&SET_A).all(|m| m & !(((1 << 30) - 1) << 7) == 0));
        assert!(SET_Q.iter().all(|m| m & !0xffff00 == 0));
        let par = |v: u64, m: u64| (v & m).count_ones() & 1;
        let a = std::array::from_fn(|c| {
            std::array::from_fn(|v| {
                let v = (v as u64) << (7 + 10 * c);
                let p = (0..8).fold(0, |e, i| e | par(v, state[i]) << (5 + i));
                (0..10).fold(p, |e, i| e | par(v, SET_A[i]) << (13 + i))
            })
        });
        let q = std::array::from_fn(|c| {
            std::array::from_fn(|v| (0..10).fold(0, |e, i| e | (par((v as u64) << (8 + 8 * c), SET_Q[i]) as u16) << i))
        });
        let slice = slice_table(*wide).into_boxed_slice().try_into().expect("256 << 5 entries");
        Some(SliceAndSet { a: Box::new(a), q: Box::new(q), slice })
    }

    /// (slice, set) of `a`: the values of the two functions.
    #[inline]
    pub fn eval(&self, a: u64) -> (u32, u32) {
        self.finish(a, self.parities(a))
    }

    /// The mask parities `eval` takes from `a` (bits 7..37): XOR-linear in `a`, so those of
    /// `a ^ b` are those of `a` XOR those of `b` (`presplit` computes them by halves).
    #[inline(always)]
    pub fn parities(&self, a: u64) -> u32 {
        let b = a >> 7;
        self.a[0][(b & 1023) as usize] ^ self.a[1][(b >> 10 & 1023) as usize] ^ self.a[2][(b >> 20 & 1023) as usize]
    }

    /// `eval(a)` given `x = parities(a)`.
    #[inline(always)]
    pub fn finish(&self, a: u64, x: u32) -> (u32, u32) {
        let q = a / 1152;
        // (x has nothing in bits 0..5, t nothing in 5..13 or past 22: one XOR puts m3 * 9 + g
        // under the slice parities and the extra bit into the set)
        let y = x ^ MOD36_WIDE[y36(a, q) % 64];
        let slice = self.slice[(y & 0x1fff) as usize] as u32;
        let qx = self.q[0][(q >> 8 & 0xff) as usize] ^ self.q[1][(q >> 16 & 0xff) as usize];
        (slice, (y >> 13) ^ qx as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::xor_index;
    use crate::tlb::SplitMix;

    /// Small, 36-bit, 40-bit, 48-bit and any addresses below 2^63 (`a + 2^16` of the seed's
    /// `_state` must not overflow), line-aligned and not.
    fn address(rng: &mut SplitMix, i: u64) -> u64 {
        let bits = [24, 36, 40, 48, 63, 13 + i % 50][(i % 6) as usize];
        let a = rng.next_u64() & ((1 << bits) - 1);
        if i.is_multiple_of(7) {
            a & !127
        } else {
            a
        }
    }

    #[test]
    fn tables_match_the_seed_functions_and_masks() {
        let masks: Vec<u64> = vec![0x1f80 ^ 0x12000, 0x3c00, 0x4100, 0x8200, 0x10400, 0x8000_0000_0000_0001];
        let l1: Vec<u64> = crate::presets::rtx4090_l1_masks().iter().map(|m| m.0).collect();
        let share = crate::hash_h200::parse_share("0x3e4:38:1").unwrap();
        let h200 = IndexFn::Residue(Box::new(crate::hash_h200::h200_function(share)));
        let fns =
            [IndexFn::SliceRtx4090, IndexFn::SliceL40s, IndexFn::SeedSet, IndexFn::Xor(masks), IndexFn::Xor(l1), h200];
        let mut rng = SplitMix(99);
        for f in &fns {
            let fast = FastIndex::new(f);
            for i in 0..300_000u64 {
                let a = address(&mut rng, i);
                assert_eq!(fast.eval(a), f.eval(a), "{f:?} at {a:#x}");
            }
        }
        let set = FastIndex::new(&IndexFn::SeedSet);
        for slice in [IndexFn::SliceRtx4090, IndexFn::SliceL40s] {
            let both = SliceAndSet::new(&FastIndex::new(&slice), &set).unwrap();
            for i in 0..300_000u64 {
                let a = address(&mut rng, i);
                assert_eq!(both.eval(a), (slice.eval(a), IndexFn::SeedSet.eval(a)), "{slice:?} at {a:#x}");
            }
        }
        assert!(SliceAndSet::new(&set, &set).is_none());
    }

    #[test]
    fn parity_tables_of_random_masks_match_popcounts() {
        // 0 to 32 masks over spans of 1 to 64 bits (one to seven chunks)
        let mut rng = SplitMix(7);
        for case in 0..400u64 {
            let span = 1 + (case % 64) as u32;
            let lo = rng.below(65 - span as u64) as u32;
            let field = if span == 64 { u64::MAX } else { ((1u64 << span) - 1) << lo };
            let masks: Vec<u64> = (0..case % 33).map(|_| rng.next_u64() & rng.next_u64() & field).collect();
            let t = ParityTable::new(&masks);
            for i in 0..2000 {
                let a = if i % 2 == 0 { rng.next_u64() } else { rng.next_u64() >> rng.below(64) };
                assert_eq!(t.eval(a), xor_index(a, &masks), "masks {masks:x?} at {a:#x}");
            }
        }
    }

    #[test]
    fn mod9_is_the_seeds_arithmetic() {
        let mut rng = SplitMix(3);
        for i in 0..1_000_000u64 {
            let a = if i < 1 << 19 { i << 14 } else { rng.next_u64() >> 1 };
            let (m9, g) = ((a >> 15) % 9, ((a + (1 << 16)) >> 17) % 9);
            let b9 = u32::from(m9 == 2 || m9 == 6) << 9;
            assert_eq!(mod9(a), ((m9 % 3) * 9 + g) as u32 | b9, "{a:#x}");
            assert_eq!(y36(a, a / 1152), ((a >> 15) % 36) as usize, "{a:#x}");
        }
    }
}
