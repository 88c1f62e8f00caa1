//! A fit of the slice within a partition from the map's labels (docs/L2_SLICES.md, "What stays
//! undetermined"): the family "a table over an XOR hash", slice = T[H(address)] with H linear over
//! GF(2) and T any table. Within a page the offset enters H linearly and the frame adds one
//! unknown constant, so the label is constant on the cosets of a kernel V (the offset differences
//! that never change the label) and page p reads the table through a shift: label = T[q(offset XOR
//! s_p)], q the coset representative. The kernel is found from dense grids of offsets (every
//! difference of the grid occurs many times), the table and the shifts from the pages, and every
//! accuracy is on lines the fit did not see.

use memscope_core::gf2;
use std::collections::HashMap;

/// Lines of a 2 MiB page, and the offset bits of a line (7..20).
const PAGE_LINES: usize = 1 << 14;
const LINE_SHIFT: u32 = 7;
pub const OFFSET_BITS: u64 = ((1 << 21) - 1) & !((1 << LINE_SHIFT) - 1);

/// One labelled line: its page (of one allocation), offset in the page, slice label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub page: usize,
    pub offset: u64,
    pub label: usize,
}

/// What is wrong with a map file (map.json as the `l2.slices.function` probe keeps it with
/// `MEMSCOPE_SLICES_KEEP`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapDataError {
    #[error("no \"lines\" array")]
    NoLines,
    #[error("no \"label\" array")]
    NoLabels,
    #[error("{lines} lines but {labels} labels")]
    Lengths { lines: usize, labels: usize },
    #[error("line {index}: {text:?} is not a hex address")]
    BadLine { index: usize, text: String },
}

/// The labelled lines of a map file (addresses from the first page's base; unlabelled lines left
/// out).
pub fn points_from_map(v: &serde_json::Value) -> Result<Vec<Point>, MapDataError> {
    let lines = v["lines"].as_array().ok_or(MapDataError::NoLines)?;
    let labels = v["label"].as_array().ok_or(MapDataError::NoLabels)?;
    if lines.len() != labels.len() {
        return Err(MapDataError::Lengths { lines: lines.len(), labels: labels.len() });
    }
    let mut out = Vec::new();
    for (index, (l, lab)) in lines.iter().zip(labels).enumerate() {
        let a = l
            .as_str()
            .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
            .ok_or_else(|| MapDataError::BadLine { index, text: l.to_string() })?;
        if let Some(label) = lab.as_u64() {
            out.push(Point { page: (a >> 21) as usize, offset: a & ((1 << 21) - 1), label: label as usize });
        }
    }
    Ok(out)
}

/// The pages `points` lie on, ascending, each once.
pub fn pages_of(points: &[Point]) -> Vec<usize> {
    let mut pages: Vec<usize> = points.iter().map(|p| p.page).collect();
    pages.sort_unstable();
    pages.dedup();
    pages
}

/// How far two labellings of the same lines are from one partition: the lines of `b` that do not
/// carry the label most of their `a`-class carries (0: the same partition up to naming), and the
/// lines compared. Lines are matched by page and offset.
pub fn relabel_mismatches(a: &[Point], b: &[Point]) -> (usize, usize) {
    let at: HashMap<(usize, u64), usize> = a.iter().map(|p| ((p.page, p.offset), p.label)).collect();
    let mut meet: HashMap<usize, HashMap<usize, usize>> = HashMap::new();
    let mut n = 0;
    for p in b {
        if let Some(&la) = at.get(&(p.page, p.offset)) {
            *meet.entry(la).or_default().entry(p.label).or_default() += 1;
            n += 1;
        }
    }
    let bad = meet.values().map(|m| m.values().sum::<usize>() - m.values().max().copied().unwrap_or(0)).sum();
    (bad, n)
}

/// Pairs of lines of one page whose offsets differ by `delta`, and how many share their label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agreement {
    pub delta: u64,
    pub pairs: usize,
    pub agree: usize,
}

/// The labels of each page as a dense array over its lines (None: not labelled).
fn dense(points: &[Point]) -> HashMap<usize, Vec<Option<usize>>> {
    let mut by_page: HashMap<usize, Vec<Option<usize>>> = HashMap::new();
    for p in points {
        by_page.entry(p.page).or_insert_with(|| vec![None; PAGE_LINES])[(p.offset >> LINE_SHIFT) as usize] =
            Some(p.label);
    }
    by_page
}

