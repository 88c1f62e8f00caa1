//! The simulator's host-memory budget: an upper estimate of the bytes a `Machine` for a hierarchy
//! can hold (L2 blocks, every SM's L1 and TLB, DRAM banks, the page allocator, per-slice
//! counters), computed in checked u64 arithmetic before anything is allocated, so a hierarchy
//! that validates but cannot fit (a 1 TiB L2, 2^31 L1 sets x 64 ways) is refused with the
//! estimate instead of aborting on a failed allocation.

use crate::cache::set::stride_words;
use crate::hierarchy::Hierarchy;

/// Default budget: 1 GiB of simulator state. By this estimate the presets need 80 MiB (rtx4090)
/// and 84 MiB (l40s), 64 MiB of it the fixed allowance; measured, `sim chase` and `sim vadd` on
/// them peak at 16-25 MiB resident (GNU time, max RSS, on the dev VM).
pub const DEFAULT_BUDGET_BYTES: u64 = 1 << 30;

/// Fixed part: index tables, the presplit tables, the dense page window, event queues, slack.
const FIXED_BYTES: u64 = 64 << 20;

/// Bytes of one cache of `sets` x `ways`: the set blocks, the touched bits, and the 64-bit tag
/// table it switches to when a line address exceeds 32 bits.
fn cache_bytes(sets: u64, ways: u64) -> Option<u64> {
    let w = ways as usize;
    let stride = stride_words(w.next_multiple_of(4), w.div_ceil(16)) as u64;
    let blocks = sets.checked_mul(stride)?.checked_mul(4)?;
    let wide = sets.checked_mul(ways)?.checked_mul(8)?;
    blocks.checked_add(wide)?.checked_add(sets.div_ceil(64) * 8)
}

/// Bytes of one TLB of `entries` (the small form is a fixed ~1.7 KiB; the large one keeps slot
/// arrays and a page map).
fn tlb_bytes(entries: u64) -> Option<u64> {
    if entries <= 64 {
        Some(2048)
    } else {
        entries.checked_mul(64)
    }
}

/// Upper estimate of the simulator state for `h` in bytes; `None` if it does not fit in u64.
/// `h` should be validated (fields in range); the arithmetic is checked either way.
pub fn estimate_bytes(h: &Hierarchy) -> Option<u64> {
    let l2_sets = (h.l2.slices as u64).checked_mul(h.l2.sets_per_slice as u64)?;
    let l2 = cache_bytes(l2_sets, h.l2.ways as u64)?;
    let per_sm = cache_bytes(h.l1.sets as u64, h.l1.ways as u64)?.checked_add(tlb_bytes(h.tlb.entries as u64)?)?;
    // (every SM's state, its slot, and kernel replay's per-SM and per-block-slot arrays)
    let sm_fixed = 64 + 4 * h.sm.resident_warps as u64;
    let sms = (h.sm.count as u64).checked_mul(per_sm.checked_add(sm_fixed)?)?;
    let banks = (h.dram.controllers as u64).checked_mul(h.dram.channels as u64)?.checked_mul(h.dram.banks as u64)?;
    let dram = banks.checked_mul(64)?;
    let fifos = (h.dram.controllers as u64).checked_mul(2048 + 8 * h.dram.writeback_fifo_lines as u64)?;
    let pages = h.dram.capacity_bytes.checked_div(h.page_bytes)?;
    let page_allocator = pages.checked_mul(8)?;
    let slices = (h.l2.slices as u64).checked_mul(32)?;
    [l2, sms, dram, fifos, page_allocator, slices].iter().try_fold(FIXED_BYTES, |a, &b| a.checked_add(b))
}

