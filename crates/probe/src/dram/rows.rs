//! The DRAM row size (seed 000 footnotes 13-14): the two- and three-read instrument after a flush
//! (`RowBench`), the search for row-preserving address differences (`measure_row`) and the pure
//! analysis of their GF(2) space into a row size (`analyze_row`).

use crate::measure::Meter;
use memscope_core::gf2;
use memscope_core::stats::median;
use memscope_core::{CachePath, ChaseSpec, ProbeError, Series};

/// Pure: the lowest set bits of a GF(2) basis of `vs` in echelon form by lowest bit (each vector
/// of the span has one of them as its lowest bit).
pub fn low_pivots(vs: &[u64]) -> u64 {
    let mut basis: Vec<u64> = Vec::new();
    for &v in vs {
        let mut x = v;
        for &b in &basis {
            if x & b & b.wrapping_neg() != 0 {
                x ^= b;
            }
        }
        if x != 0 {
            basis.push(x);
            basis.sort_unstable_by_key(|b| b.trailing_zeros());
        }
    }
    basis.iter().fold(0, |m, b| m | (b & b.wrapping_neg()))
}

/// Pure: the row size from the row-preserving differences found (the sector difference included):
/// the bytes inside a sector times 2^rank. The lowest bits of the space's echelon basis must be
/// the bits from the sector up without a gap (footnote 13's row: 5, 6, 7, 9 and 8 ^ 14 give 5..9):
/// a bit inside them that no tested difference carries is either a bank bit or a column bit whose
/// partner lies beyond the bits tried (above the page, which no address of a program can flip),
/// and the two give different row sizes: undetermined.
pub fn analyze_row(preserving: &[u64], sector: u64) -> Result<u64, String> {
    let pivots = low_pivots(preserving);
    let rank = pivots.count_ones();
    let want = ((1u64 << rank) - 1) * sector;
    if pivots != want {
        let top = 63 - pivots.leading_zeros();
        let holes: Vec<u32> = (sector.trailing_zeros()..top).filter(|&b| pivots & (1u64 << b) == 0).collect();
        return Err(format!(
            "the row-preserving differences skip bit(s) {holes:?} below their highest bit: a bank bit inside the row, or a column bit whose partner lies above the bits tried; the two give different row sizes"
        ));
    }
    Ok(sector << rank)
}

/// The row instrument: two warps after a flush; warp 0 reads `x` from DRAM, warp 1 first walks
/// `k` L1-resident lines and then reads `x ^ d`, so its read reaches DRAM about `k` L1 hits later.
/// While `x`'s row is still open, a read of the same row skips the activate; a read of another
/// row (in any bank) pays it.
struct RowBench {
    x: u64,
    sector: u64,
    /// L1-resident filler lines (primed after each flush).
    fillers: Vec<u64>,
}

