//! The lines of a cold DRAM lap in which every hop opens a row (seed 000 appendix "A latency
//! chase", footnotes 13-14; docs/METHODS.md "DRAM latency"). A dependent chase over dense lines
//! reads a row's lines one after another: when a hop returns faster than the row closes, the next
//! read finds it open and skips the activate, so the lap reads less than the DRAM latency (on the
//! simulator, below ~80 ns). Here no two consecutive hops share a row:
//! - pages of at least 16 row spans: one line per row span, the spans of one page in random
//!   order, page after page (each line its own row; one TLB miss per page);
//! - smaller pages (or the page size unknown: taken as 4 KiB): `ROTATION_PAGES` pages two row
//!   spans apart read in turn, a line of each, so a row is read again only after `ROTATION_PAGES - 1`
//!   reads of other rows (fewer pages where the L1 TLB holds fewer, so the turn never misses it;
//!   4 where the TLB probe did not find its entries). Pages of a turn
//!   lie two spans apart, so a fold of a low bit with one up to a span's (bit 14) sees one value
//!   of the higher bit on all of them.
//!
//! A row span is `ROW_SPAN_BYTES`: larger than the rows of every simulated hierarchy (8 KiB) and
//! than the seeds' XOR row function's reach (bit 14); HBM and GDDR rows are 1-2 KiB per bank.
//! Every line sits at the same offset in its span, so an XOR row function of low and high bits
//! (footnote 13's 2^8 ^ 2^14) cannot fold two spans into one row. The lap's TLB misses (the flush
//! before a cold lap empties the TLB) are counted in `pages`, for the caller to take off.

use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

/// Bytes of one row span: no row reaches across two spans at the same offset.
pub const ROW_SPAN_BYTES: u64 = 16 << 10;
/// Pages read in turn when a page holds fewer than 16 row spans.
pub const ROTATION_PAGES: u64 = 8;
/// The page size assumed when the TLB probe did not find one (the smallest there is).
const UNKNOWN_PAGE_BYTES: u64 = 4 << 10;
/// Pages in turn when the TLB probe did not find the entries: a turn longer than the TLB misses
/// it on every hop (held-out 5003: 6 FIFO entries, a turn of 8 read 45.7 ns, one miss, high);
/// 4 is the fewest entries the randomized tests draw, and L1 TLBs hold more.
const UNKNOWN_TLB_TURN: u64 = 4;

/// A cold lap's lines and what they cost besides the DRAM reads.
#[derive(Debug, Clone)]
pub struct DramLap {
    /// The lap, in chase order.
    pub lines: Vec<u64>,
    /// Distinct pages the lap touches (each one TLB miss after a flush).
    pub pages: u64,
    /// The hops (indexes into `lines`) that enter a page first (of the page size used).
    pub page_entries: Vec<usize>,
    /// Bytes from the aligned start to the end of the last line.
    pub footprint_bytes: u64,
    /// How the lines were chosen, for the method string.
    pub how: String,
}

/// The bytes a lap of `n` lines needs from `base` (with the alignment slack).
pub fn lap_bytes(line: u64, page: Option<u64>, tlb_entries: Option<u64>, n: u64) -> u64 {
    let (page, turn, per_page, stride) = shape(line, page, tlb_entries);
    let align = stride.max(ROW_SPAN_BYTES);
    if turn == 1 {
        n * (page / per_page) + align
    } else {
        n.div_ceil(turn * per_page) * turn * stride + align
    }
}

/// (page, pages in turn, lines per page, bytes between the pages of a turn).
fn shape(line: u64, page: Option<u64>, tlb_entries: Option<u64>) -> (u64, u64, u64, u64) {
    let page = page.unwrap_or(UNKNOWN_PAGE_BYTES).max(line);
    if page >= 16 * ROW_SPAN_BYTES {
        (page, 1, page / ROW_SPAN_BYTES, page)
    } else {
        let turn = tlb_entries.unwrap_or(UNKNOWN_TLB_TURN).clamp(1, ROTATION_PAGES);
        let per_page = if page >= 2 * ROW_SPAN_BYTES { page / ROW_SPAN_BYTES } else { page / line };
        // Two row spans apart: an XOR row function folding a low bit with one below the span
        // (footnote 13's bit 14) sees the same value of it on every page of the turn.
        (page, turn, per_page, 2 * page.max(ROW_SPAN_BYTES))
    }
}

