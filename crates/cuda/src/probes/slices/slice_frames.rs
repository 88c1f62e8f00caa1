//! The page frame's share of the residue model (slice_mod.rs) as a function of the frame number:
//! over the pages of one allocation, taken as consecutive frames first + page from an unknown
//! first frame (as partition_pages.rs takes them for the partition bit), each term's flip is
//! parity(frame & a_t) XOR b_t, the partition constant parity(frame & f) XOR k, and the constant
//! c0 + step * page modulo M (the frame number entering the sum as an integer). Checked by leaving
//! each page out: its share from the other pages' shares alone, every line of it predicted.

use super::slice_fit::{pages_of, HeldOut, Point};
use super::slice_mod::{PageTerms, ResidueModel};
use memscope_core::gf2;
use std::collections::HashMap;

/// One fit of the shares over consecutive frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareFit {
    /// The first page's frame number modulo 2^bits.
    pub first_frame_mod: u64,
    pub bits: u32,
    /// Per term: the frame mask and the constant of its flip.
    pub flip_masks: Vec<u64>,
    pub flip_constants: u64,
    pub partition_mask: u64,
    pub partition_constant: u8,
    /// The constant of page p is constant0 + step * p (mod M).
    pub constant0: u64,
    pub step: u64,
    pub modulus: u64,
    /// Known pages whose constant the start and step explain.
    pub constants_explained: usize,
    /// The first known page's frame, and the frame bits that varied over the known pages: a page
    /// whose frame differs from the first in another bit is not predicted.
    pub base_frame: u64,
    pub varying: u64,
}

impl ShareFit {
    fn frame(&self, page: usize) -> u64 {
        (self.first_frame_mod + page as u64) & ((1 << self.bits) - 1)
    }

    /// The share this fit gives page `page` of the allocation; None when its frame has a bit
    /// that never varied over the known pages.
    pub fn share(&self, page: usize) -> Option<PageTerms> {
        let f = self.frame(page);
        if (f ^ self.base_frame) & !self.varying != 0 {
            return None;
        }
        let flips =
            self.flip_masks.iter().enumerate().fold(0u64, |acc, (t, &m)| {
                acc | u64::from(gf2::parity(f & m) ^ (self.flip_constants >> t & 1) as u8) << t
            });
        Some(PageTerms {
            flips,
            constant: (self.constant0 + self.step * page as u64) % self.modulus,
            partition: gf2::parity(f & self.partition_mask) ^ self.partition_constant,
        })
    }
}

/// Every first frame (modulo 2^bits) for which each term's flip and the partition constant are
/// XOR-linear in the frame over the known pages' shares, with the constant's step and start that
/// explain the most pages. Empty when no first frame fits.
pub fn fit_shares(shares: &[(usize, PageTerms)], terms: usize, modulus: u64, bits: u32) -> Vec<ShareFit> {
    let mut best = (0usize, 0u64, 0u64);
    for step in 0..modulus {
        for c0 in 0..modulus {
            let n = shares.iter().filter(|(p, s)| (c0 + step * *p as u64) % modulus == s.constant).count();
            if n > best.0 {
                best = (n, step, c0);
            }
        }
    }
    let mut out = Vec::new();
    for first_frame_mod in 0..1u64 << bits {
        let frame = |p: usize| (first_frame_mod + p as u64) & ((1 << bits) - 1);
        let solve = |bit: &dyn Fn(&PageTerms) -> bool| {
            gf2::solve_equations(shares.iter().map(|(p, s)| ((frame(*p) << 1) | 1, bit(s)))).map(|(x, _)| x)
        };
        let Some(part) = solve(&|s| s.partition == 1) else { continue };
        let mut flip_masks = Vec::new();
        let mut flip_constants = 0u64;
        for t in 0..terms {
            match solve(&|s| s.flips >> t & 1 == 1) {
                Some(x) => {
                    flip_masks.push(x >> 1);
                    flip_constants |= (x & 1) << t;
                }
                None => break,
            }
        }
        if flip_masks.len() == terms {
            let base_frame = shares.first().map_or(0, |(p, _)| frame(*p));
            let varying = shares.iter().fold(0, |acc, (p, _)| acc | (frame(*p) ^ base_frame));
            out.push(ShareFit {
                base_frame,
                varying,
                first_frame_mod,
                bits,
                flip_masks,
                flip_constants,
                partition_mask: part >> 1,
                partition_constant: (part & 1) as u8,
                constant0: best.2,
                step: best.1,
                modulus,
                constants_explained: best.0,
            });
        }
    }
    out
}

