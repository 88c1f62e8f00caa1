//! `l2.partition`'s analysis (pure, tested on synthetic cycles and on the H200's committed labels):
//! near/far labels from whole-page first-touch laps of two SMs, the choice of the second SM (the
//! first that labels the lines opposite to SM 0), the fit far = parity(offset & mask) XOR c(page)
//! on half of the pages (slices/partition_pages.rs, the one fit), and its check on the other half:
//! each held-out page's constant from a few probe lines, every other labelled line predicted, for
//! both SMs' laps.

use super::slices::partition_pages::{self as pp, PAGE_LINES};
use memscope_core::{gf2, keys, Confidence, Finding, ProbeOutput, Series};

/// Probe lines per held-out page (its constant is their majority).
pub const PROBE_LINES: usize = 16;
/// Share of lines two SMs must label opposite to be in different partitions.
pub const OPPOSITE_MIN: f64 = 0.9;
/// Held-out accuracy below which the labels are too noisy (or the function is not a parity).
pub const ACCURACY_MIN: f64 = 0.9;
/// Held-out accuracy from which the mask is reported with high confidence.
pub const ACCURACY_HIGH: f64 = 0.99;

/// One lap's labels over its pages, and the modes they were split by.
#[derive(Debug, Clone, PartialEq)]
pub struct LapLabels {
    pub sm: u32,
    pub near_cycles: f64,
    pub next_cycles: f64,
    pub split_cycles: f64,
    /// labels[page][line]: Some(true) far, Some(false) near, None unlabelled.
    pub labels: Vec<Vec<Option<bool>>>,
    /// The cycles labelled, cycles[page][line] (empty when only the labels are known).
    pub cycles: Vec<Vec<u16>>,
}

/// Label one SM's laps (cycles[page][line], first touches indexed by line) against one split over
/// all its pages; the lap's start line on each page (`starts[page]`) is left unlabelled (its hop
/// carries the lap's start, slow whatever the line's home). None without two modes.
pub fn label_lap(sm: u32, cycles: &[Vec<u16>], starts: &[usize]) -> Option<LapLabels> {
    let (near, next, split) = pp::near_far_split(cycles.iter().flat_map(|c| c.iter().copied()))?;
    let labels = cycles
        .iter()
        .enumerate()
        .map(|(p, c)| {
            let mut l = pp::labels(c, split);
            if let Some(x) = starts.get(p).and_then(|&s| l.get_mut(s)) {
                *x = None;
            }
            l
        })
        .collect();
    Some(LapLabels { sm, near_cycles: near, next_cycles: next, split_cycles: split, labels, cycles: cycles.to_vec() })
}

/// Lines both label sets label, and of them those labelled opposite.
pub fn opposite(a: &[Vec<Option<bool>>], b: &[Vec<Option<bool>>]) -> (usize, usize) {
    let mut both = 0;
    let mut opp = 0;
    for (pa, pb) in a.iter().zip(b) {
        for (x, y) in pa.iter().zip(pb) {
            if let (Some(x), Some(y)) = (x, y) {
                both += 1;
                opp += usize::from(x != y);
            }
        }
    }
    (both, opp)
}

/// Whether a candidate's labels of the same page(s) are opposite to SM 0's: the candidate is in
/// the other partition group (at least `OPPOSITE_MIN` of the lines both label).
pub fn is_other_group(sm0: &[Vec<Option<bool>>], candidate: &[Vec<Option<bool>>]) -> bool {
    let (both, opp) = opposite(sm0, candidate);
    both > 0 && opp as f64 >= OPPOSITE_MIN * both as f64
}

/// The check of a fitted mask on held-out pages.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionFit {
    /// The mask fitted on the training pages of the first SM's lap, and of the second's.
    pub mask: u64,
    pub mask_other: u64,
    pub train_pages: Vec<usize>,
    pub test_pages: Vec<usize>,
    /// Held out over the test pages of both laps: lines predicted correctly, lines predicted.
    pub held_out_correct: usize,
    pub held_out_total: usize,
    /// Lines labelled over all pages and both laps, and lines laps held (pages x lines x laps).
    pub labelled: usize,
    pub lines: usize,
    /// Lines both laps label and of them those labelled opposite.
    pub both_labelled: usize,
    pub opposite: usize,
    /// The held-out lines predicted wrongly.
    pub wrong: Vec<Wrong>,
}

