//! The composed hierarchy (seed 000 read path, seed 004 write path): per-SM L1 (virtually indexed
//! and tagged, sectored, write-through with allocate-and-update) and TLB, the page table, L2
//! slices (physically hashed, write-back with dirty sectors, RRPV, 8-dirty rule, optional
//! near/far partitions), per-controller write-back FIFOs and DRAM. `load`/`store` move one
//! request (a byte range inside one line) through the levels and return where it was served and
//! its unloaded latency; counters accumulate in `Stats`.

use crate::cache::{Cache, WriteBack};
use crate::dram::{Dram, DramAccess};
use crate::hash::IndexFn;
use crate::hierarchy::{Hierarchy, Indexing, Replacement, RowFunction};
use crate::tlb::{PageTable, Tlb};
use crate::wbfifo::WbFifo;
use serde::Serialize;

pub(crate) mod chase;
pub mod index;
pub(crate) mod presplit;
mod staged;
mod store;
use index::{FastIndex, SliceAndSet};
pub use presplit::PageParts;
pub use staged::{Staged, STAGED_AHEAD};

/// Where a load was served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    L1,
    L2,
    /// A hit in the far L2 partition (`l2.far_hit_ns`).
    L2Far,
    /// Served from a controller's write-back FIFO (seed 004: "still readable").
    WriteBackFifo,
    Dram,
}

/// One load's path.
#[derive(Debug, Clone, Copy)]
pub struct LoadResult {
    pub level: Level,
    /// Unloaded latency (plus DRAM bank effects), ns.
    pub latency_ns: f64,
    pub tlb_miss: bool,
    /// L1 set (flat), when L1 was looked up.
    pub l1_set: u32,
    /// L2 slice and set (home), when L2 was reached.
    pub slice: u32,
    pub l2_set: u32,
    /// DRAM detail, when DRAM was reached.
    pub dram: Option<DramAccess>,
}

/// One store's path.
#[derive(Debug, Clone, Copy)]
pub struct StoreResult {
    pub tlb_miss: bool,
    pub l1_set: u32,
    pub slice: u32,
    pub l2_set: u32,
    pub l2_hit: bool,
    /// Dirty lines sent to the write-back FIFO by this store (eviction and the 8-dirty rule).
    pub writebacks: u32,
}

/// What a load of one virtual address needs that does not depend on the simulated state: its
/// physical address through the page table, its L1 set and its L2 slice and set. `Machine::pre`
/// computes it ahead (a chase knows its path), `Machine::load_pre` uses it. Speed only: the load
/// checks the translation its TLB gives against `pa` and recomputes on a mismatch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pre {
    pub va: u64,
    pub pa: u64,
    pub(crate) l1_set: u32,
    pub(crate) slice: u32,
    pub(crate) l2_set: u32,
    /// Bytes loaded or stored, and the sectors they cover in an L1 and an L2 line.
    pub(crate) len: u32,
    /// `l1_set` was computed (else the access must bypass L1).
    pub(crate) has_l1: bool,
    pub(crate) l1_sectors: u8,
    pub(crate) l2_sectors: u8,
}

impl Pre {
    /// The L2 slice of the line (its home slice).
    #[inline]
    pub fn slice(&self) -> u32 {
        self.slice
    }
}

/// Counters (all cumulative since construction or `reset_stats`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    pub l1_load_requests: u64,
    pub l1_load_hits: u64,
    pub l1_store_requests: u64,
    pub tlb_lookups: u64,
    pub tlb_misses: u64,
    pub l2_read_requests: u64,
    pub l2_read_sectors: u64,
    pub l2_read_hits: u64,
    pub l2_far_hits: u64,
    pub l2_write_requests: u64,
    pub l2_write_sectors: u64,
    pub l2_write_hits: u64,
    pub l2_writebacks: u64,
    pub l2_dirty_cleans: u64,
    pub fifo_read_hits: u64,
    pub dram_reads: u64,
    pub dram_read_sectors: u64,
    pub dram_writes: u64,
    pub dram_write_sectors: u64,
    pub dram_activates: u64,
    pub dram_row_hits: u64,
    pub dram_refresh_stalls: u64,
    /// L2 requests (read + write) per slice.
    pub slice_requests: Vec<u64>,
}

