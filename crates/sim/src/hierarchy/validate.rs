//! Validation of a `Hierarchy` (docs/CONTRACTS.md, "The simulated-hierarchy JSON"): every error names the
//! offending field, e.g. "l1.ways: must be at least 1 (got 0)" or
//! "l1.index_masks[2]: 0x10000000000 is wider than the 40-bit address".

use super::{err, HashFunction, Hierarchy, HierarchyError, Replacement};

/// Structural limits, far above any GPU built (an H200 has 132 SMs, 64 resident warps per SM, a
/// few thousand TLB entries and under 2^20 L2 sets): they keep every count that sizes the
/// simulator's arrays and index arithmetic inside u32 and bounded. (Memory is bounded separately:
/// memscope-sim estimates its state before allocating it.)
pub const MAX_SMS: u64 = 1 << 16;
/// At most this many resident warps per SM.
pub const MAX_RESIDENT_WARPS: u64 = 1 << 12;
/// At most this many TLB entries per SM.
pub const MAX_TLB_ENTRIES: u64 = 1 << 24;
/// At most this many L1 sets.
pub const MAX_L1_SETS: u64 = 1 << 24;
/// At most this many L2 slices.
pub const MAX_L2_SLICES: u64 = 1 << 16;
/// At most this many L2 sets in all (slices x sets per slice).
pub const MAX_L2_SETS: u64 = 1 << 30;
/// At most this many DRAM banks in all (controllers x channels x banks).
pub const MAX_DRAM_BANKS: u64 = 1 << 24;

fn pow2(field: &str, v: u64) -> Result<(), HierarchyError> {
    if v == 0 || !v.is_power_of_two() {
        return err(field, format!("must be a power of two (got {v})"));
    }
    Ok(())
}

fn at_least(field: &str, v: u64, min: u64) -> Result<(), HierarchyError> {
    if v < min {
        return err(field, format!("must be at least {min} (got {v})"));
    }
    Ok(())
}

fn at_most(field: &str, v: u64, max: u64) -> Result<(), HierarchyError> {
    if v > max {
        return err(field, format!("at most {max} supported (got {v})"));
    }
    Ok(())
}

/// Longest time a hierarchy may give any latency, jitter or overhead: one second (a memory
/// access of a second is no hardware's; larger values overflow the probes' sums to infinity).
pub const MAX_TIME_NS: f64 = 1e9;
/// Fastest and slowest clock accepted (a clock outside makes cycles overflow or vanish).
pub const CLOCK_HZ_RANGE: (f64, f64) = (1e3, 1e12);

fn time(field: &str, v: f64) -> Result<(), HierarchyError> {
    if !v.is_finite() || v < 0.0 {
        return err(field, format!("must be a finite number >= 0 (got {v})"));
    }
    if v > MAX_TIME_NS {
        return err(field, format!("at most {MAX_TIME_NS:e} ns (one second) (got {v:e})"));
    }
    Ok(())
}

/// Rank over GF(2) of a list of masks.
pub(crate) fn gf2_rank(masks: &[u64]) -> usize {
    let mut basis: Vec<u64> = Vec::new();
    for &m in masks {
        let mut x = m;
        for &b in &basis {
            x = x.min(x ^ b);
        }
        if x != 0 {
            basis.push(x);
            basis.sort_unstable_by(|a, b| b.cmp(a));
        }
    }
    basis.len()
}

/// Check XOR masks: count matches, each non-zero, inside the address, above the line offset,
/// linearly independent (otherwise some index values are unreachable).
fn masks(
    field: &str,
    ms: &[u64],
    count: u32,
    what: &str,
    line_bytes: u32,
    address_bits: u32,
) -> Result<(), HierarchyError> {
    if ms.len() as u32 != count {
        return err(field, format!("{} masks give 2^{} {what}, but {what} is 2^{count}", ms.len(), ms.len()));
    }
    let low = (line_bytes as u64) - 1;
    for (i, &m) in ms.iter().enumerate() {
        let f = format!("{field}[{i}]");
        if m == 0 {
            return err(f, "a mask must have at least one bit");
        }
        if address_bits < 64 && m >> address_bits != 0 {
            return err(f, format!("{m:#x} is wider than the {address_bits}-bit address (address_bits)"));
        }
        if m & low != 0 {
            return err(f, format!("{m:#x} has bits inside a {line_bytes}-byte line"));
        }
    }
    if gf2_rank(ms) != ms.len() {
        return err(field, "masks are linearly dependent (some index values could never occur)");
    }
    Ok(())
}

