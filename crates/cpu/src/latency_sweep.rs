//! The measurement loop of `cpu.latency` (seed 000 appendix, "the latency chase", on the host):
//! the coarse grid until DRAM, refinement rounds where the curve changes (crate::sweep), then
//! further passes over every footprint while the plan's time budget lasts. The plan (`plan`:
//! footprints, hops, repeats, passes, budget) and the level thresholds the analysis in latency.rs
//! uses live here with the loop they size.

use crate::sweep;
use memscope_core::{CachePath, ChaseSpec, ProbeContext, ProbeError};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::time::Instant;

/// Levels must differ by this ratio to count as distinct. CPU cache levels differ by 3x or more;
/// an L1 DTLB miss (64 entries x 4 KiB = 256 KiB of reach where pages are small) adds ~1.3x to
/// L2 hits, which must not count as a level of its own (it did at 1.3 on the dev machine).
pub const MIN_STEP_RATIO: f64 = 1.4;
/// Fewest footprints on a CPU level (no short intermediate levels are expected on a CPU).
pub const MIN_POINTS: usize = 3;
/// Target duration of one timed repeat: short, so that many repeats fall between the moments
/// the core is taken away (a time slice of another process, or of another guest where the host
/// is shared: the "steal" of /proc/stat), and the fastest of them is an undisturbed one. Slow
/// (DRAM) footprints get more time per repeat, at least [`MIN_HOPS`] hops, so that a repeat
/// still averages over enough hops for its share of misses to be the chase's own.
pub const REPEAT_NS: f64 = 250e3;
/// Warm-up before the timed repeats of a footprint up to the plan's warm limit: a lap over its
/// lines and this long for the first placement of a chase, a lap and [`WARM_PLACEMENT_NS`] for
/// each further one (writing the next pointers is already a lap in chase order), so its lines are
/// in the caches they fit in before timing.
pub const WARM_NS: f64 = 2e6;
/// Warm-up of each placement after the first in one chase (see [`WARM_NS`]).
pub const WARM_PLACEMENT_NS: f64 = 250e3;
/// No warm-up laps where one lap would take longer than this: such a footprint is past the caches
/// (DRAM), and the pointer-writing lap has brought in what a cache could hold of it.
pub const WARM_MAX_NS: f64 = 10e6;
/// Bytes of the unit a placement draws at random: the 4 KiB page, the granule of the physical
/// placement on every host this runs on.
pub const PLACEMENT_PAGE_BYTES: u64 = 4096;
/// Widest bracket (first footprint past a level over the last one on it) a sharp step's capacity
/// may be read from: the knee can lie anywhere inside it, so a wider bracket cannot give the
/// capacity to the 10 % it must repeat to (crate::repeat_check). The sweep refines steps to
/// eight footprints per octave (1.09x, crate::sweep::FINE_PER_OCTAVE).
pub const MAX_BRACKET_RATIO: f64 = 1.10;
pub const MIN_HOPS: u64 = 20_000;

/// The sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Largest footprint the sweep may reach (the buffer's size).
    pub max_bytes: u64,
    pub line_bytes: u64,
    /// Most timed hops per repeat (fewer where a repeat would take over `REPEAT_NS`).
    pub hops: u64,
    /// Placements per footprint in the L2's band ([`in_l2_band`]): random draws of the buffer's
    /// 4 KiB pages, the same draws for every footprint and pass ([`PLACEMENT_PAGE_BYTES`]); see
    /// `measure`.
    pub placements: u32,
    /// Placements per footprint outside the L2's band: the first this many of them.
    pub other_placements: u32,
    /// Timed repeats per placement of a footprint in each pass.
    pub repeats: u32,
    /// Passes over the whole sweep; each placement's value at a footprint is the smallest of all
    /// its repeats. Other processes only ever add latency (they evict our lines, load the memory
    /// bus), so the fastest repeat is the least disturbed one; spreading the repeats over several
    /// passes lets a quiet moment reach every footprint.
    pub passes: u32,
    /// Footprints up to this size get warm-up laps. Larger ones need none: writing the next
    /// pointers already walks every line once in chase order.
    pub warm_limit_bytes: u64,
    /// Wall-time budget after which no further pass starts, in seconds.
    pub budget_s: f64,
}

