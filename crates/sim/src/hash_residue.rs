//! A residue slice function (docs/L2_SLICES.md, "A residue modulo 47 fits"; the form memscope
//! measured on the H200, hash_h200.rs): within a page, a slice is (P, y) with
//! P = parity(offset & partition_mask) XOR p and y = (sum of weight_t over the terms t whose
//! parity(offset & mask_t) XOR flip_t is 1, + c) mod M, seed 000's family (XOR parities and a
//! modular digit) generalised. The page frame's share (the flips, c and p) is one share for
//! every frame, or a function of the frame number when `frame` is given. The slice index is
//! P * M + y. The serde types are the simulated-hierarchy JSON's `{"residue": {...}}` form
//! (docs/CONTRACTS.md).

use crate::hierarchy::Mask;
use serde::{Deserialize, Serialize};

/// One term of the sum: `weight` (mod M) when parity(offset & mask) XOR the term's flip is 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResidueTerm {
    pub mask: Mask,
    pub weight: u64,
}

/// A page frame's share: which terms are complemented (bit t: term t), the constant added to the
/// sum, and the partition bit's constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PageShare {
    pub flips: Mask,
    pub constant: u64,
    pub partition: u8,
}

impl PageShare {
    /// Parse "FLIPS:CONSTANT:PARTITION" (flips hex with 0x or decimal), as `memscope hash slice
    /// --page-share` takes it; None when malformed. Ranges are checked by `Residue::check_share`.
    pub fn parse(text: &str) -> Option<PageShare> {
        let mut it = text.split(':');
        let (f, c, p) = (it.next()?, it.next()?, it.next()?);
        if it.next().is_some() {
            return None;
        }
        Some(PageShare {
            flips: Mask(crate::hierarchy::parse_u64(f)?),
            constant: c.trim().parse().ok()?,
            partition: p.trim().parse().ok()?,
        })
    }
}

/// The share as a function of the frame number f = address / page_bytes: flip t is
/// parity(f & flip_masks[t]) XOR the share's flip t, the partition constant
/// parity(f & partition_mask) XOR the share's, the constant share.constant + constant_step * f
/// (mod M).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FrameShare {
    pub flip_masks: Vec<Mask>,
    pub partition_mask: Mask,
    pub constant_step: u64,
}

/// The whole function.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Residue {
    /// M: slices per partition.
    pub modulus: u64,
    pub terms: Vec<ResidueTerm>,
    /// The partition bit's offset mask; 0: one partition (the index is y alone).
    #[serde(default)]
    pub partition_mask: Mask,
    /// Bytes of the page the offset is taken in (a power of two; default 2 MiB).
    #[serde(default = "default_page_bytes")]
    pub page_bytes: u64,
    /// Every frame's share, or frame 0's when `frame` is given.
    #[serde(default)]
    pub share: PageShare,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<FrameShare>,
}

fn default_page_bytes() -> u64 {
    2 << 20
}

/// Most terms a residue function may have (the share's flips are one bit per term).
pub const MAX_TERMS: usize = 32;

/// What is wrong with a residue function: the field (under `{"residue": ...}`) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResidueError {
    pub field: String,
    pub why: String,
}

fn bad(field: &str, why: impl Into<String>) -> Result<(), ResidueError> {
    Err(ResidueError { field: field.into(), why: why.into() })
}

#[inline(always)]
fn parity(x: u64) -> u64 {
    (x.count_ones() & 1) as u64
}

impl Residue {
    /// Slices it indexes: 2M with a partition bit, else M.
    pub fn slices(&self) -> u64 {
        if self.partition_mask.0 == 0 {
            self.modulus
        } else {
            2 * self.modulus
        }
    }

