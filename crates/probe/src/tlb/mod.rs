//! `tlb`: the first-level TLB by paired-line pointer chases (seed 000 footnote 8 and appendix
//! "Page tables and the TLB"). Each of N pages holds two lines, p and q. Order A visits every p and
//! then every q, so each q comes N pages after its page's last use; order B visits p0 q0 p1 q1 ...,
//! so each q follows its own page's p and always finds the translation. Both orders chase the same
//! lines, so wherever the lines sit in L2 (near or far partition, any slice) their latencies cancel
//! and A minus B is the translation miss cost alone, half of it per hop (only the q hops differ).
//! From that differential: the page (q moved d bytes away from p stops hitting once d crosses a
//! page), the entries (smallest N whose differential appears), the miss cost, the replacement (a
//! hot page visited between every two of entries cold pages never misses under LRU, misses once
//! per lap under FIFO) and the scope (the pages split among two warps of one block: one TLB per SM
//! still misses, per-warp TLBs do not). Chases bypass L1 so every hop is translated.

pub mod analysis;

pub use analysis::{
    analyze_page, analyze_replacement, p_offset, position_means, replacement_confidence, trimmed_mean_se,
};

use crate::measure::{gpu_applicability, Meter, Timing};
use memscope_core::keys;
use memscope_core::{
    Applicability, CachePath, ChaseSpec, Confidence, Finding, Probe, ProbeContext, ProbeError, ProbeOutput, TargetInfo,
};

pub struct TlbProbe;

/// Most pages chased; the entry count must lie below it to be found.
pub const MAX_PAGES: u64 = 256;
/// Strides tried for one page per block, largest first (the largest the target can allocate
/// `MAX_PAGES + 1` blocks of wins): pages up to half the stride can be found.
pub const STRIDES: [u64; 6] = [256 << 20, 128 << 20, 64 << 20, 32 << 20, 16 << 20, 8 << 20];
/// q's distance from p in the entries, miss and scope steps (inside any page of 64 KiB or more,
/// given p's offset below 32 KiB).
const PAIR_D: u64 = 4096;
/// Hops per timed chase (at least).
const MIN_HOPS: u64 = 12_000;
/// Hops of each chase of the miss-cost and replacement measurements.
const MISS_HOPS: u64 = 240_000;

/// A differential: the q lines' mean hop in order A minus in order B, its standard error, and the
/// mean hop of order B.
#[derive(Debug, Clone, Copy)]
struct Diff {
    ns: f64,
    se_ns: f64,
    hop_ns: f64,
}

/// The p lines and the q lines of a set of pages.
type Pairs = (Vec<u64>, Vec<u64>);

struct Bench {
    base: u64,
    stride: u64,
}

