//! The slice within a partition as a residue (docs/L2_SLICES.md, "The slice within a partition"):
//! a line's slice is (partition bit, y) with y = sum over terms of 2^j (parity(offset & m_j) XOR
//! e_j) + c modulo an odd M. The masks m_j are the same on every page; the flips e_j, the constant
//! c and the partition bit's constant are the page frame's share, one set per page. The fit reads
//! the labels as a cyclic group: a difference of offsets that flips one term moves every line by
//! +-2^j, so the graph it draws between (partition bit, label) nodes is one cycle, whose order
//! names every node by a residue; each difference that moves lines by +-2^j alone gives that term's
//! value on every line it joins, and the term's mask follows bit by bit. Terms are told apart by
//! their weights, so at most as many as the order of 2 modulo M (23 for 47). Every accuracy is on
//! lines the fit did not see.

use super::slice_fit::Point;
pub use super::slice_mod_held::{residue_held_out_across, residue_held_out_by_line, residue_held_out_by_page};
use memscope_core::gf2::parity;
use std::collections::HashMap;

const PAGE_LINES: usize = 1 << 14;
const LINE_SHIFT: u32 = 7;
/// Share of a difference's pairs that must move by +-2^j for it to count as one term's flip, and
/// that the strongest two neighbours of each node must carry for a difference to draw the cycle
/// (wrong labels spoil about two pairs each).
const TERM_SHARE: f64 = 0.9;
const CYCLE_SHARE: f64 = 0.9;
/// Share of the lines it was fitted on that a model must name right (less: the family does not
/// fit, or the lines are too sparse to fit it).
const FIT_SHARE: f64 = 0.9;
/// Share of a term's pairs that must move each way.
const SIGN_SHARE: f64 = 0.1;
/// A difference whose graph gives a node more neighbours than this is no generator.
const MAX_NEIGHBOURS: usize = 8;
/// At most this many terms (the page alignment tries every combination of flips).
const MAX_TERMS: usize = 14;

/// One term: weight 2^exponent modulo M, on the parity of the offset under `mask`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Term {
    pub exponent: u32,
    pub mask: u64,
}

/// A page's share: which terms are complemented (bit t: term t), the constant, the partition
/// bit's constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageTerms {
    pub flips: u64,
    pub constant: u64,
    pub partition: u8,
}

/// The fitted function and the run's naming of its (partition bit, residue) nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct ResidueModel {
    pub modulus: u64,
    pub partition_mask: u64,
    /// The difference whose cycle named the residues, and how many pairs drew it.
    pub generator: u64,
    pub generator_pairs: usize,
    pub terms: Vec<Term>,
    pub pages: HashMap<usize, PageTerms>,
    /// The label of each (partition bit, residue), in the fitted run's naming.
    pub names: HashMap<(u8, u64), usize>,
    /// The page the residues were named on.
    pub reference_page: usize,
}

/// Why the residue family does not fit; each names the count that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResidueFitError {
    #[error("no labelled lines")]
    Empty,
    #[error("no difference joins the {nodes} (partition bit, label) nodes in one cycle")]
    NoCycle { nodes: usize },
    #[error("{nodes} nodes: not two partitions of an odd number of slices")]
    NotTwoOdd { nodes: usize },
    #[error("no difference moves lines by a single power of two modulo {modulus}")]
    NoTerms { modulus: u64 },
    #[error("{terms} terms: more than {MAX_TERMS}")]
    TooManyTerms { terms: usize },
    #[error("the fitted function names {explained} of its {lines} lines")]
    Unexplained { explained: usize, lines: usize },
}

/// A page's labels as a dense array over its lines, and the line bits that vary among them.
fn dense(points: &[Point], page: usize) -> (Vec<Option<usize>>, Vec<usize>, u64) {
    let mut lines = vec![None; PAGE_LINES];
    let mut idx = Vec::new();
    let mut bits = 0u64;
    for p in points.iter().filter(|p| p.page == page) {
        let i = (p.offset >> LINE_SHIFT) as usize % PAGE_LINES;
        if lines[i].is_none() {
            idx.push(i);
        }
        lines[i] = Some(p.label);
        bits |= i as u64;
    }
    idx.sort_unstable();
    (lines, idx, bits)
}