/// For every nonzero difference within `mask` (offset bits), the pairs of lines of one page that
/// differ by it and how many of them share their label.
pub fn agreements(points: &[Point], mask: u64) -> Vec<Agreement> {
    let pages = dense(points);
    let mut out = Vec::new();
    for d in line_differences(mask) {
        let (mut pairs, mut agree) = (0, 0);
        for lines in pages.values() {
            for (i, a) in lines.iter().enumerate() {
                let j = i ^ d as usize;
                if let (Some(a), true) = (a, j > i) {
                    if let Some(b) = lines[j] {
                        pairs += 1;
                        agree += usize::from(*a == b);
                    }
                }
            }
        }
        out.push(Agreement { delta: d << LINE_SHIFT, pairs, agree });
    }
    out
}

/// Every nonzero difference of line indices within `mask` (offset bits), in increasing order.
fn line_differences(mask: u64) -> impl Iterator<Item = u64> {
    let m = (mask & OFFSET_BITS) >> LINE_SHIFT;
    std::iter::successors(Some(m.wrapping_neg() & m), move |&d| Some(d.wrapping_sub(m) & m)).take_while(|&d| d != 0)
}

/// A difference under which the labels of a page move together: every pair of lines it joins
/// maps the first line's label to one fixed label (`renames`: some label maps to another; false:
/// the kernel's case, every label to itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symmetry {
    pub delta: u64,
    pub pairs: usize,
    pub renames: bool,
}

/// Every difference within `mask` that joins at least `min_pairs` pairs of lines of one page and
/// maps labels to labels consistently (a fixed renaming of the slices, per page).
pub fn symmetries(points: &[Point], mask: u64, min_pairs: usize) -> Vec<Symmetry> {
    let pages = dense(points);
    let mut out = Vec::new();
    for d in line_differences(mask) {
        let (mut pairs, mut ok, mut renames) = (0, true, false);
        for lines in pages.values() {
            let mut map: HashMap<usize, usize> = HashMap::new();
            for (i, a) in lines.iter().enumerate() {
                if let (Some(a), Some(b)) = (a, lines[i ^ d as usize]) {
                    pairs += 1;
                    renames |= *a != b;
                    ok &= *map.entry(*a).or_insert(b) == b;
                }
            }
        }
        if ok && pairs / 2 >= min_pairs {
            out.push(Symmetry { delta: d << LINE_SHIFT, pairs: pairs / 2, renames });
        }
    }
    out
}

/// The kernel: differences that keep the label on at least `min_share` of at least `min_pairs`
/// pairs, closed under XOR; `violations` counts differences in its span that were tested and did
/// not keep the label (0 when the family fits).
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// Reduced echelon basis (gf2::rref).
    pub basis: Vec<u64>,
    /// Differences with enough pairs to judge, and those of the span among them that failed.
    pub tested: usize,
    pub violations: usize,
}

pub fn fit_kernel(agr: &[Agreement], min_pairs: usize, min_share: f64) -> Kernel {
    let judged: Vec<&Agreement> = agr.iter().filter(|a| a.pairs >= min_pairs).collect();
    let keep = |a: &Agreement| a.agree as f64 >= min_share * a.pairs as f64;
    let basis = gf2::rref(&judged.iter().filter(|a| keep(a)).map(|a| a.delta).collect::<Vec<_>>());
    let violations = judged.iter().filter(|a| gf2::reduce(&basis, a.delta) == 0 && !keep(a)).count();
    Kernel { basis, tested: judged.len(), violations }
}

/// The table model: the kernel, the table over coset representatives (labels of the reference
/// page's naming), each page's shift.
#[derive(Debug, Clone, PartialEq)]
pub struct TableModel {
    pub kernel: Vec<u64>,
    pub table: HashMap<u64, usize>,
    pub shift: HashMap<usize, u64>,
}

