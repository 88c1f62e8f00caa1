//! The analysis of the `l2.slices` probe, kept pure for tests: seed 000's max-counter method
//! (appendix, "The L2 slice function") with only the max over slices to read. One experiment
//! hammers an anchor line and up to `GROUP` other lines with binary access weights (other j: B x
//! 2^j, the anchor: B x 2^k, more than all others together), so the slice holding the anchor takes
//! the most sectors and its max counter, divided by B, spells in binary exactly which of the others
//! share the anchor's slice. Nsight Compute counts reads, writes, atomics and reductions in separate
//! per-slice counters, so one kernel carries one experiment per operation (`design_packed`); the
//! previous one-experiment-per-kernel design is `design`. Every pair of sampled lines is tested
//! once; union-find over "same slice" answers gives the partition of the sample, and a GF(2) fit
//! (crates/core/src/gf2.rs) over address bits 7..20 says whether the partition is XOR-linear within
//! the 2 MiB page.

use memscope_core::gf2;
use rand::seq::SliceRandom;
use rand::SeedableRng;

/// L2 line size the sample is drawn on.
pub const LINE_BYTES: u64 = 128;
/// Address bits that vary within a 2 MiB page above the line: 7..=20.
pub const PAGE_BITS: u64 = ((1 << 21) - 1) & !(LINE_BYTES - 1);
/// Other lines per kernel beside the anchor.
pub const GROUP: usize = 11;
/// A decoded max is clear when it lies at most CLEAR_BELOW units below or CLEAR_ABOVE units above a
/// multiple of the unit. The window leans upward: stray sectors (the kernel's own plan reads, among
/// others) only ever add to a slice's count. On the H200 the maxes lay 0 to 17 sectors above a
/// multiple (a read unit is 64 sectors, 0.27 units), never below (results/h200/l2-slices-cupti).
pub const CLEAR_BELOW: f64 = 0.1;
pub const CLEAR_ABOVE: f64 = 0.45;

/// The multiple of `unit` a max reads as, when it is clear (see CLEAR_BELOW, CLEAR_ABOVE).
fn clear_units(max_sectors: f64, unit: u64) -> Option<u64> {
    if !max_sectors.is_finite() || max_sectors < 0.0 {
        return None;
    }
    let u = max_sectors / unit as f64;
    let v = (u + CLEAR_BELOW).floor();
    (u - v <= CLEAR_ABOVE).then_some(v as u64)
}

/// Sample `n` distinct line offsets of a 2 MiB page: 0, the 14 single-bit offsets 2^7..2^20, then
/// random lines (seeded).
pub fn sample_lines(n: usize, seed: u64) -> Vec<u64> {
    let mut out: Vec<u64> = vec![0];
    out.extend((7..=20).map(|b| 1u64 << b));
    out.truncate(n);
    let mut rest: Vec<u64> = (0..(1u64 << 14)).map(|i| i * LINE_BYTES).filter(|o| !out.contains(o)).collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    rest.shuffle(&mut rng);
    let need = n.saturating_sub(out.len());
    out.extend(rest.into_iter().take(need));
    out
}

/// One experiment of the design: members[0] is the anchor; weights in accesses, same order; it
/// runs in kernel `kernel` with operation slot `op` (an index into the plan's operations, each
/// read by its own counter).
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub members: Vec<usize>,
    pub weights: Vec<u64>,
    pub kernel: usize,
    pub op: usize,
}

/// Anchor `anchor` against `others` with binary weights in units of `unit` accesses.
fn experiment(anchor: usize, others: &[usize], unit: u64, kernel: usize, op: usize) -> Batch {
    let mut members = vec![anchor];
    members.extend_from_slice(others);
    let mut weights = vec![unit << others.len()];
    weights.extend((0..others.len()).map(|j| unit << j));
    Batch { members, weights, kernel, op }
}

/// Every pair (i < j) once, one experiment per kernel, all on operation slot 0: anchor i against
/// the later lines in groups of `GROUP`, binary weights in units of `unit` accesses (798 kernels
/// for 128 lines).
pub fn design(n: usize, unit: u64) -> Vec<Batch> {
    let mut out = Vec::new();
    for i in 0..n.saturating_sub(1) {
        let others: Vec<usize> = (i + 1..n).collect();
        for chunk in others.chunks(GROUP) {
            let k = out.len();
            out.push(experiment(i, chunk, unit, k, 0));
        }
    }
    out
}