/// `n` lines from `base` (aligned up to a page and a row span) for a cold lap of row misses.
pub fn row_miss_lines(
    rng: &mut ChaCha8Rng,
    base: u64,
    line: u64,
    page: Option<u64>,
    tlb_entries: Option<u64>,
    n: u64,
) -> DramLap {
    let (page_bytes, turn, per_page, stride) = shape(line, page, tlb_entries);
    let align = stride.max(ROW_SPAN_BYTES);
    let start = base.div_ceil(align) * align;
    let step = page_bytes / per_page;
    let mut lines = Vec::with_capacity(n as usize);
    let mut pages = 0;
    let mut group = 0;
    while (lines.len() as u64) < n {
        let first = start + group * turn * stride;
        // Each page's lines in its own random order, the pages of the turn interleaved.
        let orders: Vec<Vec<u64>> = (0..turn)
            .map(|p| {
                let mut o: Vec<u64> = (0..per_page).map(|j| first + p * stride + j * step).collect();
                o.shuffle(rng);
                o
            })
            .collect();
        let mut used = vec![false; turn as usize];
        'fill: for j in 0..per_page as usize {
            for (p, o) in orders.iter().enumerate() {
                if lines.len() as u64 == n {
                    break 'fill;
                }
                lines.push(o[j]);
                used[p] = true;
            }
        }
        pages += used.iter().filter(|&&u| u).count() as u64;
        group += 1;
    }
    let footprint_bytes = lines.iter().max().map_or(0, |&a| a + line - start);
    let mut seen = std::collections::HashSet::new();
    let page_entries: Vec<usize> =
        lines.iter().enumerate().filter(|(_, &a)| seen.insert(a / page_bytes)).map(|(i, _)| i).collect();
    let how = if turn == 1 {
        format!(
            "one line per {} KiB row span, the spans of each {}-byte page in random order, page after page",
            ROW_SPAN_BYTES >> 10,
            page_bytes
        )
    } else {
        format!(
            "{turn} pages of {page_bytes} bytes {} KiB apart read in turn, a line of each, so a row is read again only after {} reads of other rows{}{}",
            stride >> 10,
            turn - 1,
            if page.is_none() { " (page size unknown: taken as 4 KiB)" } else { "" },
            if tlb_entries.is_none() { " (TLB entries unknown: 4 pages in turn)" } else { "" }
        )
    };
    DramLap { lines, pages, page_entries, footprint_bytes, how }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn row_contiguous(a: u64, row: u64) -> u64 {
        a / row
    }
    /// The seeds' XOR row function (footnote 13): 1 KiB rows, bit 8 folded with bit 14.
    fn row_xor(a: u64) -> u64 {
        (a >> 10) ^ ((a >> 4) & (1 << 4))
    }

    /// The shortest distance, in hops, between two reads of one row over a lap read twice.
    fn closest_revisit(lines: &[u64], row: impl Fn(u64) -> u64) -> usize {
        let mut last = std::collections::HashMap::new();
        let mut best = usize::MAX;
        for (i, &a) in lines.iter().chain(lines).enumerate() {
            if let Some(j) = last.insert(row(a), i) {
                best = best.min(i - j);
            }
        }
        best
    }

    #[test]
    fn large_pages_give_every_line_its_own_row() {
        let mut r = ChaCha8Rng::seed_from_u64(1);
        for page in [2u64 << 20, 16 << 20, 64 << 20] {
            let lap = row_miss_lines(&mut r, 12345, 128, Some(page), Some(16), 4096);
            assert_eq!(lap.lines.len(), 4096);
            for row in [256u64, 1024, 8192] {
                assert_eq!(closest_revisit(&lap.lines, |a| row_contiguous(a, row)), 4096, "{page} {row}");
            }
            assert_eq!(closest_revisit(&lap.lines, row_xor), 4096);
            assert_eq!(lap.pages, 4096u64.div_ceil(page / ROW_SPAN_BYTES));
            assert!(lap.footprint_bytes <= lap_bytes(128, Some(page), Some(16), 4096));
        }
    }

    #[test]
    fn small_pages_are_read_in_turn_within_the_tlb() {
        let mut r = ChaCha8Rng::seed_from_u64(2);
        for (entries, turn) in [(Some(64u64), 8usize), (None, 4), (Some(5), 5)] {
            let lap = row_miss_lines(&mut r, 4096 * 3 + 64, 128, Some(4096), entries, 4096);
            assert_eq!(lap.lines.len(), 4096);
            for row in [256u64, 1024, 4096, 8192] {
                assert!(closest_revisit(&lap.lines, |a| row_contiguous(a, row)) >= turn, "{row}");
            }
            assert!(closest_revisit(&lap.lines, row_xor) >= turn);
            // Consecutive hops never leave the turn's pages: no more pages than the TLB holds.
            // 32 lines a page; the last turn's pages may be part-filled.
            assert!((128..128 + turn as u64).contains(&lap.pages), "{}", lap.pages);
            assert_eq!(lap.page_entries.len() as u64, lap.pages);
            let mut distinct = std::collections::HashSet::new();
            for w in lap.lines.chunks(turn) {
                distinct.clear();
                distinct.extend(w.iter().map(|a| a / 4096));
                assert_eq!(distinct.len(), w.len());
            }
            assert!(lap.footprint_bytes <= lap_bytes(128, Some(4096), entries, 4096));
        }
    }
}
