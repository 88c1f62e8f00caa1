//! `tlb`: the first-level TLB by pointer chases with one line per page (seed 000 footnote 8 and
//! appendix "Page tables and the TLB"): k pages fit, k + 1 thrash (entries); the smallest stride at
//! which k + 1 lines thrash is the page size; the step height is the miss cost; a cyclic walk over
//! k + 1 pages missing on every hop, with a page touched between every two others never missing,
//! is LRU (under FIFO the hot page is evicted once per k insertions); the same step with the pages
//! split among the warps of one block means the TLB is per SM, shared by its warps. Chases bypass
//! L1 so every hop is translated, and stay L2-resident after warm-up.

use crate::measure::{gpu_applicability, Meter, Timing};
use memscope_core::{
    Applicability, CachePath, ChaseSpec, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo,
};

pub struct TlbProbe;

/// Largest stride tried (pages up to half of it can be found) and most pages chased.
pub const MAX_STRIDE: u64 = 8 << 20;
pub const MAX_PAGES: u64 = 256;

/// Line `i` of a chase at `stride`: one line per stride block, the offset inside the block spread
/// over the block (in 128-byte slots, by an odd multiplier) so the lines do not pile into a few
/// L2 sets.
pub fn page_line(base: u64, stride: u64, i: u64) -> u64 {
    let slots = (stride / 128).max(1);
    base + i * stride + ((i * 2_654_435_761) % slots) * 128 % stride
}

struct Bench {
    base: u64,
    fit_ns: f64,
    thrash_ns: f64,
}

impl Bench {
    fn lines(&self, n: u64, stride: u64) -> Vec<u64> {
        (0..n).map(|i| page_line(self.base, stride, i)).collect()
    }
    /// A chase from an empty TLB (a FIFO TLB keeps hits from an earlier chase's pages for good).
    fn run(&self, m: &mut Meter<'_>, n: u64, stride: u64, warps: u32) -> Result<Timing, ProbeError> {
        m.target.flush()?;
        let addrs = self.lines(n, stride);
        let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, (n * 8).max(2000));
        spec.warmup_laps = 2;
        spec.warps = warps;
        m.run(spec)
    }
    fn thrashes(&self, m: &mut Meter<'_>, n: u64, stride: u64, warps: u32) -> Result<bool, ProbeError> {
        Ok(self.run(m, n, stride, warps)?.typical_ns() > 0.5 * (self.fit_ns + self.thrash_ns))
    }
}

/// Pure: classify replacement from the hot page's miss fraction and the cold pages' miss
/// fraction of the interleaved walk over `entries + 1` pages.
pub fn analyze_replacement(hot_miss: f64, cold_miss: f64, entries: u64) -> Result<&'static str, String> {
    let e = entries.max(1) as f64;
    if cold_miss < 0.8 {
        return Err(format!("the cold pages missed on only {:.0}% of hops: neither LRU nor FIFO", cold_miss * 100.0));
    }
    if hot_miss < 0.3 / e {
        Ok("lru")
    } else if hot_miss >= 0.6 / e && hot_miss < 3.0 / e {
        Ok("fifo")
    } else {
        Err(format!(
            "the hot page missed on {:.2}% of its hops: neither LRU (0) nor FIFO (~{:.1}%)",
            hot_miss * 100.0,
            100.0 / e
        ))
    }
}

/// Pure: smallest stride whose (entries + 1)-line chase thrashes, given outcomes in ascending
/// stride, provided every larger stride thrashes too.
pub fn analyze_page(outcomes: &[(u64, bool)]) -> Option<u64> {
    let i = outcomes.iter().position(|o| o.1)?;
    outcomes[i..].iter().all(|o| o.1).then_some(outcomes[i].0)
}