/// Split `items` into the fewest chunks of at most `GROUP` whose number is a multiple of
/// `multiple` (while every chunk keeps an item), sizes differing by at most one.
fn balanced_chunks(items: &[usize], multiple: usize) -> Vec<&[usize]> {
    if items.is_empty() {
        return vec![];
    }
    let parts = items.len().div_ceil(GROUP).next_multiple_of(multiple.max(1)).min(items.len());
    let (base, extra) = (items.len() / parts, items.len() % parts);
    let mut out = Vec::with_capacity(parts);
    let mut at = 0;
    for p in 0..parts {
        let len = base + usize::from(p < extra);
        out.push(&items[at..at + len]);
        at += len;
    }
    out
}

/// Every pair once, one experiment per operation in each kernel (`ops`: the operation slots used):
/// line i is the anchor against the next (n-1)/2 lines cyclically, and for even n lines i < n/2
/// also against i + n/2, so every line anchors about (n-1)/2 others, cut into balanced chunks of
/// at most `GROUP`, as many as a multiple of the operations. The experiments of one kernel share
/// their anchor: on the H200 the reduction counter's max read 0 or less than the anchor's weight
/// when the kernel's atomics had another anchor, and never when they shared it (docs/L2_SLICES.md).
/// 768 experiments in 256 kernels for 128 lines and 3 operations.
pub fn design_packed(n: usize, unit: u64, ops: &[usize]) -> Vec<Batch> {
    let slots: &[usize] = if ops.is_empty() { &[0] } else { ops };
    let k = slots.len();
    let half = n.saturating_sub(1) / 2;
    let mut out = Vec::new();
    for i in 0..n {
        let mut others: Vec<usize> = (1..=half).map(|d| (i + d) % n).collect();
        if n.is_multiple_of(2) && n >= 2 && i < n / 2 {
            others.push(i + n / 2);
        }
        let first = kernel_count(&out);
        for (c, chunk) in balanced_chunks(&others, k).into_iter().enumerate() {
            out.push(experiment(i, chunk, unit, first + c / k, slots[c % k]));
        }
    }
    out
}

/// Read-only kernels for the near/far decode of the fabric counter (which counts every operation
/// together, so it is read only on kernels with one experiment): the lines in groups of GROUP + 1,
/// binary weights, the first of each group heaviest; kernels numbered from `first_kernel`.
pub fn design_far(n: usize, unit: u64, first_kernel: usize) -> Vec<Batch> {
    let all: Vec<usize> = (0..n).collect();
    all.chunks(GROUP + 1)
        .filter(|c| c.len() >= 2)
        .enumerate()
        .map(|(k, c)| experiment(c[0], &c[1..], unit, first_kernel + k, 0))
        .collect()
}

/// Classification experiments (an adaptive design: docs/L2_SLICES.md, "Slice labels over many
/// pages"): one kernel per line of `queue`, the line the anchor of every experiment of its kernel
/// (on the H200 the reduction counter misread when a kernel's experiments had different anchors),
/// against the representatives `reps`, which lie on distinct slices, split into one balanced chunk
/// per operation slot of `ops`. In an experiment against m representatives the anchor weighs
/// (m+1) units and representative j (1-based) j units: every other slice then holds at most m
/// units and the anchor's at least m+1, so the max is the anchor's slice, (m+1+j) units when it
/// holds representative j, m+1 when it holds none of them. Kernels numbered from `first_kernel`.
pub fn design_classify(queue: &[usize], reps: &[usize], unit: u64, ops: &[usize], first_kernel: usize) -> Vec<Batch> {
    let slots: &[usize] = if ops.is_empty() { &[0] } else { ops };
    let chunks: Vec<&[usize]> = if reps.is_empty() {
        vec![&[][..]]
    } else {
        let parts = slots.len().min(reps.len());
        let (base, extra) = (reps.len() / parts, reps.len() % parts);
        let mut at = 0;
        (0..parts)
            .map(|p| {
                let len = base + usize::from(p < extra);
                at += len;
                &reps[at - len..at]
            })
            .collect()
    };
    let mut out = Vec::new();
    for (i, &x) in queue.iter().enumerate() {
        for (c, chunk) in chunks.iter().enumerate() {
            let m = chunk.len() as u64;
            let mut members = vec![x];
            members.extend_from_slice(chunk);
            let mut weights = vec![unit * (m + 1)];
            weights.extend((1..=m).map(|j| unit * j));
            out.push(Batch { members, weights, kernel: first_kernel + i, op: slots[c] });
        }
    }
    out
}