impl RowBench {
    fn sample(&self, m: &mut Meter<'_>, k: usize, d: u64) -> Result<f64, ProbeError> {
        let x = self.x;
        let y = x ^ d;
        let n = self.fillers.len() / 2;
        let (a, w) = self.fillers.split_at(n);
        m.target.flush()?;
        // Prime: translate x's and y's pages through other sectors of their lines, bypassing L1
        // (so nothing of theirs can evict a filler), then the fillers into L1.
        let mut tr = vec![x ^ (3 * self.sector)];
        if y & !(self.sector * 4 - 1) != x & !(self.sector * 4 - 1) {
            tr.push(y ^ (3 * self.sector));
        }
        let mut p = ChaseSpec::new(tr, CachePath::L1Bypass, 1);
        p.hops = p.addrs.len() as u64;
        p.warmup_laps = 0;
        p.repeats = 1;
        m.target.chase(&p)?;
        let mut p = ChaseSpec::new(self.fillers.clone(), CachePath::L1Cached, self.fillers.len() as u64);
        p.warmup_laps = 1;
        p.repeats = 1;
        m.target.chase(&p)?;
        // Chain 0: x then k fillers; chain 1: k fillers then y (round-robin split of the list).
        let c0: Vec<u64> = std::iter::once(x).chain(a[..k].iter().copied()).collect();
        let c1: Vec<u64> = w[..k].iter().copied().chain(std::iter::once(y)).collect();
        let addrs: Vec<u64> = c0.iter().zip(&c1).flat_map(|(p, q)| [*p, *q]).collect();
        let mut spec = ChaseSpec::new(addrs, CachePath::L1Cached, (k + 1) as u64);
        spec.warmup_laps = 0;
        spec.repeats = 1;
        spec.per_hop = true;
        spec.warps = 2;
        m.chases += 2;
        let r = m.target.chase(&spec)?;
        let h = r.per_hop_ns.ok_or_else(|| ProbeError::Failed("per-hop times missing".into()))?;
        // x and y are the only DRAM reads; x is recorded before y whether the per-hop times are
        // in time order or chain-major: y is the later of the two slowest hops.
        let mut idx: Vec<usize> = (0..h.len()).collect();
        idx.sort_by(|&i, &j| h[j].partial_cmp(&h[i]).expect("finite"));
        match idx.as_slice() {
            [i, j, ..] => Ok(h[*i.max(j)]),
            _ => Err(ProbeError::Failed("fewer than two hops recorded".into())),
        }
    }
    /// Whether at least two of up to `n` samples are faster than `threshold_ns` (stops at the
    /// second). A read of another row can never skip the activate (outliers and refresh stalls only
    /// add time), while a read of the open row sometimes misses the short window in which the row
    /// stays open (timing jitter of the delay chain), so two fast samples prove the same row where
    /// a median would need most of them.
    fn fast_twice(&self, m: &mut Meter<'_>, k: usize, d: u64, n: usize, threshold_ns: f64) -> Result<bool, ProbeError> {
        let mut fast = 0;
        for _ in 0..n {
            if self.sample(m, k, d)? < threshold_ns {
                fast += 1;
                if fast == 2 {
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }
    fn median_of(&self, m: &mut Meter<'_>, k: usize, d: u64, n: usize) -> Result<f64, ProbeError> {
        let v: Result<Vec<f64>, ProbeError> = (0..n).map(|_| self.sample(m, k, d)).collect();
        Ok(median(&v?))
    }
}

/// Row-size measurement around `x` (page-aligned); `fillers` are 2 * MAX_K lines elsewhere.
/// Returns what was found or why not; `levels` receives (k, same-row median, other-row median)
/// per delay tried, whatever the outcome.
pub(crate) fn measure_row(
    m: &mut Meter<'_>,
    x: u64,
    page: u64,
    sector: u64,
    fillers: Vec<u64>,
    levels: &mut Vec<(usize, f64, f64)>,
) -> Result<Result<RowFound, String>, ProbeError> {
    let rb = RowBench { x, sector, fillers };
    let samples = 3;
    let top_bit = page.trailing_zeros().min(22);
    // Different-row references: a half, a quarter and an eighth of a page away, and 64 and 128 KiB
    // (rows are at most the nearest); the smallest of their medians, so one reference that
    // met a refresh stall, a row conflict or another disturbance (on the simulator, reads far
    // apart in a page can cost more than a plain activate) cannot inflate the saving.
    let mut fars: Vec<u64> =
        [page / 2, page / 4, page / 8, 128 << 10, 64 << 10].into_iter().filter(|&f| f < page && f > sector).collect();
    fars.sort_unstable();
    fars.dedup();
    let Some(&nearest) = fars.first() else {
        return Ok(Err(format!("a {page}-byte page leaves no room for a different-row reference")));
    };
    // From one L1 hit of delay: with none, both reads reach DRAM together and a same-row read
    // waits for the other's activate like a read of another bank (seen on the simulator: the
    // saving at k = 0 was a row conflict of the references, and every other bank looked like x's
    // row).
    levels.clear();
    for k in 1..=MAX_K {
        let same = rb.median_of(m, k, sector, 5)?;
        let mut other = f64::INFINITY;
        for &f in &fars {
            other = other.min(rb.median_of(m, k, f, samples)?);
        }
        levels.push((k, same, other));
    }
    // The plain level (a read that opens its row while no other read is near): the same-row read
    // at its slowest delay, once the row has closed. Where it lies clearly above the fastest
    // same-row read, the references are capped at it: on the simulator the references can queue
    // behind x (a conflict, more than an activate), and a threshold halfway to them would pass
    // every read of another bank for x's row. Where rows stay open (open-page policy), the
    // references alone set the level.
    let plain = levels.iter().map(|l| l.1).fold(f64::NEG_INFINITY, f64::max);
    let fastest = levels.iter().map(|l| l.1).fold(f64::INFINITY, f64::min);
    let cap = if plain - fastest >= 0.05 * plain { plain } else { f64::INFINITY };
    let (k, same, other) = levels
        .iter()
        .map(|&(k, same, other)| (k, same, other.min(cap)))
        .max_by(|a, b| (a.2 - a.1).partial_cmp(&(b.2 - b.1)).expect("finite"))
        .expect("MAX_K >= 1");
    let saving = other - same;
    if saving < 0.05 * other {
        return Ok(Err(format!(
            "no delay up to {MAX_K} L1 hits makes a same-row read cheaper than another row's ({same:.1} vs {other:.1} ns)"
        )));
    }
    // Confirmation at the chosen delay: the saving is the largest of the differences over the
    // delays tried, so noise alone (a real DRAM's spread of tens of ns) can make one pass the 5%;
    // fresh reads must split cleanly at the threshold (another row's never faster, x's row mostly)
    // or the outcome would change from run to run.
    let threshold = same + 0.5 * saving;
    let (mut fast_same, mut fast_other) = (0usize, 0usize);
    for i in 0..CONFIRM {
        fast_same += usize::from(rb.sample(m, k, sector)? < threshold);
        fast_other += usize::from(rb.sample(m, k, fars[i % fars.len()])? < threshold);
    }
    if fast_other > 0 || 2 * fast_same < CONFIRM {
        return Ok(Err(format!(
            "the open-row saving (~{saving:.1} ns at a delay of {k} L1 hits, {same:.1} vs {other:.1} ns) does not repeat: of {CONFIRM} fresh reads each, {fast_same} of x's row and {fast_other} of other rows were faster than {threshold:.1} ns (x's row must mostly be, another row's never)"
        )));
    }
    let same_row = |m: &mut Meter<'_>, d: u64| -> Result<bool, ProbeError> { rb.fast_twice(m, k, d, 9, threshold) };
    // Each difference twice; where the two passes disagree, a decisive count over `DECISIVE`
    // reads: at least `DECISIVE_FAST` fast ones is x's row, none is another row, anything between
    // is undetermined (noise at the threshold would otherwise pick the row size).
    let decide = |m: &mut Meter<'_>, d: u64| -> Result<Result<bool, String>, ProbeError> {
        let first = same_row(m, d)?;
        if same_row(m, d)? == first {
            return Ok(Ok(first));
        }
        let mut fast = 0;
        for _ in 0..DECISIVE {
            fast += usize::from(rb.sample(m, k, d)? < threshold);
        }
        Ok(match fast {
            0 => Ok(false),
            f if f >= DECISIVE_FAST => Ok(true),
            f => Err(format!(
                "the difference {} was classified differently on two passes and {f} of {DECISIVE} further reads were faster than {threshold:.1} ns (saving ~{saving:.1} ns at a delay of {k} L1 hits): same-row and other-row reads are not separable",
                gf2::format_mask(d)
            )),
        })
    };
    // The reference difference (one sector) preserves the row by assumption (footnote 13).
    let mut preserving: Vec<u64> = vec![sector];
    let mut others: Vec<u32> = vec![];
    for b in sector.trailing_zeros() + 1..top_bit {
        match decide(m, 1 << b)? {
            Ok(true) => preserving.push(1 << b),
            Ok(false) => others.push(b),
            Err(why) => return Ok(Err(why)),
        }
    }
    for i in 0..others.len() {
        for j in i + 1..others.len() {
            let d = (1u64 << others[i]) | (1u64 << others[j]);
            if gf2::in_span(&preserving, d) || !same_row(m, d)? {
                continue;
            }
            // (a pair found once is re-tested like a single bit)
            match decide(m, d)? {
                Ok(true) => preserving.push(d),
                Ok(false) => {}
                Err(why) => return Ok(Err(why)),
            }
        }
    }
    let row = match analyze_row(&preserving, sector) {
        Ok(r) => r,
        Err(why) => return Ok(Err(why)),
    };
    if row > nearest {
        return Ok(Err(format!(
            "{row} bytes would reach the nearest different-row reference ({nearest} bytes away): the open-row saving is not specific"
        )));
    }
    Ok(Ok(RowFound { row, preserving, saving, k, top_bit, fast_same }))
}

/// What the row measurement found.
pub(crate) struct RowFound {
    pub(crate) row: u64,
    /// The row-preserving differences kept (the sector first).
    pub(crate) preserving: Vec<u64>,
    /// Activate saving of a same-row read, ns.
    pub(crate) saving: f64,
    /// L1 hits of delay used.
    pub(crate) k: usize,
    /// Differences were tried below this bit.
    pub(crate) top_bit: u32,
    /// Confirmation reads of x's row faster than the threshold (of `CONFIRM`).
    pub(crate) fast_same: usize,
}

/// Fresh reads of x's row and of other rows that confirm the open-row saving.
pub const CONFIRM: usize = 15;
/// Reads that settle a difference the two passes disagree on, and the fast ones that make it
/// x's row (the confirmation allows no fast other-row read and half of x's row's at least).
pub const DECISIVE: usize = 21;
pub const DECISIVE_FAST: usize = 4;

/// The row instrument's evidence: per delay, how much cheaper the read of x's row was than the
/// cheapest other-row reference (medians), with both levels in the description.
pub(crate) fn row_saving_series(levels: &[(usize, f64, f64)]) -> Series {
    let shown: Vec<String> = levels.iter().map(|(k, s, o)| format!("k={k}: {s:.1}/{o:.1}")).collect();
    Series {
        description: format!(
            "other-row minus same-row read time after a read of x, per delay of k L1 hits (medians, same/other ns: {})",
            shown.join(", ")
        ),
        x_name: "delay".into(),
        x_unit: "L1 hits".into(),
        y_name: "open-row saving".into(),
        y_unit: "ns".into(),
        x: levels.iter().map(|l| l.0 as f64).collect(),
        y: levels.iter().map(|l| l.2 - l.1).collect(),
        y_spread: None,
        marks: Vec::new(),
    }
}

/// Most L1 hits of delay tried.
pub const MAX_K: usize = 12;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_from_preserving_space() {
        assert_eq!(analyze_row(&[32, 64, 128, 512, 256 ^ 16384], 32), Ok(1024));
        // Bits 10..13 carried by nothing tried while bit 14 is: gaps, undetermined.
        let e = analyze_row(&[32, 64, 128, 256, 512, 1 << 14 ^ 256], 32).unwrap_err();
        assert!(e.contains("[10, 11, 12, 13]"), "{e}");
        assert_eq!(analyze_row(&[32, 64, 128, 256, 512, 1024, 2048], 32), Ok(4096));
        // Bit 8 carried by nothing tried (a bank bit, or paired with a bit above the page).
        let e = analyze_row(&[32, 64, 128, 512], 32).unwrap_err();
        assert!(e.contains("[8]"), "{e}");
        assert_eq!(low_pivots(&[32 ^ 4096, 32, 64 ^ 32]), 32 | 64 | 4096);
    }
}
