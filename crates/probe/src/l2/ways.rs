//! `l2ways`: L2 associativity and set count without the slice or set function. Seed 000 footnote
//! 11 builds L2 eviction sets from lines of one slice (it knows the slice function); here the
//! over-full sets are found by timing alone: a random pool of lines, a fraction of the L2
//! capacity, is chased through the L1-bypassing path, and per-hop times split it into lines that
//! miss on every lap (their set holds more pool lines than it has ways: a stream of misses only,
//! under which LRU, FIFO and the RRPV policy of seed 004 all evict the least recently inserted
//! line) and lines that hit. The missing lines alone are a union of over-full sets, which the
//! threshold group testing of `evset` (Vila, Köpf, Morales, S&P 2019) reduces to a minimal
//! eviction set: `ways + 1` lines of one set. The number of sets comes from the fraction of a
//! capacity-sized pool that misses (a set's pool count is binomial for random lines), checked
//! against the latency probe's capacity knee.

use crate::evset::{check_minimal, reduce_groups, Oracle, Reduction};
use crate::l1::ways_sets::analyze_ways;
pub use crate::l2::missing::{always_slow, far_note, far_split_ns, missing_lines, split_missing, MissingLines};
use crate::l2::pool::{near_levels, pool_fractions, pool_hint, set_candidates, PoolHint};
use crate::l2::regimes::{near_dram_ns, slowest_hits};
pub use crate::l2::sets::{analyze_l2_sets, estimate_sets, poisson_tail, sets_from_missing, SetsEstimate};
use crate::measure::{earlier_f64, earlier_u64, gpu_applicability, Levels, Meter, Timing};
use memscope_core::keys;
use memscope_core::{
    Applicability, Buffer, CachePath, ChaseResult, ChaseSpec, Confidence, Finding, Probe, ProbeContext, ProbeError,
    ProbeOutput, Target, TargetError, TargetInfo,
};

/// The pool's lines are drawn from a buffer this many times the L2 capacity (random lines of a
/// large buffer land in the sets almost independently, whatever the page mapping).
pub const BUFFER_CAPACITIES: u64 = 8;
/// Least number of missing lines taken as evidence of over-full sets.
pub const MIN_MISSING: usize = 64;
/// Sampling block: pool lines lie in distinct blocks of this many bytes, so two of them never
/// share a cache line of the L2 whatever its line size up to this.
pub const BLOCK_BYTES: u64 = 256;
/// Pool addresses are aligned to the L1 line (`l1.line_bytes`), or to this when the line probe
/// found none; pools are sized in these units (the growth of `POOL_FRACTIONS` absorbs a factor 2).
pub const FALLBACK_LINE_BYTES: u64 = 128;
/// The line-size test starts at this distance (a sector).
pub const SECTOR_FLOOR_BYTES: u64 = 32;
/// Upper bound on the timed chases of the group testing.
pub const MAX_CHASES: u64 = 4000;
/// Missing lines of a pool that must miss per lap, as a fraction of them, before they are
/// reduced (under LRU, FIFO and seed 004's RRPV policy every line of an over-full set misses).
pub const CLEAR_FRACTION: f64 = 0.25;
/// Reductions tried (on ever larger pools) before the search gives up.
pub const MAX_REDUCTIONS: usize = 3;
/// Minimality checks of the eviction set before `l2.ways` is undetermined.
pub const MINIMAL_CHECKS: usize = 3;