/// A classification experiment's max (in sectors, divided by the operation's scale) read back:
/// Some(Some(j)) the anchor shares representative j's slice (0-based), Some(None) none of them,
/// None unclear (not clear, see CLEAR_BELOW and CLEAR_ABOVE, or no possible value).
pub fn decode_classify(max_sectors: f64, unit: u64, reps: usize) -> Option<Option<usize>> {
    let v = clear_units(max_sectors, unit)? as i64;
    match v - (reps as i64 + 1) {
        0 => Some(None),
        j if j >= 1 && j as usize <= reps => Some(Some(j as usize - 1)),
        _ => None,
    }
}

/// Number of kernels a design uses.
pub fn kernel_count(batches: &[Batch]) -> usize {
    batches.iter().map(|b| b.kernel + 1).max().unwrap_or(0)
}

/// A max counter read as a subset of a batch's members: bit j of the result is member j+1 (the
/// others), bit k the anchor. None when the value is not clear (CLEAR_BELOW, CLEAR_ABOVE) or a
/// multiple of unit, or spells more than the members.
pub fn decode(max_sectors: f64, unit: u64, members: usize) -> Option<u64> {
    clear_units(max_sectors, unit).filter(|&v| v < 1u64 << members)
}

/// Pair answers of one line pair: Some(true) same slice, Some(false) different, None unknown.
pub struct PairTable {
    n: usize,
    same: Vec<Option<bool>>,
}

impl PairTable {
    pub fn new(n: usize) -> Self {
        PairTable { n, same: vec![None; n * n] }
    }
    /// Record an answer; false when it contradicts an earlier answer for the same pair.
    pub fn set(&mut self, i: usize, j: usize, v: bool) -> bool {
        let agrees = self.same[i * self.n + j].is_none_or(|old| old == v);
        self.same[i * self.n + j] = Some(v);
        self.same[j * self.n + i] = Some(v);
        agrees
    }
    pub fn get(&self, i: usize, j: usize) -> Option<bool> {
        self.same[i * self.n + j]
    }
}

/// What the kernels' max counters said, pair by pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    /// Slice class of each sampled line (0-based, by first appearance); None: undetermined (a test
    /// involving it was not clear, or its answers contradict each other).
    pub class: Vec<Option<usize>>,
    /// Number of classes (distinct slices among the determined lines).
    pub classes: usize,
    /// Kernels whose max was clear / all kernels.
    pub clear_kernels: usize,
    pub kernels: usize,
    /// "Different" answers that union-find put in one class (noise or a non-partition).
    pub conflicts: usize,
}

/// Union-find over "same slice" answers. `maxes[k]` is kernel k's max counter in sectors, already
/// divided by the measured scale. With `anchor_required` (the TEX counter: every load lands on some
/// slice, so the anchor's slice holds the max) a decoded max without the anchor is unclear; without
/// it (the fabric counter, which only far lines reach) such a kernel says nothing about the anchor.
pub fn assign(n: usize, batches: &[Batch], maxes: &[f64], unit: u64, anchor_required: bool) -> Assignment {
    let mut table = PairTable::new(n);
    let mut bad = vec![false; n];
    let mut clear = 0;
    let mut conflicts = 0;
    for (b, &m) in batches.iter().zip(maxes) {
        let k = b.members.len() - 1;
        match decode(m, unit, b.members.len()) {
            Some(v) if v >> k & 1 == 1 => {
                clear += 1;
                for (j, &x) in b.members[1..].iter().enumerate() {
                    if !table.set(b.members[0], x, v >> j & 1 == 1) {
                        // Two experiments disagree on this pair.
                        conflicts += 1;
                        bad[b.members[0]] = true;
                        bad[x] = true;
                    }
                }
            }
            Some(_) if !anchor_required => clear += 1,
            _ => {
                for &x in &b.members {
                    bad[x] = true;
                }
            }
        }
    }
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    for i in 0..n {
        for j in i + 1..n {
            if table.get(i, j) == Some(true) && !bad[i] && !bad[j] {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a] = b;
            }
        }
    }
    for i in 0..n {
        for j in i + 1..n {
            if table.get(i, j) == Some(false) && !bad[i] && !bad[j] && root(&mut parent, i) == root(&mut parent, j) {
                conflicts += 1;
                bad[i] = true;
                bad[j] = true;
            }
        }
    }
    let mut ids: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    let mut class = vec![None; n];
    for i in 0..n {
        if bad[i] {
            continue;
        }
        let r = root(&mut parent, i);
        let next = ids.len();
        class[i] = Some(*ids.entry(r).or_insert(next));
    }
    Assignment { class, classes: ids.len(), clear_kernels: clear, kernels: batches.len(), conflicts }
}