impl Bench {
    fn block(&self, i: u64) -> u64 {
        self.base + i * self.stride
    }
    fn pairs(&self, first: u64, n: u64, d: u64) -> Pairs {
        let p: Vec<u64> = (first..first + n).map(|i| self.block(i) + p_offset(i)).collect();
        let q = p.iter().map(|a| a + d).collect();
        (p, q)
    }
    fn chase(&self, m: &mut Meter<'_>, addrs: Vec<u64>, warps: u32, min_hops: u64) -> Result<Timing, ProbeError> {
        let n = addrs.len() as u64;
        // Whole laps, so every position is recorded equally often.
        let mut spec = ChaseSpec::new(addrs, CachePath::L1Bypass, min_hops.max(8 * n).div_ceil(n) * n);
        spec.warmup_laps = 2;
        spec.warps = warps;
        m.run(spec)
    }
    /// The q lines in order A minus in order B over `n` pages (p and q = p + d), one warp,
    /// line by line.
    fn diff(&self, m: &mut Meter<'_>, n: u64, d: u64, min_hops: u64) -> Result<Diff, ProbeError> {
        let (p, q) = self.pairs(0, n, d);
        let a: Vec<u64> = p.iter().chain(&q).copied().collect();
        let b: Vec<u64> = p.iter().zip(&q).flat_map(|(x, y)| [*x, *y]).collect();
        let len = a.len();
        let ta = self.chase(m, a, 1, min_hops)?;
        let tb = self.chase(m, b, 1, min_hops)?;
        let no_hops = || ProbeError::Failed("the tlb probe needs per-hop times".into());
        let pa = position_means(ta.per_hop_ns.as_deref().ok_or_else(no_hops)?, len).ok_or_else(no_hops)?;
        let pb = position_means(tb.per_hop_ns.as_deref().ok_or_else(no_hops)?, len).ok_or_else(no_hops)?;
        let n = n as usize;
        let (ns, se_ns) = trimmed_mean_se((0..n).map(|i| pa[n + i] - pb[2 * i + 1]).collect());
        Ok(Diff { ns, se_ns, hop_ns: pb.iter().sum::<f64>() / len as f64 })
    }
    /// The same differential by the uninstrumented instrument (`Meter::latency`: whole-chase time
    /// over hops, no per-hop records): only the q half of order A's hops differs from order B's,
    /// so the q lines' difference is twice the difference of the mean hops.
    fn plain_diff(&self, m: &mut Meter<'_>, n: u64, d: u64, min_hops: u64) -> Result<f64, ProbeError> {
        let (p, q) = self.pairs(0, n, d);
        let a: Vec<u64> = p.iter().chain(&q).copied().collect();
        let b: Vec<u64> = p.iter().zip(&q).flat_map(|(x, y)| [*x, *y]).collect();
        let len = a.len() as u64;
        let hops = min_hops.max(8 * len).div_ceil(len) * len;
        let ta = m.latency(&a, CachePath::L1Bypass, hops, 2)?;
        let tb = m.latency(&b, CachePath::L1Bypass, hops, 2)?;
        Ok(2.0 * (ta.ns - tb.ns))
    }
    /// The same differential with the pages split between two warps of one block (each warp
    /// walks its own half in order A, or in order B).
    fn split_diff(&self, m: &mut Meter<'_>, per_warp: u64) -> Result<f64, ProbeError> {
        let halves: Vec<Pairs> = (0..2).map(|k| self.pairs(k * per_warp, per_warp, PAIR_D)).collect();
        let weave = |f: &dyn Fn(&Pairs) -> Vec<u64>| -> Vec<u64> {
            let (c0, c1) = (f(&halves[0]), f(&halves[1]));
            c0.iter().zip(&c1).flat_map(|(x, y)| [*x, *y]).collect()
        };
        let a = weave(&|(p, q)| p.iter().chain(q).copied().collect());
        let b = weave(&|(p, q)| p.iter().zip(q).flat_map(|(x, y)| [*x, *y]).collect());
        let ta = self.chase(m, a, 2, MISS_HOPS / 2)?;
        let tb = self.chase(m, b, 2, MISS_HOPS / 2)?;
        // Only the q half of the hops differs between the orders.
        Ok(2.0 * (ta.mean_ns() - tb.mean_ns()))
    }
}

const KEYS: [(&str, &str); 5] = [
    (keys::TLB_L1_ENTRIES, "entries"),
    (keys::TLB_PAGE_BYTES, "bytes"),
    (keys::TLB_L1_MISS_NS, "ns"),
    (keys::TLB_L1_REPLACEMENT, ""),
    (keys::TLB_L1_SCOPE, ""),
];

fn undetermined_from(out: &mut ProbeOutput, from: usize, why: &str) {
    for (k, u) in &KEYS[from..] {
        out.finding(k, Finding::undetermined(u, "paired-line chases (order A minus order B)", why));
    }
}

impl Probe for TlbProbe {
    fn key(&self) -> &'static str {
        "tlb"
    }
    fn description(&self) -> &'static str {
        "first-level TLB: page, entries, miss cost, replacement and scope (paired-line chases)"
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        gpu_applicability(info, true)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let mut m = Meter::new(&mut *ctx.target, 61);
        let info = m.info.clone();
        let mut out = ProbeOutput::default();
        // The largest stride whose MAX_PAGES + 1 blocks (one spare for alignment) fit.
        let mut grant = None;
        for s in STRIDES {
            if let Ok(buf) = m.target.alloc((MAX_PAGES + 2) * s) {
                grant = Some((buf, s));
                break;
            }
        }
        let Some((buf, stride)) = grant else {
            undetermined_from(&mut out, 0, "could not allocate 258 blocks of 8 MiB");
            return Ok(out);
        };
        let b = Bench { base: buf.base.div_ceil(stride) * stride, stride };
        ctx.progress.message(&format!("tlb: {MAX_PAGES} pages at a {} MiB stride", stride >> 20));
        let result = run_steps(&mut m, &b, &info, &mut out);
        m.target.free(buf);
        result?;
        Ok(out)
    }
}