/// Check `h` against `budget_bytes`; the error gives the estimate and the largest parts.
pub fn check(h: &Hierarchy, budget_bytes: u64) -> Result<u64, String> {
    match estimate_bytes(h) {
        Some(b) if b <= budget_bytes => Ok(b),
        est => {
            let l2_sets = h.l2.slices as u64 * h.l2.sets_per_slice as u64;
            let what = match est {
                Some(b) => format!("needs an estimated {} MiB of host memory", b.div_ceil(1 << 20)),
                None => "needs more host memory than 2^64 bytes".to_string(),
            };
            Err(format!(
                "the simulated hierarchy {what}, over the simulator's budget of {} MiB \
                 (l2: {l2_sets} sets x {} ways; l1: {} sets x {} ways on each of sm.count = {} SMs; \
                 tlb.entries = {}; {} DRAM pages)",
                budget_bytes >> 20,
                h.l2.ways,
                h.l1.sets,
                h.l1.ways,
                h.sm.count,
                h.tlb.entries,
                h.dram.capacity_bytes / h.page_bytes.max(1),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_fit_the_default_budget() {
        for name in crate::presets::PRESETS {
            let h = crate::presets::preset(name).unwrap();
            let b = estimate_bytes(&h).unwrap();
            assert!(b < 128 << 20, "{name}: {b} bytes");
            assert!(check(&h, DEFAULT_BUDGET_BYTES).is_ok());
        }
    }

    #[test]
    fn a_huge_l2_is_refused_with_the_estimate() {
        let mut h = crate::presets::rtx4090();
        // 1 TiB L2: 2^33 lines of 128 B, 16 ways, 2^29 sets
        h.l2.set_function = crate::hierarchy::HashFunction::plain_bits(7, 24);
        h.l2.sets_per_slice = 1 << 24;
        h.l2.slice_function = crate::hierarchy::HashFunction::plain_bits(31, 5);
        h.l2.slices = 32;
        let e = check(&h, DEFAULT_BUDGET_BYTES).unwrap_err();
        assert!(e.contains("MiB of host memory") && e.contains("536870912 sets"), "{e}");
    }

    #[test]
    fn many_sms_with_large_tlbs_are_refused() {
        let mut h = crate::presets::rtx4090();
        h.sm.count = 1 << 16;
        h.tlb.entries = 1 << 24;
        assert!(estimate_bytes(&h).unwrap() > DEFAULT_BUDGET_BYTES);
        assert!(check(&h, DEFAULT_BUDGET_BYTES).unwrap_err().contains("tlb.entries = 16777216"));
    }

    /// Through `SimTarget::new` (docs/GUIDE.md, "Errors and bounds"): each hierarchy that used to panic or
    /// abort in the constructor is refused with the field or the estimate named.
    #[test]
    fn hostile_hierarchies_are_refused_before_allocation() {
        use crate::hierarchy::HashFunction;
        type Edit = Box<dyn Fn(&mut Hierarchy)>;
        let cases: Vec<(Edit, &str)> = vec![
            (
                Box::new(|h| {
                    // 65536 x 65536 sets wrapped a u32 product to 0
                    h.l2.slices = 1 << 16;
                    h.l2.sets_per_slice = 1 << 16;
                    h.l2.slice_function = HashFunction::plain_bits(23, 16);
                    h.l2.set_function = HashFunction::plain_bits(7, 16);
                    h.dram.controllers = 1;
                }),
                "l2.sets_per_slice: l2.slices x l2.sets_per_slice = 65536 x 65536",
            ),
            (Box::new(|h| h.sm.count = u32::MAX), "sm.count: at most 65536"),
            (Box::new(|h| h.tlb.entries = u32::MAX), "tlb.entries: at most 16777216"),
            (
                Box::new(|h| {
                    h.l1.sets = 1 << 31;
                    h.l1.ways = 64;
                    h.l1.index_masks.clear();
                }),
                "l1.sets: at most 16777216",
            ),
            (
                Box::new(|h| {
                    h.l1.sets = 1 << 24;
                    h.l1.ways = 64;
                    h.l1.index_masks.clear();
                }),
                "MiB of host memory",
            ),
        ];
        for (f, want) in cases {
            let mut h = crate::presets::rtx4090();
            f(&mut h);
            let e = crate::SimTarget::new(h).err().expect("refused").to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