/// Near or far for the hammering SM from the fabric counter: a kernel's fabric max spells the
/// lines that share the fabric-receiving slice of its heaviest far line h; lines heavier than h sent
/// nothing over the fabric (near), the spelled lines did (far). Some(true) far, Some(false) near,
/// None undetermined (no clear kernel, or contradicting kernels). Also the clear-kernel count.
pub fn far_labels(n: usize, batches: &[Batch], fabric_maxes: &[f64], unit: u64) -> (Vec<Option<bool>>, usize) {
    let mut votes: Vec<(usize, usize)> = vec![(0, 0); n]; // (near, far)
    let mut clear = 0;
    for (b, &m) in batches.iter().zip(fabric_maxes) {
        let Some(v) = decode(m, unit, b.members.len()) else { continue };
        clear += 1;
        let k = b.members.len() - 1;
        let bit_of = |idx: usize| if idx == 0 { k } else { idx - 1 };
        let top = if v == 0 { None } else { Some(63 - v.leading_zeros() as usize) };
        for (idx, &x) in b.members.iter().enumerate() {
            let bit = bit_of(idx);
            match top {
                None => votes[x].0 += 1,
                Some(t) if bit > t => votes[x].0 += 1,
                Some(_) if v >> bit & 1 == 1 => votes[x].1 += 1,
                Some(_) => {}
            }
        }
    }
    let labels = votes
        .iter()
        .map(|&(near, far)| match (near, far) {
            (0, 0) => None,
            (_, 0) => Some(false),
            (0, _) => Some(true),
            _ => None,
        })
        .collect();
    (labels, clear)
}

/// The GF(2) fit of a partition of page offsets: is "same slice" exactly "XOR in a subspace K"?
#[derive(Debug, Clone, PartialEq)]
pub struct LinearFit {
    /// Basis of K (differences of same-slice lines), reduced echelon form.
    pub same_basis: Vec<u64>,
    /// Masks over bits 7..20 whose parities name the class: the annihilator of K (any invertible
    /// combination describes the same partition).
    pub masks: Vec<u64>,
    /// Pairs in different classes whose XOR lies in K: zero for an XOR-linear partition.
    pub violations: usize,
    /// Pairs checked.
    pub pairs: usize,
    /// Whether the sample fits an XOR-linear partition (no violations, classes <= 2^masks).
    pub linear: bool,
}

/// Fit `(offset, class)` pairs (offsets within one 2 MiB page, line aligned).
pub fn fit_linear(points: &[(u64, usize)]) -> LinearFit {
    let mut diffs = Vec::new();
    for (i, &(a, ca)) in points.iter().enumerate() {
        for &(b, cb) in &points[i + 1..] {
            if ca == cb {
                diffs.push((a ^ b) & PAGE_BITS);
            }
        }
    }
    let same_basis = gf2::rref(&diffs);
    let mut violations = 0;
    let mut pairs = 0;
    for (i, &(a, ca)) in points.iter().enumerate() {
        for &(b, cb) in &points[i + 1..] {
            pairs += 1;
            if ca != cb && gf2::reduce(&same_basis, (a ^ b) & PAGE_BITS) == 0 {
                violations += 1;
            }
        }
    }
    let masks = gf2::nullspace(&same_basis, PAGE_BITS);
    let classes = points.iter().map(|p| p.1).collect::<std::collections::HashSet<_>>().len();
    let linear = violations == 0 && (masks.len() >= 64 || classes as u64 <= 1u64 << masks.len());
    LinearFit { same_basis, masks, violations, pairs, linear }
}

/// The number of lts instances from one kernel's sum and avg of the per-slice counter; None unless
/// sum/avg lies within 0.02 of an integer (avg is printed with two decimals, so use a large sum).
pub fn instances(sum: f64, avg: f64) -> Option<u64> {
    if !(sum > 0.0 && avg > 0.0) {
        return None;
    }
    let r = sum / avg;
    let n = r.round();
    ((r - n).abs() / n <= 0.002 && n >= 1.0).then_some(n as u64)
}