/// Hit and miss levels of the near L2 in every TLB regime the search meets: a chase over 96
/// lines spread evenly over the buffer (all L2 hits) and one cold lap over them after a flush
/// (all DRAM), as a random pool sees them; the slowest hits of chases over ever more pages
/// (`regimes::slowest_hits`: L2 hits that miss the TLB) and a cold lap within a few pages
/// (`regimes::near_dram_ns`: DRAM reads that hit it), as a pool's chases and the small sets of
/// the reduction see them. The threshold lies between the slowest hit and the fastest DRAM read,
/// set by `l2pool::near_levels` (below a far partition's hits, `far_ns` where known); where those
/// two are not clearly apart the search fails with the reason. Returns the levels, how the
/// threshold was set, the fastest DRAM read, the TLB's share of the slowest hits and their
/// chase.
pub fn calibrate_l2(
    m: &mut Meter<'_>,
    buf: &Buffer,
    line: u64,
    far_ns: Option<f64>,
) -> Result<L2Calibration, ProbeError> {
    let n = 96u64;
    let chunk = (buf.bytes / n / BLOCK_BYTES).max(1) * BLOCK_BYTES;
    let lines: Vec<u64> = (0..n)
        .map(|i| {
            let off = rand::Rng::gen_range(m.rng(), 0..chunk / line) * line;
            buf.base + i * chunk + off
        })
        .collect();
    let hits = m.chase(&lines, CachePath::L1Bypass, 48, 4000, 2)?;
    let cold = m.cold_lap(&lines, CachePath::L1Bypass)?;
    let spread = slowest_hits(m, buf, line)?;
    let (hit_ns, hit_lines, hits) = match spread {
        Some(s) if s.ns > hits.typical_ns() => (s.ns, s.lines, s.timing),
        _ => (hits.typical_ns(), n, hits),
    };
    // The TLB's share of the slowest hits: over the spread lines less over 32 dense ones (within
    // one 4 KiB page), for the far/DRAM split (`find_l2_evset`).
    let dense: Vec<u64> = (0..32).map(|i| buf.base + i * line).collect();
    let tlb_ns = (hit_ns - m.chase(&dense, CachePath::L1Bypass, 16, 2000, 2)?.typical_ns()).max(0.0);
    let near_dram = near_dram_ns(m, buf, line)?;
    let dram_ns = near_dram.map_or(cold.typical_ns(), |d| d.min(cold.typical_ns()));
    if !Levels::new(hit_ns, dram_ns).separable() {
        return Err(ProbeError::Failed(format!(
            "L2 hits read up to {hit_ns:.1} ns over {hit_lines} lines spread over the buffer (translation misses included) and DRAM reads as fast as {dram_ns:.1} ns within a few pages (cold lap over all {n}: {:.1} ns): not clearly apart, so one hop cannot tell a TLB miss from an L2 miss",
            cold.typical_ns()
        )));
    }
    let (levels, mut why) = near_levels(hit_ns, dram_ns, far_ns, &hits);
    // The threshold sits at least 8 MADs of the hits above them (`near_levels`); the fastest
    // DRAM reads must lie 4 more above it.
    let mad = hits.sample().map_or(0.0, |s| s.mad());
    if levels.mid() + 4.0 * mad >= dram_ns {
        return Err(ProbeError::Failed(format!(
            "L2 hits read up to {hit_ns:.1} ns (MAD {mad:.2} ns) over {hit_lines} lines spread over the buffer (translation misses included) and DRAM reads as fast as {dram_ns:.1} ns within a few pages: too close for a threshold between them ({:.1} ns) to hold against the hits' spread",
            levels.mid()
        )));
    }
    why.push_str(&format!(
        " (the slowest L2 hits: {hit_ns:.1} ns over {hit_lines} lines spread over the buffer; the fastest DRAM reads: {dram_ns:.1} ns, a cold lap {}; so the threshold holds with and without TLB misses)",
        if near_dram.is_some_and(|d| d < cold.typical_ns()) { "within a few pages" } else { "over the spread lines" }
    ));
    Ok(L2Calibration { levels, why, dram_ns, tlb_ns, hits })
}

/// What `calibrate_l2` measured.
pub struct L2Calibration {
    pub levels: Levels,
    /// How the threshold was set.
    pub why: String,
    /// The fastest DRAM read.
    pub dram_ns: f64,
    /// What translation misses add to the slowest hits (0 where they add nothing).
    pub tlb_ns: f64,
    /// The slowest hit chase.
    pub hits: Timing,
}

