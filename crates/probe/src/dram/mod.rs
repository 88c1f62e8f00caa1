//! `dram`: DRAM row size and refresh stalls (seed 000 footnotes 13-14 and appendix "DRAM
//! refresh"). Refresh: one cold dependent lap records per-hop times; most hops take the DRAM
//! latency, a small share wait up to a hard ceiling; the excess over the median is fitted by a
//! two-piece density (refresh stalls uniform up to the stall length, rare outliers spread wider):
//! the breakpoint is the stall, the mass above the outlier floor the fraction. Row size: with one
//! read in flight a row closes before the next read, so the instrument keeps two or three reads in
//! flight (one warp each, one hop each, after a flush): (x, x ^ d) pays an activate more when the
//! two are in one bank but different rows (T1); (x, z, x ^ d), with z a known row conflict of x,
//! pays it when x ^ d is in x's bank at all (T2). Same row = same bank and no conflict; the
//! row-preserving differences form a GF(2) space (single bits, then pairs of bits, so a hashed
//! row such as footnote 13's 2^8 ^ 2^14 is found), and the row holds sector x 2^rank bytes.
//! The refresh fit is refresh.rs, the row instrument and its analysis rows.rs.

pub mod refresh;
pub mod rows;

pub use refresh::{analyze_refresh, excess_histogram, RefreshFit};
pub use rows::{analyze_row, low_pivots, CONFIRM, DECISIVE, DECISIVE_FAST, MAX_K};

use crate::measure::{earlier_u64, gpu_applicability, Meter};
use memscope_core::gf2;
use memscope_core::keys;
use memscope_core::stats::median;
use memscope_core::{
    Applicability, CachePath, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo,
};
use rows::{measure_row, row_saving_series, RowFound};

pub struct DramProbe;

/// Lines in the refresh probe's cold lap, quick or not: the stall's edge needs stalled hops (0.5-3 %
/// of the lap on the simulator's drawn hierarchies), and each alternate half of the lap must
/// resolve it too; with 8000 in quick runs about two in five of the discovery sweep's stalls were
/// undetermined for want of them. The whole probe, this lap included, took 0.38-0.41 s on the H200
/// (results/h200/default-run, results/h200/repeatability).
pub const REFRESH_LAP_LINES: u64 = 24000;