/// Each page's labels per coset representative (majority), and how many lines disagree with
/// their coset's majority.
pub fn coset_tables(points: &[Point], kernel: &[u64]) -> (HashMap<usize, HashMap<u64, usize>>, usize) {
    let mut votes: HashMap<(usize, u64), HashMap<usize, usize>> = HashMap::new();
    for p in points {
        *votes.entry((p.page, gf2::reduce(kernel, p.offset))).or_default().entry(p.label).or_default() += 1;
    }
    let mut out: HashMap<usize, HashMap<u64, usize>> = HashMap::new();
    let mut off = 0;
    for ((page, rep), v) in votes {
        let (&best, &n) = v.iter().max_by_key(|(l, n)| (**n, std::cmp::Reverse(**l))).expect("a vote");
        off += v.values().sum::<usize>() - n;
        out.entry(page).or_default().insert(rep, best);
    }
    (out, off)
}

/// Every coset representative of the quotient of `mask`'s span by the kernel: the subsets of the
/// mask's bits that are not pivots of the kernel.
fn representatives(kernel: &[u64], mask: u64) -> Vec<u64> {
    let pivots: u64 = kernel.iter().map(|b| 1u64 << (63 - b.leading_zeros())).fold(0, |a, b| a | b);
    let free = mask & !pivots;
    let mut out = vec![0u64];
    let mut s = 0u64;
    loop {
        s = s.wrapping_sub(free) & free;
        if s == 0 {
            return out;
        }
        out.push(s);
    }
}

/// The shift of `page` (lines `lines`: offset, label) against `table`, and a relabelling of the
/// page's labels to the table's: the shift whose relabelling explains the most lines (each label
/// of the page mapped to the table label it meets most). Returns (shift, lines explained, map).
pub fn align(
    table: &HashMap<u64, usize>,
    kernel: &[u64],
    lines: &[(u64, usize)],
    mask: u64,
    relabel: bool,
) -> (u64, usize, HashMap<usize, usize>) {
    let mut best = (0u64, 0usize, HashMap::new());
    for s in representatives(kernel, mask) {
        let mut meet: HashMap<usize, HashMap<usize, usize>> = HashMap::new();
        for &(o, l) in lines {
            if let Some(&t) = table.get(&gf2::reduce(kernel, o ^ s)) {
                *meet.entry(l).or_default().entry(t).or_default() += 1;
            }
        }
        let map: HashMap<usize, usize> = if relabel {
            meet.iter()
                .map(|(&l, m)| (l, *m.iter().max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t))).unwrap().0))
                .collect()
        } else {
            meet.keys().map(|&l| (l, l)).collect()
        };
        let explained: usize = meet.iter().map(|(l, m)| m.get(&map[l]).copied().unwrap_or(0)).sum();
        if explained > best.1 {
            best = (s, explained, map);
        }
    }
    best
}

/// Fit the table model over the pages of `points` (one naming of labels): each page's coset
/// table, aligned to the table built so far (the first page's shift is 0), pages in order.
pub fn fit_table(points: &[Point], kernel: &[u64], mask: u64) -> TableModel {
    let (tables, _) = coset_tables(points, kernel);
    let mut pages: Vec<usize> = tables.keys().copied().collect();
    pages.sort();
    let mut table: HashMap<u64, usize> = HashMap::new();
    let mut shift = HashMap::new();
    for p in pages {
        let t = &tables[&p];
        let s = if table.is_empty() {
            0
        } else {
            let lines: Vec<(u64, usize)> = t.iter().map(|(&r, &l)| (r, l)).collect();
            align(&table, kernel, &lines, mask, false).0
        };
        for (&r, &l) in t {
            table.entry(gf2::reduce(kernel, r ^ s)).or_insert(l);
        }
        shift.insert(p, s);
    }
    TableModel { kernel: kernel.to_vec(), table, shift }
}

/// Held-out lines: how many were predicted right, and of how many (a line whose coset the
/// table lacks counts as wrong).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeldOut {
    pub right: usize,
    pub total: usize,
    /// Lines the table had no entry for.
    pub unpredicted: usize,
}

impl HeldOut {
    pub fn accuracy(&self) -> f64 {
        if self.total == 0 {
            f64::NAN
        } else {
            self.right as f64 / self.total as f64
        }
    }
    fn add(&mut self, o: HeldOut) {
        self.right += o.right;
        self.total += o.total;
        self.unpredicted += o.unpredicted;
    }
}