/// A held-out line predicted wrongly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrong {
    /// 0: the first SM's lap, 1: the other's.
    pub lap: usize,
    pub page: usize,
    pub line: usize,
    /// Its first touch's cycles, when known.
    pub cycles: Option<u16>,
}

impl PartitionFit {
    pub fn accuracy(&self) -> f64 {
        self.held_out_correct as f64 / self.held_out_total.max(1) as f64
    }
}

/// Why the partition is undetermined.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Undetermined {
    #[error("the first touches from SM {sm} show one mode, not a near and a far one (one L2 partition, or timings too noisy to split)")]
    NoModes { sm: u32 },
    #[error("none of SMs {tried} labels the lines of a page opposite to SM 0 (one L2 partition as seen by them, or labels too noisy)")]
    NoOtherGroup { tried: String },
    #[error(
        "SMs {a} and {b} label {opposite} of {both} lines opposite: they do not split the lines into two partitions"
    )]
    NotSplit { a: u32, b: u32, opposite: usize, both: usize },
    #[error("{labelled} of {lines} lines labelled: too few to fit")]
    TooFewLabels { labelled: usize, lines: usize },
    #[error("fewer than 2 pages: nothing to hold out")]
    TooFewPages,
    #[error("the mask fitted on SM {a}'s laps ({mask_a}) differs from SM {b}'s ({mask_b})")]
    MasksDiffer { a: u32, b: u32, mask_a: String, mask_b: String },
    #[error("the fitted mask {mask} predicts {correct} of {total} held-out lines: labels too noisy, or the partition is not a parity of the offset")]
    TooNoisy { mask: String, correct: usize, total: usize },
}

/// Fit on the even pages of both laps, check on the odd ones (each held-out page's constant from
/// `PROBE_LINES` probe lines of that lap; the constant absorbs the other SM's inversion). The two
/// laps must label most lines opposite (else they do not split the lines); how noisy the labels
/// are is the held-out accuracy's to say.
pub fn fit_and_check(a: &LapLabels, b: &LapLabels) -> Result<PartitionFit, Undetermined> {
    let pages = a.labels.len().min(b.labels.len());
    if pages < 2 {
        return Err(Undetermined::TooFewPages);
    }
    let count = |l: &LapLabels| l.labels.iter().flatten().filter(|x| x.is_some()).count();
    let labelled = count(a) + count(b);
    let lines = 2 * pages * PAGE_LINES;
    let (both, opp) = opposite(&a.labels, &b.labels);
    if 2 * labelled < lines {
        return Err(Undetermined::TooFewLabels { labelled, lines });
    }
    if 2 * opp <= both {
        return Err(Undetermined::NotSplit { a: a.sm, b: b.sm, opposite: opp, both });
    }
    let train_pages: Vec<usize> = (0..pages).step_by(2).collect();
    let test_pages: Vec<usize> = (1..pages).step_by(2).collect();
    let pick = |l: &LapLabels, which: &[usize]| which.iter().map(|&p| l.labels[p].clone()).collect::<Vec<_>>();
    let fit_a = pp::fit_offset_mask(&pick(a, &train_pages));
    let fit_b = pp::fit_offset_mask(&pick(b, &train_pages));
    let (Some(fa), Some(fb)) = (fit_a, fit_b) else {
        return Err(Undetermined::TooFewLabels { labelled, lines });
    };
    if fa.mask != fb.mask {
        return Err(Undetermined::MasksDiffer {
            a: a.sm,
            b: b.sm,
            mask_a: gf2::format_mask(fa.mask),
            mask_b: gf2::format_mask(fb.mask),
        });
    }
    let probe = pp::probe_lines(PROBE_LINES);
    let (oka, na, _) = pp::held_out(fa.mask, &pick(a, &test_pages), &probe);
    let (okb, nb, _) = pp::held_out(fa.mask, &pick(b, &test_pages), &probe);
    let mut wrong = Vec::new();
    for (lap, l) in [a, b].into_iter().enumerate() {
        for (i, line) in pp::held_out_wrong(fa.mask, &pick(l, &test_pages), &probe) {
            let page = test_pages[i];
            let cycles = l.cycles.get(page).and_then(|c| c.get(line)).copied();
            wrong.push(Wrong { lap, page, line, cycles });
        }
    }
    let fit = PartitionFit {
        mask: fa.mask,
        mask_other: fb.mask,
        train_pages,
        test_pages,
        held_out_correct: oka + okb,
        held_out_total: na + nb,
        labelled,
        lines,
        both_labelled: both,
        opposite: opp,
        wrong,
    };
    if fit.held_out_total == 0 || fit.accuracy() < ACCURACY_MIN {
        return Err(Undetermined::TooNoisy {
            mask: gf2::format_mask(fit.mask),
            correct: fit.held_out_correct,
            total: fit.held_out_total,
        });
    }
    Ok(fit)
}

