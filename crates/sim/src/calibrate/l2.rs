//! The L2 geometry of a calibrated hierarchy (docs/SIMULATORS.md): total sets from the capacity (the
//! driver's `l2_cache_bytes_attribute` first, else the `l2.capacity_bytes` finding), the
//! measured ways and line; then the slice count that divides those sets into equal slices, is a
//! multiple of the partition count and lies nearest the measured slice count (`l2.slices.count`,
//! from Nsight Compute). Counts that are not powers of two get `Modular` index functions. A
//! measured slice function (`l2.slices.function`, a residue) sets the slice count itself.

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

/// A measured slice function as `sim calibrate` uses it, and what it says of other frames.
#[derive(Debug, Clone, PartialEq)]
pub struct MeasuredSlices {
    pub residue: crate::hash_residue::Residue,
    /// How the preset's frames get their share (one sentence, for the provenance).
    pub frames_note: String,
}

/// The residue of a determined `l2.slices.function` finding (its value's `function`, the
/// hierarchy JSON's residue form), checked; Err: why it gives none.
pub fn residue_of(f: &memscope_core::Finding) -> Result<MeasuredSlices, String> {
    let v = f.value.get("function").ok_or("l2.slices.function has no structured function (an older results file)")?;
    let residue: crate::hash_residue::Residue =
        serde_json::from_value(v.clone()).map_err(|e| format!("l2.slices.function's function does not parse: {e}"))?;
    residue.check().map_err(|e| format!("l2.slices.function's function.{}: {}", e.field, e.why))?;
    let pages = f.value.get("shares").and_then(|s| s.as_array()).map_or(1, |a| a.len().max(1));
    let frames_note = if residue.frame.is_some() {
        format!(
            "the frame's share as a function of the frame number, fitted over {pages} mapped pages of one \
             allocation taken as consecutive frames (memscope reads no page table); other frames extrapolated"
        )
    } else {
        format!(
            "the share of the first of {pages} mapped page(s) for every frame: memscope reads no page table, so the \
             share of other frames is not known from this run"
        )
    };
    Ok(MeasuredSlices { residue, frames_note })
}

/// `slices` slices of whole sets within `total_sets` (rounded down): None when not one set each.
pub fn whole_sets(total_sets: u64, slices: u64) -> Option<Geometry> {
    let sets = total_sets / slices.max(1);
    if sets == 0 || slices > u32::MAX as u64 || sets > u32::MAX as u64 {
        return None;
    }
    let rule = if total_sets.is_multiple_of(slices) {
        format!("{total_sets} sets = {slices} slices x {sets} sets")
    } else {
        format!(
            "{total_sets} sets over {slices} slices: {sets} whole sets each, {} sets ({:.2} %) left out",
            total_sets - sets * slices,
            100.0 * (total_sets - sets * slices) as f64 / total_sets as f64
        )
    };
    Some(Geometry { slices: slices as u32, sets_per_slice: sets as u32, rule })
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
