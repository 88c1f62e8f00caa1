//! The L2 geometry of a calibrated hierarchy (docs/SIMULATORS.md): total sets from the capacity (the
//! driver's `l2_cache_bytes_attribute` first, else the `l2.capacity_bytes` finding), the
//! measured ways and line; then the slice count that divides those sets into equal slices, is a
//! multiple of the partition count and lies nearest the measured slice count (`l2.slices.count`,
//! from Nsight Compute). Counts that are not powers of two get `Modular` index functions.

use crate::hierarchy::HashFunction;

/// A slice x set factorisation and why it was chosen.
#[derive(Debug, Clone, PartialEq)]
pub struct Geometry {
    pub slices: u32,
    pub sets_per_slice: u32,
    /// The rule as one sentence, for the provenance.
    pub rule: String,
}

/// The divisor of `total_sets` that is a multiple of `partitions` and nearest `want_slices`
/// (ties: the one with a power-of-two set count, then the larger); `None` when no divisor up to
/// 65536 qualifies.
pub fn factor(total_sets: u64, want_slices: u32, partitions: u32) -> Option<Geometry> {
    let p = partitions.max(1) as u64;
    let want = want_slices.max(1) as u64;
    let best = (1..=total_sets.min(65536))
        .filter(|s| total_sets.is_multiple_of(*s) && s.is_multiple_of(p) && total_sets / s <= u32::MAX as u64)
        .min_by_key(|&s| (s.abs_diff(want), !(total_sets / s).is_power_of_two(), u64::MAX - s))?;
    let sets = total_sets / best;
    let rule = if best == want {
        format!("{total_sets} sets = {best} slices x {sets} sets")
    } else {
        format!(
            "{total_sets} sets split into equal slices: {best} slices x {sets} sets is the split nearest {want} slices \
             that {p} partitions divide ({want} slices of whole sets cannot hold {total_sets} sets)"
        )
    };
    Some(Geometry { slices: best as u32, sets_per_slice: sets as u32, rule })
}

/// Index functions for a geometry: plain address bits when both counts are powers of two
/// (empty masks), else `(a / line) % sets` for the set and `(a / (line * sets)) % slices` for the
/// slice, so consecutive lines fill a slice's sets before the next slice.
pub fn functions(g: &Geometry, line_bytes: u32) -> (HashFunction, HashFunction) {
    if g.slices.is_power_of_two() && g.sets_per_slice.is_power_of_two() {
        let plain = || HashFunction::Masks { masks: Vec::new() };
        return (plain(), plain());
    }
    let line = line_bytes as u64;
    let set = HashFunction::Modular { divisor_bytes: line, modulo: g.sets_per_slice };
    let slice = HashFunction::Modular { divisor_bytes: line * g.sets_per_slice as u64, modulo: g.slices };
    (slice, set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_h200_split_is_96_by_320() {
        // 60 MiB of 16-way sets of 128-byte lines, 94 slices measured, two partitions
        let g = factor(62_914_560 / (16 * 128), 94, 2).unwrap();
        assert_eq!((g.slices, g.sets_per_slice), (96, 320));
        assert_eq!(g.slices as u64 * g.sets_per_slice as u64 * 16 * 128, 62_914_560);
    }

    #[test]
    fn an_exact_count_is_kept_and_ties_prefer_powers_of_two() {
        assert_eq!(factor(36 * 1024, 36, 1).unwrap().slices, 36);
        // 24 sets, want 5: 4 (6 sets) and 6 (4 sets) are both 1 away; 6 x 4 has the power of two
        let g = factor(24, 5, 1).unwrap();
        assert_eq!((g.slices, g.sets_per_slice), (6, 4));
        assert!(factor(7, 2, 2).is_none(), "no even divisor of 7");
    }

    #[test]
    fn functions_are_plain_bits_only_for_powers_of_two() {
        let g = Geometry { slices: 64, sets_per_slice: 512, rule: String::new() };
        let (s, t) = functions(&g, 128);
        assert_eq!(s, HashFunction::Masks { masks: vec![] });
        assert_eq!(t, HashFunction::Masks { masks: vec![] });
        let g = Geometry { slices: 96, sets_per_slice: 320, rule: String::new() };
        let (s, t) = functions(&g, 128);
        assert_eq!(s, HashFunction::Modular { divisor_bytes: 128 * 320, modulo: 96 });
        assert_eq!(t, HashFunction::Modular { divisor_bytes: 128, modulo: 320 });
    }
}