/// `n` random lines of `buf` in distinct `BLOCK_BYTES` blocks (each at a random line offset).
pub fn sample_pool(m: &mut Meter<'_>, buf: &Buffer, line: u64, n: usize) -> Vec<u64> {
    let block = BLOCK_BYTES.max(line);
    let blocks = (buf.bytes / block) as usize;
    let picks = rand::seq::index::sample(m.rng(), blocks, n.min(blocks));
    let per = block / line;
    picks
        .into_iter()
        .map(|b| {
            let off = rand::Rng::gen_range(m.rng(), 0..per) * line;
            buf.base + b as u64 * block + off
        })
        .collect()
}

/// An L2 eviction set found without the slice function.
#[derive(Debug, Clone)]
pub struct L2Evset {
    pub levels: Levels,
    /// How the hit/miss threshold was set (`l2pool::near_levels`).
    pub levels_why: String,
    pub oracle: Oracle,
    pub reduction: Reduction,
    /// (pool lines, DRAM-served lines that missed on every lap, whether those alone thrash;
    /// None: not tried) of each pool tried.
    pub scans: Vec<(usize, usize, Option<bool>)>,
    /// Lines of each scan that missed on every lap but were served by a far partition (left out
    /// of the reduction), and the split time used (`far_split_ns`).
    pub far_missing: Vec<usize>,
    pub split_ns: Option<f64>,
    /// The far-served missing lines of each scan, in scan order.
    pub far_lines: Vec<Vec<u64>>,
    /// Timed chases and simulated hops of the whole search (calibration and scans included).
    pub chases: u64,
    pub hops: u64,
}

/// A target whose every chase starts from a flushed hierarchy. Group testing re-chases subsets of
/// the previous chase; under FIFO (hits do not refresh) lines left over from the previous chase
/// can keep a fitting subset missing for more than the two warm-up laps, and such a false
/// "thrashes" costs a backtrack. From a flushed cache every policy settles within one lap.
struct FlushFirst<'a> {
    inner: &'a mut dyn Target,
}

impl Target for FlushFirst<'_> {
    fn info(&self) -> TargetInfo {
        self.inner.info()
    }
    fn alloc(&mut self, bytes: u64) -> Result<Buffer, TargetError> {
        self.inner.alloc(bytes)
    }
    fn free(&mut self, buf: Buffer) {
        self.inner.free(buf)
    }
    fn flush(&mut self) -> Result<(), TargetError> {
        self.inner.flush()
    }
    fn chase(&mut self, spec: &ChaseSpec) -> Result<ChaseResult, TargetError> {
        self.inner.flush()?;
        self.inner.chase(spec)
    }
    fn unusable(&self) -> Option<String> {
        self.inner.unusable()
    }
    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self.inner.as_any_mut()
    }
}

/// Run `f` with a meter whose chases each start from a flushed hierarchy; its chases and hops
/// are added to `m`'s.
pub fn flushing<R>(m: &mut Meter<'_>, f: impl FnOnce(&mut Meter<'_>) -> R) -> R {
    let mut ff = FlushFirst { inner: &mut *m.target };
    let mut inner = Meter::new(&mut ff, 0x5eed);
    let r = f(&mut inner);
    let (c, h) = (inner.chases, inner.hops);
    m.chases += c;
    m.hops += h;
    r
}