/// Every nonzero subset of `bits`, in increasing order.
fn subsets(bits: u64) -> impl Iterator<Item = u64> {
    std::iter::successors(Some(bits.wrapping_neg() & bits), move |&d| Some(d.wrapping_sub(bits) & bits))
        .take_while(|&d| d != 0)
}

pub fn pow_mod(mut b: u64, mut e: u64, m: u64) -> u64 {
    let mut r = 1 % m;
    b %= m;
    while e > 0 {
        if e & 1 == 1 {
            r = r * b % m;
        }
        b = b * b % m;
        e >>= 1;
    }
    r
}

/// The multiplicative order of 2 modulo the odd `m` (> 1).
fn order_of_two(m: u64) -> u64 {
    let mut x = 2 % m;
    let mut k = 1;
    while x != 1 {
        x = x * 2 % m;
        k += 1;
    }
    k
}

/// The one cycle that difference `d` (line bits) draws between the nodes, or None: each node's
/// two strongest neighbours (never itself) must carry `CYCLE_SHARE` of the pairs and close one
/// cycle through every node. Returns the nodes in cycle order and the pairs.
fn cycle(
    lines: &[Option<usize>],
    idx: &[usize],
    node: &[usize],
    nodes: usize,
    d: usize,
) -> Option<(Vec<usize>, usize)> {
    let mut nb: Vec<Vec<(usize, usize)>> = vec![Vec::new(); nodes];
    let mut pairs = 0;
    for &i in idx {
        let j = i ^ d;
        if j < i || lines[j].is_none() {
            continue;
        }
        let (a, b) = (node[i], node[j]);
        for (x, y) in [(a, b), (b, a)] {
            let v = &mut nb[x];
            if let Some(e) = v.iter_mut().find(|e| e.0 == y) {
                e.1 += 1;
            } else if v.len() >= MAX_NEIGHBOURS {
                return None;
            } else {
                v.push((y, 1));
            }
        }
        pairs += 1;
    }
    let mut top = vec![[0usize; 2]; nodes];
    let mut kept = 0;
    for (n, v) in nb.iter_mut().enumerate() {
        v.sort_by_key(|e| (std::cmp::Reverse(e.1), e.0));
        if v.len() < 2 || v[0].0 == n || v[1].0 == n {
            return None;
        }
        top[n] = [v[0].0, v[1].0];
        kept += v[0].1 + v[1].1;
    }
    if (kept as f64) < CYCLE_SHARE * (2 * pairs) as f64 {
        return None;
    }
    let mut order = vec![0usize];
    let (mut prev, mut cur) = (0usize, top[0][0]);
    while cur != 0 {
        if order.len() >= nodes || !top[cur].contains(&prev) {
            return None;
        }
        order.push(cur);
        let next = if top[cur][0] == prev { top[cur][1] } else { top[cur][0] };
        prev = cur;
        cur = next;
    }
    (order.len() == nodes && top[0][1] == prev).then_some((order, pairs))
}

impl ResidueModel {
    /// The term parities of an offset (bit t: term t's parity before the page's flips).
    fn parities(&self, offset: u64) -> u64 {
        self.terms.iter().enumerate().fold(0, |acc, (t, term)| acc | (u64::from(parity(offset & term.mask)) << t))
    }

    /// The weighted sum of every combination of terms (index: bit t set = term t's parity 1).
    fn sums(&self) -> Vec<u64> {
        (0..1u64 << self.terms.len()).map(|b| self.sum(b)).collect()
    }

    fn sum(&self, bits: u64) -> u64 {
        self.terms
            .iter()
            .enumerate()
            .filter(|(t, _)| bits >> t & 1 == 1)
            .fold(0, |acc, (_, term)| (acc + pow_mod(2, u64::from(term.exponent), self.modulus)) % self.modulus)
    }