pub(crate) struct SmState {
    pub(crate) l1: Cache,
    pub(crate) tlb: Tlb,
}

/// The simulated machine's state.
pub struct Machine {
    pub h: Hierarchy,
    pub(crate) l1_fn: FastIndex,
    pub(crate) l1_line_shift: u32,
    pub(crate) l1_sector_shift: u32,
    pub(crate) l2_line_shift: u32,
    pub(crate) l2_sector_shift: u32,
    /// `k / sectors per L2 line` for k = 0..16: the lines a read of k sectors moves (`lines_of`).
    lines_of_sectors: [f64; 16],
    pub(crate) sets_per_slice: u32,
    slice_fn: FastIndex,
    set_fn: FastIndex,
    /// Both at once, for the seed's functions.
    pub(crate) slice_and_set: Option<SliceAndSet>,
    /// The in-page halves of the L1 and L2 index functions (`presplit`), where they split.
    pub(crate) low_tables: Option<presplit::LowTables>,
    slices_per_partition: u32,
    sms_per_partition: u32,
    far: Option<f64>,
    /// Virtually indexed L1, physically indexed L2, one partition: `hop_pre`'s short path.
    pub(crate) short_path: bool,
    /// L1 and L2 lines and sectors of the same sizes (one sector mask serves both).
    pub(crate) same_lines: bool,
    pub(crate) page_shift: u32,
    pub(crate) sms: Vec<Option<Box<SmState>>>,
    pub l2: Cache,
    /// The copies of far-homed lines when they have a structure of their own
    /// (`l2.far_copy_ways`); `None`: they share the near slice's ways in `l2`.
    far_copies: Option<Cache>,
    pub dram: Dram,
    pub pt: PageTable,
    fifos: Vec<WbFifo>,
    /// Memory controller of each slice (slices spread evenly over the controllers).
    controller_of_slice: Vec<u32>,
    /// With DRAM rows longer than an L2 line and several controllers: how a physical address
    /// is taken to its row's first byte, whose slice's controller holds the whole row (a slice
    /// function may spread one row's lines over controllers; the row still lives in one bank of
    /// one chip, `dram_controller`). `None`: a line's slice's controller.
    row_base: Option<RowBase>,
    pub stats: Stats,
}

/// How a physical address is taken to its DRAM row's first byte (`Machine::dram_controller`).
#[derive(Debug, Clone, Copy)]
enum RowBase {
    /// Contiguous rows: the address and the mask.
    Mask(u64),
    /// Footnote 13's 1 KiB row of column bits 5-7, 9 and 8 ^ 14: bits 0-9 cleared, and bit 14
    /// taken to the value it has where bit 8 is 0 (the same row key, `Dram::row_key`).
    Rtx4090,
}

impl RowBase {
    #[inline(always)]
    fn rtx4090_row_first_byte(pa: u64) -> u64 {
        (pa & !0x3ff) ^ (((pa >> 8) & 1) << 14)
    }
}

/// Mask of the sectors covering `[off, off + len)` of a line (`len` >= 1).
#[inline]
pub fn sector_mask(off: u64, len: u64, sector_shift: u32) -> u8 {
    let first = (off >> sector_shift) as u32;
    let last = ((off + len - 1) >> sector_shift) as u32;
    // bits first..=last
    (2u32 << last).wrapping_sub(1u32 << first) as u8
}

