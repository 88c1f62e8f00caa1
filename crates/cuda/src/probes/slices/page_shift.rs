//! The slice of a line on any page from one reference page's slice map (docs/L2_SLICES.md, "From
//! page to page"): on the H200 a page's slices are the reference page's read at the offset XOR a
//! per-page shift, renamed by a per-page bijection of the (slice label, partition parity) pairs.
//! Seed 000's slice function reads high address bits into XOR parities; this model says how the
//! frame's bits enter: as an XOR on the offset, plus a renaming not yet written in frame bits.
//! Fits the shift and renaming of a page from some of its lines, predicts the others, finds the
//! reference's own renaming symmetries (shifts known only up to them), and checks whether the
//! shifts of consecutive pages are an affine GF(2) function of the frame number.

use super::slice_fit::HeldOut;
use memscope_core::gf2;
use std::collections::HashMap;

/// A slice map of one page: offset in the page -> slice label.
pub type PageMap = HashMap<u64, usize>;

/// The key a page's renaming is read by: the reference label at the shifted offset and the
/// parity of the offset under the partition mask.
type Key = (usize, bool);

/// One page fitted against the reference.
#[derive(Debug, Clone, PartialEq)]
pub struct PageFit {
    /// Offset XOR under which the page reads the reference (one of its class, see
    /// [`renaming_symmetries`]).
    pub shift: u64,
    /// (reference label, partition parity) -> this page's label, by majority over the fitted lines.
    pub renaming: HashMap<Key, usize>,
    /// Share of the fitted lines the shift and renaming reproduce (1.0: every one).
    pub consistency: f64,
    /// Lines the fit used.
    pub lines: usize,
}

fn parity(x: u64) -> bool {
    gf2::parity(x) == 1
}

/// The majority renaming of `lines` under `shift` and how many lines it reproduces; lines whose
/// shifted offset the reference lacks are skipped.
fn renaming(reference: &PageMap, lines: &[(u64, usize)], shift: u64, mask: u64) -> (HashMap<Key, usize>, usize, usize) {
    let mut votes: HashMap<Key, HashMap<usize, usize>> = HashMap::new();
    let mut used = 0;
    for &(o, label) in lines {
        if let Some(&r) = reference.get(&(o ^ shift)) {
            *votes.entry((r, parity(o & mask))).or_default().entry(label).or_default() += 1;
            used += 1;
        }
    }
    let mut hits = 0;
    let map = votes
        .into_iter()
        .map(|(k, v)| {
            // Ties to the smallest label, so the fit does not depend on hash order.
            let (label, n) = v.into_iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0))).unwrap_or((0, 0));
            hits += n;
            (k, label)
        })
        .collect();
    (map, hits, used)
}

/// The shift (among `candidates`) and renaming under which the reference best reproduces the
/// page's `lines` (offset, label); `None` when no candidate reaches any line. `mask`: the
/// partition bit's offset mask (0xab000 on the H200).
pub fn fit_page(reference: &PageMap, lines: &[(u64, usize)], mask: u64, candidates: &[u64]) -> Option<PageFit> {
    let mut best: Option<PageFit> = None;
    for &shift in candidates {
        let (map, hits, used) = renaming(reference, lines, shift, mask);
        if used == 0 {
            continue;
        }
        let consistency = hits as f64 / used as f64;
        if best.as_ref().is_none_or(|b| consistency > b.consistency) {
            best = Some(PageFit { shift, renaming: map, consistency, lines: used });
        }
    }
    best
}

/// The label the fit predicts at `offset`: `None` when the reference lacks the shifted offset or
/// the fitted lines never showed its key.
pub fn predict(reference: &PageMap, fit: &PageFit, offset: u64, mask: u64) -> Option<usize> {
    let r = reference.get(&(offset ^ fit.shift))?;
    fit.renaming.get(&(*r, parity(offset & mask))).copied()
}

/// Fit on the lines whose index in offset order is not a multiple of `every`, score on the
/// others (every `every`-th line held out: `every` = 2 holds out half); the fit and its score (a
/// line whose key the fitted lines never showed counts as wrong and unpredicted).
pub fn held_out(
    reference: &PageMap,
    page: &PageMap,
    mask: u64,
    candidates: &[u64],
    every: usize,
) -> Option<(PageFit, HeldOut)> {
    let mut lines: Vec<(u64, usize)> = page.iter().map(|(&o, &l)| (o, l)).collect();
    lines.sort_unstable();
    let every = every.max(2);
    let (test, train): (Vec<_>, Vec<_>) = lines.iter().enumerate().partition(|(i, _)| i % every == 0);
    let train: Vec<(u64, usize)> = train.into_iter().map(|(_, &l)| l).collect();
    let fit = fit_page(reference, &train, mask, candidates)?;
    let predicted: Vec<(Option<usize>, usize)> =
        test.iter().map(|(_, &(o, l))| (predict(reference, &fit, o, mask), l)).collect();
    let score = HeldOut {
        right: predicted.iter().filter(|(p, l)| *p == Some(*l)).count(),
        total: predicted.len(),
        unpredicted: predicted.iter().filter(|(p, _)| p.is_none()).count(),
    };
    Some((fit, score))
}

/// The offset XORs under which the reference is a renaming of itself (its label at `o ^ e` a
/// function of its label at `o` and the partition parity of `o`, over every offset where both are
/// mapped), as an echelon basis: a page's shift is known only up to their span.
pub fn renaming_symmetries(reference: &PageMap, mask: u64, candidates: &[u64]) -> Vec<u64> {
    let symmetric = |e: u64| {
        let mut seen: HashMap<Key, usize> = HashMap::new();
        reference.iter().all(|(&o, &r)| match reference.get(&(o ^ e)) {
            Some(&t) => *seen.entry((r, parity(o & mask))).or_insert(t) == t,
            None => true,
        })
    };
    let found: Vec<u64> = candidates.iter().copied().filter(|&e| e != 0 && symmetric(e)).collect();
    gf2::rref(&found)
}

/// Whether the shifts of consecutive pages (`shifts[k]` of page k) are an affine GF(2) function of
/// the frame number `base + k` up to the span of `symmetries` (an echelon basis): for each bit of
/// the reduced shift, one equation per page over the frame number's bits and a constant. Returns
/// the bases in `0..bases` for which every equation holds, and how many equations were
/// redundant (beyond the unknowns) for the first of them.
pub fn affine_in_frame(shifts: &[u64], symmetries: &[u64], bases: u64) -> (Vec<u64>, usize) {
    let reduced: Vec<u64> = shifts.iter().map(|&s| gf2::reduce(symmetries, s)).collect();
    let bits = reduced.iter().fold(0, |a, &s| a | s);
    let mut ok = Vec::new();
    let mut redundant = 0;
    for base in 0..bases {
        let rows: Vec<u64> = (0..shifts.len() as u64).map(|k| ((base + k) << 1) | 1).collect();
        let consistent = (0..64)
            .filter(|b| bits >> b & 1 == 1)
            .all(|b| gf2::solve_equations(rows.iter().zip(&reduced).map(|(&r, &s)| (r, s >> b & 1 == 1))).is_some());
        if consistent {
            if ok.is_empty() {
                redundant = shifts.len() - gf2::rank(&rows);
            }
            ok.push(base);
        }
    }
    (ok, redundant)
}