impl Probe for DramProbe {
    fn key(&self) -> &'static str {
        "dram"
    }
    fn description(&self) -> &'static str {
        "DRAM row size (reads in flight in one bank: same row or conflict) and refresh stalls (per-hop times)"
    }
    fn needs(&self) -> &'static [&'static str] {
        &["line", "tlb"]
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        if info.gpu_hierarchy && !info.per_hop_supported {
            return Applicability::Waived("needs per-hop timing".into());
        }
        gpu_applicability(info, true)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let earlier = ctx.earlier.clone();
        let mut m = Meter::new(&mut *ctx.target, 81);
        let info = m.info.clone();
        let mut out = ProbeOutput::default();
        let line = earlier_u64(&earlier, keys::L1_LINE_BYTES).unwrap_or(128);
        let sector = earlier_u64(&earlier, keys::L1_SECTOR_BYTES).unwrap_or(32);
        // Row differences must stay inside one page (a program cannot choose physical bits above
        // it): with the page size unknown, the smallest page there is (4 KiB), so a row of 4 KiB
        // or more is undetermined rather than read across pages placed anywhere.
        let page = earlier_u64(&earlier, keys::TLB_PAGE_BYTES).unwrap_or(4 << 10);

        // Refresh: one cold lap, every hop a row miss (latency/dram_lap.rs: an open row's
        // cheaper hops would otherwise read as a band of excess above the median). The same
        // length in both modes (REFRESH_LAP_LINES).
        let n_lines: u64 = REFRESH_LAP_LINES;
        let known_page = earlier_u64(&earlier, keys::TLB_PAGE_BYTES);
        let entries = earlier_u64(&earlier, keys::TLB_L1_ENTRIES);
        let buf = m.alloc(crate::latency::dram_lap::lap_bytes(line, known_page, entries, n_lines))?;
        let lap = crate::latency::dram_lap::row_miss_lines(m.rng(), buf.base, line, known_page, entries, n_lines);
        let t = m.cold_lap(&lap.lines, CachePath::L1Bypass)?;
        m.target.free(buf);
        let rmethod = format!("one cold dependent lap over {n_lines} lines ({}), per-hop excess over the median fitted as uniform stalls plus outliers; the hops entering a page and the next left out (TLB misses)", lap.how);
        // The hops that enter a page pay a TLB miss (the flush empties the TLB): left out, with
        // the hop after each (records that might lag a hop), so a miss is not read as a stall.
        let entering: std::collections::HashSet<usize> = lap.page_entries.iter().flat_map(|&i| [i, i + 1]).collect();
        let kept: Option<Vec<f64>> = t.per_hop_ns.as_ref().map(|h| {
            h.iter().enumerate().filter(|(i, _)| !entering.contains(&(i % lap.lines.len()))).map(|(_, &v)| v).collect()
        });
        match &kept {
            Some(h) => {
                out.series("dram.refresh_hist", excess_histogram(h, 10.0));
                let base = median(h);
                let mad = memscope_core::stats::Sample::new(h).map(|s| s.mad()).unwrap_or(0.0);
                // Above jitter, and above a TLB miss (the first hop into each page pays one).
                let tlb_ns = crate::measure::earlier_f64(&earlier, keys::TLB_L1_MISS_NS).unwrap_or(0.0).max(0.0);
                let floor = (6.0 * 1.4826 * mad).max(0.02 * base) + tlb_ns;
                match analyze_refresh(h, floor) {
                    Ok(fit) => {
                        let mut f =
                            Finding::number(fit.stall_ns, "ns", &rmethod, Confidence::Medium).with_note(&format!(
                                "{:.0} stalled hops; excess below {floor:.1} ns is not separable from jitter",
                                fit.points
                            ));
                        if let Some(hz) = info.clock_hz {
                            f = f.with_cycles(fit.stall_ns * 1e-9 * hz);
                        }
                        out.finding(keys::DRAM_REFRESH_STALL_NS, f);
                        out.finding(
                            keys::DRAM_REFRESH_FRACTION,
                            Finding::number(fit.fraction, "ratio", &rmethod, Confidence::Medium),
                        );
                    }
                    Err(reason) => {
                        let why = format!("{reason} ({floor:.1} ns floor, {n_lines} cold accesses)");
                        out.finding(keys::DRAM_REFRESH_STALL_NS, Finding::undetermined("ns", &rmethod, &why));
                        out.finding(keys::DRAM_REFRESH_FRACTION, Finding::undetermined("ratio", &rmethod, &why));
                    }
                }
            }
            None => {
                out.finding(keys::DRAM_REFRESH_STALL_NS, Finding::undetermined("ns", &rmethod, "needs per-hop times"));
                out.finding(
                    keys::DRAM_REFRESH_FRACTION,
                    Finding::undetermined("ratio", &rmethod, "needs per-hop times"),
                );
            }
        }

        // Row size.
        let mmethod = "two warps after a flush: a read of x, and after k L1 hits a read of x ^ d; a same-row read skips the activate while x's row is open; row-preserving differences as a GF(2) space";
        let buf = m.alloc(4 * page)?;
        let x = buf.base.div_ceil(page) * page;
        // Fillers: words of one small region per warp (a line or two), so they cannot crowd L1.
        let fillers: Vec<u64> =
            (0..2 * MAX_K as u64).map(|i| x + page + (i / MAX_K as u64) * 4096 + (i % MAX_K as u64) * 8).collect();
        let mut levels = Vec::new();
        let res = measure_row(&mut m, x, page, sector, fillers, &mut levels);
        if !levels.is_empty() {
            out.series("dram.row_saving", row_saving_series(&levels));
        }
        m.target.free(buf);
        match res? {
            // Every difference tried keeps the row: the row spans at least the bits tried (the
            // page, or 2^22), and may span more, which no difference a program can make shows.
            Ok(RowFound { row, top_bit, .. }) if row >= 1u64 << top_bit => out.finding(
                keys::DRAM_ROW_BYTES,
                Finding::undetermined(
                    "bytes",
                    mmethod,
                    &format!(
                        "every difference below bit {top_bit} keeps the row: rows are at least {row} bytes (the span the differences can reach inside a {page}-byte page), maybe larger"
                    ),
                ),
            ),
            Ok(RowFound { row, preserving, saving, k, top_bit, fast_same }) => {
                let basis: Vec<String> = gf2::rref(&preserving).iter().map(|&v| gf2::format_mask(v)).collect();
                out.finding(
                    keys::DRAM_ROW_BYTES,
                    Finding::integer(row, "bytes", mmethod, Confidence::Medium).with_note(&format!(
                        "row-preserving differences: {basis:?}; an open row saves ~{saving:.1} ns at a delay of {k} L1 hits ({fast_same} of {CONFIRM} confirming same-row reads below the threshold, no other-row read); differences of one or two bits below bit {top_bit} tried, each kept twice"
                    )),
                );
            }
            Err(why) => out.finding(keys::DRAM_ROW_BYTES, Finding::undetermined("bytes", mmethod, &why)),
        }
        Ok(out)
    }
}
