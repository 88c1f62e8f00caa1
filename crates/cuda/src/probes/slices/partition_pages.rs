//! The L2 partition bit over every line of many 2 MiB pages (docs/L2_SLICES.md, "The partition bit
//! over many pages"): near/far labels from first-touch laps (scripts/peers/l2_partition_peer.cu
//! writes them as cycles), a fit of far = parity(offset & mask) XOR c(page) with one unknown
//! constant per page (the page frame's share, which memscope cannot read), and the accuracy of that
//! function on lines it was not fitted on.

use memscope_core::gf2;
use serde::{Deserialize, Serialize};

/// Lines of a 2 MiB page.
pub const PAGE_LINES: usize = 16384;
const LINE_BYTES: u64 = 128;
/// Offset bits a mask may use: the line's bits 7..20.
pub const OFFSET_BITS: u64 = ((1 << 21) - 1) & !(LINE_BYTES - 1);
/// The peer's file magic ("L2PART").
pub const PEER_MAGIC: u64 = 0x4c32_5041_5254;
/// Cycles at or above which a first touch is not an L2 hit (left unlabelled).
const MAX_HIT_CYCLES: u16 = 2000;

/// One file of the peer: per page and lap, cycles of each line's first touch (0: lap failed).
#[derive(Debug, Clone, PartialEq)]
pub struct PeerRun {
    pub base: u64,
    pub seed: u64,
    /// 2 MiB pages allocated (and left unused) before the measured ones.
    pub skip_pages: u64,
    /// The SM of each lap (the last lap repeats the first SM from another start).
    pub lap_sms: Vec<u32>,
    /// cycles[page][lap][line].
    pub cycles: Vec<Vec<Vec<u16>>>,
}