fn run_steps(m: &mut Meter<'_>, b: &Bench, info: &TargetInfo, out: &mut ProbeOutput) -> Result<(), ProbeError> {
    // Signal: MAX_PAGES pages (A misses on every q hop unless the TLB holds them all) against 2.
    let fit = b.diff(m, 2, PAIR_D, MIN_HOPS)?;
    let full = b.diff(m, MAX_PAGES, PAIR_D, MIN_HOPS)?;
    let signal = full.ns - fit.ns;
    let floor = (6.0 * (full.se_ns + fit.se_ns)).max(0.002 * full.hop_ns).max(0.1);
    if signal < floor {
        undetermined_from(
            out,
            0,
            &format!(
                "no translation differential between 2 and {MAX_PAGES} pages at a {} MiB stride ({:.2} vs {:.2} ns, \
                 floor {floor:.2} ns): more entries than that, pages of {} MiB or more, or a free miss",
                b.stride >> 20,
                fit.ns,
                full.ns,
                b.stride >> 20
            ),
        );
        return Ok(());
    }
    let misses = |d: &Diff| d.ns - fit.ns > 0.5 * signal;

    // Page: q moved d away from p keeps sharing p's translation until d crosses the page.
    let mut outcomes = Vec::new();
    let mut d = 4096u64;
    while d <= b.stride / 2 {
        outcomes.push((d, misses(&b.diff(m, MAX_PAGES, d, MIN_HOPS)?)));
        d *= 2;
    }
    let pmethod =
        format!("smallest distance d at which a line d bytes from a just-used line misses the TLB ({MAX_PAGES} pages)");
    match analyze_page(&outcomes) {
        Some(p) => out.finding(
            keys::TLB_PAGE_BYTES,
            Finding::integer(p, "bytes", &pmethod, Confidence::High).with_note(
                "the span one first-level entry translates: larger than the allocation granularity where the MMU \
                 maps contiguous memory with bigger pages or coalesces entries",
            ),
        ),
        None => out.finding(
            keys::TLB_PAGE_BYTES,
            Finding::undetermined(
                "bytes",
                &pmethod,
                &format!(
                    "shares-translation outcomes ({}) show no single page size up to {} bytes",
                    crate::l1::line::outcomes_text(&outcomes, "shares", "does not share"),
                    b.stride / 2
                ),
            ),
        ),
    }

    // Entries: the smallest page count whose differential appears, by bisection.
    let (mut lo, mut hi) = (2u64, MAX_PAGES);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if misses(&b.diff(m, mid, PAIR_D, MIN_HOPS)?) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let entries = lo;
    let confirmed =
        !misses(&b.diff(m, entries, PAIR_D, MIN_HOPS)?) && misses(&b.diff(m, entries + 1, PAIR_D, MIN_HOPS)?);
    if !confirmed {
        undetermined_from(out, 0, &format!("the step at {entries}/{} pages did not repeat", entries + 1));
        out.findings.remove(keys::TLB_PAGE_BYTES);
        return Ok(());
    }
    let method = format!(
        "paired-line chases at a {} MiB stride, order A minus order B, bisection on the page count",
        b.stride >> 20
    );
    out.finding(keys::TLB_L1_ENTRIES, Finding::integer(entries, "entries", &method, Confidence::High));

    // Miss cost: the q lines of 2 x entries pages, many laps (the standard error is stated).
    let n_miss = (2 * entries).min(MAX_PAGES);
    let hi = b.diff(m, n_miss, PAIR_D, MISS_HOPS)?;
    let lo = b.diff(m, 2, PAIR_D, MISS_HOPS)?;
    let miss = hi.ns - lo.ns;
    let mut f = Finding::number(
        miss,
        "ns",
        &format!("q lines of {n_miss} pages in order A minus order B, minus the same at 2 pages"),
        Confidence::High,
    )
    .with_note(&format!("standard error {:.3} ns", (hi.se_ns.powi(2) + lo.se_ns.powi(2)).sqrt()));
    if let Some(hz) = info.clock_hz {
        f = f.with_cycles(miss * 1e-9 * hz);
    }
    // Second opinion: the same two differentials from uninstrumented chases. Agreement within 3 %
    // of the miss cost, or 0.15 ns where that is finer than the chases' timers resolve.
    let plain = b.plain_diff(m, n_miss, PAIR_D, 40_000)? - b.plain_diff(m, 2, PAIR_D, 40_000)?;
    let tol = memscope_core::CHECK_TOLERANCE.max(0.15 / miss.abs().max(1e-9));
    f = f.with_check(plain, "the same differentials from uninstrumented chases (twice the mean-hop difference)", tol);
    out.finding(keys::TLB_L1_MISS_NS, f);

    replacement(m, b, entries, miss, out)?;

    // Scope: 1.5 x entries pages split between two warps of one block miss under one TLB per SM;
    // entries / 2 split pages fit either way (the control).
    let smethod = "paired-line chases with 1.5 x entries pages split between 2 warps of one block";
    let per_warp = (3 * entries / 4).max(1);
    if 2 * per_warp > MAX_PAGES {
        out.finding(
            keys::TLB_L1_SCOPE,
            Finding::undetermined(
                "",
                smethod,
                &format!("needs {} pages, the probe's buffer holds {MAX_PAGES}", 2 * per_warp),
            ),
        );
        return Ok(());
    }
    let shared = b.split_diff(m, per_warp)? - fit.ns > 0.5 * signal;
    let control = b.split_diff(m, (entries / 4).max(1))? - fit.ns > 0.5 * signal;
    let f = match (shared, control) {
        (true, false) => Finding::text("sm", smethod, Confidence::High)
            .with_note("the same differential as one warp: one TLB per SM, shared by its warps"),
        (false, false) => Finding::text("warp", smethod, Confidence::Medium)
            .with_note("no differential at 1.5 x entries pages when split: each warp has its own entries"),
        _ => Finding::undetermined("", smethod, "the split chase missed already at entries / 2 pages"),
    };
    out.finding(keys::TLB_L1_SCOPE, f);
    Ok(())
}