impl Machine {
    /// Build from a validated hierarchy.
    pub fn new(h: Hierarchy) -> Self {
        let l2 = &h.l2;
        let slice_fn = FastIndex::new(&IndexFn::slice(&h.l2_slice_function()));
        let set_fn = FastIndex::new(&IndexFn::set(&h.l2_set_function()));
        let total_sets = l2.slices as usize * l2.sets_per_slice as usize;
        let threshold = l2.dirty_clean_threshold.unwrap_or(l2.ways / 2);
        let pages = h.dram.capacity_bytes / h.page_bytes;
        let mut m = Machine {
            low_tables: None,
            l1_fn: FastIndex::new(&IndexFn::Xor(h.l1_masks())),
            l1_line_shift: h.l1.line_bytes.trailing_zeros(),
            l1_sector_shift: h.l1.sector_bytes.trailing_zeros(),
            l2_line_shift: l2.line_bytes.trailing_zeros(),
            l2_sector_shift: l2.sector_bytes.trailing_zeros(),
            lines_of_sectors: std::array::from_fn(|k| k as f64 / (l2.line_bytes / l2.sector_bytes) as f64),
            sets_per_slice: l2.sets_per_slice,
            slice_and_set: SliceAndSet::new(&slice_fn, &set_fn),
            slice_fn: slice_fn.clone(),
            set_fn: set_fn.clone(),
            slices_per_partition: l2.slices / l2.partitions,
            sms_per_partition: h.sm.count / l2.partitions,
            far: if l2.partitions > 1 { l2.far_hit_ns } else { None },
            same_lines: h.l1.line_bytes == l2.line_bytes && h.l1.sector_bytes == l2.sector_bytes,
            short_path: h.l1.indexing == Indexing::Virtual
                && l2.indexing == Indexing::Physical
                && (l2.partitions <= 1 || l2.far_hit_ns.is_none()),
            page_shift: h.page_bytes.trailing_zeros(),
            sms: (0..h.sm.count).map(|_| None).collect(),
            l2: Cache::new(total_sets, l2.ways as usize, l2.replacement, threshold),
            far_copies: l2.far_copy_ways.map(|w| Cache::new(total_sets, w as usize, l2.replacement, threshold)),
            dram: Dram::new(&h),
            pt: PageTable::new(h.page_bytes.trailing_zeros(), pages, h.seed),
            fifos: vec![WbFifo::default(); h.dram.controllers as usize],
            controller_of_slice: (0..l2.slices as u64)
                .map(|s| (s * h.dram.controllers as u64 / l2.slices as u64) as u32)
                .collect(),
            row_base: match h.dram.row_function {
                _ if h.dram.controllers <= 1 => None,
                RowFunction::Contiguous => {
                    (h.dram.row_bytes > l2.line_bytes as u64).then_some(RowBase::Mask(!(h.dram.row_bytes - 1)))
                }
                RowFunction::Rtx4090 => Some(RowBase::Rtx4090),
            },
            stats: Stats { slice_requests: vec![0; l2.slices as usize], ..Stats::default() },
            h,
        };
        m.low_tables = presplit::LowTables::new(&m);
        m
    }

    #[inline(always)]
    fn sm(&mut self, sm: u32) -> &mut SmState {
        if self.sms[sm as usize].is_none() {
            self.make_sm(sm);
        }
        let Some(s) = self.sms[sm as usize].as_deref_mut() else { unreachable!("made above") };
        s
    }

    #[cold]
    pub(crate) fn make_sm(&mut self, sm: u32) {
        let h = &self.h;
        self.sms[sm as usize] = Some(Box::new(SmState {
            l1: Cache::new(h.l1.sets as usize, h.l1.ways as usize, h.l1.replacement, 0),
            tlb: Tlb::new(h.tlb.entries as usize, h.tlb.replacement == Replacement::Lru),
        }));
    }

    /// Empty every cache, TLB and FIFO (dirty L2 lines are written back first), close DRAM rows.
    pub fn flush(&mut self) {
        self.stats.l2_writebacks += self.l2.dirty_lines() as u64;
        for s in self.sms.iter_mut().flatten() {
            s.l1.clear();
            s.tlb.clear();
        }
        self.l2.clear();
        if let Some(c) = self.far_copies.as_mut() {
            c.clear();
        }
        self.fifos.iter_mut().for_each(WbFifo::clear);
        self.dram.reset();
    }

