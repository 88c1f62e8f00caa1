//! The `l2.slices.function` finding from a slice map (docs/L2_SLICES.md, "A residue modulo 47
//! fits"): when the map's labels let slice_mod.rs fit its residue (a dense map of a page, with
//! the partition bit's mask from `l2.slices`' timing check, which function_probe.rs reads), the
//! function within a page and each page's share (the frame's part), and
//! `l2.slices.held_out_accuracy`: every other line set held out, predicted by the residue fitted
//! on the rest. The function finding's value is an object: `formula` (the function in words),
//! `function` (the simulated-hierarchy JSON's residue form, docs/CONTRACTS.md, with the first
//! page's share) and `shares` (every mapped page's).

use super::hammer::PAGE_BYTES;
use super::slice_fit::Point;
use super::slice_mod::{fit_residue, pow_mod, PageTerms, ResidueFitError};
use super::slice_mod_held::residue_held_out_by_line;
use memscope_core::{Confidence, Finding};
use serde_json::json;

/// Pairs a difference must join before the residue fit reads it (slice_mod.rs).
pub const MIN_PAIRS: usize = 8;
/// One line in this many held out.
pub const HELD_OUT_EVERY: u64 = 2;
/// The held-out accuracy under which the function stays undetermined.
pub const MIN_ACCURACY: f64 = 0.99;

/// Why a map gives no slice function.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SliceFunctionError {
    #[error("the map's lines do not fit the residue family: {0}")]
    NoFit(#[from] ResidueFitError),
    #[error(
        "the residue ({function}) predicts {percent:.1} % of held-out lines, under the {min_percent:.0} % it must"
    )]
    Inaccurate { function: String, percent: f64, min_percent: f64 },
}

/// The two findings (function, held-out accuracy) from the map's labelled lines, or why the
/// residue does not give them. `partition_mask`: the partition bit's offset mask.
pub fn function_findings(
    points: &[Point],
    partition_mask: u64,
    method: &str,
) -> Result<(Finding, Finding), SliceFunctionError> {
    let (_, held) = residue_held_out_by_line(points, partition_mask, HELD_OUT_EVERY, MIN_PAIRS)?;
    let model = fit_residue(points, partition_mask, MIN_PAIRS)?;
    let acc = held.accuracy();
    let method = format!(
        "{method}; residue fit (slice_mod.rs) on {} labelled lines of {} page(s); held out: one line in {HELD_OUT_EVERY}, predicted by the residue fitted on the others",
        points.len(),
        model.pages.len()
    );
    let accuracy =
        Finding::number(acc, "ratio", &method, if acc >= MIN_ACCURACY { Confidence::High } else { Confidence::Medium })
            .with_note(&format!(
                "{} of {} held-out lines predicted, {} without a prediction",
                held.right, held.total, held.unpredicted
            ));
    let terms: Vec<String> = model
        .terms
        .iter()
        .map(|t| format!("2^{} (parity(offset & {:#x}) XOR e{})", t.exponent, t.mask, t.exponent))
        .collect();
    let value = format!(
        "slice = (P, y), offset = address within its 2 MiB page: P = parity(offset & {partition_mask:#x}) XOR p; y = ({} + c) mod {}; p, c and the flips e are the page frame's share",
        terms.join(" + "),
        model.modulus
    );
    if acc < MIN_ACCURACY {
        return Err(SliceFunctionError::Inaccurate {
            function: value,
            percent: acc * 100.0,
            min_percent: MIN_ACCURACY * 100.0,
        });
    }
    let mut pages: Vec<_> = model.pages.iter().collect();
    pages.sort_by_key(|(p, _)| **p);
    let shares: Vec<String> = pages
        .iter()
        .map(|(p, s)| format!("page {p}: flips {:#x}, c {}, p {}", s.flips, s.constant, s.partition))
        .collect();
    let share_json =
        |s: &PageTerms| json!({"flips": format!("{:#x}", s.flips), "constant": s.constant, "partition": s.partition});
    let structured = json!({
        "formula": value,
        "function": {
            "modulus": model.modulus,
            "terms": model.terms.iter().map(|t| json!({
                "mask": format!("{:#x}", t.mask),
                "weight": pow_mod(2, u64::from(t.exponent), model.modulus),
            })).collect::<Vec<_>>(),
            "partition_mask": format!("{partition_mask:#x}"),
            "page_bytes": PAGE_BYTES,
            "share": pages.first().map(|(_, s)| share_json(s)),
        },
        "shares": pages.iter().map(|(p, s)| {
            let mut v = share_json(s);
            v["page"] = json!(p);
            v
        }).collect::<Vec<_>>(),
    });
    let function = Finding::json(structured, "", &method, Confidence::High).with_note(&format!(
        "each page's share, learned from its labelled lines (memscope reads no page table, so the frame number is unknown): {}",
        shares.join("; ")
    ));
    Ok((function, accuracy))
}
