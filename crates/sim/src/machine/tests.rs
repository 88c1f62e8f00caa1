//! Tests of `machine`: sector masks and the DRAM traffic of a sector mask.

use super::*;

#[test]
fn sector_masks_cover_the_bytes() {
    for shift in [3, 4, 5, 6] {
        let line = 8u64 << shift; // eight sectors
        for off in 0..line {
            for len in 1..=line - off {
                let want = (0..8u32).filter(|&k| {
                    let (s, e) = ((k as u64) << shift, ((k as u64) + 1) << shift);
                    off < e && off + len > s
                });
                let want = want.fold(0u8, |m, k| m | 1 << k);
                assert_eq!(sector_mask(off, len, shift), want, "off {off} len {len} shift {shift}");
            }
        }
    }
}

/// A DRAM read of a sector mask moves (set sectors) / (sectors a line) lines, for lines of 2,
/// 4 (the seed's) and 8 sectors.
#[test]
fn dram_reads_move_the_missing_sectors_share_of_a_line() {
    for (line, sector) in [(128u32, 64u32), (128, 32), (256, 32)] {
        let mut h = crate::presets::rtx4090();
        (h.l2.line_bytes, h.l2.sector_bytes) = (line, sector);
        let m = Machine::new(h);
        let per_line = (line / sector) as f64;
        for missing in 0..=u8::MAX >> (8 - line / sector) {
            assert_eq!(m.lines_of(missing), missing.count_ones() as f64 / per_line, "{line}/{sector}: {missing:#b}");
        }
    }
}