    /// (partition bit, residue) of an offset on a page with share `pt`.
    pub fn slice(&self, offset: u64, pt: &PageTerms) -> (u8, u64) {
        let y = (self.sum(self.parities(offset) ^ pt.flips) + pt.constant) % self.modulus;
        (parity(offset & self.partition_mask) ^ pt.partition, y)
    }

    /// The label the model gives a line of a fitted page (None: page not fitted, node unnamed).
    pub fn predict(&self, page: usize, offset: u64) -> Option<usize> {
        let pt = self.pages.get(&page)?;
        self.names.get(&self.slice(offset, pt)).copied()
    }

    /// A page's share from labelled lines in the run's naming: every combination of flips and
    /// partition constant, the constant by majority. Returns the share and the lines it explains.
    pub fn align_page(&self, lines: &[(u64, usize)]) -> (PageTerms, usize) {
        let inv: HashMap<(u8, usize), u64> = self.names.iter().map(|(&(p, y), &l)| ((p, l), y)).collect();
        let par: Vec<u64> = lines.iter().map(|&(o, _)| self.parities(o)).collect();
        let sums = self.sums();
        let mut best = (PageTerms::default(), 0usize);
        let mut hist = vec![0usize; self.modulus as usize];
        for p in 0..2u8 {
            let ys: Vec<Option<u64>> =
                lines.iter().map(|&(o, l)| inv.get(&(parity(o & self.partition_mask) ^ p, l)).copied()).collect();
            for flips in 0..1u64 << self.terms.len() {
                hist.iter_mut().for_each(|h| *h = 0);
                for (y, &v) in ys.iter().zip(&par) {
                    if let Some(y) = y {
                        hist[((y + self.modulus - sums[(v ^ flips) as usize]) % self.modulus) as usize] += 1;
                    }
                }
                let (c, &n) = hist.iter().enumerate().max_by_key(|(c, n)| (**n, std::cmp::Reverse(*c))).unwrap();
                if n > best.1 {
                    best = (PageTerms { flips, constant: c as u64, partition: p }, n);
                }
            }
        }
        best
    }

    /// The labels of every (partition bit, residue) as a dense table: index p * M + y.
    fn table(&self) -> Vec<Option<usize>> {
        let m = self.modulus as usize;
        let mut t = vec![None; 2 * m];
        for (&(p, y), &l) in &self.names {
            t[usize::from(p) * m + y as usize] = Some(l);
        }
        t
    }

    /// A page's share from labelled lines of another run (its own naming): every flips and
    /// constant, scored by how many lines carry the label most of their label's lines are
    /// predicted. The partition constant is left 0: flipping it renames the classes by a fixed
    /// permutation and keeps them, so another run's naming cannot tell it (`align_page` can, once
    /// a renaming is known). Returns the share, the lines it explains and the renaming (other
    /// run's label -> this model's label).
    pub fn align_page_renamed(&self, lines: &[(u64, usize)]) -> (PageTerms, usize, HashMap<usize, usize>) {
        let mut groups: HashMap<usize, Vec<(u64, usize)>> = HashMap::new();
        for &(o, l) in lines {
            groups.entry(l).or_default().push((self.parities(o), usize::from(parity(o & self.partition_mask))));
        }
        let groups: Vec<(usize, Vec<(u64, usize)>)> = groups.into_iter().collect();
        let (sums, table, m) = (self.sums(), self.table(), self.modulus as usize);
        let predict =
            |v: u64, q: usize, flips: u64, c: usize| table[q * m + (sums[(v ^ flips) as usize] as usize + c) % m];
        let mut best = (PageTerms::default(), 0usize);
        let mut got = Vec::new();
        for flips in 0..1u64 << self.terms.len() {
            for c in 0..m {
                let mut n = 0;
                for (_, g) in &groups {
                    got.clear();
                    got.extend(g.iter().map(|&(v, q)| predict(v, q, flips, c)));
                    got.sort_unstable();
                    n += mode(&got).1;
                }
                if n > best.1 {
                    best = (PageTerms { flips, constant: c as u64, partition: 0 }, n);
                }
            }
        }
        let pt = best.0;
        let rename = groups
            .iter()
            .filter_map(|(l, g)| {
                let mut got: Vec<Option<usize>> =
                    g.iter().map(|&(v, q)| predict(v, q, pt.flips, pt.constant as usize)).collect();
                got.sort_unstable();
                mode(&got).0.map(|t| (*l, t))
            })
            .collect();
        (pt, best.1, rename)
    }
}

