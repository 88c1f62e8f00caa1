//! Built-in hierarchies: `rtx4090` carries every figure seeds 000/001/004 give for the RTX 4090;
//! `l40s` is the same die with 48 slices (seed 000's `slice_of(a, 48)`). Figures the seeds do not
//! give are marked "assumption" here and in `memscope sim dump`'s name.

use crate::hierarchy::*;

/// Names of the built-in presets.
pub const PRESETS: &[&str] = &["rtx4090", "l40s"];

/// The RTX 4090 L1 index masks. ASSUMPTION: seed 000's mask table did not survive ("one basis for
/// those subsets is:" is followed by nothing), so this is a plausible 8-mask XOR function of the
/// kind footnote 4 describes: index bit i is address bit 7+i folded with bits 15+i and 23+i (and
/// 31, 32 into bits 0, 1), so power-of-two strides up to 4 GiB spread over the sets.
pub fn rtx4090_l1_masks() -> Vec<Mask> {
    (0..8u32)
        .map(|i| {
            let mut m = (1u64 << (7 + i)) | (1u64 << (15 + i)) | (1u64 << (23 + i));
            if i < 2 {
                m |= 1u64 << (31 + i);
            }
            Mask(m)
        })
        .collect()
}

/// The seeds' RTX 4090.
pub fn rtx4090() -> Hierarchy {
    Hierarchy {
        name: "simulated RTX 4090 (seeds 000/001/004; L1 masks assumed)".into(),
        clock_hz: 2.6e9,
        page_bytes: 2 << 20,
        address_bits: 40,
        seed: 1,
        tlb: TlbSpec { entries: 16, miss_ns: 4.4, replacement: Replacement::Lru },
        l1: L1Spec {
            ways: 4,
            sets: 256,
            line_bytes: 128,
            sector_bytes: 32,
            index_masks: rtx4090_l1_masks(),
            indexing: Indexing::Virtual,
            replacement: Replacement::Lru,
            hit_ns: 15.4,
        },
        l2: L2Spec {
            slices: 36,
            ways: 16,
            sets_per_slice: 1024,
            line_bytes: 128,
            sector_bytes: 32,
            slice_function: HashFunction::Named("rtx4090".into()),
            set_function: HashFunction::Named("rtx4090".into()),
            indexing: Indexing::Physical,
            replacement: Replacement::Rrip,
            hit_ns: 127.4,
            far_hit_ns: None,
            far_copy_ways: None,
            driver_reported_bytes: None,
            partitions: 1,
            slice_bytes_per_ns: 166.4,
            dirty_clean_threshold: Some(8),
        },
        dram: DramSpec {
            latency_ns: 255.4,
            row_bytes: 1024,
            refresh_stall_ns: 210.0,
            refresh_fraction: 0.02,
            controllers: 12,
            channels: 2,
            banks: 16,
            capacity_bytes: 24 << 30,
            row_function: RowFunction::Rtx4090,
            column_ns: 3.4,
            activate_ns: 47.6,
            row_open_ns: 30.0,
            writeback_fifo_lines: 64,
        },
        noise: NoiseSpec::default(),
        sm: SmSpec {
            count: 128,
            resident_warps: 48,
            block_threads: 256,
            store_issue_ns: 2.3,
            port_bytes_per_cycle: 32.0,
        },
        provenance: None,
        links: None,
    }
}

/// The L40S: the 4090's die with all four slices per controller (48 slices, 96 MiB L2), 142 SMs
/// and 48 GiB. ASSUMPTION: latencies, TLB and L1 as measured on the 4090 (the seeds give none for
/// the L40S); its clock is taken as 2.52 GHz (boost).
pub fn l40s() -> Hierarchy {
    let mut h = rtx4090();
    h.name = "simulated L40S (seed 000 slice_of(a, 48); 4090 latencies assumed)".into();
    h.clock_hz = 2.52e9;
    h.l2.slices = 48;
    h.l2.slice_function = HashFunction::Named("l40s".into());
    h.l2.set_function = HashFunction::Named("l40s".into());
    h.dram.capacity_bytes = 48 << 30;
    h.sm.count = 142;
    h
}

/// A preset by name.
pub fn preset(name: &str) -> Option<Hierarchy> {
    match name {
        "rtx4090" => Some(rtx4090()),
        "l40s" => Some(l40s()),
        _ => None,
    }
}