impl Probe for TlbProbe {
    fn key(&self) -> &'static str {
        "tlb"
    }
    fn description(&self) -> &'static str {
        "first-level TLB: entries, page size, miss cost, replacement and scope (one line per page)"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        gpu_applicability(info, true)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let mut m = Meter::new(&mut *ctx.target, 61);
        let info = m.info.clone();
        let buf = m.alloc(MAX_PAGES * MAX_STRIDE + MAX_STRIDE)?;
        let mut b = Bench { base: buf.base, fit_ns: 0.0, thrash_ns: 0.0 };
        let mut out = ProbeOutput::default();
        let fit = b.run(&mut m, 2, MAX_STRIDE, 1)?;
        let thrash = b.run(&mut m, MAX_PAGES, MAX_STRIDE, 1)?;
        b.fit_ns = fit.typical_ns();
        b.thrash_ns = thrash.typical_ns();
        let step = b.thrash_ns - b.fit_ns;
        let undetermined_all = |out: &mut ProbeOutput, why: &str| {
            for (k, u) in [
                ("tlb.l1.entries", "entries"),
                ("tlb.page_bytes", "bytes"),
                ("tlb.l1.miss_ns", "ns"),
                ("tlb.l1.replacement", ""),
                ("tlb.l1.scope", ""),
            ] {
                out.finding(k, Finding::undetermined(u, "one line per page", why));
            }
        };
        if step < 0.005 * b.fit_ns.max(1.0) || step < 0.3 {
            undetermined_all(&mut out, &format!("no step between 2 and {MAX_PAGES} pages at {MAX_STRIDE}-byte stride ({:.2} ns vs {:.2} ns): more entries than that, or a free miss", b.fit_ns, b.thrash_ns));
            m.target.free(buf);
            return Ok(out);
        }
        // Entries: smallest thrashing page count by bisection.
        let (mut lo, mut hi) = (2u64, MAX_PAGES);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if b.thrashes(&mut m, mid, MAX_STRIDE, 1)? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let entries = lo;
        let confirmed =
            !b.thrashes(&mut m, entries, MAX_STRIDE, 1)? && b.thrashes(&mut m, entries + 1, MAX_STRIDE, 1)?;
        let method =
            format!("chase with one line per {MAX_STRIDE}-byte block, L1-bypassing, bisection on the page count");
        if !confirmed {
            undetermined_all(&mut out, &format!("the step at {entries}/{} pages did not repeat", entries + 1));
            m.target.free(buf);
            return Ok(out);
        }
        out.finding("tlb.l1.entries", Finding::integer(entries, "entries", &method, Confidence::High));

        // Page size: smallest stride at which entries + 1 lines thrash.
        let mut outcomes = Vec::new();
        let mut s = 4096u64;
        while s <= MAX_STRIDE {
            outcomes.push((s, b.thrashes(&mut m, entries + 1, s, 1)?));
            s *= 2;
        }
        let page = analyze_page(&outcomes);
        let pmethod = format!("smallest stride at which {} lines (entries + 1) thrash the TLB", entries + 1);
        let page_stride = match page {
            Some(p) if p < MAX_STRIDE => {
                out.finding("tlb.page_bytes", Finding::integer(p, "bytes", &pmethod, Confidence::High));
                p
            }
            _ => {
                out.finding(
                    "tlb.page_bytes",
                    Finding::undetermined(
                        "bytes",
                        &pmethod,
                        &format!("outcomes {outcomes:?} show no single page size below {MAX_STRIDE} bytes"),
                    ),
                );
                MAX_STRIDE
            }
        };

        // Miss cost: 2 * entries pages (every hop misses under LRU/FIFO) minus entries / 2 pages.
        let hot = b.run(&mut m, (entries / 2).max(1), page_stride, 1)?;
        let cold = b.run(&mut m, (2 * entries).min(MAX_PAGES), page_stride, 1)?;
        let miss = cold.typical_ns() - hot.typical_ns();
        let mut f = Finding::number(
            miss,
            "ns",
            "median hop over 2 x entries pages minus over entries / 2 pages",
            Confidence::High,
        );
        if let Some(s) = cold.sample() {
            f = f.with_spread(s.spread());
        }
        if let Some(hz) = info.clock_hz {
            f = f.with_cycles(miss * 1e-9 * hz);
        }
        out.finding("tlb.l1.miss_ns", f);

        // Replacement: cyclic walk over entries pages with a hot page between every two.
        let rmethod = "cyclic walk over entries + 1 pages with one hot page visited between every two others";
        let hot_lines: Vec<u64> = (0..entries).map(|i| b.base + (MAX_PAGES - 1) * MAX_STRIDE + i * 8).collect();
        let mut addrs = Vec::new();
        for i in 0..entries {
            addrs.push(hot_lines[i as usize]);
            addrs.push(page_line(b.base, page_stride, i));
        }
        let n = addrs.len() as u64;
        let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, n * (200_000 / n).max(4));
        spec.warmup_laps = 3;
        m.target.flush()?;
        let t = m.run(spec)?;
        // Miss fractions from windowed means (jitter averages out; outliers beyond the window
        // are dropped), scaled between the all-hit and the all-miss references.
        match (&t.per_hop_ns, &fit.per_hop_ns, &thrash.per_hop_ns) {
            (Some(h), Some(fh), Some(th)) => {
                let mad = memscope_core::stats::Sample::new(fh).map(|x| x.mad()).unwrap_or(0.0);
                let (lo, hi) = (b.fit_ns - step - 7.0 * mad, b.thrash_ns + step + 7.0 * mad);
                let wmean = |v: &mut dyn Iterator<Item = f64>| {
                    let (sum, n) = v.filter(|x| *x >= lo && *x <= hi).fold((0.0, 0usize), |a, x| (a.0 + x, a.1 + 1));
                    sum / n.max(1) as f64
                };
                let (f0, f1) = (wmean(&mut fh.iter().copied()), wmean(&mut th.iter().copied()));
                let hot = wmean(&mut h.iter().copied().step_by(2));
                let cold = wmean(&mut h.iter().copied().skip(1).step_by(2));
                let (hf, cf) = ((hot - f0) / (f1 - f0), (cold - f0) / (f1 - f0));
                match analyze_replacement(hf, cf, entries) {
                    Ok(p) => out.finding(
                        "tlb.l1.replacement",
                        Finding::text(p, rmethod, Confidence::High)
                            .with_note(&format!("hot page miss fraction {hf:.4}, other pages {cf:.3}")),
                    ),
                    Err(why) => out.finding("tlb.l1.replacement", Finding::undetermined("", rmethod, &why)),
                }
            }
            _ => out.finding("tlb.l1.replacement", Finding::undetermined("", rmethod, "needs per-hop times")),
        }

        // Scope: the entries + 1 pages split round-robin among 2 warps of one block.
        let smethod = "1.5 x entries pages split among 2 warps of one block";
        // 1.5 x entries pages (even, so both warps walk cycles of one length): a shared TLB
        // misses (every reuse distance is ~1.5 x entries even when jitter lets the warps drift),
        // per-warp TLBs of `entries` each hold their 0.75 x entries pages.
        let n_split = (3 * entries / 4).max(1) * 2;
        if n_split > MAX_PAGES {
            // The buffer holds MAX_PAGES blocks (seen on the H200: a step near 176 pages at the
            // largest stride would have asked for 264).
            out.finding(
                "tlb.l1.scope",
                Finding::undetermined(
                    "",
                    smethod,
                    &format!("needs {n_split} pages, the probe's buffer holds {MAX_PAGES}"),
                ),
            );
            m.target.free(buf);
            return Ok(out);
        }
        let shared = b.thrashes(&mut m, n_split, page_stride, 2)?;
        let split_fits = !b.thrashes(&mut m, (entries / 4).max(1) * 2, page_stride, 2)?;
        if shared && split_fits {
            out.finding(
                "tlb.l1.scope",
                Finding::text("sm", smethod, Confidence::High)
                    .with_note("the same step as one warp: one TLB per SM, shared by its warps"),
            );
        } else if !shared {
            out.finding(
                "tlb.l1.scope",
                Finding::text("warp", smethod, Confidence::Medium)
                    .with_note("no step at 1.5 x entries pages when split: each warp has its own entries"),
            );
        } else {
            out.finding(
                "tlb.l1.scope",
                Finding::undetermined("", smethod, "the split chase thrashed already at entries / 2 pages"),
            );
        }
        m.target.free(buf);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_and_replacement_analysis() {
        let o = [(4096, false), (8192, false), (65536, true), (131072, true)];
        assert_eq!(analyze_page(&o), Some(65536));
        assert_eq!(analyze_page(&[(4096, false), (8192, true), (16384, false)]), None);
        assert_eq!(analyze_replacement(0.0, 1.0, 16), Ok("lru"));
        assert_eq!(analyze_replacement(1.0 / 16.0, 1.0, 16), Ok("fifo"));
        assert!(analyze_replacement(0.5, 1.0, 16).is_err());
        assert!(analyze_replacement(0.0, 0.3, 16).is_err());
        assert_eq!(page_line(0, 4096, 1), 4096 + (2_654_435_761 % 32) * 128);
    }
}