/// Masks must stay independent over the address bits that actually vary: below the physical
/// capacity for a physically indexed cache, below the top address bit (constant in every virtual
/// address the simulator hands out) for a virtually indexed one.
fn usable(field: &str, ms: &[u64], bits: u32, what: &str) -> Result<(), HierarchyError> {
    let keep = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let cut: Vec<u64> = ms.iter().map(|m| m & keep).collect();
    if gf2_rank(&cut) != ms.len() {
        return err(field, format!("masks are linearly dependent over the {bits} address bits that vary ({what})"));
    }
    Ok(())
}

fn varying_bits(h: &Hierarchy, indexing: super::Indexing) -> (u32, &'static str) {
    match indexing {
        super::Indexing::Physical => (64 - (h.dram.capacity_bytes - 1).leading_zeros(), "below dram.capacity_bytes"),
        super::Indexing::Virtual => (h.address_bits - 1, "below the top virtual address bit"),
    }
}

impl Hierarchy {
    /// Check every field; the error names the first offending one.
    pub fn validate(&self) -> Result<(), HierarchyError> {
        let h = self;
        if let Some(l) = &h.links {
            if let Err((field, message)) = l.validate() {
                return err(field, message);
            }
        }
        if !(h.clock_hz.is_finite() && h.clock_hz >= CLOCK_HZ_RANGE.0 && h.clock_hz <= CLOCK_HZ_RANGE.1) {
            return err(
                "clock_hz",
                format!("must be from {:e} to {:e} Hz (got {:e})", CLOCK_HZ_RANGE.0, CLOCK_HZ_RANGE.1, h.clock_hz),
            );
        }
        if !(20..=63).contains(&h.address_bits) {
            return err("address_bits", format!("must be in 20..=63 (got {})", h.address_bits));
        }
        pow2("page_bytes", h.page_bytes)?;
        at_least("page_bytes", h.page_bytes, 4096)?;
        // TLB
        at_least("tlb.entries", h.tlb.entries as u64, 1)?;
        at_most("tlb.entries", h.tlb.entries as u64, MAX_TLB_ENTRIES)?;
        time("tlb.miss_ns", h.tlb.miss_ns)?;
        if h.tlb.replacement == Replacement::Rrip {
            return err("tlb.replacement", "\"rrip\" is for caches; use \"lru\" or \"fifo\"");
        }
        // L1
        at_least("l1.ways", h.l1.ways as u64, 1)?;
        if h.l1.ways > 64 {
            return err("l1.ways", format!("at most 64 supported (got {})", h.l1.ways));
        }
        pow2("l1.sets", h.l1.sets as u64)?;
        at_most("l1.sets", h.l1.sets as u64, MAX_L1_SETS)?;
        pow2("l1.sector_bytes", h.l1.sector_bytes as u64)?;
        pow2("l1.line_bytes", h.l1.line_bytes as u64)?;
        line_sectors("l1", h.l1.line_bytes, h.l1.sector_bytes)?;
        if !h.l1.index_masks.is_empty() || h.l1.sets == 1 {
            let ms: Vec<u64> = h.l1.index_masks.iter().map(|m| m.0).collect();
            masks("l1.index_masks", &ms, h.l1.sets.trailing_zeros(), "sets", h.l1.line_bytes, h.address_bits)?;
        }
        time("l1.hit_ns", h.l1.hit_ns)?;
        // L2
        at_least("l2.slices", h.l2.slices as u64, 1)?;
        at_least("l2.ways", h.l2.ways as u64, 1)?;
        if h.l2.ways > 64 {
            return err("l2.ways", format!("at most 64 supported (got {})", h.l2.ways));
        }
        at_least("l2.sets_per_slice", h.l2.sets_per_slice as u64, 1)?;
        at_most("l2.slices", h.l2.slices as u64, MAX_L2_SLICES)?;
        // (the product in u64: two u32 fields of 2^16 each would wrap a u32 to 0)
        let l2_sets = h.l2.slices as u64 * h.l2.sets_per_slice as u64;
        if l2_sets > MAX_L2_SETS {
            return err(
                "l2.sets_per_slice",
                format!(
                    "l2.slices x l2.sets_per_slice = {} x {} = {l2_sets} sets, at most {MAX_L2_SETS} supported",
                    h.l2.slices, h.l2.sets_per_slice
                ),
            );
        }
        pow2("l2.sector_bytes", h.l2.sector_bytes as u64)?;
        pow2("l2.line_bytes", h.l2.line_bytes as u64)?;
        line_sectors("l2", h.l2.line_bytes, h.l2.sector_bytes)?;
        match &h.l2.slice_function {
            HashFunction::Named(n) => {
                let want = match n.as_str() {
                    "rtx4090" => 36,
                    "l40s" => 48,
                    _ => {
                        return err(
                            "l2.slice_function",
                            format!("{n:?} is not a slice function (rtx4090, l40s or {{\"masks\": [...]}})"),
                        )
                    }
                };
                if h.l2.slices != want {
                    return err(
                        "l2.slices",
                        format!("the {n:?} slice function has {want} slices (got {})", h.l2.slices),
                    );
                }
                if h.l2.line_bytes != 128 {
                    return err("l2.line_bytes", format!("the {n:?} slice function assumes 128-byte lines"));
                }
            }
            HashFunction::Modular { divisor_bytes, modulo } => {
                modular("l2.slice_function", *divisor_bytes, *modulo, h.l2.slices, "l2.slices", h.l2.line_bytes)?;
            }
            HashFunction::Residue { residue } => residue_slices(h, residue)?,
            HashFunction::Masks { masks: ms } => {
                pow2("l2.slices", h.l2.slices as u64)?;
                let ms: Vec<u64> =
                    if ms.is_empty() { mask_bits(&h.l2_slice_function()) } else { ms.iter().map(|m| m.0).collect() };
                masks(
                    "l2.slice_function.masks",
                    &ms,
                    h.l2.slices.trailing_zeros(),
                    "slices",
                    h.l2.line_bytes,
                    h.address_bits,
                )?;
            }
        }
        match &h.l2.set_function {
            HashFunction::Named(n) => {
                if !matches!(n.as_str(), "rtx4090" | "l40s") {
                    return err(
                        "l2.set_function",
                        format!("{n:?} is not a set function (rtx4090, l40s or {{\"masks\": [...]}})"),
                    );
                }
                if h.l2.sets_per_slice != 1024 {
                    return err(
                        "l2.sets_per_slice",
                        format!("the {n:?} set function has 1024 sets (got {})", h.l2.sets_per_slice),
                    );
                }
            }
            HashFunction::Residue { .. } => {
                return err("l2.set_function", "a residue is a slice function (use masks or a modular set function)")
            }
            HashFunction::Modular { divisor_bytes, modulo } => {
                let (d, m, n) = (*divisor_bytes, *modulo, h.l2.sets_per_slice);
                modular("l2.set_function", d, m, n, "l2.sets_per_slice", h.l2.line_bytes)?;
            }
            HashFunction::Masks { masks: ms } => {
                pow2("l2.sets_per_slice", h.l2.sets_per_slice as u64)?;
                let ms: Vec<u64> =
                    if ms.is_empty() { mask_bits(&h.l2_set_function()) } else { ms.iter().map(|m| m.0).collect() };
                masks(
                    "l2.set_function.masks",
                    &ms,
                    h.l2.sets_per_slice.trailing_zeros(),
                    "sets_per_slice",
                    h.l2.line_bytes,
                    h.address_bits,
                )?;
            }
        }
        time("l2.hit_ns", h.l2.hit_ns)?;
        if let Some(f) = h.l2.far_hit_ns {
            time("l2.far_hit_ns", f)?;
        }
        at_least("l2.partitions", h.l2.partitions as u64, 1)?;
        if let Some(w) = h.l2.far_copy_ways {
            at_least("l2.far_copy_ways", w as u64, 1)?;
            if w > h.l2.ways {
                return err("l2.far_copy_ways", format!("must be at most l2.ways ({}) (got {w})", h.l2.ways));
            }
        }
        if !h.l2.slices.is_multiple_of(h.l2.partitions) || !h.sm.count.is_multiple_of(h.l2.partitions) {
            return err(
                "l2.partitions",
                format!("must divide l2.slices ({}) and sm.count ({})", h.l2.slices, h.sm.count),
            );
        }
        if !(h.l2.slice_bytes_per_ns.is_finite() && h.l2.slice_bytes_per_ns > 0.0) {
            return err("l2.slice_bytes_per_ns", format!("must be > 0 (got {})", h.l2.slice_bytes_per_ns));
        }
        if h.l2.dirty_clean_threshold.is_some_and(|t| t > h.l2.ways) {
            return err("l2.dirty_clean_threshold", format!("must be at most l2.ways ({})", h.l2.ways));
        }
        if h.page_bytes < h.l1.line_bytes.max(h.l2.line_bytes) as u64 {
            return err("page_bytes", "must be at least the line size");
        }
        // DRAM
        time("dram.latency_ns", h.dram.latency_ns)?;
        pow2("dram.row_bytes", h.dram.row_bytes)?;
        at_least("dram.row_bytes", h.dram.row_bytes, 32)?;
        if h.dram.row_function == super::RowFunction::Rtx4090 && h.dram.row_bytes != 1024 {
            return err("dram.row_bytes", "the \"rtx4090\" row function has 1024-byte rows");
        }
        time("dram.refresh_stall_ns", h.dram.refresh_stall_ns)?;
        if !(0.0..1.0).contains(&h.dram.refresh_fraction) {
            return err("dram.refresh_fraction", format!("must be in [0, 1) (got {})", h.dram.refresh_fraction));
        }
        at_least("dram.controllers", h.dram.controllers as u64, 1)?;
        if h.dram.controllers > h.l2.slices {
            return err("dram.controllers", format!("at most l2.slices ({})", h.l2.slices));
        }
        at_least("dram.channels", h.dram.channels as u64, 1)?;
        at_least("dram.banks", h.dram.banks as u64, 1)?;
        let banks = h.dram.controllers as u64 * h.dram.channels as u64 * h.dram.banks as u64;
        if banks > MAX_DRAM_BANKS {
            return err(
                "dram.banks",
                format!(
                    "dram.controllers x dram.channels x dram.banks = {banks} banks, at most {MAX_DRAM_BANKS} supported"
                ),
            );
        }
        at_least("dram.capacity_bytes", h.dram.capacity_bytes, h.page_bytes)?;
        if !h.dram.capacity_bytes.is_multiple_of(h.page_bytes) {
            return err("dram.capacity_bytes", "must be a multiple of page_bytes");
        }
        if h.dram.capacity_bytes > 1u64 << h.address_bits {
            return err("dram.capacity_bytes", format!("does not fit the {}-bit address", h.address_bits));
        }
        if h.dram.capacity_bytes / h.page_bytes > 1 << 26 {
            return err("dram.capacity_bytes", "too many pages (at most 2^26; use larger page_bytes)");
        }
        time("dram.column_ns", h.dram.column_ns)?;
        time("dram.activate_ns", h.dram.activate_ns)?;
        time("dram.row_open_ns", h.dram.row_open_ns)?;
        at_least("dram.writeback_fifo_lines", h.dram.writeback_fifo_lines as u64, 1)?;
        // noise, sm
        time("noise.jitter_ns", h.noise.jitter_ns)?;
        time("noise.outlier_ns", h.noise.outlier_ns)?;
        time("noise.per_hop_record_ns", h.noise.per_hop_record_ns)?;
        time("noise.launch_ns", h.noise.launch_ns)?;
        if !(0.0..=1.0).contains(&h.noise.outlier_fraction) {
            return err("noise.outlier_fraction", format!("must be in [0, 1] (got {})", h.noise.outlier_fraction));
        }
        at_least("sm.count", h.sm.count as u64, 1)?;
        at_most("sm.count", h.sm.count as u64, MAX_SMS)?;
        at_least("sm.resident_warps", h.sm.resident_warps as u64, 1)?;
        at_most("sm.resident_warps", h.sm.resident_warps as u64, MAX_RESIDENT_WARPS)?;
        at_least("sm.block_threads", h.sm.block_threads as u64, 32)?;
        if !h.sm.block_threads.is_multiple_of(32) {
            return err("sm.block_threads", "must be a multiple of 32");
        }
        // index functions over the bits that vary
        let (bits, what) = varying_bits(h, h.l1.indexing);
        usable("l1.index_masks", &h.l1_masks(), bits, what)?;
        let (bits, what) = varying_bits(h, h.l2.indexing);
        if let HashFunction::Masks { masks: ms } = h.l2_set_function() {
            usable("l2.set_function.masks", &ms.iter().map(|m| m.0).collect::<Vec<_>>(), bits, what)?;
        }
        if let HashFunction::Masks { masks: ms } = h.l2_slice_function() {
            usable("l2.slice_function.masks", &ms.iter().map(|m| m.0).collect::<Vec<_>>(), bits, what)?;
        }
        time("sm.store_issue_ns", h.sm.store_issue_ns)?;
        if !(h.sm.port_bytes_per_cycle.is_finite() && h.sm.port_bytes_per_cycle > 0.0) {
            return err("sm.port_bytes_per_cycle", "must be > 0");
        }
        Ok(())
    }
}