/// What is wrong with a peer file or a labelled run; each names the offending value.
#[derive(Debug, thiserror::Error)]
pub enum PartitionDataError {
    #[error("{len} bytes: shorter than the header")]
    ShortHeader { len: usize },
    #[error("magic {magic:#x}: not an l2_partition_peer file")]
    Magic { magic: u64 },
    #[error("{lines} lines per page, {laps} laps: expected {expected} lines and 1..64 laps")]
    Shape { lines: usize, laps: usize, expected: usize },
    #[error("{len} bytes: {pages} pages of {laps} laps need {want}")]
    Length { len: usize, pages: usize, laps: usize, want: usize },
    #[error("lap {lap} (SM {sm}): no near and far modes")]
    NoModes { lap: usize, sm: u32 },
    #[error("page {page}: {digits} hex digits, expected {expected}")]
    BitmapLength { page: usize, digits: usize, expected: usize },
    #[error("page {page}: not hex")]
    BitmapNotHex { page: usize },
    #[error("lap {lap}: SM {train_sm} in one run, {test_sm} in the other")]
    SmMismatch { lap: usize, train_sm: u32, test_sm: u32 },
    #[error("lap {lap}: nothing labelled")]
    NothingLabelled { lap: usize },
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

/// Read the peer's output (layout in scripts/peers/l2_partition_peer.cu); Err names what is wrong.
pub fn parse_peer(bytes: &[u8]) -> Result<PeerRun, PartitionDataError> {
    let h = |i: usize| u64_at(bytes, 8 * i).ok_or(PartitionDataError::ShortHeader { len: bytes.len() });
    if h(0)? != PEER_MAGIC {
        return Err(PartitionDataError::Magic { magic: h(0)? });
    }
    let (pages, laps, lines, base, seed, skip_pages) =
        (h(1)? as usize, h(2)? as usize, h(3)? as usize, h(4)?, h(5)?, h(6)?);
    if lines != PAGE_LINES || laps == 0 || laps > 64 {
        return Err(PartitionDataError::Shape { lines, laps, expected: PAGE_LINES });
    }
    let body = 64 + 4 * laps;
    let want = body + pages * laps * lines * 2;
    if bytes.len() != want {
        return Err(PartitionDataError::Length { len: bytes.len(), pages, laps, want });
    }
    let lap_sms = (0..laps).map(|l| u32::from_le_bytes(bytes[64 + 4 * l..68 + 4 * l].try_into().unwrap())).collect();
    let word = |i: usize| u16::from_le_bytes([bytes[body + 2 * i], bytes[body + 2 * i + 1]]);
    let cycles = (0..pages)
        .map(|p| (0..laps).map(|l| (0..lines).map(|x| word((p * laps + l) * lines + x)).collect()).collect())
        .collect();
    Ok(PeerRun { base, seed, skip_pages, lap_sms, cycles })
}

/// The near mode of first-touch cycles, the next mode above it, and the split halfway between:
/// the two lowest peaks of a histogram (4-cycle bins, summed over 7 bins; a peak is the largest
/// sum within 32 cycles either side and holds at least 2 % of the values; peaks within 25 % of a
/// lower one are that one), each refined to the mean of the values within 16 cycles. The lowest
/// two, not the two largest, because on the H200 the first lap after a page is primed finds some
/// far lines slower still (about 665 against 470 cycles, near 296); and 25 %, because near hits
/// from some SMs form two peaks about 15 % apart (269 and 309 cycles from SM 123). Values of 0 (no lap) or at
/// least 2000 cycles (not an L2 hit) are left out. None without two modes.
pub fn near_far_split(values: impl IntoIterator<Item = u16>) -> Option<(f64, f64, f64)> {
    const BIN: usize = 4;
    let v: Vec<u16> = values.into_iter().filter(|&c| c > 0 && c < MAX_HIT_CYCLES).collect();
    let nbins = MAX_HIT_CYCLES as usize / BIN;
    let mut hist = vec![0usize; nbins];
    for &c in &v {
        hist[c as usize / BIN] += 1;
    }
    let window = |i: usize, r: usize| i.saturating_sub(r)..(i + r + 1).min(nbins);
    let smooth: Vec<usize> = (0..nbins).map(|i| hist[window(i, 3)].iter().sum()).collect();
    let refine = |i: usize| {
        let center = (i * BIN + BIN / 2) as f64;
        let near: Vec<f64> = v.iter().map(|&c| f64::from(c)).filter(|c| (c - center).abs() <= 16.0).collect();
        near.iter().sum::<f64>() / near.len().max(1) as f64
    };
    let mut peaks: Vec<f64> = Vec::new();
    for i in 0..nbins {
        let w = window(i, 8);
        let top = smooth[w.clone()].iter().copied().max().unwrap_or(0);
        let first_top = w.clone().find(|&j| smooth[j] == top) == Some(i);
        if smooth[i] > 0 && smooth[i] == top && first_top && smooth[i] * 50 >= v.len() {
            let m = refine(i);
            if peaks.last().is_none_or(|&p| m > p * 1.25) {
                peaks.push(m);
            }
        }
        if peaks.len() == 2 {
            break;
        }
    }
    match peaks[..] {
        [near, next] => Some((near, next, (near + next) / 2.0)),
        _ => None,
    }
}

/// Far (true) or near labels of one lap's cycles against a split; unlabelled where the cycles were
/// left out of the modes.
pub fn labels(cycles: &[u16], split: f64) -> Vec<Option<bool>> {
    cycles.iter().map(|&c| (c > 0 && c < MAX_HIT_CYCLES).then_some(f64::from(c) > split)).collect()
}

/// far = parity(offset & mask) XOR constants[page], fitted over many pages.
#[derive(Debug, Clone, PartialEq)]
pub struct OffsetMaskFit {
    pub mask: u64,
    /// Per page: the constant (majority of label XOR parity over its labelled lines).
    pub constants: Vec<u8>,
    /// Per offset bit 7..20: pairs of labelled lines one bit apart (over all pages) whose labels
    /// differ, and all such pairs: a bit of the mask is one the majority says flips the label.
    pub bit_votes: Vec<(u32, usize, usize)>,
    /// Per page: labelled lines, and of them those the fitted function (with the page's constant)
    /// labels alike.
    pub per_page: Vec<(usize, usize)>,
}

impl OffsetMaskFit {
    /// Labelled lines over all pages, and those the function labels alike.
    pub fn agreement(&self) -> (usize, usize) {
        self.per_page.iter().fold((0, 0), |(a, b), &(n, ok)| (a + n, b + ok))
    }
}

fn far_of(mask: u64, line: usize, constant: u8) -> bool {
    (gf2::parity((line as u64 * LINE_BYTES) & mask) ^ constant) == 1
}

/// Fit the mask over offset bits 7..20 from pages of labels (each indexed by line, PAGE_LINES
/// long): each bit by majority over all pairs of labelled lines that differ in that bit alone
/// (robust to a few wrong labels, exact for an affine function), then each page's constant by
/// majority. None when no page has a labelled pair.
pub fn fit_offset_mask(pages: &[Vec<Option<bool>>]) -> Option<OffsetMaskFit> {
    let mut mask = 0u64;
    let mut bit_votes = Vec::new();
    for bit in 7..21u32 {
        let step = 1usize << (bit - 7);
        let (mut differ, mut pairs) = (0usize, 0usize);
        for page in pages {
            for x in (0..page.len()).filter(|x| x & step == 0) {
                if let (Some(a), Some(b)) = (page[x], page.get(x | step).copied().flatten()) {
                    pairs += 1;
                    differ += usize::from(a != b);
                }
            }
        }
        if 2 * differ > pairs {
            mask |= 1 << bit;
        }
        bit_votes.push((bit, differ, pairs));
    }
    if bit_votes.iter().all(|&(_, _, n)| n == 0) {
        return None;
    }
    let constants: Vec<u8> = pages
        .iter()
        .map(|page| {
            let (ones, n) = page.iter().enumerate().fold((0usize, 0usize), |(o, n), (x, l)| match l {
                Some(f) => (o + usize::from(far_of(mask, x, 0) != *f), n + 1),
                None => (o, n),
            });
            u8::from(2 * ones > n)
        })
        .collect();
    let per_page = pages
        .iter()
        .zip(&constants)
        .map(|(page, &c)| {
            let l: Vec<(usize, bool)> = page.iter().enumerate().filter_map(|(x, l)| Some((x, (*l)?))).collect();
            (l.len(), l.iter().filter(|&&(x, f)| far_of(mask, x, c) == f).count())
        })
        .collect();
    Some(OffsetMaskFit { mask, constants, bit_votes, per_page })
}

/// Held-out accuracy of a mask: on each page the constant is learned from the labels of the
/// `probe_lines` (majority; their order is the probe's), and every other labelled line of the
/// page is predicted. Returns (lines predicted correctly, lines predicted, pages whose probe lines
/// had no label).
pub fn held_out(mask: u64, pages: &[Vec<Option<bool>>], probe_lines: &[usize]) -> (usize, usize, usize) {
    let (mut ok, mut total) = (0, 0);
    let blind = held_out_each(mask, pages, probe_lines, |_, _, right| {
        total += 1;
        ok += usize::from(right);
    });
    (ok, total, blind)
}

/// The held-out lines `held_out` predicts wrongly, as (page, line).
pub fn held_out_wrong(mask: u64, pages: &[Vec<Option<bool>>], probe_lines: &[usize]) -> Vec<(usize, usize)> {
    let mut wrong = Vec::new();
    held_out_each(mask, pages, probe_lines, |p, x, right| {
        if !right {
            wrong.push((p, x));
        }
    });
    wrong
}

/// `held_out`'s walk: each predicted line as (page, line, predicted right); returns the pages
/// whose probe lines had no label.
fn held_out_each(
    mask: u64,
    pages: &[Vec<Option<bool>>],
    probe_lines: &[usize],
    mut visit: impl FnMut(usize, usize, bool),
) -> usize {
    let mut blind = 0;
    for (p, page) in pages.iter().enumerate() {
        let votes: Vec<u8> =
            probe_lines.iter().filter_map(|&x| Some(u8::from(far_of(mask, x, 0) != (*page.get(x)?)?))).collect();
        if votes.is_empty() {
            blind += 1;
            continue;
        }
        let c = u8::from(2 * votes.iter().map(|&v| v as usize).sum::<usize>() > votes.len());
        for (x, l) in page.iter().enumerate() {
            if let (Some(f), false) = (l, probe_lines.contains(&x)) {
                visit(p, x, far_of(mask, x, c) == *f);
            }
        }
    }
    blind
}

/// Whether the pages' constants are an affine GF(2) function of their page numbers (virtual
/// address >> 21, say): the function's mask over the page-number bits (bit 0 of the solution
/// stands for the constant) and the rank of the system, or None when no such function fits.
pub fn constants_affine_in(page_numbers: &[u64], constants: &[u8]) -> Option<(u64, u8, usize)> {
    let rows = page_numbers.iter().zip(constants).map(|(&n, &c)| ((n << 1) | 1, c == 1));
    let (x, rank) = gf2::solve_equations(rows)?;
    Some((x >> 1, (x & 1) as u8, rank))
}

/// The probe lines of the held-out check: the first `k` lines of a fixed scrambled order (line
/// numbers within a page).
pub fn probe_lines(k: usize) -> Vec<usize> {
    (0..k.min(PAGE_LINES)).map(|i| (i * 7919 + 13) % PAGE_LINES).collect()
}

/// One peer run reduced to labels (what results keep: far lines as bitmaps, gzip-friendly).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelRun {
    pub base: u64,
    pub seed: u64,
    pub skip_pages: u64,
    pub laps: Vec<LabelLap>,
}

