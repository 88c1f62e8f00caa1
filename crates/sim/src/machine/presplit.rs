//! Chase indices by page halves (speed only, no seed): the L1 set (XOR masks) and the mask
//! parities of seed 000's L2 slice and set functions are XOR-linear in the address, so each is
//! the XOR of a part from the page (computed once per page a chase touches: `PageParts`) and a
//! part from the offset in the page (two small tables: `LowTables`); the rest of the L2
//! functions (`a / 1152`, `(a >> 15) % 36`) is computed per address as `SliceAndSet::finish`
//! does. The values are `Machine::pre_with`'s (debug-checked, and tested below).

use super::index::{FastIndex, SliceAndSet};
use super::{sector_mask, Machine, Pre};

/// Widest in-page span of address bits the two offset tables cover (2^10 entries each at most).
const MAX_SPLIT_BITS: u32 = 20;
/// Most pages one `PageParts` covers (16 bytes each).
const MAX_PAGES: u64 = 1 << 16;

/// The offset part: entry = L1 parities | L2 mask parities << 32, for in-page address bits
/// `lo .. lo + w0` (`t0`) and `lo + w0 .. page_shift` (`t1`).
#[derive(Debug, Clone)]
pub(crate) struct LowTables {
    lo: u32,
    w0: u32,
    m0: u64,
    m1: u64,
    t0: Box<[u64]>,
    t1: Box<[u64]>,
}

impl LowTables {
    /// For a virtually indexed XOR-mask L1 and a physically indexed L2 with the seed's slice
    /// and set functions (`SliceAndSet`), pages of at most 2^20 index-relevant offset bits;
    /// `None` otherwise (chases then use `pre_with`).
    pub(crate) fn new(m: &Machine) -> Option<Self> {
        let FastIndex::Xor(l1) = &m.l1_fn else { return None };
        let sas = m.slice_and_set.as_ref()?;
        if !m.short_path {
            return None;
        }
        // (`SliceAndSet::parities` reads address bits from 7 up)
        let lo = l1.lowest_bit().min(7);
        let shift = m.page_shift;
        if shift <= lo || shift - lo > MAX_SPLIT_BITS {
            return None;
        }
        let w0 = (shift - lo).div_ceil(2);
        let w1 = shift - lo - w0;
        let entry = |a: u64| m.l1_fn.eval(a) as u64 | (sas.parities(a) as u64) << 32;
        Some(LowTables {
            lo,
            w0,
            m0: (1 << w0) - 1,
            m1: (1 << w1) - 1,
            t0: (0..1u64 << w0).map(|v| entry(v << lo)).collect(),
            t1: (0..1u64 << w1).map(|v| entry(v << (lo + w0))).collect(),
        })
    }

    /// The entry of an in-page offset.
    #[inline(always)]
    fn get(&self, off: u64) -> u64 {
        let b = off >> self.lo;
        let (i, j) = ((b & self.m0) as usize, (b >> self.w0 & self.m1) as usize);
        debug_assert!(i < self.t0.len() && j < self.t1.len());
        // SAFETY: `t0` has `m0 + 1` entries and `t1` `m1 + 1` (`new`): the masks keep both in bounds.
        unsafe { self.t0.get_unchecked(i) ^ self.t1.get_unchecked(j) }
    }
}

/// The page part of one virtual page: its physical base, the L1 parities of its virtual base,
/// the L2 mask parities of its physical base (`pa_hi == u64::MAX`: not computed yet).
#[derive(Debug, Clone, Copy)]
struct PagePart {
    pa_hi: u64,
    l1: u32,
    x: u32,
}

const UNSEEN: PagePart = PagePart { pa_hi: u64::MAX, l1: 0, x: 0 };

/// Page parts of the pages from `vlo` on, filled as a chase first touches them. Valid while the
/// page table does not change (one chase).
#[derive(Debug, Clone)]
pub struct PageParts {
    vlo: u64,
    parts: Vec<PagePart>,
}

