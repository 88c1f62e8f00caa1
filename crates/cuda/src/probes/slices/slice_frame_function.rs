//! The frame function of `l2.slices.function` (docs/L2_SLICES.md, "The function in a run"): the
//! mapped pages of one allocation, taken as consecutive frames from an unknown first frame, each
//! with its share from its labelled lines, fitted as one function of the frame number
//! (slice_frames.rs), written in the simulated-hierarchy JSON's residue form (`frame`, the
//! simulator's crates/sim/src/hash_residue.rs), and `l2.slices.frame_held_out_accuracy`: each
//! page but the first left out, its share predicted from the other pages' shares alone.

use super::slice_fit::{pages_of, HeldOut, Point};
use super::slice_frames::{frame_form, held_out_pages, shares_agreement, FrameForm, ShareFit};
use super::slice_function::MIN_ACCURACY;
use super::slice_mod::{PageTerms, ResidueModel};
use memscope_core::{Confidence, Finding};
use serde_json::json;

/// Pages the frame held-out check needs: the first and two others (one left out, its share from
/// the other two).
pub const MIN_HELD_OUT_PAGES: usize = 3;

/// Frame bits the fit reads for `pages` consecutive pages: enough for the pages' span and one
/// more, so that the first frame may lie anywhere below a power of two (ceil(log2 pages) + 1).
pub fn frame_bits(pages: usize) -> u32 {
    let span = if pages <= 1 { 0 } else { usize::BITS - (pages - 1).leading_zeros() };
    span + 1
}

/// The frame function of one run: the model's form whose shares follow the frames, the fit taken
/// (the frame of page k is `fit.first_frame_mod + k`), every first frame that fits, and the
/// mapped lines the function names as the run does.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameFunction {
    pub form: FrameForm,
    pub fit: ShareFit,
    pub first_frames: Vec<u64>,
    pub bits: u32,
    /// Mapped lines whose label the frame function's share of their page names, and all mapped lines.
    pub explained: (usize, usize),
}

impl FrameFunction {
    /// The frame number the simulator gives page `page` of the allocation.
    pub fn frame_of(&self, page: usize) -> u64 {
        self.fit.first_frame_mod + page as u64
    }

    /// The share of frame 0 in the simulator's terms (hash_residue.rs: frame f's constant is
    /// share.constant + constant_step * f), so that frame `frame_of(k)` gets page k's share.
    pub fn frame_zero_share(&self) -> PageTerms {
        let m = self.fit.modulus;
        let back = self.fit.step % m * (self.fit.first_frame_mod % m) % m;
        PageTerms {
            flips: self.fit.flip_constants,
            constant: (self.fit.constant0 % m + m - back) % m,
            partition: self.fit.partition_constant,
        }
    }

    /// The residue form's `frame` object: one flip mask per term (in the model's term order), the
    /// partition constant's frame mask, the constant's step.
    pub fn frame_json(&self) -> serde_json::Value {
        json!({
            "flip_masks": self.fit.flip_masks.iter().map(|m| format!("{m:#x}")).collect::<Vec<_>>(),
            "partition_mask": format!("{:#x}", self.fit.partition_mask),
            "constant_step": self.fit.step,
        })
    }

    /// What the function says and how it was taken, for the finding's note.
    pub fn note(&self) -> String {
        let pages = self.form.shares.len();
        let m = 1u64 << self.bits;
        let masks: Vec<String> = self.fit.flip_masks.iter().map(|x| format!("{x:#x}")).collect();
        let others = if self.first_frames.len() > 1 {
            format!(
                "{} first frames fit the shares ({:?} modulo {m}), each giving every mapped page its share and \
                 differing beyond; taken: the one whose shares name the most mapped lines as the run does, the \
                 lowest on a tie",
                self.first_frames.len(),
                self.first_frames
            )
        } else {
            "one first frame fits the shares".to_string()
        };
        format!(
            "the share as a function of the frame number f (slice_frames.rs): flip t = parity(f & a_t) XOR b_t with \
             a = [{}], the partition constant parity(f & {:#x}) XOR {}, the constant c + {} x f (mod {}); the {pages} \
             mapped pages are inferred consecutive frames (memscope reads no page table): page k is frame {} + k, \
             the first frame taken modulo {m}; {others}; it names {} of the {} mapped lines as the run does; frames \
             beyond the frame bits the mapped pages vary ({:#x}) are extrapolated",
            masks.join(", "),
            self.fit.partition_mask,
            self.fit.partition_constant,
            self.fit.step,
            self.fit.modulus,
            self.fit.first_frame_mod,
            self.explained.0,
            self.explained.1,
            self.fit.varying,
        )
    }
}

