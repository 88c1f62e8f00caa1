//! Which offsets of each 2 MiB page the slice map of `l2.slices.function` labels
//! (`MEMSCOPE_SLICES_MAP_OFFSETS`, docs/L2_SLICES.md): random lines of the page, or grids, every line whose offset has bits only
//! in a set of address bits (all lines of a 64 KiB window: bits 7..15). Grids give the dense,
//! structured sets a fit of the slice function needs: every pair of lines whose offsets differ by
//! a vector of the grid's bits, many times over.

use super::fit::{self, LINE_BYTES};
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// Lowest and highest address bit a grid may span (a line is 128 bytes; a page 2 MiB).
pub const GRID_LOW_BIT: u32 = 7;
pub const GRID_HIGH_BIT: u32 = 20;
/// The default layout of `l2.slices.function`'s map: every line set of the page with bits 7 and
/// 9 clear (4096 lines; those two bits never change the slice on the H200).
pub const DEFAULT_SPEC: &str = "bits:8+10-20";
/// Most offsets per page (the whole page).
pub const MAX_OFFSETS: usize = 1 << 14;

/// One part of a layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetPart {
    /// `random:N`: the probe's sample of N lines (offset 0, the single-bit offsets, then random).
    Random(usize),
    /// `grid:LOW:HIGH` (bits LOW..=HIGH) or `bits:LIST` (a list such as `7-11+16-20`): every line
    /// whose offset has bits only in the mask.
    Grid { mask: u64 },
}

/// A layout: the union of its parts, the same offsets in every page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapOffsets {
    pub parts: Vec<OffsetPart>,
}

/// Why a layout was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("no part (accepted: random:N, grid:LOW:HIGH, comma-separated)")]
    Empty,
    #[error(
        "{0:?}: accepted: random:N (N 1..16384), grid:LOW:HIGH (7 <= LOW <= HIGH <= 20) or bits:LIST (bits 7..20 \
         as A-B ranges and single bits joined by +)"
    )]
    BadPart(String),
}

impl MapOffsets {
    /// Parse `random:N,grid:LOW:HIGH,bits:LIST,...`.
    pub fn parse(spec: &str) -> Result<Self, LayoutError> {
        let parts: Vec<OffsetPart> = spec
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| parse_part(p).ok_or_else(|| LayoutError::BadPart(p.to_string())))
            .collect::<Result<_, _>>()?;
        if parts.is_empty() {
            return Err(LayoutError::Empty);
        }
        Ok(MapOffsets { parts })
    }

    /// The offsets, each once. With a grid among the parts they come in a deterministic random
    /// order (the map's seed stage takes the first lines, so they should spread over the slices);
    /// random parts alone keep the probe's sample order.
    pub fn offsets(&self, seed: u64) -> Vec<u64> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for p in &self.parts {
            let these: Vec<u64> = match *p {
                OffsetPart::Random(n) => fit::sample_lines(n, seed),
                OffsetPart::Grid { mask } => grid_of_mask(mask),
            };
            out.extend(these.into_iter().filter(|o| seen.insert(*o)));
        }
        if self.parts.iter().any(|p| matches!(p, OffsetPart::Grid { .. })) {
            out.shuffle(&mut rand_chacha::ChaCha8Rng::seed_from_u64(seed));
        }
        out
    }
}

fn parse_part(p: &str) -> Option<OffsetPart> {
    let f: Vec<&str> = p.split(':').collect();
    match f.as_slice() {
        ["random", n] => n.parse().ok().filter(|n| (1..=MAX_OFFSETS).contains(n)).map(OffsetPart::Random),
        ["grid", lo, hi] => Some(OffsetPart::Grid { mask: bit_range(lo, hi)? }),
        ["bits", list] => {
            let mut mask = 0;
            for r in list.split('+') {
                mask |= match r.split_once('-') {
                    Some((lo, hi)) => bit_range(lo, hi)?,
                    None => bit_range(r, r)?,
                };
            }
            Some(OffsetPart::Grid { mask })
        }
        _ => None,
    }
}

/// The mask of address bits lo..=hi, when 7 <= lo <= hi <= 20.
fn bit_range(lo: &str, hi: &str) -> Option<u64> {
    let (low, high): (u32, u32) = (lo.parse().ok()?, hi.parse().ok()?);
    (GRID_LOW_BIT <= low && low <= high && high <= GRID_HIGH_BIT)
        .then(|| ((1u64 << (high + 1)) - 1) & !((1u64 << low) - 1))
}

/// Every offset whose bits are a subset of `mask` (bits below the line ignored), in increasing
/// order.
pub fn grid_of_mask(mask: u64) -> Vec<u64> {
    let mask = mask & !(LINE_BYTES - 1);
    let mut out = vec![0u64];
    let mut sub = 0u64;
    // The subsets of the mask in increasing order: (sub - mask) & mask steps to the next one.
    loop {
        sub = sub.wrapping_sub(mask) & mask;
        if sub == 0 {
            return out;
        }
        out.push(sub);
    }
}
