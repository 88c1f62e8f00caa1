//! The H200's L2 slice of a line within its 2 MiB page, as memscope measured it (docs/L2_SLICES.md,
//! "A residue modulo 47 fits"; results/h200/l2-slices-function): the partition bit and a residue
//! modulo 47 of ten XOR parities of the offset, seed 000's family (XOR parities and a modular digit)
//! with the page frame's share as parameters. memscope reads no page table, so the share is learned
//! per page from its labelled lines (the `l2.slices.function` finding's note gives it).

/// Offset bits whose parity is the partition bit (before the page's constant).
pub const H200_PARTITION_MASK: u64 = 0xab000;
/// The residue's modulus: 47 slices per partition.
pub const H200_SLICE_MODULUS: u64 = 47;
/// Term k adds 2^k when parity(offset & mask_k) XOR flip_k is 1.
pub const H200_RESIDUE_MASKS: [u64; 10] =
    [0x192800, 0xf4000, 0x1da400, 0x151100, 0xf2400, 0x64800, 0x20000, 0x40000, 0x80000, 0x100000];
/// Bytes of the page the offset is taken in.
pub const H200_PAGE_BYTES: u64 = 2 << 20;

/// A page frame's share of the function: which terms are complemented (bit k: term k), the
/// constant added to the sum, and the partition bit's constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageShare {
    pub flips: u64,
    pub constant: u64,
    pub partition: u8,
}

impl PageShare {
    /// Parse "FLIPS:CONSTANT:PARTITION" (flips hex with 0x or decimal, constant 0..46, partition 0
    /// or 1), as the finding's note prints them ("flips 0x3e4, c 38, p 0" is "0x3e4:38:0").
    pub fn parse(text: &str) -> Option<PageShare> {
        let mut it = text.split(':');
        let (f, c, p) = (it.next()?, it.next()?, it.next()?);
        if it.next().is_some() {
            return None;
        }
        let flips = match f.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok()?,
            None => f.parse().ok()?,
        };
        let constant: u64 = c.parse().ok()?;
        let partition: u8 = p.parse().ok()?;
        (flips < 1 << H200_RESIDUE_MASKS.len() && constant < H200_SLICE_MODULUS && partition < 2).then_some(PageShare {
            flips,
            constant,
            partition,
        })
    }
}

/// (partition bit, residue) of the line at `address` (its offset in its 2 MiB page) on a page
/// whose share is `share`.
pub fn h200_slice(address: u64, share: &PageShare) -> (u8, u64) {
    let offset = address % H200_PAGE_BYTES;
    let parity = |x: u64| (x.count_ones() & 1) as u64;
    let sum = H200_RESIDUE_MASKS
        .iter()
        .enumerate()
        .filter(|(k, &m)| parity(offset & m) ^ (share.flips >> k & 1) == 1)
        .fold(0, |acc, (k, _)| (acc + (1u64 << k)) % H200_SLICE_MODULUS);
    ((parity(offset & H200_PARTITION_MASK) as u8) ^ share.partition, (sum + share.constant) % H200_SLICE_MODULUS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_parse_or_are_refused() {
        assert_eq!(PageShare::parse("0x3e4:38:0"), Some(PageShare { flips: 0x3e4, constant: 38, partition: 0 }));
        assert_eq!(PageShare::parse("5:0:1"), Some(PageShare { flips: 5, constant: 0, partition: 1 }));
        for bad in ["", "0x3e4:38", "0x3e4:47:0", "0x3e4:38:2", "0x400:1:0", "x:1:0", "1:2:0:4"] {
            assert_eq!(PageShare::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_known_symmetries_hold_and_bits_7_and_9_do_not_matter() {
        // 0x14d00 lies in the kernel of every mask and of the partition mask; 0x1100 flips only
        // the partition bit; bits 7 and 9 are in no mask.
        let share = PageShare { flips: 0x3e4, constant: 38, partition: 0 };
        for o in (0..H200_PAGE_BYTES).step_by(0x100) {
            let s = h200_slice(o, &share);
            assert_eq!(h200_slice(o ^ 0x14d00, &share), s);
            assert_eq!(h200_slice(o ^ 0x280, &share), s);
            assert_eq!(h200_slice(o ^ 0x1100, &share), (s.0 ^ 1, s.1));
        }
    }
}