/// What the measurement was, for the findings' method text.
#[derive(Debug, Clone, PartialEq)]
pub struct Method {
    pub pages: usize,
    pub quick: bool,
}

impl Method {
    pub fn text(&self) -> String {
        format!(
            "{} pages of 2 MiB, each one cycle over all its {PAGE_LINES} lines (random order); per page and SM, every \
             line primed at its home slice by reductions of 0, then one thread on the SM (pinned by %smid) chases the \
             cycle once, clock64 around each line's first touch (kernels/partition.cu); each lap split into its near and \
             far mode, the lap's start line left out; far from SM 0 = parity(offset & mask) XOR c(page) fitted on the \
             even pages of SM 0's and the other SM's laps, checked on the odd pages (c from {PROBE_LINES} lines, every \
             other line predicted)",
            self.pages
        )
    }
}

/// Hops from a lap's start within which a wrong line counts as "early" in the findings' note.
pub const EARLY_HOPS: usize = 64;
/// Bins of the first-touch series (cycles).
const BIN_CYCLES: usize = 8;
const SERIES_MAX_CYCLES: usize = 1200;

/// What the wrongly predicted held-out lines were, in words: per lap, their first touches
/// against the split and how many lay within the first `EARLY_HOPS` hops of their lap
/// (`hop_of_line[line]`: the hop that loads the line; empty when unknown).
pub fn wrong_text(f: &PartitionFit, laps: [&LapLabels; 2], hop_of_line: &[usize]) -> String {
    let mut parts = Vec::new();
    for (i, l) in laps.iter().enumerate() {
        let w: Vec<&Wrong> = f.wrong.iter().filter(|w| w.lap == i).collect();
        let cyc: Vec<f64> = w.iter().filter_map(|w| w.cycles).map(f64::from).collect();
        let mut text = format!("SM {}: {}", l.sm, w.len());
        if !cyc.is_empty() {
            let below = cyc.iter().filter(|&&c| c <= l.split_cycles).count();
            text += &format!(
                " ({below} at or below the split, {} above; median {:.0} cycles)",
                cyc.len() - below,
                memscope_core::stats::median(&cyc)
            );
        }
        if !hop_of_line.is_empty() {
            let early = w.iter().filter(|w| hop_of_line.get(w.line).is_some_and(|&h| h < EARLY_HOPS)).count();
            text += &format!(", {early} within the lap's first {EARLY_HOPS} hops");
        }
        parts.push(text);
    }
    format!("held-out lines predicted wrongly: {}", parts.join("; "))
}

/// A lap's first touches as a histogram over all its pages (counts per `BIN_CYCLES` cycles).
fn histogram(l: &LapLabels) -> Option<Series> {
    if l.cycles.is_empty() {
        return None;
    }
    let mut y = vec![0.0; SERIES_MAX_CYCLES / BIN_CYCLES];
    for &c in l.cycles.iter().flatten() {
        if let Some(b) = y.get_mut(c as usize / BIN_CYCLES) {
            *b += 1.0;
        }
    }
    Some(Series {
        description: format!(
            "first touches from SM {} over every page, per {BIN_CYCLES} cycles (split at {:.0})",
            l.sm, l.split_cycles
        ),
        x_name: "first touch".into(),
        x_unit: "cycles".into(),
        y_name: "lines".into(),
        y_unit: String::new(),
        x: (0..y.len()).map(|i| (i * BIN_CYCLES) as f64).collect(),
        y,
        y_spread: None,
        marks: vec![l.near_cycles, l.split_cycles, l.next_cycles],
    })
}

