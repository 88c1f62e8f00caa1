//! Which offsets of each 2 MiB page the slice map labels (`MEMSCOPE_SLICES_MAP_OFFSETS`,
//! docs/L2_SLICES.md): random lines of the page, or grids, every line whose offset has bits only
//! in a range of address bits (all lines of a 64 KiB window: bits 7..15). Grids give the dense,
//! structured sets a fit of the slice function needs: every line of a window, and the same bits
//! in the context of every combination of higher ones.

use super::fit::{self, LINE_BYTES};
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// Lowest and highest address bit a grid may span (a line is 128 bytes; a page 2 MiB).
pub const GRID_LOW_BIT: u32 = 7;
pub const GRID_HIGH_BIT: u32 = 20;
/// Most offsets per page (the whole page).
pub const MAX_OFFSETS: usize = 1 << 14;

/// One part of a layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetPart {
    /// `random:N`: the probe's sample of N lines (offset 0, the single-bit offsets, then random).
    Random(usize),
    /// `grid:LOW:HIGH`: every line whose offset has bits only in LOW..=HIGH.
    Grid { low: u32, high: u32 },
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
    #[error("{0:?}: accepted: random:N (N 1..16384) or grid:LOW:HIGH (7 <= LOW <= HIGH <= 20)")]
    BadPart(String),
}

impl MapOffsets {
    /// The default: the 64 random offsets the map has always used.
    pub fn default_random() -> Self {
        MapOffsets { parts: vec![OffsetPart::Random(64)] }
    }

    /// Parse `random:N,grid:LOW:HIGH,...`.
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
                OffsetPart::Grid { low, high } => grid(low, high),
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
        ["grid", lo, hi] => {
            let (low, high): (u32, u32) = (lo.parse().ok()?, hi.parse().ok()?);
            (GRID_LOW_BIT <= low && low <= high && high <= GRID_HIGH_BIT).then_some(OffsetPart::Grid { low, high })
        }
        _ => None,
    }
}

/// Every line offset with bits only in low..=high, in increasing order.
pub fn grid(low: u32, high: u32) -> Vec<u64> {
    let span = high - low + 1;
    (0..(1u64 << span)).map(|i| (i << low) & !(LINE_BYTES - 1)).collect()
}