    /// The checks every field passes; errors name the field.
    pub fn check(&self) -> Result<(), ResidueError> {
        if self.modulus < 1 || self.modulus > 1 << 16 {
            return bad("modulus", format!("must be 1..=65536 (got {})", self.modulus));
        }
        if self.terms.is_empty() || self.terms.len() > MAX_TERMS {
            return bad("terms", format!("1 to {MAX_TERMS} terms (got {})", self.terms.len()));
        }
        if !self.page_bytes.is_power_of_two() || self.page_bytes < 256 {
            return bad("page_bytes", format!("must be a power of two of at least 256 (got {})", self.page_bytes));
        }
        let inside = self.page_bytes - 1;
        for (t, term) in self.terms.iter().enumerate() {
            if term.mask.0 == 0 || term.mask.0 & !inside != 0 {
                return bad(
                    &format!("terms[{t}].mask"),
                    format!("must be nonzero bits of the offset below {:#x}", self.page_bytes),
                );
            }
            if term.weight >= self.modulus {
                return bad(
                    &format!("terms[{t}].weight"),
                    format!("must be below the modulus {} (got {})", self.modulus, term.weight),
                );
            }
        }
        if self.partition_mask.0 & !inside != 0 {
            return bad("partition_mask", format!("must be bits of the offset below {:#x}", self.page_bytes));
        }
        self.check_share(&self.share).map_err(|e| ResidueError { field: format!("share.{}", e.field), why: e.why })?;
        if let Some(f) = &self.frame {
            if f.flip_masks.len() != self.terms.len() {
                return bad(
                    "frame.flip_masks",
                    format!("one mask per term ({} terms, got {})", self.terms.len(), f.flip_masks.len()),
                );
            }
            if f.constant_step >= self.modulus {
                return bad("frame.constant_step", format!("must be below the modulus {}", self.modulus));
            }
            if self.partition_mask.0 == 0 && f.partition_mask.0 != 0 {
                return bad("frame.partition_mask", "no partition bit (partition_mask is 0)");
            }
        }
        Ok(())
    }

    /// A share fits this function: flips over its terms, constant below M, partition 0 or 1
    /// (0 without a partition bit). The error's field is the share's (`flips`, `constant`,
    /// `partition`).
    pub fn check_share(&self, s: &PageShare) -> Result<(), ResidueError> {
        if self.terms.len() < 64 && s.flips.0 >> self.terms.len() != 0 {
            return bad("flips", format!("{:#x} has bits beyond the {} terms", s.flips.0, self.terms.len()));
        }
        if s.constant >= self.modulus {
            return bad("constant", format!("must be below the modulus {} (got {})", self.modulus, s.constant));
        }
        if s.partition > 1 || (self.partition_mask.0 == 0 && s.partition != 0) {
            return bad("partition", format!("must be 0 or 1, and 0 without a partition bit (got {})", s.partition));
        }
        Ok(())
    }

    /// The share of the frame holding `address`.
    pub fn share_at(&self, address: u64) -> PageShare {
        let Some(f) = &self.frame else { return self.share };
        let frame = address / self.page_bytes;
        let flips =
            f.flip_masks.iter().enumerate().fold(self.share.flips.0, |acc, (t, m)| acc ^ (parity(frame & m.0) << t));
        let step = (f.constant_step as u128 * frame as u128 % self.modulus as u128) as u64;
        PageShare {
            flips: Mask(flips),
            constant: (self.share.constant + step) % self.modulus,
            partition: self.share.partition ^ parity(frame & f.partition_mask.0) as u8,
        }
    }

    /// (partition bit, residue) of `address` under `share`.
    #[inline]
    pub fn slice_with(&self, address: u64, share: &PageShare) -> (u8, u64) {
        let offset = address & (self.page_bytes - 1);
        let sum = self
            .terms
            .iter()
            .enumerate()
            .filter(|(t, term)| parity(offset & term.mask.0) ^ (share.flips.0 >> t & 1) == 1)
            .fold(share.constant, |acc, (_, term)| (acc + term.weight) % self.modulus);
        ((parity(offset & self.partition_mask.0) as u8) ^ share.partition, sum)
    }