/// One lap (one SM) over every page of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelLap {
    pub sm: u32,
    /// The lap's near mode, the next mode above it and the split (cycles, over all its pages).
    pub near_cycles: f64,
    pub next_cycles: f64,
    pub split_cycles: f64,
    /// Per page: the far lines, a bitmap in hex (byte x / 8, bit x % 8 for line x).
    pub far_hex: Vec<String>,
    /// (page, line) of the lines left unlabelled.
    pub unlabelled: Vec<(usize, usize)>,
}

impl LabelRun {
    /// Label every lap of a peer run (one split per lap over all its pages); Err names a lap
    /// without two modes.
    pub fn from_peer(run: &PeerRun) -> Result<LabelRun, PartitionDataError> {
        let laps = (0..run.lap_sms.len())
            .map(|l| {
                let (near, next, split) = near_far_split(run.cycles.iter().flat_map(|p| p[l].iter().copied()))
                    .ok_or(PartitionDataError::NoModes { lap: l, sm: run.lap_sms[l] })?;
                let mut unlabelled = Vec::new();
                let far_hex = run
                    .cycles
                    .iter()
                    .enumerate()
                    .map(|(p, page)| {
                        let lab = labels(&page[l], split);
                        let mut bytes = vec![0u8; PAGE_LINES / 8];
                        for (x, f) in lab.iter().enumerate() {
                            match f {
                                Some(true) => bytes[x / 8] |= 1 << (x % 8),
                                Some(false) => {}
                                None => unlabelled.push((p, x)),
                            }
                        }
                        bytes.iter().map(|b| format!("{b:02x}")).collect()
                    })
                    .collect();
                Ok(LabelLap {
                    sm: run.lap_sms[l],
                    near_cycles: near,
                    next_cycles: next,
                    split_cycles: split,
                    far_hex,
                    unlabelled,
                })
            })
            .collect::<Result<_, PartitionDataError>>()?;
        Ok(LabelRun { base: run.base, seed: run.seed, skip_pages: run.skip_pages, laps })
    }
}