/// Why the mapped pages give no frame function.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameFunctionError {
    #[error("{pages} page(s) mapped: a frame function needs at least two")]
    OnePage { pages: usize },
    #[error(
        "the {pages} mapped pages' shares fit no frame function (every flip and the partition constant XOR-linear in \
         consecutive frame numbers from some first frame modulo {frames})"
    )]
    NoFit { pages: usize, frames: u64 },
    #[error(
        "the constants of the {pages} mapped pages follow no one step a frame: the best step ({step} modulo {modulus}) \
         explains {explained}"
    )]
    Constants { pages: usize, step: u64, modulus: u64, explained: usize },
}

/// The frame function of a run's labelled lines read through `model` (fitted on the run's first
/// page, or on another run's page: the run's labels are renamed to the model's), the pages
/// taken as consecutive frames; Err: why there is none (one page, or shares that fit no frame
/// function, or constants that do not follow one step).
pub fn frame_function(model: &ResidueModel, points: &[Point]) -> Result<FrameFunction, FrameFunctionError> {
    let pages = pages_of(points);
    if pages.len() < 2 {
        return Err(FrameFunctionError::OnePage { pages: pages.len() });
    }
    let bits = frame_bits(pages.last().map_or(1, |&p| p + 1));
    let form = frame_form(model, points, &pages, bits);
    let Some(first) = form.fits.first() else {
        return Err(FrameFunctionError::NoFit { pages: pages.len(), frames: 1u64 << bits });
    };
    if first.constants_explained < pages.len() {
        return Err(FrameFunctionError::Constants {
            pages: pages.len(),
            step: first.step,
            modulus: first.modulus,
            explained: first.constants_explained,
        });
    }
    let score = |fit: &ShareFit| {
        let shares: Vec<(usize, PageTerms)> = pages.iter().filter_map(|&p| fit.share(p).map(|s| (p, s))).collect();
        shares_agreement(&form.model, points, &shares, &form.rename)
    };
    // The most lines named as the run does; ties to the lowest first frame (the fits come in
    // increasing first frame, and max_by_key keeps the last of equals).
    let (best, agree) = form
        .fits
        .iter()
        .map(|f| (f, score(f)))
        .rev()
        .max_by_key(|(_, n)| *n)
        .map(|(f, n)| (f.clone(), n))
        .expect("a fit");
    Ok(FrameFunction {
        first_frames: form.fits.iter().map(|f| f.first_frame_mod).collect(),
        fit: best,
        bits,
        explained: (agree, points.len()),
        form,
    })
}

/// `l2.slices.frame_held_out_accuracy`: every mapped page but the first left out in turn, its
/// share predicted from the other pages' shares alone (the frame fit of the rest), every line of
/// it scored (a page without a predicted share: every line wrong, and the note says why).
/// Undetermined with the reason under `MIN_HELD_OUT_PAGES` pages or when `frames` is Err.
pub fn frame_held_out_finding(
    model: &ResidueModel,
    points: &[Point],
    frames: &Result<FrameFunction, FrameFunctionError>,
    method: &str,
) -> Finding {
    let pages = pages_of(points);
    let method = format!(
        "{method}; each mapped page but the first left out in turn, its share predicted from the other pages' \
         shares alone (the frame function fitted on them, slice_frames.rs), every labelled line of it scored"
    );
    if pages.len() < MIN_HELD_OUT_PAGES {
        return Finding::undetermined(
            "ratio",
            &method,
            &format!(
                "{} page(s) mapped: leaving one out needs at least {MIN_HELD_OUT_PAGES} (the first and two others; \
                 MEMSCOPE_SLICES_MAP)",
                pages.len()
            ),
        );
    }
    let frames = match frames {
        Ok(f) => f,
        Err(why) => return Finding::undetermined("ratio", &method, &format!("no frame function: {why}")),
    };
    let left = held_out_pages(model, points, frames.bits, &pages[1..]);
    let all = left.iter().fold(HeldOut::default(), |a, l| HeldOut {
        right: a.right + l.lines.right,
        total: a.total + l.lines.total,
        unpredicted: a.unpredicted + l.lines.unpredicted,
    });
    let per: Vec<String> =
        left.iter().map(|l| format!("page {}: {} of {}", l.page, l.lines.right, l.lines.total)).collect();
    let unpredicted: Vec<String> =
        left.iter().filter_map(|l| l.unpredicted.map(|u| format!("page {} ({})", l.page, u.text()))).collect();
    let unpredicted = if unpredicted.is_empty() {
        "every page left out got a share".to_string()
    } else {
        format!("not predicted, its lines counted wrong: {}", unpredicted.join("; "))
    };
    let acc = all.accuracy();
    Finding::number(acc, "ratio", &method, if acc >= MIN_ACCURACY { Confidence::High } else { Confidence::Medium })
        .with_note(&format!(
            "{} of {} lines of {} pages left out predicted ({}); {unpredicted}",
            all.right,
            all.total,
            left.len(),
            per.join(", ")
        ))
}
