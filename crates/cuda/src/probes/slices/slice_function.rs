//! The `l2.slices.function` finding from a slice map (docs/L2_SLICES.md, "A residue modulo 47
//! fits"): when the map's labels let slice_mod.rs fit its residue (a dense map of a page, with
//! the partition bit's mask from `l2.slices`' timing check, which function_probe.rs reads), the
//! function within a page and each page's share (the frame's part), with the frame function
//! over the mapped pages when their shares fit one (slice_frame_function.rs);
//! `l2.slices.held_out_accuracy`: every other line set held out, predicted by the residue fitted
//! on the rest; `l2.slices.frame_held_out_accuracy`: each page but the first left out, its share
//! from the other pages' alone. The function finding's value is an object: `formula` (the
//! function in words), `function` (the simulated-hierarchy JSON's residue form, docs/CONTRACTS.md:
//! with `frame` and frame 0's share when the frame function fits, else the first page's share)
//! and `shares` (every mapped page's, with its frame when the frame function fits).

use super::hammer::PAGE_BYTES;
use super::slice_fit::Point;
use super::slice_frame_function::{frame_function, frame_held_out_finding, FrameFunction};
use super::slice_mod::{fit_residue, pow_mod, PageTerms, ResidueFitError, ResidueModel};
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

/// The findings of a map whose residue fits.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionFindings {
    /// `l2.slices.function`, `l2.slices.held_out_accuracy`, `l2.slices.frame_held_out_accuracy`.
    pub function: Finding,
    pub accuracy: Finding,
    pub frame_accuracy: Finding,
}

fn share_json(s: &PageTerms) -> serde_json::Value {
    json!({"flips": format!("{:#x}", s.flips), "constant": s.constant, "partition": s.partition})
}

/// The function in the simulated-hierarchy JSON's residue form (docs/CONTRACTS.md; memscope_sim's
/// hash_residue.rs): the model's terms and partition mask, with `frames`' frame function and
/// frame 0's share when given, else `first` (the first page's share) for every frame.
pub fn function_value(model: &ResidueModel, first: &PageTerms, frames: Option<&FrameFunction>) -> serde_json::Value {
    let mut function = json!({
        "modulus": model.modulus,
        "terms": model.terms.iter().map(|t| json!({
            "mask": format!("{:#x}", t.mask),
            "weight": pow_mod(2, u64::from(t.exponent), model.modulus),
        })).collect::<Vec<_>>(),
        "partition_mask": format!("{:#x}", model.partition_mask),
        "page_bytes": PAGE_BYTES,
        "share": share_json(first),
    });
    if let Some(f) = frames {
        function["share"] = share_json(&f.frame_zero_share());
        function["frame"] = f.frame_json();
    }
    function
}

/// The findings from the map's labelled lines (pages of one allocation, the first the densest),
/// or why the residue does not give them. `partition_mask`: the partition bit's offset mask.
pub fn function_findings(
    points: &[Point],
    partition_mask: u64,
    method: &str,
) -> Result<FunctionFindings, SliceFunctionError> {
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
    let formula = |m: &ResidueModel| {
        let terms: Vec<String> = m
            .terms
            .iter()
            .map(|t| format!("2^{} (parity(offset & {:#x}) XOR e{})", t.exponent, t.mask, t.exponent))
            .collect();
        format!(
            "slice = (P, y), offset = address within its 2 MiB page: P = parity(offset & {partition_mask:#x}) XOR p; y = ({} + c) mod {}; p, c and the flips e are the page frame's share",
            terms.join(" + "),
            m.modulus
        )
    };
    if acc < MIN_ACCURACY {
        return Err(SliceFunctionError::Inaccurate {
            function: formula(&model),
            percent: acc * 100.0,
            min_percent: MIN_ACCURACY * 100.0,
        });
    }
    let frames = frame_function(&model, points);
    // The form and shares the frame function read (the model's other form where its shares follow
    // the frames better), else the fit's own.
    let (form, mut pages): (&_, Vec<(usize, PageTerms)>) = match &frames {
        Ok(f) => (&f.form.model, f.form.shares.clone()),
        Err(_) => (&model, model.pages.iter().map(|(p, s)| (*p, *s)).collect()),
    };
    pages.sort_by_key(|(p, _)| *p);
    let shares: Vec<String> = pages
        .iter()
        .map(|(p, s)| format!("page {p}: flips {:#x}, c {}, p {}", s.flips, s.constant, s.partition))
        .collect();
    let first = pages.first().map(|(_, s)| *s).unwrap_or_default();
    let function = function_value(form, &first, frames.as_ref().ok());
    let frame_note = match &frames {
        Ok(f) => f.note(),
        Err(why) => format!("no frame function: {why}; every frame gets the first page's share"),
    };
    let structured = json!({
        "formula": formula(form),
        "function": function,
        "shares": pages.iter().map(|(p, s)| {
            let mut v = share_json(s);
            v["page"] = json!(p);
            if let Ok(f) = &frames {
                v["frame"] = json!(f.frame_of(*p));
            }
            v
        }).collect::<Vec<_>>(),
    });
    let frame_accuracy = frame_held_out_finding(&model, points, &frames, &method);
    let function = Finding::json(structured, "", &method, Confidence::High).with_note(&format!(
        "each page's share, learned from its labelled lines (memscope reads no page table, so the frame number is unknown): {}; {frame_note}",
        shares.join("; ")
    ));
    Ok(FunctionFindings { function, accuracy, frame_accuracy })
}