    /// Invalidate translations of a virtual page on every SM.
    pub fn invalidate_page(&mut self, vpn: u64) {
        for s in self.sms.iter_mut().flatten() {
            s.tlb.invalidate(vpn);
        }
    }

    pub fn reset_stats(&mut self) {
        let n = self.stats.slice_requests.len();
        self.stats = Stats { slice_requests: vec![0; n], ..Stats::default() };
    }

    /// L2 slice of a physical address.
    #[inline]
    pub fn slice_of(&self, pa: u64) -> u32 {
        self.slice_fn.eval(pa)
    }
    /// L2 set (inside its slice) of a physical address.
    #[inline]
    pub fn l2_set_of(&self, pa: u64) -> u32 {
        self.set_fn.eval(pa)
    }
    /// (slice, set) of an L2 key.
    #[inline(always)]
    fn l2_pair(&self, key: u64) -> (u32, u32) {
        match &self.slice_and_set {
            Some(f) => f.eval(key),
            None => (self.slice_of(key), self.l2_set_of(key)),
        }
    }
    /// L1 set of an address (virtual or physical per `l1.indexing`).
    #[inline]
    pub fn l1_set_of(&self, a: u64) -> u32 {
        self.l1_fn.eval(a)
    }
    /// Memory controller of a slice.
    #[inline]
    pub fn controller_of(&self, slice: u32) -> u32 {
        self.controller_of_slice[slice as usize]
    }
    /// The controller whose DRAM holds physical address `pa` (of L2 slice `slice`): the slice's,
    /// or with `row_base` the one of its row's first byte.
    #[inline(always)]
    pub(crate) fn dram_controller(&self, slice: u32, pa: u64) -> u32 {
        match self.row_base {
            None => self.controller_of_slice[slice as usize],
            Some(RowBase::Mask(mask)) => self.controller_of(self.slice_of(pa & mask)),
            Some(RowBase::Rtx4090) => self.controller_of(self.slice_of(RowBase::rtx4090_row_first_byte(pa))),
        }
    }
    /// L2 partition of an SM.
    #[inline]
    pub fn partition_of_sm(&self, sm: u32) -> u32 {
        sm / self.sms_per_partition
    }

    /// Translate through SM `sm`'s TLB: (physical address, missed).
    #[inline(always)]
    fn translate(&mut self, sm: u32, va: u64) -> (u64, bool) {
        let shift = self.page_shift;
        let vpn = va >> shift;
        self.stats.tlb_lookups += 1;
        let off = va & ((1u64 << shift) - 1);
        if self.sms[sm as usize].is_none() {
            self.make_sm(sm);
        }
        let Some(s) = self.sms[sm as usize].as_deref_mut() else { unreachable!("SM state made just above") };
        if let Some(ppn) = s.tlb.lookup(vpn) {
            return ((ppn << shift) | off, false);
        }
        self.stats.tlb_misses += 1;
        // An unmapped page is a caller bug (SimTarget checks addresses); map it to page 0.
        let ppn = self.pt.walk(vpn).unwrap_or(0);
        s.tlb.insert(vpn, ppn);
        ((ppn << shift) | off, true)
    }

    /// Send dirty lines to their controller's write-back FIFO; a full FIFO drains its oldest line
    /// to DRAM.
    fn write_back(&mut self, wb: WriteBack, now_ns: f64) {
        self.stats.l2_writebacks += 1;
        let pa = wb.line << self.l2_line_shift;
        let c = self.controller_of(self.slice_of(pa)) as usize;
        let sectors = wb.sectors.count_ones() as u64;
        self.stats.dram_writes += 1;
        self.stats.dram_write_sectors += sectors;
        self.fifos[c].push_back(wb.line);
        if self.fifos[c].len() > self.h.dram.writeback_fifo_lines as usize {
            let old = self.fifos[c].pop_front().unwrap_or(wb.line);
            let old_pa = old << self.l2_line_shift;
            let a = self.dram.access(self.dram_controller(self.slice_of(old_pa), old_pa), old_pa, now_ns, 1.0);
            self.count_dram(&a);
        }
    }