/// The plan: up to twice the LLC (64 MiB..1 GiB), whole lines.
pub fn plan(quick: bool, llc_bytes: Option<u64>, line_bytes: Option<u64>) -> Plan {
    let line = line_bytes.filter(|l| l.is_power_of_two() && (16..=512).contains(l)).unwrap_or(64);
    let llc = llc_bytes.unwrap_or(64 << 20);
    let max_bytes = (2 * llc).clamp(64 << 20, 1 << 30);
    // Quick and full share the grid, the buffer layout, each placement's repeats and the
    // placements in the L2's band (in_l2_band), and differ in how many placements the other
    // footprints get (twice as many without --quick). Each
    // placement's value is its fastest repeat, and the fastest of more repeats is lower where
    // the latency moves from repeat to repeat (in the L2's step on the AMD dev VM, misses meet an
    // L3 that other guests share: the fastest of 12-16 repeats read the step about 10 % later
    // than the fastest of 4), so the modes take the same number per placement and the full run's
    // extra time goes to more draws of pages. With eight placements everywhere a quick run's L2
    // moved by 37.6 % over five runs on the AMD dev VM (780 KiB-1.05 MiB; full, with sixteen,
    // 6.8 %); sixteen everywhere did not fit quick's budget at four passes, and sixteen up to
    // 8 MiB took 11-12 s. The L1d's step needs no more (its set index lies inside the page, so
    // no draw of pages moves it: 10 of 10 runs at 32.0 KiB with eight), and past the band a
    // chase costs most (its pointers written over megabytes) while only the L3 and DRAM are read
    // there. The repeats are spread over passes rather than
    // taken together: on a shared host a neighbour slows every chase for a second or more at a
    // time (seen on the 2-vCPU dev VM: whole runs 10 % slower in the L1d, L2 points doubled), and
    // only another pass, seconds later, can find that placement's footprint undisturbed.
    let (hops, placements, repeats, passes, budget_s) =
        if quick { (1_000_000, 2 * PLACEMENTS, 1, 4, 12.0) } else { (1_000_000, 2 * PLACEMENTS, 1, 4, 35.0) };
    let other_placements = if quick { PLACEMENTS } else { 2 * PLACEMENTS };
    // Warm-up laps only up to 32 MiB: beyond, a lap costs seconds and the pointer-writing walk
    // has already brought in what a cache of that size could hold.
    Plan {
        max_bytes,
        line_bytes: line,
        hops,
        placements,
        other_placements,
        repeats,
        passes,
        warm_limit_bytes: llc.min(32 << 20),
        budget_s,
    }
}

/// The L2's band: footprints over the first bound (past any L1d: crate::sweep::L2_REF_BYTES)
/// and up to the second, twice the largest L2 of current cores (2 MiB; the L2's half-miss point
/// reads its miss latency at twice the footprint). Its footprints get [`Plan::placements`], the
/// others [`Plan::other_placements`].
pub const L2_BAND_BYTES: [u64; 2] = [256 << 10, 4 << 20];

/// Whether footprint `f` lies in the L2's band ([`L2_BAND_BYTES`]).
pub fn in_l2_band(f: u64) -> bool {
    f > L2_BAND_BYTES[0] && f <= L2_BAND_BYTES[1]
}

/// Placements per footprint outside the L2's band in a quick run ([`Plan::other_placements`];
/// twice as many otherwise and in the band). With
/// randomly placed 4 KiB pages the share of a W-way physically indexed cache's sets that overflow
/// at a footprint is itself random (a 1 MiB 8-way or a 2 MiB 16-way L2 has 32 page colours), so
/// the half-miss point of one placement moves by a few per cent from placement to placement (5 %
/// and 3 % standard deviation in crate::vm_curve_tests' model); the median over eight placements
/// moves by 2 % and 1.3 %, over sixteen by 1.5 % and 1 %.
pub const PLACEMENTS: u32 = 8;