    /// The slice index P * M + y of `address` (its frame's share).
    #[inline]
    pub fn slice_index(&self, address: u64) -> u32 {
        let (p, y) = self.slice_with(address, &self.share_at(address));
        (p as u64 * self.modulus + y) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Residue {
        Residue {
            modulus: 3,
            terms: vec![ResidueTerm { mask: Mask(0x100), weight: 1 }, ResidueTerm { mask: Mask(0x200), weight: 2 }],
            partition_mask: Mask(0x400),
            page_bytes: 0x1000,
            share: PageShare::default(),
            frame: None,
        }
    }

    #[test]
    fn a_small_function_gives_the_sums_by_hand() {
        let r = small();
        r.check().unwrap();
        // offset bits 8, 9 -> 0, 1, 2, 0 (1 + 2 = 3 = 0 mod 3); bit 10 -> the second partition
        let want = [0, 1, 2, 0, 3, 4, 5, 3];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(r.slice_index((i as u64) << 8), *w, "offset {:#x}", i << 8);
        }
        // the share flips term 0 and adds 1
        let s = PageShare { flips: Mask(1), constant: 1, partition: 1 };
        assert_eq!(r.slice_with(0, &s), (1, 2));
        // the offset is taken within the page
        assert_eq!(r.slice_index(0x5100), r.slice_index(0x100));
    }

    #[test]
    fn the_frame_function_changes_the_share_with_the_frame() {
        let mut r = small();
        r.frame = Some(FrameShare { flip_masks: vec![Mask(1), Mask(0)], partition_mask: Mask(2), constant_step: 1 });
        r.check().unwrap();
        assert_eq!(r.share_at(0x0fff), r.share);
        assert_eq!(r.share_at(0x1000), PageShare { flips: Mask(1), constant: 1, partition: 0 });
        assert_eq!(r.share_at(0x2000), PageShare { flips: Mask(0), constant: 2, partition: 1 });
        assert_eq!(r.share_at(0x3000), PageShare { flips: Mask(1), constant: 0, partition: 1 });
    }

    #[test]
    fn bad_fields_are_named() {
        let field = |f: &dyn Fn(&mut Residue)| {
            let mut r = small();
            f(&mut r);
            r.check().unwrap_err().field
        };
        assert_eq!(field(&|r| r.modulus = 0), "modulus");
        assert_eq!(field(&|r| r.terms.clear()), "terms");
        assert_eq!(field(&|r| r.page_bytes = 3000), "page_bytes");
        assert_eq!(field(&|r| r.terms[1].mask = Mask(0x1000)), "terms[1].mask");
        assert_eq!(field(&|r| r.terms[0].weight = 3), "terms[0].weight");
        assert_eq!(field(&|r| r.partition_mask = Mask(0x2000)), "partition_mask");
        assert_eq!(field(&|r| r.share.flips = Mask(4)), "share.flips");
        assert_eq!(field(&|r| r.share.constant = 3), "share.constant");
        assert_eq!(field(&|r| r.share.partition = 2), "share.partition");
        assert_eq!(field(&|r| r.frame = Some(FrameShare::default())), "frame.flip_masks");
    }

    #[test]
    fn shares_parse() {
        assert_eq!(PageShare::parse("0x3e4:38:0"), Some(PageShare { flips: Mask(0x3e4), constant: 38, partition: 0 }));
        assert_eq!(PageShare::parse("5:0:1"), Some(PageShare { flips: Mask(5), constant: 0, partition: 1 }));
        for bad in ["", "0x3e4:38", "x:1:0", "1:2:0:4", "1:-1:0"] {
            assert_eq!(PageShare::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_json_form_round_trips() {
        let mut r = small();
        r.frame = Some(FrameShare { flip_masks: vec![Mask(1), Mask(4)], partition_mask: Mask(0), constant_step: 2 });
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"mask\":\"0x100\""), "{text}");
        assert_eq!(serde_json::from_str::<Residue>(&text).unwrap(), r);
        let bare: Residue =
            serde_json::from_str(r#"{"modulus": 3, "terms": [{"mask": "0x100", "weight": 1}]}"#).unwrap();
        assert_eq!((bare.page_bytes, bare.partition_mask, bare.share), (2 << 20, Mask(0), PageShare::default()));
    }
}