fn page_lines(points: &[Point], page: usize) -> Vec<(u64, usize)> {
    points.iter().filter(|p| p.page == page).map(|p| (p.offset, p.label)).collect()
}

/// The shares of a run's pages in the model's naming: the first page renamed from its lines, the
/// others aligned through that naming, then the naming from every page's lines and the pages
/// aligned again. Returns the shares and the renaming (run's label -> model's label).
pub fn run_shares(
    model: &ResidueModel,
    points: &[Point],
    pages: &[usize],
) -> (Vec<(usize, PageTerms)>, HashMap<usize, usize>) {
    let Some(&first) = pages.first() else { return (Vec::new(), HashMap::new()) };
    let (_, _, rename) = model.align_page_renamed(&page_lines(points, first));
    run_shares_named(model, points, pages, rename)
}

/// `run_shares` from the first page's renaming (`align_page_renamed` of its lines) in hand.
fn run_shares_named(
    model: &ResidueModel,
    points: &[Point],
    pages: &[usize],
    mut rename: HashMap<usize, usize>,
) -> (Vec<(usize, PageTerms)>, HashMap<usize, usize>) {
    let mut shares = Vec::new();
    for _ in 0..2 {
        shares.clear();
        let mut meet: HashMap<usize, HashMap<usize, usize>> = HashMap::new();
        for &page in pages {
            let l = page_lines(points, page);
            let named: Vec<(u64, usize)> = l.iter().filter_map(|&(o, x)| rename.get(&x).map(|&t| (o, t))).collect();
            let (pt, _) = model.align_page(&named);
            for &(o, x) in &l {
                if let Some(&t) = model.names.get(&model.slice(o, &pt)) {
                    *meet.entry(x).or_default().entry(t).or_default() += 1;
                }
            }
            shares.push((page, pt));
        }
        rename = meet
            .iter()
            .map(|(&x, m)| (x, *m.iter().max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t))).unwrap().0))
            .collect();
    }
    (shares, rename)
}

/// A representation of the model with the renaming (run's label -> model's label) a page gives it.
type NamedForm = (ResidueModel, HashMap<usize, usize>);

/// The model's two representations (one page cannot tell them apart, slice_mod.rs: the model and
/// its reflection), each with the renaming `page`'s lines give it (the costly step of
/// `run_shares`, the same for every set of pages that starts at `page`).
fn named_forms(model: &ResidueModel, points: &[Point], page: usize) -> Vec<NamedForm> {
    let lines = page_lines(points, page);
    [model.clone(), model.reflected()]
        .into_iter()
        .map(|m| {
            let (_, _, rename) = m.align_page_renamed(&lines);
            (m, rename)
        })
        .collect()
}

/// One representation of the residue model with a run's shares over some pages in its naming,
/// the renaming (run's label -> model's label), the frame fits of those shares, and how many of
/// those pages' lines the shares name as the run does.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameForm {
    pub model: ResidueModel,
    pub rename: HashMap<usize, usize>,
    pub shares: Vec<(usize, PageTerms)>,
    pub fits: Vec<ShareFit>,
    pub agreement: usize,
}

/// Of the model's two representations (one page cannot tell them apart, slice_mod.rs), the one
/// whose constants follow the frame over `pages` (the most pages explained); ties go to the form
/// whose shares name more of those pages' lines as the run does (and then to the reflection).
pub fn frame_form(model: &ResidueModel, points: &[Point], pages: &[usize], bits: u32) -> FrameForm {
    let forms = pages.first().map_or_else(
        || vec![(model.clone(), HashMap::new()), (model.reflected(), HashMap::new())],
        |&first| named_forms(model, points, first),
    );
    frame_form_of(&forms, points, pages, bits)
}

/// `frame_form` from `named_forms` of the first of `pages`.
fn frame_form_of(forms: &[NamedForm], points: &[Point], pages: &[usize], bits: u32) -> FrameForm {
    forms
        .iter()
        .map(|(m, first_rename)| {
            let (shares, rename) = run_shares_named(m, points, pages, first_rename.clone());
            let fits = fit_shares(&shares, m.terms.len(), m.modulus, bits);
            let agreement = shares_agreement(m, points, &shares, &rename);
            FrameForm { model: m.clone(), rename, shares, fits, agreement }
        })
        .max_by_key(|f| (f.fits.first().map_or(0, |f| f.constants_explained), f.agreement))
        .expect("two representations")
}