fn line_sectors(level: &str, line: u32, sector: u32) -> Result<(), HierarchyError> {
    if sector > line || line / sector > 8 {
        return err(
            format!("{level}.sector_bytes"),
            format!("a {line}-byte line needs 1..=8 sectors of {sector} bytes"),
        );
    }
    Ok(())
}

fn mask_bits(f: &HashFunction) -> Vec<u64> {
    match f {
        HashFunction::Masks { masks } => masks.iter().map(|m| m.0).collect(),
        HashFunction::Named(_) | HashFunction::Modular { .. } | HashFunction::Residue { .. } => Vec::new(),
    }
}

/// A residue slice function: its own fields, its slice count equal to `l2.slices`, its partition
/// bit agreeing with `l2.partitions`, its masks within the address.
fn residue_slices(h: &Hierarchy, r: &crate::hash_residue::Residue) -> Result<(), HierarchyError> {
    r.check()
        .map_err(|e| HierarchyError { field: format!("l2.slice_function.residue.{}", e.field), message: e.why })?;
    if r.slices() != h.l2.slices as u64 {
        let how = if r.partition_mask.0 == 0 { "its modulus" } else { "2 x its modulus (a partition bit)" };
        return err(
            "l2.slices",
            format!("the residue slice function has {} slices, {how} (got {})", r.slices(), h.l2.slices),
        );
    }
    if r.partition_mask.0 != 0 && h.l2.partitions > 1 && h.l2.partitions != 2 {
        return err(
            "l2.partitions",
            format!("the residue's partition bit gives 2 partitions (got {})", h.l2.partitions),
        );
    }
    if h.address_bits < 64 && r.page_bytes > 1u64 << h.address_bits.min(63) {
        return err(
            "l2.slice_function.residue.page_bytes",
            format!("larger than the {}-bit address space", h.address_bits),
        );
    }
    Ok(())
}

/// A modular index function: `modulo` equals the count it indexes, the divisor is whole lines.
fn modular(field: &str, divisor: u64, modulo: u32, count: u32, what: &str, line: u32) -> Result<(), HierarchyError> {
    if modulo != count {
        return err(format!("{field}.modulo"), format!("must equal {what} ({count}), got {modulo}"));
    }
    if divisor == 0 || !divisor.is_multiple_of(line as u64) {
        return err(
            format!("{field}.divisor_bytes"),
            format!("must be a positive multiple of the {line}-byte line (got {divisor})"),
        );
    }
    Ok(())
}