/// Expected number of distinct slices among `n` lines drawn uniformly from `s` slices, and its
/// standard deviation (occupancy problem).
fn occupancy_moments(n: usize, s: f64) -> (f64, f64) {
    let n = n as i32;
    let q1 = (1.0 - 1.0 / s).powi(n);
    let q2 = (1.0 - 2.0 / s).powi(n);
    let mean = s * (1.0 - q1);
    let var = s * (s - 1.0) * q2 + s * q1 - s * s * q1 * q1;
    (mean, var.max(0.0).sqrt())
}

/// How many slices `n` uniform random lines reach when `d` distinct were seen: the S whose expected
/// distinct count is d, and the range of S for which d lies within 1.645 standard deviations.
/// None when there were no collisions (d == n: unbounded) or nothing was seen.
pub fn occupancy_estimate(n: usize, d: usize) -> Option<(f64, f64, f64)> {
    if d == 0 || d >= n {
        return None;
    }
    let mut est = None;
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    let mut s = d as f64;
    while s <= 64.0 * n as f64 {
        let (mean, sd) = occupancy_moments(n, s);
        if est.is_none() && mean >= d as f64 {
            est = Some(s);
        }
        if (mean - d as f64).abs() <= 1.645 * sd.max(0.5) {
            lo = lo.min(s);
            hi = hi.max(s);
        }
        s += 0.25;
    }
    est.map(|e| (e, lo.min(e), hi.max(e)))
}

/// Compare two partitions of the same lines (class ids may differ): (pairs where both determine
/// both lines, of them the pairs that one puts in one class and the other does not).
pub fn partition_disagreements(a: &[Option<usize>], b: &[Option<usize>]) -> (usize, usize) {
    let n = a.len().min(b.len());
    let (mut pairs, mut differ) = (0, 0);
    for i in 0..n {
        for j in i + 1..n {
            if let (Some(ai), Some(aj), Some(bi), Some(bj)) = (a[i], a[j], b[i], b[j]) {
                pairs += 1;
                if (ai == aj) != (bi == bj) {
                    differ += 1;
                }
            }
        }
    }
    (pairs, differ)
}

/// How the partitions of several 2 MiB pages relate: the same offsets sampled in `pages` adjacent
/// pages of one allocation, every pair of lines tested (also across pages).
#[derive(Debug, Clone, PartialEq)]
pub struct CrossPage {
    pub pages: usize,
    /// Distinct slices among all determined lines.
    pub slices_seen: usize,
    /// Per page: distinct slices among its determined lines.
    pub per_page_seen: Vec<usize>,
    /// Per page: (offset pairs compared, pairs whose same/different answer differs from page 0's).
    pub against_first: Vec<(usize, usize)>,
    /// Per page: slices it shares with page 0.
    pub shared_with_first: Vec<usize>,
}

/// Relate the pages' partitions. `lines[i]` is an address relative to the first page's base,
/// `class[i]` its slice class; every page holds the same offsets in the same order.
pub fn cross_page(lines: &[u64], class: &[Option<usize>], page_bytes: u64) -> Option<CrossPage> {
    let pages = lines.iter().map(|&a| a / page_bytes).max()? as usize + 1;
    if pages < 2 || !lines.len().is_multiple_of(pages) {
        return None;
    }
    let per = lines.len() / pages;
    let page_class = |p: usize| -> &[Option<usize>] { &class[p * per..(p + 1) * per] };
    let distinct = |c: &[Option<usize>]| c.iter().flatten().collect::<std::collections::HashSet<_>>().len();
    let first: std::collections::HashSet<usize> = page_class(0).iter().flatten().copied().collect();
    Some(CrossPage {
        pages,
        slices_seen: distinct(class),
        per_page_seen: (0..pages).map(|p| distinct(page_class(p))).collect(),
        against_first: (0..pages).map(|p| partition_disagreements(page_class(0), page_class(p))).collect(),
        shared_with_first: (0..pages)
            .map(|p| {
                page_class(p)
                    .iter()
                    .flatten()
                    .collect::<std::collections::HashSet<_>>()
                    .iter()
                    .filter(|c| first.contains(c))
                    .count()
            })
            .collect(),
    })
}