impl LabelLap {
    /// The labels of every page (indexed by line); Err when a bitmap is malformed.
    pub fn pages(&self) -> Result<Vec<Vec<Option<bool>>>, PartitionDataError> {
        let mut pages = self
            .far_hex
            .iter()
            .enumerate()
            .map(|(p, h)| {
                if h.len() != PAGE_LINES / 4 || !h.is_ascii() {
                    return Err(PartitionDataError::BitmapLength {
                        page: p,
                        digits: h.len(),
                        expected: PAGE_LINES / 4,
                    });
                }
                let bytes = (0..PAGE_LINES / 8)
                    .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16))
                    .collect::<Result<Vec<u8>, _>>()
                    .map_err(|_| PartitionDataError::BitmapNotHex { page: p })?;
                Ok((0..PAGE_LINES).map(|x| Some(bytes[x / 8] >> (x % 8) & 1 == 1)).collect::<Vec<Option<bool>>>())
            })
            .collect::<Result<Vec<_>, PartitionDataError>>()?;
        for &(p, x) in &self.unlabelled {
            if let Some(l) = pages.get_mut(p).and_then(|pg| pg.get_mut(x)) {
                *l = None;
            }
        }
        Ok(pages)
    }
}

/// One lap's function fitted on one run and checked on another run's same lap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LapCheck {
    pub lap: usize,
    pub sm: u32,
    /// The mask fitted on the training run (hex) and its agreement there (lines, pages).
    pub mask: String,
    pub fit_agree: usize,
    pub fit_lines: usize,
    pub fit_pages: usize,
    /// The training run's page constants, one digit per page.
    pub constants: String,
    /// Whether those constants are an affine function of the virtual page number.
    pub constants_affine_in_virtual_page: bool,
    /// Held out: the test run's pages, each constant from `probe_lines` lines, every other
    /// labelled line predicted.
    pub probe_lines: usize,
    pub held_out_correct: usize,
    pub held_out_total: usize,
    pub held_out_pages: usize,
    /// The frame masks (over `frame_bits` bits) whose frame function reproduces every constant
    /// of the training run (one per first frame that fits), the first of them used below.
    pub frame_masks: Vec<String>,
    /// Held out over whole pages of the test run: the frame function's first frame and constant
    /// from one line on each of `probe_pages`, every line of the other pages predicted.
    pub probe_pages: Vec<usize>,
    pub held_out_page_lines_correct: usize,
    pub held_out_page_lines: usize,
    /// Frame functions (first frame, constant) that fit the probe pages.
    pub held_out_page_fits: usize,
}