    /// The lines a DRAM read of the `missing` sectors moves (a table lookup: the division's
    /// values; a sector mask has at most 8 bits).
    #[inline(always)]
    fn lines_of(&self, missing: u8) -> f64 {
        self.lines_of_sectors[missing.count_ones() as usize & 15]
    }

    #[inline(always)]
    fn count_dram_lean(&mut self, row_hit: bool, stalled: bool) {
        if row_hit {
            self.stats.dram_row_hits += 1;
        } else {
            self.stats.dram_activates += 1;
        }
        if stalled {
            self.stats.dram_refresh_stalls += 1;
        }
    }

    fn count_dram(&mut self, a: &DramAccess) {
        if a.row_hit {
            self.stats.dram_row_hits += 1;
        } else {
            self.stats.dram_activates += 1;
        }
        if a.refresh_stall_ns > 0.0 {
            self.stats.dram_refresh_stalls += 1;
        }
    }

    /// A load of `len` bytes at virtual address `va` (inside one line) by SM `sm` at time
    /// `now_ns`; `bypass_l1` for ld.global.cg.
    pub fn load(&mut self, sm: u32, va: u64, len: u64, bypass_l1: bool, now_ns: f64) -> LoadResult {
        self.load_core(sm, va, len, bypass_l1, now_ns, None)
    }

    /// `load` of `p.va`, with the indices `pre` computed ahead (the same result as `load`).
    #[inline]
    pub fn load_pre(&mut self, sm: u32, p: &Pre, bypass_l1: bool, now_ns: f64) -> LoadResult {
        self.load_core(sm, p.va, p.len as u64, bypass_l1, now_ns, Some(p))
    }

    #[inline(always)]
    fn load_core(&mut self, sm: u32, va: u64, len: u64, bypass_l1: bool, now_ns: f64, pre: Option<&Pre>) -> LoadResult {
        debug_assert!(pre.is_none_or(|p| p.va == va && (bypass_l1 || p.has_l1)));
        let h_l1_hit = self.h.l1.hit_ns;
        let mut tlb_miss = false;
        let mut pa = None;
        let mut r = LoadResult {
            level: Level::L1,
            latency_ns: h_l1_hit,
            tlb_miss: false,
            l1_set: 0,
            slice: 0,
            l2_set: 0,
            dram: None,
        };
        if !bypass_l1 {
            self.stats.l1_load_requests += 1;
            let a = if self.h.l1.indexing == Indexing::Physical {
                let (p, m) = self.translate(sm, va);
                pa = Some(p);
                tlb_miss = m;
                p
            } else {
                va
            };
            let set = match pre {
                Some(p) if p.pa == a || self.h.l1.indexing == Indexing::Virtual => p.l1_set,
                _ => self.l1_set_of(a),
            };
            let line = a >> self.l1_line_shift;
            let sectors = match pre {
                Some(p) => p.l1_sectors,
                None => sector_mask(a & ((1 << self.l1_line_shift) - 1), len, self.l1_sector_shift),
            };
            r.l1_set = set;
            let o = self.sm(sm).l1.load(set as usize, line, sectors);
            if o.missing == 0 {
                self.stats.l1_load_hits += 1;
                r.tlb_miss = tlb_miss;
                r.latency_ns += if tlb_miss { self.h.tlb.miss_ns } else { 0.0 };
                return r;
            }
        }
        // An L1 miss is translated before it leaves the SM (seed 000), whatever indexes the L2.
        let pa = match pa {
            Some(p) => p,
            None => {
                let (p, m) = self.translate(sm, va);
                tlb_miss = m;
                p
            }
        };
        self.load_below_l1(sm, va, pa, len, tlb_miss, now_ns, pre, r)
    }