/// The most common value of a sorted slice (None values never count) and how often it occurs.
fn mode(sorted: &[Option<usize>]) -> (Option<usize>, usize) {
    let mut best = (None, 0);
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j < sorted.len() && sorted[j] == sorted[i] {
            j += 1;
        }
        if sorted[i].is_some() && j - i > best.1 {
            best = (sorted[i], j - i);
        }
        i = j;
    }
    best
}

/// Fit the residue model: the reference page (the most lines) names the residues and gives the
/// masks; every other page gets its share from its own lines. `min_pairs`: pairs a difference
/// needs to count.
pub fn fit_residue(points: &[Point], partition_mask: u64, min_pairs: usize) -> Result<ResidueModel, ResidueFitError> {
    let mut per_page: HashMap<usize, usize> = HashMap::new();
    for p in points {
        *per_page.entry(p.page).or_default() += 1;
    }
    let (&reference, _) =
        per_page.iter().max_by_key(|(pg, n)| (**n, std::cmp::Reverse(**pg))).ok_or(ResidueFitError::Empty)?;
    let (lines, idx, bits) = dense(points, reference);
    // Nodes: (partition bit, label), the first one with partition bit 0 when there is one.
    let part = |i: usize| parity((i as u64) << LINE_SHIFT & partition_mask);
    let mut ids: HashMap<(u8, usize), usize> = HashMap::new();
    let mut keys = Vec::new();
    let mut sorted_idx = idx.clone();
    sorted_idx.sort_by_key(|&i| part(i));
    for &i in &sorted_idx {
        let k = (part(i), lines[i].unwrap_or(0));
        ids.entry(k).or_insert_with(|| {
            keys.push(k);
            keys.len() - 1
        });
    }
    let mut node = vec![0usize; PAGE_LINES];
    for &i in &idx {
        node[i] = ids[&(part(i), lines[i].unwrap_or(0))];
    }
    let nodes = keys.len();
    let mut best: Option<(Vec<usize>, usize, u64)> = None;
    for d in subsets(bits) {
        if let Some((order, pairs)) = cycle(&lines, &idx, &node, nodes, d as usize) {
            if pairs >= min_pairs && best.as_ref().is_none_or(|b| pairs > b.1) {
                best = Some((order, pairs, d));
            }
        }
    }
    let (order, generator_pairs, gen) = best.ok_or(ResidueFitError::NoCycle { nodes })?;
    if nodes % 4 != 2 {
        return Err(ResidueFitError::NotTwoOdd { nodes });
    }
    let m = (nodes / 2) as u64;
    let mut y_of_node = vec![0u64; nodes];
    for (pos, &n) in order.iter().enumerate() {
        // The cycle alternates partitions (Z_2 x Z_M as Z_2M): position = partition bit mod 2.
        if pos % 2 != usize::from(keys[n].0) {
            return Err(ResidueFitError::NotTwoOdd { nodes });
        }
        y_of_node[n] = pos as u64 % m;
    }
    let y = |i: usize| y_of_node[node[i]];
    // Terms: differences that move (nearly) every pair by +-2^j, the one with most pairs per j.
    let ord = order_of_two(m);
    let log2: HashMap<u64, u32> = (0..ord).map(|j| (pow_mod(2, j, m), j as u32)).collect();
    let mut by_exp: HashMap<u32, (usize, usize)> = HashMap::new();
    // Steps of each pair oriented from the end with the difference's lowest bit clear, and again
    // with its highest: a term's flip moves lines both ways (its value varies over the pairs) in
    // at least one orientation, where a difference whose pairs all move by one residue does not
    // (every nonzero residue modulo 47 is +-2^j).
    let mut hist = [vec![0usize; m as usize], vec![0usize; m as usize]];
    for d in subsets(bits) {
        let d = d as usize;
        let ends = [d & d.wrapping_neg(), 1 << (usize::BITS - 1 - d.leading_zeros())];
        hist.iter_mut().for_each(|h| h.iter_mut().for_each(|x| *x = 0));
        let mut pairs = 0;
        for &i in &idx {
            let j = i ^ d;
            if j > i && lines[j].is_some() {
                let s = (y(j) + m - y(i)) % m;
                for (h, &end) in hist.iter_mut().zip(&ends) {
                    h[(if i & end == 0 { s } else { (m - s) % m }) as usize] += 1;
                }
                pairs += 1;
            }
        }
        if pairs < min_pairs {
            continue;
        }
        for (&w, &j) in &log2 {
            let term = hist.iter().any(|h| {
                let (up, down) = (h[w as usize], h[((m - w) % m) as usize]);
                (up + down) as f64 >= TERM_SHARE * pairs as f64 && up.min(down) as f64 >= SIGN_SHARE * pairs as f64
            });
            if term {
                let e = by_exp.entry(j).or_insert((d, 0));
                if pairs > e.1 {
                    *e = (d, pairs);
                }
            }
        }
    }
    if by_exp.is_empty() {
        return Err(ResidueFitError::NoTerms { modulus: m });
    }
    if by_exp.len() > MAX_TERMS {
        return Err(ResidueFitError::TooManyTerms { terms: by_exp.len() });
    }
    // Name the residues so that the exponents start at 0 with the smallest span.
    let exps: Vec<u32> = by_exp.keys().copied().collect();
    let span = |r: u32| exps.iter().map(|&j| (j + ord as u32 - r) % ord as u32).max().unwrap_or(0);
    let r = exps.iter().copied().min_by_key(|&r| (span(r), r)).unwrap_or(0);
    // 2^-r, since 2^ord is 1.
    let unscale = pow_mod(2, (ord - u64::from(r)) % ord, m);
    let mut terms: Vec<(u32, usize)> = by_exp.iter().map(|(&j, &(d, _))| (j, d)).collect();
    terms.sort_unstable();
    let mut fitted = Vec::new();
    let mut flips = 0u64;
    for (t, &(j, d)) in terms.iter().enumerate() {
        let w = pow_mod(2, u64::from(j), m);
        let mut f: Vec<Option<bool>> = vec![None; PAGE_LINES];
        for &i in &idx {
            if lines[i ^ d].is_some() {
                let s = (y(i ^ d) + m - y(i)) % m;
                f[i] = if s == w {
                    Some(false)
                } else if s == (m - w) % m {
                    Some(true)
                } else {
                    None
                };
            }
        }
        let mut mask = 0u64;
        for b in 0..14 {
            let bit = 1usize << b;
            if bits as usize & bit == 0 {
                continue;
            }
            let (mut differ, mut same) = (0, 0);
            for &i in &idx {
                if let (Some(a), Some(c)) = (f[i], f[i ^ bit]) {
                    if i & bit == 0 {
                        if a != c {
                            differ += 1;
                        } else {
                            same += 1;
                        }
                    }
                }
            }
            if differ > same {
                mask |= (bit as u64) << LINE_SHIFT;
            }
        }
        let ones = idx
            .iter()
            .filter_map(|&i| f[i].map(|v| v ^ (parity((i as u64) << LINE_SHIFT & mask) == 1)))
            .filter(|&v| v)
            .count();
        let known = idx.iter().filter(|&&i| f[i].is_some()).count();
        if 2 * ones > known {
            flips |= 1 << t;
        }
        fitted.push(Term { exponent: (j + ord as u32 - r) % ord as u32, mask });
    }
    // Terms in order of their exponents, the flips with them.
    let mut order: Vec<usize> = (0..fitted.len()).collect();
    order.sort_by_key(|&t| fitted[t].exponent);
    let flips = order.iter().enumerate().fold(0u64, |acc, (n, &t)| acc | (flips >> t & 1) << n);
    let fitted: Vec<Term> = order.iter().map(|&t| fitted[t]).collect();
    let mut model = ResidueModel {
        modulus: m,
        partition_mask,
        generator: gen << LINE_SHIFT,
        generator_pairs,
        terms: fitted,
        pages: HashMap::new(),
        names: HashMap::new(),
        reference_page: reference,
    };
    // Residues in the renamed scale (times 2^-r), then the constant by majority.
    for (n, &(p, l)) in keys.iter().enumerate() {
        model.names.insert((p, y_of_node[n] * unscale % m), l);
    }
    let mut hist = vec![0usize; m as usize];
    for &i in &idx {
        let yy = y(i) * unscale % m;
        let s = model.sum(model.parities((i as u64) << LINE_SHIFT) ^ flips);
        hist[((yy + m - s) % m) as usize] += 1;
    }
    let (c, _) = hist.iter().enumerate().max_by_key(|(c, n)| (**n, std::cmp::Reverse(*c))).unwrap();
    model.pages.insert(reference, PageTerms { flips, constant: c as u64, partition: 0 });
    model.align_pages(points, reference);
    // Within one page, complementing every term in one partition (every mask XOR the partition
    // mask) gives the same labels with that partition's residues reflected; pages whose partition
    // constants differ tell the two apart. Keep the one that explains more lines (ties: the
    // generator's).
    let mut other = model.clone();
    other.terms.iter_mut().for_each(|t| t.mask ^= partition_mask);
    let start = PageTerms { flips, ..PageTerms::default() };
    let mut votes: HashMap<(u8, u64), HashMap<usize, usize>> = HashMap::new();
    for p in points.iter().filter(|p| p.page == reference) {
        *votes.entry(other.slice(p.offset, &start)).or_default().entry(p.label).or_default() += 1;
    }
    other.names = votes
        .into_iter()
        .map(|(k, v)| (k, v.into_iter().max_by_key(|&(l, n)| (n, std::cmp::Reverse(l))).unwrap().0))
        .collect();
    other.pages = HashMap::from([(reference, start)]);
    other.align_pages(points, reference);
    let best = if other.explained(points) > model.explained(points) { other } else { model };
    let explained = best.explained(points);
    if (explained as f64) < FIT_SHARE * points.len() as f64 {
        return Err(ResidueFitError::Unexplained { explained, lines: points.len() });
    }
    Ok(best)
}