/// The findings (keys l2.partition.*) from the labels of SM 0's laps and the other SM's (None:
/// no SM of the other group was found, `why`), the hop of each line in the laps (empty when
/// unknown), and the probe's wall time.
pub fn analyze(
    sm0: Option<&LapLabels>,
    other: Result<&LapLabels, Undetermined>,
    method: &Method,
    hop_of_line: &[usize],
    seconds: f64,
) -> ProbeOutput {
    let mut out = ProbeOutput::default();
    let m = method.text();
    for (key, lap) in
        [("l2.partition.first_touches", sm0), ("l2.partition.first_touches_other", other.as_ref().ok().copied())]
    {
        if let Some(h) = lap.and_then(histogram) {
            out.series(key, h);
        }
    }
    let result = match (sm0, other) {
        (None, _) => Err(Undetermined::NoModes { sm: 0 }),
        (Some(_), Err(e)) => Err(e),
        (Some(a), Ok(b)) => fit_and_check(a, b).map(|f| (a, b, f)),
    };
    match result {
        Ok((a, b, f)) => {
            let confidence = if f.accuracy() >= ACCURACY_HIGH { Confidence::High } else { Confidence::Medium };
            out.finding(
                keys::L2_PARTITION_OFFSET_MASK,
                Finding::text(&gf2::format_mask(f.mask), &m, confidence).with_note(&format!(
                    "the L2 partition a line is homed in: far from SM {} = parity(offset within the 2 MiB page & \
                     mask) XOR c(page), c the page frame's share (one unknown constant per page); SM {} labels \
                     {} of {} lines opposite, its own fit gives {}",
                    a.sm,
                    b.sm,
                    f.opposite,
                    f.both_labelled,
                    gf2::format_mask(f.mask_other)
                )),
            );
            out.finding(
                keys::L2_PARTITION_HELD_OUT_ACCURACY,
                Finding::number(f.accuracy(), "ratio", &m, confidence).with_note(&format!(
                    "{} of {} lines of the held-out pages {:?} predicted (both laps); {}",
                    f.held_out_correct,
                    f.held_out_total,
                    f.test_pages,
                    wrong_text(&f, [a, b], hop_of_line)
                )),
            );
            out.finding(
                keys::L2_PARTITION_LINES_LABELLED,
                Finding::integer(f.labelled as u64, "lines", &m, Confidence::High).with_note(&format!(
                    "of {} first touches; near / far / split cycles: SM {} {:.0} / {:.0} / {:.0}, SM {} {:.0} / {:.0} / \
                     {:.0}",
                    f.lines,
                    a.sm,
                    a.near_cycles,
                    a.next_cycles,
                    a.split_cycles,
                    b.sm,
                    b.near_cycles,
                    b.next_cycles,
                    b.split_cycles
                )),
            );
            out.finding(
                keys::L2_PARTITION_SMS,
                Finding::json(serde_json::json!([a.sm, b.sm]), "", &m, Confidence::High)
                    .with_note("the two SMs whose laps were fitted: SM 0 and the first SM found in the other group"),
            );
        }
        Err(e) => {
            let why = e.to_string();
            out.finding(keys::L2_PARTITION_OFFSET_MASK, Finding::undetermined("", &m, &why));
            out.finding(keys::L2_PARTITION_HELD_OUT_ACCURACY, Finding::undetermined("ratio", &m, &why));
            let labelled = sm0
                .map(|a| a.labels.iter().flatten().filter(|x| x.is_some()).count())
                .map(|n| Finding::integer(n as u64, "lines", &m, Confidence::High).with_note("SM 0's laps only"))
                .unwrap_or_else(|| Finding::undetermined("lines", &m, &why));
            out.finding(keys::L2_PARTITION_LINES_LABELLED, labelled);
        }
    }
    out.finding(
        keys::L2_PARTITION_PROBE_SECONDS,
        Finding::number(
            (seconds * 100.0).round() / 100.0,
            "s",
            "wall time of the probe (kernel compile included)",
            Confidence::High,
        ),
    );
    out
}