    /// The part of a load after L1: `pa` is the translation (`tlb_miss`: it missed), `r` what
    /// the L1 part filled in.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn load_below_l1(
        &mut self,
        sm: u32,
        va: u64,
        pa: u64,
        len: u64,
        tlb_miss: bool,
        now_ns: f64,
        pre: Option<&Pre>,
        mut r: LoadResult,
    ) -> LoadResult {
        let key = if self.h.l2.indexing == Indexing::Physical { pa } else { va };
        let tlb_ns = if tlb_miss { self.h.tlb.miss_ns } else { 0.0 };
        r.tlb_miss = tlb_miss;
        let (slice, set) = match pre {
            Some(p) if p.pa == pa => (p.slice, p.l2_set),
            _ => self.l2_pair(key),
        };
        r.slice = slice;
        r.l2_set = set;
        let line = key >> self.l2_line_shift;
        let sectors = match pre {
            Some(p) => p.l2_sectors,
            None => sector_mask(key & ((1 << self.l2_line_shift) - 1), len, self.l2_sector_shift),
        };
        self.stats.l2_read_requests += 1;
        self.stats.l2_read_sectors += sectors.count_ones() as u64;
        self.stats.slice_requests[slice as usize] += 1;
        let sps = self.sets_per_slice as usize;
        // Near/far partitions: look for a copy in the SM's own partition first.
        let mut far_copy_slot = None;
        if let Some(far_ns) = self.far {
            let spp = self.slices_per_partition;
            let p = self.partition_of_sm(sm);
            if slice / spp != p {
                let mirror = (slice % spp + p * spp) as usize;
                let copies = self.far_copies.as_mut().unwrap_or(&mut self.l2);
                let o = copies.load(mirror * sps + set as usize, line, sectors);
                if let Some(wb) = o.evicted {
                    self.write_back(wb, now_ns);
                }
                if o.missing == 0 {
                    self.stats.l2_read_hits += 1;
                    r.level = Level::L2;
                    r.latency_ns = self.h.l2.hit_ns + tlb_ns;
                    return r;
                }
                far_copy_slot = Some(far_ns);
            }
        }
        let o = self.l2.load(slice as usize * sps + set as usize, line, sectors);
        if let Some(wb) = o.evicted {
            self.write_back(wb, now_ns);
        }
        if o.missing == 0 {
            match far_copy_slot {
                Some(far_ns) => {
                    self.stats.l2_far_hits += 1;
                    r.level = Level::L2Far;
                    r.latency_ns = far_ns + tlb_ns;
                }
                None => {
                    self.stats.l2_read_hits += 1;
                    r.level = Level::L2;
                    r.latency_ns = self.h.l2.hit_ns + tlb_ns;
                }
            }
            return r;
        }
        let c = self.controller_of(slice);
        let fifo = &self.fifos[c as usize];
        if !fifo.is_empty() && fifo.contains(line) {
            self.stats.fifo_read_hits += 1;
            r.level = Level::WriteBackFifo;
            r.latency_ns = self.h.l2.hit_ns + tlb_ns;
            return r;
        }
        let n = o.missing.count_ones() as u64;
        self.stats.dram_reads += 1;
        self.stats.dram_read_sectors += n;
        let arrive = now_ns + self.h.l2.hit_ns * 0.5;
        let a = self.dram.access(self.dram_controller(slice, pa), pa, arrive, self.lines_of(o.missing));
        self.count_dram(&a);
        r.level = Level::Dram;
        r.latency_ns = self.h.dram.latency_ns + a.extra_ns.max(-self.h.dram.activate_ns) + tlb_ns;
        r.dram = Some(a);
        r
    }

    /// Lines resident in an L2 set of a slice (tests, occupancy).
    pub fn l2_lines_in(&self, slice: u32, set: u32) -> usize {
        self.l2.lines_in_set(slice as usize * self.sets_per_slice as usize + set as usize)
    }
}

#[cfg(test)]
mod tests;