/// The probe pages of the whole-page check: the first 8 pages and every 8th (pages of one
/// allocation: the first pin the low frame bits, the others the carries into the higher ones).
pub fn probe_pages(pages: usize) -> Vec<usize> {
    (0..pages).filter(|&p| p < 8 || p % 8 == 0).collect()
}

/// Fit each lap of `train` and check it on the same lap of `test` (laps matched by position and
/// SM), constants learned from `k` probe lines per page.
pub fn check_runs(train: &LabelRun, test: &LabelRun, k: usize) -> Result<Vec<LapCheck>, PartitionDataError> {
    let probe = probe_lines(k);
    train
        .laps
        .iter()
        .zip(&test.laps)
        .enumerate()
        .map(|(lap, (a, b))| {
            if a.sm != b.sm {
                return Err(PartitionDataError::SmMismatch { lap, train_sm: a.sm, test_sm: b.sm });
            }
            let train_pages = a.pages()?;
            let fit = fit_offset_mask(&train_pages).ok_or(PartitionDataError::NothingLabelled { lap })?;
            let (fit_lines, fit_agree) = fit.agreement();
            let numbers: Vec<u64> = (0..train_pages.len() as u64).map(|p| (train.base >> 21) + p).collect();
            let test_pages = b.pages()?;
            let (ok, total, blind) = held_out(fit.mask, &test_pages, &probe);
            let known: Vec<(usize, u8)> = fit.constants.iter().copied().enumerate().collect();
            let mut frame_masks: Vec<u64> =
                fit_frames(&known, frame_bits(known.len()), None).iter().map(|f| f.frame_mask).collect();
            frame_masks.sort_unstable();
            frame_masks.dedup();
            let pp = probe_pages(test_pages.len());
            let (page_ok, page_total, page_fits) = frame_masks
                .first()
                .and_then(|&m| held_out_pages(fit.mask, m, &test_pages, &pp, &probe))
                .unwrap_or((0, 0, 0));
            Ok(LapCheck {
                lap,
                sm: a.sm,
                mask: gf2::format_mask(fit.mask),
                fit_agree,
                fit_lines,
                fit_pages: train_pages.len(),
                constants: fit.constants.iter().map(|c| char::from(b'0' + c)).collect(),
                constants_affine_in_virtual_page: constants_affine_in(&numbers, &fit.constants).is_some(),
                probe_lines: probe.len(),
                held_out_correct: ok,
                held_out_total: total,
                held_out_pages: b.far_hex.len() - blind,
                frame_masks: frame_masks.iter().map(|&m| gf2::format_mask(m)).collect(),
                probe_pages: pp,
                held_out_page_lines_correct: page_ok,
                held_out_page_lines: page_total,
                held_out_page_fits: page_fits,
            })
        })
        .collect()
}