/// Why a page's share is not predicted from the frame fits of other pages' shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unpredicted {
    /// No first frame fits the other pages' shares.
    NoFit,
    /// The page's frame sets a bit that the other pages never vary (under some fit).
    NewFrameBit,
    /// The fits (first frames) give the page different shares.
    FitsDisagree,
}

impl Unpredicted {
    pub fn text(self) -> &'static str {
        match self {
            Unpredicted::NoFit => "the other pages' shares fit no frame function",
            Unpredicted::NewFrameBit => "its frame sets a bit no other page varies",
            Unpredicted::FitsDisagree => "the first frames that fit the other pages give it different shares",
        }
    }
}

/// The share every fit gives a page, or why there is none: no fit, a fit that cannot predict
/// the page (its frame sets a bit the known pages never varied), fits that disagree (the known
/// pages do not fix the frames enough).
pub fn predicted_share(fits: &[ShareFit], page: usize) -> Result<PageTerms, Unpredicted> {
    let shares: Vec<Option<PageTerms>> = fits.iter().map(|f| f.share(page)).collect();
    let first = shares.first().ok_or(Unpredicted::NoFit)?.ok_or(Unpredicted::NewFrameBit)?;
    if shares.iter().any(Option::is_none) {
        return Err(Unpredicted::NewFrameBit);
    }
    if shares.iter().all(|s| *s == Some(first)) {
        Ok(first)
    } else {
        Err(Unpredicted::FitsDisagree)
    }
}

/// One page left out (`held_out_pages`): its lines, and why its share was not predicted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLeftOut {
    pub page: usize,
    pub lines: HeldOut,
    pub unpredicted: Option<Unpredicted>,
}

/// Leave each page of `held` out in turn: the shares and naming from the run's other pages, the
/// page's share from the frame fits of those shares (when they all agree, `predicted_share`), and
/// every line of the page predicted; a page without a predicted share counts every line
/// unpredicted.
pub fn held_out_pages(model: &ResidueModel, points: &[Point], bits: u32, held: &[usize]) -> Vec<PageLeftOut> {
    let pages = pages_of(points);
    // The other pages start at the first page, or at the second when the first is left out.
    let mut named: HashMap<usize, Vec<NamedForm>> = HashMap::new();
    held.iter()
        .map(|&q| {
            let others: Vec<usize> = pages.iter().copied().filter(|&p| p != q).collect();
            let form = match others.first() {
                Some(&first) => {
                    let forms = named.entry(first).or_insert_with(|| named_forms(model, points, first));
                    frame_form_of(forms, points, &others, bits)
                }
                None => frame_form(model, points, &others, bits),
            };
            let share = predicted_share(&form.fits, q);
            let mut h = HeldOut::default();
            for p in points.iter().filter(|p| p.page == q) {
                h.total += 1;
                match share.ok().and_then(|s| form.model.names.get(&form.model.slice(p.offset, &s))) {
                    Some(&t) => h.right += usize::from(form.rename.get(&p.label) == Some(&t)),
                    None => h.unpredicted += 1,
                }
            }
            PageLeftOut { page: q, lines: h, unpredicted: share.err() }
        })
        .collect()
}

/// Leave each page out (`held_out_pages` over every page). Returns the held-out lines per page
/// (page, lines) and in all.
pub fn held_out_frames(model: &ResidueModel, points: &[Point], bits: u32) -> (Vec<(usize, HeldOut)>, HeldOut) {
    let per_page: Vec<(usize, HeldOut)> =
        held_out_pages(model, points, bits, &pages_of(points)).into_iter().map(|l| (l.page, l.lines)).collect();
    let all = per_page.iter().fold(HeldOut::default(), |a, (_, h)| HeldOut {
        right: a.right + h.right,
        total: a.total + h.total,
        unpredicted: a.unpredicted + h.unpredicted,
    });
    (per_page, all)
}

/// Lines of the shares' pages that `model` under each page's share names as the run does
/// (through `rename`, the run's label -> the model's).
pub fn shares_agreement(
    model: &ResidueModel,
    points: &[Point],
    shares: &[(usize, PageTerms)],
    rename: &HashMap<usize, usize>,
) -> usize {
    let by_page: HashMap<usize, PageTerms> = shares.iter().copied().collect();
    points
        .iter()
        .filter(|p| {
            by_page.get(&p.page).is_some_and(|pt| {
                model.names.get(&model.slice(p.offset, pt)).is_some_and(|t| rename.get(&p.label) == Some(t))
            })
        })
        .count()
}