/// Search: calibrate, grow a random pool (`l2pool::pool_fractions` of the hint) until at least
/// `MIN_MISSING` lines miss on every lap and those lines alone thrash, reduce them to a minimal
/// eviction set. `buf` must hold `BUFFER_CAPACITIES` times the hint; `far_ns` is a far partition's
/// hit latency where known. Every failure names the scans that led to it.
pub fn find_l2_evset(
    m: &mut Meter<'_>,
    buf: &Buffer,
    line: u64,
    hint: &PoolHint,
    far_ns: Option<f64>,
) -> Result<L2Evset, ProbeError> {
    let (c0, h0) = (m.chases, m.hops);
    // (`calibrate_l2` fails where the slowest hit and the fastest DRAM read are not apart.)
    let L2Calibration { levels, why: levels_why, dram_ns, tlb_ns, hits } = calibrate_l2(m, buf, line, far_ns)?;
    // The far/DRAM split lies above far hits that miss the TLB (`far_ns` is the latency probe's,
    // within the TLB) and below DRAM reads that hit it.
    let split_ns = far_split_ns(levels.hit_ns, far_ns.map(|f| f + tlb_ns), dram_ns);
    // The reduction counts a hop as a miss only when DRAM served it (above the far/DRAM split):
    // a subset of far-homed lines that only thrashes their copies in the near partition is
    // served by the far partition and does not pass for an eviction set of the L2's sets.
    let oracle_levels = match split_ns {
        Some(s) => Levels::new(levels.hit_ns, 2.0 * s - levels.hit_ns).with_floor_from(&hits),
        None => levels,
    };
    let oracle = Oracle { path: CachePath::L1Bypass, levels: oracle_levels, threshold: 0.5 };
    let fractions = pool_fractions(hint);
    let cap_lines = (hint.bytes / line) as usize;
    let biggest = (fractions[fractions.len() - 1] * cap_lines as f64) as usize;
    let all = sample_pool(m, buf, line, biggest);
    let mut scans = Vec::new();
    let mut far_missing = Vec::new();
    let mut far_lines = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for (i, &f) in fractions.iter().enumerate() {
        let n = ((f * cap_lines as f64) as usize).min(all.len());
        let split = missing_lines(m, &levels, &all[..n], split_ns)?;
        far_missing.push(split.far.len());
        far_lines.push(split.far);
        let mut missing = split.dram;
        let last = i + 1 == fractions.len();
        if missing.len() < MIN_MISSING && !(last && missing.len() >= 2) {
            scans.push((n, missing.len(), None));
            continue;
        }
        // The missing lines thrash by themselves, and clearly: a union of over-full sets misses
        // most of its lines every lap; a borderline set (a few lines over, or lines counted by
        // noise) could pass here and fail the reduction's own first test.
        let (misses, sigma) = flushing(m, |m| oracle.misses(m, &missing))?;
        let clear = misses >= oracle.threshold.max(4.0 * sigma) && misses >= CLEAR_FRACTION * missing.len() as f64;
        scans.push((n, missing.len(), Some(clear)));
        if !clear {
            continue;
        }
        m.shuffle(&mut missing);
        match flushing(m, |m| reduce_groups(m, &oracle, &missing, MAX_CHASES)) {
            Ok(reduction) => {
                return Ok(L2Evset {
                    levels,
                    levels_why,
                    oracle,
                    reduction,
                    scans,
                    far_missing,
                    split_ns,
                    far_lines,
                    chases: m.chases - c0,
                    hops: m.hops - h0,
                })
            }
            Err(ProbeError::Failed(why)) => {
                failures.push(why);
                if failures.len() >= MAX_REDUCTIONS {
                    break;
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(ProbeError::Failed(format!(
        "no pool up to {} lines ({}x {} = {} bytes) left lines missing on every lap that clearly thrash on their own and reduce to an eviction set; {levels_why}; pools tried: {}; {}{}",
        all.len(),
        fractions[fractions.len() - 1],
        hint.source,
        hint.bytes,
        scans_text(&scans),
        far_note(&far_missing, split_ns),
        if failures.is_empty() { String::new() } else { format!("; reductions: {}", failures.join("; ")) }
    )))
}

/// The L2 line size: the smallest power-of-two distance `d` (from `start` up to
/// `BLOCK_BYTES`) such that swapping members of the minimal eviction set for their neighbours at
/// `d` (address XOR `d`) breaks the thrashing; below the line size the neighbour is the same L2
/// line (another sector of it) and the set still thrashes. Two of three members must agree.
/// `None` when no distance up to `BLOCK_BYTES` breaks it.
pub fn measure_l2_line(
    m: &mut Meter<'_>,
    oracle: &Oracle,
    set: &[u64],
    l1_line: u64,
) -> Result<Option<u64>, ProbeError> {
    let mut d = l1_line;
    while d <= BLOCK_BYTES {
        let mut breaks = 0;
        for k in 0..set.len().min(3) {
            let mut e = set.to_vec();
            e[k] ^= d;
            if !oracle.thrashes(m, &e)? {
                breaks += 1;
            }
        }
        if 2 * breaks > set.len().min(3) {
            return Ok(Some(d));
        }
        d *= 2;
    }
    Ok(None)
}

/// Occupancy scan: pools of about `ways` x the expected sets (from `capacity_bytes`), redone
/// once at the size the first estimate implies when the missing fraction was outside 0.15..0.85.
pub fn occupancy(
    m: &mut Meter<'_>,
    levels: &Levels,
    buf: &Buffer,
    l1_line: u64,
    l2_line: u64,
    ways: u64,
    capacity_bytes: u64,
) -> Result<Option<SetsEstimate>, ProbeError> {
    let max_lines = (buf.bytes / BLOCK_BYTES.max(l1_line)) as usize / 2;
    let mut n = ((capacity_bytes / l2_line) as usize).min(max_lines);
    let mut est = None;
    for _ in 0..2 {
        let pool = sample_pool(m, buf, l1_line, n);
        let missing = missing_lines(m, levels, &pool, None)?.total();
        est = estimate_sets(pool.len(), ways, missing);
        let f = missing as f64 / pool.len().max(1) as f64;
        if (0.15..=0.85).contains(&f) {
            break;
        }
        match est {
            Some(e) => n = ((e.sets * ways as f64) as usize).clamp(2, max_lines),
            None if f == 0.0 => n = (2 * n).min(max_lines),
            None => n = (n / 2).max(2),
        }
    }
    Ok(est)
}

pub struct L2WaysProbe;

impl Probe for L2WaysProbe {
    fn key(&self) -> &'static str {
        "l2ways"
    }
    fn description(&self) -> &'static str {
        "L2 ways from an eviction set found by timing alone (random pool, per-hop misses, group testing); sets from occupancy"
    }
    fn needs(&self) -> &'static [&'static str] {
        &["latency"]
    }
    fn applicability(&self, info: &TargetInfo) -> Applicability {
        gpu_applicability(info, true)
    }
    fn run(&self, ctx: &mut ProbeContext<'_>) -> Result<ProbeOutput, ProbeError> {
        let earlier = ctx.earlier.clone();
        let mut out = ProbeOutput::default();
        let method = "random pool of L1-bypassing lines; lines missing on every lap; threshold group testing";
        let undetermined = |out: &mut ProbeOutput, why: &str| {
            for k in [keys::L2_WAYS, keys::L2_SETS] {
                out.finding(k, Finding::undetermined("count", method, why));
            }
        };
        let mut m = Meter::new(&mut *ctx.target, 53);
        if !m.per_hop() {
            undetermined(&mut out, "needs per-hop times to tell the lines of over-full sets from the rest");
            return Ok(out);
        }
        let info = m.info.clone();
        let Some(hint) = pool_hint(&earlier, &info) else {
            undetermined(&mut out, "needs an L2 size to scale the pool (l2.segment_capacity_bytes, l2.capacity_bytes or the driver's attribute)");
            return Ok(out);
        };
        let far_ns = earlier_f64(&earlier, keys::L2_FAR_HIT_LATENCY_NS);
        let line = earlier_u64(&earlier, keys::L1_LINE_BYTES).unwrap_or(FALLBACK_LINE_BYTES);
        let buf = m.alloc(BUFFER_CAPACITIES * hint.bytes.max(1 << 16))?;
        let found = find_l2_evset(&mut m, &buf, line, &hint, far_ns);
        let e = match found {
            Ok(e) => e,
            Err(err) => {
                m.target.free(buf);
                undetermined(&mut out, &err.to_string());
                return Ok(out);
            }
        };
        // The minimality check up to `MINIMAL_CHECKS` times: one noisy chase among its `ways + 2`
        // must not turn a minimal set into "not minimal" (noise cannot make a set with a line to
        // spare pass: every one of its removals would have to look like a fit).
        let mut ways = Err(String::new());
        for _ in 0..MINIMAL_CHECKS {
            let (full, fit) = flushing(&mut m, |m| check_minimal(m, &e.oracle, &e.reduction.set))?;
            ways = analyze_ways(e.reduction.set.len(), full, fit);
            if ways.is_ok() {
                break;
            }
        }
        let ways = ways.map_err(|why| format!("{why} (in each of {MINIMAL_CHECKS} checks)"));
        let search = format!(
            "pools scaled from {} ({} bytes); {}; pools tried: {}; {}; {} chases and {} hops in all, {} backtracks",
            hint.source,
            hint.bytes,
            e.levels_why,
            scans_text(&e.scans),
            far_note(&e.far_missing, e.split_ns),
            e.chases,
            e.hops,
            e.reduction.backtracks
        );
        out.finding(
            keys::L2_EVSET_CHASES,
            Finding::integer(e.chases, "count", method, Confidence::High).with_note(&search),
        );
        out.finding(
            keys::L2_EVSET_HOPS,
            Finding::integer(e.hops, "count", method, Confidence::High).with_note(&search),
        );
        match ways {
            Ok(w) => {
                out.finding(keys::L2_WAYS, Finding::integer(w, "count", method, Confidence::High).with_note(&search));
                if let Some(copies) = crate::l2::far_copies::far_copy_ways(&mut m, &e)? {
                    out.finding(keys::L2_FAR_COPY_WAYS, copies.finding());
                }
                let l2_line =
                    flushing(&mut m, |m| measure_l2_line(m, &e.oracle, &e.reduction.set, SECTOR_FLOOR_BYTES))?;
                let line_method = "eviction-set members swapped for their neighbours at growing power-of-two distances";
                let Some(l2_line) = l2_line else {
                    let why =
                        format!("no distance up to {BLOCK_BYTES} bytes broke the eviction set: line size unknown");
                    out.finding(keys::L2_LINE_BYTES, Finding::undetermined("bytes", line_method, &why));
                    out.finding(keys::L2_SETS, Finding::undetermined("count", "needs the L2 line size", &why));
                    m.target.free(buf);
                    return Ok(out);
                };
                out.finding(keys::L2_LINE_BYTES, Finding::integer(l2_line, "bytes", line_method, Confidence::High));
                // The first occupancy pool: about ways x sets lines by the scan that thrashed.
                let start = e
                    .scans
                    .last()
                    .and_then(|&(n, missing, _)| sets_from_missing(n, w, missing as f64 / n.max(1) as f64))
                    .map_or(hint.bytes, |sets| (sets * (w * l2_line) as f64) as u64);
                let est = occupancy(&mut m, &e.levels, &buf, line, l2_line, w, start)?;
                if let Some(s) = est {
                    out.finding(
                        keys::L2_SETS_ESTIMATE,
                        Finding::number(s.sets, "count", "fraction of a random pool of about ways x sets lines that misses on every lap, Poisson occupancy model", Confidence::Low)
                            .with_note(&format!("3-sigma range {:.0}..{:.0} (2% model allowance); {:.4} of {} lines missed", s.lo, s.hi, s.missing_fraction, s.pool_lines)),
                    );
                }
                let how = "an L2 size / (l2.ways * l2.line_bytes), the one the occupancy estimate confirms";
                match analyze_l2_sets(&set_candidates(&earlier, &info), w, l2_line, est) {
                    Ok((s, what)) => out.finding(
                        keys::L2_SETS,
                        Finding::integer(s, "count", how, Confidence::Medium).with_note(&format!(
                            "from {what}: the sets one SM's eviction sets and occupancy pools reach (all slices of its partition); the split into slices is not determined"
                        )),
                    ),
                    Err(why) => out.finding(keys::L2_SETS, Finding::undetermined("count", how, &why)),
                }
            }
            Err(why) => undetermined(&mut out, &format!("{why}; {search}")),
        }
        m.target.free(buf);
        Ok(out)
    }
}

/// Simulated hierarchies with a small L2 for the unit tests here and in `policy`.
/// The pools scanned, for a note: "294,912 lines: 2,859 missing from L2, thrash clearly; ...".
fn scans_text(scans: &[(usize, usize, Option<bool>)]) -> String {
    use memscope_core::text::grouped;
    scans
        .iter()
        .map(|(lines, missing, clear)| {
            let verdict = match clear {
                None => "too few to test",
                Some(true) => "they thrash clearly on their own",
                Some(false) => "they do not clearly thrash on their own",
            };
            format!("{} lines: {} missing from L2, {verdict}", grouped(*lines as u64), grouped(*missing as u64))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
pub(crate) mod testing {
    use memscope_sim::hierarchy::{HashFunction, Hierarchy, Mask, Replacement};

    /// The default hierarchy with an L2 of `slices` x `sets` x `ways` (XOR-hashed slices over
    /// bits above the set bits), `policy`, and 2% jitter plus 1% outliers when `noisy`.
    pub fn small_l2(policy: Replacement, slices: u32, sets: u32, ways: u32, noisy: bool) -> memscope_sim::SimTarget {
        let mut h = Hierarchy { seed: 7 + ways as u64, ..Hierarchy::default() };
        h.l2.slices = slices;
        h.l2.sets_per_slice = sets;
        h.l2.ways = ways;
        h.l2.replacement = policy;
        let set_bits = sets.trailing_zeros();
        h.l2.slice_function = HashFunction::Masks {
            masks: (0..slices.trailing_zeros())
                .map(|i| Mask((1u64 << (7 + set_bits + i)) ^ (0x5a5u64 << 20 << i)))
                .collect(),
        };
        if noisy {
            h.noise.jitter_ns = 0.02 * h.l2.hit_ns;
            h.noise.outlier_fraction = 0.01;
        }
        memscope_sim::SimTarget::new(h).expect("valid hierarchy")
    }

    /// The L2 capacity in bytes.
    pub fn capacity(t: &memscope_sim::SimTarget) -> u64 {
        let l2 = &t.hierarchy().l2;
        (l2.slices * l2.sets_per_slice * l2.ways * l2.line_bytes) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{capacity, small_l2};
    use super::*;
    use memscope_sim::hierarchy::Replacement;

    #[test]
    fn evsets_and_sets_on_small_hierarchies() {
        // (policy, slices, sets per slice, ways, noise, capacity knee as a fraction of the truth)
        let cases = [
            (Replacement::Rrip, 1, 256, 16, true, 1.0),
            (Replacement::Lru, 4, 1024, 4, false, 1.0),
            (Replacement::Fifo, 2, 512, 8, true, 0.9),
            (Replacement::Rrip, 4, 256, 12, true, 0.85),
            (Replacement::Lru, 2, 256, 32, true, 1.0),
            (Replacement::Fifo, 4, 512, 32, false, 1.0),
        ];
        for (policy, slices, sets, ways, noisy, knee) in cases {
            let mut t = small_l2(policy, slices, sets, ways, noisy);
            let cap = capacity(&t);
            let mut m = Meter::new(&mut t, 5);
            let buf = m.alloc(BUFFER_CAPACITIES * cap).unwrap();
            let knee_bytes = (knee * cap as f64) as u64 / 128 * 128;
            let e = find_l2_evset(
                &mut m,
                &buf,
                128,
                &PoolHint { bytes: knee_bytes, source: "given", measured: true },
                None,
            )
            .unwrap_or_else(|err| panic!("{policy:?} {ways}: {err}"));
            let (full, fit) = flushing(&mut m, |m| check_minimal(m, &e.oracle, &e.reduction.set)).unwrap();
            let case = format!("{policy:?} {slices}x{sets}x{ways}: scans {:?}, {} chases", e.scans, e.chases);
            assert_eq!(analyze_ways(e.reduction.set.len(), full, fit), Ok(ways as u64), "{case}");
            assert!(e.chases < 400, "{case}");
            assert_eq!(
                measure_l2_line(&mut m, &e.oracle, &e.reduction.set, SECTOR_FLOOR_BYTES).unwrap(),
                Some(128),
                "{case}"
            );
            let est = occupancy(&mut m, &e.levels, &buf, 64, 128, ways as u64, knee_bytes).unwrap().unwrap();
            let truth = (slices * sets) as f64;
            assert!(est.lo <= truth && truth <= est.hi, "{case}: {est:?}");
            let given = [(cap, "given".to_string())];
            assert_eq!(
                analyze_l2_sets(&given, ways as u64, 128, Some(est)).map(|s| s.0),
                Ok((slices * sets) as u64),
                "{case}"
            );
        }
    }
}