impl Machine {
    /// Page parts for a chase of `addrs` over virtual addresses `lo..=hi`, reusing `old`'s
    /// memory; `None` when this hierarchy has no split (`LowTables::new`) or the span has over
    /// 2^16 pages or over 4 per address (the parts would cost more than they save).
    pub fn page_parts(&self, old: Option<PageParts>, addrs: usize, lo: u64, hi: u64) -> Option<PageParts> {
        self.low_tables.as_ref()?;
        let (vlo, vhi) = (lo >> self.page_shift, hi >> self.page_shift);
        let n = vhi.checked_sub(vlo)? + 1;
        if n > MAX_PAGES || n > 4 * addrs as u64 + 16 {
            return None;
        }
        let mut parts = old.map(|o| o.parts).unwrap_or_default();
        parts.clear();
        parts.resize(n as usize, UNSEEN);
        Some(PageParts { vlo, parts })
    }

    /// `pre_with(va, len, l1)` of each `va` of `addrs` into `out` (as many), by page halves (`pp`
    /// from `page_parts` of a range holding them; an address outside it takes `pre_with`), the
    /// machine's fields read once.
    pub fn pre_split_into(&self, pp: &mut PageParts, addrs: &[u64], out: &mut [Pre], len: u64, l1: bool) {
        if self.low_tables.is_none() || self.slice_and_set.is_none() {
            out.iter_mut().zip(addrs).for_each(|(o, &va)| *o = self.pre_with(va, len, l1));
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if crate::fast::hostcpu::v3() {
            // SAFETY: the host has the v3 features (checked).
            unsafe { self.split_v3(pp, addrs, out, len, l1) };
            return;
        }
        self.split(pp, addrs, out, len, l1)
    }

    /// `split` compiled for x86-64-v3 (`hostcpu`).
    ///
    /// # Safety
    /// The host has the features (`hostcpu::v3`).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,fma,movbe,popcnt,ssse3,sse4.1,sse4.2")]
    unsafe fn split_v3(&self, pp: &mut PageParts, addrs: &[u64], out: &mut [Pre], len: u64, l1: bool) {
        self.split(pp, addrs, out, len, l1)
    }

    /// `pre_split_into`'s loops (this hierarchy has the split), one per case of the two flags:
    /// nothing but the common work in each.
    #[inline(always)]
    fn split(&self, pp: &mut PageParts, addrs: &[u64], out: &mut [Pre], len: u64, l1: bool) {
        let (Some(low), Some(sas)) = (&self.low_tables, &self.slice_and_set) else {
            unreachable!("pre_split_into checked both")
        };
        match (l1, self.same_lines) {
            (true, true) => self.split_loop::<true, true>(low, sas, pp, addrs, out, len),
            (true, false) => self.split_loop::<true, false>(low, sas, pp, addrs, out, len),
            (false, true) => self.split_loop::<false, true>(low, sas, pp, addrs, out, len),
            (false, false) => self.split_loop::<false, false>(low, sas, pp, addrs, out, len),
        }
    }

    /// `pre_split_into` with `l1` and `same_lines` as `L1` and `SAME`; a page seen for the first
    /// time, or outside `pp`, goes through `split_slow`.
    #[inline(always)]
    fn split_loop<const L1: bool, const SAME: bool>(
        &self,
        low: &LowTables,
        sas: &SliceAndSet,
        pp: &mut PageParts,
        addrs: &[u64],
        out: &mut [Pre],
        len: u64,
    ) {
        let (shift, vlo) = (self.page_shift, pp.vlo);
        let (l2_line_mask, l2_sector_shift) = ((1u64 << self.l2_line_shift) - 1, self.l2_sector_shift);
        let (l1_line_mask, l1_sector_shift) = ((1u64 << self.l1_line_shift) - 1, self.l1_sector_shift);
        let off_mask = (1u64 << shift) - 1;
        for (o, &va) in out.iter_mut().zip(addrs) {
            let part = match pp.parts.get((va >> shift).wrapping_sub(vlo) as usize) {
                Some(p) if p.pa_hi != u64::MAX => *p,
                _ => {
                    *o = self.split_slow(pp, va, len, L1);
                    continue;
                }
            };
            let off = va & off_mask;
            let e = low.get(off);
            let pa = part.pa_hi | off;
            let (slice, l2_set) = sas.finish(pa, part.x ^ (e >> 32) as u32);
            let l2_sectors = sector_mask(va & l2_line_mask, len, l2_sector_shift);
            *o = Pre {
                va,
                pa,
                l1_set: if L1 { part.l1 ^ e as u32 } else { 0 },
                has_l1: L1,
                slice,
                l2_set,
                len: len as u32,
                l1_sectors: if SAME { l2_sectors } else { sector_mask(va & l1_line_mask, len, l1_sector_shift) },
                l2_sectors,
            };
            debug_assert_eq!(*o, self.pre_with(va, len, L1), "pre_split_into at {va:#x}");
        }
    }

    /// `pre_with(va, len, l1)`, and the page part of `va` filled when `pp` covers it.
    #[cold]
    #[inline(never)]
    fn split_slow(&self, pp: &mut PageParts, va: u64, len: u64, l1: bool) -> Pre {
        let vpn = va >> self.page_shift;
        if let Some(part) = pp.parts.get_mut(vpn.wrapping_sub(pp.vlo) as usize) {
            *part = self.page_part(vpn);
        }
        self.pre_with(va, len, l1)
    }

    /// The page part of virtual page `vpn` (an unmapped page reads as physical page 0, as in
    /// `pre_with`).
    #[cold]
    #[inline(never)]
    fn page_part(&self, vpn: u64) -> PagePart {
        let pa_hi = self.pt.walk(vpn).unwrap_or(0) << self.page_shift;
        let x = self.slice_and_set.as_ref().map_or(0, |s| s.parities(pa_hi));
        PagePart { pa_hi, l1: self.l1_fn.eval(vpn << self.page_shift), x }
    }
}

#[cfg(test)]
mod tests {
    use crate::hierarchy::{HashFunction, Indexing, Mask};
    use crate::machine::Pre;
    use crate::tlb::SplitMix;
    use crate::SimTarget;
    use memscope_core::Target;