/// Whether a line is held out in the split by line: one line in `every`, by a hash of the page
/// and offset.
pub(crate) fn held(p: &Point, every: u64) -> bool {
    // splitmix64's finalizer: no linear trace of the offset is left in the choice.
    let mut z = p.offset ^ ((p.page as u64) << 32);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)).is_multiple_of(every)
}

/// Split by line: kernel, table and shifts fitted on the other lines of every page, each
/// held-out line predicted through its page's shift.
pub fn held_out_by_line(
    points: &[Point],
    mask: u64,
    every: u64,
    min_pairs: usize,
    min_share: f64,
) -> (Kernel, HeldOut) {
    let (test, train): (Vec<Point>, Vec<Point>) = points.iter().partition(|p| held(p, every));
    let k = fit_kernel(&agreements(&train, mask), min_pairs, min_share);
    let model = fit_table(&train, &k.basis, mask);
    let mut h = HeldOut::default();
    for p in &test {
        h.total += 1;
        let at = model.shift.get(&p.page).and_then(|s| model.table.get(&gf2::reduce(&k.basis, p.offset ^ s)));
        match at {
            Some(&l) => h.right += usize::from(l == p.label),
            None => h.unpredicted += 1,
        }
    }
    (k, h)
}

/// Fitted on one run, checked on another: the kernel and table of `train`; each page of `test`
/// gets its shift from its first `probes` lines (at most half of them), and the test run one relabelling (labels of two
/// runs are named independently) from all its pages' probe lines; every other line is predicted.
pub fn held_out_across(train: &[Point], test: &[Point], mask: u64, probes: usize, kernel: &[u64]) -> HeldOut {
    let model = fit_table(train, kernel, mask);
    let pages = pages_of(test);
    let mut split = Vec::new();
    let mut meet: HashMap<usize, HashMap<usize, usize>> = HashMap::new();
    for page in pages {
        let lines: Vec<(u64, usize)> = test.iter().filter(|p| p.page == page).map(|p| (p.offset, p.label)).collect();
        let (probe, rest) = lines.split_at(probes.min(lines.len() / 2));
        let (s, _, _) = align(&model.table, kernel, probe, mask, true);
        for &(o, l) in probe {
            if let Some(&t) = model.table.get(&gf2::reduce(kernel, o ^ s)) {
                *meet.entry(l).or_default().entry(t).or_default() += 1;
            }
        }
        split.push((s, rest.to_vec()));
    }
    let map: HashMap<usize, usize> = meet
        .iter()
        .map(|(&l, m)| (l, *m.iter().max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t))).unwrap().0))
        .collect();
    let mut h = HeldOut::default();
    for (s, rest) in split {
        for (o, l) in rest {
            h.total += 1;
            match model.table.get(&gf2::reduce(kernel, o ^ s)) {
                Some(&t) => h.right += usize::from(map.get(&l) == Some(&t)),
                None => h.unpredicted += 1,
            }
        }
    }
    h
}

/// Split by whole page within one run: for each page, the table from the other pages, the page's
/// shift from its first `probes` lines (at most half of them), every other line predicted (same
/// naming of labels).
pub fn held_out_by_page(points: &[Point], mask: u64, probes: usize, kernel: &[u64]) -> HeldOut {
    let pages = pages_of(points);
    let mut h = HeldOut::default();
    for &page in &pages {
        let train: Vec<Point> = points.iter().filter(|p| p.page != page).copied().collect();
        if train.is_empty() {
            continue;
        }
        let model = fit_table(&train, kernel, mask);
        let lines: Vec<(u64, usize)> = points.iter().filter(|p| p.page == page).map(|p| (p.offset, p.label)).collect();
        let (probe, rest) = lines.split_at(probes.min(lines.len() / 2));
        let (s, _, _) = align(&model.table, kernel, probe, mask, false);
        let mut one = HeldOut::default();
        for &(o, l) in rest {
            one.total += 1;
            match model.table.get(&gf2::reduce(kernel, o ^ s)) {
                Some(&t) => one.right += usize::from(t == l),
                None => one.unpredicted += 1,
            }
        }
        h.add(one);
    }
    h
}