/// Frame bits the page term of `pages` consecutive pages is fitted over: enough for twice the
/// pages (the first frame is unknown), at least 7, at most 12.
pub fn frame_bits(pages: usize) -> u32 {
    (usize::BITS - (2 * pages.max(1) - 1).leading_zeros()).clamp(7, 12)
}

/// The page term as a function of the page's frame: c(page) = parity((first + page) & frame_mask)
/// XOR constant, for pages at consecutive frames from an unknown first frame (known modulo
/// 2^bits only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameFit {
    pub frame_mask: u64,
    pub first_frame_mod: u64,
    pub constant: u8,
}

impl FrameFit {
    pub fn constant_of(&self, page: usize) -> u8 {
        gf2::parity((self.first_frame_mod + page as u64) & self.frame_mask) ^ self.constant
    }
}

/// The frame functions over `bits` frame bits that reproduce the constants of the pages listed
/// ((page index in the allocation, constant)): with `masks`, every (first frame, constant) for
/// each of those masks; without, for each first frame the GF(2) solution for mask and constant
/// (free coordinates zero) where the equations are consistent.
pub fn fit_frames(known: &[(usize, u8)], bits: u32, masks: Option<&[u64]>) -> Vec<FrameFit> {
    let mut out = Vec::new();
    for first_frame_mod in 0..1u64 << bits {
        let frame = |p: usize| (first_frame_mod + p as u64) & ((1 << bits) - 1);
        match masks {
            Some(masks) => {
                for &frame_mask in masks {
                    for constant in 0..2u8 {
                        let f = FrameFit { frame_mask, first_frame_mod, constant };
                        if known.iter().all(|&(p, c)| f.constant_of(p) == c) {
                            out.push(f);
                        }
                    }
                }
            }
            None => {
                let rows = known.iter().map(|&(p, c)| ((frame(p) << 1) | 1, c == 1));
                if let Some((x, _)) = gf2::solve_equations(rows) {
                    out.push(FrameFit { frame_mask: x >> 1, first_frame_mod, constant: (x & 1) as u8 });
                }
            }
        }
    }
    out
}

/// Held out over whole pages: each probe page's constant from the labels of `probe_lines` (as in
/// `held_out`), the frame function's first frame and constant from those (frame mask given), and
/// every labelled line of every other page predicted by the majority of the frame functions that
/// fit the probe pages. Returns (correct, predicted, fitting frame functions); None when no frame
/// function fits the probe pages.
pub fn held_out_pages(
    mask: u64,
    frame_mask: u64,
    pages: &[Vec<Option<bool>>],
    probe_pages: &[usize],
    probe_lines: &[usize],
) -> Option<(usize, usize, usize)> {
    let known: Vec<(usize, u8)> = probe_pages
        .iter()
        .filter_map(|&p| {
            let votes: Vec<u8> = probe_lines
                .iter()
                .filter_map(|&x| Some(u8::from(far_of(mask, x, 0) != (*pages.get(p)?.get(x)?)?)))
                .collect();
            (!votes.is_empty())
                .then(|| (p, u8::from(2 * votes.iter().map(|&v| v as usize).sum::<usize>() > votes.len())))
        })
        .collect();
    let fits = fit_frames(&known, frame_bits(pages.len()), Some(&[frame_mask]));
    if fits.is_empty() {
        return None;
    }
    let (mut ok, mut total) = (0, 0);
    for (p, page) in pages.iter().enumerate().filter(|(p, _)| !probe_pages.contains(p)) {
        let ones = fits.iter().filter(|f| f.constant_of(p) == 1).count();
        let c = u8::from(2 * ones > fits.len());
        for (x, l) in page.iter().enumerate() {
            if let Some(f) = l {
                total += 1;
                ok += usize::from(far_of(mask, x, c) == *f);
            }
        }
    }
    Some((ok, total, fits.len()))
}