    /// `pre_split_into` equals `pre_with` on mapped and unmapped addresses, on both seed GPUs, with
    /// small and large pages and other L1 masks; hierarchies without a split say so.
    #[test]
    fn page_halves_give_pre_with_values() {
        crate::fast::hostcpu::both_ways(compare_page_halves_with_pre_with);
    }

    fn compare_page_halves_with_pre_with() {
        let mut variants = vec![crate::presets::rtx4090(), crate::presets::l40s()];
        for (page, masks) in [(1u64 << 16, vec![0x1180u64, 0x2a400, 0x4_0100_0080]), (1 << 24, vec![0x80, 0x300_0000])]
        {
            let mut h = crate::presets::rtx4090();
            h.page_bytes = page;
            h.l1.sets = 1 << masks.len();
            h.l1.index_masks = masks.into_iter().map(Mask).collect();
            variants.push(h);
        }
        let mut rng = SplitMix(5);
        for h in variants {
            let mut t = SimTarget::new(h.clone()).unwrap();
            let a = t.alloc(48 << 20).unwrap();
            let b = t.alloc(8 << 20).unwrap();
            let (lo, hi) = (a.base.min(b.base), (a.base + a.bytes).max(b.base + b.bytes) + (4 << 20));
            let m = t.machine();
            let mut pp = m.page_parts(None, 1 << 20, lo, hi).expect("a split for the seed functions");
            // batches of random addresses (pages first seen inside a batch), each length and path
            for i in 0..1_000u64 {
                let (len, l1) = ([1, 4, 8, 16, 32][(i % 5) as usize], i % 3 != 0);
                let addrs: Vec<u64> = (0..200).map(|_| (lo + rng.below(hi - lo)) & !(len - 1)).collect();
                let mut out = vec![Pre::default(); addrs.len()];
                m.pre_split_into(&mut pp, &addrs, &mut out, len, l1);
                for (o, &va) in out.iter().zip(&addrs) {
                    assert_eq!(*o, m.pre_with(va, len, l1), "{} at {va:#x}", h.name);
                }
            }
        }
        // no split: plain-mask L2 functions, a physically indexed L1
        let mut h = crate::presets::rtx4090();
        h.l2.slice_function = HashFunction::Masks { masks: (17..21).map(|b| Mask(1 << b)).collect() };
        h.l2.slices = 16;
        assert!(SimTarget::new(h).unwrap().machine().page_parts(None, 1 << 20, 0, 1 << 30).is_none());
        let mut h = crate::presets::rtx4090();
        h.l1.indexing = Indexing::Physical;
        assert!(SimTarget::new(h).unwrap().machine().page_parts(None, 1 << 20, 0, 1 << 30).is_none());
    }
}
