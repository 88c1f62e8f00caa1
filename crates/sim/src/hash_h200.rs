//! The H200's L2 slice of a line within its 2 MiB page, as memscope measured it (docs/L2_SLICES.md,
//! "A residue modulo 47 fits"; results/h200/l2-slices-function): the partition bit and a residue
//! modulo 47 of ten XOR parities of the offset, seed 000's family (XOR parities and a modular digit)
//! with the page frame's share as parameters. memscope reads no page table, so the share is learned
//! per page from its labelled lines (the `l2.slices.function` finding gives it). The general form,
//! with the frame's share as a function of the frame number, is hash_residue.rs.

use crate::hash_residue::{PageShare, Residue, ResidueTerm};
use crate::hierarchy::Mask;

/// Offset bits whose parity is the partition bit (before the page's constant).
pub const H200_PARTITION_MASK: u64 = 0xab000;
/// The residue's modulus: 47 slices per partition.
pub const H200_SLICE_MODULUS: u64 = 47;
/// Term k adds 2^k when parity(offset & mask_k) XOR flip_k is 1.
pub const H200_RESIDUE_MASKS: [u64; 10] =
    [0x192800, 0xf4000, 0x1da400, 0x151100, 0xf2400, 0x64800, 0x20000, 0x40000, 0x80000, 0x100000];
/// Bytes of the page the offset is taken in.
pub const H200_PAGE_BYTES: u64 = 2 << 20;

/// The H200's function with one frame's share (term k weighs 2^k).
pub fn h200_function(share: PageShare) -> Residue {
    Residue {
        modulus: H200_SLICE_MODULUS,
        terms: H200_RESIDUE_MASKS
            .iter()
            .enumerate()
            .map(|(k, &m)| ResidueTerm { mask: Mask(m), weight: (1u64 << k) % H200_SLICE_MODULUS })
            .collect(),
        partition_mask: Mask(H200_PARTITION_MASK),
        page_bytes: H200_PAGE_BYTES,
        share,
        frame: None,
    }
}

/// Parse a share as `hash slice --page-share` takes it ("0x3e4:38:0") and check it against the
/// H200's function; None when malformed or out of range.
pub fn parse_share(text: &str) -> Option<PageShare> {
    let share = PageShare::parse(text)?;
    h200_function(share).check_share(&share).ok().map(|_| share)
}

/// (partition bit, residue) of the line at `address` (its offset in its 2 MiB page) on a page
/// whose share is `share`.
pub fn h200_slice(address: u64, share: &PageShare) -> (u8, u64) {
    h200_function(*share).slice_with(address, share)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_parse_or_are_refused() {
        assert_eq!(parse_share("0x3e4:38:0"), Some(PageShare { flips: Mask(0x3e4), constant: 38, partition: 0 }));
        assert_eq!(parse_share("5:0:1"), Some(PageShare { flips: Mask(5), constant: 0, partition: 1 }));
        for bad in ["", "0x3e4:38", "0x3e4:47:0", "0x3e4:38:2", "0x400:1:0", "x:1:0", "1:2:0:4"] {
            assert_eq!(parse_share(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_known_symmetries_hold_and_bits_7_and_9_do_not_matter() {
        // 0x14d00 lies in the kernel of every mask and of the partition mask; 0x1100 flips only
        // the partition bit; bits 7 and 9 are in no mask.
        let share = PageShare { flips: Mask(0x3e4), constant: 38, partition: 0 };
        h200_function(share).check().unwrap();
        for o in (0..H200_PAGE_BYTES).step_by(0x100) {
            let s = h200_slice(o, &share);
            assert_eq!(h200_slice(o ^ 0x14d00, &share), s);
            assert_eq!(h200_slice(o ^ 0x280, &share), s);
            assert_eq!(h200_slice(o ^ 0x1100, &share), (s.0 ^ 1, s.1));
        }
    }
}