impl ResidueModel {
    /// Every page but `reference` gets its share from its own lines.
    fn align_pages(&mut self, points: &[Point], reference: usize) {
        let mut pages: Vec<usize> = points.iter().map(|p| p.page).filter(|&p| p != reference).collect();
        pages.sort_unstable();
        pages.dedup();
        for page in pages {
            let lines: Vec<(u64, usize)> =
                points.iter().filter(|p| p.page == page).map(|p| (p.offset, p.label)).collect();
            let (pt, _) = self.align_page(&lines);
            self.pages.insert(page, pt);
        }
    }

    /// The other representation of the same labels on the reference page: every mask XOR the
    /// partition mask, partition 1's residues reflected (y -> 2^terms - 1 - y), the reference
    /// page's constant moved into the names; other pages' shares dropped (align them again).
    pub fn reflected(&self) -> ResidueModel {
        let m = self.modulus;
        let r = self.pages.get(&self.reference_page).copied().unwrap_or_default();
        let top = ((1u64 << self.terms.len()) - 1) % m;
        let mut out = self.clone();
        out.terms.iter_mut().for_each(|t| t.mask ^= self.partition_mask);
        out.names = self
            .names
            .iter()
            .map(|(&(p, y), &l)| {
                // y = y' + c on partition 0, y = top - y' + c on partition 1 (the reference page's
                // partition constant is 0).
                let y0 = (y + m - r.constant) % m;
                let y1 = if p == 0 { y0 } else { (top + m - y0) % m };
                ((p, y1), l)
            })
            .collect();
        out.pages = HashMap::from([(self.reference_page, PageTerms { constant: 0, ..r })]);
        out
    }

    /// How many of `points` the model names right.
    pub fn explained(&self, points: &[Point]) -> usize {
        points.iter().filter(|p| self.predict(p.page, p.offset) == Some(p.label)).count()
    }
}