/// Replacement: a walk over `entries` cold pages with four lines of one hot page spread among
/// them (entries + 1 pages: the cold pages miss on every visit under LRU and FIFO; the hot page,
/// reused every entries / 4 + 1 pages, never misses under LRU and once per lap under FIFO, i.e.
/// on a quarter of its hops), against the same walk over entries - 2 cold pages (everything fits).
/// The same hot and cold lines are compared, line by line, between the two walks.
fn replacement(m: &mut Meter<'_>, b: &Bench, entries: u64, miss: f64, out: &mut ProbeOutput) -> Result<(), ProbeError> {
    let rmethod = "walk over entries cold pages with a hot page visited 4 times a lap, against entries - 2 cold pages";
    if entries < 8 || miss <= 0.0 {
        out.finding(
            keys::TLB_L1_REPLACEMENT,
            Finding::undetermined("", rmethod, "needs at least 8 entries and a positive miss cost"),
        );
        return Ok(());
    }
    const HOT: u64 = 4;
    let hot = b.block(MAX_PAGES - 1);
    // (addresses, position of hot line j, position of cold line i)
    let walk = |n_cold: u64| -> (Vec<u64>, Vec<usize>, Vec<usize>) {
        let (mut addrs, mut hot_pos, mut cold_pos) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..n_cold {
            cold_pos.push(addrs.len());
            addrs.push(b.block(i) + p_offset(i));
            if (i + 1) * HOT / n_cold != i * HOT / n_cold {
                hot_pos.push(addrs.len());
                addrs.push(hot + hot_pos.len() as u64 * 128);
            }
        }
        (addrs, hot_pos, cold_pos)
    };
    let common = (entries - 2) as usize;
    let mut measure = |n_cold: u64| -> Result<(Vec<f64>, Vec<f64>), ProbeError> {
        let (addrs, hot_pos, cold_pos) = walk(n_cold);
        let len = addrs.len();
        m.target.flush()?;
        let t = b.chase(m, addrs, 1, MISS_HOPS)?;
        let pm = t
            .per_hop_ns
            .as_deref()
            .and_then(|h| position_means(h, len))
            .ok_or_else(|| ProbeError::Failed("the tlb probe needs per-hop times".into()))?;
        Ok((hot_pos.iter().map(|&k| pm[k]).collect(), cold_pos[..common].iter().map(|&k| pm[k]).collect()))
    };
    let (h1, c1) = measure(entries)?;
    let (h0, c0) = measure(entries - 2)?;
    let hot_diff: f64 = h1.iter().zip(&h0).map(|(a, b)| a - b).sum::<f64>() / h1.len().max(1) as f64;
    let (cold_diff, _) = trimmed_mean_se(c1.iter().zip(&c0).map(|(a, b)| a - b).collect());
    let (hf, cf) = (hot_diff / miss, cold_diff / miss);
    let f = match analyze_replacement(hf, cf, HOT) {
        Ok(p) => Finding::text(p, rmethod, replacement_confidence(hf, HOT)).with_note(&format!(
            "hot page miss fraction {hf:.3} (LRU 0, FIFO about {:.2}; decided at half way), cold pages {cf:.3}",
            1.0 / HOT as f64
        )),
        Err(why) => Finding::undetermined("", rmethod, &why),
    };
    out.finding(keys::TLB_L1_REPLACEMENT, f);
    Ok(())
}
