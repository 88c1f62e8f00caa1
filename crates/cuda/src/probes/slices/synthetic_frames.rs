//! A synthetic residue slice function with a known frame function, for the tests of
//! slice_frames.rs and slice_frame_function.rs: ten XOR terms modulo 47 over the offset, each
//! term's flip XOR-linear in the frame's bits 0-3, the partition constant parity(frame & 0x6b),
//! the constant 11 + 37 x frame (the frame entering the sum as 1024 x frame); written as the
//! simulator's residue form (memscope_sim::hash_residue), and labelled as the counters label
//! lines: one label per class of (0, z) and (1, z') seen from one partition, in a naming of the run.

use super::map_layout::MapOffsets;
use super::slice_fit::Point;
use memscope_sim::hash_residue::{FrameShare, PageShare, Residue, ResidueTerm};
use memscope_sim::hierarchy::Mask;

pub const PARTITION: u64 = 0xab000;
pub const MASKS: [u64; 10] =
    [0x0f_9000, 0x1e_0500, 0x15_6c00, 0x02_9900, 0x17_9100, 0x1a_a500, 0x1b_3800, 0x1c_6800, 0x12_5d00, 0x11_b100];
/// Frame bits 0..3 into each term's flip.
pub const FRAME_FLIPS: [u64; 10] = [0x3, 0x5, 0x9, 0x6, 0xa, 0xc, 0x1, 0x2, 0x4, 0x8];
pub const FRAME_PARTITION: u64 = 0x6b;
pub const PAGE_BYTES: u64 = 2 << 20;

/// The truth as the simulator's residue form: term k weighs 2^k, frame 0's constant is 11 and
/// each frame adds 1024 mod 47.
pub fn truth_residue() -> Residue {
    Residue {
        modulus: 47,
        terms: MASKS.iter().enumerate().map(|(k, &m)| ResidueTerm { mask: Mask(m), weight: (1 << k) % 47 }).collect(),
        partition_mask: Mask(PARTITION),
        page_bytes: PAGE_BYTES,
        share: PageShare { flips: Mask(0), constant: 11, partition: 0 },
        frame: Some(FrameShare {
            flip_masks: FRAME_FLIPS.iter().map(|&m| Mask(m)).collect(),
            partition_mask: Mask(FRAME_PARTITION),
            constant_step: 1024 % 47,
        }),
    }
}

/// The class a counter sees of slice (p, y): (0, z) and (1, z ^ 1) for z < 40, (1, z) above.
pub fn class(p: u8, y: u64) -> u64 {
    if p == 0 || y >= 40 {
        y
    } else {
        y ^ 1
    }
}

/// The label of an offset on a frame, in the naming (c * 5 + 2) mod 47 of class c.
pub fn truth(frame: u64, offset: u64) -> usize {
    let r = truth_residue();
    let (p, y) = r.slice_with(offset, &r.share_at(frame * PAGE_BYTES));
    ((class(p, y) * 5 + 2) % 47) as usize
}

/// `n` pages from frame `first` on, the offsets of `spec` (seed 9) in each.
pub fn pages(first: u64, n: u64, spec: &str) -> Vec<Point> {
    let offs = MapOffsets::parse(spec).unwrap().offsets(9);
    (0..n)
        .flat_map(|page| {
            offs.iter().map(move |&o| Point { page: page as usize, offset: o, label: truth(first + page, o) })
        })
        .collect()
}
