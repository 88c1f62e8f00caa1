//! Held-out checks of the residue model (slice_mod.rs): split by line, by whole page within a
//! run, and across runs whose labels are named independently. Every accuracy is on lines the fit
//! did not see.

use super::slice_fit::{held, pages_of, HeldOut, Point};
use super::slice_mod::{fit_residue, PageTerms, ResidueFitError, ResidueModel};
use std::collections::HashMap;

/// Split by line (slice_fit's split: one line in `every` by a hash of page and offset): the model
/// fitted on the other lines, each held-out line predicted through its page's share.
pub fn residue_held_out_by_line(
    points: &[Point],
    partition_mask: u64,
    every: u64,
    min_pairs: usize,
) -> Result<(ResidueModel, HeldOut), ResidueFitError> {
    let (test, train): (Vec<Point>, Vec<Point>) = points.iter().partition(|p| held(p, every));
    let model = fit_residue(&train, partition_mask, min_pairs)?;
    let mut h = HeldOut::default();
    for p in &test {
        h.total += 1;
        match model.predict(p.page, p.offset) {
            Some(l) => h.right += usize::from(l == p.label),
            None => h.unpredicted += 1,
        }
    }
    Ok((model, h))
}

/// Split by whole page within one run: for each page, the model from the other pages, the
/// page's share from its first `probes` lines (at most half of them), every other line predicted.
pub fn residue_held_out_by_page(
    points: &[Point],
    partition_mask: u64,
    probes: usize,
    min_pairs: usize,
) -> Result<HeldOut, ResidueFitError> {
    let pages = pages_of(points);
    let mut h = HeldOut::default();
    for &page in &pages {
        let train: Vec<Point> = points.iter().filter(|p| p.page != page).copied().collect();
        if train.is_empty() {
            continue;
        }
        let model = fit_residue(&train, partition_mask, min_pairs)?;
        let lines: Vec<(u64, usize)> = points.iter().filter(|p| p.page == page).map(|p| (p.offset, p.label)).collect();
        let (probe, rest) = lines.split_at(probes.min(lines.len() / 2));
        let (pt, _) = model.align_page(probe);
        for &(o, l) in rest {
            h.total += 1;
            match model.names.get(&model.slice(o, &pt)) {
                Some(&t) => h.right += usize::from(t == l),
                None => h.unpredicted += 1,
            }
        }
    }
    Ok(h)
}

/// Fitted on one run, checked on another (labels named independently): each page of `test` gets
/// its share from its first `probes` lines (at most half of them), the run one renaming from all
/// its pages' probe lines; every other line is predicted. Returns the held-out lines and each
/// page's share.
pub fn residue_held_out_across(
    model: &ResidueModel,
    test: &[Point],
    probes: usize,
) -> (HeldOut, Vec<(usize, PageTerms)>) {
    let pages = pages_of(test);
    let mut meet: HashMap<usize, HashMap<usize, usize>> = HashMap::new();
    let mut rename: HashMap<usize, usize> = HashMap::new();
    let mut split = Vec::new();
    for page in pages {
        let lines: Vec<(u64, usize)> = test.iter().filter(|p| p.page == page).map(|p| (p.offset, p.label)).collect();
        let (probe, rest) = lines.split_at(probes.min(lines.len() / 2));
        // The first page names the run; later pages align through that naming, which fixes their
        // partition constant too.
        let pt = if rename.is_empty() {
            let (pt, _, r) = model.align_page_renamed(probe);
            rename = r;
            pt
        } else {
            let named: Vec<(u64, usize)> = probe.iter().filter_map(|&(o, l)| rename.get(&l).map(|&t| (o, t))).collect();
            model.align_page(&named).0
        };
        for &(o, l) in probe {
            if let Some(&t) = model.names.get(&model.slice(o, &pt)) {
                *meet.entry(l).or_default().entry(t).or_default() += 1;
            }
        }
        split.push((page, pt, rest.to_vec()));
    }
    let rename: HashMap<usize, usize> = meet
        .iter()
        .map(|(&l, m)| (l, *m.iter().max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t))).unwrap().0))
        .collect();
    let mut h = HeldOut::default();
    for (_, pt, rest) in &split {
        for &(o, l) in rest {
            h.total += 1;
            match model.names.get(&model.slice(o, pt)) {
                Some(&t) => h.right += usize::from(rename.get(&l) == Some(&t)),
                None => h.unpredicted += 1,
            }
        }
    }
    (h, split.iter().map(|(page, pt, _)| (*page, *pt)).collect())
}