/// The value of a footprint: the median over its placements of each placement's fastest repeat
/// (`per_placement`). The fastest repeat removes the disturbances (they only add latency); the
/// median, a placement that no undisturbed repeat reached and the luck of one draw of pages.
pub fn footprint_value(per_placement: &[f64]) -> f64 {
    let v: Vec<f64> = per_placement.iter().copied().filter(|v| v.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    memscope_core::stats::median(&v)
}

/// What the loop returns: footprints (ascending), the value of each ([`footprint_value`]), each
/// one's fastest repeat per placement, the page note, and a text on how many passes ran.
pub type Measured = (Vec<u64>, Vec<f64>, Vec<Vec<f64>>, String, String);

struct Sweep<'a, 'b> {
    ctx: &'a mut ProbeContext<'b>,
    p: &'a Plan,
    /// The first buffer: every footprint it holds is chased in it for the whole sweep, on the
    /// same placements in every pass.
    buf: memscope_core::Buffer,
    /// The placements: each a random order of the first buffer's 4 KiB pages; a footprint of
    /// `f` bytes takes the first `f / 4 KiB` pages of each (nested, so a placement's curve is one
    /// draw of the pages growing with the footprint).
    placements: Vec<Vec<u32>>,
    /// A larger buffer for the footprints past the first one, when the sweep needs it.
    big: Option<memscope_core::Buffer>,
    rng: rand_chacha::ChaCha8Rng,
    x: Vec<u64>,
    samples: Vec<Vec<f64>>,
    pages: String,
    /// What the TLB check found (`Sweep::translation_note`), appended to the page note.
    translations: String,
}

fn page_note(ctx: &mut ProbeContext<'_>, buf: &memscope_core::Buffer) -> String {
    ctx.target_as::<crate::CpuTarget>().map(|t| t.page_note(buf)).unwrap_or_else(|| "page size unknown".into())
}

impl Sweep<'_, '_> {
    fn best(&self, i: usize) -> f64 {
        footprint_value(&self.samples[i])
    }

    /// Chase `f` once more and keep each placement's fastest repeat so far.
    fn again(&mut self, i: usize) -> Result<(), ProbeError> {
        let f = self.x[i];
        let r = self.chase(f, self.best(i).max(0.5))?;
        for (old, new) in self.samples[i].iter_mut().zip(r) {
            *old = old.min(new);
        }
        Ok(())
    }

    /// How many placements (or groups of repeats) footprint `f` gets.
    fn groups(&self, f: u64) -> usize {
        let n = if in_l2_band(f) { self.p.placements } else { self.p.other_placements };
        (n as usize).clamp(1, self.placements.len().max(1))
    }

    fn curve(&self) -> Vec<f64> {
        (0..self.x.len()).map(|i| self.best(i)).collect()
    }

    /// Latency estimate for a new footprint: that of the nearest smaller one measured.
    fn estimate(&self, f: u64) -> f64 {
        let i = self.x.partition_point(|&v| v < f);
        if i == 0 {
            1.0
        } else {
            self.best(i - 1).max(0.5)
        }
    }

    /// One chase of `f` bytes: on each placement of the first buffer (the lines of its first
    /// `f / 4 KiB` pages, in a fresh random order), `repeats` timed repeats of about `REPEAT_NS`
    /// each; past the first buffer, one random order over the larger buffer's first `f` bytes,
    /// its repeats dealt in time order into as many groups. Returns each placement's (group's)
    /// fastest repeat.
    fn chase(&mut self, f: u64, est_ns: f64) -> Result<Vec<f64>, ProbeError> {
        let line = self.p.line_bytes;
        let n = (f / line).max(1);
        let groups = self.groups(f);
        let hops = ((REPEAT_NS / est_ns) as u64).clamp(MIN_HOPS.min(self.p.hops), self.p.hops);
        let repeats = self.p.repeats.max(1);
        // Warm-up laps: a lap and `ns` long, none where a lap takes over WARM_MAX_NS.
        let warm = |ns: f64| -> u32 {
            if f > self.p.warm_limit_bytes || n as f64 * est_ns > WARM_MAX_NS {
                return 0;
            }
            ((ns / est_ns) as u64).max(n).div_ceil(n).clamp(1, 1000) as u32
        };
        let fastest = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        if f > self.buf.bytes || self.placements.is_empty() {
            let buf = self.big.filter(|_| f > self.buf.bytes).unwrap_or(self.buf);
            let mut lines: Vec<u64> = (0..n).collect();
            lines.shuffle(&mut self.rng);
            let mut spec =
                ChaseSpec::new(lines.iter().map(|&k| buf.addr(k * line)).collect(), CachePath::L1Cached, hops);
            spec.repeats = repeats * groups as u32;
            spec.warmup_laps = warm(WARM_NS);
            let ns = self.ctx.target.chase(&spec)?.ns_per_hop;
            return Ok(ns.chunks(repeats as usize).map(fastest).collect());
        }
        let mut out = Vec::with_capacity(groups);
        for g in 0..groups.min(self.placements.len()) {
            let mut addrs = placement_lines(&self.placements[g], f, line);
            addrs.shuffle(&mut self.rng);
            let mut spec = ChaseSpec::new(addrs.iter().map(|&o| self.buf.addr(o)).collect(), CachePath::L1Cached, hops);
            spec.repeats = repeats;
            spec.warmup_laps = warm(if g == 0 { WARM_NS } else { WARM_PLACEMENT_NS });
            out.push(fastest(&self.ctx.target.chase(&spec)?.ns_per_hop));
        }
        Ok(out)
    }

    /// Whether the TLB holds the first buffer's pages as 2 MiB translations: a chase over 256
    /// lines one per 4 KiB page (their offsets spread over the L1's sets) inside one 2 MiB page
    /// against the same lines packed into 16 KiB. Both fit the L1d; only the spread one needs a
    /// translation per 4 KiB where the translations are 4 KiB (no huge page, or a VM whose host
    /// backs the guest's memory with 4 KiB pages), which the L1 TLB's 64-96 entries cannot hold.
    /// In that case the physical address above 4 KiB, and with it the page colour of a physically
    /// indexed L2 or L3, is not fixed by the virtual address: the levels' steps are gradual.
    fn translation_note(&mut self) -> Result<String, ProbeError> {
        const LINES: u64 = 256;
        if self.buf.bytes < 2 << 20 || self.p.line_bytes > 64 {
            return Ok(String::new());
        }
        let time = |offsets: Vec<u64>, s: &mut Self| -> Result<f64, ProbeError> {
            let mut addrs: Vec<u64> = offsets.iter().map(|&o| s.buf.addr(o)).collect();
            addrs.shuffle(&mut s.rng);
            let mut spec = ChaseSpec::new(addrs, CachePath::L1Cached, MIN_HOPS);
            spec.repeats = 20;
            spec.warmup_laps = 8;
            Ok(s.ctx.target.chase(&spec)?.ns_per_hop.into_iter().fold(f64::INFINITY, f64::min))
        };
        let spread = time((0..LINES).map(|k| k * 4096 + (k % 64) * 64).collect(), self)?;
        let packed = time((0..LINES).map(|k| k * 64).collect(), self)?;
        let ratio = spread / packed;
        Ok(if ratio > MIN_STEP_RATIO {
            format!("; translations: 4 KiB (one line per 4 KiB page {spread:.2} ns a hop against {packed:.2} ns packed, {ratio:.2}x: L1 TLB misses inside a 2 MiB page), so the page colours of the L2 and L3 are not fixed by the virtual address and their steps are gradual")
        } else {
            format!(
                "; translations: 2 MiB (one line per 4 KiB page {spread:.2} ns a hop against {packed:.2} ns packed)"
            )
        })
    }

    /// Make a buffer hold `f` bytes: past the first buffer, a larger one (4x the largest so far,
    /// at most the plan's largest footprint) replaces the previous larger one; the first buffer
    /// stays for the footprints it holds.
    fn ensure(&mut self, f: u64) -> Result<(), ProbeError> {
        let largest = self.big.map_or(self.buf.bytes, |b| b.bytes);
        if f > largest {
            let want = (4 * largest).max(f).min(self.p.max_bytes);
            if let Some(b) = self.big.take() {
                self.ctx.target.free(b);
            }
            let b = self.ctx.target.alloc(want)?;
            self.pages =
                format!("{}; past {} B: {}", page_note(self.ctx, &self.buf), self.buf.bytes, page_note(self.ctx, &b));
            self.big = Some(b);
        }
        Ok(())
    }

    /// Measure a new footprint and insert it in order.
    fn add(&mut self, f: u64) -> Result<(), ProbeError> {
        self.ensure(f)?;
        let est = self.estimate(f);
        let r = self.chase(f, est)?;
        let i = self.x.partition_point(|&v| v < f);
        self.x.insert(i, f);
        self.samples.insert(i, r);
        self.ctx.progress.advance(1);
        Ok(())
    }
}

/// Run the adaptive sweep of `p` on the context's target.
pub fn measure(ctx: &mut ProbeContext<'_>, p: &Plan) -> Result<Measured, ProbeError> {
    let started = Instant::now();
    // The buffer starts at 64 MiB (or the plan's largest footprint) and grows as the coarse grid
    // needs: mapping and touching 1 GiB of pages costs seconds, mostly not needed.
    let buf = ctx.target.alloc(p.max_bytes.min(64 << 20))?;
    let pages = page_note(ctx, &buf);
    // One CPU for the whole sweep: a migration between footprints would leave the next chase's
    // lines in another core's private caches and its warm-up to fetch them again.
    let _pin = crate::target::pin_to_current_cpu();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x6d656d73);
    let placements = placements(buf.bytes, p.placements, &mut rng);
    let coarse = sweep::coarse(p.max_bytes, p.line_bytes);
    ctx.progress.start(coarse.len() as u64, "latency vs footprint: coarse grid");
    let mut s = Sweep {
        ctx,
        p,
        buf,
        big: None,
        placements,
        rng,
        x: Vec::new(),
        samples: Vec::new(),
        pages,
        translations: String::new(),
    };
    let result = (|| -> Result<String, ProbeError> {
        s.translations = s.translation_note()?;
        let mut cut = None;
        for &f in &coarse {
            s.add(f)?;
            if sweep::dram_reached(&s.x, &s.curve()) {
                break;
            }
            if started.elapsed().as_secs_f64() > 0.6 * p.budget_s {
                cut = Some(f);
                break;
            }
        }
        let mut rounds = 0;
        let mut refine_cut = None;
        while rounds < 3 {
            let new = sweep::refine(&s.x, &s.curve(), p.line_bytes);
            if new.is_empty() {
                break;
            }
            s.ctx.progress.start(new.len() as u64, "latency vs footprint: refining knees");
            // Smallest first: the knees of the fast levels are cheap; the time budget may end
            // the refinement further up.
            for f in new {
                if started.elapsed().as_secs_f64() > 0.8 * p.budget_s {
                    refine_cut = Some(f);
                    break;
                }
                s.add(f)?;
            }
            if refine_cut.is_some() {
                break;
            }
            rounds += 1;
        }
        // Further passes while one more fits the budget (a pass costs about what the last did).
        let mut passes = 1;
        let mut last_pass_s = started.elapsed().as_secs_f64();
        while passes < p.passes && started.elapsed().as_secs_f64() + last_pass_s <= p.budget_s {
            let t = Instant::now();
            s.ctx.progress.start(s.x.len() as u64, &format!("latency vs footprint: pass {}", passes + 1));
            for i in 0..s.x.len() {
                s.again(i)?;
                s.ctx.progress.advance(1);
            }
            last_pass_s = t.elapsed().as_secs_f64();
            passes += 1;
        }
        // The coarse grid stopped on its first pass's values; when the fastest repeats of all
        // passes do not end on a DRAM plateau the knee detector accepts (a neighbour's burst made
        // the L3 look like DRAM, or two coarse points per octave are too few for a creeping DRAM
        // level), fill the last 1.5 octaves to four per octave, then go on up the grid, each new
        // footprint measured as often as the others, while the budget lasts.
        let mut extended = 0;
        let last = s.x.last().copied().unwrap_or(0);
        let quarter = 2f64.powf(0.25);
        let mut todo: Vec<u64> =
            s.x.windows(2)
                .filter(|w| {
                    w[0] as f64 >= last as f64 / 2f64.powf(1.5) * 0.999 && w[1] as f64 > w[0] as f64 * quarter * 1.01
                })
                .map(|w| ((w[0] as f64 * w[1] as f64).sqrt() as u64) / p.line_bytes * p.line_bytes)
                .collect();
        todo.extend(coarse.iter().copied().filter(|&f| f > last));
        for f in todo {
            if ends_on_dram(&s.x, &s.curve()) || started.elapsed().as_secs_f64() > p.budget_s {
                break;
            }
            s.add(f)?;
            let i = s.x.partition_point(|&v| v < f);
            for _ in 1..passes {
                s.again(i)?;
            }
            extended += 1;
        }
        // The refinement read the first pass; the fastest repeats of all passes can put a step
        // between two footprints it left apart (a point disturbed in the first pass that later
        // passes bring down), which leaves that capacity known only to a wide bracket
        // (crate::latency::MAX_BRACKET_RATIO). Refine the final curve the same way, each new
        // footprint measured as often as the others, smallest first, while the budget lasts
        // (after the extension to DRAM, without which no level can be named).
        let mut late = 0;
        for _ in 0..2 {
            let new = sweep::refine(&s.x, &s.curve(), p.line_bytes);
            if new.is_empty() || started.elapsed().as_secs_f64() > p.budget_s {
                break;
            }
            // Each new footprint once, then the further passes over all of them in turn: a
            // footprint's repeats spread over the round rather than taken back to back, where one
            // burst of a neighbour raised all of them (a quick run on the AMD dev VM: 881728 B at
            // 9.21 ns between 6.71 and 8.48 ns).
            let mut added = Vec::new();
            for f in new {
                if started.elapsed().as_secs_f64() > p.budget_s {
                    break;
                }
                s.add(f)?;
                added.push(f);
                late += 1;
            }
            for _ in 1..passes {
                for &f in &added {
                    let i = s.x.partition_point(|&v| v < f);
                    s.again(i)?;
                }
            }
        }
        let mut note = if passes < p.passes {
            format!("{passes} of {} passes (time budget {:.0} s reached)", p.passes, p.budget_s)
        } else {
            format!("{passes} passes")
        };
        if late > 0 {
            note = format!("{note}, {late} footprint(s) added after the passes where the final curve steps");
        }
        if extended > 0 {
            note = format!("{note}, {extended} footprint(s) added after the passes to reach DRAM");
        }
        if let Some(f) = refine_cut {
            note = format!("refinement stopped at {f} B by the time budget, {note}");
        }
        if let Some(f) = cut {
            note = format!("coarse grid cut at {f} B by the time budget before DRAM was reached, {note}");
        }
        Ok(note)
    })();
    let (buf, big) = (s.buf, s.big);
    let pages = format!("{}{}", s.pages, s.translations);
    let (x, samples) = (std::mem::take(&mut s.x), std::mem::take(&mut s.samples));
    ctx_free(s.ctx, buf);
    if let Some(b) = big {
        ctx_free(s.ctx, b);
    }
    let note = result?;
    let curve: Vec<f64> = samples.iter().map(|v| footprint_value(v)).collect();
    Ok((x, curve, samples, pages, note))
}

/// Whether the knee detector, configured as the probe's analysis, ends the curve on a plateau
/// that is DRAM by the sweep's ratios (crate::sweep).
fn ends_on_dram(x: &[u64], y: &[f64]) -> bool {
    use memscope_core::knee::{detect_plateaus_with, KneeConfig};
    let xf: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let cfg = KneeConfig { min_step_ratio: MIN_STEP_RATIO, min_points: MIN_POINTS };
    let levels = detect_plateaus_with(&xf, y, &cfg);
    match (levels.last(), y.first()) {
        (Some(l), Some(&y0)) => l.capacity.is_none() && levels.len() >= 2 && l.latency >= sweep::DRAM_OVER_L1 * y0,
        _ => false,
    }
}

/// The byte offsets of a footprint of `f` bytes on a placement (`pages`, a random order of 4 KiB
/// page numbers): every line of its first `f / 4 KiB` pages, then the first lines of the next
/// one for the rest.
pub fn placement_lines(pages: &[u32], f: u64, line: u64) -> Vec<u64> {
    let per_page = PLACEMENT_PAGE_BYTES / line;
    let n = f / line;
    (0..n).map(|k| pages[(k / per_page) as usize] as u64 * PLACEMENT_PAGE_BYTES + (k % per_page) * line).collect()
}

/// `count` random orders of the `bytes / 4 KiB` pages of a buffer.
pub fn placements(bytes: u64, count: u32, rng: &mut impl rand::Rng) -> Vec<Vec<u32>> {
    let pages = (bytes / PLACEMENT_PAGE_BYTES) as u32;
    (0..count)
        .map(|_| {
            let mut v: Vec<u32> = (0..pages).collect();
            v.shuffle(rng);
            v
        })
        .collect()
}

fn ctx_free(ctx: &mut ProbeContext<'_>, buf: memscope_core::Buffer) {
    ctx.target.free(buf);
}
